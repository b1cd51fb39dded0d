#include "ckptbench/base/metrics.hpp"

#include <time.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace ckpt {

std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Buckets: values < 2^kSubBits map 1:1; above, each power of two [2^e, 2^(e+1)) is split into
// 2^kSubBits equal sub-buckets.
int LatencyHistogram::bucket_of(uint64_t ns) {
  constexpr uint64_t sub = 1ull << kSubBits;
  if (ns < sub) return static_cast<int>(ns);
  int e = 63 - std::countl_zero(ns);  // ns in [2^e, 2^(e+1)), e >= kSubBits
  uint64_t frac = (ns >> (e - kSubBits)) & (sub - 1);
  int b = static_cast<int>((e - kSubBits + 1) * sub + frac);
  return std::min(b, kBuckets - 1);
}

uint64_t LatencyHistogram::bucket_low(int b) {
  constexpr uint64_t sub = 1ull << kSubBits;
  if (b < static_cast<int>(sub)) return static_cast<uint64_t>(b);
  int e = b / static_cast<int>(sub) - 1 + kSubBits;
  uint64_t frac = static_cast<uint64_t>(b) % sub;
  return (1ull << e) + (frac << (e - kSubBits));
}

uint64_t LatencyHistogram::bucket_high(int b) {
  if (b + 1 >= kBuckets) return UINT64_MAX;
  return bucket_low(b + 1);
}

void LatencyHistogram::add(uint64_t ns) {
  counts_[bucket_of(ns)]++;
  count_++;
  max_ = std::max(max_, ns);
}

void LatencyHistogram::merge(const LatencyHistogram& o) {
  for (int i = 0; i < kBuckets; i++) counts_[i] += o.counts_[i];
  count_ += o.count_;
  max_ = std::max(max_, o.max_);
}

uint64_t LatencyHistogram::percentile_ns(double q) const {
  if (count_ == 0) return 0;
  // Rank of the sample (1-based), nearest-rank definition.
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; b++) {
    seen += counts_[b];
    if (seen >= rank) {
      uint64_t hi = bucket_high(b) - 1;
      return std::min(hi, max_);
    }
  }
  return max_;
}

const char* step_name(Step s) {
  switch (s) {
    case Step::open:
      return "open";
    case Step::io:
      return "io";
    case Step::sync:
      return "sync";
    case Step::close:
      return "close";
    case Step::cpu:
      return "cpu";
  }
  return "?";
}

const char* counter_name(Counter c) {
  switch (c) {
    case Counter::submit_calls:
      return "submit_calls";
    case Counter::short_transfers:
      return "short_transfers";
    case Counter::retries:
      return "retries";
    case Counter::max_in_flight:
      return "max_in_flight";
    case Counter::files_created:
      return "files_created";
    case Counter::preallocate_unsupported:
      return "preallocate_unsupported";
    case Counter::collective_empty_calls:
      return "collective_empty_calls";
    case Counter::syncfs_calls:
      return "syncfs_calls";
    case Counter::throttled:
      return "throttled";
  }
  return "?";
}

nlohmann::json MinMeanMax::to_json() const { return {{"min", min}, {"mean", mean}, {"max", max}}; }

double PhaseResult::bandwidth_GiBps() const {
  return elapsed_s > 0 ? static_cast<double>(bytes) / elapsed_s / (1024.0 * 1024 * 1024) : 0;
}
double PhaseResult::iops() const {
  return elapsed_s > 0 ? static_cast<double>(ops) / elapsed_s : 0;
}
double PhaseResult::metadata_ops_per_s() const {
  return elapsed_s > 0 ? static_cast<double>(meta_ops) / elapsed_s : 0;
}

namespace {
MinMeanMax reduce_mmm(double v, MPI_Comm comm) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  MinMeanMax r;
  MPI_Allreduce(&v, &r.min, 1, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(&v, &r.max, 1, MPI_DOUBLE, MPI_MAX, comm);
  double sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
  r.mean = sum / n;
  return r;
}
}  // namespace

const char* object_request_name(ObjectRequest k) {
  static const char* const kNames[kObjectRequests] = {
      "put", "create_upload", "part", "complete", "abort", "get", "head", "list", "delete"};
  return kNames[static_cast<int>(k)];
}

