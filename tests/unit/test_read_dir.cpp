// --read-dir rank assignment (read_dir.hpp): by size, and the loaders' own assignments for the
// directories ckptbench recognises - a Hugging Face safetensors model, a DeepSpeed tag (with
// pipeline layer files too), a Megatron-LM iteration (legacy and torch_dist), a PyTorch DCP
// checkpoint or several by step - with the refusals that say why a loader rule does not apply.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"
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
}

namespace {

// A DeepSpeed pipeline tag as ckptbench's writer lays it out: TP tp x PP pp, ZeRO 1 (bf16) over
// dp data-parallel ranks when dp > 0; layer files of the given indices and sizes for every tp.
DirFiles ds_pipe(const std::string& tag, int tp, int pp, int dp,
                 const std::vector<std::pair<int, uint64_t>>& layers) {
  DirFiles f;
  const std::string pre = tag.empty() ? "" : tag + "/";
  for (const auto& [idx, size] : layers)
    for (int t = 0; t < tp; t++)
      f.push_back({pre + format_text("layer_%02d-model_%02d-model_states.pt", idx, t), size});
  for (int mp = 0; mp < tp * pp; mp++) {
    f.push_back({pre + format_text("mp_rank_%02d_model_states.pt", mp), 30});
    for (int d = 0; d < dp; d++)
      f.push_back(
          {pre + format_text("bf16_zero_pp_rank_%d_mp_rank_%02d_optim_states.pt", d, mp), 900});
  }
  return sorted(f);
}

}  // namespace

TEST(ReadDirDeepSpeed, PipelineEachRankItsStagesLayerFilesForItsTensorRank) {
  // Llama-like, 4 layers, untied: 01 embedding, 02-05 transformer layers, 06 final norm, 07
  // output layer; TP 2 x PP 2 x DP 2 (8 ranks), `latest` naming the newer of two tags.
  const std::vector<std::pair<int, uint64_t>> layers = {{1, 500}, {2, 300}, {3, 300}, {4, 300},
                                                        {5, 300}, {6, 10},  {7, 500}};
  DirFiles f = ds_pipe("global_step100", 2, 2, 2, layers);
  for (auto& x : ds_pipe("global_step300", 2, 2, 2, layers)) f.push_back(x);
  f.push_back({"latest", 14});
  f.push_back({"zero_to_fp32.py", 5000});
  f = sorted(f);
  const Small latest = {{"latest", "global_step300"}};
  const auto a = assign(f, 8, ReadAssign::loader, latest);
  EXPECT_EQ(a.rule, "deepspeed");
  // Stage 0: embedding and layers 02, 03 (the writer's split of 4 layers); stage 1: 04-07.
  // Rank r: tp = r % 2, dp = r / 2 % 2, stage = r / 4 (DeepSpeed's pipe, data, model axes).
  const std::string g = "global_step300/";
  EXPECT_EQ(paths(f, a, 2),
            (std::vector<std::string>{
                g + "mp_rank_00_model_states.pt", g + "layer_01-model_00-model_states.pt",
                g + "layer_02-model_00-model_states.pt", g + "layer_03-model_00-model_states.pt",
                g + "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt"}));
  EXPECT_EQ(paths(f, a, 5),
            (std::vector<std::string>{
                g + "mp_rank_03_model_states.pt", g + "layer_04-model_01-model_states.pt",
                g + "layer_05-model_01-model_states.pt", g + "layer_06-model_01-model_states.pt",
                g + "layer_07-model_01-model_states.pt",
                g + "bf16_zero_pp_rank_0_mp_rank_03_optim_states.pt"}));
  EXPECT_NE(a.description.find("tag global_step300"), std::string::npos) << a.description;
  EXPECT_NE(a.description.find("stage 0: 01-03, 1: 04-07"), std::string::npos) << a.description;
  // Every file of the tag is read (layer files by both data-parallel ranks); the other tag,
  // latest and the script are not.
  EXPECT_EQ(a.skipped.size(), 26u + 2u);
  // ZeRO: the saving data-parallel size only.
  const std::string e = error_of(f, 4, latest);
  EXPECT_NE(e.find("saved by 8 ranks"), std::string::npos) << e;
}

