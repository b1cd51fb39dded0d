// The framework's commit protocol inside a phase (DCP's .metadata records and the collectives
// around the data files); the phase driver (driver.cpp) runs the data files in between.
#include "ckptbench/io/commit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/io/driver.hpp"
#include "ckptbench/mpi/agreement.hpp"
#include "ckptbench/plan/transfer.hpp"

namespace ckpt {

namespace {

// The records (FileSpec::role not data) this rank lists, in id order, written or read with plain
// POSIX calls whatever the backend.
class CommitRecords {
 public:
  explicit CommitRecords(PhaseContext& ctx) : ctx_(ctx), rec_(*ctx.rec), files_(ctx.io->files) {
    for (size_t i : files_in_id_order(files_, true)) by_role_[files_[i].role].push_back(i);
  }

  // A prologue or a trailer: its writer writes it with Python's open(path, "wb") (truncating)
  // and write, and does not sync it.
  void write_plain(FileRole role) {
    DirFd hold;
    const int dirfd = dir_fd(hold);
    for (size_t i : by_role_[role])
      if (files_[i].create) write_file(dirfd, files_[i], files_[i].path, false);
  }

  // DCP's FileSystemWriter.finish (torch/distributed/_shard/checkpoint/filesystem.py in 1.13,
  // torch/distributed/checkpoint/filesystem.py from 2.0): pickle.dump into <path>.tmp, fsync,
  // close, rename to <path>. Plain POSIX calls whatever the backend (Python's file object).
  void write() {
    DirFd hold;
    const int dirfd = dir_fd(hold);
    for (size_t i : by_role_[FileRole::commit]) {
      const FileSpec& f = files_[i];
      if (!f.create) continue;
      write_file(dirfd, f, f.path + ".tmp", true);
      const std::string shown = ctx_.dir + "/" + f.path + ".tmp";
      // The rename within the record's directory (opened beneath the point directory).
      const double t0 = now_s();
      const auto slash = f.path.rfind('/');
      const std::string parent = slash == std::string::npos ? "" : f.path.substr(0, slash);
      const std::string base = slash == std::string::npos ? f.path : f.path.substr(slash + 1);
      DirFd pd;
      if (!parent.empty()) {
        const int p = open_beneath(dirfd, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (p < 0) throw IoError("open '" + ctx_.dir + "/" + parent + "': " + beneath_error(-p));
        pd = DirFd(p, ctx_.dir + "/" + parent);
      }
      const int in = parent.empty() ? dirfd : pd.get();
      if (::renameat(in, (base + ".tmp").c_str(), in, base.c_str()) != 0)
        throw_errno("rename '" + shown + "' to '" + ctx_.dir + "/" + f.path + "'", errno);
      rec_.metadata();
      rec_.add_time(Step::close, now_s() - t0);
    }
  }

  // Every rank reads the records of `role` before any data file (DCP's
  // FileSystemReader.read_metadata unpickles .metadata through a buffered reader:
  // FileSpec::read_reqs); trailers the last written first.
  void read(FileRole role) {
    Buffer& buf = ctx_.pool->at(0);
    std::vector<size_t> order = by_role_[role];
    if (role == FileRole::trailer) std::reverse(order.begin(), order.end());
    for (size_t i : order) {
      const FileSpec& f = files_[i];
      const std::string shown = ctx_.dir + "/" + f.path;
      double t0 = now_s();
      const int fd = open_plan_file(ctx_, f, O_RDONLY | O_CLOEXEC, "open");
      rec_.metadata();
      try {
        struct stat sb {};
        if (::fstat(fd, &sb) != 0) throw_errno("fstat '" + shown + "'", errno);
        check_file_size(static_cast<uint64_t>(sb.st_size), f, shown);
        rec_.add_time(Step::open, now_s() - t0);
        t0 = now_s();
        TransferCursor c(f, ctx_.cfg->block_size, ctx_.cfg->transfer, true);
        Transfer t;
        while (c.next(t)) {
          const uint64_t n0 = now_ns();
          pio_all(fd, false, buf.data, t.offset, t.len, shown, nullptr);
          rec_.op(t.len, now_ns() - n0);
          ctx_.data->consume(f, t, buf);
        }
        rec_.add_time(Step::io, now_s() - t0);
      } catch (...) {
        ::close(fd);
        throw;
      }
      close_record(fd, shown);
    }
  }

 private:
  PhaseContext& ctx_;
  PhaseRecorder& rec_;
  const std::vector<FileSpec>& files_;
  std::map<FileRole, std::vector<size_t>> by_role_;  // the records this rank lists, in id order

  int dir_fd(DirFd& hold) const {
    if (ctx_.dirfd >= 0) return ctx_.dirfd;
    hold = DirFd(ctx_.dir);
    return hold.get();
  }

  // Creates `name` (f's content, or its temporary), writes f's bytes through the data path with
  // plain POSIX calls, fsyncs it when `sync`, and closes it; timed in the open, io, sync and close
  // steps.
  void write_file(int dirfd, const FileSpec& f, const std::string& name, bool sync) {
    const std::string shown = ctx_.dir + "/" + name;
    Buffer& buf = ctx_.pool->at(0);
    double t0 = now_s();
    const int fd = open_beneath(dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC);
    if (fd < 0) throw IoError("create '" + shown + "': " + beneath_error(-fd));
    rec_.metadata();
    rec_.count(Counter::files_created);
    rec_.add_time(Step::open, now_s() - t0);
    try {
      t0 = now_s();
      TransferCursor c(f, ctx_.cfg->block_size, ctx_.cfg->transfer, false);
      Transfer t;
      while (c.next(t)) {
        std::byte* data = ctx_.data->produce(f, t, buf);
        const uint64_t n0 = now_ns();
        pio_all(fd, true, data, t.offset, t.len, shown, nullptr);
        rec_.op(t.len, now_ns() - n0);
      }
      rec_.add_time(Step::io, now_s() - t0);
      if (sync) {
        t0 = now_s();
        if (::fsync(fd) != 0) throw_errno("fsync '" + shown + "'", errno);
        rec_.sync_op();
        rec_.add_time(Step::sync, now_s() - t0);
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    close_record(fd, shown);
  }

  // Closes a commit record (close step, a metadata op, a file done).
  void close_record(int fd, const std::string& shown) {
    const double t0 = now_s();
    if (::close(fd) != 0) throw_errno("close '" + shown + "'", errno);
    rec_.metadata();
    rec_.file_done();
    rec_.add_time(Step::close, now_s() - t0);
  }
};

}  // namespace

bool framework_meeting(PhaseContext& ctx, bool failed, const char* where) {
  int mine = failed ? 1 : 0, any = 0;
  MPI_Comm comm = ctx.framework_comm != MPI_COMM_NULL ? ctx.framework_comm : ctx.comm;
  const std::string what = std::string("in the framework's collective ") + where;
  if (ctx.stall != nullptr)
    guarded_allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm, *ctx.stall, what);
  else
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  ctx.meetings++;
  return any != 0;
}

int framework_meetings(const PhaseContext& ctx) {
  if (ctx.plan == nullptr || !ctx.plan->commit) return 0;
  return ctx.phase == Phase::save ? 3 : 2;
}

void attend_missed_meetings(PhaseContext& ctx, bool failed) noexcept {
  try {
    while (ctx.meetings < framework_meetings(ctx))
      framework_meeting(ctx, failed, "(attended by a rank that failed before it)");
  } catch (...) {  // the stall guard ends the job itself; nothing else can throw here
  }
}

void run_commit_stages(PhaseContext& ctx, std::exception_ptr& err,
                       const std::function<void(const std::function<void()>&)>& stage,
                       const std::function<void()>& data_files) {
  const bool save = ctx.phase == Phase::save;
  const bool meets = framework_meetings(ctx) > 0;  // the plan has commit records: the ranks meet
  // The framework's collective between stages: every rank says whether it failed; a rank that
  // did not, but whose peer did, stops with PeerLeftError. Not part of any step's time.
  auto meet = [&](const char* where) {
    if (!meets) return;
    const bool any = framework_meeting(ctx, err != nullptr, where);
    if (any && !err)
      err = std::make_exception_ptr(PeerLeftError(
          std::string("another rank failed before the framework's collective ") + where +
          (save ? " (commit records are written only when every rank succeeded)" : "")));
  };
  CommitRecords records(ctx);
  if (!save) {
    stage([&] {
      records.read(FileRole::trailer);
      records.read(FileRole::prologue);
      records.read(FileRole::commit);
    });
    meet("after reading the commit records");
  } else {
    stage([&] { records.write_plain(FileRole::prologue); });
    meet("before writing the data files");
  }
  stage(data_files);
  if (save) {
    meet("before writing the commit records");
    stage([&] { records.write(); });
    meet("after writing the commit records");
    stage([&] { records.write_plain(FileRole::trailer); });
  } else {
    meet("after reading the data files");
  }
}

}  // namespace ckpt
