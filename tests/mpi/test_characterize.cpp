// `characterize` on 4 ranks with a small budget (issue 27): the search runs every stage that
// applies, every finished probe repeated at least min_reps times, the report has findings with
// intervals, a prediction model and a recommended config that was run and compared with its
// prediction; bad options are refused on every rank before anything is made.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <fstream>

#include "ckptbench/analysis/predict.hpp"
#include "ckptbench/base/error.hpp"
#include "ckptbench/cli/characterize.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/plan/config.hpp"
#include "support.hpp"

using namespace ckpt_test;
namespace fs = std::filesystem;

namespace {

CharacterizeOptions small_options(const std::string& target, const std::string& out) {
  CharacterizeOptions o;
  o.config_document = default_config();
  o.target = target;
  o.budget_s = 120;  // a cap (the budget bounds the command): ends on its own well before
  o.ci_width = 0.5;  // wide: few repetitions; the test checks the walk, not this VM's speed
  o.min_reps = 2;
  o.max_reps = 3;
  o.probe_bytes = 8 << 20;
  o.output = out;
  o.quiet = true;
  return o;
}

}  // namespace

TEST(Characterize, SearchFindingsModelAndCheckedRecommendation) {
  const std::string target = shared_target("char");
  SharedDir out;
  const std::string report = out.path + "/char.json";
  CharacterizeResult r;
  run_or_abort([&] { r = run_characterize(small_options(target, report), MPI_COMM_WORLD); });
  ASSERT_EQ(r.exit_code, 0) << r.error;
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    const json& d = r.doc;
    EXPECT_EQ(d["status"], "ok");
    const json& ch = d["characterization"];
    // Every probe that finished ran at least min_reps repetitions (the calibration one: 1), and
    // its samples are the report point's.
    int finished = 0;
    for (const auto& p : ch["probes"]) {
      if (p["status"] != "ok") continue;
      finished++;
      const auto n = p["save_GiBps"]["samples"].size();
      if (p["stage"] != "calibrate") {
        EXPECT_GE(n, 2u) << p.dump();
        EXPECT_LE(n, 3u) << p.dump();
      }
      const json& pt = d["points"][p["point"].get<int>() - 1];
      EXPECT_EQ(pt["repetitions"].size(), n);
      EXPECT_EQ(pt["probe"]["stage"], p["stage"]);
      EXPECT_DOUBLE_EQ(pt["repetitions"][0]["save"]["bandwidth_GiBps"].get<double>(),
                       p["save_GiBps"]["samples"][0].get<double>());
    }
    EXPECT_GE(finished, 10);
    // The stages that apply on one node of a local file system.
    const json& f = ch["findings"];
    for (const char* k : {"backend", "transfer_size", "queue_depth", "direct", "misalignment",
                          "ceilings", "metadata"})
      EXPECT_TRUE(f.contains(k)) << k << " missing: " << f.dump();
    EXPECT_EQ(f["stripes"]["status"], "not applicable");
    EXPECT_EQ(f["ranks_per_node"]["status"], "not applicable");
    // The transfer-size knee is a measured size no larger than the best.
    const uint64_t knee = f["transfer_size"]["smallest_within_5pct_bytes"];
    const uint64_t best = f["transfer_size"]["best_bytes"];
    EXPECT_LE(knee, best);
    bool knee_measured = false;
    for (const auto& c : f["transfer_size"]["curve"])
      knee_measured = knee_measured || c["x"].get<double>() == static_cast<double>(knee);
    EXPECT_TRUE(knee_measured);
    // Intervals: low <= mean <= high wherever there are two samples or more.
    const json& agg = f["ceilings"]["aggregate"]["save_GiBps"];
    EXPECT_LE(agg["low"].get<double>(), agg["mean"].get<double>());
    EXPECT_GE(agg["high"].get<double>(), agg["mean"].get<double>());
    EXPECT_EQ(f["ceilings"]["per_rank"]["ranks"], 1);
    EXPECT_GT(f["metadata"]["create_per_s"]["mean"].get<double>(), 0);
    // The model parses, and the recommendation was run and compared.
    ASSERT_TRUE(ch.contains("model")) << ch.value("model_missing", "");
    EXPECT_NO_THROW(parse_predict_model(ch["model"]));
    EXPECT_EQ(ch["model"]["measured_on"]["ranks"], 4);
    const json& rec = ch["recommendation"];
    ASSERT_TRUE(rec.contains("config")) << rec.dump();
    EXPECT_TRUE(fs::exists(rec["path"].get<std::string>()));
    EXPECT_NO_THROW(parse_config(rec["config"]));
    EXPECT_EQ(rec["config"]["transfer"], "stream");
    EXPECT_EQ(rec["config"]["backend"], ch["chosen"]["backend"]);
    const json& v = rec["validation"];
    ASSERT_EQ(v["status"], "ok") << v.dump();
    EXPECT_GT(v["predicted"]["save_s"].get<double>(), 0);
    EXPECT_GT(v["measured"]["save_s"].get<double>(), 0);
    EXPECT_NEAR(v["save_ratio"].get<double>(),
                v["measured"]["save_s"].get<double>() / v["predicted"]["save_s"].get<double>(),
                1e-9);
    // The reference: the chosen path's probe once after each check repetition; its drift is its
    // median time now over its median during the search, and the ratio is against the
    // prediction scaled by that.
    ASSERT_TRUE(v.contains("reference")) << v.dump();
    const json& rf = v["reference"];
    const json& rp = d["points"][rf["point"].get<size_t>() - 1];
    EXPECT_EQ(rp["probe"]["stage"], "validate");
    EXPECT_EQ(rp["probe"]["reference"], true);
    EXPECT_EQ(rp["repetitions"].size(),
              d["points"][v["point"].get<size_t>() - 1]["repetitions"].size());
    EXPECT_NEAR(rf["save_drift"].get<double>(),
                rf["now"]["save_s"].get<double>() / rf["search"]["save_s"].get<double>(), 1e-9);
    EXPECT_NEAR(rf["save_ratio"].get<double>(),
                v["measured"]["save_s"].get<double>() /
                    (v["predicted"]["save_s"].get<double>() * rf["save_drift"].get<double>()),
                1e-9);
    EXPECT_EQ(d["points"].back()["probe"]["stage"], "validate");
    // Nothing left: the run made the target, and removed it with the probes' directory.
    EXPECT_FALSE(fs::exists(target)) << target;
    fs::remove_all(target);
  }
}

TEST(Characterize, BadOptionsAreRefusedOnEveryRankBeforeAnyIo) {
  const std::string target = shared_target("char-bad");
  auto with = [&](auto change, const std::string& needle) {
    CharacterizeOptions o = small_options(target, "");
    change(o);
    expect_config_error([&] { run_characterize(o, MPI_COMM_WORLD); }, needle);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_FALSE(fs::exists(target)) << needle;
  };
  with([](CharacterizeOptions& o) { o.budget_s = 0; }, "--budget");
  with([](CharacterizeOptions& o) { o.ci_width = 1.5; }, "--ci-width");
  with([](CharacterizeOptions& o) { o.stages = {"backend", "warp"}; }, "unknown stage 'warp'");
  with([](CharacterizeOptions& o) { o.min_reps = 1; }, "--min-reps");
  with([](CharacterizeOptions& o) { o.config_document["layout"] = "nope"; }, "layout");
  with([](CharacterizeOptions& o) { o.target = "/usr"; }, "system directory");
}