TEST(ReadDirDeepSpeed, PipelineTiedEmbeddingsNoZeroAndRefusals) {
  // Tied embeddings: no output-layer file, the highest index (smaller than the layer before it)
  // is the final norm alone. 5 layers over 2 stages: 02-04 on stage 0, 05-06 and the norm on 1.
  const DirFiles tied =
      ds_pipe("", 1, 2, 0, {{1, 500}, {2, 300}, {3, 300}, {4, 300}, {5, 300}, {6, 300}, {7, 10}});
  const auto a = assign(tied, 4, ReadAssign::loader);  // no ZeRO: any multiple of MP 2
  EXPECT_EQ(paths(tied, a, 3),
            (std::vector<std::string>{
                "mp_rank_01_model_states.pt", "layer_05-model_00-model_states.pt",
                "layer_06-model_00-model_states.pt", "layer_07-model_00-model_states.pt"}));
  EXPECT_EQ(paths(tied, a, 1).size(), 1u + 4u);  // rank 1: dp 1 of stage 0
  EXPECT_NE(a.description.find("no ZeRO"), std::string::npos) << a.description;
  EXPECT_NE(error_of(tied, 3).find("multiple of 2"), std::string::npos);
  // A layer file missing for one tensor-parallel rank.
  DirFiles gap;
  for (const auto& x : ds_pipe("", 2, 2, 1, {{1, 5}, {2, 3}, {3, 3}, {4, 1}, {5, 5}}))
    if (x.first != "layer_03-model_01-model_states.pt") gap.push_back(x);
  EXPECT_NE(error_of(gap, 4).find("no layer_03-model_01-model_states.pt"), std::string::npos);
  // Model-parallel ranks (3) not a multiple of the layer files' tensor-parallel ranks (2).
  DirFiles odd = ds_pipe("", 2, 1, 0, {{1, 5}, {2, 3}, {3, 1}});
  odd.push_back({"mp_rank_02_model_states.pt", 30});
  EXPECT_NE(error_of(sorted(odd), 3).find("not a multiple of the 2 tensor-parallel"),
            std::string::npos);
  // Too few layer indices for the stages: refused for loader, by size for auto.
  const DirFiles few = ds_pipe("", 1, 4, 0, {{1, 5}, {2, 3}, {3, 1}});
  EXPECT_NE(error_of(few, 4).find("cannot be an embedding"), std::string::npos);
  const auto b = assign(few, 4, ReadAssign::automatic);
  EXPECT_EQ(b.rule, "size");
  EXPECT_NE(b.fallback.find("deepspeed: "), std::string::npos) << b.fallback;
}

namespace {

// Megatron-LM legacy iteration: TP tp x PP pp mp_rank directories (the _PPP suffix when pp > 1),
// model_optim_rng.pt in each, distrib_optim.pt with the distributed optimizer.
DirFiles mg_legacy(const std::string& iter, int tp, int pp, bool distrib) {
  DirFiles f;
  for (int t = 0; t < tp; t++)
    for (int p = 0; p < pp; p++) {
      std::string d = iter + (iter.empty() ? "" : "/") + format_text("mp_rank_%02d", t);
      if (pp > 1) d += format_text("_%03d", p);
      f.push_back({d + "/model_optim_rng.pt", 400});
      if (distrib) f.push_back({d + "/distrib_optim.pt", 2000});
    }
  return f;
}

DirFiles mg_dist(const std::string& iter, int ranks) {
  DirFiles f = {
      {iter + "/common.pt", 28}, {iter + "/metadata.json", 40}, {iter + "/.metadata", 90}};
  for (int r = 0; r < ranks; r++)
    for (int n = 0; n < 2; n++) f.push_back({iter + format_text("/__%d_%d.distcp", r, n), 700});
  return f;
}

}  // namespace

