#include "ckptbench/fs/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"

namespace fsys = std::filesystem;

namespace ckpt {

std::string fs_type_name(uint64_t magic) {
  switch (magic) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x01021994:
      return "tmpfs";
    case 0x0BD00BD0:
      return "lustre";
    case 0x47504653:
      return "gpfs";
    case 0x19830326:
      return "beegfs";
    case 0x6969:
      return "nfs";
    case 0x9123683E:
      return "btrfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x65735546:
      return "fuse";
    case 0x00C36400:
      return "cephfs";
    case 0xFF534D42:
      return "cifs";
    case 0x5346414F:
      return "afs";
    case 0x858458F6:
      return "ramfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x62656572:
      return "sysfs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(magic));
      return buf;
    }
  }
}

nlohmann::json FsInfo::to_json() const {
  return {{"type", type},
          {"magic", magic},
          {"block_size", block_size},
          {"free_bytes", free_bytes},
          {"total_bytes", total_bytes},
          {"dio_mem_align", dio_mem_align},
          {"dio_offset_align", dio_offset_align},
          {"dio_align_source", dio_align_source}};
}

std::string pseudo_fs_name(uint64_t magic) {
  switch (magic) {  // linux/magic.h
    case 0x62656572:
      return "sysfs";
    case 0x9fa0:
      return "proc";
    case 0x27e0eb:
      return "cgroup";
    case 0x63677270:
      return "cgroup2";
    case 0x64626720:
      return "debugfs";
    case 0x74726163:
      return "tracefs";
    case 0x73636673:
      return "securityfs";
    case 0xcafe4a11:
      return "bpf";
    case 0x6165676c:
      return "pstore";
    case 0x1cd1:
      return "devpts";
    case 0xde5e81e4:
      return "efivarfs";
    case 0xf97cff8c:
      return "selinuxfs";
    case 0x62656570:
      return "configfs";
    case 0x65735543:
      return "fusectl";
    case 0x19800202:
      return "mqueue";
    case 0x6e736673:
      return "nsfs";
    case 0x42494e4d:
      return "binfmt_misc";
    default:
      return "";
  }
}

FsInfo probe_fs(const std::string& dir) {
  FsInfo i;
  struct statfs sf;
  if (statfs(dir.c_str(), &sf) != 0) throw_errno("statfs '" + dir + "'", errno);
  i.magic = static_cast<uint64_t>(static_cast<uint32_t>(sf.f_type));
  i.type = fs_type_name(i.magic);
  // ceph-fuse is a FUSE mount: CephFS answers its virtual attributes (any directory has
  // ceph.dir.entries, any file ceph.file.layout).
  if (i.type == "fuse") {
    char buf[64];
    if (::getxattr(dir.c_str(), "ceph.dir.entries", buf, sizeof buf) >= 0 ||
        ::getxattr(dir.c_str(), "ceph.file.layout", buf, sizeof buf) >= 0 || errno == ERANGE)
      i.type = "cephfs";
  }
  struct statvfs sv;
  if (statvfs(dir.c_str(), &sv) != 0) throw_errno("statvfs '" + dir + "'", errno);
  i.block_size = sv.f_bsize;
  i.free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
  i.total_bytes = static_cast<uint64_t>(sv.f_blocks) * sv.f_frsize;
  return i;
}

