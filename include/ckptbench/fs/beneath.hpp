// Operations beneath the directories a run owns: nothing followed through a symbolic link, nothing
// outside the directory, nothing created over an entry someone else put there.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

// mkdir -p for a path under a base (base must exist). Throws IoError. Only for the target itself;
// everything inside the run directory is made with mkdir_beneath / open_beneath.
void make_dirs(const std::string& path);

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

// The regular files below dir (recursively; symbolic links are neither followed nor listed), as
// (path relative to dir, size), sorted by path. Throws IoError naming what cannot be read.
std::vector<std::pair<std::string, uint64_t>> list_regular_files(const std::string& dir);

// A --read-dir: an existing directory, not on a kernel pseudo file system (sysfs, procfs, ...).
// Throws ConfigError naming it.
void check_read_dir(const std::string& dir);

}  // namespace ckpt
