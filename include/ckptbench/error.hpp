// Error types. One exception family carries a message meant for the user.
#pragma once
#include <stdexcept>
#include <string>

namespace ckpt {

// Any failure the user should read. The message names the key/file/offset and what went wrong.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input (config, CLI, model file): detected before any I/O; exit code 2.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// An I/O or runtime failure while executing a point; exit code 1.
class IoError : public Error {
 public:
  using Error::Error;
};

// A point ran longer than the config's timeout_s.
class TimeoutError : public IoError {
 public:
  using IoError::IoError;
};

// strerror_r wrapper: "No such file or directory (errno 2)".
std::string errno_text(int err);

// Throws IoError("<what>: <errno text>").
[[noreturn]] void throw_errno(const std::string& what, int err);

}  // namespace ckpt
