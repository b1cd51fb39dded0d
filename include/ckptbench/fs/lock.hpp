// Run locking: one run per target and per report path (LockFile), the run marker that vouches
// for a run directory, and the checks of a run target before anything is written.
#pragma once
#include <cstddef>
#include <string>

namespace ckpt {

// Checks a run target before anything is written: parent exists, is a directory, writable, not
// `/`, a home or a system directory; if it exists and is non-empty, `force` must be set.
// Throws ConfigError naming the path.
void check_target(const std::string& target, bool force);

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

}  // namespace ckpt
