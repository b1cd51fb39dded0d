#include "ckptbench/backend.hpp"

#include "ckptbench/error.hpp"

namespace ckpt {

const std::vector<BackendFactory>& backend_registry() {
  static const std::vector<BackendFactory> r = {posix_backend(), uring_backend(), mpiio_backend(),
                                                hdf5_backend()};
  return r;
}

const BackendFactory& find_backend(const std::string& name) {
  std::string list;
  for (const auto& b : backend_registry()) {
    if (b.name == name) return b;
    list += (list.empty() ? "" : ", ") + b.name;
  }
  throw ConfigError("'backend': unknown value '" + name + "' (allowed: " + list + ")");
}

nlohmann::json probe_backends() {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& b : backend_registry()) {
    std::string why = b.probe ? b.probe() : std::string();
    j[b.name] = why.empty() ? nlohmann::json("ok") : nlohmann::json(why);
  }
  return j;
}

}  // namespace ckpt
