// The phase driver: one policy for every backend. It walks this rank's files in file-id order,
// creates each file it owns (exclusively, no link followed, preallocated) - the creators of
// shared files first, then a barrier - opens the others through the transport, cuts each file
// into transfers (TransferCursor: `transfer` stream or per-tensor, `block_size`), keeps up to the
// transport's depth of them in flight across extents and files, consumes restores in submission
// order (the data path needs file order), applies the `sync` policy with the descriptor budget,
// and times the steps (open, io, sync, close). docs/design.md has the data flow.
#include "ckptbench/io/driver.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <functional>
#include <optional>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/commit.hpp"
#include "ckptbench/io/framework_cpu.hpp"
#include "ckptbench/plan/transfer.hpp"

namespace ckpt {

SyncPlan plan_sync(SyncPolicy policy, bool save, size_t files, size_t budget) {
  SyncPlan p;
  if (!save) return p;
  if (policy == SyncPolicy::file) p.per_file = true;
  if (policy == SyncPolicy::end && files > 0) {
    p.keep_open = files <= budget;
    p.syncfs = !p.keep_open;
  }
  return p;
}

size_t fd_budget() {
  constexpr size_t kMax = size_t{1} << 20;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 256;
  if (rl.rlim_cur == RLIM_INFINITY) return kMax;
  const size_t cur = static_cast<size_t>(std::min<rlim_t>(rl.rlim_cur, rlim_t{kMax} * 2));
  // Descriptors open now: the entries of /proc/self/fd but the listing's own.
  size_t used = 64;  // without /proc: the reserve the budget always had
  if (DIR* d = opendir("/proc/self/fd")) {
    size_t n = 0;
    while (const dirent* e = readdir(d))
      if (e->d_name[0] != '.') n++;
    closedir(d);
    used = n > 0 ? n - 1 : 0;
  }
  const size_t reserve = std::clamp<size_t>(cur / 8, 8, 64);
  return cur > used + reserve ? std::min(cur - used - reserve, kMax) : 1;
}

std::vector<size_t> files_in_id_order(const std::vector<FileSpec>& files) {
  std::vector<size_t> v(files.size());
  for (size_t i = 0; i < v.size(); i++) v[i] = i;
  std::stable_sort(v.begin(), v.end(),
                   [&](size_t a, size_t b) { return files[a].id < files[b].id; });
  return v;
}

std::vector<size_t> files_in_id_order(const std::vector<FileSpec>& files, bool records) {
  std::vector<size_t> v;
  for (size_t i : files_in_id_order(files))
    if ((files[i].role != FileRole::data) == records) v.push_back(i);
  return v;
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

namespace {

class Driver {
 public:
  Driver(PhaseContext& ctx, Backend& be)
      : ctx_(ctx),
        be_(be),
        rec_(*ctx.rec),
        files_(ctx.io->files),
        save_(ctx.phase == Phase::save),
        caps_(be.caps(ctx)),
        order_(files_in_id_order(files_, false)),
        st_(files_.size()),
        budget_(std::max<size_t>(1, std::min(fd_budget(), caps_.max_open))),
        sync_(caps_.objects ? SyncPlan{}
                            : plan_sync(ctx.cfg->sync, save_, order_.size(), budget_)) {}

  // The data files between the framework's stages (commit.hpp: DCP's commit records and
  // collectives; without commit records the data files are the whole phase). A failed step drains
  // the transport and lets it abandon its files; the error is rethrown after end().
  void run() {
    be_.begin(ctx_);  // throwing, the caller attends the meetings (attend_missed_meetings)
    std::exception_ptr err;
    auto stage = [&](const std::function<void()>& fn) {
      if (err) return;
      try {
        fn();
      } catch (...) {
        err = std::current_exception();
        be_.drain();
        be_.abandon();
        for (auto& s : st_)
          if (s.created_fd >= 0) ::close(s.created_fd);
      }
    };
    run_commit_stages(ctx_, err, stage, [&] {
      if (save_ && ctx_.plan != nullptr && ctx_.plan->any_shared && !caps_.objects) precreate();
      if (caps_.whole_file)
        whole_files();
      else
        stream();
      end_sync();
    });
    be_.end(ctx_);
    if (err) std::rethrow_exception(err);
  }

 private:
  struct FileState {
    int created_fd = -1;  // created early (shared plan), not yet handed to the transport
    bool created = false;
    bool open = false;
    bool submitted_all = false;
    uint32_t outstanding = 0;
  };
  struct SlotInfo {
    size_t file = 0;
    Transfer t;
    uint64_t t0 = 0;
    bool complete = false;
  };

  std::string path(size_t i) const { return ctx_.dir + "/" + files_[i].path; }

  // Creates file i exclusively (no link followed) and preallocates it; returns the descriptor.
  int create(size_t i) {
    const FileSpec& f = files_[i];
    int fd =
        open_plan_file(ctx_, f, O_WRONLY | O_CREAT | (ctx_.cfg->direct ? O_DIRECT : 0), "create");
    st_[i].created = true;
    rec_.metadata();
    rec_.count(Counter::files_created);
    try {
      if (caps_.preallocate && ctx_.cfg->preallocate && !preallocate_file(fd, f.size, path(i)))
        rec_.count(Counter::preallocate_unsupported);
    } catch (...) {
      ::close(fd);
      throw;
    }
    return fd;
  }

  // Shared files: every creator creates (and preallocates) its files before anyone opens one.
  void precreate() {
    const double t0 = now_s();
    std::exception_ptr err = error_of([&] {
      for (size_t i : order_) {
        if (!files_[i].create) continue;
        int fd = create(i);
        if (held_ < budget_ / 2) {
          st_[i].created_fd = fd;
          held_++;
        } else if (::close(fd) != 0) {
          throw_errno("close '" + path(i) + "'", errno);
        }
      }
    });
    // The barrier after the creations, which every rank also learns a creator's failure from
    // (a full disk refusing the preallocation): nobody goes on to open a file that is not there.
    agree_on_step(ctx_.comm, err, "another rank failed to create the shared files");
    rec_.add_time(Step::open, now_s() - t0);
  }

  void open_file(size_t i) {
    be_.flush();  // the device works while we block in open
    const double t0 = now_s();
    FileState& s = st_[i];
    int fd = -1;
    if (save_ && files_[i].create && !caps_.objects) {
      if (s.created_fd >= 0) {
        fd = s.created_fd;
        s.created_fd = -1;
        held_--;
      } else if (!s.created) {
        fd = create(i);
      }
    }
    s.open = true;
    open_++;
    be_.open(ctx_, i, fd);
    if (!save_ && caps_.plan_offsets) check_file_size(be_.size(i), files_[i], path(i));
    const double dt = now_s() - t0;
    rec_.add_time(Step::open, dt);
    meta_s_ += dt;
  }

  void close_file(size_t i) {
    const double t0 = now_s();
    st_[i].open = false;
    open_--;
    be_.close(i);
    rec_.file_done();
    const double dt = now_s() - t0;
    rec_.add_time(Step::close, dt);
    meta_s_ += dt;
  }

  // Every transfer of file i completed: its sync (sync "file"), then close, or keep it open for
  // the end sync.
  void finish_file(size_t i) {
    if (sync_.per_file) {
      be_.flush();
      const double t0 = now_s();
      be_.sync(i);
      rec_.sync_op();
      const double dt = now_s() - t0;
      rec_.add_time(Step::sync, dt);
      meta_s_ += dt;
    }
    if (sync_.keep_open) {
      parked_.push_back(i);
      return;
    }
    close_file(i);
  }

  void end_sync() {
    if (sync_.keep_open) {
      const double t0 = now_s();
      be_.sync_all(parked_);
      rec_.sync_op(parked_.size());
      rec_.add_time(Step::sync, now_s() - t0);
      for (size_t i : parked_) close_file(i);
      parked_.clear();
    } else if (sync_.syncfs) {
      const double t0 = now_s();
      int dfd = ::open(ctx_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd < 0) throw_errno("open '" + ctx_.dir + "' for syncfs", errno);
      int rc = ::syncfs(dfd);
      int err = errno;
      ::close(dfd);
      if (rc != 0) throw_errno("syncfs '" + ctx_.dir + "'", err);
      rec_.sync_op();
      rec_.count(Counter::syncfs_calls);
      rec_.add_time(Step::sync, now_s() - t0);
    }
  }

  // Collective MPI-IO and HDF5: the transport moves each file in one call.
  void whole_files() {
    if (ctx_.shard)
      throw ConfigError(
          "'source': \"shard\" needs a backend that transfers requests (posix, "
          "io_uring, mpiio independent); this one moves whole files itself");
    for (size_t i : order_) {
      open_file(i);
      const double t0 = now_s();
      be_.transfer_file(ctx_, i);
      rec_.add_time(Step::io, now_s() - t0);
      if (rec_.ops() > 0) rec_.count_max(Counter::max_in_flight, 1);
      finish_file(i);
    }
  }

  // One stream of transfers over every file, up to `depth` in flight. The io step is the stream's
  // wall time less the opens, syncs and closes made inside it.
  void stream() {
    const size_t slots = std::max<size_t>(
        1, std::min<size_t>({caps_.depth, ctx_.pool->count(),
                             static_cast<size_t>(std::max(1, ctx_.cfg->queue_depth))}));
    std::vector<unsigned> free;
    for (size_t s = slots; s > 0; s--) free.push_back(static_cast<unsigned>(s - 1));
    std::vector<SlotInfo> info(slots);
    std::deque<unsigned> fifo;  // restore: slots in submission order, consumed in that order
    std::vector<unsigned> done;
    std::optional<TransferCursor> cursor;
    size_t pos = 0;          // next file (index into order_) to take transfers from
    size_t finish_next = 0;  // next file to finish, in order
    size_t in_flight = 0;
    const double t0 = now_s(), meta0 = meta_s_ + cpu_s_;
    for (;;) {
      bool progress = false;
      while (!free.empty() && pos < order_.size()) {
        const size_t i = order_[pos];
        if (!st_[i].open) {
          // Collective files: the previous file is finished everywhere before this one opens.
          if (caps_.collective_files && finish_next < pos) break;
          if (open_ + held_ >= budget_) break;
          open_file(i);
        }
        const FileSpec& f = files_[i];
        // An object store's client reads a framed file as one stream (s3torchconnector's reader
        // under DLIO's torch.load: the object in order), not as the framework's buffered reader
        // asks for it: the restore reads its runs in block_size ranges.
        const bool streamed = !save_ && caps_.objects && !f.read_reqs.empty();
        if (!cursor)
          cursor.emplace(f, ctx_.cfg->block_size,
                         streamed ? TransferMode::stream : ctx_.cfg->transfer, !save_, !streamed);
        Transfer t;
        if (!cursor->next(t)) {
          st_[i].submitted_all = true;
          cursor.reset();
          pos++;
          progress = true;
          continue;
        }
        const unsigned s = free.back();
        free.pop_back();
        Buffer& buf = ctx_.pool->at(s);
        std::byte* data = buf.data;
        if (ctx_.shard) {
          data = ctx_.shard->at(f.id, t.offset);  // the state in memory, as the framework's
          if (save_) ctx_.data->from_memory(f, t);
        } else if (save_) {
          if (ctx_.data->waits_on_peer(f, t)) be_.flush();  // keep the device busy meanwhile
          data = ctx_.data->produce(f, t, buf);
        }
        if (save_ && ctx_.cfg->framework_cpu) cpu_s_ += framework_cpu(rec_, f, t, data);
        info[s] = SlotInfo{i, t, now_ns(), false};
        be_.submit(i, s, t.offset, t.len, data);
        st_[i].outstanding++;
        in_flight++;
        rec_.count_max(Counter::max_in_flight, in_flight);
        if (!save_) fifo.push_back(s);
        progress = true;
      }
      while (finish_next < pos) {
        const size_t i = order_[finish_next];
        if (!st_[i].submitted_all || st_[i].outstanding > 0) break;
        finish_file(i);
        finish_next++;
        progress = true;
      }
      if (in_flight == 0) {
        if (pos >= order_.size() && finish_next >= order_.size()) break;
        if (!progress)
          throw IoError("phase driver: no transfer in flight and none can start (" +
                        std::to_string(open_) + " files open, budget " + std::to_string(budget_) +
                        "; internal error)");
        continue;
      }
      done.clear();
      be_.reap(done);
      const uint64_t now = now_ns();
      for (unsigned s : done) {
        SlotInfo& si = info[s];
        if (!caps_.objects) rec_.op(si.t.len, now - si.t0);
        st_[si.file].outstanding--;
        in_flight--;
        if (save_)
          free.push_back(s);
        else
          si.complete = true;
      }
      while (!fifo.empty() && info[fifo.front()].complete) {
        const unsigned s = fifo.front();
        fifo.pop_front();
        const FileSpec& cf = files_[info[s].file];
        if (ctx_.shard) {
          // Verify where the bytes landed: a view of the rank's memory, not a pool buffer.
          Buffer view{ctx_.shard->at(cf.id, info[s].t.offset), info[s].t.len};
          ctx_.data->consume(cf, info[s].t, view);
          if (ctx_.load_into != nullptr)
            cpu_s_ += load_in_place(rec_, *ctx_.load_into, cf, info[s].t, view.data);
        } else {
          ctx_.data->consume(cf, info[s].t, ctx_.pool->at(s));
        }
        free.push_back(s);
      }
    }
    rec_.add_time(Step::io, std::max(0.0, now_s() - t0 - (meta_s_ + cpu_s_ - meta0)));
  }

  PhaseContext& ctx_;
  Backend& be_;
  PhaseRecorder& rec_;
  const std::vector<FileSpec>& files_;
  const bool save_;
  const TransportCaps caps_;
  const std::vector<size_t> order_;  // the data files (not commit records), in id order
  std::vector<FileState> st_;
  const size_t budget_;
  const SyncPlan sync_;
  size_t open_ = 0;  // files the transport has open
  size_t held_ = 0;  // created early, descriptor held for the transport
  std::vector<size_t> parked_;
  double meta_s_ = 0;  // open/sync/close time spent inside the stream
  double cpu_s_ = 0;   // modelled framework CPU work inside the stream
};

}  // namespace

void Backend::run(PhaseContext& ctx) {
  if (ctx.pool == nullptr || ctx.pool->count() == 0) throw IoError("phase driver: no buffer pool");
  if (ctx.pool->buffer_size() < ctx.cfg->block_size)
    throw IoError("phase driver: pool buffers (" + std::to_string(ctx.pool->buffer_size()) +
                  " bytes) are smaller than block_size " + std::to_string(ctx.cfg->block_size));
  Driver(ctx, *this).run();
}

}  // namespace ckpt
