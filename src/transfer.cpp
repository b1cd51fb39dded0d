#include "ckptbench/transfer.hpp"

#include <algorithm>

#include "ckptbench/error.hpp"

namespace ckpt {

std::string transfer_mode_name(TransferMode m) {
  return m == TransferMode::stream ? "stream" : "per-tensor";
}

TransferMode parse_transfer_mode(const std::string& s) {
  if (s == "stream") return TransferMode::stream;
  if (s == "per-tensor") return TransferMode::per_tensor;
  throw ConfigError("'transfer': unknown value '" + s + "' (allowed: stream, per-tensor)");
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

TransferCursor::TransferCursor(const FileSpec& f, uint64_t block_size, TransferMode mode)
    : f_(&f), bs_(std::max<uint64_t>(block_size, 1)), mode_(mode) {}

bool TransferCursor::next(Transfer& t) {
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
