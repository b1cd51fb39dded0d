// Run locking: the lock file of a target and of a report path (exclusive create, stale locks of
// dead runs taken over), the run marker that vouches for a run directory, and check_target.
#include "ckptbench/fs/lock.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/fs/fs.hpp"

namespace fsys = std::filesystem;

namespace ckpt {

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
  // Appended piece by piece: `std::string("its ") + kRunMarker + ...` trips GCC 12's
  // -Warray-bounds false positive on inlined std::string concatenation in this unit at -O2
  // (like the -Wrestrict one in plan/layout.cpp), which breaks the build with -Werror.
  std::string m;
  if (why == "missing") {
    m = "it holds no run marker ";
    m += kRunMarker;
  } else if (!why.empty()) {
    m = "its ";
    m += kRunMarker;
    m += " is ";
    m += why;
  } else {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text != identity) {
      m = "its run marker ";
      m += kRunMarker;
      m += " names another run, not the lock's (";
      m += text_excerpt(identity, 200);
      m += ")";
    }
  }
  return m;
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

}  // namespace ckpt
