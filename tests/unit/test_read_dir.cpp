// --read-dir rank assignment (read_dir.hpp): by size, and the loaders' own assignments for the
// directories ckptbench recognises - a Hugging Face safetensors model, a DeepSpeed tag, a PyTorch
// DCP checkpoint - with the refusals that say why a loader rule does not apply.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/plan/read_dir.hpp"

using namespace ckpt;
using json = nlohmann::json;

namespace {

using Small = std::map<std::string, std::string>;

ReadDirAssignment assign(const DirFiles& files, int world, ReadAssign how,
                         const Small& small = {}) {
  return assign_read_dir(files, world, how, [&](const std::string& p) {
    auto it = small.find(p);
    if (it == small.end()) throw ConfigError(p + ": not readable in this test");
    return it->second;
  });
}

// The paths rank r reads, in order.
std::vector<std::string> paths(const DirFiles& f, const ReadDirAssignment& a, int r) {
  std::vector<std::string> out;
  for (size_t i : a.reads.at(static_cast<size_t>(r))) out.push_back(f[i].first);
  return out;
}

DirFiles sorted(DirFiles f) {
  std::sort(f.begin(), f.end());
  return f;
}

std::string error_of(const DirFiles& f, int world, const Small& small = {}) {
  try {
    assign(f, world, ReadAssign::loader, small);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ReadAssign, ParsesTheThreeValuesAndNamesTheAllowedOnes) {
  EXPECT_EQ(parse_read_assign("auto"), ReadAssign::automatic);
  EXPECT_EQ(parse_read_assign("size"), ReadAssign::size);
  EXPECT_EQ(parse_read_assign("loader"), ReadAssign::loader);
  try {
    parse_read_assign("round-robin");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'round-robin'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("size, loader"), std::string::npos);
  }
}

TEST(ReadDirSize, LargestFirstToTheLeastLoadedRankEachFileOnce) {
  const DirFiles f = {{"a", 100}, {"b", 60}, {"c", 50}, {"d", 40}, {"e", 0}};
  const auto a = assign(f, 2, ReadAssign::size);
  EXPECT_EQ(a.rule, "size");
  EXPECT_TRUE(a.recognised.empty());
  // 100 -> r0; 60 -> r1; 50 -> r1 (110); 40 -> r0 (140); 0 -> r1 (110 < 140).
  EXPECT_EQ(paths(f, a, 0), (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(paths(f, a, 1), (std::vector<std::string>{"b", "c", "e"}));
  EXPECT_TRUE(a.skipped.empty());
  const IoPlan p = read_dir_plan(f, a);
  EXPECT_EQ(p.stats.files, 5u);
  EXPECT_EQ(p.stats.file_bytes, 250u);
  EXPECT_EQ(p.stats.payload_bytes, 250u);
  EXPECT_EQ(p.ranks[1].files[2].extents.size(), 0u);  // the empty file: opened, not read
  for (const auto& r : p.ranks)
    for (const auto& fs : r.files) EXPECT_FALSE(fs.shared);
}

TEST(ReadDirSafetensors, EveryRankReadsConfigIndexThenTheIndexedShardsInSortedOrder) {
  const DirFiles f = sorted({{"config.json", 600},
                             {"model.safetensors.index.json", 900},
                             {"model-00002-of-00002.safetensors", 3000},
                             {"model-00001-of-00002.safetensors", 5000},
                             {"original/consolidated.00.pth", 8000},
                             {"tokenizer.json", 700}});
  const Small idx = {{"model.safetensors.index.json",
                      json{{"metadata", {{"total_size", 8000}}},
                           {"weight_map",
                            {{"lm_head.weight", "model-00002-of-00002.safetensors"},
                             {"embed.weight", "model-00001-of-00002.safetensors"},
                             {"norm.weight", "model-00002-of-00002.safetensors"}}}}
                          .dump()}};
  const auto a = assign(f, 3, ReadAssign::automatic, idx);
  EXPECT_EQ(a.rule, "safetensors");
  EXPECT_EQ(a.recognised, std::vector<std::string>{"safetensors"});
  const std::vector<std::string> want = {"config.json", "model.safetensors.index.json",
                                         "model-00001-of-00002.safetensors",
                                         "model-00002-of-00002.safetensors"};
  for (int r = 0; r < 3; r++) EXPECT_EQ(paths(f, a, r), want) << r;
  // The loader never opens the original/ weights or the tokenizer.
  ASSERT_EQ(a.skipped.size(), 2u);
  const json s = a.summary(f);
  EXPECT_EQ(s["skipped_bytes"], 8700);
  EXPECT_EQ(s["bytes_read_by_all_ranks"], 3 * (600 + 900 + 3000 + 5000));
  EXPECT_EQ(s["files_read_by_several_ranks"], 4);
  const IoPlan p = read_dir_plan(f, a);
  EXPECT_EQ(p.stats.files, 4u);
  EXPECT_EQ(p.stats.file_bytes, 9500u);
  EXPECT_EQ(p.stats.payload_bytes, 3u * 9500u);
  EXPECT_EQ(p.ranks[2].files[2].writers, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(p.ranks[2].files[2].shared);
}

TEST(ReadDirSafetensors, AnIndexNamingAMissingShardIsNotTheLoadersAssignment) {
  const DirFiles f = {{"model-00001-of-00002.safetensors", 10},
                      {"model.safetensors.index.json", 5}};
  const Small idx = {{"model.safetensors.index.json",
                      R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                         "b": "model-00002-of-00002.safetensors"}})"}};
  const std::string e = error_of(f, 2, idx);
  EXPECT_NE(e.find("model-00002-of-00002.safetensors"), std::string::npos) << e;
  // auto: by size, saying why the loader's assignment did not apply.
  const auto a = assign(f, 2, ReadAssign::automatic, idx);
  EXPECT_EQ(a.rule, "size");
  EXPECT_NE(a.fallback.find("not a regular file"), std::string::npos) << a.fallback;
}

TEST(ReadDirSafetensors, ASingleFileModelAndSeveralUnindexedFiles) {
  const DirFiles one = {{"config.json", 10}, {"model.safetensors", 100}};
  const auto a = assign(one, 2, ReadAssign::loader);
  EXPECT_EQ(paths(one, a, 1), (std::vector<std::string>{"config.json", "model.safetensors"}));
  const DirFiles many = {{"a.safetensors", 10}, {"b.safetensors", 100}};
  EXPECT_NE(error_of(many, 2).find("no model.safetensors.index.json"), std::string::npos);
}

TEST(ReadDirDeepSpeed, ZeroOneTwoEachRankItsModelFileThenItsOwnOptimizerPartition) {
  // MP 2 x DP 2, the layout DeepSpeed's engine writes; two tags, `latest` names the newer.
  DirFiles f = {{"latest", 13}, {"zero_to_fp32.py", 5000}};
  for (const char* tag : {"global_step10", "global_step20"}) {
    for (int mp = 0; mp < 2; mp++) {
      f.push_back({std::string(tag) + "/mp_rank_0" + std::to_string(mp) + "_model_states.pt", 100});
      for (int dp = 0; dp < 2; dp++)
        f.push_back({std::string(tag) + "/bf16_zero_pp_rank_" + std::to_string(dp) + "_mp_rank_0" +
                         std::to_string(mp) + "_optim_states.pt",
                     1000});
    }
  }
  f = sorted(f);
  const Small latest = {{"latest", "global_step20\n"}};
  const auto a = assign(f, 4, ReadAssign::automatic, latest);
  EXPECT_EQ(a.rule, "deepspeed");
  // rank r: mp = r % 2, dp = r / 2.
  EXPECT_EQ(paths(f, a, 0), (std::vector<std::string>{
                                "global_step20/mp_rank_00_model_states.pt",
                                "global_step20/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"}));
  EXPECT_EQ(paths(f, a, 3), (std::vector<std::string>{
                                "global_step20/mp_rank_01_model_states.pt",
                                "global_step20/bf16_zero_pp_rank_1_mp_rank_01_optim_states.pt"}));
  // The other tag, latest and the script: never opened.
  EXPECT_EQ(a.skipped.size(), 6u + 2u);
  // ZeRO optimizer state loads only on the same data-parallel size: 4 ranks, said plainly.
  const std::string e = error_of(f, 2, latest);
  EXPECT_NE(e.find("saved by 4 ranks"), std::string::npos) << e;
  EXPECT_NE(e.find("run on 4 ranks"), std::string::npos) << e;
  // Several tags and no latest: ambiguous.
  DirFiles nolatest;
  for (const auto& x : f)
    if (x.first != "latest") nolatest.push_back(x);
  EXPECT_NE(error_of(nolatest, 4).find("no 'latest'"), std::string::npos);
}

TEST(ReadDirDeepSpeed, ZeroThreeAndNoZeroAndWhatItDoesNotModel) {
  DirFiles z3;
  for (int dp = 0; dp < 3; dp++) {
    z3.push_back({"zero_pp_rank_" + std::to_string(dp) + "_mp_rank_00_model_states.pt", 10});
    z3.push_back({"zero_pp_rank_" + std::to_string(dp) + "_mp_rank_00_optim_states.pt", 50});
  }
  z3 = sorted(z3);
  const auto a = assign(z3, 3, ReadAssign::loader);
  EXPECT_EQ(paths(z3, a, 2),
            (std::vector<std::string>{"zero_pp_rank_2_mp_rank_00_model_states.pt",
                                      "zero_pp_rank_2_mp_rank_00_optim_states.pt"}));
  // No ZeRO files: any multiple of the model-parallel size; every dp rank reads its mp file.
  const DirFiles plain = {{"mp_rank_00_model_states.pt", 10}, {"mp_rank_01_model_states.pt", 10}};
  const auto b = assign(plain, 4, ReadAssign::loader);
  EXPECT_EQ(paths(plain, b, 2), std::vector<std::string>{"mp_rank_00_model_states.pt"});
  EXPECT_EQ(paths(plain, b, 3), std::vector<std::string>{"mp_rank_01_model_states.pt"});
  EXPECT_NE(error_of(plain, 3).find("multiple of 2"), std::string::npos);
  // Pipeline layer files: the stage of each layer is not in the directory.
  const DirFiles pipe = {{"layer_01-model_00-model_states.pt", 10},
                         {"mp_rank_00_model_states.pt", 10}};
  EXPECT_NE(error_of(pipe, 1).find("pipeline layer files"), std::string::npos);
}

TEST(ReadDirDcp, SameRankCountEveryRankReadsMetadataThenItsOwnFiles) {
  const DirFiles f = sorted({{".metadata", 300},
                             {"__0_0.distcp", 1000},
                             {"__0_1.distcp", 10},
                             {"__1_0.distcp", 900},
                             {"__2_0.distcp", 800}});
  const auto a = assign(f, 3, ReadAssign::automatic);
  EXPECT_EQ(a.rule, "dcp");
  EXPECT_EQ(paths(f, a, 0),
            (std::vector<std::string>{".metadata", "__0_0.distcp", "__0_1.distcp"}));
  EXPECT_EQ(paths(f, a, 2), (std::vector<std::string>{".metadata", "__2_0.distcp"}));
  EXPECT_TRUE(a.skipped.empty());
  // Another rank count: DCP reshards through the pickled .metadata - refused for loader, by size
  // for auto, saying why.
  EXPECT_NE(error_of(f, 2).find("saved by 3 ranks"), std::string::npos);
  const auto b = assign(f, 2, ReadAssign::automatic);
  EXPECT_EQ(b.rule, "size");
  EXPECT_EQ(b.recognised, std::vector<std::string>{"dcp"});
  EXPECT_NE(b.fallback.find("dcp: "), std::string::npos);
}

TEST(ReadDirAssignment, RoundTripsThroughJsonAndRefusesUnknownDirectoriesForLoader) {
  const DirFiles f = {{"x.bin", 10}, {"y.bin", 20}};
  const auto a = assign(f, 2, ReadAssign::size);
  const auto b = ReadDirAssignment::from_json(json::parse(a.to_json().dump()));
  EXPECT_EQ(b.reads, a.reads);
  EXPECT_EQ(b.rule, a.rule);
  EXPECT_NE(error_of(f, 2).find("not a checkpoint ckptbench recognises"), std::string::npos);
}
