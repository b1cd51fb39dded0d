// The phase driver: one policy for every backend (docs/design.md, "Phase driver and transports").
// Backend::run(ctx) is this driver with the backend as its transport.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ckptbench/io/backend.hpp"

namespace ckpt {

// How a phase makes its files durable (pure; unit-tested).
struct SyncPlan {
  bool per_file = false;   // sync each file after its last transfer (sync "file")
  bool keep_open = false;  // sync "end": keep every file open for one sync each at the end
  bool syncfs = false;     // sync "end" past the descriptor budget: close as you go, one syncfs
};
// sync "end" keeps the files open when all of them fit `budget` descriptors, else one syncfs(2)
// of the point directory; restores never sync.
SyncPlan plan_sync(SyncPolicy policy, bool save, size_t files, size_t budget);

// Indices of `files` in file-id order (the order every rank opens shared files in).
std::vector<size_t> files_in_id_order(const std::vector<FileSpec>& files);
// Those of them that are (records true) or are not (false) records (FileSpec::role not data).
std::vector<size_t> files_in_id_order(const std::vector<FileSpec>& files, bool records);

// Preallocation of a file this rank just created: fallocate(2) (mode 0) of its final size.
// Returns false when the file system does not support it (EOPNOTSUPP, ENOSYS): nothing is
// emulated (glibc's posix_fallocate would write every block inside the timed open) and the phase
// counts it (Counter::preallocate_unsupported). Throws IoError naming the file for real failures
// (ENOSPC, EFBIG, EIO).
bool preallocate_file(int fd, uint64_t size, const std::string& path);

// Before a restore reads a file: its size must cover every extent of f this rank reads. Throws
// IoError naming the file, its size and what the plan needs ("truncated or written by a different
// plan").
void check_file_size(uint64_t size, const FileSpec& f, const std::string& path);

}  // namespace ckpt