namespace {

// Adds the histograms of every rank (bucket counts and counts summed, maxima taken). Collective.
void merge_histogram(const LatencyHistogram& mine, LatencyHistogram& out, MPI_Comm comm) {
  MPI_Allreduce(mine.counts().data(), out.counts().data(), LatencyHistogram::kBuckets, MPI_UINT64_T,
                MPI_SUM, comm);
  uint64_t c = mine.count(), cm = 0, m = mine.max_ns(), mm = 0;
  MPI_Allreduce(&c, &cm, 1, MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(&m, &mm, 1, MPI_UINT64_T, MPI_MAX, comm);
  out.set_count(cm);
  out.set_max(mm);
}

}  // namespace

PhaseResult reduce_phase(const PhaseRecorder& r, MPI_Comm comm) {
  PhaseResult out;
  int n = 1;
  MPI_Comm_size(comm, &n);
  uint64_t local[6 + kCounters] = {r.bytes(), r.ops(), r.files(), r.meta_ops(), r.sync_ops()};
  for (int c = 0; c < kCounters; c++) local[5 + c] = r.counter(static_cast<Counter>(c));
  for (int k = 0; k < kObjectRequests; k++)
    local[5 + kCounters] += r.requests(static_cast<ObjectRequest>(k)).count();
  uint64_t sum[6 + kCounters], cmin[kCounters], cmax[kCounters];
  MPI_Allreduce(local, sum, 6 + kCounters, MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(local + 5, cmin, kCounters, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(local + 5, cmax, kCounters, MPI_UINT64_T, MPI_MAX, comm);
  out.bytes = sum[0];
  out.ops = sum[1];
  out.files = sum[2];
  out.meta_ops = sum[3];
  out.sync_ops = sum[4];
  for (int c = 0; c < kCounters; c++) out.counters[c] = {sum[5 + c], cmin[c], cmax[c]};
  double t = r.end_s - r.start_s;
  out.rank_time_s = reduce_mmm(t, comm);
  out.elapsed_s = out.rank_time_s.max;
  for (int s = 0; s < kSteps; s++) out.steps[s] = reduce_mmm(r.step_s(static_cast<Step>(s)), comm);
  out.rank_times_s.resize(n);
  MPI_Allgather(&t, 1, MPI_DOUBLE, out.rank_times_s.data(), 1, MPI_DOUBLE, comm);
  // Straggler ratio over ranks that moved data (idle ranks would drag the mean down).
  uint64_t mine = r.bytes();
  std::vector<uint64_t> moved(n);
  MPI_Allgather(&mine, 1, MPI_UINT64_T, moved.data(), 1, MPI_UINT64_T, comm);
  out.rank_bytes.assign(moved.begin(), moved.end());
  double mx = 0, total = 0;
  int active = 0;
  for (int i = 0; i < n; i++) {
    if (moved[i] == 0) continue;
    mx = std::max(mx, out.rank_times_s[i]);
    total += out.rank_times_s[i];
    active++;
  }
  out.straggler_ratio = (active > 0 && total > 0) ? mx / (total / active) : 1.0;
  // Merge histograms by adding bucket counts (never by averaging percentiles).
  merge_histogram(r.hist(), out.hist, comm);
  // Object requests only when some rank made any (the sum is the same on every rank).
  if (sum[5 + kCounters] > 0)
    for (int k = 0; k < kObjectRequests; k++)
      merge_histogram(r.requests(static_cast<ObjectRequest>(k)), out.requests[k], comm);
  return out;
}

nlohmann::json PhaseResult::to_json() const {
  nlohmann::json j;
  j["bytes"] = bytes;
  j["files"] = files;
  j["ops"] = ops;
  j["elapsed_s"] = elapsed_s;
  j["bandwidth_GiBps"] = bandwidth_GiBps();
  j["iops"] = iops();
  j["metadata_ops"] = meta_ops;
  j["metadata_ops_per_s"] = metadata_ops_per_s();
  j["rank_time_s"] = rank_time_s.to_json();
  nlohmann::json st;
  for (int s = 0; s < kSteps; s++)
    st[std::string(step_name(static_cast<Step>(s))) + "_s"] = steps[s].to_json();
  j["steps"] = st;
  j["straggler_ratio"] = straggler_ratio;
  nlohmann::json lat;
  lat["count"] = hist.count();
  auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  lat["p50_us"] = us(hist.percentile_ns(0.50));
  lat["p90_us"] = us(hist.percentile_ns(0.90));
  lat["p99_us"] = us(hist.percentile_ns(0.99));
  lat["p999_us"] = us(hist.percentile_ns(0.999));
  lat["max_us"] = us(hist.max_ns());
  j["latency"] = lat;
  j["sync_ops"] = sync_ops;
  nlohmann::json cj = nlohmann::json::object();
  for (int c = 0; c < kCounters; c++)
    cj[counter_name(static_cast<Counter>(c))] = {
        {"sum", counters[c].sum}, {"min", counters[c].min}, {"max", counters[c].max}};
  j["counters"] = cj;
  j["rank_times_s"] = rank_times_s;
  nlohmann::json rq = nlohmann::json::object();
  for (int k = 0; k < kObjectRequests; k++) {
    const LatencyHistogram& h = requests[k];
    if (h.count() == 0) continue;
    auto ms = [](uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    rq[object_request_name(static_cast<ObjectRequest>(k))] = {{"count", h.count()},
                                                              {"p50_ms", ms(h.percentile_ns(0.50))},
                                                              {"p90_ms", ms(h.percentile_ns(0.90))},
                                                              {"p99_ms", ms(h.percentile_ns(0.99))},
                                                              {"max_ms", ms(h.max_ns())}};
  }
  if (!rq.empty()) j["requests"] = rq;
  return j;
}

}  // namespace ckpt
