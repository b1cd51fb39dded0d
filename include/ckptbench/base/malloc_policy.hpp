#pragma once
// glibc's allocator maps a block above its mmap threshold with mmap and unmaps it on free. The
// threshold starts at 128 KiB and rises only when the process happens to free such a block, so
// whether MPI-IO's and HDF5's per-call scratch buffers (collective buffering: up to 32 MiB per
// call) are reused or mapped, page-faulted and unmapped on every call depended on the allocation
// history of the process: Open MPI's collective 1 MiB writes on 4 ranks ran at 0.20-0.24 or
// 0.40-0.55 GiB/s from one build to the next (docs/PERFORMANCE.md, "ckptbench vs IOR").
// pin_malloc_thresholds() sets the threshold to the ceiling glibc's own adjustment reaches (32 MiB
// on 64-bit, the trim threshold twice that, as glibc pairs them) before MPI_Init, unless the user
// chose them (GLIBC_TUNABLES glibc.malloc.mmap_threshold / trim_threshold, MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_); the report records which (environment.malloc).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace ckpt {

inline constexpr uint64_t kMallocMmapThreshold = 32ull << 20;
inline constexpr uint64_t kMallocTrimThreshold = 2 * kMallocMmapThreshold;

// Sets the thresholds unless the environment chose them; call once, before MPI_Init.
void pin_malloc_thresholds();
// {"mmap_threshold_bytes", "trim_threshold_bytes", "set_by": "ckptbench"} or
// {"set_by": "environment", "setting": "<the variables>"} or {"set_by": "glibc default", "note"}.
nlohmann::json malloc_policy_json();

}  // namespace ckpt
