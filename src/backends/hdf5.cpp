// Placeholder until the backend lands: registered, but reports itself unavailable.
#include "ckptbench/backend.hpp"
#include "ckptbench/error.hpp"

namespace ckpt {

BackendFactory hdf5_backend() {
  BackendFactory f;
  f.name = "hdf5";
  f.description = "hdf5 backend (not built yet)";
  f.probe = [] { return std::string("not implemented in this build"); };
  f.validate = [](const PointConfig&) {
    throw ConfigError("backend 'hdf5' is not implemented in this build; use backend 'posix'");
  };
  f.create = [](const PointConfig&) -> std::unique_ptr<Backend> { return nullptr; };
  return f;
}

}  // namespace ckpt
