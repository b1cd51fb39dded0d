#include "ckptbench/buffers.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "ckptbench/error.hpp"
#include "ckptbench/units.hpp"

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

Pattern::Pattern(uint64_t period, uint64_t seed) : base_(period) {
  if (period == 0) throw Error("pattern period must be > 0");
  uint64_t s = seed;
  for (uint64_t i = 0; i < period; i += 8) {
    uint64_t v = splitmix(s);
    std::memcpy(base_.data() + i, &v, std::min<uint64_t>(8, period - i));
  }
}

void Pattern::fill(std::span<std::byte> buf, uint32_t file_id, uint64_t extent_offset, uint64_t pos,
                   bool buf_holds_base) const {
  const uint64_t n = buf.size(), per = base_.size();
  if (!(buf_holds_base && pos % per == 0)) {
    uint64_t done = 0;
    while (done < n) {
      uint64_t ph = (pos + done) % per;
      uint64_t k = std::min(n - done, per - ph);
      std::memcpy(buf.data() + done, base_.data() + ph, k);
      done += k;
    }
  }
  std::byte st[kStampBytes];
  for (uint64_t q = pos / kStampEvery * kStampEvery; q < pos + n; q += kStampEvery) {
    stamp_bytes(st, file_id, extent_offset + q);
    for (uint64_t i = 0; i < kStampBytes; i++) {
      uint64_t p = q + i;
      if (p >= pos && p < pos + n) buf[p - pos] = st[i];
    }
  }
}

std::optional<uint64_t> Pattern::check(std::span<const std::byte> buf, uint32_t file_id,
                                       uint64_t extent_offset, uint64_t pos) const {
  const uint64_t n = buf.size(), per = base_.size();
  std::byte st[kStampBytes];
  // Walk 4 KiB stamp blocks: the stamp bytes, then the base bytes up to the next stamp.
  uint64_t q = pos / kStampEvery * kStampEvery;
  for (; q < pos + n; q += kStampEvery) {
    stamp_bytes(st, file_id, extent_offset + q);
    for (uint64_t i = 0; i < kStampBytes; i++) {
      uint64_t p = q + i;
      if (p >= pos && p < pos + n && buf[p - pos] != st[i]) return p - pos;
    }
    uint64_t lo = std::max(pos, q + kStampBytes), hi = std::min(pos + n, q + kStampEvery);
    while (lo < hi) {
      uint64_t ph = lo % per;
      uint64_t k = std::min(hi - lo, per - ph);
      if (std::memcmp(buf.data() + (lo - pos), base_.data() + ph, k) != 0) {
        for (uint64_t i = 0; i < k; i++)
          if (buf[lo - pos + i] != base_[ph + i]) return lo - pos + i;
      }
      lo += k;
    }
  }
  return std::nullopt;
}

BufferPool::BufferPool(size_t count, uint64_t size, uint64_t align) : size_(size) {
  if (count == 0 || size == 0) throw Error("buffer pool needs at least one non-empty buffer");
  // One region for the whole pool, 2 MiB aligned and backed by transparent huge pages where the
  // kernel allows: a 1 MiB buffer made of scattered 4 KiB pages can exceed a device's segment
  // limit (254 on virtio-blk here) and be split into two requests (fio's malloc'd buffers are not
  // huge pages unless THP is 'always', and get split). Falls back to normal pages (the report
  // records which).
  constexpr uint64_t kHuge = 2ull << 20;
  uint64_t a = std::max<uint64_t>(align, 4096);
  uint64_t stride = round_up(size, a);
  region_bytes_ = round_up(stride * count, kHuge) + kHuge;
  void* p =
      mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot allocate " + std::to_string(count) + " I/O buffers of " +
                format_bytes(size) +
                " (queue_depth x block_size too large for memory?): " + errno_text(errno));
  region_ = static_cast<std::byte*>(p);
  auto base = reinterpret_cast<uintptr_t>(region_);
  std::byte* start = region_ + (round_up(base, kHuge) - base);
  huge_pages_ = madvise(start, round_up(stride * count, kHuge), MADV_HUGEPAGE) == 0;
  bufs_.resize(count);
  for (size_t i = 0; i < count; i++) {
    bufs_[i].data = start + i * stride;
    bufs_[i].size = size;
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
    p.fill({b.data, b.size}, 0, 0, 0, false);
    b.holds_base = true;
  }
}

}  // namespace ckpt
