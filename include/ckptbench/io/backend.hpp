// Backend interface + registry. Only the backends touch file descriptors.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/base/metrics.hpp"
#include "ckptbench/fs/mdprobe.hpp"
#include "ckptbench/io/buffers.hpp"
#include "ckptbench/io/source.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/plan/transfer.hpp"

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
  // Whether produce/consume of transfer t waits on another rank (node aggregation's MPI pieces):
  // the driver hands queued transfers to the kernel first, so the device works meanwhile.
  virtual bool waits_on_peer(const FileSpec&, const Transfer&) const { return false; }
  // source "shard": the save writes transfer t straight from the rank's memory, nothing staged;
  // the transfer still counts (CKPT_FAULT_INJECT "transfer=N").
  virtual void from_memory(const FileSpec&, const Transfer&) {}
};

enum class Phase { save, restore };

struct StallGuard;  // agreement.hpp

struct PhaseContext {
  Phase phase = Phase::save;
  const PointConfig* cfg = nullptr;
  const IoPlan* plan = nullptr;
  const ModelDesc* model = nullptr;  // tensor names/shapes (for backends that name datasets)
  const RankIo* io = nullptr;        // this rank's files and extents
  std::string dir;                   // absolute point directory (exists; subdirectories created)
  std::string run_dir;               // the run directory dir is below (object stores key on it)
  int dirfd = -1;                    // dir held open (-1: open_plan_file opens it per call)
  MPI_Comm comm = MPI_COMM_NULL;     // every rank of the run (collective backends may split it)
  BufferPool* pool = nullptr;  // cfg->queue_depth (>= 1) buffers of block_size (+ period), aligned
  DataPath* data = nullptr;
  PhaseRecorder* rec = nullptr;
  uint64_t align = 4096;   // extent offset alignment of the layout (>= dio_align)
  uint64_t dio_align = 0;  // the file system's O_DIRECT offset/length alignment (0: = align)
  // source "shard": the rank's files in memory, written from (save) or read into (restore)
  // instead of the pool's buffers (source.hpp); null with source "pool".
  const ShardMemory* shard = nullptr;
  // With `shard` on restore, a plan that loads in place and framework_cpu: the resident state
  // each request's tensor bytes are copied into after the read (timed as the cpu step).
  const ShardMemory* load_into = nullptr;
  // The framework's own collectives inside the phase (DCP's commit: FileSpec::commit) run on
  // this duplicate of comm (MPI_COMM_NULL: on comm), so a rank that left the phase early never
  // meets one of them with the error check on comm; `stall` (may be null) guards the waits.
  MPI_Comm framework_comm = MPI_COMM_NULL;
  const StallGuard* stall = nullptr;
  int meetings = 0;  // those collectives this rank has attended in this phase
  // Verification is the data path's (DataPath::consume); cache defeat before a restore (fadvise,
  // drop-caches) is done outside the timed phase; transports only honour cfg->direct.
};

// What a transport can do; the phase driver (driver.cpp) adapts to it.
struct TransportCaps {
  // Transfers the transport keeps in flight at most (1: each submit completes before it returns).
  unsigned depth = 1;
  // The transport moves a whole file's bytes in one call (transfer_file): collective MPI-IO, and
  // HDF5's dataset writes. Timing, open, sync and close still go through the driver.
  bool whole_file = false;
  // Opening, syncing and closing a file are collective over its writers (MPI_File_open, H5Fcreate
  // ...): the driver takes files strictly one after another in file-id order, so every rank makes
  // these calls in the same order (transfers in flight never span two files).
  bool collective_files = false;
  // The driver preallocates the files it creates (fallocate(2), when the point asks); false: the
  // library lays the file out itself (HDF5 truncates it and allocates each dataset).
  bool preallocate = true;
  // The plan's offsets are file offsets: a restore checks each file's size against the plan.
  bool plan_offsets = true;
  // Files open at once at most, below the descriptor budget (HDF5 keeps a metadata cache each).
  size_t max_open = SIZE_MAX;
  // The files are objects in a store the transport reaches itself (s3): the driver creates,
  // preallocates and syncs nothing on the file system (open(i, -1) on a save creates the object;
  // an object is durable when its upload completed, so `sync` does not apply), and the transport
  // records each request with ctx.rec->op itself (a save's transfers are copied into its parts,
  // so submit-to-reap is not a request's latency).
  bool objects = false;
};

