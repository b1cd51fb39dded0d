// Aligned, reusable buffer pool and the data pattern used for fill and verify.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ckpt {

// The pattern: byte at position p of an extent (p counted from the extent's start) is
// base[p % period], except that every 4 KiB from the extent start holds a 16-byte stamp
// {file_id ^ magic, absolute file offset}. So data depends on (file, offset), is not
// constant, and a pool buffer prefilled with `base` needs only its stamps rewritten per op.
class Pattern {
 public:
  static constexpr uint64_t kStampEvery = 4096;
  static constexpr uint64_t kStampBytes = 16;
  Pattern(uint64_t period, uint64_t seed);
  uint64_t period() const { return base_.size(); }
  const std::byte* base() const { return base_.data(); }

  // Writes the pattern for extent position [pos, pos+buf.size()) of an extent starting at
  // `extent_offset` in file `file_id`. `buf_phase` tells what the buffer already holds: if it
  // holds base from phase pos % period, only stamps are written.
  void fill(std::span<std::byte> buf, uint32_t file_id, uint64_t extent_offset, uint64_t pos,
            bool buf_holds_base) const;
  // Checks the same range; returns the index of the first wrong byte in buf, or nullopt.
  std::optional<uint64_t> check(std::span<const std::byte> buf, uint32_t file_id,
                                uint64_t extent_offset, uint64_t pos) const;

 private:
  std::vector<std::byte> base_;
};

struct Buffer {
  std::byte* data = nullptr;
  uint64_t size = 0;
  // True when the buffer holds Pattern::base from phase 0 except at stamp positions
  // (so a fill at pos % period == 0 only needs stamps).
  bool holds_base = false;
};

// count buffers of `size` bytes, each aligned to `align` (>= 4096), allocated once.
class BufferPool {
 public:
  BufferPool(size_t count, uint64_t size, uint64_t align);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  size_t count() const { return bufs_.size(); }
  uint64_t buffer_size() const { return size_; }
  Buffer& at(size_t i) { return bufs_[i]; }
  // Copies pattern base into every buffer (outside timed regions).
  void prefill(const Pattern& p);
  uint64_t total_bytes() const { return size_ * bufs_.size(); }
  // True when madvise(MADV_HUGEPAGE) was accepted for the pool's region.
  bool huge_pages() const { return huge_pages_; }
  // Bytes of the pool's region that are backed by transparent huge pages now (AnonHugePages of its
  // mappings in /proc/self/smaps): what the kernel actually gave, which an accepted madvise does
  // not promise. -1 when it cannot be read.
  int64_t huge_page_bytes() const;

 private:
  uint64_t size_;
  std::vector<Buffer> bufs_;
  std::byte* region_ = nullptr;
  uint64_t region_bytes_ = 0;
  bool huge_pages_ = false;
};

}  // namespace ckpt
