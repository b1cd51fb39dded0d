// The phase driver's policy, seen through transports that move no byte
// (tests/support_transports.hpp): the requests it issues per file for `stream` and `per-tensor`,
// file-id order, queue depth, restore consumption in submission order, the sync policy's calls, the
// descriptor budget, whole files, the truncation check, commit records beside the transport, and
// what a failed request leaves behind: an error naming the file, the transport drained and
// abandoned, no descriptor.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/plan/transfer.hpp"
#include "support.hpp"
#include "support_transports.hpp"

using namespace ckpt;
using ckpt_test::Call;
using ckpt_test::FaultTransport;
using ckpt_test::NullTransport;
using Kind = Call::Kind;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

namespace {

// What the driver hands the data path, in order.
class RecordingPath final : public DataPath {
 public:
  struct Seen {
    uint32_t file;
    uint64_t offset, len;
    bool operator==(const Seen&) const = default;
  };
  std::vector<Seen> produced, consumed;
  std::byte* produce(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    produced.push_back({f.id, t.offset, t.len});
    return buf.data;
  }
  void consume(const FileSpec& f, const Transfer& t, Buffer&) override {
    consumed.push_back({f.id, t.offset, t.len});
  }
};

// This rank's files under a fresh directory: each added file is created by this rank, its
// extents (offset, length) unpadded.
struct PolicyPlan {
  ckpt_test::TmpDir dir{"driver-policy", ckpt_test::disk_tmp_base()};
  PointConfig cfg;
  IoPlan plan;
  RankIo io;
  std::optional<BufferPool> pool;

  explicit PolicyPlan(TransferMode mode = TransferMode::stream, SyncPolicy sync = SyncPolicy::none,
                      int queue_depth = 8) {
    cfg.backend = "null";
    cfg.block_size = 64 << 10;
    cfg.queue_depth = queue_depth;
    cfg.transfer = mode;
    cfg.sync = sync;
    cfg.direct = false;
    cfg.backend_options = nlohmann::json::object();
    pool.emplace(8, cfg.block_size, 4096);
  }
  size_t add_file(uint32_t id, const Ranges& extents) {
    FileSpec f;
    f.id = id;
    f.path = "f" + std::to_string(id) + ".bin";
    f.create = true;
    f.writers = {0};
    for (auto [off, len] : extents) {
      Extent e;
      e.offset = off;
      e.length = e.padded = len;
      e.source = 0;
      e.shard = 0;
      f.extents.push_back(e);
      f.size = std::max(f.size, off + len);
      io.transfer_bytes += len;
    }
    io.files.push_back(f);
    return io.files.size() - 1;
  }
  // `count` files of ids count..1 (plan order is not id order), each of two runs with a hole.
  void add_files(uint32_t count) {
    for (uint32_t id = count; id >= 1; id--) add_file(id, {{0, 100000}, {200000, 30000}});
  }
  PhaseRecorder run(Backend& be, Phase ph, DataPath& dp) {
    PhaseRecorder rec;
    ckpt_test::run_phase_with(be, cfg, ph, io, dir.path, *pool, dp, rec, &plan);
    return rec;
  }
  // Where the driver must send file i: TransferCursor's transfers (pure, tests/unit/test_transfer).
  Ranges transfers(size_t i) const {
    Ranges v;
    for_each_transfer(io.files[i], cfg.block_size, cfg.transfer,
                      [&](const Transfer& t) { v.emplace_back(t.offset, t.len); });
    return v;
  }
  // The indices of the files in id order.
  std::vector<size_t> id_order() const {
    std::vector<size_t> v(io.files.size());
    for (size_t i = 0; i < v.size(); i++) v[i] = i;
    std::sort(v.begin(), v.end(),
              [&](size_t a, size_t b) { return io.files[a].id < io.files[b].id; });
    return v;
  }
};

// Descriptors this process has open (the entries of /proc/self/fd, less the listing's own).
size_t open_descriptors() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') n++;
    ::closedir(d);
  }
  return n - 1;
}

// The largest number of transfers submitted and not yet reaped at once (NullTransport completes
// every queued transfer when reaped).
size_t most_in_flight(const NullTransport& t) {
  size_t now = 0, most = 0;
  for (const auto& c : t.calls) {
    if (c.kind == Kind::submit) most = std::max(most, ++now);
    if (c.kind == Kind::reap || c.kind == Kind::drain) now = 0;
  }
  return most;
}