// A backend is a transport under the phase driver, in the spirit of fio's ioengine ops: the driver
// (src/io/driver.cpp) owns the file order, creation (exclusive, no link followed) and
// preallocation, the shared-file barrier, the truncation check, the transfer stream and queue-depth
// bookkeeping, the sync policy with the descriptor budget, and step timing; a transport opens,
// moves bytes, syncs and closes. File i is ctx.io->files[i]; `slot` is the index of a ctx.pool
// buffer. Transports count their own calls in ctx.rec (Counter::submit_calls, short_transfers,
// retries; metadata() for each open/close they make).
class Backend {
 public:
  virtual ~Backend() = default;
  // Runs one whole phase of this rank (the driver with this transport). Throws IoError naming
  // the file, offset, length and errno text.
  void run(PhaseContext& ctx);

  virtual TransportCaps caps(const PhaseContext& ctx) const = 0;
  // Per-phase set-up (registered buffers, communicators, library state); end() runs after the
  // phase, also after an error.
  virtual void begin(PhaseContext& ctx) = 0;
  virtual void end(PhaseContext& ctx) noexcept = 0;
  // Opens file i. created_fd >= 0: the driver has just created it (O_WRONLY|O_CREAT, O_DIRECT
  // with `direct`) and preallocated it; the transport owns that descriptor (keeps it, or closes
  // it and opens the file through its library). -1: opens the existing file for ctx.phase.
  virtual void open(PhaseContext& ctx, size_t i, int created_fd) = 0;
  // Size of open file i in bytes (asked when caps().plan_offsets, before a restore reads it).
  virtual uint64_t size(size_t i) = 0;
  // Queues one transfer of len bytes at offset of file i from/into data (inside buffer slot).
  virtual void submit(size_t i, unsigned slot, uint64_t offset, uint64_t len, std::byte* data);
  // Hands queued transfers to the kernel or library now, without waiting (before the driver
  // blocks in an open, a sync or an MPI receive).
  virtual void flush() {}
  // Waits until at least one queued transfer completed in full (short ones are resumed and
  // EINTR/EAGAIN retried inside) and appends the slots of all that completed.
  virtual void reap(std::vector<unsigned>& done);
  // After an error: waits for every transfer in flight (the kernel must not touch a buffer after
  // the phase ends).
  virtual void drain() noexcept {}
  // whole_file transports: every transfer of file i, producing and consuming through ctx.data and
  // recording each with ctx.rec->op.
  virtual void transfer_file(PhaseContext& ctx, size_t i);
  virtual void sync(size_t i) = 0;
  // sync of several files at the end of a phase (io_uring issues them all at once).
  virtual void sync_all(const std::vector<size_t>& files) {
    for (size_t i : files) sync(i);
  }
  virtual void close(size_t i) = 0;
  // After an error: lets go of what is still open without syncing; a transport whose close is
  // collective may leave the handles to MPI_Finalize rather than risk a hang.
  virtual void abandon() noexcept {}
  // After every rank agreed that the phase failed (every rank is past the phase, at the same
  // point of the run): closes the shared files abandon() left open, collectively over each
  // file's writers, in file-id order. Neither the run's clean-up (a FUSE file system keeps an
  // open file it is asked to unlink as .fuse_hiddenNNN) nor the library's shutdown inside
  // MPI_Finalize (HDF5 closes what is open from an MPI attribute callback) then meets them.
  // run_comm: every rank of the run (all of them call this together).
  virtual void close_abandoned(MPI_Comm /*run_comm*/) noexcept {}
  // Effective settings for the report (flags the kernel accepted, hints the library returned...);
  // what was counted is per phase, in ctx.rec.
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
  // Not empty: the plan's offsets are not file offsets for this backend (it places the data
  // itself), so a restore that reads byte ranges of the files (`restore.parallelism`,
  // `restore.weights_only`, `restore.method` "mmap") is refused with this reason.
  std::string file_offsets_refusal;
  // Not empty: opening files through this backend may create entries beside them (MPI-IO's
  // shared-file-pointer files), so it cannot read a directory that must stay untouched
  // (--read-dir); this says why.
  std::string read_only_refusal;
  // The files are objects in a store reached over the network (s3): block_size is the part size
  // (the transport gathers transfers into parts), there is no page cache on this side (cache
  // "auto" is "none", no cache defeat, no residency sample, no page-cache warning), and nothing
  // is preallocated or synced on a file system.
  bool objects = false;
  std::function<std::unique_ptr<Backend>(const PointConfig&)> create;
  // Not empty: the backend's store is reached over the network (s3). Checked before any I/O for
  // every point (target_point_error): "" when it answers; else what is wrong, naming which of the
  // endpoint, the credentials or the bucket.
  std::function<std::string(const PointConfig&)> reach;
  // Not empty: the backend keeps the run's data outside the run directory (s3: objects below
  // s3.url/<run directory's name>/). Removes what it stored for `dir` (run_dir itself or a
  // directory below it): aborts the unfinished uploads there and deletes the objects; returns
  // what it did. Called where the run removes that directory (a repetition's, the whole run's,
  // and on a signal by the clean-up). Throws IoError.
  std::function<std::string(const PointConfig&, const std::string& run_dir, const std::string& dir)>
      remove_data;
  // Not empty: the requests a point's plan makes of the backend's store (s3: objects, parts, the
  // save's and restore's requests by kind), for `plan` and the report's plan section. Throws
  // ConfigError where the store would refuse the plan (S3's part limits), naming the key to
  // change; the run calls it for every point before any I/O.
  std::function<nlohmann::json(const IoPlan&, const PointConfig&)> plan_requests;
  // Not empty: the backend keeps the files outside the run directory (s3): what is stored for
  // `dir` (a saved point's directory below run_dir), relative path -> bytes, for a restore job's
  // check of the saved run before any I/O (one listing). Throws IoError.
  std::function<std::map<std::string, uint64_t>(const PointConfig&, const std::string& run_dir,
                                                const std::string& dir)>
      stored_sizes;
  // Not empty: the store's metadata operations are requests (s3), measured by this instead of
  // the file system's md_probe (characterize's metadata stage), collective on comm: every rank
  // PUTs files_per_rank empty objects below a prefix named after `dir` (a directory below the
  // run's target, not made), HEADs them, rank 0 LISTs them all, every rank DELETEs them
  // (MdSample: create = PUT, stat = open = HEAD, unlink = DELETE, lists). Nothing is left behind,
  // also after an error (an IoError on every rank).
  std::function<MdSample(const PointConfig&, const std::string& dir, int files_per_rank,
                         MPI_Comm comm)>
      metadata_probe;
  // The smallest block_size the backend accepts (s3: S3's 5 MiB part minimum); 0: any.
  uint64_t min_block_size = 0;
  // Not empty: shuts the backend's library down while MPI still works (before MPI_Finalize):
  // what a failed phase left open is closed there, not from an MPI attribute callback inside
  // MPI_Finalize (shutdown_backends()).
  std::function<void()> shutdown;
  // Not empty: this binary was configured without the backend, and this says so and how to get
  // it ("not built (configure with -DCKPT_WITH_HDF5=ON)"). The backend stays in the registry (its
  // name is known, `ckptbench backends` lists it with this as its status), probe() returns this,
  // and a config naming it is refused with it (parse_config, before any I/O).
  std::string not_built;
};

