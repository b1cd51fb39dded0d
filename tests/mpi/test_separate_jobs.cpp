// Save and restore in separate jobs (issue 20): a --phases save job on 4 ranks keeps its files
// and a manifest; --phases restore jobs on 1, 2 and 3 ranks (sub-communicators, as later jobs of
// another size) read every saved byte back and verify it; a truncated file, a damaged manifest
// and a config that would not reproduce the plan are refused with exit 2 before any timed I/O,
// and the saved run is never removed by a restore.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

#include "ckptbench/cli/options.hpp"
#include "ckptbench/io/manifest.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/run/run.hpp"
#include "support.hpp"

using namespace ckpt_test;
namespace fs = std::filesystem;

namespace {

// Llama 2 7B with 4 of its 32 layers: tensors of full (scaled) size, 8x fewer of them, so the
// file-per-tensor jobs make hundreds of files, not thousands.
json config(const char* layout, const char* backend) {
  json c = json::parse(R"({"model": {"name": "llama2-7b", "scale": 0.0005, "layers": 4},
                           "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
                           "block_size": "1M", "cache": "fadvise", "repetitions": 2,
                           "verify": true})");
  c["layout"] = layout;
  c["backend"] = backend;
  return c;
}

// A restore of run directory `from` by the first n world ranks; the result on those ranks.
RunResult restore_on(int n, const json& c, const std::string& from) {
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < n ? 0 : MPI_UNDEFINED, world_rank(), &sub);
  RunResult r;
  if (sub != MPI_COMM_NULL) {
    RunOptions o;
    o.quiet = true;
    o.phases = Phases::restore;
    o.from_dir = from;
    o.config_document = c;
    r = run_benchmark(parse_config(c), o, sub);
    MPI_Comm_free(&sub);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return r;
}

// A --phases save job of config c on every world rank, under target.
RunResult save_job(const json& c, const std::string& target) {
  RunOptions so;
  so.quiet = true;
  so.phases = Phases::save;
  so.target_override = target;
  so.config_document = c;
  return run_benchmark(parse_config(c), so, MPI_COMM_WORLD);
}

}  // namespace