uint64_t dio_alignment(const std::string& dir, FsInfo& info, bool probe_file) {
#ifdef STATX_DIOALIGN
  {
    struct statx sx;
    if (statx(AT_FDCWD, dir.c_str(), 0, STATX_DIOALIGN, &sx) == 0 &&
        (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 0) {
      info.dio_mem_align = sx.stx_dio_mem_align;
      info.dio_offset_align = sx.stx_dio_offset_align;
      info.dio_align_source = "statx";
      return sx.stx_dio_offset_align;
    }
    // Directories may not report it; try a probe file.
    std::string probe = dir + "/.ckptbench-dio-probe";
    int fd = probe_file ? open(probe.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0600) : -1;
    if (fd >= 0) {
      bool ok = statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
                (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 0;
      close(fd);
      unlink(probe.c_str());
      if (ok) {
        info.dio_mem_align = sx.stx_dio_mem_align;
        info.dio_offset_align = sx.stx_dio_offset_align;
        info.dio_align_source = "statx";
        return sx.stx_dio_offset_align;
      }
    }
  }
#endif
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    std::string p = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                    std::to_string(minor(st.st_dev)) + "/queue/logical_block_size";
    std::ifstream in(p);
    uint64_t v = 0;
    if (!(in >> v)) {
      // Partitions keep the queue directory on the parent device.
      std::ifstream in2("/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                        std::to_string(minor(st.st_dev)) + "/../queue/logical_block_size");
      in2 >> v;
    }
    if (v >= 512 && (v & (v - 1)) == 0) {
      info.dio_mem_align = v;
      info.dio_offset_align = v;
      info.dio_align_source = "sysfs";
      return v;
    }
  }
  info.dio_mem_align = 4096;
  info.dio_offset_align = 4096;
  info.dio_align_source = "default";
  return 4096;
}

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  fsys::path a = fsys::absolute(p, ec);
  if (ec) a = p;
  return a.lexically_normal().string();
}

namespace {
// The refusal of an entry at a lock's path that is not a lock file ckptbench wrote.
ConfigError not_a_lock(const std::string& what, const std::string& path, const std::string& bad) {
  return ConfigError(what + ": '" + path + "' is " + bad +
                     ", not a lock file ckptbench wrote; nothing was read from it. Remove it if "
                     "no ckptbench run uses this path, or use another one");
}

// True when all the directory holds is what a dead run of this host left: its lock file and the
// run directory that lock names (removed when the lock is taken over, make_run_dir).
bool only_dead_run_left(const std::string& dir) {
  LockFile::Holder h;
  if (!LockFile::read_holder(dir + "/.ckptbench.lock", h) || !h.bad.empty() || !h.dead)
    return false;
  std::error_code ec;
  for (const auto& e : fsys::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == ".ckptbench.lock") continue;
    // The dead run's own directory (vouched for by its marker), which the take-over removes.
    if (!h.keep && !h.run_dir.empty() && name == h.run_dir &&
        run_marker_mismatch(dir + "/" + name, h.identity()).empty())
      continue;
    return false;
  }
  return !ec;
}
}  // namespace

