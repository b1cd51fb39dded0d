// --read-dir: which rank reads which file of an existing checkpoint directory. Either whole files
// spread by size, or - for a directory it recognises - what the framework's own loader opens on
// each rank (Hugging Face safetensors shards, a DeepSpeed global_stepN/ tag with or without
// pipeline layer files, a Megatron-LM iteration in its legacy or torch_dist format, a PyTorch DCP
// checkpoint or the highest step of several). Pure: no MPI; the only I/O is the caller's
// `read_small` (the safetensors index, DeepSpeed's `latest`, Megatron's
// latest_checkpointed_iteration.txt).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/plan/layout.hpp"

namespace ckpt {

// --read-assign: auto (the loader's assignment when the directory is recognised and the loader
// would run on this many ranks, else by size), size, or loader (refused when it does not apply).
enum class ReadAssign { automatic, size, loader };

// "auto" | "size" | "loader"; throws ConfigError naming the value and the allowed ones.
ReadAssign parse_read_assign(const std::string& s);

// A directory's regular files: (path relative to the directory, size), sorted by path.
using DirFiles = std::vector<std::pair<std::string, uint64_t>>;

struct ReadDirAssignment {
  std::string rule;         // "size", "safetensors", "deepspeed", "megatron" or "dcp"
  std::string description;  // the rule in a sentence (for the report)
  std::string fallback;     // auto: why no loader rule applied (empty: none recognised / used)
  std::vector<std::string> recognised;  // formats found in the directory ("deepspeed", ...)
  // Per rank: indices into the files, in the order the rank reads them. A file may be read by
  // several ranks (a loader that has every rank read it); a file no rank reads is in `skipped`.
  std::vector<std::vector<size_t>> reads;
  std::vector<size_t> skipped;  // files the loader never opens (tokenizer, zero_to_fp32.py, ...)

  nlohmann::json to_json() const;  // everything above (reads as index lists)
  static ReadDirAssignment from_json(const nlohmann::json& j);
  // The report's summary: rule, description, fallback, recognised, bytes read by all ranks,
  // files read by more than one rank, skipped files and bytes.
  nlohmann::json summary(const DirFiles& files) const;
};

// The assignment of `files` over `world` ranks. `read_small(path)` returns the content of a
// small file of the directory (the safetensors index, DeepSpeed's `latest`, Megatron's
// tracker). The description names the tag, iteration or step chosen. Throws ConfigError
// for --read-assign loader when no loader rule applies, saying why (not recognised, another rank
// count needed, an index naming a missing shard, ...).
ReadDirAssignment assign_read_dir(const DirFiles& files, int world, ReadAssign how,
                                  const std::function<std::string(const std::string&)>& read_small);

// The plan of the assignment: each file whole, one extent [0, size); file ids are the indices
// in `files`; writers = the ranks reading the file; shared = more than one. Empty files are
// opened but not read. stats: files and file_bytes count the distinct files read; payload_bytes
// the bytes all ranks read.
IoPlan read_dir_plan(const DirFiles& files, const ReadDirAssignment& a);

}  // namespace ckpt
