// POSIX backend: open/pwrite/pread/fsync/close, one synchronous transfer at a time — the way
// torch.save and most framework checkpointers do it. The reference path for the others.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "ckptbench/backend.hpp"
#include "ckptbench/error.hpp"
#include "ckptbench/jsonread.hpp"

namespace ckpt {

namespace {

struct Stats {
  uint64_t short_transfers = 0;
  uint64_t eintr = 0;
  uint64_t prealloc_unsupported = 0;
  std::string end_sync_method = "fsync";
};

class PosixBackend final : public Backend {
 public:
  explicit PosixBackend(const PointConfig& cfg) : cfg_(cfg) {}

  void run(PhaseContext& ctx) override {
    if (ctx.phase == Phase::save)
      save(ctx);
    else
      restore(ctx);
  }

  nlohmann::json describe() const override {
    nlohmann::json j = {{"api", "open/pwrite/pread/fsync/close"},
                        {"transfers_in_flight", 1},
                        {"o_direct", cfg_.direct},
                        {"short_transfers_resumed", st_.short_transfers},
                        {"eintr_retries", st_.eintr},
                        {"end_sync_method", st_.end_sync_method}};
    describe_preallocation(j, cfg_.preallocate, st_.prealloc_unsupported);
    return j;
  }

 private:
  const PointConfig& cfg_;
  Stats st_;

  struct Open {
    const FileSpec* f = nullptr;
    int fd = -1;
    std::string path;
  };

  int flags(bool write, bool create) const {
    int fl = write ? O_WRONLY : O_RDONLY;
    if (create) fl |= O_CREAT;  // exclusive, no link followed (open_plan_file)
    if (cfg_.direct) fl |= O_DIRECT;
    return fl;
  }

