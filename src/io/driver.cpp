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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>

#include "ckptbench/base/error.hpp"
#include "ckptbench/fs/beneath.hpp"
#include "ckptbench/mpi/agreement.hpp"
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

std::vector<size_t> files_in_id_order(const std::vector<FileSpec>& files, bool commit) {
  std::vector<size_t> v;
  for (size_t i : files_in_id_order(files))
    if (files[i].commit == commit) v.push_back(i);
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
        commits_(files_in_id_order(files_, true)),
        meet_(framework_meetings(ctx) > 0),
        st_(files_.size()),
        budget_(std::max<size_t>(1, std::min(fd_budget(), caps_.max_open))),
        sync_(plan_sync(ctx.cfg->sync, save_, order_.size(), budget_)) {}

  // A plan with commit records (FileSpec::commit, DCP's .metadata) runs in stages with the
  // framework's collectives between them (state_dict_saver.py and state_dict_loader.py in 1.13).
  // Restore: the commit records, meet (load_state_dict's reduce_scatter of the plans), the data
  // files, meet (its all_gather of the read results). Save: meet (save_state_dict's
  // reduce_scatter of the plans), the data files, meet (its all_reduce gathers every rank's
  // results), the writer writes the commit records, meet (the all_reduce's broadcast). A rank
  // that fails still meets the others and says so: they stop with PeerLeftError instead of
  // waiting for it.
  void run() {
    be_.begin(ctx_);  // throwing, the caller attends the meetings (attend_missed_meetings)
    std::exception_ptr err;
    auto stage = [&](auto&& fn) {
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
    if (!save_) {
      stage([&] { read_commits(); });
      meet("after reading the commit records", err);
    } else {
      meet("before writing the data files", err);
    }
    stage([&] {
      if (save_ && ctx_.plan != nullptr && ctx_.plan->any_shared) precreate();
      if (caps_.whole_file)
        whole_files();
      else
        stream();
      end_sync();
    });
    if (save_) {
      meet("before writing the commit records", err);
      stage([&] { write_commits(); });
      meet("after writing the commit records", err);
    } else {
      meet("after reading the data files", err);
    }
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
    if (save_ && files_[i].create) {
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
        if (!cursor) cursor.emplace(f, ctx_.cfg->block_size, ctx_.cfg->transfer, !save_);
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
        if (save_ && ctx_.cfg->framework_cpu) framework_cpu(f, t, data);
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
        rec_.op(si.t.len, now - si.t0);
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
          if (ctx_.load_into != nullptr) load_in_place(cf, info[s].t, view.data);
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
  const std::vector<size_t> order_;    // the data files (not commit records), in id order
  const std::vector<size_t> commits_;  // the commit records this rank lists, in id order
  const bool meet_;                    // the plan has commit records: the ranks meet
  std::vector<FileState> st_;
  const size_t budget_;
  const SyncPlan sync_;
  size_t open_ = 0;  // files the transport has open
  size_t held_ = 0;  // created early, descriptor held for the transport
  std::vector<size_t> parked_;
  double meta_s_ = 0;  // open/sync/close time spent inside the stream
  double cpu_s_ = 0;   // modelled framework CPU work inside the stream

  // The framework's collective between stages: every rank says whether it failed; a rank that
  // did not, but whose peer did, stops with PeerLeftError. Not part of any step's time.
  void meet(const char* where, std::exception_ptr& err) {
    if (!meet_) return;
    const bool any = framework_meeting(ctx_, err != nullptr, where);
    if (any && !err)
      err = std::make_exception_ptr(PeerLeftError(
          std::string("another rank failed before the framework's collective ") + where +
          (save_ ? " (commit records are written only when every rank succeeded)" : "")));
  }

  int dir_fd(DirFd& hold) const {
    if (ctx_.dirfd >= 0) return ctx_.dirfd;
    hold = DirFd(ctx_.dir);
    return hold.get();
  }

  // DCP's FileSystemWriter.finish (torch/distributed/_shard/checkpoint/filesystem.py in 1.13,
  // torch/distributed/checkpoint/filesystem.py from 2.0): pickle.dump into <path>.tmp, fsync,
  // close, rename to <path>. Plain POSIX calls whatever the backend (Python's file object).
  void write_commits() {
    DirFd hold;
    const int dirfd = dir_fd(hold);
    Buffer& buf = ctx_.pool->at(0);
    for (size_t i : commits_) {
      const FileSpec& f = files_[i];
      if (!f.create) continue;
      const std::string tmp = f.path + ".tmp", shown = ctx_.dir + "/" + tmp;
      double t0 = now_s();
      const int fd = open_beneath(dirfd, tmp, O_WRONLY | O_CREAT | O_CLOEXEC);
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
        t0 = now_s();
        if (::fsync(fd) != 0) throw_errno("fsync '" + shown + "'", errno);
        rec_.sync_op();
        rec_.add_time(Step::sync, now_s() - t0);
      } catch (...) {
        ::close(fd);
        throw;
      }
      close_record(fd, shown);
      // The rename within the record's directory (opened beneath the point directory).
      t0 = now_s();
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

  // DCP's FileSystemReader.read_metadata: every rank opens the record and unpickles it through a
  // buffered reader (FileSpec::read_reqs), before any data file.
  void read_commits() {
    Buffer& buf = ctx_.pool->at(0);
    for (size_t i : commits_) {
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

  // Closes a commit record (close step, a metadata op, a file done).
  void close_record(int fd, const std::string& shown) {
    const double t0 = now_s();
    if (::close(fd) != 0) throw_errno("close '" + shown + "'", errno);
    rec_.metadata();
    rec_.file_done();
    rec_.add_time(Step::close, now_s() - t0);
  }

  // DCP's FileSystemReader.read_data (1.13, filesystem.py): torch.load of each item into a new
  // tensor, then target_tensor.copy_(tensor) into the state dict the trainer holds - a copy of
  // the request's tensor bytes into resident memory - after which the new tensor is dropped: its
  // pages go back to the system (glibc returns blocks this large with munmap), here with
  // MADV_DONTNEED on the pages the request covers whole.
  void load_in_place(const FileSpec& f, const Transfer& t, std::byte* data) {
    const double c0 = now_s();
    for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
      if (e.shard < 0) return;
      std::memcpy(ctx_.load_into->at(f.id, e.offset + pos), data + at, n);
    });
    const auto lo = (reinterpret_cast<uintptr_t>(data) + 4095) / 4096 * 4096;
    const auto hi = (reinterpret_cast<uintptr_t>(data) + t.len) / 4096 * 4096;
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
    const double dt = now_s() - c0;
    rec_.add_time(Step::cpu, dt);
    cpu_s_ += dt;
  }

  // torch.save's stream (miniz, mz_zip_writer_add_mem_ex_v2) computes the CRC-32 of each record's
  // data before it writes the record: the same pass over the tensor bytes of the request.
  void framework_cpu(const FileSpec& f, const Transfer& t, const std::byte* data) {
    const double c0 = now_s();
    uLong crc = crc32(0L, Z_NULL, 0);
    for_each_piece(f, t, [&](const Extent& e, uint64_t, uint64_t n, uint64_t at) {
      if (e.shard < 0) return;
      const auto* p = reinterpret_cast<const Bytef*>(data + at);
      for (uint64_t done = 0; done < n;) {
        const uInt step = static_cast<uInt>(std::min<uint64_t>(n - done, 1u << 30));
        crc = crc32(crc, p + done, step);
        done += step;
      }
    });
    const double dt = now_s() - c0;
    rec_.add_time(Step::cpu, dt);
    cpu_s_ += dt;
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

void Backend::run(PhaseContext& ctx) {
  if (ctx.pool == nullptr || ctx.pool->count() == 0) throw IoError("phase driver: no buffer pool");
  if (ctx.pool->buffer_size() < ctx.cfg->block_size)
    throw IoError("phase driver: pool buffers (" + std::to_string(ctx.pool->buffer_size()) +
                  " bytes) are smaller than block_size " + std::to_string(ctx.cfg->block_size));
  Driver(ctx, *this).run();
}

}  // namespace ckpt
