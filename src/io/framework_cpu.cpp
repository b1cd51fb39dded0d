// The CPU work of a framework on each request's bytes: torch.save's CRC-32 on save, DCP's copy
// into the resident state on a restore that loads in place.
#include "ckptbench/io/framework_cpu.hpp"

#include <sys/mman.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ckpt {

double framework_cpu(PhaseRecorder& rec, const FileSpec& f, const Transfer& t,
                     const std::byte* data) {
  const double c0 = now_s();
  uLong crc = crc32(0L, Z_NULL, 0);
  for_each_piece(f, t, [&](const Extent& e, uint64_t, uint64_t n, uint64_t at) {
    if (e.shard < 0) return;
    const auto* p = reinterpret_cast<const Bytef*>(data + at);
    for (uint64_t done = 0; done < n;) {
      const uInt step = static_cast<uInt>(std::min<uint64_t>(n - done, 1u << 30));
      crc = crc32(crc, p + done, step);
      done += step;
    }
  });
  const double dt = now_s() - c0;
  rec.add_time(Step::cpu, dt);
  return dt;
}

double load_in_place(PhaseRecorder& rec, const ShardMemory& into, const FileSpec& f,
                     const Transfer& t, std::byte* data) {
  const double c0 = now_s();
  for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
    if (e.shard < 0) return;
    std::memcpy(into.at(f.id, e.offset + pos), data + at, n);
  });
  const auto lo = (reinterpret_cast<uintptr_t>(data) + 4095) / 4096 * 4096;
  const auto hi = (reinterpret_cast<uintptr_t>(data) + t.len) / 4096 * 4096;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  const double dt = now_s() - c0;
  rec.add_time(Step::cpu, dt);
  return dt;
}

}  // namespace ckpt