// Three contiguous extents, a hole, a fourth: with 64 KiB blocks `stream` crosses the tensor
// boundaries of the first run and `per-tensor` cuts every extent on its own.
const Ranges kExtents = {{0, 100000}, {100000, 50000}, {150000, 20000}, {300000, 30000}};

// One file of kExtents through `mode` in phase `ph` (a restore reads what a save wrote first):
// the requests the transport got for it, and the phase's recorder.
std::pair<Ranges, PhaseRecorder> requests_of(TransferMode mode, Phase ph) {
  PolicyPlan s(mode);
  const size_t f = s.add_file(1, kExtents);
  NullTransport t;
  RecordingPath dp;
  if (ph == Phase::restore) s.run(t, Phase::save, dp);
  t.calls.clear();
  PhaseRecorder rec = s.run(t, ph, dp);
  return {t.submits_of(f), std::move(rec)};
}

TEST(DriverPolicy, StreamRequestsCrossTensorsWithinARun) {
  for (Phase ph : {Phase::save, Phase::restore}) {
    const auto [reqs, rec] = requests_of(TransferMode::stream, ph);
    EXPECT_EQ(reqs, (Ranges{{0, 65536}, {65536, 65536}, {131072, 38928}, {300000, 30000}}));
    EXPECT_EQ(rec.ops(), 4u);
    EXPECT_EQ(rec.bytes(), 200000u);
  }
}

TEST(DriverPolicy, PerTensorRequestsCutEachExtentOnItsOwn) {
  for (Phase ph : {Phase::save, Phase::restore}) {
    const auto [reqs, rec] = requests_of(TransferMode::per_tensor, ph);
    EXPECT_EQ(
        reqs,
        (Ranges{{0, 65536}, {65536, 34464}, {100000, 50000}, {150000, 20000}, {300000, 30000}}));
    EXPECT_EQ(rec.ops(), 5u);
    EXPECT_EQ(rec.bytes(), 200000u);
  }
}

TEST(DriverPolicy, FilesInIdOrderEachOpenedBeforeItsRequestsAndClosedAfter) {
  PolicyPlan s(TransferMode::per_tensor);
  s.add_files(5);
  NullTransport t;
  RecordingPath dp;
  const PhaseRecorder rec = s.run(t, Phase::save, dp);
  long prev_last = -1;
  for (size_t i : s.id_order()) {
    SCOPED_TRACE(s.io.files[i].path);
    EXPECT_EQ(t.submits_of(i), s.transfers(i));
    const long open = t.position(Kind::open, i), first = t.position(Kind::submit, i);
    const long last = t.position(Kind::submit, i, true), close = t.position(Kind::close, i);
    EXPECT_LT(open, first);
    EXPECT_LT(last, close);
    EXPECT_LT(prev_last, first);  // file-id order: this file's requests after the previous one's
    prev_last = last;
  }
  for (const auto& o : t.of(Kind::open)) EXPECT_GE(o.fd, 0);  // created by the driver, handed over
  EXPECT_EQ(t.of(Kind::open).size(), 5u);
  EXPECT_EQ(t.of(Kind::close).size(), 5u);
  EXPECT_EQ(rec.counter(Counter::files_created), 5u);
  EXPECT_EQ(rec.files(), 5u);
  // The data path is asked for the bytes in the order they are submitted.
  const auto subs = t.of(Kind::submit);
  ASSERT_EQ(dp.produced.size(), subs.size());
  for (size_t n = 0; n < dp.produced.size(); n++) {
    const Call& c = subs[n];
    EXPECT_EQ(dp.produced[n], (RecordingPath::Seen{s.io.files[c.file].id, c.offset, c.len}));
  }
}

