// The pure parts of save and restore in separate jobs (manifest.hpp, issue 20 in progress): the
// plan digest tells plans apart, a manifest entry round-trips and a damaged one is refused naming
// the key, the plan keys name the first difference, and a restore on any rank count reads every
// saved extent exactly once.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/manifest.hpp"
#include "ckptbench/plan/layout.hpp"

using namespace ckpt;
using json = nlohmann::json;

namespace {

IoPlan plan_of(LayoutKind kind, int world, int tp = 2, uint64_t align = 4096, int per_node = 0) {
  static const ModelDesc m = build_model(parse_model_config(json{{"name", "tiny"}}));
  Parallelism p;
  p.tp = tp;
  p.dp = 0;
  p.zero_stage = 1;
  PlanInput in;
  in.model = &m;
  in.par = resolve_parallelism(p, world, m);
  in.scale = 1.0;
  in.layout.kind = kind;
  in.layout.align = align;
  in.real_world = world;
  for (int r = 0; r < world; r++) in.node_of_rank.push_back(per_node > 0 ? r / per_node : 0);
  return make_plan(in);
}

// (file id, offset) -> length of every extent the plan transfers, over all ranks.
std::map<std::pair<uint32_t, uint64_t>, uint64_t> extents_of(const std::vector<RankIo>& ranks) {
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> m;
  for (const auto& r : ranks)
    for (const auto& f : r.files)
      for (const auto& e : f.extents) {
        auto [it, fresh] = m.emplace(std::make_pair(f.id, e.offset), e.padded);
        EXPECT_TRUE(fresh) << "extent of file " << f.id << " at " << e.offset << " read twice";
      }
  return m;
}

}  // namespace

TEST(Manifest, DigestSeparatesPlans) {
  const IoPlan a = plan_of(LayoutKind::file_per_shard, 4);
  EXPECT_EQ(plan_digest(a), plan_digest(plan_of(LayoutKind::file_per_shard, 4)));
  EXPECT_EQ(plan_digest(a).size(), 16u);
  EXPECT_NE(plan_digest(a), plan_digest(plan_of(LayoutKind::shared_file, 4)));
  EXPECT_NE(plan_digest(a), plan_digest(plan_of(LayoutKind::file_per_shard, 2)));
  EXPECT_NE(plan_digest(a), plan_digest(plan_of(LayoutKind::file_per_shard, 4, 4)));
  EXPECT_NE(plan_digest(a), plan_digest(plan_of(LayoutKind::file_per_shard, 4, 2, 8192)));
}

TEST(Manifest, SavedPointRoundTripsAndDamageIsNamed) {
  SavedPoint p;
  p.index = 2;
  p.params = {{"layout", "shared-file"}};
  p.config = {{"layout", "shared-file"}, {"block_size", 1048576}};
  p.dir = "point-002/rep-03";
  p.period = 1 << 20;
  p.seed = 0x5EED0001;
  p.align = 4096;
  p.world = 4;
  p.node_of_rank = {0, 0, 1, 1};
  p.digest = plan_digest(plan_of(LayoutKind::shared_file, 4));
  p.files = 1;
  p.file_bytes = 123456;
  const json j = saved_point_json(p);
  const SavedPoint q = saved_point_from_json(j, "manifest.points[1]");
  EXPECT_EQ(saved_point_json(q), j);

  auto refused = [&](const char* key, const json& value, const char* needle) {
    json d = j;
    d[key] = value;
    try {
      saved_point_from_json(d, "manifest.points[1]");
      ADD_FAILURE() << "accepted " << key << " = " << value.dump();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused("dir", "../elsewhere", "manifest.points[1].dir");
  refused("dir", "/etc", "manifest.points[1].dir");
  refused("node_of_rank", json::array({0, 1}), "node_of_rank");
  refused("pattern", json{{"period_bytes", 1000}, {"seed", 1}}, "period_bytes");
  refused("plan", json{{"digest", "xyz"}, {"files", 1}, {"file_bytes", 1}}, "digest");
  refused("world", 0, "world");
  refused("surprise", 1, "surprise");
}

TEST(Manifest, PlanKeyMismatchNamesTheFirstDifference) {
  const json saved = {{"model", {{"name", "llama2-7b"}, {"scale", 0.001}}},
                      {"parallelism", {{"tp", 2}, {"pp", 1}, {"dp", "auto"}}},
                      {"layout", "file-per-shard"},
                      {"block_size", 1048576},
                      {"backend", "posix"},
                      {"queue_depth", 1}};
  EXPECT_EQ(plan_key_mismatch(saved, saved), "");
  json now = saved;
  now["backend"] = "io_uring";  // the transport does not move a byte
  now["queue_depth"] = 16;
  EXPECT_EQ(plan_key_mismatch(saved, now), "");
  now["parallelism"]["tp"] = 4;
  EXPECT_EQ(plan_key_mismatch(saved, now), "'parallelism.tp' is 2 in the saved run but 4 here");
  now = saved;
  now["block_size"] = 4194304;
  EXPECT_NE(plan_key_mismatch(saved, now).find("'block_size'"), std::string::npos);
  now = saved;
  now["model"]["scale"] = 0.01;
  EXPECT_NE(plan_key_mismatch(saved, now).find("'model.scale'"), std::string::npos);
  now = saved;
  now["align"] = 8192;  // absent in the saved config
  EXPECT_EQ(plan_key_mismatch(saved, now), "'align' is (not set) in the saved run but 8192 here");
}

// A save on 4 ranks read back on 1, 2, 3, 4 and 8 ranks: every extent exactly once, nothing
// else, the files' readers consistent on every rank, and the bytes those of the saved plan.
TEST(Manifest, RegroupReadsEveryExtentOnceOnAnyRankCount) {
  for (LayoutKind kind : {LayoutKind::file_per_shard, LayoutKind::file_per_tensor,
                          LayoutKind::shared_file, LayoutKind::aggregated_node}) {
    const IoPlan saved = plan_of(kind, 4, 2, 4096, 2);
    const auto want = extents_of(saved.ranks);
    uint64_t want_bytes = 0;
    for (const auto& r : saved.ranks) want_bytes += r.transfer_bytes;
    for (int n : {1, 2, 3, 4, 8}) {
      SCOPED_TRACE(layout_name(kind) + " on " + std::to_string(n) + " ranks");
      const auto reads = regroup_reads(saved, n);
      ASSERT_EQ(reads.size(), static_cast<size_t>(n));
      EXPECT_EQ(extents_of(reads), want);
      uint64_t bytes = 0;
      std::map<uint32_t, std::set<int>> readers;
      for (const auto& r : reads) {
        bytes += r.transfer_bytes;
        EXPECT_EQ(r.leader, -1);
        EXPECT_TRUE(r.remote.empty());
        for (const auto& f : r.files) {
          readers[f.id].insert(r.rank);
          EXPECT_FALSE(f.create);
          for (size_t i = 1; i < f.extents.size(); i++)
            EXPECT_LT(f.extents[i - 1].offset, f.extents[i].offset);
        }
      }
      EXPECT_EQ(bytes, want_bytes);
      for (const auto& r : reads)
        for (const auto& f : r.files) {
          EXPECT_EQ(f.writers, std::vector<int>(readers[f.id].begin(), readers[f.id].end()));
          EXPECT_EQ(f.shared, f.writers.size() > 1);
        }
    }
  }
}
