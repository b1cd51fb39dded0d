#include "ckptbench/datapath.hpp"

#include "ckptbench/error.hpp"

namespace ckpt {

std::byte* RankDataPath::produce(const FileSpec& f, const Transfer& t, Buffer& buf) {
  std::byte* p = stage_pattern(p_, buf, f.id, t.offset, t.len);
  for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
    if (!remote(e)) return;
    recv(p + at, n, e.source, f.path, e.offset + pos);
    buf.taint(static_cast<uint64_t>(p - buf.data) + at,
              static_cast<uint64_t>(p - buf.data) + at + n);
  });
  return p;
}

void RankDataPath::consume(const FileSpec& f, const Transfer& t, Buffer& buf) {
  buf.taint(0, t.len);
  for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
    if (remote(e))
      send(buf.data + at, n, e.source);
    else
      check(f.id, f.path, e, pos, buf.data + at, n);
  });
}

void RankDataPath::check(uint32_t file_id, const std::string& path, const Extent& e, uint64_t pos,
                         const std::byte* data, uint64_t n) {
  if (!verify_) return;
  const uint64_t k = pos >= e.length ? 0 : std::min(n, e.length - pos);
  if (k == 0) return;
  auto bad = p_.check({data, k}, file_id, e.offset + pos);
  if (bad) {
    uint64_t off = e.offset + pos + *bad;
    throw IoError("verify failed: file '" + dir_ + "/" + path + "' byte offset " +
                  std::to_string(off) + " differs from what was written (extent at offset " +
                  std::to_string(e.offset) + ", " + std::to_string(e.length) + " bytes)");
  }
  bytes_verified_ += k;
}

void RankDataPath::send(const std::byte* data, uint64_t len, int dest) {
  if (MPI_Send(data, static_cast<int>(len), MPI_BYTE, dest, kTagData, comm_) != MPI_SUCCESS)
    throw IoError("node aggregation: MPI_Send of " + std::to_string(len) + " bytes to rank " +
                  std::to_string(dest) + " failed");
}

void RankDataPath::recv(std::byte* data, uint64_t len, int src, const std::string& path,
                        uint64_t off) {
  MPI_Status st;
  int rc = MPI_Recv(data, static_cast<int>(len), MPI_BYTE, src, kTagData, comm_, &st);
  int got = 0;
  MPI_Get_count(&st, MPI_BYTE, &got);
  if (rc != MPI_SUCCESS || static_cast<uint64_t>(got) != len)
    throw IoError("node aggregation: expected " + std::to_string(len) + " bytes from rank " +
                  std::to_string(src) + " for '" + path + "' offset " + std::to_string(off) +
                  ", got " + std::to_string(got));
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
