// The run's DataPath: the pattern for this rank's extents, MPI messages for node-aggregated ones,
// and the non-leader side of node aggregation.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/source.hpp"
#include "ckptbench/mpi/agreement.hpp"

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
  void from_memory(const FileSpec& f, const Transfer& t) override;

  // Verifies n bytes at position pos of extent e (its payload part only, never the padding);
  // throws IoError naming the file and the offset of the first wrong byte.
  // `text`: the file's literal content (FileSpec::text), checked instead of the pattern when not
  // empty.
  void check(uint32_t file_id, const std::string& path, const Extent& e, uint64_t pos,
             const std::byte* data, uint64_t n, const std::string& text = {});
  // Node-aggregation messages. Both wait with Backoff under the stall guard; recv throws
  // PeerLeftError when the sender left the phase after an error of its own (see abandon).
  void send(const std::byte* data, uint64_t len, int dest);
  void recv(std::byte* data, uint64_t len, int src, const std::string& path, uint64_t off);

  // Before each phase: forgets the previous phase's message counts; `stall` (may be null) guards
  // every wait for a peer; fail_at: the transfer (1-based) that fails on purpose
  // (CKPT_FAULT_INJECT "transfer=N"), 0 for none.
  void begin_phase(Phase phase, const StallGuard* stall, uint64_t fail_at);
  // This rank leaves the phase on an error. So that no peer waits out a bound for it: it tells
  // each peer still waiting for its data (save: its node leader; restore: the ranks its leader
  // side sends to) that nothing more comes, and receives and discards what its peers still send
  // it (save: a leader's senders; restore: a non-leader's leader), until they are done, tell it
  // they left too, or send nothing for 60 s.
  void abandon(const IoPlan& plan, const RankIo& io, const PointConfig& pc) noexcept;

  // verify "after": from here on, the checks of bytes that land in `landed` (a restore into the
  // rank's shard memory) are only recorded, coalesced per extent, and run by
  // run_deferred_checks() after the timed phase; bytes elsewhere (a commit record read through
  // a pool buffer that is reused) are still checked at once. With `loaded` (a framework that
  // copies each item into its resident state and frees the read buffer: load_in_place), a
  // tensor's bytes are checked where they were copied to, in `loaded`, and the rest (framing,
  // index) at once, before the buffer is freed.
  void defer_checks(const ShardMemory* landed, const ShardMemory* loaded = nullptr) {
    defer_into_ = landed;
    loaded_ = loaded;
    deferred_.clear();
  }
  bool deferring() const { return defer_into_ != nullptr; }
  // Stops deferring, then runs and forgets the recorded checks; throws IoError as check() does.
  void run_deferred_checks();

  const Pattern& pattern() const { return p_; }
  uint64_t bytes_verified() const { return bytes_verified_; }
  // Rank-shift restore: this rank reads files another rank wrote and verifies them itself (the
  // pattern is a function of file and offset, as in IOR's -C), so nothing is sent back and no
  // rank waits for a peer inside the timed phase. Node aggregation (the only other case of an
  // extent whose source is another rank) is refused with rank-shift.
  void set_rank_shift(bool on) { shifted_ = on; }

 private:
  static constexpr int kTagData = 4711;
  static constexpr int kTagLeft = 4712;  // "I left this phase after an error": one int, my rank
  bool remote(const Extent& e) const { return !shifted_ && e.source >= 0 && e.source != rank_; }
  void injected_fault(const FileSpec& f, const Transfer& t) const;

  const Pattern& p_;
  int rank_;
  MPI_Comm comm_;
  bool verify_;
  std::string dir_;
  uint64_t bytes_verified_ = 0;
  bool shifted_ = false;
  Phase phase_ = Phase::save;
  const StallGuard* stall_ = nullptr;
  uint64_t fail_at_ = 0, transfers_ = 0;
  std::map<int, uint64_t> sent_, received_;  // messages this phase, by peer
  struct Deferred {
    uint32_t file_id;
    const std::string* path;
    const std::string* text;
    const Extent* e;
    uint64_t pos, n;
    const std::byte* data;
  };
  const ShardMemory* defer_into_ = nullptr;
  const ShardMemory* loaded_ = nullptr;
  std::vector<Deferred> deferred_;
};

// Non-leader side of node aggregation: stream this rank's pieces of the leader's files to the
// leader (save), or receive them back and verify (restore). The pieces are the leader's transfers
// cut at extent boundaries, so each message matches one the leader posts, in the same order.
// Staging memory: one pool buffer.
void remote_side(const IoPlan& plan, const RankIo& io, Phase phase, const PointConfig& pc,
                 Buffer& buf, RankDataPath& dp, PhaseRecorder& rec);

}  // namespace ckpt
