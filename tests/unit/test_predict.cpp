// The prediction model (predict.hpp): parsing characterization.model with errors naming the key,
// and the predicted save/restore times of crafted and real plans: rank-, node- and
// aggregate-bound data, extrapolation to more nodes, creates, opens and syncs, the shared-file
// factor and data-path scaling.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ckptbench/analysis/predict.hpp"
#include "ckptbench/base/error.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"

using namespace ckpt;
using json = nlohmann::json;

namespace {

constexpr uint64_t GiB = uint64_t{1} << 30;

// A model measured on `nodes` nodes of `rpn` ranks with the default point's data path (posix,
// buffered, 1 MiB, queue depth 1).
json model_json(int nodes = 1, int rpn = 4) {
  json j = json::parse(R"({
    "version": 1,
    "measured_on": {"ranks": 4, "nodes": 1, "ranks_per_node": 4, "fs_type": "ext4",
                    "target": "/var/tmp/x", "commit": "abc1234"},
    "settings": {"backend": "posix", "block_size": 1048576, "queue_depth": 1, "direct": false},
    "save": {"rank_GiBps": 1, "node_GiBps": 2, "aggregate_GiBps": 2, "aggregate_saturated": false},
    "restore": {"rank_GiBps": 2, "node_GiBps": 4, "aggregate_GiBps": 4,
                "aggregate_saturated": false},
    "data_path": [],
    "layout_factor": {"shared-file": {"save": 0.5, "restore": 0.25}},
    "metadata": {"create_per_s": 1000, "open_per_s": 4000, "unlink_per_s": 2000},
    "sync_s_per_file": 0.01
  })");
  j["measured_on"]["ranks"] = nodes * rpn;
  j["measured_on"]["nodes"] = nodes;
  j["measured_on"]["ranks_per_node"] = rpn;
  return j;
}

PredictModel model_with(const json& patch, int nodes = 1, int rpn = 4) {
  json j = model_json(nodes, rpn);
  j.merge_patch(patch);
  return parse_predict_model(j);
}

// The default point: posix, buffered, 1 MiB, queue depth 1, sync end.
PointConfig point() {
  PointConfig pc;
  pc.backend = "posix";
  pc.block_size = 1 << 20;
  pc.queue_depth = 1;
  pc.direct = false;
  pc.sync = SyncPolicy::end;
  return pc;
}

// A plan in which rank r moves bytes[r] in `files` files of its own.
IoPlan crafted(const std::vector<uint64_t>& bytes, int files = 1) {
  IoPlan p;
  p.ranks.resize(bytes.size());
  for (size_t r = 0; r < bytes.size(); r++) {
    RankIo& ri = p.ranks[r];
    ri.rank = static_cast<int>(r);
    ri.transfer_bytes = bytes[r];
    for (int k = 0; k < files; k++) {
      FileSpec f;
      f.id = static_cast<uint32_t>(r * static_cast<size_t>(files) + static_cast<size_t>(k));
      f.path = std::to_string(f.id);
      f.path.insert(f.path.begin(), 'f');
      f.create = true;
      f.writers = RankList(std::vector<int>{static_cast<int>(r)});
      f.extents.push_back(Extent{0, bytes[r] / static_cast<uint64_t>(files),
                                 bytes[r] / static_cast<uint64_t>(files), static_cast<int32_t>(r),
                                 0, static_cast<int32_t>(r)});
      p.ranks[r].files.push_back(f);
    }
  }
  return p;
}

std::vector<int> nodes_of(int world, int rpn) {
  std::vector<int> v(static_cast<size_t>(world));
  for (int r = 0; r < world; r++) v[static_cast<size_t>(r)] = r / rpn;
  return v;
}

// A real plan of the tiny model.
struct Real {
  ModelDesc model;
  IoPlan plan;
  std::vector<int> node_of_rank;
  Real(LayoutKind kind, int world, int rpn, int tp = 1) {
    ModelConfig mc;
    mc.preset = "tiny";
    model = build_model(mc);
    Parallelism p;
    p.tp = tp;
    p.zero_stage = 1;
    PlanInput in;
    in.model = &model;
    in.par = resolve_parallelism(p, world, model);
    in.layout.kind = kind;
    in.layout.align = 4096;
    in.real_world = world;
    node_of_rank = nodes_of(world, rpn);
    in.node_of_rank = node_of_rank;
    plan = make_plan(in);
  }
};

