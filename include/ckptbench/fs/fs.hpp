// File-system facts about the target: type, direct-I/O alignment, free space, safe directories.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

struct FsInfo {
  std::string
      type;  // "ext4", "xfs", "tmpfs", "lustre", "gpfs", "beegfs", "nfs", ... or "0x<magic>"
  uint64_t magic = 0;
  uint64_t block_size = 0;  // f_bsize
  uint64_t free_bytes = 0;  // f_bavail * f_frsize
  uint64_t total_bytes = 0;
  uint64_t dio_mem_align = 0;  // statx STATX_DIOALIGN (0 when unknown)
  uint64_t dio_offset_align = 0;
  std::string dio_align_source;  // "statx", "sysfs", "default"
  nlohmann::json to_json() const;
};

std::string fs_type_name(uint64_t magic);
// The kernel's pseudo file systems (sysfs, proc, cgroup, debugfs, tracefs, ...), by statfs magic:
// their name, or "" for any other. A directory made there is a kernel object (a cgroup), not
// storage, so no run goes there.
std::string pseudo_fs_name(uint64_t magic);
// Facts for an existing directory. Throws IoError when it cannot be examined.
FsInfo probe_fs(const std::string& dir);
// Direct-I/O offset alignment for files in dir: statx(STATX_DIOALIGN) on a probe file, else the
// device's logical_block_size from sysfs, else 4096. Sets info fields.
// probe_file false: never creates anything in dir (statx of the directory, else the device's
// logical block size), for directories ckptbench must not write in (--read-dir).
uint64_t dio_alignment(const std::string& dir, FsInfo& info, bool probe_file = true);

// Checks a run target before anything is written: parent exists, is a directory, writable, not
// `/`, a home or a system directory; if it exists and is non-empty, `force` must be set.
// Throws ConfigError naming the path.
void check_target(const std::string& target, bool force);

// Whether an errno says the target cannot be written by this user (EACCES, EPERM) or at all
// (EROFS): bad input for a run (ConfigError, exit 2), found before any I/O.
bool not_writable_errno(int err);

// mkdir -p for a path under a base (base must exist). Throws IoError. Only for the target itself;
// everything inside the run directory is made with mkdir_beneath / open_beneath.
void make_dirs(const std::string& path);

// An advisory lock: a file created exclusively (O_EXCL, which works on NFS, Lustre and CephFS
// where flock may not) holding "<host> <pid> <UTC time>". One run per target and per report path.
class LockFile {
 public:
  LockFile() = default;
  ~LockFile();
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;
  // Takes the lock at `path` for what `what` names ("target '/x'", "report 'r.json'"). Throws
  // ConfigError naming the holder's host, pid and start time when another run holds it. A lock
  // left behind by a dead process of this host is taken over, and stale() then describes it; a
  // lock of another host is never taken (its holder cannot be checked from here): the message
  // says which file to remove if that run is gone.
  // `run_dir` (may be empty): the name of the run directory the holder creates next to the lock
  // and `keep` whether it keeps it; a later run that takes the lock over removes a dead run's
  // directory unless it was kept (stale_run_dir()).
  void acquire(const std::string& path, const std::string& what, const std::string& run_dir = "",
               bool keep = false);
  void release();  // removes the file if this object holds it
  bool held() const { return !path_.empty(); }
  const std::string& stale() const { return stale_; }
  // After a takeover: the dead run's directory to remove (a bare name, "" when none or kept).
  const std::string& stale_run_dir() const { return stale_run_dir_; }
  // The dead holder's identity, which its run directory's marker must hold to be removed.
  const std::string& stale_identity() const { return stale_identity_; }
  void add_stale_note(const std::string& note) { stale_ += note; }

  // Who holds the lock file at `path`, as it says.
  struct Holder {
    std::string host, when, run_dir;
    long pid = 0;
    bool keep = false;
    bool dead = false;  // a process of this host that no longer exists
    // Not empty: the entry at `path` is not a lock file ckptbench wrote ("a FIFO (...)", "a
    // symbolic link", "12 MiB, larger than a lock file"): nothing was read from it.
    std::string bad;
    std::string identity() const;  // "<host> <pid> <when>", the lock's first line
  };
  // False when there is no file at `path` (or it cannot be opened). The file is opened without
  // following a link and without blocking (O_NOFOLLOW | O_NONBLOCK), only a regular file of at
  // most 4 KiB is read; anything else sets h.bad and returns true.
  static bool read_holder(const std::string& path, Holder& h);
  // "<host> <pid> <UTC time>" of this lock (empty when not held): the run marker's content.
  const std::string& identity() const { return identity_; }

 private:
  std::string path_;
  std::string identity_;
  std::string stale_;
  std::string stale_run_dir_;
  std::string stale_identity_;
};

