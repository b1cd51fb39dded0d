// Checkpoint lifecycle on 4 ranks (issue 19): asynchronous saves through host staging (whole and
// in windows, every backend), checkpoint cadence with retention and `latest`, restores at another
// parallelism and of the weights only (reading exactly the bytes the plan says), and the mmap
// restore. Every run verifies every byte it reads against the pattern the saving rank wrote.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <fstream>

#include "ckptbench/cli/options.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/run/run.hpp"
#include "support.hpp"

using namespace ckpt_test;
namespace fs = std::filesystem;

namespace {

// Llama 2 7B cut to 4 of its 32 layers: every tensor keeps its (scaled) size, 8x fewer of them
// (file-per-tensor makes hundreds of files, not thousands).
json base(double scale = 1.0 / 1024) {
  json c = json::parse(R"({"model": {"name": "llama2-7b", "layers": 4},
                           "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
                           "block_size": "1M", "cache": "fadvise", "repetitions": 1,
                           "verify": true})");
  c["model"]["scale"] = scale;
  return c;
}

uint64_t u64(const json& j) { return j.get<uint64_t>(); }

// payload + index bytes of the plan: what a restore at the saved parallelism verifies.
uint64_t all_bytes(const json& p) {
  return u64(p["plan"]["payload_bytes"]) + u64(p["plan"]["index_bytes"]);
}

}  // namespace

class AsyncSave : public ::testing::TestWithParam<std::tuple<const char*, const char*, bool>> {};

// The snapshot is what training waits for; the flush and its sync come after it, beside the
// compute phase. Staged in windows (1 MiB of staging for ~3.5 MiB per rank) the flush still writes
// every byte where the plan says (verified), and training stays blocked longer.
TEST_P(AsyncSave, BlockedBelowDurableAndEveryByteVerified) {
  auto [backend, layout, windows] = GetParam();
  CKPT_SKIP_UNLESS_BUILT(backend);
  json c = base();
  c["backend"] = backend;
  c["layout"] = layout;
  c["save_mode"] = "async";
  c["compute_s"] = 0.3;
  c["checkpoints"] = 2;
  if (std::string(backend) == "io_uring") {
    c["queue_depth"] = 8;
    c["direct"] = true;
    c["cache"] = "direct";
  }
  if (windows) c["staging_bytes"] = "1M";
  WorldRun run(c, "async");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
  if (world_rank() != 0) return;
  const json& p = run.result.doc["points"][0];
  const json& rep = p["repetitions"][0];
  const uint64_t index = std::string(backend) == "hdf5" ? 0 : u64(p["plan"]["index_bytes"]);
  EXPECT_EQ(u64(rep["bytes_verified"]), u64(p["plan"]["payload_bytes"]) + index);
  const json& l = rep["lifecycle"];
  EXPECT_EQ(l["save_mode"], "async");
  ASSERT_EQ(l["checkpoints"].size(), 2u);
  for (const auto& ck : l["checkpoints"]) {
    // Only the snapshot (and any wait for the flush) blocks training; the flush goes on after.
    EXPECT_LE(ck["snapshot_s"]["max"].get<double>(), ck["blocked_s"]["max"].get<double>());
    EXPECT_LT(ck["snapshot_s"]["max"].get<double>(), ck["durable_s"]["max"].get<double>());
    EXPECT_GT(ck["flush_s"]["max"].get<double>(), 0.0);
    EXPECT_TRUE(ck.contains("compute_slowdown"));
    EXPECT_GE(ck["compute_s"]["min"].get<double>(), 0.0);
  }
  const uint64_t staging = u64(l["staging"]["bytes"]);
  if (windows) {
    EXPECT_EQ(staging, 1u << 20);
    EXPECT_GT(u64(l["staging"]["staged_bytes"]), staging);
  } else {
    EXPECT_EQ(staging, u64(l["staging"]["staged_bytes"]));
  }
  EXPECT_GE(p["memory"]["staging_bytes"].get<double>(), static_cast<double>(staging));
  EXPECT_NEAR(l["compute"]["alone_s"]["mean"].get<double>(), 0.3, 0.1);
}

