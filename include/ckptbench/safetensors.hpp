// Reads only the header of safetensors files (8-byte little-endian length + JSON), never the data.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ckptbench/model.hpp"

namespace ckpt {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // data_offsets, relative to the data section
};

// Parses a header given the whole file prefix (8-byte length + JSON) and the file size.
// Throws ConfigError on truncation, absurd header length, bad JSON, unknown dtype, offsets out of
// range or overlapping, size/shape mismatch, or unsafe names ("..", absolute).
std::vector<SafetensorsEntry> parse_safetensors_header(std::string_view bytes, uint64_t file_size,
                                                       const std::string& what);

// Imports a .safetensors file, a directory of them, or a model.safetensors.index.json into a model.
ModelDesc import_safetensors(const std::string& path);

}  // namespace ckpt
