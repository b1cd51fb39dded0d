#include "ckptbench/backend.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "ckptbench/error.hpp"
#include "ckptbench/fs.hpp"

namespace ckpt {

size_t fd_budget() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 256;
  const rlim_t cur = rl.rlim_cur;
  return cur > 128 ? static_cast<size_t>(std::min<rlim_t>(cur - 64, rlim_t{1} << 20)) : 64;
}

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

void syncfs_dir(PhaseContext& ctx) {
  auto t = ctx.rec->time(Step::sync);
  int dfd = ::open(ctx.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw_errno("open '" + ctx.dir + "' for syncfs", errno);
  int rc = ::syncfs(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0) throw_errno("syncfs '" + ctx.dir + "'", err);
  ctx.rec->sync_op();
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
