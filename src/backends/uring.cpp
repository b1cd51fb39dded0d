// Placeholder until the backend lands: registered, but reports itself unavailable.
#include "ckptbench/backend.hpp"
#include "ckptbench/error.hpp"

namespace ckpt {

BackendFactory uring_backend() {
  BackendFactory f;
  f.name = "io_uring";
  f.description = "io_uring backend (not built yet)";
  f.probe = [] { return std::string("not implemented in this build"); };
  f.validate = [](const PointConfig&) {
    throw ConfigError("backend 'io_uring' is not implemented in this build; use backend 'posix'");
  };
  f.create = [](const PointConfig&) -> std::unique_ptr<Backend> { return nullptr; };
  return f;
}

}  // namespace ckpt
