// The run's DataPath: the pattern for this rank's extents, MPI messages for node-aggregated ones,
// and the non-leader side of node aggregation.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <string>

#include "ckptbench/backend.hpp"

namespace ckpt {

// DataPath: the pattern for this rank's extents; MPI messages for node-aggregated ones (one per
// piece of a transfer that another rank owns).
class RankDataPath final : public DataPath {
 public:
  RankDataPath(const Pattern& p, int rank, MPI_Comm comm, bool verify, const std::string& dir)
      : p_(p), rank_(rank), comm_(comm), verify_(verify), dir_(dir) {}

  std::byte* produce(const FileSpec& f, const Transfer& t, Buffer& buf) override;
  void consume(const FileSpec& f, const Transfer& t, Buffer& buf) override;
  bool waits_on_peer(const FileSpec& f, const Transfer& t) const override;

  // Verifies n bytes at position pos of extent e (its payload part only, never the padding);
  // throws IoError naming the file and the offset of the first wrong byte.
  void check(uint32_t file_id, const std::string& path, const Extent& e, uint64_t pos,
             const std::byte* data, uint64_t n);
  void send(const std::byte* data, uint64_t len, int dest);
  void recv(std::byte* data, uint64_t len, int src, const std::string& path, uint64_t off);

  const Pattern& pattern() const { return p_; }
  uint64_t bytes_verified() const { return bytes_verified_; }
  // Rank-shift restore: this rank reads files another rank wrote and verifies them itself (the
  // pattern is a function of file and offset, as in IOR's -C), so nothing is sent back and no
  // rank waits for a peer inside the timed phase. Node aggregation (the only other case of an
  // extent whose source is another rank) is refused with rank-shift.
  void set_rank_shift(bool on) { shifted_ = on; }

 private:
  static constexpr int kTagData = 4711;
  bool remote(const Extent& e) const { return !shifted_ && e.source >= 0 && e.source != rank_; }

  const Pattern& p_;
  int rank_;
  MPI_Comm comm_;
  bool verify_;
  std::string dir_;
  uint64_t bytes_verified_ = 0;
  bool shifted_ = false;
};

// Non-leader side of node aggregation: stream this rank's pieces of the leader's files to the
// leader (save), or receive them back and verify (restore). The pieces are the leader's transfers
// cut at extent boundaries, so each message matches one the leader posts, in the same order.
// Staging memory: one pool buffer.
void remote_side(const IoPlan& plan, const RankIo& io, Phase phase, const PointConfig& pc,
                 Buffer& buf, RankDataPath& dp, PhaseRecorder& rec);

}  // namespace ckpt
