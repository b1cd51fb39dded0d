// The metadata probe of `characterize` (include/ckptbench/fs/mdprobe.hpp).
#include "ckptbench/fs/mdprobe.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <filesystem>
#include <functional>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/metrics.hpp"
#include "ckptbench/mpi/agreement.hpp"

namespace ckpt {

double MdSample::rate(double seconds) const {
  return seconds > 0 ? static_cast<double>(ranks) * files_per_rank / seconds : 0;
}

nlohmann::json MdSample::to_json() const {
  return {{"files_per_rank", files_per_rank},
          {"ranks", ranks},
          {"create_s", create_s},
          {"stat_s", stat_s},
          {"open_s", open_s},
          {"unlink_s", unlink_s},
          {"create_per_s", rate(create_s)},
          {"stat_per_s", rate(stat_s)},
          {"open_per_s", rate(open_s)},
          {"unlink_per_s", rate(unlink_s)},
          {"fsync_files", fsync_files},
          {"fsync_s", fsync_s},
          {"lists", lists},
          {"list_s", list_s}};
}

double timed_step(MPI_Comm comm, const std::function<void()>& fn) {
  MPI_Barrier(comm);
  const double t0 = now_s();
  std::string err;
  try {
    fn();
  } catch (const std::exception& e) {
    err = e.what();
  }
  double dt = now_s() - t0, slowest = 0;
  MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
  int rank = 0, first = -1;
  MPI_Comm_rank(comm, &rank);
  int mine = err.empty() ? INT_MAX : rank;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first != INT_MAX) {
    const std::string msg = bcast_string(err, first, comm);
    throw IoError("metadata probe, rank " + std::to_string(first) + ": " + msg);
  }
  return slowest;
}

namespace {

[[noreturn]] void fail_at(const std::string& what, const std::string& path, int err) {
  throw IoError(what + " '" + path + "': " + errno_text(err));
}

}  // namespace

MdSample md_probe(const std::string& dir, int files_per_rank, int fsync_files, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MdSample s;
  s.files_per_rank = files_per_rank;
  s.ranks = size;
  s.fsync_files = fsync_files;
  const std::string me = std::to_string(rank);
  auto name = [&](const char* p, int i) { return dir + "/" + p + me + "." + std::to_string(i); };
  // Everything this rank may have made, removed whatever happened (unlink of what is not there
  // is harmless).
  auto cleanup = [&] {
    for (int i = 0; i < files_per_rank; i++) ::unlink(name("f", i).c_str());
    for (int i = 0; i < fsync_files; i++) ::unlink(name("s", i).c_str());
  };
  timed_step(comm, [&] {
    if (rank == 0 && ::mkdir(dir.c_str(), 0755) != 0) fail_at("mkdir", dir, errno);
  });
  try {
    s.create_s = timed_step(comm, [&] {
      for (int i = 0; i < files_per_rank; i++) {
        const std::string p = name("f", i);
        const int fd = ::open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) fail_at("create", p, errno);
        ::close(fd);
      }
    });
    s.stat_s = timed_step(comm, [&] {
      struct stat st {};
      for (int i = 0; i < files_per_rank; i++) {
        const std::string p = name("f", i);
        if (::stat(p.c_str(), &st) != 0) fail_at("stat", p, errno);
      }
    });
    s.open_s = timed_step(comm, [&] {
      for (int i = 0; i < files_per_rank; i++) {
        const std::string p = name("f", i);
        const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail_at("open", p, errno);
        ::close(fd);
      }
    });
    s.unlink_s = timed_step(comm, [&] {
      for (int i = 0; i < files_per_rank; i++) {
        const std::string p = name("f", i);
        if (::unlink(p.c_str()) != 0) fail_at("unlink", p, errno);
      }
    });
    double fsync_sum = 0;
    timed_step(comm, [&] {
      std::vector<char> page(4096, 'x');
      for (int i = 0; i < fsync_files; i++) {
        const std::string p = name("s", i);
        const int fd = ::open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) fail_at("create", p, errno);
        if (::write(fd, page.data(), page.size()) != static_cast<ssize_t>(page.size())) {
          const int e = errno;
          ::close(fd);
          fail_at("write", p, e == 0 ? EIO : e);
        }
        const double t0 = now_s();
        if (::fsync(fd) != 0) {
          const int e = errno;
          ::close(fd);
          fail_at("fsync", p, e);
        }
        fsync_sum += now_s() - t0;
        ::close(fd);
      }
    });
    double total = 0;
    MPI_Allreduce(&fsync_sum, &total, 1, MPI_DOUBLE, MPI_SUM, comm);
    s.fsync_s = fsync_files > 0 ? total / (static_cast<double>(fsync_files) * size) : 0;
  } catch (...) {
    cleanup();
    MPI_Barrier(comm);
    if (rank == 0) ::rmdir(dir.c_str());
    throw;
  }
  cleanup();
  MPI_Barrier(comm);
  if (rank == 0) ::rmdir(dir.c_str());
  return s;
}

}  // namespace ckpt
