#include "ckptbench/io/lifecycle.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <unordered_map>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/metrics.hpp"
#include "ckptbench/io/driver.hpp"
#include "ckptbench/plan/transfer.hpp"

namespace ckpt {

StagingMemory::StagingMemory(uint64_t bytes) : n_(bytes) {
  if (n_ == 0) return;
  void* p = ::mmap(nullptr, n_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
  if (p == MAP_FAILED)
    throw IoError("staging memory: mmap of " + std::to_string(n_) +
                  " bytes failed: " + errno_text(errno) + " (lower 'staging_bytes')");
  p_ = static_cast<std::byte*>(p);
  // MAP_POPULATE may leave pages unmapped under memory pressure: touch every page (untimed).
  const long page = ::sysconf(_SC_PAGESIZE);
  for (uint64_t o = 0; o < n_; o += static_cast<uint64_t>(page > 0 ? page : 4096))
    p_[o] = std::byte{0};
}

StagingMemory::~StagingMemory() {
  if (p_ != nullptr) ::munmap(p_, n_);
}

uint64_t staged_bytes(const RankIo& io) {
  uint64_t n = 0;
  for (const auto& f : io.files)
    for (const auto& e : f.extents)
      if (e.shard >= 0 && (e.source < 0 || e.source == io.rank)) n += e.length;
  return n;
}

uint64_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024;
  return 0;
}

uint64_t staging_default(uint64_t staged, int local_ranks) {
  const uint64_t mem = mem_total_bytes();
  if (mem == 0) return staged;
  const auto cap = static_cast<uint64_t>(static_cast<double>(mem) * kStagingRamFraction /
                                         std::max(1, local_ranks));
  return std::min(staged, std::max<uint64_t>(cap, 64u << 10));
}

StagedDataPath::StagedDataPath(DataPath& inner, const Pattern& pattern, const RankIo& io,
                               StagingMemory& mem)
    : inner_(inner), pattern_(pattern), io_(io), mem_(mem) {
  base_.resize(io.files.size());
  for (size_t fi : files_in_id_order(io.files)) {
    const FileSpec& f = io.files[fi];
    base_[fi].assign(f.extents.size(), -1);
    for (size_t ei = 0; ei < f.extents.size(); ei++) {
      const Extent& e = f.extents[ei];
      if (e.shard < 0 || (e.source >= 0 && e.source != io.rank) || e.length == 0) continue;
      base_[fi][ei] = static_cast<int64_t>(total_);
      segs_.push_back({f.id, e.offset, e.length, total_});
      total_ += e.length;
    }
  }
  if (total_ > 0 && mem_.size() == 0) throw Error("async save: no staging memory");
}

uint64_t StagedDataPath::windows() const {
  return mem_.size() == 0 ? 0 : (total_ + mem_.size() - 1) / mem_.size();
}

void StagedDataPath::fill_window(uint64_t w) {
  const uint64_t S = mem_.size();
  win_ = w;
  win_lo_ = w * S;
  win_hi_ = std::min(total_, win_lo_ + S);
  while (seg_at_ < segs_.size() && segs_[seg_at_].gstart + segs_[seg_at_].length <= win_lo_)
    seg_at_++;
  for (size_t i = seg_at_; i < segs_.size() && segs_[i].gstart < win_hi_; i++) {
    const Seg& s = segs_[i];
    const uint64_t lo = std::max(s.gstart, win_lo_), hi = std::min(s.gstart + s.length, win_hi_);
    if (from_ != nullptr)
      std::memcpy(mem_.data() + (lo - win_lo_),
                  from_->at(s.file_id, s.file_offset + (lo - s.gstart)), hi - lo);
    else
      pattern_.fill({mem_.data() + (lo - win_lo_), hi - lo}, s.file_id,
                    s.file_offset + (lo - s.gstart));
    copied_ += hi - lo;
  }
  filled_ = true;
  if (win_hi_ >= total_ && unblock_) {
    auto f = std::move(unblock_);
    unblock_ = nullptr;
    f();
  }
}

bool StagedDataPath::snapshot() {
  seg_at_ = 0;
  copied_ = 0;
  filled_ = false;
  if (total_ == 0) {
    win_lo_ = win_hi_ = 0;
    filled_ = true;
    return true;
  }
  auto keep = std::move(unblock_);  // the caller unblocks itself when window 0 is the last
  unblock_ = nullptr;
  fill_window(0);
  const bool last = win_hi_ >= total_;
  if (!last) unblock_ = std::move(keep);
  return last;
}

uint64_t StagedDataPath::base_of(const FileSpec& f, const Extent& e) const {
  size_t fi = static_cast<size_t>(&f - io_.files.data());
  if (&f < io_.files.data() || fi >= io_.files.size()) {
    fi = io_.files.size();
    for (size_t i = 0; i < io_.files.size(); i++)
      if (io_.files[i].id == f.id) fi = i;
    if (fi == io_.files.size()) return UINT64_MAX;
  }
  const size_t ei = static_cast<size_t>(&e - io_.files[fi].extents.data());
  if (ei >= base_[fi].size() || base_[fi][ei] < 0) return UINT64_MAX;
  return static_cast<uint64_t>(base_[fi][ei]);
}

std::byte* StagedDataPath::produce(const FileSpec& f, const Transfer& t, Buffer& buf) {
  std::byte* p = inner_.produce(f, t, buf);  // padding and metadata bytes; fault injection
  for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
    if (pos >= e.length) return;
    const uint64_t g0 = base_of(f, e);
    if (g0 == UINT64_MAX) return;
    uint64_t k = std::min(n, e.length - pos), g = g0 + pos, done = 0;
    while (k > 0) {
      if (!filled_ || g >= win_hi_) {
        if (g >= total_) throw Error("async save: staged byte beyond the staged total");
        fill_window(g / mem_.size());
      }
      if (g < win_lo_)
        throw Error("async save: the flush asked for staged bytes of an earlier window ('" +
                    f.path + "' offset " + std::to_string(e.offset + pos) +
                    "): the driver wrote out of order");
      const uint64_t c = std::min(k, win_hi_ - g);
      // The staging bytes are the same pattern bytes stage_pattern put there, so the buffer
      // stays clean for the next transfer's fast path; a wrong copy fails verification.
      std::memcpy(p + at + done, mem_.data() + (g - win_lo_), c);
      g += c;
      k -= c;
      done += c;
    }
  });
  return p;
}

