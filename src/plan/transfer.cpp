#include "ckptbench/plan/transfer.hpp"

#include <algorithm>

#include "ckptbench/base/error.hpp"

namespace ckpt {

const EnumNames<TransferMode>& transfer_mode_names() {
  static const EnumNames<TransferMode> n = {{TransferMode::stream, "stream"},
                                            {TransferMode::per_tensor, "per-tensor"}};
  return n;
}

std::string transfer_mode_name(TransferMode m) { return transfer_mode_names().name(m); }

TransferMode parse_transfer_mode(const std::string& s) {
  if (auto m = transfer_mode_names().find(s)) return *m;
  throw ConfigError("'transfer': unknown value '" + s +
                    "' (allowed: " + transfer_mode_names().list() + ")");
}

TransferMode default_transfer_mode(LayoutKind k) {
  switch (k) {
    case LayoutKind::aggregated_rank:
    case LayoutKind::aggregated_node:
    case LayoutKind::shared_file:
      return TransferMode::stream;
    default:
      return TransferMode::per_tensor;
  }
}

TransferCursor::TransferCursor(const FileSpec& f, uint64_t block_size, TransferMode mode,
                               bool reading, bool framed)
    : f_(&f), bs_(std::max<uint64_t>(block_size, 1)), mode_(mode) {
  const auto& r = reading ? f.read_reqs : f.write_reqs;
  if (!r.empty() && framed) reqs_ = &r;
}

bool TransferCursor::next_request(Transfer& t) {
  const auto& rq = *reqs_;
  while (ri_ < rq.size() && rdone_ >= rq[ri_].len) {
    ri_++;
    rdone_ = 0;
  }
  if (ri_ >= rq.size()) return false;
  t.offset = rq[ri_].offset + rdone_;
  t.len = std::min(kMaxFramedRequest, rq[ri_].len - rdone_);
  rdone_ += t.len;
  // The first extent the transfer touches (requests come in any order on restore).
  const auto& ex = f_->extents;
  auto it = std::upper_bound(ex.begin(), ex.end(), t.offset,
                             [](uint64_t o, const Extent& e) { return o < e.offset + e.padded; });
  t.extent = static_cast<uint32_t>(it - ex.begin());
  return true;
}

bool TransferCursor::next(Transfer& t) {
  if (reqs_) return next_request(t);
  const auto& ex = f_->extents;
  if (cur_ == run_end_) {
    // Start the next run at the next extent with bytes to move.
    while (ei_ < ex.size() && (ex[ei_].padded == 0 || ex[ei_].offset + ex[ei_].padded <= cur_))
      ei_++;
    if (ei_ >= ex.size()) return false;
    cur_ = ex[ei_].offset;
    run_end_ = cur_ + ex[ei_].padded;
    if (mode_ == TransferMode::stream)
      for (size_t j = ei_ + 1; j < ex.size() && ex[j].offset == run_end_; j++)
        run_end_ += ex[j].padded;
  }
  t.offset = cur_;
  t.len = std::min(bs_, run_end_ - cur_);
  t.extent = static_cast<uint32_t>(ei_);
  cur_ += t.len;
  while (ei_ + 1 < ex.size() && ex[ei_].offset + ex[ei_].padded <= cur_ && cur_ < run_end_) ei_++;
  return true;
}

uint64_t largest_transfer(const RankIo& io, uint64_t block_size) {
  uint64_t m = block_size;
  for (const auto& f : io.files)
    for (const auto* rq : {&f.write_reqs, &f.read_reqs})
      for (const auto& q : *rq) m = std::max(m, std::min(q.len, kMaxFramedRequest));
  return m;
}

TransferStats transfer_stats(const IoPlan& plan, uint64_t block_size, TransferMode mode) {
  TransferStats s;
  for (const auto& r : plan.ranks)
    for (const auto& f : r.files) {
      for_each_transfer(f, block_size, mode, [&](const Transfer& t) {
        s.transfers++;
        s.bytes += t.len;
        s.size_histogram[63 - __builtin_clzll(t.len)]++;
      });
      // Runs as the cursor forms them: contiguous extents in stream mode, each extent otherwise.
      uint64_t run = 0, end = 0;
      for (const auto& e : f.extents) {
        if (e.padded == 0) continue;
        if (mode == TransferMode::stream && run > 0 && e.offset == end) {
          run += e.padded;
        } else {
          s.runs++;
          run = e.padded;
        }
        end = e.offset + e.padded;
        s.largest_run = std::max(s.largest_run, run);
      }
    }
  return s;
}

nlohmann::json transfer_stats_json(const TransferStats& s, TransferMode mode) {
  nlohmann::json hist = nlohmann::json::object();
  for (auto [b, n] : s.size_histogram) hist["2^" + std::to_string(b)] = n;
  return {{"mode", transfer_mode_name(mode)},
          {"transfers", s.transfers},
          {"bytes", s.bytes},
          {"runs", s.runs},
          {"largest_run_bytes", s.largest_run},
          {"mean_transfer_bytes", s.transfers ? s.bytes / s.transfers : 0},
          {"transfer_size_histogram", hist}};
}

}  // namespace ckpt