INSTANTIATE_TEST_SUITE_P(Backends, AsyncSave,
                         ::testing::Values(std::make_tuple("posix", "file-per-shard", false),
                                           std::make_tuple("posix", "file-per-tensor", true),
                                           std::make_tuple("io_uring", "aggregated-rank", true),
                                           std::make_tuple("mpiio", "shared-file", true),
                                           std::make_tuple("hdf5", "file-per-shard", true)));

// preset datastates alone: an asynchronous save whose snapshot copies the resident state into
// staging (inside the blocked time) and whose flush writes straight from staging; training is
// blocked for less than the checkpoint takes to become durable, and every byte verifies.
TEST(AsyncSave, DataStatesPresetBlocksOnlyForTheSnapshot) {
  CKPT_SKIP_UNLESS_BUILT("io_uring");
  json c = base(1.0 / 256);
  c["preset"] = "datastates";
  c.erase("cache");
  c.erase("block_size");
  WorldRun run(c, "datastates");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
  if (world_rank() != 0) return;
  const json& p = run.result.doc["points"][0];
  const json& rep = p["repetitions"][0];
  EXPECT_EQ(p["settings"]["source"]["mode"], "shard");
  EXPECT_EQ(p["settings"]["source"]["basis"], "preset datastates");
  EXPECT_FALSE(p["settings"]["preallocate"].get<bool>());
  // Every rank reads DeepSpeed's `latest` ("global_step1", a trailer) before the tag's files.
  EXPECT_EQ(u64(rep["bytes_verified"]),
            all_bytes(p) + static_cast<uint64_t>(world_size() - 1) * 12u);
  const json& l = rep["lifecycle"];
  EXPECT_EQ(l["save_mode"], "async");
  EXPECT_EQ(l["staging"]["snapshot_from"], "state");
  EXPECT_EQ(l["staging"]["flush_from"], "staging");
  const json& ck = l["checkpoints"][0];
  const double snap = ck["snapshot_s"]["max"].get<double>();
  EXPECT_GT(snap, 0.0);
  EXPECT_DOUBLE_EQ(ck["blocked_s"]["max"].get<double>(), snap);  // no earlier flush to wait for
  EXPECT_LT(ck["blocked_s"]["max"].get<double>(), ck["durable_s"]["max"].get<double>());
  EXPECT_GE(ck["durable_s"]["min"].get<double>(), ck["flush_s"]["min"].get<double>());
  EXPECT_GE(l["end_wait_s"]["max"].get<double>(), 0.0);
}