// Helpers every backend shares.
// The ranks of comm (a shared file's writers) learn whether any of them failed a step: the rank
// that failed rethrows err, the others throw a PeerLeftError naming `what` (the failed rank's error
// is the one the run reports). On MPI_COMM_SELF just rethrows err, if any. Collective over comm.
void agree_on_step(MPI_Comm comm, const std::exception_ptr& err, const std::string& what);
// The exception fn throws, or null.
std::exception_ptr error_of(const std::function<void()>& fn);
// Why a library (MPI-IO, HDF5) could not open `path`, whose own error seldom names the system's
// reason (Open MPI: "MPI_ERR_OTHER: known error not in list" for EMFILE): the path is opened the
// same way with POSIX. "" when that open works; else its errno text, with a hint for EMFILE.
std::string posix_open_reason(const std::string& path, bool write);
// File descriptors a phase (and a backend) may keep open at once: RLIMIT_NOFILE's soft limit less
// the descriptors open now (MPI's, the runtime's) and a reserve for what libraries open meanwhile
// (an eighth of the limit, 8 to 64); at least 1, at most 2^20. With `ulimit -n 24` that is 1 or
// 2, so a many-file layout runs one file at a time instead of failing with EMFILE.
size_t fd_budget();
// Opens file f of the plan below ctx.dir with open_beneath (no symbolic link followed, nothing
// outside the directory; `flags` with O_CREAT creates exclusively). Throws IoError naming the path
// and, for a planted entry, what happened. What = "create" / "open" for the message.
int open_plan_file(const PhaseContext& ctx, const FileSpec& f, int flags, const char* what);
// Before a library opens a saved file by its path (MPI_File_open, H5Fopen, which would block on a
// FIFO): what is at f's path is opened as open_plan_file does and closed again. Throws when it
// is not a regular file; a missing file is left to the library's own open (and its message).
void check_saved_file(const PhaseContext& ctx, const FileSpec& f);
// The open(2) flags for file f in this phase: O_WRONLY (save) or O_RDONLY, O_DIRECT with `direct`.
int plan_file_flags(const PhaseContext& ctx);