TEST(ReadDirMegatron, LegacyTheTrackersIterationEachRankItsMpRankFileDpZeroTheOptimizer) {
  DirFiles f = mg_legacy("iter_0000100", 2, 2, true);
  for (auto& x : mg_legacy("iter_0000200", 2, 2, true)) f.push_back(x);
  f.push_back({"latest_checkpointed_iteration.txt", 4});
  f = sorted(f);
  const Small tracker = {{"latest_checkpointed_iteration.txt", "200\n"}};
  const auto a = assign(f, 8, ReadAssign::automatic, tracker);
  EXPECT_EQ(a.rule, "megatron");
  EXPECT_EQ(a.recognised, std::vector<std::string>{"megatron"});
  // Rank r: tp = r % 2, dp = r / 2 % 2, pp = r / 4 (Megatron's tp-cp-ep-dp-pp order).
  const std::string t = "latest_checkpointed_iteration.txt", i = "iter_0000200/";
  EXPECT_EQ(paths(f, a, 0), (std::vector<std::string>{t, i + "mp_rank_00_000/model_optim_rng.pt",
                                                      i + "mp_rank_00_000/distrib_optim.pt"}));
  EXPECT_EQ(paths(f, a, 2), (std::vector<std::string>{t, i + "mp_rank_00_000/model_optim_rng.pt"}));
  EXPECT_EQ(paths(f, a, 5), (std::vector<std::string>{t, i + "mp_rank_01_001/model_optim_rng.pt",
                                                      i + "mp_rank_01_001/distrib_optim.pt"}));
  EXPECT_EQ(a.skipped.size(), 8u);  // iteration 100
  EXPECT_NE(a.description.find("iteration iter_0000200"), std::string::npos) << a.description;
  EXPECT_NE(a.description.find("legacy"), std::string::npos) << a.description;
  // Any multiple of tp x pp (the distributed optimizer's state is scattered from dp rank 0).
  EXPECT_EQ(assign(f, 4, ReadAssign::loader, tracker).reads[3].size(), 3u);
  EXPECT_NE(error_of(f, 6, tracker).find("multiple of 4"), std::string::npos);
}

TEST(ReadDirMegatron, LegacyTrackerRefusalsReleaseAndAnIterationGivenDirectly) {
  DirFiles two = mg_legacy("iter_0000100", 1, 1, false);
  for (auto& x : mg_legacy("iter_0000200", 1, 1, false)) two.push_back(x);
  // Several iterations and no tracker: which one is not clear.
  EXPECT_NE(error_of(two, 1).find("give the iter directory"), std::string::npos);
  two.push_back({"latest_checkpointed_iteration.txt", 4});
  two = sorted(two);
  const std::string name = "latest_checkpointed_iteration.txt";
  EXPECT_NE(error_of(two, 1, {{name, "abc"}}).find("neither an iteration number nor 'release'"),
            std::string::npos);
  EXPECT_NE(error_of(two, 1, {{name, "300"}}).find("names iteration 300"), std::string::npos);
  const auto b = assign(two, 1, ReadAssign::automatic, {{name, "0"}});
  EXPECT_EQ(b.rule, "size");
  EXPECT_NE(b.fallback.find("megatron: "), std::string::npos) << b.fallback;
  // "release" names release/.
  DirFiles rel = mg_legacy("release", 1, 1, false);
  rel.push_back({name, 8});
  const auto c = assign(sorted(rel), 2, ReadAssign::loader, {{name, " release\n"}});
  EXPECT_EQ(paths(sorted(rel), c, 1),
            (std::vector<std::string>{name, "release/mp_rank_00/model_optim_rng.pt"}));
  // The iteration directory given itself: no tracker read.
  const DirFiles it = sorted(mg_legacy("", 2, 1, false));
  const auto d = assign(it, 4, ReadAssign::loader);
  EXPECT_EQ(paths(it, d, 3), std::vector<std::string>{"mp_rank_01/model_optim_rng.pt"});
  // A model-parallel rank's file missing.
  DirFiles gap;
  for (const auto& x : mg_legacy("", 2, 2, true))
    if (x.first != "mp_rank_01_000/distrib_optim.pt") gap.push_back(x);
  EXPECT_NE(error_of(sorted(gap), 4).find("no mp_rank_01_000/distrib_optim.pt"), std::string::npos);
}

