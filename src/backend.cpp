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

bool preallocate_file(int fd, uint64_t size, const std::string& path) {
  if (size == 0) return true;
  int rc;
  do {
    rc = ::fallocate(fd, 0, 0, static_cast<off_t>(size));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return true;
  if (errno == EOPNOTSUPP || errno == ENOSYS) return false;
  throw_errno("fallocate " + std::to_string(size) + " bytes for '" + path + "'", errno);
}

void check_file_size(uint64_t size, const FileSpec& f, const std::string& path) {
  uint64_t need = 0;
  for (const auto& e : f.extents) need = std::max(need, e.offset + e.length);
  if (size < need)
    throw IoError("file '" + path + "' is " + std::to_string(size) + " bytes, the plan needs " +
                  std::to_string(need) + " (truncated or written by a different plan)");
}

void describe_preallocation(nlohmann::json& j, bool requested, uint64_t unsupported_files) {
  j["preallocate"] = requested ? "fallocate" : "off";
  if (unsupported_files > 0) j["preallocate_unsupported_files"] = unsupported_files;
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