void check_target(const std::string& target, bool force) {
  if (target.empty())
    throw ConfigError("no target directory: set \"target\" in the config or pass --target DIR");
  std::string abs = absolute_path(target);
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  static const char* system_dirs[] = {"/",        "/bin",  "/boot", "/dev", "/etc",  "/lib",
                                      "/lib64",   "/proc", "/root", "/run", "/sbin", "/sys",
                                      "/usr",     "/var",  "/home", "/opt", "/srv",  "/tmp",
                                      "/var/tmp", "/mnt",  "/media"};
  auto is_system = [&](const std::string& p) {
    for (const char* s : system_dirs)
      if (p == s) return true;
    return false;
  };
  if (is_system(abs))
    throw ConfigError("target '" + target + "': refusing a system directory; use a directory of " +
                      "your own below it, e.g. " + (abs == "/" ? std::string("/scratch") : abs) +
                      "/ckpt");
  // The same check on what the path really names: every symbolic link on the way is resolved
  // (w/lroot -> / makes w/lroot/tmp the real /tmp), and a link that leads to a system directory
  // itself is refused (nothing of one's own needs a link to /).
  {
    std::string sofar;
    fsys::path rest;
    bool missing = false;
    for (const auto& comp : fsys::path(abs).relative_path()) {
      if (missing) {
        rest /= comp;
        continue;
      }
      sofar += '/';
      sofar += comp.string();
      struct stat lst;
      if (lstat(sofar.c_str(), &lst) != 0) {
        missing = true;
        rest /= comp;
        continue;
      }
      if (!S_ISLNK(lst.st_mode)) continue;
      char buf[PATH_MAX];
      if (!realpath(sofar.c_str(), buf)) continue;  // a dangling link: the checks below fail
      if (is_system(buf))
        throw ConfigError("target '" + target + "': the path goes through the symbolic link '" +
                          sofar + "' -> '" + buf +
                          "', a system directory; give a path without that link");
    }
    char buf[PATH_MAX];
    std::string probe = missing ? fsys::path(sofar).parent_path().string() : sofar;
    if (probe.empty()) probe = "/";
    if (realpath(probe.c_str(), buf)) {
      std::string real =
          (fsys::path(buf) / (missing ? fsys::path(sofar).filename() / rest : fsys::path()))
              .lexically_normal()
              .string();
      while (real.size() > 1 && real.back() == '/') real.pop_back();
      if (is_system(real))
        throw ConfigError("target '" + target + "': is the system directory '" + real +
                          "' through symbolic links; use a directory of your own below it");
    }
  }
  if (const char* home = getenv("HOME"); home && abs == absolute_path(home))
    throw ConfigError("target '" + target +
                      "': refusing your home directory itself; use a subdirectory");
  if (struct passwd* pw = getpwuid(getuid()); pw && pw->pw_dir && abs == absolute_path(pw->pw_dir))
    throw ConfigError("target '" + target + "': refusing a home directory; use a subdirectory");
  fsys::path parent = fsys::path(abs).parent_path();
  struct stat st;
  if (stat(parent.c_str(), &st) != 0)
    throw ConfigError("target '" + target + "': parent directory '" + parent.string() +
                      "' does not exist (" + errno_text(errno) + ")");
  if (!S_ISDIR(st.st_mode))
    throw ConfigError("target '" + target + "': parent '" + parent.string() +
                      "' is not a directory");
  if (lstat(abs.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      throw ConfigError("target '" + target + "': is a symbolic link; give the real directory");
    if (!S_ISDIR(st.st_mode))
      throw ConfigError("target '" + target + "': exists and is not a directory");
    if (access(abs.c_str(), W_OK | X_OK) != 0)
      throw ConfigError("target '" + target + "': not writable (" + errno_text(errno) + ")");
    std::error_code ec;
    bool empty = fsys::is_empty(abs, ec);
    if (ec) throw ConfigError("target '" + target + "': cannot list (" + ec.message() + ")");
    LockFile::Holder h;
    const bool locked = !empty && LockFile::read_holder(abs + "/.ckptbench.lock", h);
    if (locked && !h.bad.empty())
      throw not_a_lock("target '" + target + "'", abs + "/.ckptbench.lock", h.bad);
    if (locked && !force && !h.dead)
      throw ConfigError("target '" + target + "' is in use by another ckptbench run (host " +
                        h.host + ", pid " + std::to_string(h.pid) + ", started " + h.when +
                        "); wait for it to end, or use another one");
    if (!empty && !force && !only_dead_run_left(abs))
      throw ConfigError("target '" + target +
                        "': directory is not empty; pass --force to run in it anyway (ckptbench "
                        "writes only inside a fresh run directory it creates there)");
  } else {
    if (access(parent.c_str(), W_OK | X_OK) != 0)
      throw ConfigError("target '" + target + "': parent '" + parent.string() +
                        "' is not writable (" + errno_text(errno) + ")");
  }
}

LockFile::~LockFile() { release(); }

void LockFile::release() {
  if (path_.empty()) return;
  ::unlink(path_.c_str());
  path_.clear();
  identity_.clear();
}

std::string LockFile::Holder::identity() const {
  return host + " " + std::to_string(pid) + " " + when;
}

std::string read_own_small_file(const std::string& path, size_t limit, std::string& text) {
  text.clear();
  struct stat lst;
  if (::lstat(path.c_str(), &lst) != 0)
    return errno == ENOENT ? "missing" : "not examinable (" + errno_text(errno) + ")";
  if (S_ISLNK(lst.st_mode)) return "a symbolic link";
  if (!S_ISREG(lst.st_mode)) return file_kind_text(lst.st_mode);  // never opened: no side effect
  // O_NONBLOCK: a FIFO swapped in after the lstat does not block the open; fstat sees it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) return "a symbolic link";
    return err == ENOENT ? "missing" : "not readable (" + errno_text(err) + ")";
  }
  std::string why;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    why = "not examinable (" + errno_text(errno) + ")";
  } else if (!S_ISREG(st.st_mode)) {
    why = file_kind_text(st.st_mode);
  } else if (static_cast<uint64_t>(st.st_size) > limit) {
    why = std::to_string(st.st_size) + " bytes, more than the " + std::to_string(limit) +
          " such a file of ckptbench's holds at most";
  } else {
    text.resize(limit + 1);
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) {
        why = "not readable (" + errno_text(errno) + ")";
        break;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
    if (why.empty() && got > limit)
      why = "more than " + std::to_string(limit) + " bytes (it grew while read)";
  }
  ::close(fd);
  if (!why.empty()) text.clear();
  return why;
}