TEST(ReadDirMegatron, TorchDistEveryRankItsOwnFilesThenDcpInTheTrackersIteration) {
  DirFiles f = mg_dist("iter_0000100", 2);
  for (auto& x : mg_dist("iter_0000300", 2)) f.push_back(x);
  f.push_back({"latest_checkpointed_iteration.txt", 3});
  f = sorted(f);
  const Small tracker = {{"latest_checkpointed_iteration.txt", "300"}};
  const auto a = assign(f, 2, ReadAssign::automatic, tracker);
  EXPECT_EQ(a.rule, "megatron");
  EXPECT_EQ(a.recognised, (std::vector<std::string>{"megatron", "dcp"}));
  const std::string i = "iter_0000300/";
  EXPECT_EQ(paths(f, a, 1),
            (std::vector<std::string>{"latest_checkpointed_iteration.txt", i + "metadata.json",
                                      i + "common.pt", i + ".metadata", i + "__1_0.distcp",
                                      i + "__1_1.distcp"}));
  EXPECT_NE(a.description.find("torch_dist"), std::string::npos) << a.description;
  EXPECT_NE(a.description.find("iter_0000300"), std::string::npos) << a.description;
  EXPECT_EQ(a.skipped.size(), 7u);  // iteration 100
  // Another rank count: DCP's refusal, for both rules.
  const std::string e = error_of(f, 3, tracker);
  EXPECT_NE(e.find("megatron: the DCP checkpoint iter_0000300 was saved by 2 ranks"),
            std::string::npos)
      << e;
  DirFiles nocommon;
  for (const auto& x : mg_dist("it", 1))
    if (x.first != "it/common.pt") nocommon.push_back(x);
  // No common.pt: Megatron's load_common_state_dict would fail; the DCP checkpoint inside is
  // still read as DCP loads it, saying why the Megatron rule did not apply.
  const auto b = assign(sorted(nocommon), 1, ReadAssign::loader);
  EXPECT_EQ(b.rule, "dcp");
  EXPECT_NE(b.fallback.find("megatron: no common.pt"), std::string::npos) << b.fallback;
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

TEST(ReadDirDcp, SeveralCheckpointsTheHighestStepNumberElseRefused) {
  DirFiles f;
  for (const char* d : {"step-9", "step-10", "step-2"})
    for (const char* n : {".metadata", "__0_0.distcp", "__1_0.distcp"})
      f.push_back({std::string(d) + "/" + n, 100});
  f = sorted(f);
  const auto a = assign(f, 2, ReadAssign::loader);
  EXPECT_EQ(a.rule, "dcp");
  // The numerically highest step, not the last name in sorted order.
  EXPECT_EQ(paths(f, a, 1),
            (std::vector<std::string>{"step-10/.metadata", "step-10/__1_0.distcp"}));
  EXPECT_NE(a.description.find("step-10, the highest step of 3 DCP checkpoints"), std::string::npos)
      << a.description;
  EXPECT_EQ(a.skipped.size(), 6u);
  // checkpoint-N and global_stepN names too.
  const DirFiles g = {{"global_step40/.metadata", 1}, {"global_step5/.metadata", 1}};
  EXPECT_EQ(paths(g, assign(g, 1, ReadAssign::loader), 0),
            std::vector<std::string>{"global_step40/.metadata"});
  // Names without a step number, or two with the same one: refused, by size for auto.
  const DirFiles names = {{"a/.metadata", 1}, {"b/.metadata", 1}};
  EXPECT_NE(error_of(names, 1).find("'a' ends in no step number"), std::string::npos);
  const auto b = assign(names, 1, ReadAssign::automatic);
  EXPECT_EQ(b.rule, "size");
  EXPECT_NE(b.fallback.find("several DCP checkpoints"), std::string::npos) << b.fallback;
  const DirFiles same = {{"checkpoint-1/.metadata", 1}, {"step-1/.metadata", 1}};
  EXPECT_NE(error_of(same, 1).find("the same step number 1"), std::string::npos);
}

TEST(ReadDirAssignment, RoundTripsThroughJsonAndRefusesUnknownDirectoriesForLoader) {
  const DirFiles f = {{"x.bin", 10}, {"y.bin", 20}};
  const auto a = assign(f, 2, ReadAssign::size);
  const auto b = ReadDirAssignment::from_json(json::parse(a.to_json().dump()));
  EXPECT_EQ(b.reads, a.reads);
  EXPECT_EQ(b.rule, a.rule);
  EXPECT_NE(error_of(f, 2).find("not a checkpoint ckptbench recognises"), std::string::npos);
}