TEST(DriverPolicy, InFlightIsTheLeastOfTransportDepthQueueDepthAndPool) {
  struct Case {
    unsigned depth;
    int queue_depth;
    size_t expect;
  };
  for (const Case& c : {Case{3, 8, 3}, Case{16, 2, 2}, Case{16, 32, 8}, Case{1, 8, 1}}) {
    SCOPED_TRACE(::testing::Message() << "depth " << c.depth << " queue_depth " << c.queue_depth);
    PolicyPlan s(TransferMode::per_tensor, SyncPolicy::none, c.queue_depth);
    s.add_files(4);
    TransportCaps caps;
    caps.depth = c.depth;
    NullTransport t(caps);
    RecordingPath dp;
    const PhaseRecorder rec = s.run(t, Phase::save, dp);
    EXPECT_EQ(most_in_flight(t), c.expect);
    EXPECT_EQ(rec.counter(Counter::max_in_flight), c.expect);
  }
}

TEST(DriverPolicy, RestoreConsumesInSubmissionOrderWhateverTheCompletionOrder) {
  PolicyPlan s(TransferMode::per_tensor);
  s.add_files(3);
  NullTransport t;
  RecordingPath dp;
  s.run(t, Phase::save, dp);
  t.calls.clear();
  t.newest_first = true;  // every reap completes the newest transfer only
  const PhaseRecorder rec = s.run(t, Phase::restore, dp);
  const auto subs = t.of(Kind::submit);
  ASSERT_EQ(dp.consumed.size(), subs.size());
  for (size_t n = 0; n < subs.size(); n++)
    EXPECT_EQ(dp.consumed[n],
              (RecordingPath::Seen{s.io.files[subs[n].file].id, subs[n].offset, subs[n].len}));
  EXPECT_EQ(rec.counter(Counter::files_created), 0u);
  for (const auto& o : t.of(Kind::open)) EXPECT_EQ(o.fd, -1);  // the transport opens them
  EXPECT_EQ(t.of(Kind::size).size(), 3u);  // each file's size checked against the plan
}

TEST(DriverPolicy, SyncFileSyncsEachFileAfterItsLastRequestBeforeItsClose) {
  PolicyPlan s(TransferMode::per_tensor, SyncPolicy::file);
  s.add_files(4);
  NullTransport t;
  RecordingPath dp;
  const PhaseRecorder rec = s.run(t, Phase::save, dp);
  EXPECT_EQ(t.of(Kind::sync).size(), 4u);
  EXPECT_TRUE(t.of(Kind::sync_all).empty());
  for (size_t i = 0; i < 4; i++) {
    const long sync = t.position(Kind::sync, i);
    EXPECT_LT(t.position(Kind::submit, i, true), sync);
    EXPECT_LT(sync, t.position(Kind::close, i));
    EXPECT_EQ(t.position(Kind::sync, i, true), sync);  // once
  }
  EXPECT_EQ(rec.sync_ops(), 4u);
}

TEST(DriverPolicy, SyncEndKeepsFilesOpenForOneSyncAllThenCloses) {
  PolicyPlan s(TransferMode::per_tensor, SyncPolicy::end);
  s.add_files(4);
  NullTransport t;
  RecordingPath dp;
  const PhaseRecorder rec = s.run(t, Phase::save, dp);
  EXPECT_TRUE(t.of(Kind::sync).empty());
  const auto all = t.of(Kind::sync_all);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].files, s.id_order());
  long sync_all = -1;
  for (size_t n = 0; n < t.calls.size(); n++)
    if (t.calls[n].kind == Kind::sync_all) sync_all = static_cast<long>(n);
  for (size_t i = 0; i < 4; i++) EXPECT_GT(t.position(Kind::close, i), sync_all);
  EXPECT_EQ(rec.sync_ops(), 4u);
  EXPECT_EQ(rec.counter(Counter::syncfs_calls), 0u);
}

TEST(DriverPolicy, SyncEndPastTheTransportsOpenFilesIsOneSyncfs) {
  PolicyPlan s(TransferMode::per_tensor, SyncPolicy::end);
  s.add_files(5);
  TransportCaps caps;
  caps.max_open = 2;  // the budget: 2 files open at once
  NullTransport t(caps);
  RecordingPath dp;
  const PhaseRecorder rec = s.run(t, Phase::save, dp);
  EXPECT_TRUE(t.of(Kind::sync).empty());
  EXPECT_TRUE(t.of(Kind::sync_all).empty());
  EXPECT_EQ(rec.counter(Counter::syncfs_calls), 1u);
  EXPECT_EQ(rec.sync_ops(), 1u);
  size_t open = 0, most = 0;
  for (const auto& c : t.calls) {
    if (c.kind == Kind::open) most = std::max(most, ++open);
    if (c.kind == Kind::close) open--;
  }
  EXPECT_EQ(most, 2u);
  EXPECT_EQ(t.of(Kind::close).size(), 5u);
}