bool LockFile::read_holder(const std::string& path, Holder& h) {
  h = Holder{};
  std::string text;
  const std::string why = read_own_small_file(path, 4096, text);
  if (why == "missing") return false;
  if (!why.empty()) {
    h.bad = why;
    return true;
  }
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  {
    std::istringstream ss(line);
    ss >> h.host >> h.pid >> h.when;
  }
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string key, value;
    ss >> key >> value;
    if (key == "run_dir") h.run_dir = value;
    if (key == "keep") h.keep = value == "1";
  }
  // Only a bare name of ckptbench's own pattern is ever acted on.
  if (h.run_dir.rfind("ckptbench-", 0) != 0 || h.run_dir.find('/') != std::string::npos)
    h.run_dir.clear();
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  h.dead =
      h.host == host && h.pid > 0 && ::kill(static_cast<pid_t>(h.pid), 0) != 0 && errno == ESRCH;
  return true;
}

void write_run_marker(const std::string& run_dir, const std::string& identity) {
  const std::string path = run_dir + "/" + kRunMarker;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("create the run marker '" + path + "'", errno);
  const std::string text = identity + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  ::close(fd);
  if (!ok) throw_errno("write the run marker '" + path + "'", err);
}

bool remove_empty_run_dir(const std::string& run_dir) {
  std::error_code ec;
  for (const auto& e : fsys::directory_iterator(run_dir, ec))
    if (e.path().filename() != kRunMarker) return false;
  if (ec) return false;
  ::unlink((run_dir + "/" + kRunMarker).c_str());
  return ::rmdir(run_dir.c_str()) == 0;
}

std::string run_marker_mismatch(const std::string& dir, const std::string& identity) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return "it cannot be examined (" + errno_text(errno) + ")";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != ::geteuid())
    return "it belongs to user id " + std::to_string(st.st_uid) + ", not to this user";
  std::string text;
  const std::string why = read_own_small_file(dir + "/" + kRunMarker, 4096, text);
  if (why == "missing") return std::string("it holds no run marker ") + kRunMarker;
  if (!why.empty()) return std::string("its ") + kRunMarker + " is " + why;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text != identity)
    return std::string("its run marker ") + kRunMarker + " names another run, not the lock's (" +
           text_excerpt(identity, 200) + ")";
  return "";
}

void LockFile::acquire(const std::string& path, const std::string& what, const std::string& run_dir,
                       bool keep) {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) {
      identity_ = std::string(host) + ' ' + std::to_string(getpid()) + ' ' + utc_now();
      std::string text = identity_ + '\n';
      if (!run_dir.empty()) {
        text += "run_dir ";
        text += run_dir;
        text += keep ? "\nkeep 1\n" : "\nkeep 0\n";
      }
      const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      path_ = path;
      if (!ok) {
        release();
        throw IoError("cannot write lock file '" + path + "': " + errno_text(errno));
      }
      return;
    }
    if (errno == ENOSPC || errno == EDQUOT) return;  // no room for the lock: the run dir fails next
    if (errno != EEXIST)
      throw ConfigError(what + ": cannot create the lock file '" + path + "' (" +
                        errno_text(errno) + ")");
    // Held: by whom?
    Holder h;
    if (!read_holder(path, h)) continue;  // gone meanwhile (its holder ended): try again
    if (!h.bad.empty()) throw not_a_lock(what, path, h.bad);
    if (h.dead && attempt == 0) {
      stale_ = "a lock left by a run that died (host " + h.host + ", pid " + std::to_string(h.pid) +
               ", started " + h.when + ") was taken over: " + path;
      if (!h.keep) {
        stale_run_dir_ = h.run_dir;
        stale_identity_ = h.identity();
      }
      ::unlink(path.c_str());
      continue;
    }
    const bool same_host = h.host == host;
    throw ConfigError(
        what + " is in use by another ckptbench run (host " + (h.host.empty() ? "?" : h.host) +
        ", pid " + std::to_string(h.pid) + ", started " + (h.when.empty() ? "?" : h.when) +
        "); wait for it to end, or use another one" +
        (same_host ? std::string() : " (if that run is gone, remove '" + path + "')"));
  }
  throw ConfigError(what + ": cannot take the lock file '" + path + "'");
}

bool not_writable_errno(int err) { return err == EACCES || err == EPERM || err == EROFS; }

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

}  // namespace ckpt

#include <sys/mman.h>

