// How a file's extents become the transfers a backend issues (pure). DESIGN: docs/design.md
// "Transfers".
//
// `stream` cuts each contiguous byte run of a file (consecutive extents with no hole between them,
// across tensor boundaries, padding included) into block_size transfers, as a writer that
// serialises tensors back to back into a staging stream does (DataStates-LLM, the paper's
// aggregated writer). `per-tensor` cuts every extent on its own, as torch.save-style writers do
// (one write per tensor storage). Either way transfers come in file-offset order.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/base/enum_names.hpp"
#include "ckptbench/plan/layout.hpp"

namespace ckpt {

enum class TransferMode { stream, per_tensor };
const EnumNames<TransferMode>& transfer_mode_names();
std::string transfer_mode_name(TransferMode m);
// "stream" | "per-tensor"; throws ConfigError naming 'transfer' and the allowed values.
TransferMode parse_transfer_mode(const std::string& s);
// What a layout does when the config does not say: stream for aggregated-rank, aggregated-node and
// shared-file (one writer serialising into a file), per-tensor otherwise.
TransferMode default_transfer_mode(LayoutKind k);

// One transfer: [offset, offset + len) of a file; `extent` is the index (in FileSpec::extents) of
// the first extent it touches.
struct Transfer {
  uint64_t offset = 0;
  uint64_t len = 0;
  uint32_t extent = 0;
};

// Walks one file's transfers in order. A framed file (FileSpec::write_reqs/read_reqs) gives its
// requests instead, `reading` choosing the restore's, each cut at kMaxFramedRequest; with
// `framed` false its extents are cut as any file's.
class TransferCursor {
 public:
  TransferCursor(const FileSpec& f, uint64_t block_size, TransferMode mode, bool reading = false,
                 bool framed = true);
  // The next transfer; false when the file is done.
  bool next(Transfer& t);

 private:
  bool next_request(Transfer& t);

  const FileSpec* f_;
  const std::vector<Req>* reqs_ = nullptr;
  size_t ri_ = 0;       // next request
  uint64_t rdone_ = 0;  // bytes of it already given
  uint64_t bs_;
  TransferMode mode_;
  size_t ei_ = 0;         // extent holding cur_
  uint64_t cur_ = 0;      // next byte to transfer
  uint64_t run_end_ = 0;  // end of the current run (cur_ == run_end_: start the next run)
};

template <class Fn>
void for_each_transfer(const FileSpec& f, uint64_t block_size, TransferMode mode, Fn&& fn,
                       bool reading = false, bool framed = true) {
  TransferCursor c(f, block_size, mode, reading, framed);
  Transfer t;
  while (c.next(t)) fn(t);
}

// Calls fn(extent, pos, n, buf_off) for each piece of t inside one extent: n bytes at position pos
// of the extent (counted from its start, within e.padded), at buf_off in the transfer.
template <class Fn>
void for_each_piece(const FileSpec& f, const Transfer& t, Fn&& fn) {
  const uint64_t end = t.offset + t.len;
  for (size_t i = t.extent; i < f.extents.size(); i++) {
    const Extent& e = f.extents[i];
    if (e.offset >= end) break;
    const uint64_t lo = std::max(e.offset, t.offset), hi = std::min(e.offset + e.padded, end);
    if (lo < hi) fn(e, lo - e.offset, hi - lo, lo - t.offset);
  }
}

// What a point issues: transfers per phase summed over ranks, their size histogram and the largest
// contiguous run any rank transfers in one file.
struct TransferStats {
  uint64_t transfers = 0;
  uint64_t bytes = 0;
  uint64_t largest_run = 0;
  uint64_t runs = 0;
  std::map<int, uint64_t> size_histogram;  // floor(log2(transfer bytes)) -> count
};
TransferStats transfer_stats(const IoPlan& plan, uint64_t block_size, TransferMode mode);
// The largest transfer any file of `io` issues (framed requests may exceed block_size).
uint64_t largest_transfer(const RankIo& io, uint64_t block_size);
// {"mode", "transfers", "bytes", "runs", "largest_run_bytes", "mean_transfer_bytes",
//  "transfer_size_histogram": {"2^k": n}}
nlohmann::json transfer_stats_json(const TransferStats& s, TransferMode mode);

}  // namespace ckpt
