// Reads only the header of safetensors files (8-byte little-endian length + JSON), never the data.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ckptbench/plan/model.hpp"

namespace ckpt {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // data_offsets, relative to the data section
};

// Parses a header given the whole file prefix (8-byte length + JSON) and the file size; returns
// the entries sorted by data_offsets. Throws ConfigError on truncation, absurd header length, bad
// JSON, unknown dtype, unsafe names ("..", absolute), offsets out of range or end < begin,
// numel x dtype bits not a multiple of 8 or not equal to 8 x (end - begin), or tensors that do
// not tile the data section exactly (sorted by offset, each must begin where the previous ends,
// the first at 0, the last at the data size: gaps, overlaps and uncovered bytes are refused, as
// safetensors' Metadata::validate and read_metadata do).
std::vector<SafetensorsEntry> parse_safetensors_header(std::string_view bytes, uint64_t file_size,
                                                       const std::string& what);

// Imports a .safetensors file, a directory of them, or a model.safetensors.index.json into a model.
// A Hugging Face config.json in that directory (the file's or the index's directory) with
// "num_attention_heads" (or "n_head", at the top level or in "text_config") sets the model's dims
// (heads, kv_heads, hidden, ffn, layers, vocab) so that resolve_parallelism applies the zoo's TP
// rules; without one, dims stay empty and only the tensors' split dimensions are checked.
ModelDesc import_safetensors(const std::string& path);

}  // namespace ckpt
