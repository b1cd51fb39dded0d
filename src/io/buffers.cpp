#include "ckptbench/io/buffers.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"

namespace ckpt {

namespace {
constexpr uint64_t kMagic = 0xC4B7BE4Cull << 32;

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void stamp_bytes(std::byte out[Pattern::kStampBytes], uint32_t file_id, uint64_t file_offset) {
  uint64_t a = kMagic | file_id, b = file_offset;
  std::memcpy(out, &a, 8);
  std::memcpy(out + 8, &b, 8);
}
}  // namespace

uint64_t Pattern::period_for(uint64_t block_size) {
  uint64_t p = round_up(std::max<uint64_t>(block_size, 1), kStampEvery);
  return std::min(p, kMaxPeriod);
}

Pattern::Pattern(uint64_t period, uint64_t seed) : base_(period) {
  if (period == 0 || period % kStampEvery != 0)
    throw Error("pattern period must be a positive multiple of 4096");
  uint64_t s = seed;
  for (uint64_t i = 0; i < period; i += 8) {
    uint64_t v = splitmix(s);
    std::memcpy(base_.data() + i, &v, 8);
  }
}

void Pattern::stamp(std::span<std::byte> buf, uint32_t file_id, uint64_t offset) const {
  const uint64_t n = buf.size();
  std::byte st[kStampBytes];
  // The stamp slot that starts before offset may reach into the range.
  for (uint64_t q = offset / kStampEvery * kStampEvery; q < offset + n; q += kStampEvery) {
    if (q + kStampBytes <= offset) continue;
    stamp_bytes(st, file_id, q);
    const uint64_t lo = std::max(q, offset), hi = std::min(q + kStampBytes, offset + n);
    std::memcpy(buf.data() + (lo - offset), st + (lo - q), hi - lo);
  }
}

void Pattern::fill(std::span<std::byte> buf, uint32_t file_id, uint64_t offset) const {
  const uint64_t n = buf.size(), per = base_.size();
  uint64_t done = 0;
  while (done < n) {
    uint64_t ph = (offset + done) % per;
    uint64_t k = std::min(n - done, per - ph);
    std::memcpy(buf.data() + done, base_.data() + ph, k);
    done += k;
  }
  stamp(buf, file_id, offset);
}

std::optional<uint64_t> Pattern::check(std::span<const std::byte> buf, uint32_t file_id,
                                       uint64_t offset) const {
  const uint64_t n = buf.size(), per = base_.size();
  std::byte st[kStampBytes];
  // Walk 4 KiB stamp blocks: the stamp bytes, then the base bytes up to the next stamp.
  for (uint64_t q = offset / kStampEvery * kStampEvery; q < offset + n; q += kStampEvery) {
    stamp_bytes(st, file_id, q);
    for (uint64_t i = 0; i < kStampBytes; i++) {
      uint64_t o = q + i;
      if (o >= offset && o < offset + n && buf[o - offset] != st[i]) return o - offset;
    }
    uint64_t lo = std::max(offset, q + kStampBytes), hi = std::min(offset + n, q + kStampEvery);
    while (lo < hi) {
      uint64_t ph = lo % per;
      uint64_t k = std::min(hi - lo, per - ph);
      if (std::memcmp(buf.data() + (lo - offset), base_.data() + ph, k) != 0) {
        for (uint64_t i = 0; i < k; i++)
          if (buf[lo - offset + i] != base_[ph + i]) return lo - offset + i;
      }
      lo += k;
    }
  }
  return std::nullopt;
}

std::byte* stage_pattern(const Pattern& p, Buffer& buf, uint32_t file_id, uint64_t offset,
                         uint64_t len) {
  const uint64_t ph = offset % p.period();
  if (offset % Pattern::kStampEvery == 0 && ph + len <= buf.size) {
    if (buf.dirty_lo < buf.dirty_hi && buf.dirty_lo < ph + len && ph < buf.dirty_hi) {
      // Restore the dirty part from base (phase = position) before using the window.
      for (uint64_t pos = buf.dirty_lo; pos < buf.dirty_hi;) {
        const uint64_t b = pos % p.period(), k = std::min(buf.dirty_hi - pos, p.period() - b);
        std::memcpy(buf.data + pos, p.base() + b, k);
        pos += k;
      }
      buf.dirty_lo = buf.dirty_hi = 0;
    }
    std::byte* w = buf.data + ph;
    p.stamp({w, len}, file_id, offset);
    return w;
  }
  p.fill({buf.data, len}, file_id, offset);
  buf.taint(0, len);
  return buf.data;
}

BufferPool::BufferPool(size_t count, uint64_t size, uint64_t align, uint64_t extra)
    : size_(size), capacity_(size + extra) {
  if (count == 0 || size == 0) throw Error("buffer pool needs at least one non-empty buffer");
  // One region for the whole pool, 2 MiB aligned and backed by transparent huge pages where the
  // kernel allows: a 1 MiB buffer made of scattered 4 KiB pages can exceed a device's segment
  // limit (254 on virtio-blk here) and be split into two requests (fio's malloc'd buffers are not
  // huge pages unless THP is 'always', and get split). Falls back to normal pages (the report
  // records which).
  constexpr uint64_t kHuge = 2ull << 20;
  uint64_t a = std::max<uint64_t>(align, 4096);
  uint64_t stride = round_up(capacity_, a);
  region_bytes_ = round_up(stride * count, kHuge) + kHuge;
  void* p =
      mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)  // the config asks for more than memory: bad input (exit 2)
    throw ConfigError("cannot allocate " + std::to_string(count) + " I/O buffers of " +
                      format_bytes(size) +
                      " (queue_depth x block_size too large for memory?): " + errno_text(errno));
  region_ = static_cast<std::byte*>(p);
  auto base = reinterpret_cast<uintptr_t>(region_);
  std::byte* start = region_ + (round_up(base, kHuge) - base);
  huge_pages_ = madvise(start, round_up(stride * count, kHuge), MADV_HUGEPAGE) == 0;
  bufs_.resize(count);
  for (size_t i = 0; i < count; i++) {
    bufs_[i].data = start + i * stride;
    bufs_[i].size = capacity_;
  }
}

int64_t BufferPool::huge_page_bytes() const {
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (f == nullptr) return -1;
  const auto lo = reinterpret_cast<uintptr_t>(region_);
  const uintptr_t hi = lo + region_bytes_;
  int64_t total = 0;
  bool inside = false, seen = false;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t a = 0, b = 0;
    // A mapping header is "start-end perms offset dev inode [path]" in lower-case hex; field
    // lines ("AnonHugePages:   2048 kB") start with an upper-case name.
    const bool header = (line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f');
    if (header && std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &a, &b) == 2) {
      inside = a < hi && b > lo;
      seen = seen || inside;
      continue;
    }
    unsigned long long kb = 0;
    if (inside && std::sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
      total += static_cast<int64_t>(kb) * 1024;
  }
  std::fclose(f);
  return seen ? total : -1;
}

BufferPool::~BufferPool() {
  if (region_) munmap(region_, region_bytes_);
}

void BufferPool::prefill(const Pattern& p) {
  for (auto& b : bufs_) {
    for (uint64_t pos = 0; pos < b.size;) {
      const uint64_t k = std::min(b.size - pos, p.period());
      std::memcpy(b.data + pos, p.base(), k);
      pos += k;
    }
    b.dirty_lo = b.dirty_hi = 0;
  }
}

}  // namespace ckpt
