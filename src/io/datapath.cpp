#include "ckptbench/io/datapath.hpp"

#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/fault.hpp"

namespace ckpt {

namespace {
// Waits inside a timed phase are normally short: test without sleeping for this long first.
constexpr double kDataSpinS = 0.05;

// The part of a text file's content [offset, offset + len) covers: {first byte, bytes}.
std::pair<uint64_t, uint64_t> text_range(const std::string& text, uint64_t offset, uint64_t len) {
  if (offset >= text.size()) return {0, 0};
  return {offset, std::min<uint64_t>(len, text.size() - offset)};
}
}  // namespace

void RankDataPath::begin_phase(Phase phase, const StallGuard* stall, uint64_t fail_at) {
  phase_ = phase;
  stall_ = stall;
  fail_at_ = fail_at;
  transfers_ = 0;
  sent_.clear();
  received_.clear();
}

void RankDataPath::injected_fault(const FileSpec& f, const Transfer& t) const {
  const bool save = phase_ == Phase::save;
  std::string m = "injected fault (";
  m += kFaultEnv;
  m += "): transfer " + std::to_string(transfers_) + (save ? ": write '" : ": read '");
  m += dir_ + "/" + f.path + "' offset " + std::to_string(t.offset) + " length ";
  m += std::to_string(t.len) + ": " + errno_text(save ? ENOSPC : EIO);
  throw IoError(m);
}

std::byte* RankDataPath::produce(const FileSpec& f, const Transfer& t, Buffer& buf) {
  if (fail_at_ != 0 && ++transfers_ == fail_at_) injected_fault(f, t);
  std::byte* p = stage_pattern(p_, buf, f.id, t.offset, t.len);
  if (!f.text.empty()) {
    // A tracker file: its text, not the pattern.
    const auto [lo, n] = text_range(f.text, t.offset, t.len);
    std::memcpy(p, f.text.data() + lo, n);
    buf.taint(static_cast<uint64_t>(p - buf.data), static_cast<uint64_t>(p - buf.data) + n);
  }
  for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
    if (!remote(e)) return;
    recv(p + at, n, e.source, f.path, e.offset + pos);
    buf.taint(static_cast<uint64_t>(p - buf.data) + at,
              static_cast<uint64_t>(p - buf.data) + at + n);
  });
  return p;
}

void RankDataPath::from_memory(const FileSpec& f, const Transfer& t) {
  if (fail_at_ != 0 && ++transfers_ == fail_at_) injected_fault(f, t);
}

void RankDataPath::consume(const FileSpec& f, const Transfer& t, Buffer& buf) {
  if (fail_at_ != 0 && ++transfers_ == fail_at_) injected_fault(f, t);
  buf.taint(0, t.len);
  for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
    if (remote(e))
      send(buf.data + at, n, e.source);
    else
      check(f.id, f.path, e, pos, buf.data + at, n, f.text);
  });
}

void RankDataPath::check(uint32_t file_id, const std::string& path, const Extent& e, uint64_t pos,
                         const std::byte* data, uint64_t n, const std::string& text) {
  if (!verify_) return;
  const uint64_t k = pos >= e.length ? 0 : std::min(n, e.length - pos);
  if (k == 0) return;
  if (defer_into_ != nullptr && defer_into_->holds(data) && (loaded_ == nullptr || e.shard >= 0)) {
    if (loaded_ != nullptr) data = loaded_->at(file_id, e.offset + pos);
    // Transfers of an extent complete in order: the next piece usually continues the last.
    if (!deferred_.empty()) {
      Deferred& d = deferred_.back();
      if (d.e == &e && d.pos + d.n == pos && d.data + d.n == data) {
        d.n += k;
        return;
      }
    }
    deferred_.push_back({file_id, &path, text.empty() ? nullptr : &text, &e, pos, k, data});
    return;
  }
  std::optional<uint64_t> bad;
  if (!text.empty()) {
    const auto [lo, m] = text_range(text, e.offset + pos, k);
    for (uint64_t i = 0; i < k && !bad; i++)
      if (i >= m || data[i] != static_cast<std::byte>(text[lo + i])) bad = i;
  } else {
    bad = p_.check({data, k}, file_id, e.offset + pos);
  }
  if (bad) {
    uint64_t off = e.offset + pos + *bad;
    throw IoError("verify failed: file '" + dir_ + "/" + path + "' byte offset " +
                  std::to_string(off) + " differs from what was written (extent at offset " +
                  std::to_string(e.offset) + ", " + std::to_string(e.length) + " bytes)");
  }
  bytes_verified_ += k;
}

