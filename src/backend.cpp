#include "ckptbench/backend.hpp"

#include <fcntl.h>
#include <sys/stat.h>
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

void pio_all(int fd, bool write, std::byte* buf, uint64_t off, uint64_t len,
             const std::string& path, PhaseRecorder* rec) {
  uint64_t done = 0;
  while (done < len) {
    if (rec != nullptr) rec->count(Counter::submit_calls);
    ssize_t n = write ? ::pwrite(fd, buf + done, len - done, static_cast<off_t>(off + done))
                      : ::pread(fd, buf + done, len - done, static_cast<off_t>(off + done));
    if (n < 0) {
      if (errno == EINTR) {
        if (rec != nullptr) rec->count(Counter::retries);
        continue;
      }
      throw_errno(std::string(write ? "write" : "read") + " '" + path + "' offset " +
                      std::to_string(off + done) + " length " + std::to_string(len - done),
                  errno);
    }
    if (n == 0)
      throw IoError(std::string(write ? "write" : "read") + " '" + path + "' offset " +
                    std::to_string(off + done) + ": unexpected end of file (" +
                    std::to_string(len - done) + " bytes missing; truncated?)");
    if (rec != nullptr && static_cast<uint64_t>(n) < len - done)
      rec->count(Counter::short_transfers);
    done += static_cast<uint64_t>(n);
  }
}

int plan_file_flags(const PhaseContext& ctx) {
  int fl = ctx.phase == Phase::save ? O_WRONLY : O_RDONLY;
  if (ctx.cfg->direct) fl |= O_DIRECT;
  return fl;
}

int FdFiles::open(PhaseContext& ctx, size_t i, int created_fd) {
  F& f = f_[i];
  f.path = ctx.dir + "/" + ctx.io->files[i].path;
  f.fd = created_fd;
  if (f.fd < 0) {
    f.fd = open_plan_file(ctx, ctx.io->files[i], plan_file_flags(ctx), "open");
    ctx.rec->metadata();
  }
  return f.fd;
}

uint64_t FdFiles::size(size_t i) const {
  struct stat sb {};
  if (fstat(f_[i].fd, &sb) != 0) throw_errno("fstat '" + f_[i].path + "'", errno);
  return static_cast<uint64_t>(sb.st_size);
}

void FdFiles::fsync(size_t i) const {
  if (::fsync(f_[i].fd) != 0) throw_errno("fsync '" + f_[i].path + "'", errno);
}

void FdFiles::close(size_t i, PhaseRecorder& rec) {
  const int fd = f_[i].fd;
  f_[i].fd = -1;
  if (::close(fd) != 0) throw_errno("close '" + f_[i].path + "'", errno);
  rec.metadata();
}

void FdFiles::close_all() noexcept {
  for (auto& f : f_)
    if (f.fd >= 0) ::close(f.fd), f.fd = -1;
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

std::string posix_open_reason(const std::string& path, bool write) {
  const int fd = ::open(path.c_str(), (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return "";
  }
  const int err = errno;
  return errno_text(err) +
         (err == EMFILE ? " (the open-file limit, ulimit -n, is too low for this layout: raise it)"
                        : "");
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