// 4 checkpoints, keep 2: global_step100 and 200 are deleted (each timed), 300 and 400 stay,
// `latest` names global_step400, and the restore reads global_step400 (verified).
TEST(Cadence, KeepsTheNewestAndRestoresLatest) {
  json c = base();
  c["checkpoints"] = 4;
  c["keep_last"] = 2;
  c["keep"] = true;
  c["layout"] = "file-per-tensor";
  WorldRun run(c, "cadence");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
  int fails = 0;
  if (world_rank() == 0) {
    const json& p = run.result.doc["points"][0];
    const json& rep = p["repetitions"][0];
    EXPECT_EQ(u64(rep["bytes_verified"]), all_bytes(p));
    const json& l = rep["lifecycle"];
    EXPECT_EQ(l["latest"], "global_step400");
    EXPECT_EQ(l["retention"]["deleted"], 2);
    EXPECT_EQ(l["retention"]["kept"], 2);
    const json& cks = l["checkpoints"];
    ASSERT_EQ(cks.size(), 4u);
    EXPECT_FALSE(cks[1].contains("deleted"));
    EXPECT_EQ(cks[2]["deleted"]["dir"], "global_step100");
    EXPECT_EQ(cks[3]["deleted"]["dir"], "global_step200");
    EXPECT_EQ(u64(cks[3]["deleted"]["files"]), u64(p["plan"]["files"]));
    EXPECT_GT(cks[3]["deleted"]["elapsed_s"].get<double>(), 0.0);
    // On disk (keep: true): the two newest step directories and `latest`.
    fs::path rep_dir;
    for (const auto& e : fs::recursive_directory_iterator(run.target))
      if (e.path().filename() == "latest") rep_dir = e.path().parent_path();
    ASSERT_FALSE(rep_dir.empty());
    std::ifstream in(rep_dir / "latest");
    std::string tag;
    in >> tag;
    EXPECT_EQ(tag, "global_step400");
    std::vector<std::string> dirs;
    for (const auto& e : fs::directory_iterator(rep_dir))
      if (e.is_directory()) dirs.push_back(e.path().filename());
    std::sort(dirs.begin(), dirs.end());
    EXPECT_EQ(dirs, (std::vector<std::string>{"global_step300", "global_step400"}));
    size_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(rep_dir / "global_step300"))
      files += e.is_regular_file();
    EXPECT_EQ(files, u64(p["plan"]["files"]));
    fails = ::testing::Test::HasFailure();
  }
  MPI_Bcast(&fails, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

struct FrameworkTree {
  const char* preset;
  std::vector<std::string> dirs, top_files;  // what the repetition directory holds
  const char* tracker;                       // the tracker file ("" none) and its text
  const char* text;
};

class FrameworkCadence : public ::testing::TestWithParam<FrameworkTree> {};

// Three saves with a framework preset leave what the framework leaves after three saves: its
// step directories side by side (no nesting), its tracker (if it has one) naming the last, each
// step directory holding the plan's files; the restore of the newest verifies.
TEST_P(FrameworkCadence, LeavesTheFrameworksTree) {
  const FrameworkTree& t = GetParam();
  if (std::string(t.preset) == "datastates") CKPT_SKIP_UNLESS_BUILT("io_uring");
  json c = base();
  c.erase("cache");
  c.erase("block_size");
  c["preset"] = t.preset;
  c["checkpoints"] = 3;
  c["keep"] = true;
  if (std::string(t.preset) == "mlperf-storage") c["model"]["sizing"] = "dlio";
  WorldRun run(c, std::string("cadence-") + t.preset);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
  int fails = 0;
  if (world_rank() == 0) {
    const json& p = run.result.doc["points"][0];
    const json& rep = p["repetitions"][0];
    EXPECT_GE(u64(rep["bytes_verified"]), all_bytes(p));
    EXPECT_EQ(rep["lifecycle"]["latest"], t.dirs.back());
    fs::path rep_dir;
    for (const auto& e : fs::recursive_directory_iterator(run.target))
      if (e.is_directory() && e.path().filename() == "rep-01") rep_dir = e.path();
    ASSERT_FALSE(rep_dir.empty());
    std::vector<std::string> dirs, top;
    for (const auto& e : fs::directory_iterator(rep_dir))
      (e.is_directory() ? dirs : top).push_back(e.path().filename());
    std::sort(dirs.begin(), dirs.end());
    std::sort(top.begin(), top.end());
    EXPECT_EQ(dirs, t.dirs);
    EXPECT_EQ(top, t.top_files);
    if (*t.tracker) {
      std::ifstream in(rep_dir / t.tracker);
      std::string text;
      std::getline(in, text);
      EXPECT_EQ(text, t.text);
    }
    // Each step directory: the same files, none nested in another step's name.
    std::vector<size_t> counts;
    for (const auto& d : t.dirs) {
      size_t files = 0;
      for (const auto& e : fs::recursive_directory_iterator(rep_dir / d)) {
        files += e.is_regular_file();
        for (const auto& other : t.dirs)
          EXPECT_EQ(e.path().string().find("/" + other + "/" + other), std::string::npos);
      }
      counts.push_back(files);
    }
    EXPECT_EQ(counts, std::vector<size_t>(t.dirs.size(), counts.front()));
    EXPECT_GT(counts.front(), 0u);
    fails = ::testing::Test::HasFailure();
  }
  MPI_Bcast(&fails, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

INSTANTIATE_TEST_SUITE_P(
    Presets, FrameworkCadence,
    ::testing::Values(
        FrameworkTree{"deepspeed",
                      {"global_step100", "global_step200", "global_step300"},
                      {"latest", "zero_to_fp32.py"},
                      "latest",
                      "global_step300"},
        FrameworkTree{"datastates",
                      {"global_step100", "global_step200", "global_step300"},
                      {"latest", "zero_to_fp32.py"},
                      "latest",
                      "global_step300"},
        FrameworkTree{"megatron",
                      {"iter_0000100", "iter_0000200", "iter_0000300"},
                      {"latest_checkpointed_iteration.txt"},
                      "latest_checkpointed_iteration.txt",
                      "300"},
        FrameworkTree{"megatron-dist",
                      {"iter_0000100", "iter_0000200", "iter_0000300"},
                      {"latest_checkpointed_iteration.txt"},
                      "latest_checkpointed_iteration.txt",
                      "300"},
        FrameworkTree{"torch-dcp", {"step-100", "step-200", "step-300"}, {}, "", ""},
        FrameworkTree{"torchsnapshot", {"step-100", "step-200", "step-300"}, {}, "", ""},
        FrameworkTree{"mlperf-storage",
                      {"global_epoch1_step100", "global_epoch1_step200", "global_epoch1_step300"},
                      {},
                      "",
                      ""}),
    [](const auto& info) {
      std::string n = info.param.preset;
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

class Reshard : public ::testing::TestWithParam<
                    std::tuple<const char*, const char*, const char*, const char*>> {};

// Save at one parallelism, restore at another: every restoring rank reads exactly the byte
// ranges its new shards need (the plan's needed_bytes, per rank and in total), every byte read is
// verified against what the saving rank wrote, and no byte is read that is not needed.
TEST_P(Reshard, ReadsExactlyWhatThePlanNeeds) {
  auto [saved, restored, layout, backend] = GetParam();
  CKPT_SKIP_UNLESS_BUILT(backend);
  json c = base();
  c["parallelism"] = json::parse(saved);
  c["restore"] = json::parse(restored);
  c["layout"] = layout;
  c["backend"] = backend;
  if (std::string(layout) == "file-per-tensor") c["chunk_size"] = "64K";
  WorldRun run(c, "reshard");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
  if (world_rank() != 0) return;
  const json& p = run.result.doc["points"][0];
  const json& rep = p["repetitions"][0];
  const json& rp = p["plan"]["restore"];
  const uint64_t need = u64(rp["needed_bytes"]);
  EXPECT_GT(need, 0u);
  EXPECT_EQ(u64(rep["restore"]["bytes"]), need);  // no byte more, no byte less
  EXPECT_EQ(u64(rep["restore"]["needed_bytes"]), need);
  EXPECT_EQ(u64(rep["bytes_verified"]), need);
  EXPECT_TRUE(rep["verified"].get<bool>());
  uint64_t sum = 0;
  for (const auto& r : rp["ranks"]) sum += u64(r["bytes"]);
  EXPECT_EQ(sum, need);
  // Per rank: what each rank read is what the plan gave it.
  for (size_t r = 0; r < rp["ranks"].size(); r++)
    EXPECT_EQ(rep["restore"]["rank_bytes"][r].get<double>(),
              static_cast<double>(u64(rp["ranks"][r]["bytes"])))
        << "rank " << r;
  const json restore = json::parse(restored);
  if (restore.value("weights_only", false)) {
    // No rank reads more than the checkpoint's weights (optimizer state is never touched).
    for (const auto& r : rp["ranks"])
      EXPECT_LE(u64(r["bytes"]), u64(p["plan"]["state_kind_bytes"]["weights"]));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Parallelisms, Reshard,
    ::testing::Values(
        // TP4 x PP1 -> TP2 x PP2 (the issue's check), posix and mpiio (collective reads of
        // files other ranks wrote), io_uring
        std::make_tuple(R"({"tp": 4, "pp": 1})", R"({"parallelism": {"tp": 2, "pp": 2}})",
                        "file-per-shard", "posix"),
        std::make_tuple(R"({"tp": 4, "pp": 1})", R"({"parallelism": {"tp": 2, "pp": 2}})",
                        "shared-file", "mpiio"),
        std::make_tuple(R"({"tp": 2, "pp": 2, "zero_stage": 1})",
                        R"({"parallelism": {"tp": 4, "pp": 1, "zero_stage": 0}})",
                        "aggregated-rank", "io_uring"),
        // emulated TP4 x PP2 (8 virtual ranks on 4) restored at TP2 x PP1 x DP2, ZeRO 3, chunk
        // files splitting shards
        std::make_tuple(R"({"tp": 4, "pp": 2, "emulate_world": 8})",
                        R"({"parallelism": {"tp": 2, "pp": 1, "zero_stage": 3}})",
                        "file-per-tensor", "posix"),
        // inference load: weights only, TP1 on every rank
        std::make_tuple(R"({"tp": 2, "pp": 2, "zero_stage": 1})",
                        R"({"parallelism": {"tp": 1, "pp": 1}, "weights_only": true})", "deepspeed",
                        "posix"),
        std::make_tuple(R"({"tp": 2, "pp": 1})", R"({"weights_only": true, "method": "mmap"})",
                        "torch-dcp", "posix")));

// restore.method mmap at the saved parallelism: every byte verified, through the mapping.
TEST(MmapRestore, VerifiesEveryByte) {
  for (const char* layout : {"file-per-shard", "aggregated-node"}) {
    json c = base();
    c["layout"] = layout;
    c["ranks_per_node"] = 2;
    c["restore"] = {{"method", "mmap"}};
    WorldRun run(c, "mmap");
    ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
    if (world_rank() != 0) continue;
    const json& p = run.result.doc["points"][0];
    const json& rep = p["repetitions"][0];
    EXPECT_EQ(rep["restore"]["method"], "mmap");
    EXPECT_EQ(u64(rep["bytes_verified"]), all_bytes(p)) << layout;
  }
}

TEST(LifecycleRefusals, ClearErrorsBeforeAnyIo) {
  json c = base();
  c["restore"] = {{"parallelism", {{"tp", 2}}}};
  c["direct"] = true;
  expect_config_error([&] { parse_config(c); }, "restore.parallelism");
  c["direct"] = false;
  c["backend"] = "hdf5";
  if (backend_not_built("hdf5").empty())
    expect_config_error([&] { parse_config(c); }, "HDF5 places each dataset");
  json a = base();
  a["save_mode"] = "async";
  a["layout"] = "aggregated-node";
  expect_config_error([&] { parse_config(a); }, "aggregated-node");
  a["layout"] = "file-per-shard";
  a["staging_bytes"] = "4K";
  expect_config_error([&] { parse_config(a); }, "staging_bytes");
  json k = base();
  k["checkpoints"] = 0;
  expect_config_error([&] { parse_config(k); }, "checkpoints");
  json r = base();
  r["restore"] = {{"method", "pread"}};
  expect_config_error([&] { parse_config(r); }, "restore.method");
  // A restore parallelism the model cannot have is refused by the planner (before any I/O),
  // naming restore.parallelism.
  json t = base();
  t["restore"] = {{"parallelism", {{"tp", 3}}}};
  WorldRun run(t, "refuse");
  EXPECT_EQ(run.result.exit_code, 2);
  EXPECT_NE(run.result.error.find("restore.parallelism"), std::string::npos) << run.result.error;
}