  Open do_open(PhaseContext& ctx, const FileSpec& f, bool write) {
    auto t = ctx.rec->time(Step::open);
    Open o;
    o.f = &f;
    o.path = ctx.dir + "/" + f.path;
    bool create = write && f.create;
    int fd = open_plan_file(ctx, f, flags(write, create), create ? "create" : "open");
    ctx.rec->metadata();
    try {
      if (create && cfg_.preallocate && !preallocate_file(fd, f.size, o.path))
        st_.prealloc_unsupported++;
      if (!write) {
        // A truncated file is an error, reported here with its name, before any read.
        off_t end = lseek(fd, 0, SEEK_END);
        if (end >= 0) check_file_size(static_cast<uint64_t>(end), f, o.path);
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    o.fd = fd;
    return o;
  }

  void do_close(PhaseContext& ctx, Open& o) {
    auto t = ctx.rec->time(Step::close);
    if (::close(o.fd) != 0) throw_errno("close '" + o.path + "'", errno);
    o.fd = -1;
    ctx.rec->metadata();
    ctx.rec->file_done();
  }

  void do_fsync(PhaseContext& ctx, Open& o) {
    auto t = ctx.rec->time(Step::sync);
    if (::fsync(o.fd) != 0) throw_errno("fsync '" + o.path + "'", errno);
    ctx.rec->sync_op();
  }

  // One transfer of len bytes at file offset off, resuming short transfers.
  void transfer(PhaseContext& ctx, Open& o, bool write, std::byte* buf, uint64_t len,
                uint64_t off) {
    uint64_t done = 0;
    uint64_t t0 = now_ns();
    while (done < len) {
      ssize_t n = write ? ::pwrite(o.fd, buf + done, len - done, static_cast<off_t>(off + done))
                        : ::pread(o.fd, buf + done, len - done, static_cast<off_t>(off + done));
      if (n < 0) {
        if (errno == EINTR) {
          st_.eintr++;
          continue;
        }
        throw_errno(std::string(write ? "write" : "read") + " '" + o.path + "' offset " +
                        std::to_string(off + done) + " length " + std::to_string(len - done),
                    errno);
      }
      if (n == 0)
        throw IoError(std::string(write ? "write" : "read") + " '" + o.path + "' offset " +
                      std::to_string(off + done) + ": unexpected end of file (" +
                      std::to_string(len - done) + " bytes missing; truncated?)");
      if (static_cast<uint64_t>(n) < len - done) st_.short_transfers++;
      done += static_cast<uint64_t>(n);
    }
    ctx.rec->op(len, now_ns() - t0);
  }

  void write_file(PhaseContext& ctx, Open& o) {
    Buffer& buf = ctx.pool->at(0);
    double t0 = now_s();
    for_each_transfer(*o.f, cfg_.block_size, cfg_.transfer, [&](const Transfer& t) {
      std::byte* p = ctx.data->produce(*o.f, t, buf);
      transfer(ctx, o, true, p, t.len, t.offset);
    });
    ctx.rec->add_time(Step::io, now_s() - t0);
  }

  void read_file(PhaseContext& ctx, Open& o) {
    Buffer& buf = ctx.pool->at(0);
    double t0 = now_s();
    for_each_transfer(*o.f, cfg_.block_size, cfg_.transfer, [&](const Transfer& t) {
      transfer(ctx, o, false, buf.data, t.len, t.offset);
      ctx.data->consume(*o.f, t, buf);
    });
    ctx.rec->add_time(Step::io, now_s() - t0);
  }

  void save(PhaseContext& ctx) {
    const auto& files = ctx.io->files;
    const bool end_sync = cfg_.sync == SyncPolicy::end;
    if (ctx.plan->any_shared) {
      // Shared files: creators first, then everyone else, then write everything.
      std::vector<Open> open(files.size());
      for (size_t i = 0; i < files.size(); i++)
        if (files[i].create) open[i] = do_open(ctx, files[i], true);
      {
        auto t = ctx.rec->time(Step::open);
        MPI_Barrier(ctx.comm);
      }
      for (size_t i = 0; i < files.size(); i++)
        if (!files[i].create) open[i] = do_open(ctx, files[i], true);
      for (auto& o : open) {
        write_file(ctx, o);
        if (cfg_.sync == SyncPolicy::file) do_fsync(ctx, o);
      }
      if (end_sync)
        for (auto& o : open) do_fsync(ctx, o);
      for (auto& o : open) do_close(ctx, o);
      return;
    }
    // Private files: open-write-close one after the other. With sync "end", fds are kept open
    // for the final fsync while they fit the descriptor budget; past it, one syncfs at the end.
    const size_t budget = fd_budget();
    const bool keep_open = end_sync && files.size() <= budget;
    st_.end_sync_method = keep_open ? "fsync" : "syncfs";
    std::vector<Open> kept;
    for (const auto& f : files) {
      Open o = do_open(ctx, f, true);
      write_file(ctx, o);
      if (cfg_.sync == SyncPolicy::file) do_fsync(ctx, o);
      if (keep_open)
        kept.push_back(o);
      else
        do_close(ctx, o);
    }
    if (end_sync && !files.empty()) {
      if (keep_open) {
        for (auto& o : kept) do_fsync(ctx, o);
        for (auto& o : kept) do_close(ctx, o);
      } else {
        syncfs_dir(ctx);
      }
    }
  }

  void restore(PhaseContext& ctx) {
    for (const auto& f : ctx.io->files) {
      Open o = do_open(ctx, f, false);
      read_file(ctx, o);
      do_close(ctx, o);
    }
  }
};

}  // namespace

BackendFactory posix_backend() {
  BackendFactory f;
  f.name = "posix";
  f.description = "open/pwrite/pread/fsync/close, one synchronous transfer at a time";
  f.probe = [] { return std::string(); };
  f.validate = [](const PointConfig& p) {
    ObjectReader r(p.backend_options, "posix");
    r.finish();
    // queue_depth is accepted so that sweeps can cross it with backends; posix always keeps
    // one transfer in flight, and the report says so (transfers_in_flight: 1).
  };
  f.create = [](const PointConfig& p) -> std::unique_ptr<Backend> {
    return std::make_unique<PosixBackend>(p);
  };
  return f;
}

}  // namespace ckpt