// pwrite (write) or pread of len bytes at off, resuming short transfers and EINTR; throws IoError
// naming `path`, the offset and the length (a read at end of file: truncated). With rec it counts
// Counter::submit_calls, retries and short_transfers.
void pio_all(int fd, bool write, std::byte* buf, uint64_t off, uint64_t len,
             const std::string& path, PhaseRecorder* rec);

// The files of a transport that moves bytes through POSIX descriptors (posix, io_uring): open
// adopts the descriptor the driver created, or opens the file for the phase (a metadata op);
// size, fsync and close name the file in their errors.
class FdFiles {
 public:
  void reset(size_t files) { f_.assign(files, F{}); }
  int open(PhaseContext& ctx, size_t i, int created_fd);
  int fd(size_t i) const { return f_[i].fd; }
  const std::string& path(size_t i) const { return f_[i].path; }
  uint64_t size(size_t i) const;
  void fsync(size_t i) const;
  void close(size_t i, PhaseRecorder& rec);
  void close_all() noexcept;  // after an error, no sync

 private:
  struct F {
    int fd = -1;
    std::string path;
  };
  std::vector<F> f_;
};

// The placeholder of a backend the build leaves out (src/io/backends/not_built.cpp): name and
// description as the real one, `not_built` = "not built (configure with -D<option>=ON)", probe()
// returns that, validate() and create() throw ConfigError with it, library() gives
// {library_key, "not built"} (the report's environment keeps its keys).
BackendFactory not_built_backend(const std::string& name, const std::string& description,
                                 const std::string& option, const std::string& library_key);

const std::vector<BackendFactory>& backend_registry();
// Runs every registered backend's shutdown (before MPI_Finalize; once).
void shutdown_backends() noexcept;
// Throws ConfigError listing the known backends.
const BackendFactory& find_backend(const std::string& name);
// name -> "" (works) or the reason it does not.
nlohmann::json probe_backends();

// Each backend file defines one of these; src/io/backends/not_built.cpp defines the ones of the
// backends the build leaves out (CKPT_WITH_HDF5, CKPT_WITH_IO_URING, CKPT_WITH_S3).
BackendFactory posix_backend();
BackendFactory uring_backend();
BackendFactory mpiio_backend();
BackendFactory hdf5_backend();
BackendFactory s3_backend();

}  // namespace ckpt
