// Operations beneath a directory the run owns: directories held open (DirFd), creates and opens
// that follow no link and never leave the directory, bounded tree removal, listings of regular
// files, and the checks of a directory read (--read-dir).
#include "ckptbench/fs/beneath.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/fs/fs.hpp"
#include "ckptbench/fs/lock.hpp"

namespace fsys = std::filesystem;

namespace ckpt {

void make_dirs(const std::string& path) {
  std::error_code ec;
  fsys::create_directories(path, ec);
  if (!ec) return;
  const std::string msg = "cannot create directory '" + path + "': " + ec.message();
  // A target this user may not write (or a read-only mount) is bad input, found before any I/O.
  if (not_writable_errno(ec.value())) throw ConfigError(msg + "; give a target you can write");
  throw IoError(msg);
}

DirFd::DirFd(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw_errno("open directory '" + path + "'", errno);
}
DirFd::~DirFd() {
  if (fd_ >= 0) ::close(fd_);
}
DirFd::DirFd(DirFd&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
DirFd& DirFd::operator=(DirFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

int open_beneath(int dirfd, const std::string& rel, int flags, unsigned mode) {
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if (flags & O_CREAT) flags |= O_EXCL;
  // openat2 is tried once per process; ENOSYS (old kernel) or EPERM (seccomp) switch to openat.
  static std::atomic<int> have_openat2{1};
  if (have_openat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
    for (;;) {
      long fd = ::syscall(SYS_openat2, dirfd, rel.c_str(), &how, sizeof how);
      if (fd >= 0) return static_cast<int>(fd);
      if (errno == EINTR || errno == EAGAIN) continue;  // EAGAIN: a concurrent rename, retry
      if (errno != ENOSYS && errno != EPERM) return -errno;
      break;
    }
    have_openat2.store(0, std::memory_order_relaxed);
  }
  if (rel.empty() || rel.front() == '/' || rel == ".." || rel.rfind("../", 0) == 0 ||
      rel.find("/../") != std::string::npos)
    return -EXDEV;
  int fd = ::openat(dirfd, rel.c_str(), flags, mode);
  return fd >= 0 ? fd : -errno;
}

std::string beneath_error(int err) {
  std::string t = errno_text(err);
  if (err == EEXIST || err == ELOOP || err == EXDEV)
    t += ": something other than this run put an entry (a file, a directory or a symbolic link) "
         "where the run creates its own; ckptbench never writes through one, and stops";
  return t;
}

void mkdir_beneath(int dirfd, const std::string& rel, const std::string& shown) {
  auto slash = rel.rfind('/');
  int parent = dirfd;
  std::string leaf = rel;
  if (slash != std::string::npos) {
    parent = open_beneath(dirfd, rel.substr(0, slash), O_RDONLY | O_DIRECTORY);
    if (parent < 0)
      throw IoError("cannot create directory '" + shown + "': " + beneath_error(-parent));
    leaf = rel.substr(slash + 1);
  }
  int rc = ::mkdirat(parent, leaf.c_str(), 0755);
  int err = errno;
  if (parent != dirfd) ::close(parent);
  if (rc != 0) throw IoError("cannot create directory '" + shown + "': " + beneath_error(err));
}

namespace {
// What a removal walk could not remove.
struct RemovalLeft {
  size_t count = 0;
  std::string first, why;
  void note(const std::string& path, int err) {
    if (count++ == 0) {
      first = path;
      why = errno_text(err);
    }
  }
};

// Removes everything below the open directory dirfd (closed here), entries listed before any is
// removed; a directory is entered without following a link (O_NOFOLLOW), at most 256 levels deep.
// An entry gone meanwhile (another rank removing the same tree) is no error.
void remove_below(int dirfd, const std::string& shown, int depth, RemovalLeft& left) {
  DIR* d = ::fdopendir(dirfd);
  if (d == nullptr) {
    left.note(shown, errno);
    ::close(dirfd);
    return;
  }
  std::vector<std::string> names;
  while (const struct dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  for (const auto& n : names) {
    const std::string p = shown + "/" + n;
    struct stat st;
    if (::fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) left.note(p, errno);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (depth >= 256) {
        left.note(p, ELOOP);
        continue;
      }
      const int sub = ::openat(dirfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        if (errno != ENOENT) left.note(p, errno);
        continue;
      }
      remove_below(sub, p, depth + 1, left);
      if (::unlinkat(dirfd, n.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) left.note(p, errno);
    } else if (::unlinkat(dirfd, n.c_str(), 0) != 0 && errno != ENOENT) {
      left.note(p, errno);
    }
  }
  ::closedir(d);  // closes dirfd
}
}  // namespace

void remove_tree(const std::string& path, const std::string& root) {
  std::string a = absolute_path(path), r = absolute_path(root);
  if (a.size() <= r.size() || a.compare(0, r.size(), r) != 0 || a[r.size()] != '/')
    throw IoError("refusing to remove '" + a + "': not inside '" + r + "'");
  // A few walks, each over the names listed at its start: an entry that reappears under a new
  // name (FUSE's .fuse_hiddenNNN for an open file) is met again only by the next walk.
  constexpr int kWalks = 4;
  RemovalLeft left;
  for (int walk = 0; walk < kWalks; walk++) {
    struct stat st;
    if (::lstat(a.c_str(), &st) != 0) {
      if (errno == ENOENT) return;
      throw IoError("cannot remove '" + a + "': " + errno_text(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
      if (::unlink(a.c_str()) == 0 || errno == ENOENT) return;
      throw IoError("cannot remove '" + a + "': " + errno_text(errno));
    }
    left = RemovalLeft{};
    const int fd = ::open(a.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return;
      throw IoError("cannot remove '" + a + "': " + errno_text(errno));
    }
    remove_below(fd, a, 0, left);  // closes fd
    if (::rmdir(a.c_str()) == 0 || errno == ENOENT) return;
    if (left.count == 0) left.note(a, errno);
  }
  throw IoError("cannot remove '" + a + "': " + std::to_string(left.count) + " entr" +
                (left.count == 1 ? "y" : "ies") + " left after " + std::to_string(kWalks) +
                " attempts, e.g. '" + text_excerpt(left.first, 300) + "' (" + left.why +
                "; a file still open on a FUSE file system is renamed .fuse_hiddenNNN until it "
                "is closed)");
}

void check_read_dir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    throw ConfigError("--read-dir '" + text_excerpt(dir, 300) + "': " + errno_text(errno) +
                      "; give an existing directory of checkpoint files");
  if (!S_ISDIR(st.st_mode))
    throw ConfigError("--read-dir '" + text_excerpt(dir, 300) + "': is " +
                      file_kind_text(st.st_mode) + ", not a directory");
  struct statfs sf;
  if (::statfs(dir.c_str(), &sf) == 0) {
    const std::string pseudo = pseudo_fs_name(static_cast<uint32_t>(sf.f_type));
    if (!pseudo.empty())
      throw ConfigError("--read-dir '" + text_excerpt(dir, 300) + "': is on " + pseudo +
                        ", a kernel pseudo file system, not storage (reading its files can have "
                        "side effects); give a directory of checkpoint files");
  }
}

std::vector<std::pair<std::string, uint64_t>> list_regular_files(const std::string& dir) {
  namespace sfs = std::filesystem;
  std::vector<std::pair<std::string, uint64_t>> out;
  std::error_code ec;
  const sfs::path root(dir);
  if (!sfs::is_directory(root, ec)) throw IoError("'" + dir + "' is not a directory");
  for (auto it = sfs::recursive_directory_iterator(root, ec);
       !ec && it != sfs::recursive_directory_iterator(); it.increment(ec)) {
    const sfs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (!sfs::is_regular_file(st)) continue;
    if (it->path().filename() == kRunMarker) continue;  // ckptbench's own bookkeeping, not data
    const uint64_t size = it->file_size(ec);
    if (ec) break;
    out.emplace_back(sfs::relative(it->path(), root).string(), size);
  }
  if (ec) throw IoError("list '" + dir + "': " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ckpt