void RankDataPath::run_deferred_checks() {
  defer_into_ = loaded_ = nullptr;  // deferring ends: check() verifies at once now
  std::vector<Deferred> todo;
  todo.swap(deferred_);
  static const std::string none;
  for (const Deferred& d : todo)
    check(d.file_id, *d.path, *d.e, d.pos, d.data, d.n, d.text != nullptr ? *d.text : none);
}

void RankDataPath::send(const std::byte* data, uint64_t len, int dest) {
  MPI_Request req;
  if (MPI_Isend(data, static_cast<int>(len), MPI_BYTE, dest, kTagData, comm_, &req) != MPI_SUCCESS)
    throw IoError("node aggregation: MPI_Isend of " + std::to_string(len) + " bytes to rank " +
                  std::to_string(dest) + " failed");
  // A receiver that fails drains what it still expects (abandon), so this completes.
  static const StallGuard off{0, {}};
  wait_guarded(req, comm_, stall_ != nullptr ? *stall_ : off,
               "for rank " + std::to_string(dest) + " to take " + std::to_string(len) +
                   " bytes (node aggregation)",
               kDataSpinS);
  sent_[dest]++;
}

void RankDataPath::recv(std::byte* data, uint64_t len, int src, const std::string& path,
                        uint64_t off) {
  Backoff b(kDataSpinS);
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    MPI_Improbe(src, kTagData, comm_, &flag, &msg, &st);
    if (flag) {
      int got = 0;
      MPI_Get_count(&st, MPI_BYTE, &got);
      if (static_cast<uint64_t>(got) != len) {
        std::vector<std::byte> scratch(static_cast<size_t>(got > 0 ? got : 1));
        MPI_Mrecv(scratch.data(), got, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        received_[src]++;
        throw IoError("node aggregation: expected " + std::to_string(len) + " bytes from rank " +
                      std::to_string(src) + " for '" + path + "' offset " + std::to_string(off) +
                      ", got " + std::to_string(got));
      }
      if (MPI_Mrecv(data, got, MPI_BYTE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        throw IoError("node aggregation: MPI_Mrecv of " + std::to_string(len) +
                      " bytes from rank " + std::to_string(src) + " failed");
      received_[src]++;
      return;
    }
    MPI_Iprobe(src, kTagLeft, comm_, &flag, MPI_STATUS_IGNORE);
    if (flag) {
      int who = src;
      MPI_Recv(&who, 1, MPI_INT, src, kTagLeft, comm_, MPI_STATUS_IGNORE);
      received_[src] = UINT64_MAX;  // nothing more comes from it: abandon does not wait for it
      throw PeerLeftError("node aggregation: rank " + std::to_string(src) +
                          " left the phase after an error of its own; stopped waiting for its " +
                          std::to_string(len) + " bytes for '" + dir_ + "/" + path + "' offset " +
                          std::to_string(off));
    }
    if (stall_ != nullptr && stall_->expired(b.waited_s(), rank_))
      stall_->fire(comm_, rank_, b.waited_s(),
                   "for rank " + std::to_string(src) + " to send " + std::to_string(len) +
                       " bytes of '" + dir_ + "/" + path + "' offset " + std::to_string(off) +
                       " (node aggregation)");
    b.pause();
  }
}

void RankDataPath::abandon(const IoPlan& plan, const RankIo& io, const PointConfig& pc) noexcept {
  if (shifted_) return;
  // Messages of this phase by peer: as a leader (pieces of its files that other ranks own) and as
  // a non-leader (its pieces of its leader's files). Save: a leader receives, a non-leader sends;
  // restore the other way round.
  std::map<int, uint64_t> as_leader, as_member;
  for (const auto& f : io.files)
    for_each_transfer(f, pc.block_size, pc.transfer, [&](const Transfer& t) {
      for_each_piece(f, t, [&](const Extent& e, uint64_t, uint64_t, uint64_t) {
        if (remote(e)) as_leader[e.source]++;
      });
    });
  if (io.leader >= 0 && io.leader != rank_ && !io.remote.empty()) {
    uint64_t n = 0;
    for (const auto& lf : plan.ranks[static_cast<size_t>(io.leader)].files) {
      bool mine = false;
      for (const auto& r : io.remote) mine |= r.file_id == lf.id;
      if (!mine) continue;
      for_each_transfer(lf, pc.block_size, pc.transfer, [&](const Transfer& t) {
        for_each_piece(lf, t, [&](const Extent& e, uint64_t, uint64_t, uint64_t) {
          if (e.source == rank_) n++;
        });
      });
    }
    if (n > 0) as_member[io.leader] = n;
  }
  const bool save = phase_ == Phase::save;
  const auto& to = save ? as_member : as_leader;    // peers waiting for this rank's data
  const auto& from = save ? as_leader : as_member;  // peers sending to this rank
  static const int me = rank_;  // static: outlives the freed request (the rank never changes)
  for (const auto& [peer, n] : to) {
    if (sent_[peer] >= n) continue;  // it has everything; it does not wait for this rank
    MPI_Request req;
    MPI_Isend(&me, 1, MPI_INT, peer, kTagLeft, comm_, &req);  // eager: completes locally
    MPI_Request_free(&req);
  }
  std::map<int, uint64_t> left;
  for (const auto& [peer, n] : from)
    if (received_[peer] < n) left[peer] = n - received_[peer];
  std::vector<std::byte> scratch;
  Backoff b(0.002, 10000);
  double last = now_s();
  while (!left.empty() && now_s() - last < 60) {
    for (auto it = left.begin(); it != left.end();) {
      int flag = 0;
      MPI_Message msg;
      MPI_Status st;
      MPI_Improbe(it->first, kTagData, comm_, &flag, &msg, &st);
      if (flag) {
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        scratch.resize(static_cast<size_t>(std::max(got, 1)));
        MPI_Mrecv(scratch.data(), got, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        last = now_s();
        b = Backoff(0.002, 10000);
        if (--it->second == 0) it = left.erase(it);
        continue;
      }
      MPI_Iprobe(it->first, kTagLeft, comm_, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        int who = 0;
        MPI_Recv(&who, 1, MPI_INT, it->first, kTagLeft, comm_, MPI_STATUS_IGNORE);
        it = left.erase(it);
        continue;
      }
      ++it;
    }
    b.pause();
  }
}

bool RankDataPath::waits_on_peer(const FileSpec& f, const Transfer& t) const {
  bool r = false;
  for_each_piece(f, t, [&](const Extent& e, uint64_t, uint64_t, uint64_t) { r |= remote(e); });
  return r;
}

void remote_side(const IoPlan& plan, const RankIo& io, Phase phase, const PointConfig& pc,
                 Buffer& buf, RankDataPath& dp, PhaseRecorder& rec) {
  if (io.leader < 0 || io.remote.empty()) return;
  double t0 = now_s();
  std::vector<uint32_t> ids;
  for (const auto& r : io.remote)
    if (ids.empty() || ids.back() != r.file_id) ids.push_back(r.file_id);
  for (uint32_t id : ids) {
    const FileSpec* f = nullptr;
    for (const auto& lf : plan.ranks[static_cast<size_t>(io.leader)].files)
      if (lf.id == id) f = &lf;
    if (f == nullptr)
      throw IoError("node aggregation: leader file not in the plan (internal error)");
    for_each_transfer(*f, pc.block_size, pc.transfer, [&](const Transfer& t) {
      for_each_piece(*f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t) {
        if (e.source != io.rank) return;
        if (phase == Phase::save) {
          dp.pattern().fill({buf.data, n}, f->id, e.offset + pos);
          buf.taint(0, n);
          dp.send(buf.data, n, io.leader);
        } else {
          dp.recv(buf.data, n, io.leader, f->path, e.offset + pos);
          buf.taint(0, n);
          dp.check(f->id, f->path, e, pos, buf.data, n);
        }
      });
    });
  }
  rec.add_time(Step::io, now_s() - t0);
}

}  // namespace ckpt