// ---- compute ----

namespace {
constexpr size_t kComputeFloats = 16384;  // 64 KiB
constexpr int kPassesPerUnit = 32;
}  // namespace

double ComputeLoad::run_units() {
  const double t0 = now_s();
  if (kind_ == ComputeKind::sleep) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds_));
  } else {
    if (a_.empty()) a_.assign(kComputeFloats, 1.0f);
    float s = 0;
    for (uint64_t u = 0; u < units_; u++)
      for (int r = 0; r < kPassesPerUnit; r++)
        for (size_t i = 0; i < a_.size(); i++) {
          a_[i] = a_[i] * 0.999f + 0.001f;
          s += a_[i];
        }
    sink_ = s;
  }
  end_s_ = now_s();
  return end_s_ - t0;
}

double ComputeLoad::calibrate() {
  if (seconds_ <= 0) return 0;
  if (kind_ == ComputeKind::sleep) return run_units();
  if (a_.empty()) a_.assign(kComputeFloats, 1.0f);
  const double t0 = now_s();
  uint64_t n = 0;
  float s = 0;
  while (now_s() - t0 < seconds_) {
    for (int r = 0; r < kPassesPerUnit; r++)
      for (size_t i = 0; i < a_.size(); i++) {
        a_[i] = a_[i] * 0.999f + 0.001f;
        s += a_[i];
      }
    n++;
  }
  sink_ = s;
  units_ = n;
  end_s_ = now_s();
  return end_s_ - t0;
}

void ComputeLoad::start() {
  if (seconds_ <= 0) return;
  th_ = start_thread("the compute phase (compute_s)", [this] { elapsed_ = run_units(); });
}

double ComputeLoad::join() {
  if (!th_.joinable()) return 0;
  th_.join();
  return elapsed_;
}

// ---- mmap restore ----

void mmap_restore(PhaseContext& ctx) {
  PhaseRecorder& rec = *ctx.rec;
  const RankIo& io = *ctx.io;
  Buffer& buf = ctx.pool->at(0);
  for (size_t i : files_in_id_order(io.files)) {
    const FileSpec& f = io.files[i];
    if (f.extents.empty()) continue;
    const std::string path = ctx.dir + "/" + f.path;
    int fd = -1;
    void* map = MAP_FAILED;
    size_t len = 0;
    {
      auto s = rec.time(Step::open);
      fd = open_plan_file(ctx, f, O_RDONLY, "open");
      rec.metadata();
      struct stat st {};
      if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw IoError("fstat '" + path + "': " + errno_text(err));
      }
      try {
        check_file_size(static_cast<uint64_t>(st.st_size), f, path);
      } catch (...) {
        ::close(fd);
        throw;
      }
      len = static_cast<size_t>(st.st_size);
      if (len > 0) map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
      if (len > 0 && map == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        throw IoError("mmap '" + path + "' (" + std::to_string(len) +
                      " bytes): " + errno_text(err));
      }
    }
    const auto* base = static_cast<const std::byte*>(map);
    try {
      const double t_io = now_s();
      for_each_transfer(f, ctx.cfg->block_size, ctx.cfg->transfer, [&](const Transfer& t) {
        if (t.len > buf.size) throw Error("mmap restore: transfer larger than a pool buffer");
        const uint64_t t0 = now_ns();
        std::memcpy(buf.data, base + t.offset, t.len);
        rec.op(t.len, now_ns() - t0);
        ctx.data->consume(f, t, buf);
      });
      rec.add_time(Step::io, now_s() - t_io);
    } catch (...) {
      if (map != MAP_FAILED) ::munmap(map, len);
      ::close(fd);
      throw;
    }
    auto s = rec.time(Step::close);
    if (map != MAP_FAILED) ::munmap(map, len);
    if (::close(fd) != 0) throw IoError("close '" + path + "': " + errno_text(errno));
    rec.metadata();
    rec.file_done();
  }
}

}  // namespace ckpt
