// Error types. One exception family carries a message meant for the user.
#pragma once
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

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

// The message for a thread that could not be started (std::system_error from std::thread).
std::string thread_error_text(const std::string& what, const std::system_error& e);

// std::thread(fn), or IoError naming `what` and the cause when the system refuses a thread (the
// per-user process limit, `ulimit -u`, counts threads; EAGAIN).
template <class Fn>
std::thread start_thread(const std::string& what, Fn&& fn) {
  try {
    return std::thread(std::forward<Fn>(fn));
  } catch (const std::system_error& e) {
    throw IoError(thread_error_text(what, e));
  }
}

}  // namespace ckpt