// A directory held open, so that what the run creates inside it is resolved relative to it.
class DirFd {
 public:
  DirFd() = default;
  // Opens an existing directory (O_DIRECTORY). Throws IoError naming the path.
  explicit DirFd(const std::string& path);
  // Adopts an open directory descriptor (closed by the destructor); path is for messages.
  DirFd(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~DirFd();
  DirFd(DirFd&& o) noexcept;
  DirFd& operator=(DirFd&& o) noexcept;
  DirFd(const DirFd&) = delete;
  DirFd& operator=(const DirFd&) = delete;
  int get() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Opens rel (relative, no "..") below the directory dirfd without following any symbolic link
// and without leaving that directory: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), or, where
// the kernel or a seccomp filter refuses openat2, openat with O_NOFOLLOW. With O_CREAT the open is
// exclusive (O_EXCL is added): an entry already at rel - a file, a directory or a link someone
// planted - is an error, never reused or truncated. Returns the descriptor or -errno.
int open_beneath(int dirfd, const std::string& rel, int flags, unsigned mode = 0644);
// Creates the directory rel below dirfd, exclusively (an existing entry of any kind is an error)
// and with its parent resolved like open_beneath. Throws IoError naming `shown` (the full path).
void mkdir_beneath(int dirfd, const std::string& rel, const std::string& shown);
// What an open_beneath / mkdir_beneath errno means for the user: for EEXIST, ELOOP and EXDEV,
// that something else put an entry where the run creates its own; else the errno text.
std::string beneath_error(int err);
// Removes a directory tree the tool created (refuses paths outside `root`). No symbolic link is
// followed. Bounded: the tree is walked at most a few times; an entry that comes back (a FUSE file
// system renames an unlinked open file to .fuse_hiddenNNN, whose unlink renames it again) or
// cannot be removed ends it with an IoError naming what is left, never a loop.
void remove_tree(const std::string& path, const std::string& root);

// The run marker: a file ckptbench writes inside every run directory it creates, holding the
// identity of the run's target lock ("<host> <pid> <UTC time>"). A run that takes over a dead
// run's lock removes the directory that lock names only when the directory carries the marker
// with that identity and belongs to this user: a forged lock cannot get another directory deleted.
inline constexpr const char* kRunMarker = ".ckptbench-run";
// Writes the marker in run_dir (exclusively, no link followed). Throws IoError.
void write_run_marker(const std::string& run_dir, const std::string& identity);
// Removes a run directory that holds nothing but its marker (never anything else); true when
// it is gone.
bool remove_empty_run_dir(const std::string& run_dir);
// Empty when `dir` is a directory of this user (not a link) whose marker holds `identity`; else
// why it is not vouched for.
std::string run_marker_mismatch(const std::string& dir, const std::string& identity);

// Reads a small file ckptbench wrote itself (a lock, a run marker): opened without following a
// link and without blocking, a regular file of at most `limit` bytes. Returns "" and fills text,
// or what the entry is instead ("a symbolic link", "a FIFO (...)", "N bytes, more than ...",
// "missing").
std::string read_own_small_file(const std::string& path, size_t limit, std::string& text);
// The regular files below dir (recursively; symbolic links are neither followed nor listed), as
// (path relative to dir, size), sorted by path. Throws IoError naming what cannot be read.
std::vector<std::pair<std::string, uint64_t>> list_regular_files(const std::string& dir);

// A --read-dir: an existing directory, not on a kernel pseudo file system (sysfs, procfs, ...).
// Throws ConfigError naming it.
void check_read_dir(const std::string& dir);

// Absolute, lexically normalised path.
std::string absolute_path(const std::string& p);

}  // namespace ckpt

namespace ckpt {
// True when files in dir can be opened with O_DIRECT (probe file created and removed).
bool supports_odirect(const std::string& dir, std::string* why = nullptr);
// For a restore, in a saved run that must stay untouched: whether a saved file below dir opens
// read-only with O_DIRECT (nothing is created); sets info's O_DIRECT alignment from that file
// when the kernel reports it.
bool supports_odirect_read(const std::string& dir, FsInfo& info, std::string* why);
// Before a restore: make this rank's written pages clean and drop them (fdatasync +
// posix_fadvise DONTNEED per file). Throws IoError.
void fadvise_dontneed(const std::string& path);
// Bytes of [offset, offset + length) ranges of a file resident in the page cache (mmap + mincore,
// whole pages; ranges past the end are cut): *resident_bytes of *range_bytes. An empty list means
// the whole file. Returns the fraction, or -1 if unknown.
double resident_in_ranges(const std::string& path,
                          const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                          uint64_t* resident_bytes, uint64_t* range_bytes);
// Drops the page cache of this node (sync; echo 3 > /proc/sys/vm/drop_caches). "" or the reason.
std::string drop_caches();
bool can_drop_caches();
}  // namespace ckpt