bool has_note(const Prediction& p, const std::string& text) {
  for (const auto& n : p.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

std::string parse_error(const json& j) {
  try {
    parse_predict_model(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- parsing

TEST(PredictModel, ParsesEveryFieldAndRoundTrips) {
  const PredictModel m = parse_predict_model(model_json(2, 8));
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.measured_ranks, 16);
  EXPECT_EQ(m.measured_nodes, 2);
  EXPECT_EQ(m.measured_ranks_per_node, 8);
  EXPECT_EQ(m.fs_type, "ext4");
  EXPECT_EQ(m.backend, "posix");
  EXPECT_EQ(m.block_size, 1u << 20);
  EXPECT_EQ(m.queue_depth, 1);
  EXPECT_FALSE(m.direct);
  EXPECT_DOUBLE_EQ(m.save.rank_GiBps, 1);
  EXPECT_DOUBLE_EQ(m.restore.aggregate_GiBps, 4);
  EXPECT_DOUBLE_EQ(m.layout_factor.at("shared-file").restore, 0.25);
  EXPECT_DOUBLE_EQ(m.create_per_s, 1000);
  EXPECT_DOUBLE_EQ(m.unlink_per_s, 2000);
  EXPECT_DOUBLE_EQ(m.sync_s_per_file, 0.01);
  const PredictModel again = parse_predict_model(m.to_json());
  EXPECT_EQ(again.to_json(), m.to_json());
}

TEST(PredictModel, ErrorsNameTheKeyAndWhatIsAllowed) {
  const auto without = [](const std::string& section, const std::string& key) {
    json j = model_json();
    if (section.empty())
      j.erase(key);
    else
      j[section].erase(key);
    return parse_error(j);
  };
  const auto with = [](const json& patch) {
    json j = model_json();
    j.merge_patch(patch);
    return parse_error(j);
  };
  EXPECT_EQ(without("save", "rank_GiBps"),
            "'characterization.model.save.rank_GiBps' is missing: want a number > 0, GiB/s");
  EXPECT_EQ(without("", "sync_s_per_file"),
            "'characterization.model.sync_s_per_file' is missing: want a number >= 0, seconds");
  EXPECT_EQ(without("", "metadata"),
            "'characterization.model.metadata' is missing: want a JSON object");
  EXPECT_EQ(without("measured_on", "nodes"),
            "'characterization.model.measured_on.nodes' is missing: want an integer >= 1");
  EXPECT_EQ(with({{"restore", {{"node_GiBps", -2}}}}),
            "'characterization.model.restore.node_GiBps': -2 (integer) is not allowed: want a "
            "number > 0, GiB/s");
  EXPECT_EQ(with({{"save", {{"aggregate_GiBps", 0}}}}),
            "'characterization.model.save.aggregate_GiBps': 0 (integer) is not allowed: want a "
            "number > 0, GiB/s");
  EXPECT_EQ(with({{"metadata", {{"create_per_s", 0.0}}}}),
            "'characterization.model.metadata.create_per_s': 0.0 (number) is not allowed: want a "
            "number > 0, files per second");
  EXPECT_EQ(with({{"settings", {{"direct", "yes"}}}}),
            "'characterization.model.settings.direct': \"yes\" (string) is not allowed: want true "
            "or false");
  EXPECT_EQ(with({{"save", {{"rank_GiBps", "fast"}}}}),
            "'characterization.model.save.rank_GiBps': \"fast\" (string) is not allowed: want a "
            "number > 0, GiB/s");
  EXPECT_EQ(with({{"version", 2}}),
            "'characterization.model.version': 2 (integer) is not allowed: want 1 (the model "
            "version this ckptbench reads)");
  EXPECT_EQ(with({{"settings", {{"queue_depth", 0}}}}),
            "'characterization.model.settings.queue_depth': 0 (integer) is not allowed: want an "
            "integer >= 1");
  EXPECT_EQ(with({{"data_path", "none"}}),
            "'characterization.model.data_path': \"none\" (string) is not allowed: want a JSON "
            "array");
  EXPECT_EQ(with({{"layout_factor", {{"shared-file", {{"save", true}}}}}}),
            "'characterization.model.layout_factor.shared-file.save': true (boolean) is not "
            "allowed: want a number > 0, a bandwidth ratio");
  EXPECT_EQ(with({{"save", {{"aggregate_saturated", nullptr}}}}),
            "'characterization.model.save.aggregate_saturated' is missing: want true or false");
  {
    json j = model_json();
    j["data_path"] = json::array({{{"backend", "posix"},
                                   {"direct", false},
                                   {"block_size", 0},
                                   {"queue_depth", 1},
                                   {"save_GiBps", 1},
                                   {"restore_GiBps", 1}}});
    EXPECT_EQ(parse_error(j),
              "'characterization.model.data_path[0].block_size': invalid size 0 (must be greater "
              "than zero)");
  }
  EXPECT_EQ(parse_error(json::array()),
            "'characterization.model': want a JSON object, got array []");
  // The model inside a report.
  const auto from_report = [](const json& doc) {
    try {
      predict_model_from_report(doc);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(from_report(json{{"points", json::array()}}).find("no 'characterization' key"),
            std::string::npos);
  EXPECT_NE(from_report(json{{"characterization", json::object()}})
                .find("no 'characterization.model' key"),
            std::string::npos);
  EXPECT_EQ(from_report(json{{"characterization", {{"model", model_json()}}}}), "(no error)");
  // Keys the prediction does not know are ignored.
  json extra = model_json();
  extra["future_key"] = 1;
  extra["save"]["p99_GiBps"] = 3;
  EXPECT_EQ(parse_error(extra), "(no error)");
}

// ---- data bounds (crafted plans: exact bytes)

TEST(Predict, RankBound) {
  // 4 ranks on one node; rank 0 moves 2 GiB, the others 1 GiB. Save: rank 1 GiB/s -> 2 s, node
  // and aggregate 5 GiB / 10 GiB/s = 0.5 s. Restore: 0.5 s each, a tie: the rank bound is named.
  const PredictModel m =
      model_with({{"save", {{"node_GiBps", 10}, {"aggregate_GiBps", 10}}},
                  {"restore", {{"rank_GiBps", 4}, {"node_GiBps", 10}, {"aggregate_GiBps", 10}}}});
  const IoPlan plan = crafted({2 * GiB, GiB, GiB, GiB});
  PointConfig pc = point();
  pc.ranks_per_node = 4;
  const Prediction p = predict(m, pc, plan, nodes_of(4, 4));
  EXPECT_EQ(p.ranks, 4);
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.save.max_rank_bytes, 2 * GiB);
  EXPECT_EQ(p.save.max_node_bytes, 5 * GiB);
  EXPECT_EQ(p.save.total_bytes, 5 * GiB);
  EXPECT_DOUBLE_EQ(p.save.rank_s, 2.0);
  EXPECT_DOUBLE_EQ(p.save.node_s, 0.5);
  EXPECT_DOUBLE_EQ(p.save.aggregate_s, 0.5);
  EXPECT_EQ(p.save_bound, "rank");
  EXPECT_DOUBLE_EQ(p.data_save_s, 2.0);
  EXPECT_EQ(p.restore_bound, "rank");
  EXPECT_DOUBLE_EQ(p.data_restore_s, 0.5);
  // 4 files created at 1000/s, one sync per rank at 0.01 s, 4 opens at 4000/s.
  EXPECT_EQ(p.creates, 4u);
  EXPECT_EQ(p.opens, 4u);
  EXPECT_EQ(p.max_rank_syncs, 1u);
  EXPECT_DOUBLE_EQ(p.create_s, 0.004);
  EXPECT_DOUBLE_EQ(p.sync_s, 0.01);
  EXPECT_DOUBLE_EQ(p.open_s, 0.001);
  EXPECT_DOUBLE_EQ(p.save_s, 2.0 + 0.004 + 0.01);
  EXPECT_DOUBLE_EQ(p.restore_s, 0.5 + 0.001);
  EXPECT_FALSE(p.extrapolated);
  EXPECT_TRUE(p.notes.empty()) << p.notes.front();
  const json j = p.to_json();
  EXPECT_DOUBLE_EQ(j["save_s"].get<double>(), p.save_s);
  EXPECT_EQ(j["save_bound"], "rank");
  EXPECT_EQ(j["save"]["max_rank_bytes"], 2 * GiB);
  EXPECT_EQ(j["notes"], json::array());
}

TEST(Predict, FixedCostIsAddedOncePerPhase) {
  // The RankBound case with a fixed cost of 0.05 s per save and 0.02 s per restore: added once,
  // whatever the bytes; negative or non-numeric overheads are refused naming the key.
  const PredictModel m = model_with(
      {{"save", {{"node_GiBps", 10}, {"aggregate_GiBps", 10}, {"overhead_s", 0.05}}},
       {"restore",
        {{"rank_GiBps", 4}, {"node_GiBps", 10}, {"aggregate_GiBps", 10}, {"overhead_s", 0.02}}}});
  EXPECT_DOUBLE_EQ(m.save.overhead_s, 0.05);
  EXPECT_DOUBLE_EQ(m.to_json()["restore"]["overhead_s"].get<double>(), 0.02);
  PointConfig pc = point();
  pc.ranks_per_node = 4;
  const Prediction p = predict(m, pc, crafted({2 * GiB, GiB, GiB, GiB}), nodes_of(4, 4));
  EXPECT_DOUBLE_EQ(p.overhead_save_s, 0.05);
  EXPECT_DOUBLE_EQ(p.overhead_restore_s, 0.02);
  EXPECT_DOUBLE_EQ(p.save_s, 0.05 + 2.0 + 0.004 + 0.01);
  EXPECT_DOUBLE_EQ(p.restore_s, 0.02 + 0.5 + 0.001);
  EXPECT_DOUBLE_EQ(p.to_json()["overhead_save_s"].get<double>(), 0.05);
  // Absent: 0.
  EXPECT_DOUBLE_EQ(model_with(json::object()).save.overhead_s, 0);
  for (const json& bad : {json(-0.1), json("1s")}) {
    try {
      model_with({{"save", {{"overhead_s", bad}}}});
      ADD_FAILURE() << "accepted overhead_s " << bad.dump();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("'characterization.model.save.overhead_s'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Predict, NodeBound) {
  // Measured on 2 nodes x 2 ranks: rank 2, node 2, aggregate 8 GiB/s. The job: 2 nodes x 2 ranks,
  // 1 GiB each: rank 0.5 s, node 2 GiB / 2 = 1 s, aggregate 4 GiB / 8 = 0.5 s.
  const PredictModel m =
      model_with({{"save", {{"rank_GiBps", 2}, {"node_GiBps", 2}, {"aggregate_GiBps", 8}}}}, 2, 2);
  PointConfig pc = point();
  pc.ranks_per_node = 2;
  const Prediction p = predict(m, pc, crafted({GiB, GiB, GiB, GiB}), nodes_of(4, 2));
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.save.max_node_bytes, 2 * GiB);
  EXPECT_DOUBLE_EQ(p.save.rank_s, 0.5);
  EXPECT_DOUBLE_EQ(p.save.node_s, 1.0);
  EXPECT_DOUBLE_EQ(p.save.aggregate_s, 0.5);
  EXPECT_EQ(p.save_bound, "node");
  EXPECT_DOUBLE_EQ(p.data_save_s, 1.0);
  EXPECT_FALSE(p.extrapolated);
}

TEST(Predict, AggregateBound) {
  // Measured on 2 nodes, saturated at 4 GiB/s: the job's 4 GiB take 1 s; node 2 GiB / 4 = 0.5 s.
  const PredictModel m = model_with({{"save",
                                      {{"rank_GiBps", 4},
                                       {"node_GiBps", 4},
                                       {"aggregate_GiBps", 4},
                                       {"aggregate_saturated", true}}}},
                                    2, 2);
  PointConfig pc = point();
  pc.ranks_per_node = 2;
  const Prediction p = predict(m, pc, crafted({GiB, GiB, GiB, GiB}), nodes_of(4, 2));
  EXPECT_DOUBLE_EQ(p.save.rank_s, 0.25);
  EXPECT_DOUBLE_EQ(p.save.node_s, 0.5);
  EXPECT_DOUBLE_EQ(p.save.aggregate_s, 1.0);
  EXPECT_EQ(p.save_bound, "aggregate");
  EXPECT_DOUBLE_EQ(p.data_save_s, 1.0);
}

TEST(Predict, ExtrapolatesTheAggregateToMoreNodes) {
  // Measured on 1 node of 4 ranks: node 2 GiB/s, aggregate 1.8 (90 % efficiency). The job: 16
  // ranks, 4 per node (emulated), 1 GiB each -> 4 nodes: aggregate 2 * 4 * (1.8 / (1 * 2)) = 7.2
  // GiB/s, 16 GiB in 2.222 s; node 4 GiB / 2 = 2 s; rank 1 GiB / 1.9 s.
  const PredictModel m =
      model_with({{"save", {{"rank_GiBps", 1.9}, {"node_GiBps", 2}, {"aggregate_GiBps", 1.8}}}});
  PointConfig pc = point();
  pc.ranks_per_node = 4;
  const IoPlan plan = crafted(std::vector<uint64_t>(16, GiB));
  const Prediction p = predict(m, pc, plan, nodes_of(16, 4));
  EXPECT_EQ(p.nodes, 4);
  EXPECT_TRUE(p.extrapolated);
  EXPECT_DOUBLE_EQ(p.save.aggregate_GiBps, 2.0 * 4 * (1.8 / 2.0));
  EXPECT_DOUBLE_EQ(p.save.aggregate_s, 16.0 / (2.0 * 4 * (1.8 / 2.0)));
  EXPECT_DOUBLE_EQ(p.save.node_s, 2.0);
  EXPECT_DOUBLE_EQ(p.save.rank_s, 1.0 / 1.9);
  EXPECT_EQ(p.save_bound, "aggregate");
  EXPECT_TRUE(has_note(p, "save: aggregate extrapolated from 1 measured node(s) to 4"));
  EXPECT_TRUE(p.to_json()["extrapolated"].get<bool>());

  // Saturated: the measured aggregate is the file system's limit, not scaled.
  const PredictModel sat = model_with({{"save",
                                        {{"rank_GiBps", 1.9},
                                         {"node_GiBps", 2},
                                         {"aggregate_GiBps", 1.8},
                                         {"aggregate_saturated", true}}},
                                       {"restore", {{"aggregate_saturated", true}}}});
  const Prediction q = predict(sat, pc, plan, nodes_of(16, 4));
  EXPECT_FALSE(q.extrapolated);
  EXPECT_DOUBLE_EQ(q.save.aggregate_GiBps, 1.8);
  EXPECT_DOUBLE_EQ(q.data_save_s, 16.0 / 1.8);
  EXPECT_TRUE(has_note(q, "save: the aggregate saturated the file system at 1 measured node(s)"));

  // The same job without ranks_per_node: all 16 ranks on one node, not extrapolated, and said so.
  PointConfig one = point();
  const Prediction r = predict(m, one, plan, nodes_of(16, 16));
  EXPECT_EQ(r.nodes, 1);
  EXPECT_FALSE(r.extrapolated);
  EXPECT_DOUBLE_EQ(r.save.node_s, 16.0 / 2.0);
  EXPECT_DOUBLE_EQ(r.data_save_s, 16.0 / 1.8);  // the measured aggregate of the one node
  EXPECT_EQ(r.save_bound, "aggregate");
  EXPECT_TRUE(has_note(r, "ranks_per_node is not set: all 16 ranks are taken as one node"));
  EXPECT_FALSE(has_note(r, "ranks per node, more than"));  // said by the note above
  // 8 ranks per node set, 4 measured: the node ceiling as measured, noted.
  PointConfig eight = point();
  eight.ranks_per_node = 8;
  const Prediction e = predict(m, eight, plan, nodes_of(16, 8));
  EXPECT_EQ(e.nodes, 2);
  EXPECT_TRUE(has_note(e, "up to 8 ranks per node, more than the 4 the node ceilings were"));
  EXPECT_DOUBLE_EQ(e.save.node_s, 8.0 / 2.0);
  EXPECT_DOUBLE_EQ(e.save.aggregate_GiBps, 2.0 * 2 * (1.8 / 2.0));
}

TEST(Predict, ExtrapolationWithARealEmulatedPlan) {
  // The tiny model on 8 ranks, 2 per node (ranks_per_node emulation): 4 nodes, one measured.
  Real re(LayoutKind::aggregated_rank, 8, 2);
  const PredictModel m = model_with(
      {{"save", {{"rank_GiBps", 1}, {"node_GiBps", 2}, {"aggregate_GiBps", 1.5}}}}, 1, 2);
  PointConfig pc = point();
  pc.ranks_per_node = 2;
  const Prediction p = predict(m, pc, re.plan, re.node_of_rank);
  EXPECT_EQ(p.nodes, 4);
  EXPECT_TRUE(p.extrapolated);
  uint64_t max_rank = 0, total = 0, max_node = 0;
  for (int n = 0; n < 4; n++) {
    const uint64_t b = re.plan.ranks[static_cast<size_t>(2 * n)].transfer_bytes +
                       re.plan.ranks[static_cast<size_t>(2 * n + 1)].transfer_bytes;
    max_node = std::max(max_node, b);
  }
  for (const auto& r : re.plan.ranks) {
    max_rank = std::max(max_rank, r.transfer_bytes);
    total += r.transfer_bytes;
  }
  EXPECT_EQ(p.save.max_rank_bytes, max_rank);
  EXPECT_EQ(p.save.max_node_bytes, max_node);
  EXPECT_EQ(p.save.total_bytes, total);
  EXPECT_DOUBLE_EQ(p.save.aggregate_GiBps, 2.0 * 4 * (1.5 / 2.0));
  const double g = static_cast<double>(GiB);
  const double want =
      std::max({static_cast<double>(max_rank) / (1 * g), static_cast<double>(max_node) / (2 * g),
                static_cast<double>(total) / (6 * g)});
  EXPECT_DOUBLE_EQ(p.data_save_s, want);
}

// ---- metadata terms (real plans)

TEST(Predict, CreatesAndOpensFollowTheLayout) {
  const PredictModel m = model_with(json::object());
  Real per_rank(LayoutKind::aggregated_rank, 4, 4);
  Real per_tensor(LayoutKind::file_per_tensor, 4, 4);
  const Prediction a = predict(m, point(), per_rank.plan, per_rank.node_of_rank);
  const Prediction t = predict(m, point(), per_tensor.plan, per_tensor.node_of_rank);
  EXPECT_EQ(a.creates, 4u);
  EXPECT_EQ(a.opens, 4u);
  EXPECT_DOUBLE_EQ(a.create_s, 4.0 / 1000);
  EXPECT_DOUBLE_EQ(a.open_s, 4.0 / 4000);
  EXPECT_EQ(t.creates, per_tensor.plan.stats.files);
  EXPECT_GT(t.creates, 4 * a.creates);
  EXPECT_DOUBLE_EQ(t.create_s, static_cast<double>(per_tensor.plan.stats.files) / 1000);
  uint64_t opens = 0;
  for (const auto& r : per_tensor.plan.ranks) opens += r.files.size();
  EXPECT_EQ(t.opens, opens);
  EXPECT_DOUBLE_EQ(t.open_s, static_cast<double>(opens) / 4000);
  EXPECT_DOUBLE_EQ(t.save_s, t.data_save_s + t.create_s + t.sync_s);
  EXPECT_DOUBLE_EQ(t.restore_s, t.data_restore_s + t.open_s);
}

TEST(Predict, SyncNoneFileAndEnd) {
  Real per_tensor(LayoutKind::file_per_tensor, 4, 4);
  const PredictModel m = model_with(json::object());
  uint64_t most = 0;
  for (const auto& r : per_tensor.plan.ranks) most = std::max<uint64_t>(most, r.files.size());
  PointConfig pc = point();
  pc.sync = SyncPolicy::end;
  const Prediction end = predict(m, pc, per_tensor.plan, per_tensor.node_of_rank);
  EXPECT_EQ(end.max_rank_syncs, most);
  EXPECT_DOUBLE_EQ(end.sync_s, static_cast<double>(most) * 0.01);
  pc.sync = SyncPolicy::file;
  const Prediction file = predict(m, pc, per_tensor.plan, per_tensor.node_of_rank);
  EXPECT_EQ(file.max_rank_syncs, most);
  pc.sync = SyncPolicy::none;
  const Prediction none = predict(m, pc, per_tensor.plan, per_tensor.node_of_rank);
  EXPECT_EQ(none.max_rank_syncs, 0u);
  EXPECT_DOUBLE_EQ(none.sync_s, 0);
  EXPECT_DOUBLE_EQ(none.save_s, end.save_s - end.sync_s);
  EXPECT_TRUE(has_note(none, "sync none"));
  EXPECT_FALSE(has_note(end, "sync none"));
}

TEST(Predict, NodeAggregationCountsAtTheLeader) {
  Real agg(LayoutKind::aggregated_node, 4, 2);
  const PredictModel m = model_with(json::object());
  PointConfig pc = point();
  pc.ranks_per_node = 2;
  const Prediction p = predict(m, pc, agg.plan, agg.node_of_rank);
  EXPECT_EQ(agg.plan.ranks[1].transfer_bytes, 0u);
  EXPECT_EQ(p.save.max_rank_bytes,
            std::max(agg.plan.ranks[0].transfer_bytes, agg.plan.ranks[2].transfer_bytes));
  EXPECT_EQ(p.save.max_rank_bytes, p.save.max_node_bytes);  // the leader writes its node's bytes
  EXPECT_EQ(p.creates, 2u);
  EXPECT_EQ(p.opens, 2u);
  EXPECT_EQ(p.max_rank_syncs, 1u);
}

TEST(Predict, CommitRecordsAreReadByEveryRank) {
  Real dcp(LayoutKind::torch_dcp, 4, 4);
  ASSERT_TRUE(dcp.plan.commit);
  uint64_t record = 0;
  for (const auto& f : dcp.plan.ranks[1].files)
    if (f.role == FileRole::commit && !f.create)
      for (const auto& e : f.extents) record += e.padded;
  ASSERT_GT(record, 0u);
  const Prediction p = predict(model_with(json::object()), point(), dcp.plan, dcp.node_of_rank);
  EXPECT_EQ(p.restore.total_bytes, p.save.total_bytes + 3 * record);
  EXPECT_EQ(p.creates, dcp.plan.stats.files);
}

// ---- scaling

TEST(Predict, SharedFileFactor) {
  Real shared(LayoutKind::shared_file, 4, 4);
  const PredictModel m = model_with(json::object());
  const Prediction p = predict(m, point(), shared.plan, shared.node_of_rank);
  EXPECT_TRUE(p.shared_files);
  EXPECT_EQ(p.creates, 1u);
  EXPECT_EQ(p.opens, 4u);
  EXPECT_DOUBLE_EQ(p.save.layout_factor, 0.5);
  EXPECT_DOUBLE_EQ(p.restore.layout_factor, 0.25);
  EXPECT_DOUBLE_EQ(p.save.rank_GiBps, 0.5);
  EXPECT_DOUBLE_EQ(p.save.node_GiBps, 1.0);
  EXPECT_DOUBLE_EQ(p.restore.node_GiBps, 1.0);
  const double g = static_cast<double>(GiB);
  EXPECT_DOUBLE_EQ(p.save.rank_s, static_cast<double>(p.save.max_rank_bytes) / (0.5 * g));
  EXPECT_DOUBLE_EQ(p.data_save_s, std::max(p.save.rank_s, p.save.node_s));

  // Without the factor: as one file per rank, and a note.
  json lf = model_json();
  lf.erase("layout_factor");
  const Prediction q = predict(parse_predict_model(lf), point(), shared.plan, shared.node_of_rank);
  EXPECT_DOUBLE_EQ(q.save.layout_factor, 1);
  EXPECT_DOUBLE_EQ(q.save.rank_GiBps, 1);
  EXPECT_TRUE(has_note(q, "no layout_factor \"shared-file\""));

  // One file per rank: no factor.
  Real own(LayoutKind::aggregated_rank, 4, 4);
  const Prediction r = predict(m, point(), own.plan, own.node_of_rank);
  EXPECT_FALSE(r.shared_files);
  EXPECT_DOUBLE_EQ(r.save.layout_factor, 1);
}

TEST(Predict, DataPathScaling) {
  const json table = json::array({
      {{"backend", "posix"},
       {"direct", false},
       {"block_size", 1 << 20},
       {"queue_depth", 1},
       {"save_GiBps", 2},
       {"restore_GiBps", 4}},
      {{"backend", "posix"},
       {"direct", false},
       {"block_size", 4 << 20},
       {"queue_depth", 1},
       {"save_GiBps", 3},
       {"restore_GiBps", 5}},
      {{"backend", "posix"},
       {"direct", false},
       {"block_size", 4 << 20},
       {"queue_depth", 8},
       {"save_GiBps", 4},
       {"restore_GiBps", 6}},
      {{"backend", "io_uring"},
       {"direct", true},
       {"block_size", 4 << 20},
       {"queue_depth", 8},
       {"save_GiBps", 5},
       {"restore_GiBps", 8}},
  });
  const PredictModel m = model_with({{"data_path", table}});
  const IoPlan plan = crafted({GiB, GiB, GiB, GiB});
  const auto run = [&](const std::string& backend, bool direct, uint64_t bs, int qd) {
    PointConfig pc = point();
    pc.backend = backend;
    pc.direct = direct;
    pc.block_size = bs;
    pc.queue_depth = qd;
    pc.ranks_per_node = 4;
    return predict(m, pc, plan, nodes_of(4, 4));
  };
  // The model's own settings: no scaling.
  const Prediction base = run("posix", false, 1 << 20, 1);
  EXPECT_DOUBLE_EQ(base.save.path_factor, 1);
  EXPECT_TRUE(base.notes.empty());
  // An exact entry: 4 / 2 on save, 6 / 4 on restore, no note.
  const Prediction exact = run("posix", false, 4 << 20, 8);
  EXPECT_DOUBLE_EQ(exact.save.path_factor, 2.0);
  EXPECT_DOUBLE_EQ(exact.restore.path_factor, 1.5);
  EXPECT_DOUBLE_EQ(exact.save.rank_GiBps, 2.0);
  EXPECT_DOUBLE_EQ(exact.save.node_GiBps, 4.0);
  EXPECT_DOUBLE_EQ(exact.restore.node_GiBps, 6.0);
  EXPECT_DOUBLE_EQ(exact.data_save_s, 4.0 / 4.0);
  EXPECT_TRUE(exact.notes.empty()) << exact.notes.front();
  // 8 MiB, queue depth 4: nearest block size in log2 is 4 MiB; then queue depth 1 (|4-1| = 3)
  // before 8 (|4-8| = 4): 3 / 2 and 5 / 4.
  const Prediction near = run("posix", false, 8 << 20, 4);
  EXPECT_DOUBLE_EQ(near.save.path_factor, 1.5);
  EXPECT_DOUBLE_EQ(near.restore.path_factor, 1.25);
  EXPECT_DOUBLE_EQ(near.data_save_s, 4.0 / (2 * 1.5));
  EXPECT_TRUE(has_note(near,
                       "the point's data path (posix buffered, block 8.00 MiB, queue depth 4) was "
                       "not measured; nearest measured: posix buffered, block 4.00 MiB, queue "
                       "depth 1 (ceilings x1.5 save, x1.25 restore)"));
  // 2 MiB lies as near 1 MiB as 4 MiB in log2; at queue depth 8 the 4 MiB/8 entry is nearest.
  const Prediction tie = run("posix", false, 2 << 20, 8);
  EXPECT_DOUBLE_EQ(tie.save.path_factor, 2.0);
  // Another backend or direct: not measured, not scaled.
  const Prediction other = run("mpiio", false, 1 << 20, 1);
  EXPECT_DOUBLE_EQ(other.save.path_factor, 1);
  EXPECT_TRUE(has_note(other,
                       "the point's data path (mpiio buffered, block 1.00 MiB, queue depth "
                       "1) was not measured"));
  const Prediction direct = run("posix", true, 4 << 20, 8);
  EXPECT_DOUBLE_EQ(direct.save.path_factor, 1);
  EXPECT_TRUE(has_note(direct, "was not measured"));
}

TEST(Predict, PointNotesAndBadInput) {
  const PredictModel m = model_with({{"settings", {{"transfer", "stream"}}}});
  PointConfig pc = point();
  pc.transfer = TransferMode::per_tensor;
  pc.save_mode = SaveMode::async;
  pc.checkpoints = 3;
  pc.restore.reshard = true;
  pc.restore.method = RestoreMethod::mmap;
  const IoPlan plan = crafted({GiB});
  const Prediction p = predict(m, pc, plan, {0});
  EXPECT_TRUE(has_note(p, "measured with transfer stream, this point uses per-tensor"));
  EXPECT_TRUE(has_note(p, "save_mode async"));
  EXPECT_TRUE(has_note(p, "checkpoints 3"));
  EXPECT_TRUE(has_note(p, "resharded reads are not modelled"));
  EXPECT_TRUE(has_note(p, "restore.method mmap"));
  EXPECT_THROW(predict(m, pc, plan, {0, 0}), Error);
  // A plan that moves nothing.
  const Prediction z = predict(m, point(), crafted({0, 0}), {0, 0});
  EXPECT_EQ(z.save_bound, "none");
  EXPECT_DOUBLE_EQ(z.data_save_s, 0);
}
