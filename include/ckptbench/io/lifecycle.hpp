// Checkpoint lifecycle pieces that are not phases of their own (docs/config.md, "Checkpoint
// lifecycle"): the host staging memory and data path of an asynchronous save, the synthetic
// training compute between checkpoints, and the mmap(2) restore.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/source.hpp"
#include "ckptbench/plan/config.hpp"

namespace ckpt {

// Host staging memory of an asynchronous save, allocated once per point and prefaulted (untimed):
// frameworks allocate pinned staging once and reuse it for every save.
class StagingMemory {
 public:
  explicit StagingMemory(uint64_t bytes);
  ~StagingMemory();
  StagingMemory(const StagingMemory&) = delete;
  StagingMemory& operator=(const StagingMemory&) = delete;
  std::byte* data() const { return p_; }
  uint64_t size() const { return n_; }

 private:
  std::byte* p_ = nullptr;
  uint64_t n_ = 0;
};

// The bytes an asynchronous save stages: the payload of this rank's own extents (not padding, not
// framework metadata), in the order the phase driver writes them (files in id order, extents in
// offset order).
uint64_t staged_bytes(const RankIo& io);
// Default staging per rank: all of staged_bytes, capped at a quarter of the node's memory shared
// by the ranks on the node (kStagingRamFraction / local_ranks of MemTotal).
inline constexpr double kStagingRamFraction = 0.25;
uint64_t staging_default(uint64_t staged, int local_ranks);
// MemTotal of /proc/meminfo in bytes (0 when unknown).
uint64_t mem_total_bytes();

// The data path of the flush of an asynchronous save. snapshot() copies the first window of the
// staged bytes into staging memory (the copy training waits for); the flush then writes from
// staging (produce copies each transfer's payload from staging into the transport's buffer, so
// registered buffers and O_DIRECT alignment still hold). When staging is smaller than the staged
// bytes, the flush copies the next window in when it needs it, and training stays blocked until
// the last window is in (on_unblock is called then, once).
class StagedDataPath final : public DataPath {
 public:
  StagedDataPath(DataPath& inner, const Pattern& pattern, const RankIo& io, StagingMemory& mem);
  // Copies window 0; returns true when that was the last one (training is unblocked now).
  bool snapshot();
  void on_unblock(std::function<void()> f) { unblock_ = std::move(f); }
  // source "shard": each window is copied from the rank's resident state (null: the pattern is
  // generated into it).
  void copy_from(const ShardMemory* state) { from_ = state; }
  uint64_t total() const { return total_; }
  uint64_t windows() const;
  uint64_t copied_bytes() const { return copied_; }

  std::byte* produce(const FileSpec& f, const Transfer& t, Buffer& buf) override;
  void consume(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    inner_.consume(f, t, buf);
  }
  bool waits_on_peer(const FileSpec& f, const Transfer& t) const override {
    return inner_.waits_on_peer(f, t);
  }

 private:
  struct Seg {
    uint32_t file_id;
    uint64_t file_offset, length, gstart;
  };
  void fill_window(uint64_t w);
  uint64_t base_of(const FileSpec& f, const Extent& e) const;

  DataPath& inner_;
  const Pattern& pattern_;
  const RankIo& io_;
  StagingMemory& mem_;
  std::vector<Seg> segs_;
  std::vector<std::vector<int64_t>> base_;  // [file index][extent index] -> gstart, -1: not staged
  uint64_t total_ = 0, copied_ = 0;
  uint64_t win_ = 0, win_lo_ = 0, win_hi_ = 0;
  size_t seg_at_ = 0;  // first segment that may overlap the next window
  bool filled_ = false;
  std::function<void()> unblock_;
  const ShardMemory* from_ = nullptr;
};

// Synthetic training compute between checkpoints. cpu: a calibrated amount of arithmetic on a
// 64 KiB array (cache resident, one core): calibrate() runs it for `seconds` with no flush and
// counts the work units, run() later does the same units so the time it takes shows what a flush
// running beside it costs. sleep: sleeps `seconds` (only waiting for a flush can slow it).
class ComputeLoad {
 public:
  ComputeLoad(ComputeKind kind, double seconds) : kind_(kind), seconds_(seconds) {}
  ~ComputeLoad() {
    if (th_.joinable()) th_.join();  // after an error in the flush: the work ends by itself
  }
  ComputeLoad(const ComputeLoad&) = delete;
  ComputeLoad& operator=(const ComputeLoad&) = delete;
  // Runs alone (the baseline) and returns its wall time.
  double calibrate();
  // Starts the calibrated work on a thread; join() returns its wall time.
  void start();
  double join();
  double end_s() const { return end_s_; }  // now_s() when the last run ended
  bool active() const { return seconds_ > 0; }
  uint64_t units() const { return units_; }

 private:
  double run_units();
  ComputeKind kind_;
  double seconds_;
  uint64_t units_ = 0;
  std::vector<float> a_;
  std::thread th_;
  double elapsed_ = 0, end_s_ = 0;
  volatile float sink_ = 0;
};

// restore.method "mmap": each file of ctx.io is opened read-only and mapped whole; every transfer
// (TransferCursor order) is copied out of the mapping into a pool buffer (the page faults read the
// file, as a safetensors loader's copy out of its mapping does) and handed to ctx.data->consume
// (verification). Timed like the driver's steps: open (open + fstat + mmap, with the size check),
// io (the copies), close (munmap + close). Throws IoError naming the file.
void mmap_restore(PhaseContext& ctx);

}  // namespace ckpt