TEST(DriverPolicy, RestoresNeverSync) {
  for (SyncPolicy sync : {SyncPolicy::file, SyncPolicy::end}) {
    PolicyPlan s(TransferMode::per_tensor, sync);
    s.add_files(3);
    NullTransport t;
    RecordingPath dp;
    s.run(t, Phase::save, dp);
    t.calls.clear();
    const PhaseRecorder rec = s.run(t, Phase::restore, dp);
    EXPECT_TRUE(t.of(Kind::sync).empty());
    EXPECT_TRUE(t.of(Kind::sync_all).empty());
    EXPECT_EQ(rec.sync_ops(), 0u);
  }
}

TEST(DriverPolicy, WholeFileTransportGetsEachFileOnceInIdOrder) {
  PolicyPlan s(TransferMode::per_tensor, SyncPolicy::file);
  s.add_files(3);
  TransportCaps caps;
  caps.whole_file = true;
  caps.collective_files = true;
  NullTransport t(caps);
  RecordingPath dp;
  const PhaseRecorder rec = s.run(t, Phase::save, dp);
  EXPECT_TRUE(t.of(Kind::submit).empty());
  const auto whole = t.of(Kind::transfer_file);
  ASSERT_EQ(whole.size(), 3u);
  const auto order = s.id_order();
  for (size_t n = 0; n < 3; n++) {
    const size_t i = order[n];
    EXPECT_EQ(whole[n].file, i);
    EXPECT_LT(t.position(Kind::open, i), t.position(Kind::transfer_file, i));
    EXPECT_LT(t.position(Kind::transfer_file, i), t.position(Kind::sync, i));
    EXPECT_LT(t.position(Kind::sync, i), t.position(Kind::close, i));
    if (n > 0) {
      EXPECT_GT(t.position(Kind::open, i), t.position(Kind::close, order[n - 1]));
    }
  }
  EXPECT_EQ(rec.counter(Counter::max_in_flight), 1u);
}

TEST(DriverPolicy, TruncatedFileIsRefusedBeforeAnyRequest) {
  PolicyPlan s(TransferMode::per_tensor);
  s.add_files(3);
  NullTransport t;
  RecordingPath dp;
  s.run(t, Phase::save, dp);
  t.calls.clear();
  const size_t first = s.id_order()[0];
  t.size_of = [&](size_t i) { return s.io.files[i].size - (i == first ? 1 : 0); };
  try {
    s.run(t, Phase::restore, dp);
    FAIL() << "no error";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(s.dir.path + "/" + s.io.files[first].path + "' is 229999 bytes"),
              std::string::npos)
        << m;
  }
  EXPECT_TRUE(t.of(Kind::submit).empty());
}

// A failed request: the phase fails with the transport's error (naming the file), no request
// follows it, the transport is drained, then abandoned, then ended, and no descriptor is left.
void expect_failed_phase(PolicyPlan& s, FaultTransport& t, Phase ph, size_t fail_at, bool at_reap,
                         const std::string& errno_text_part) {
  RecordingPath dp;
  // The file of the fail_at-th request, from the order the driver keeps.
  std::string file;
  size_t n = 0;
  for (size_t i : s.id_order())
    for (size_t k = 0; k < s.transfers(i).size(); k++)
      if (++n == fail_at) file = s.dir.path + "/" + s.io.files[i].path;
  ASSERT_FALSE(file.empty());
  const size_t fds = open_descriptors();
  try {
    s.run(t, ph, dp);
    FAIL() << "no error";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(file), std::string::npos) << m;
    EXPECT_NE(m.find(errno_text_part), std::string::npos) << m;
  }
  EXPECT_EQ(open_descriptors(), fds);
  // No request after the failure: a failing submit is the last one tried; a failing completion
  // is met in the last reap, after every submit.
  if (!at_reap) {
    EXPECT_EQ(t.of(Kind::submit).size(), fail_at - 1);
  } else {
    long last_reap = -1, last_submit = -1;
    for (size_t n = 0; n < t.calls.size(); n++) {
      if (t.calls[n].kind == Kind::reap) last_reap = static_cast<long>(n);
      if (t.calls[n].kind == Kind::submit) last_submit = static_cast<long>(n);
    }
    EXPECT_GE(t.of(Kind::submit).size(), fail_at);
    EXPECT_LT(last_submit, last_reap);
  }
  std::vector<Kind> tail;
  for (const auto& c : t.calls)
    if (c.kind == Kind::drain || c.kind == Kind::abandon || c.kind == Kind::end)
      tail.push_back(c.kind);
  EXPECT_EQ(tail, (std::vector<Kind>{Kind::drain, Kind::abandon, Kind::end}));
  EXPECT_EQ(t.calls.back().kind, Kind::end);
}

