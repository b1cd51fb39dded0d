#include "ckptbench/backend.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "ckptbench/error.hpp"
#include "ckptbench/fs.hpp"

namespace ckpt {

int open_plan_file(const PhaseContext& ctx, const FileSpec& f, int flags, const char* what) {
  DirFd tmp;
  int dirfd = ctx.dirfd;
  if (dirfd < 0) {
    tmp = DirFd(ctx.dir);
    dirfd = tmp.get();
  }
  int fd = open_beneath(dirfd, f.path, flags);
  if (fd < 0)
    throw IoError(std::string(what) + " '" + ctx.dir + "/" + f.path + "': " + beneath_error(-fd));
  return fd;
}

int plan_file_flags(const PhaseContext& ctx) {
  int fl = ctx.phase == Phase::save ? O_WRONLY : O_RDONLY;
  if (ctx.cfg->direct) fl |= O_DIRECT;
  return fl;
}

void Backend::submit(size_t, unsigned, uint64_t, uint64_t, std::byte*) {
  throw IoError("backend: submit on a whole-file transport (internal error)");
}

void Backend::reap(std::vector<unsigned>&) {
  throw IoError("backend: reap on a whole-file transport (internal error)");
}

void Backend::transfer_file(PhaseContext&, size_t) {
  throw IoError("backend: transfer_file on a streaming transport (internal error)");
}

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
