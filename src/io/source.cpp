#include "ckptbench/io/source.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"

namespace ckpt {

ShardMemory::ShardMemory(const RankIo& io, const Pattern* fill) {
  for (const auto& f : io.files) {
    if (start_.count(f.id)) continue;
    start_[f.id] = len_;
    len_ += (f.size + 4095) / 4096 * 4096;
  }
  if (len_ == 0) return;
  void* p = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw IoError("source shard: mapping " + format_bytes(len_) + " for this rank's state: " +
                  std::strerror(errno) + " (the state must fit in host memory; use source pool)");
  base_ = static_cast<std::byte*>(p);
  if (!fill) return;
  for (const auto& f : io.files) {
    fill->fill(std::span<std::byte>(at(f.id, 0), f.size), f.id, 0);
    // A tracker file holds its text (FileSpec::text), as the data path writes it.
    std::memcpy(at(f.id, 0), f.text.data(), std::min<uint64_t>(f.text.size(), f.size));
  }
}

ShardMemory::~ShardMemory() {
  if (base_) ::munmap(base_, len_);
}

void ShardMemory::touch() {
  if (base_) std::memset(base_, 0, len_);
}

uint64_t ShardMemory::copy_from(const ShardMemory& src, const RankIo& io) {
  uint64_t n = 0;
  for (const auto& f : io.files) {
    if (f.size == 0) continue;
    std::memcpy(at(f.id, 0), src.at(f.id, 0), f.size);
    n += f.size;
  }
  return n;
}

bool ShardMemory::covers(const RankIo& io) const {
  for (const auto& f : io.files)
    if (start_.find(f.id) == start_.end()) return false;
  return true;
}

std::byte* ShardMemory::at(uint32_t file_id, uint64_t offset) const {
  auto it = start_.find(file_id);
  if (it == start_.end())
    throw Error("source shard: no memory for file " + std::to_string(file_id));
  return base_ + it->second + offset;
}

}  // namespace ckpt
