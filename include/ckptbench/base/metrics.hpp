// Per-rank samples, latency histograms and the cross-rank reduction of one phase.
#pragma once
#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace ckpt {

// Median over repetitions, as statistics.median computes it (the mean of the middle two for an
// even count); none for no values. Used by the report's summaries, the table and the CSV.
std::optional<double> median_of(std::vector<double> v);

// Monotonic clock in seconds.
double now_s();
uint64_t now_ns();

// Log-bucketed latency histogram (nanoseconds): 2^kSubBits sub-buckets per power of two, so a
// bucket spans at most 1/2^kSubBits (12.5%) of its value. Mergeable by adding counts.
class LatencyHistogram {
 public:
  static constexpr int kSubBits = 3;
  static constexpr int kBuckets = 64 << kSubBits;
  void add(uint64_t ns);
  void merge(const LatencyHistogram& o);
  uint64_t count() const { return count_; }
  uint64_t max_ns() const { return max_; }
  // Value at quantile q in [0,1]: upper bound of the bucket holding the q-th sample (capped at
  // max).
  uint64_t percentile_ns(double q) const;
  static int bucket_of(uint64_t ns);
  static uint64_t bucket_low(int b);
  static uint64_t bucket_high(int b);  // exclusive upper bound
  std::array<uint64_t, kBuckets>& counts() { return counts_; }
  const std::array<uint64_t, kBuckets>& counts() const { return counts_; }
  void set_max(uint64_t m) { max_ = m; }
  void set_count(uint64_t c) { count_ = c; }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

// cpu: modelled framework CPU work on the save path (framework_cpu: torch.save's CRC-32 per
// record), timed apart from the storage steps.
enum class Step { open = 0, io = 1, sync = 2, close = 3, cpu = 4 };
inline constexpr int kSteps = 5;
const char* step_name(Step s);

// Per-phase counters with one meaning for every backend (docs/metrics.md, "counters"); reduced
// across ranks as sum / min / max.
enum class Counter {
  submit_calls = 0,             // calls that handed transfers to the kernel or the I/O library
  short_transfers = 1,          // transfers completed in part and resumed for the rest
  retries = 2,                  // transfers or calls repeated after EINTR / EAGAIN
  max_in_flight = 3,            // most transfers in flight at once (a maximum, not a sum)
  files_created = 4,            // files this rank created (exclusively)
  preallocate_unsupported = 5,  // created files whose fallocate(2) the file system refused
  collective_empty_calls = 6,   // zero-length collective calls joining the other ranks
  syncfs_calls = 7,             // syncfs(2) calls instead of one sync per file (descriptor budget)
  throttled = 8,                // answers asking the client to slow down (S3 503 SlowDown, 429)
};
inline constexpr int kCounters = 9;
const char* counter_name(Counter c);

// Requests to an object store, by kind (the s3 backend; none for the file backends): each kind's
// count and latency histogram, reduced across ranks like the transfers' (PhaseResult::requests).
enum class ObjectRequest { put, create_upload, part, complete, abort, get, head, list, del };
inline constexpr int kObjectRequests = 9;
const char* object_request_name(ObjectRequest k);

// What one rank records during a phase. Backends call these; run.cpp owns the phase clock.
class PhaseRecorder {
 public:
  // Adds wall time spent in a step (steps may interleave, e.g. open-write-close per file).
  void add_time(Step s, double seconds) { step_s_[static_cast<int>(s)] += seconds; }
  // RAII timer for a step.
  class Scope {
   public:
    Scope(PhaseRecorder& r, Step s) : r_(r), s_(s), t0_(now_s()) {}
    ~Scope() { r_.add_time(s_, now_s() - t0_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseRecorder& r_;
    Step s_;
    double t0_;
  };
  Scope time(Step s) { return Scope(*this, s); }

  // One completed data transfer of `bytes` that took `latency_ns` from submission to completion.
  void op(uint64_t bytes, uint64_t latency_ns) {
    ops_++;
    bytes_.fetch_add(bytes, std::memory_order_relaxed);  // read live by the progress line
    hist_.add(latency_ns);
  }
  // One object-store request of kind k that succeeded after latency_ns (its last attempt).
  void request(ObjectRequest k, uint64_t latency_ns) { req_[static_cast<int>(k)].add(latency_ns); }
  const LatencyHistogram& requests(ObjectRequest k) const { return req_[static_cast<int>(k)]; }
  // Metadata operations: creates, opens, closes (and mkdir, unlink when timed).
  void metadata(uint64_t n = 1) { meta_ops_ += n; }
  void file_done(uint64_t n = 1) { files_ += n; }
  void sync_op(uint64_t n = 1) { sync_ops_ += n; }
  void count(Counter c, uint64_t n = 1) { counters_[static_cast<int>(c)] += n; }
  void count_max(Counter c, uint64_t v) {
    auto& x = counters_[static_cast<int>(c)];
    if (v > x) x = v;
  }
  uint64_t counter(Counter c) const { return counters_[static_cast<int>(c)]; }

  double step_s(Step s) const { return step_s_[static_cast<int>(s)]; }
  uint64_t ops() const { return ops_; }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t meta_ops() const { return meta_ops_; }
  uint64_t files() const { return files_; }
  uint64_t sync_ops() const { return sync_ops_; }
  const LatencyHistogram& hist() const { return hist_; }

  // Set by run.cpp around the backend call.
  double start_s = 0, end_s = 0;

 private:
  std::array<double, kSteps> step_s_{};
  // A counter another thread may read while the backend adds to it (the live progress line);
  // copyable, unlike std::atomic, so recorders stay values.
  struct RelaxedCounter {
    std::atomic<uint64_t> v{0};
    RelaxedCounter() = default;
    RelaxedCounter(const RelaxedCounter& o) : v(o.v.load(std::memory_order_relaxed)) {}
    RelaxedCounter& operator=(const RelaxedCounter& o) {
      v.store(o.v.load(std::memory_order_relaxed), std::memory_order_relaxed);
      return *this;
    }
    void fetch_add(uint64_t n, std::memory_order m) { v.fetch_add(n, m); }
    uint64_t load(std::memory_order m) const { return v.load(m); }
  };
  uint64_t ops_ = 0, meta_ops_ = 0, files_ = 0, sync_ops_ = 0;
  std::array<uint64_t, kCounters> counters_{};
  RelaxedCounter bytes_;
  LatencyHistogram hist_;
  std::array<LatencyHistogram, kObjectRequests> req_;
};

struct MinMeanMax {
  double min = 0, mean = 0, max = 0;
  nlohmann::json to_json() const;
};

// A phase reduced across all ranks (collective over comm; the result is valid on every rank).
struct CounterRange {
  uint64_t sum = 0, min = 0, max = 0;
};

struct PhaseResult {
  uint64_t bytes = 0, ops = 0, files = 0, meta_ops = 0, sync_ops = 0;
  std::array<CounterRange, kCounters> counters;  // across ranks
  double elapsed_s = 0;    // max over ranks of (end - start), starts aligned by a barrier
  MinMeanMax rank_time_s;  // per-rank (end - start)
  std::array<MinMeanMax, kSteps> steps;
  LatencyHistogram hist;  // merged across ranks
  // Object-store requests by kind, merged across ranks (all empty for the file backends).
  std::array<LatencyHistogram, kObjectRequests> requests;
  double straggler_ratio = 0;        // max / mean rank time (ranks that moved bytes)
  std::vector<double> rank_times_s;  // per real rank, for straggler plots
  std::vector<double> rank_bytes;    // per real rank, bytes moved
  double verify_after_s = 0;         // verify "after": the slowest rank's check after the restore
  double rank_start_s = 0, rank_end_s = 0;  // this rank's own clock (now_s) at start and end
  double bandwidth_GiBps() const;
  double iops() const;
  double metadata_ops_per_s() const;
  nlohmann::json to_json() const;
};

PhaseResult reduce_phase(const PhaseRecorder& r, MPI_Comm comm);

}  // namespace ckpt