TEST(DriverPolicy, SaveFailingAtRequestNFailsThePhaseAndLeavesNoDescriptor) {
  for (bool at_reap : {false, true}) {
    SCOPED_TRACE(at_reap ? "fails when reaped" : "fails at submit");
    PolicyPlan s(TransferMode::per_tensor, SyncPolicy::end);
    s.add_files(4);
    FaultTransport t(5, ENOSPC, at_reap);
    expect_failed_phase(s, t, Phase::save, 5, at_reap, "No space left on device");
  }
}

TEST(DriverPolicy, RestoreFailingAtRequestNFailsThePhaseAndLeavesNoDescriptor) {
  for (bool at_reap : {false, true}) {
    SCOPED_TRACE(at_reap ? "fails when reaped" : "fails at submit");
    PolicyPlan s(TransferMode::per_tensor, SyncPolicy::none);
    s.add_files(4);
    NullTransport saver;
    RecordingPath dp;
    s.run(saver, Phase::save, dp);
    FaultTransport t(3, EIO, at_reap);
    expect_failed_phase(s, t, Phase::restore, 3, at_reap, "Input/output error");
  }
}

TEST(DriverPolicy, SharedFilesCreatedEarlyAreClosedWhenARequestFails) {
  // A plan with shared files: the driver creates every file of this rank before the barrier and
  // holds the descriptors until the transport opens each; a failure in the first file must close
  // the ones it still holds.
  PolicyPlan s(TransferMode::per_tensor, SyncPolicy::none);
  s.plan.any_shared = true;
  s.add_files(4);
  FaultTransport t(2, ENOSPC);
  expect_failed_phase(s, t, Phase::save, 2, false, "No space left on device");
  EXPECT_EQ(t.of(Kind::open).size(), 1u);  // the others were created, never handed over
  for (const auto& f : s.io.files) EXPECT_TRUE(std::filesystem::exists(s.dir.path + "/" + f.path));
}

TEST(DriverPolicy, CommitRecordsGoBesideTheTransportAfterTheDataFiles) {
  PolicyPlan s(TransferMode::per_tensor, SyncPolicy::file);
  s.plan.commit = true;
  s.add_files(2);
  const size_t meta = s.add_file(100, {{0, 5000}});
  s.io.files[meta].path = ".metadata";
  s.io.files[meta].role = FileRole::commit;
  NullTransport t;
  RecordingPath dp;
  const PhaseRecorder save = s.run(t, Phase::save, dp);
  for (const auto& c : t.calls) EXPECT_NE(c.file, meta);  // the transport never sees it
  EXPECT_EQ(dp.produced.back(), (RecordingPath::Seen{100, 0, 5000}));  // written last
  EXPECT_TRUE(std::filesystem::exists(s.dir.path + "/.metadata"));
  EXPECT_FALSE(std::filesystem::exists(s.dir.path + "/.metadata.tmp"));
  EXPECT_EQ(std::filesystem::file_size(s.dir.path + "/.metadata"), 5000u);
  EXPECT_EQ(save.files(), 3u);
  EXPECT_EQ(save.sync_ops(), 3u);  // sync "file" on the data files, the record's fsync
  t.calls.clear();
  s.io.files[meta].create = false;
  const PhaseRecorder restore = s.run(t, Phase::restore, dp);
  for (const auto& c : t.calls) EXPECT_NE(c.file, meta);
  EXPECT_EQ(dp.consumed.front(), (RecordingPath::Seen{100, 0, 5000}));  // read first
  EXPECT_EQ(restore.files(), 3u);
}

}  // namespace
