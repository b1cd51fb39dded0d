#include "ckptbench/error.hpp"

#include <cstring>

namespace ckpt {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* s = strerror_r(err, buf, sizeof buf);
  return std::string(s) + " (errno " + std::to_string(err) + ")";
}

void throw_errno(const std::string& what, int err) { throw IoError(what + ": " + errno_text(err)); }

}  // namespace ckpt
