#include "ckptbench/io/backend.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/mpi/agreement.hpp"

namespace ckpt {

void agree_on_step(MPI_Comm comm, const std::exception_ptr& err, const std::string& what) {
  if (comm != MPI_COMM_SELF) {
    int me = err ? 1 : 0, any = 0;
    MPI_Allreduce(&me, &any, 1, MPI_INT, MPI_MAX, comm);
    if (!err && any) throw PeerLeftError(what + " (this rank stopped with it)");
  }
  if (err) std::rethrow_exception(err);
}

std::exception_ptr error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

int open_plan_file(const PhaseContext& ctx, const FileSpec& f, int flags, const char* what) {
  DirFd tmp;
  int dirfd = ctx.dirfd;
  if (dirfd < 0) {
    tmp = DirFd(ctx.dir);
    dirfd = tmp.get();
  }
  // An existing file is opened without blocking (a FIFO put in place of a saved file would
  // block a plain open until the stall guard), and only a regular file is used.
  const bool existing = (flags & O_CREAT) == 0;
  int fd = open_beneath(dirfd, f.path, flags | (existing ? O_NONBLOCK | O_NOCTTY : 0));
  if (fd < 0)
    throw IoError(std::string(what) + " '" + ctx.dir + "/" + f.path + "': " + beneath_error(-fd));
  if (existing) {
    struct stat st;
    int err = 0;
    std::string why;
    if (::fstat(fd, &st) != 0)
      err = errno;
    else if (!S_ISREG(st.st_mode))
      why = file_kind_text(st.st_mode);
    const int fl = err || !why.empty() ? 0 : ::fcntl(fd, F_GETFL);
    if (fl < 0 || (fl != 0 && ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)) err = errno;
    if (err || !why.empty()) {
      ::close(fd);
      throw IoError(std::string(what) + " '" + ctx.dir + "/" + f.path + "': " +
                    (err ? errno_text(err)
                         : "is " + why + ", not a regular file (replaced since the save?)"));
    }
  }
  return fd;
}

void check_saved_file(const PhaseContext& ctx, const FileSpec& f) {
  struct stat st;
  const std::string path = ctx.dir + "/" + f.path;
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return;
  ::close(open_plan_file(ctx, f, O_RDONLY, "open"));
}

void pio_all(int fd, bool write, std::byte* buf, uint64_t off, uint64_t len,
             const std::string& path, PhaseRecorder* rec) {
  uint64_t done = 0;
  int again = 0;  // EAGAIN in a row: retried, as io_uring's path does, a bounded number of times
  while (done < len) {
    if (rec != nullptr) rec->count(Counter::submit_calls);
    ssize_t n = write ? ::pwrite(fd, buf + done, len - done, static_cast<off_t>(off + done))
                      : ::pread(fd, buf + done, len - done, static_cast<off_t>(off + done));
    if (n < 0) {
      if (errno == EINTR || (errno == EAGAIN && ++again <= 1000)) {
        if (rec != nullptr) rec->count(Counter::retries);
        if (errno == EAGAIN) ::usleep(1000);
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
    again = 0;
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
                                                hdf5_backend(), s3_backend()};
  return r;
}

void shutdown_backends() noexcept {
  static bool done = false;
  if (done) return;
  done = true;
  for (const auto& b : backend_registry())
    if (b.shutdown) b.shutdown();
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
