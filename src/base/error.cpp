#include "ckptbench/base/error.hpp"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace ckpt {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* s = strerror_r(err, buf, sizeof buf);
  std::string t = std::string(s) + " (errno " + std::to_string(err) + ")";
  if (err == EFBIG) {
    // With SIGXFSZ ignored (main, before MPI_Init), a write past RLIMIT_FSIZE fails with EFBIG.
    rlimit rl{};
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      t += ": the file size limit (ulimit -f, RLIMIT_FSIZE) is " + std::to_string(rl.rlim_cur) +
           " bytes; raise it (ulimit -f unlimited) or plan smaller files";
    else
      t += ": beyond the largest file this file system allows";
  }
  return t;
}

void throw_errno(const std::string& what, int err) { throw IoError(what + ": " + errno_text(err)); }

std::string thread_error_text(const std::string& what, const std::system_error& e) {
  std::string m = "cannot start a thread for " + what + ": " + e.code().message();
  if (e.code().value() == EAGAIN)
    m += " (the per-user process limit, ulimit -u, counts threads: raise it, or run fewer ranks "
         "per node)";
  return m;
}

}  // namespace ckpt