namespace ckpt {

bool supports_odirect(const std::string& dir, std::string* why) {
  std::string probe = dir + "/.ckptbench-odirect-probe";
  int fd =
      ::open(probe.c_str(), O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err != EEXIST && err != ELOOP) ::unlink(probe.c_str());
    // A path too long for the probe is not the file system refusing O_DIRECT.
    if (err == ENAMETOOLONG)
      throw ConfigError("the target's path is too long: probing O_DIRECT with '" +
                        text_excerpt(probe, 300) + "' (" + std::to_string(probe.size()) +
                        " bytes): " + errno_text(err) + "; give a shorter target");
    if (why) *why = errno_text(err);
    return false;
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
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

bool supports_odirect_read(const std::string& dir, FsInfo& info, std::string* why) {
  namespace sfs = std::filesystem;
  std::error_code ec;
  int fd = -1;
  std::string path;
  int err = 0;
  // The first regular file below dir (the walk does not follow links): opened O_RDONLY, never
  // created, written or removed; O_NONBLOCK so a FIFO swapped in does not block.
  for (auto it = sfs::recursive_directory_iterator(dir, ec);
       !ec && it != sfs::recursive_directory_iterator(); it.increment(ec)) {
    if (!sfs::is_regular_file(it->symlink_status(ec)) || ec) continue;
    path = it->path().string();
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    err = errno;
    break;
  }
  if (path.empty()) {
    if (why) *why = "no saved file to probe O_DIRECT with";
    return false;
  }
  if (fd < 0) {
    if (why)
      *why = errno_text(err) + " (opening the saved file '" + text_excerpt(path, 300) +
             "' read-only with O_DIRECT)";
    return false;
  }
#ifdef STATX_DIOALIGN
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
      sx.stx_dio_offset_align > 0) {
    info.dio_mem_align = sx.stx_dio_mem_align;
    info.dio_offset_align = sx.stx_dio_offset_align;
    info.dio_align_source = "statx";
  }
#endif
  ::close(fd);
  return true;
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

void fadvise_dontneed(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open '" + path + "' to drop its cached pages", errno);
  int rc = ::fdatasync(fd);
  int err = errno;
  if (rc == 0) {
    rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    err = rc;
  }
  ::close(fd);
  if (rc != 0) throw_errno("fdatasync/fadvise '" + path + "'", err);
}

double resident_in_ranges(const std::string& path,
                          const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                          uint64_t* resident_bytes, uint64_t* range_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    if (st.st_size == 0 && resident_bytes) *resident_bytes = 0;
    if (st.st_size == 0 && range_bytes) *range_bytes = 0;
    return st.st_size == 0 ? 0 : -1;
  }
  const uint64_t len = static_cast<uint64_t>(st.st_size);
  void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return -1;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<std::pair<uint64_t, uint64_t>> want = ranges;
  if (want.empty()) want.push_back({0, len});
  std::vector<unsigned char> vec;
  uint64_t res = 0, total = 0;
  bool ok = true;
  for (auto [off, n] : want) {
    if (off >= len || n == 0) continue;
    const uint64_t end = std::min(len, off + n);
    const uint64_t first = off / page * page;
    const uint64_t pages = (end - first + page - 1) / page;
    vec.assign(pages, 0);
    if (mincore(static_cast<char*>(p) + first, end - first, vec.data()) != 0) {
      ok = false;
      break;
    }
    // Whole pages, cut to the range at both ends.
    for (uint64_t k = 0; k < pages; k++) {
      const uint64_t lo = std::max(off, first + k * page);
      const uint64_t hi = std::min(end, first + (k + 1) * page);
      if (vec[k] & 1) res += hi - lo;
    }
    total += end - off;
  }
  munmap(p, len);
  if (!ok) return -1;
  if (resident_bytes) *resident_bytes = res;
  if (range_bytes) *range_bytes = total;
  return total ? static_cast<double>(res) / static_cast<double>(total) : 0.0;
}

bool can_drop_caches() { return geteuid() == 0 && access("/proc/sys/vm/drop_caches", W_OK) == 0; }

std::string drop_caches() {
  ::sync();
  int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open /proc/sys/vm/drop_caches: " + errno_text(errno);
  ssize_t n = ::write(fd, "3\n", 2);
  int err = errno;
  ::close(fd);
  if (n != 2) return "cannot write /proc/sys/vm/drop_caches: " + errno_text(err);
  return "";
}

}  // namespace ckpt
