// Where a save's bytes come from and a restore's go (config `source`). "pool" (the default): the
// bounded buffer pool - a few buffers of block_size that stay in the CPU caches. "shard": the
// rank's whole state resident in host memory, as a training process holds its tensors: on save
// every file's bytes are in memory, filled and touched before the timed phase, and each request
// is written straight from them (a torch.save writes from the tensors' storage); on restore
// every file is read into fresh, untouched memory (torch.load's new tensors), so the first-touch
// page faults fall inside the timed reads as the loader's do. docs/layouts.md, "Data source".
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "ckptbench/io/buffers.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"

namespace ckpt {

class ShardMemory {
 public:
  // One region per file of `io`, each the file's size (4 KiB-aligned starts), in one anonymous
  // mapping. fill: the pattern to write every file's bytes with (save); null leaves the memory
  // untouched (restore). Throws IoError when the memory cannot be mapped.
  ShardMemory(const RankIo& io, const Pattern* fill);
  ~ShardMemory();
  ShardMemory(const ShardMemory&) = delete;
  ShardMemory& operator=(const ShardMemory&) = delete;
  // Writes zeros over the whole mapping: every page faulted in now, untimed (a framework's pinned
  // staging buffers are allocated and touched once, before its first checkpoint).
  void touch();
  // Copies every file of `io` from `src` (which must cover it) into this memory; returns the
  // bytes copied. The snapshot of an asynchronous save: the resident state into staging.
  uint64_t copy_from(const ShardMemory& src, const RankIo& io);
  // The bytes of file `file_id` at `offset`.
  std::byte* at(uint32_t file_id, uint64_t offset) const;
  // Whether every file of `io` has its region here.
  bool covers(const RankIo& io) const;
  uint64_t bytes() const { return len_; }
  // Whether p points into this memory.
  bool holds(const std::byte* p) const {
    return base_ != nullptr && p >= base_ && p < base_ + len_;
  }

 private:
  std::byte* base_ = nullptr;
  uint64_t len_ = 0;
  std::map<uint32_t, uint64_t> start_;  // file id -> offset of its region
};

}  // namespace ckpt
