// Aligned, reusable buffer pool and the data pattern used for fill and verify.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace ckpt {

// The pattern: a function of (file, absolute file offset) only, so any transfer cut - per
// tensor or streamed across tensors, any block size - writes and verifies the same bytes. The
// byte at offset o of file f is base[o % period], except that the 16 bytes at every offset that
// is a multiple of 4 KiB hold a stamp {f ^ magic, o}. So data is not constant, depends on file
// and offset, repeats only with the period apart from stamps, and a buffer that holds `base`
// from phase 0 can stage any 4 KiB-aligned transfer by rewriting its stamps only.
class Pattern {
 public:
  static constexpr uint64_t kStampEvery = 4096;
  static constexpr uint64_t kStampBytes = 16;
  static constexpr uint64_t kMaxPeriod = 1ull << 20;
  // The period used for a block size: block_size rounded up to 4 KiB, at most 1 MiB.
  static uint64_t period_for(uint64_t block_size);
  // period: a positive multiple of 4096.
  Pattern(uint64_t period, uint64_t seed);
  uint64_t period() const { return base_.size(); }
  const std::byte* base() const { return base_.data(); }

  // Writes the bytes of [offset, offset + buf.size()) of file file_id.
  void fill(std::span<std::byte> buf, uint32_t file_id, uint64_t offset) const;
  // Writes only the stamps of that range (buf already holds base at phase offset % period).
  void stamp(std::span<std::byte> buf, uint32_t file_id, uint64_t offset) const;
  // Checks that range; returns the index of the first wrong byte in buf, or nullopt.
  std::optional<uint64_t> check(std::span<const std::byte> buf, uint32_t file_id,
                                uint64_t offset) const;

 private:
  std::vector<std::byte> base_;
};

struct Buffer {
  std::byte* data = nullptr;
  uint64_t size = 0;  // capacity: the largest transfer plus the pattern period
  // [dirty_lo, dirty_hi): where the buffer may differ from base at phase 0 (outside the 16-byte
  // stamp slots at multiples of 4 KiB). Empty after BufferPool::prefill.
  uint64_t dirty_lo = 0, dirty_hi = 0;
  void taint(uint64_t lo, uint64_t hi) {
    if (dirty_lo == dirty_hi) {
      dirty_lo = lo;
      dirty_hi = hi;
    } else {
      dirty_lo = lo < dirty_lo ? lo : dirty_lo;
      dirty_hi = hi > dirty_hi ? hi : dirty_hi;
    }
  }
};

// Stages the bytes of [offset, offset + len) of file file_id in buf and returns where they start.
// Fast path (a 4 KiB-aligned offset whose window fits): the window at buf.data + offset % period,
// where the buffer already holds base, so only stamps are written (a dirty part of the buffer in
// the window is first restored from base). Otherwise a full fill at buf.data.
std::byte* stage_pattern(const Pattern& p, Buffer& buf, uint32_t file_id, uint64_t offset,
                         uint64_t len);

// count buffers of `size` bytes (the largest transfer) plus `extra` (the pattern period, for the
// stage_pattern window), each aligned to `align` (>= 4096), allocated once.
class BufferPool {
 public:
  BufferPool(size_t count, uint64_t size, uint64_t align, uint64_t extra = 0);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  size_t count() const { return bufs_.size(); }
  uint64_t buffer_size() const { return size_; }  // the largest transfer a buffer takes
  Buffer& at(size_t i) { return bufs_[i]; }
  // Copies pattern base from phase 0 over every buffer's capacity and marks it clean (outside
  // timed regions; before every save).
  void prefill(const Pattern& p);
  uint64_t total_bytes() const { return capacity_ * bufs_.size(); }
  // True when madvise(MADV_HUGEPAGE) was accepted for the pool's region.
  bool huge_pages() const { return huge_pages_; }
  // Bytes of the pool's region that are backed by transparent huge pages now (AnonHugePages of its
  // mappings in /proc/self/smaps): what the kernel actually gave, which an accepted madvise does
  // not promise. -1 when it cannot be read.
  int64_t huge_page_bytes() const;

 private:
  uint64_t size_;
  uint64_t capacity_;
  std::vector<Buffer> bufs_;
  std::byte* region_ = nullptr;
  uint64_t region_bytes_ = 0;
  bool huge_pages_ = false;
};

}  // namespace ckpt
