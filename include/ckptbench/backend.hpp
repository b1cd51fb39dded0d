// Backend interface + registry. Only the backends touch file descriptors.
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/buffers.hpp"
#include "ckptbench/config.hpp"
#include "ckptbench/layout.hpp"
#include "ckptbench/metrics.hpp"
#include "ckptbench/transfer.hpp"

namespace ckpt {

// Produces the bytes to write and consumes the bytes read, transfer by transfer. For this rank's
// own extents it stages/verifies the pattern; for extents owned by another rank (node aggregation)
// it receives them from / sends them to that rank over MPI. A backend calls produce (save) and
// consume (restore) for each file's transfers in file order (TransferCursor order).
class DataPath {
 public:
  virtual ~DataPath() = default;
  // Stages the bytes of transfer t of file f in buf; returns where they start (inside buf: write
  // t.len bytes from there).
  virtual std::byte* produce(const FileSpec& f, const Transfer& t, Buffer& buf) = 0;
  // Hands over the t.len bytes read into buf.data; verifies the payload when verification is on
  // (throws IoError naming the file and offset of the first wrong byte).
  virtual void consume(const FileSpec& f, const Transfer& t, Buffer& buf) = 0;
};

enum class Phase { save, restore };

struct PhaseContext {
  Phase phase = Phase::save;
  const PointConfig* cfg = nullptr;
  const IoPlan* plan = nullptr;
  const ModelDesc* model = nullptr;  // tensor names/shapes (for backends that name datasets)
  const RankIo* io = nullptr;        // this rank's files and extents
  std::string dir;                   // absolute point directory (exists; subdirectories created)
  int dirfd = -1;                    // dir held open (-1: open_plan_file opens it per call)
  MPI_Comm comm = MPI_COMM_NULL;     // every rank of the run (collective backends may split it)
  BufferPool* pool = nullptr;  // cfg->queue_depth (>= 1) buffers of block_size (+ period), aligned
  DataPath* data = nullptr;
  PhaseRecorder* rec = nullptr;
  uint64_t align = 4096;   // extent offset alignment of the layout (>= dio_align)
  uint64_t dio_align = 0;  // the file system's O_DIRECT offset/length alignment (0: = align)
  bool verify = false;
  // Cache defeat before a restore (fadvise, drop-caches) is done by run.cpp outside the timed
  // phase; backends only honour cfg->direct.
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Runs one whole phase for this rank: open/create (creators first; if plan->any_shared, a
  // barrier on comm before the others open), every transfer of every file (TransferCursor with
  // cfg->block_size and cfg->transfer), sync per cfg->sync, close.
  // Records step times, ops and latencies in ctx.rec. Throws IoError on failure naming file,
  // offset, length and errno text.
  virtual void run(PhaseContext& ctx) = 0;
  // Effective settings for the report (flags the kernel accepted, hints the library returned...).
  virtual nlohmann::json describe() const = 0;
};

struct BackendFactory {
  std::string name;
  std::string description;
  // Empty when the backend works here; else the reason (e.g. io_uring disabled by sysctl).
  std::function<std::string()> probe;
  // Validates backend options (cfg.backend_options) and the combination with the point's
  // layout/direct settings; throws ConfigError with the reason.
  std::function<void(const PointConfig&)> validate;
  // Option keys accepted in the backend's config section (for the docs and unknown-key errors).
  std::vector<std::string> option_keys;
  // The library behind the backend, for the report's environment: {"<name>_version", version}
  // (empty name: none beyond the C library and MPI).
  std::function<std::pair<std::string, std::string>()> library;
  // Whether a transfer may span extents (`transfer: stream`); a backend that moves one tensor
  // (dataset) per call says why not.
  bool stream_transfers = true;
  std::string stream_refusal;
  std::function<std::unique_ptr<Backend>(const PointConfig&)> create;
};

// Helpers every backend shares.
// File descriptors a backend may keep open: RLIMIT_NOFILE's soft limit minus 64 for MPI and the
// runtime (at least 64, at most 2^20).
size_t fd_budget();
// Opens file f of the plan below ctx.dir with open_beneath (no symbolic link followed, nothing
// outside the directory; `flags` with O_CREAT creates exclusively). Throws IoError naming the path
// and, for a planted entry, what happened. What = "create" / "open" for the message.
int open_plan_file(const PhaseContext& ctx, const FileSpec& f, int flags, const char* what);
// Preallocation of a file this rank just created, the same for every backend: fallocate(2)
// (mode 0) of its final size. Returns false when the file system does not support it (EOPNOTSUPP,
// ENOSYS): nothing is emulated (glibc's posix_fallocate would write every block inside the timed
// open) and the backend reports the file in `preallocate_unsupported_files`. Throws IoError naming
// the file for real failures (ENOSPC, EFBIG, EIO).
bool preallocate_file(int fd, uint64_t size, const std::string& path);
// Before a restore reads a file: its size must cover every extent of f this rank reads. Throws
// IoError naming the file, its size and what the plan needs ("truncated or written by a different
// plan").
void check_file_size(uint64_t size, const FileSpec& f, const std::string& path);
// What a backend says about preallocation in describe(): "fallocate" / "off", plus the count of
// files the file system refused.
void describe_preallocation(nlohmann::json& j, bool requested, uint64_t unsupported_files);

// The one-call end sync of a phase that cannot keep its files open: syncfs(2) on ctx.dir, timed as
// the sync step and counted as one sync op. Throws IoError naming the directory.
void syncfs_dir(PhaseContext& ctx);

const std::vector<BackendFactory>& backend_registry();
// Throws ConfigError listing the known backends.
const BackendFactory& find_backend(const std::string& name);
// name -> "" (works) or the reason it does not.
nlohmann::json probe_backends();

// Each backend file defines one of these.
BackendFactory posix_backend();
BackendFactory uring_backend();
BackendFactory mpiio_backend();
BackendFactory hdf5_backend();

}  // namespace ckpt