class SeparateJobs : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(SeparateJobs, SaveJobThenRestoreJobsOfOtherSizes) {
  auto [layout, backend] = GetParam();
  CKPT_SKIP_UNLESS_BUILT(backend);
  const json c = config(layout, backend);
  const std::string target = shared_target("sep");
  const RunResult s = save_job(c, target);
  ASSERT_EQ(s.exit_code, 0) << s.error;
  const std::string run_dir =
      bcast_from_root(world_rank() == 0 ? s.doc["environment"]["run_dir"].get<std::string>() : "");
  uint64_t want = 0;
  if (world_rank() == 0) {
    const json& p = s.doc["points"][0];
    EXPECT_EQ(s.doc["phases"], "save");
    EXPECT_EQ(p["repetitions"].size(), 2u);
    EXPECT_FALSE(p["repetitions"][0].contains("restore"));
    EXPECT_TRUE(fs::exists(run_dir + "/" + kManifestName));
    // Only the newest repetition's files are kept.
    EXPECT_FALSE(fs::exists(run_dir + "/point-001/rep-01"));
    EXPECT_TRUE(fs::exists(run_dir + "/point-001/rep-02"));
    want = p["plan"]["payload_bytes"].get<uint64_t>() +
           (std::string(backend) == "hdf5" ? 0 : p["plan"]["index_bytes"].get<uint64_t>());
  }
  MPI_Bcast(&want, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  for (int n : {1, 2, 3}) {
    SCOPED_TRACE("restore on " + std::to_string(n) + " ranks");
    const RunResult r = restore_on(n, c, run_dir);
    if (world_rank() != 0) continue;
    ASSERT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.doc["phases"], "restore");
    EXPECT_EQ(r.doc["restored_from"]["saved_world"], 4);
    EXPECT_EQ(r.doc["environment"]["ranks"], n);
    for (const auto& rep : r.doc["points"][0]["repetitions"]) {
      EXPECT_FALSE(rep.contains("save"));
      EXPECT_EQ(rep["bytes_verified"].get<uint64_t>(), want);
    }
  }
  // Refusals: exit 2, before any timed I/O, the saved run left as it was.
  if (std::string(backend) != "hdf5") {
    std::string victim;
    if (world_rank() == 0)
      for (const auto& e : fs::recursive_directory_iterator(run_dir + "/point-001/rep-02"))
        if (e.is_regular_file()) victim = e.path();
    victim = bcast_from_root(victim);
    uint64_t size = 0;
    if (world_rank() == 0) {
      size = fs::file_size(victim);
      fs::resize_file(victim, size - 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const RunResult t = restore_on(4, c, run_dir);
    if (world_rank() == 0) {
      EXPECT_EQ(t.exit_code, 2);
      EXPECT_NE(t.error.find("truncated or changed since the save"), std::string::npos) << t.error;
      EXPECT_NE(t.error.find(victim), std::string::npos) << t.error;
      fs::resize_file(victim, size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  json other = c;
  other["parallelism"]["tp"] = 4;
  const RunResult m = restore_on(4, other, run_dir);
  if (world_rank() == 0) {
    EXPECT_EQ(m.exit_code, 2);
    EXPECT_NE(m.error.find("'parallelism.tp' is 2 in the saved run but 4 here"), std::string::npos)
        << m.error;
  }
  if (world_rank() == 0) {
    std::ifstream in(run_dir + "/" + kManifestName);
    json man = json::parse(in);
    man["points"][0]["plan"]["digest"] = "0123456789abcdef";
    std::ofstream(run_dir + "/" + kManifestName) << man.dump();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const RunResult d = restore_on(4, c, run_dir);
  if (world_rank() == 0) {
    EXPECT_EQ(d.exit_code, 2);
    EXPECT_NE(d.error.find("is not the saved one"), std::string::npos) << d.error;
    EXPECT_TRUE(fs::exists(run_dir + "/point-001/rep-02"));  // never removed by a restore
    fs::remove_all(target);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

INSTANTIATE_TEST_SUITE_P(Layouts, SeparateJobs,
                         ::testing::Values(std::make_tuple("file-per-shard", "posix"),
                                           std::make_tuple("shared-file", "mpiio"),
                                           std::make_tuple("aggregated-node", "io_uring"),
                                           std::make_tuple("file-per-tensor", "hdf5")));

// A save job of three checkpoints with a framework preset keeps the framework's tree (Megatron-LM
// torch_dist: iter_0000100/ ... iter_0000300/ and the tracker); a restore job reads the newest
// and verifies every byte, the trackers' text included (metadata.json, the tracker).
TEST(SeparateJobs, CadenceOfAFrameworkPresetRestoredInAnotherJob) {
  json c = config("megatron-dist", "posix");
  c.erase("layout");
  c.erase("block_size");
  c["preset"] = "megatron-dist";
  c["checkpoints"] = 3;
  c["repetitions"] = 1;
  const std::string target = shared_target("sep-cadence");
  const RunResult s = save_job(c, target);
  ASSERT_EQ(s.exit_code, 0) << s.error;
  const std::string run_dir =
      bcast_from_root(world_rank() == 0 ? s.doc["environment"]["run_dir"].get<std::string>() : "");
  const RunResult r = restore_on(2, c, run_dir);
  if (world_rank() == 0) {
    ASSERT_EQ(r.exit_code, 0) << r.error;
    const std::string rep = run_dir + "/point-001/rep-01";
    for (const char* d : {"iter_0000100", "iter_0000200", "iter_0000300"})
      EXPECT_TRUE(fs::is_directory(rep + "/" + d)) << d;
    std::ifstream in(rep + "/latest_checkpointed_iteration.txt");
    std::string it;
    in >> it;
    EXPECT_EQ(it, "300");
    const json& rr = r.doc["points"][0]["repetitions"][0];
    EXPECT_GT(rr["bytes_verified"].get<uint64_t>(),
              s.doc["points"][0]["plan"]["payload_bytes"].get<uint64_t>());
    fs::remove_all(target);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(SeparateJobsRefusals, PhaseOptions) {
  const json c = config("file-per-shard", "posix");
  RunOptions o;
  o.quiet = true;
  o.phases = Phases::restore;
  RunResult r = run_benchmark(parse_config(c), o, MPI_COMM_WORLD);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.error.find("--from"), std::string::npos) << r.error;
  o.from_dir = "/var/tmp/ckpt-no-such-run";
  r = run_benchmark(parse_config(c), o, MPI_COMM_WORLD);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.error.find(kManifestName), std::string::npos) << r.error;
  o.phases = Phases::both;
  r = run_benchmark(parse_config(c), o, MPI_COMM_WORLD);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.error.find("--from applies to --phases restore only"), std::string::npos) << r.error;
}

// --read-dir: a Hugging Face-like folder of safetensors shards with their index (made here, with a
// nested file and a symbolic link that must not be followed) read by 3 ranks: as the loader does
// (every rank reads the index and every shard; posix) and by size (every regular file once;
// io_uring); nothing verified (the report says so), and the folder byte-identical with the same
// modification times afterwards.
TEST(ReadDir, ReadsEveryFileAndLeavesTheDirectoryUntouched) {
  std::string dir;
  if (world_rank() == 0) {
    dir = make_temp_dir("/var/tmp/ckpt-test-readdir");
    uint64_t seed = 1;
    for (int i = 1; i <= 3; i++) {
      std::ofstream f(dir + "/model-0000" + std::to_string(i) + "-of-00003.safetensors",
                      std::ios::binary);
      for (int k = 0; k < (i << 18); k++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        f.write(reinterpret_cast<const char*>(&seed), sizeof seed);
      }
    }
    std::ofstream(dir + "/model.safetensors.index.json")
        << R"({"weight_map": {"a": "model-00001-of-00003.safetensors", )"
        << R"("b": "model-00002-of-00003.safetensors", "c": "model-00003-of-00003.safetensors"}})";
    fs::create_directory(dir + "/sub");
    std::ofstream(dir + "/sub/config.json") << "{\"hidden_size\": 64}\n";
    fs::create_symlink("/etc/hostname", dir + "/link");
  }
  dir = bcast_from_root(dir);
  // (path, size, mtime) of every entry, and the content of every file.
  auto snapshot = [&] {
    std::vector<std::tuple<std::string, uint64_t, int64_t, std::string>> s;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const auto st = e.symlink_status();
      std::string content;
      if (fs::is_regular_file(st)) {
        std::ifstream in(e.path(), std::ios::binary);
        content.assign(std::istreambuf_iterator<char>(in), {});
      }
      s.emplace_back(e.path().string(), fs::is_regular_file(st) ? fs::file_size(e.path()) : 0,
                     fs::last_write_time(e.path()).time_since_epoch().count(), content);
    }
    std::sort(s.begin(), s.end());
    return s;
  };
  const auto before = world_rank() == 0 ? snapshot() : decltype(snapshot()){};
  const uint64_t shards = 3 * (1u << 18) * 8 + 2 * (1u << 18) * 8 + (1u << 18) * 8;
  uint64_t index = 0;
  if (world_rank() == 0) index = fs::file_size(dir + "/model.safetensors.index.json");
  MPI_Bcast(&index, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  const uint64_t want = shards + index + std::string("{\"hidden_size\": 64}\n").size();
  for (const char* backend : {"posix", "io_uring"}) {
    const bool loader = std::string(backend) == "posix";
    if (!backend_not_built(backend).empty()) continue;
    json c = config("file-per-shard", backend);
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank() < 3 ? 0 : MPI_UNDEFINED, world_rank(), &sub);
    if (sub != MPI_COMM_NULL) {
      RunOptions o;
      o.quiet = true;
      o.phases = Phases::restore;
      o.read_dir = dir;
      o.read_assign = loader ? ReadAssign::automatic : ReadAssign::size;
      const RunResult r = run_benchmark(parse_config(c), o, sub);
      if (world_rank() == 0) {
        ASSERT_EQ(r.exit_code, 0) << backend << ": " << r.error;
        EXPECT_EQ(r.doc["read_dir"]["files"], 5) << backend;
        EXPECT_EQ(r.doc["read_dir"]["bytes"].get<uint64_t>(), want) << backend;
        const json& a = r.doc["read_dir"]["assignment"];
        EXPECT_EQ(a["rule"], loader ? "safetensors" : "size") << a;
        EXPECT_EQ(a["recognised"], json::array({"safetensors"})) << a;
        // The loader: every rank reads the index and the 3 shards; the nested config is not
        // the index's config.json and is never opened.
        const uint64_t read = loader ? 3 * (shards + index) : want;
        EXPECT_EQ(a["bytes_read_by_all_ranks"].get<uint64_t>(), read) << a;
        EXPECT_EQ(a["skipped_files"], loader ? 1 : 0) << a;
        for (const auto& rep : r.doc["points"][0]["repetitions"]) {
          EXPECT_EQ(rep["restore"]["bytes"].get<uint64_t>(), read) << backend;
          EXPECT_FALSE(rep["verified"].get<bool>());
        }
      }
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (world_rank() == 0) {
    const auto after = snapshot();
    EXPECT_EQ(after.size(), before.size());
    for (size_t i = 0; i < std::min(after.size(), before.size()); i++) {
      EXPECT_EQ(std::get<0>(after[i]), std::get<0>(before[i]));
      EXPECT_EQ(std::get<1>(after[i]), std::get<1>(before[i])) << std::get<0>(after[i]);
      EXPECT_EQ(std::get<2>(after[i]), std::get<2>(before[i])) << std::get<0>(after[i]);
      EXPECT_TRUE(std::get<3>(after[i]) == std::get<3>(before[i])) << std::get<0>(after[i]);
    }
    fs::remove_all(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A DeepSpeed checkpoint directory (global_step1/ of ckptbench's own deepspeed preset, TP 2 x
// DP 2, ZeRO-1, saved by a --phases save job) read with --read-dir as DeepSpeed's loader does:
// on 4 ranks each reads its mp_rank file and its own optimizer partition; on 2 ranks the loader
// would refuse the other data-parallel size, so --read-assign loader is refused before any I/O
// and auto reads by size, saying why. A backend that cannot open read-only is refused.
TEST(ReadDir, DeepSpeedTagReadAsItsLoaderDoes) {
  const std::string target = world_rank() == 0 ? make_temp_dir("/var/tmp/ckpt-test-dsread") : "";
  json c = json::parse(R"({"model": {"name": "llama2-7b", "scale": 0.0005},
                           "preset": "deepspeed", "backend": "posix", "cache": "fadvise",
                           "parallelism": {"tp": 2, "zero_stage": 1, "emulate_world": 4},
                           "repetitions": 1, "verify": true})");
  RunOptions o;
  o.quiet = true;
  o.phases = Phases::save;
  o.target_override = bcast_from_root(target);
  o.force = true;
  RunResult r = run_benchmark(parse_config(c), o, MPI_COMM_WORLD);
  ASSERT_EQ(r.exit_code, 0) << r.error;
  std::string dir;
  if (world_rank() == 0)
    dir = r.doc["environment"]["run_dir"].get<std::string>() + "/point-001/rep-01";
  dir = bcast_from_root(dir);
  uint64_t model = 0, optim = 0;
  if (world_rank() == 0)
    for (const auto& e : fs::directory_iterator(dir + "/global_step1")) {
      const std::string n = e.path().filename();
      (n.rfind("mp_rank_", 0) == 0 ? model : optim) += fs::file_size(e.path());
    }
  RunOptions ro;
  ro.quiet = true;
  ro.phases = Phases::restore;
  ro.read_dir = dir;
  r = run_benchmark(parse_config(c), ro, MPI_COMM_WORLD);
  if (world_rank() == 0) {
    ASSERT_EQ(r.exit_code, 0) << r.error;
    const json& a = r.doc["read_dir"]["assignment"];
    EXPECT_EQ(a["rule"], "deepspeed") << a;
    EXPECT_EQ(a["skipped_files"], 2) << a;  // latest and zero_to_fp32.py
    // Every data-parallel rank reads its mp_rank file: each of the 2 twice.
    EXPECT_EQ(r.doc["points"][0]["repetitions"][0]["restore"]["bytes"].get<uint64_t>(),
              2 * model + optim);
  }
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < 2 ? 0 : MPI_UNDEFINED, world_rank(), &sub);
  if (sub != MPI_COMM_NULL) {
    ro.read_assign = ReadAssign::loader;
    r = run_benchmark(parse_config(c), ro, sub);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.error.find("run on 4 ranks"), std::string::npos) << r.error;
    ro.read_assign = ReadAssign::automatic;
    r = run_benchmark(parse_config(c), ro, sub);
    if (world_rank() == 0) {
      ASSERT_EQ(r.exit_code, 0) << r.error;
      const json& a = r.doc["read_dir"]["assignment"];
      EXPECT_EQ(a["rule"], "size") << a;
      EXPECT_NE(a["not_applied"].get<std::string>().find("run on 4 ranks"), std::string::npos);
      EXPECT_EQ(r.doc["points"][0]["repetitions"][0]["restore"]["bytes"].get<uint64_t>(),
                r.doc["read_dir"]["bytes"].get<uint64_t>());
    }
    if (backend_not_built("mpiio").empty()) {
      json m = c;
      m["backend"] = "mpiio";
      r = run_benchmark(parse_config(m), ro, sub);
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_NE(r.error.find("cannot read a directory that must stay untouched"), std::string::npos)
          << r.error;
    }
    MPI_Comm_free(&sub);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(target);
  MPI_Barrier(MPI_COMM_WORLD);
}
