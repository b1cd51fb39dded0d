// Framework file structures (DeepSpeed, Megatron-LM, PyTorch DCP, DLIO/MLPerf Storage): names,
// counts, sizes and writers as the frameworks produce them; file-name escaping.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/frameworks.hpp"
#include "ckptbench/plan/layout.hpp"

using namespace ckpt;

namespace {

struct Job {
  ModelDesc model;
  ModelConfig mc;
  IoPlan plan;
  std::map<std::string, nlohmann::json> files;  // path -> {size, writers}
  Job(const std::string& model_name, LayoutKind kind, int tp, int pp, int zero, int world,
      DType dtype = DType::bf16) {
    mc = parse_model_config(nlohmann::json(model_name), "model");
    if (mc.sizing != "dlio") mc.state.weight_dtype = dtype;
    model = build_model(mc);
    Parallelism p;
    p.tp = tp;
    p.pp = pp;
    p.zero_stage = zero;
    PlanInput in;
    in.model = &model;
    in.state = mc.state;
    in.par = resolve_parallelism(p, world, model);
    in.layout.kind = kind;
    in.layout.align = 1;
    in.real_world = world;
    in.node_of_rank.assign(static_cast<size_t>(world), 0);
    plan = make_plan(in);
    for (const auto& f : plan_file_list(plan)) files[f["path"].get<std::string>()] = f;
  }
  int writer(const std::string& path) const { return files.at(path)["writers"][0].get<int>(); }
};

std::string two(int v) {
  char b[8];
  std::snprintf(b, sizeof b, "%02d", v);
  return b;
}

}  // namespace

// Megatron-DeepSpeed Llama-2-7B at TP4 x PP2, ZeRO-1, bf16 (DP 1): 35 layer files per TP rank
// (embedding, 32 transformer layers, final norm, lm head: GPTModelPipe spec indices 1..35),
// 8 mp_rank model-state files, 8 bf16 ZeRO optimizer files = 156 in global_step1/, plus
// `latest` and `zero_to_fp32.py` next to it.
TEST(Frameworks, DeepSpeedLlama2TP4PP2Zero1) {
  Job j("llama2-7b", LayoutKind::deepspeed, 4, 2, 1, 8);
  std::set<std::string> expect;
  for (int idx = 1; idx <= 35; ++idx)
    for (int tp = 0; tp < 4; ++tp)
      expect.insert("global_step1/layer_" + two(idx) + "-model_" + two(tp) + "-model_states.pt");
  for (int mp = 0; mp < 8; ++mp) {
    expect.insert("global_step1/mp_rank_" + two(mp) + "_model_states.pt");
    expect.insert("global_step1/bf16_zero_pp_rank_0_mp_rank_" + two(mp) + "_optim_states.pt");
  }
  expect.insert("latest");
  expect.insert("zero_to_fp32.py");
  std::set<std::string> got;
  size_t in_tag = 0;
  for (const auto& [path, f] : j.files) {
    got.insert(path);
    if (path.rfind("global_step1/", 0) == 0) ++in_tag;
  }
  EXPECT_EQ(got, expect);
  EXPECT_EQ(in_tag, 156u);
  EXPECT_EQ(j.plan.stats.files, 158u);
  // Stage 0 (ranks 0-3 in tp-dp-pp order with dp 1) holds spec layers 1..17 (embedding and
  // transformer layers 0-15), stage 1 (ranks 4-7) layers 18..35, as DeepSpeed's
  // partition_balanced("type:transformer") places them.
  EXPECT_EQ(j.writer("global_step1/layer_17-model_02-model_states.pt"), 2);
  EXPECT_EQ(j.writer("global_step1/layer_18-model_02-model_states.pt"), 6);
  EXPECT_EQ(j.writer("global_step1/layer_35-model_03-model_states.pt"), 7);
  EXPECT_EQ(j.writer("global_step1/mp_rank_05_model_states.pt"), 5);
  EXPECT_EQ(j.files.at("latest")["size"].get<uint64_t>(), 12u);  // "global_step1"
  // A transformer layer at TP4: (4 * 4096^2 + 3 * 4096 * 11008) / 4 bf16 values + 2 norms of
  // 4096, plus the torch.save records of its 9 tensors.
  const uint64_t layer_bytes = 2 * ((4ull * 4096 * 4096 + 3ull * 4096 * 11008) / 4 + 2 * 4096);
  EXPECT_EQ(j.files.at("global_step1/layer_02-model_00-model_states.pt")["size"].get<uint64_t>(),
            layer_bytes + kTorchSaveFileBytes + 9 * kTorchSaveTensorBytes);
}

TEST(Frameworks, DeepSpeedWithoutPipelineEveryZeroStage) {
  // ZeRO 1/2: one model-state file per TP rank (dp 0), one optimizer file per rank.
  for (int zero : {1, 2}) {
    Job j("tiny", LayoutKind::deepspeed, 2, 1, zero, 4);
    EXPECT_EQ(j.files.size(), 2u + 4u + 2u) << zero;
    EXPECT_TRUE(j.files.count("global_step1/mp_rank_01_model_states.pt"));
    EXPECT_TRUE(j.files.count("global_step1/bf16_zero_pp_rank_1_mp_rank_01_optim_states.pt"));
  }
  // ZeRO 3: every rank writes a small model-state file (partitioned placeholders); no bf16
  // weight bytes are written, the fp32 partition is in the optimizer files.
  Job z3("tiny", LayoutKind::deepspeed, 2, 1, 3, 4);
  EXPECT_EQ(z3.files.size(), 4u + 4u + 2u);
  EXPECT_TRUE(z3.files.count("global_step1/zero_pp_rank_1_mp_rank_00_model_states.pt"));
  EXPECT_EQ(z3.plan.stats.kind_bytes.count("weights"), 0u);
  // fp16 without ZeRO: the optimizer state goes into the model-state file, no ZeRO files, no
  // recovery script.
  Job z0("tiny", LayoutKind::deepspeed, 2, 1, 0, 4, DType::f16);
  EXPECT_EQ(z0.files.size(), 2u + 1u);
  EXPECT_TRUE(z0.files.count("latest"));
  EXPECT_GT(z0.plan.stats.kind_bytes.at("exp_avg"), 0u);
  // What DeepSpeed refuses.
  EXPECT_THROW(Job("tiny", LayoutKind::deepspeed, 1, 2, 2, 4), ConfigError);
  EXPECT_THROW(Job("tiny", LayoutKind::deepspeed, 2, 1, 0, 4, DType::bf16), ConfigError);
}

TEST(Frameworks, MegatronLegacyAndTorchDist) {
  Job legacy("tiny", LayoutKind::megatron, 2, 2, 1, 8);  // dp 2
  for (int tp = 0; tp < 2; ++tp)
    for (int pp = 0; pp < 2; ++pp) {
      const std::string d = "iter_0000001/mp_rank_" + two(tp) + "_00" + std::to_string(pp);
      EXPECT_TRUE(legacy.files.count(d + "/model_optim_rng.pt")) << d;
      EXPECT_TRUE(legacy.files.count(d + "/distrib_optim.pt")) << d;
    }
  EXPECT_EQ(legacy.files.size(), 9u);
  EXPECT_EQ(legacy.plan.stats.payload_bytes, legacy.plan.stats.kind_bytes.at("weights") +
                                                 legacy.plan.stats.kind_bytes.at("master") +
                                                 legacy.plan.stats.kind_bytes.at("exp_avg") +
                                                 legacy.plan.stats.kind_bytes.at("exp_avg_sq"));

  Job dist("tiny", LayoutKind::megatron_dist, 1, 1, 1, 4);
  // Two DCP files per rank, .metadata, common.pt, metadata.json, the tracker file.
  EXPECT_EQ(dist.files.size(), 4u * 2u + 3u + 1u);
  EXPECT_TRUE(dist.files.count("iter_0000001/__3_1.distcp"));
  EXPECT_TRUE(dist.files.count("iter_0000001/.metadata"));
  // Fully parallel save: the replicated weights are spread, every rank writes data (in the legacy
  // format only dp rank 0 does).
  for (int r = 0; r < 4; ++r) EXPECT_GT(dist.plan.ranks[r].transfer_bytes, 0u) << r;
  EXPECT_EQ(legacy.plan.ranks[2].transfer_bytes, 0u);  // tp 0, dp 1, pp 0 (tp-dp-pp order)
}

TEST(Frameworks, TorchDcpDedupsReplicatedTensors) {
  Job j("tiny", LayoutKind::torch_dcp, 1, 1, 0, 4, DType::f16);
  EXPECT_EQ(j.files.size(), 5u);
  EXPECT_TRUE(j.files.count("__0_0.distcp"));
  EXPECT_TRUE(j.files.count(".metadata"));
  EXPECT_EQ(j.writer(".metadata"), 0);
  // Replicated state written once in total, balanced over the four ranks.
  uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
  for (int r = 0; r < 4; ++r) {
    lo = std::min(lo, j.plan.ranks[r].transfer_bytes);
    hi = std::max(hi, j.plan.ranks[r].transfer_bytes);
  }
  for (const auto& rs : j.plan.shards) sum += rs.payload_bytes;
  EXPECT_EQ(j.plan.stats.payload_bytes, sum);
  EXPECT_GT(lo, hi / 2);
}

// DLIO parity: for each MLPerf Storage checkpoint workload (mlcommons/storage caa90c9,
// configs/dlio/workload/llama3_*.yaml) at its closed-division process count, the total bytes,
// file count, largest per-rank bytes and largest file that dlio_benchmark's own code gives
// (base_checkpointing.py at e1919d7: get_layer_parameters, get_optimization_groups,
// get_layer_index, save_checkpoint, run on every rank by a script that executes those methods).
TEST(Frameworks, DlioParityWithMlperfWorkloads) {
  struct Case {
    const char* model;
    int tp, pp, zero, ranks;
    uint64_t params, total, files, max_rank, largest_file;
  };
  const Case cases[] = {
      {"mlperf-llama3-8b", 1, 1, 3, 8, 8030261248ull, 112425623552ull, 16, 14053202944ull,
       12045637632ull},
      {"mlperf-llama3-70b", 8, 1, 3, 64, 69882617856ull, 978406572032ull, 128, 15287602688ull,
       13103482368ull},
      {"mlperf-llama3-405b", 8, 32, 1, 512, 405853388800ull, 5682508791808ull, 1544, 13226441600ull,
       9513171840ull},
      {"mlperf-llama3-1t", 8, 64, 1, 1024, 1183035102480ull, 16564174094592ull, 2072,
       19290344604ull, 13865244924ull},
  };
  for (const auto& c : cases) {
    Job j(c.model, LayoutKind::dlio, c.tp, c.pp, c.zero, c.ranks);
    EXPECT_EQ(j.model.num_params(), c.params) << c.model;
    EXPECT_EQ(j.plan.stats.payload_bytes, c.total) << c.model;
    EXPECT_EQ(j.plan.stats.file_bytes, c.total) << c.model;
    EXPECT_EQ(j.plan.stats.files, c.files) << c.model;
    EXPECT_EQ(j.plan.stats.rank_bytes_max, c.max_rank) << c.model;
    uint64_t largest = 0;
    for (const auto& [p, f] : j.files) largest = std::max(largest, f["size"].get<uint64_t>());
    EXPECT_EQ(largest, c.largest_file) << c.model;
  }
  // Names and sizes DLIO gives the 405B workload's first files.
  Job j("mlperf-llama3-405b", LayoutKind::dlio, 8, 32, 1, 512);
  EXPECT_EQ(j.files.at("global_epoch1_step1/layer_0-model_0_model_states.pt")["size"], 525336576u);
  EXPECT_TRUE(j.files.count("global_epoch1_step1/layer_128-model_255_model_states.pt"));
  EXPECT_TRUE(j.files.count("global_epoch1_step1/zero_pp_rank_1_mp_rank_255_optim_states.pt"));
  EXPECT_EQ(j.writer("global_epoch1_step1/zero_pp_rank_1_mp_rank_255_optim_states.pt"), 511);
  // The 1T dimensions (heads do not divide hidden) are DLIO's: accepted with DLIO sizing only.
  EXPECT_THROW(parse_model_config(nlohmann::json{{"name", "mlperf-llama3-1t"}, {"sizing", "exact"}},
                                  "model"),
               ConfigError);
  // DLIO refuses ZeRO 3 with pipeline parallelism.
  EXPECT_THROW(Job("mlperf-llama3-8b", LayoutKind::dlio, 1, 2, 3, 8), ConfigError);
  // The dlio layout needs DLIO sizing.
  EXPECT_THROW(Job("llama2-7b", LayoutKind::dlio, 1, 1, 1, 8), ConfigError);
}

TEST(Frameworks, DlioSizingDefaultsToDlioFiles) {
  const auto rc = parse_config(nlohmann::json{{"model", "mlperf-llama3-8b"}});
  ASSERT_EQ(rc.points.size(), 1u);
  EXPECT_EQ(rc.points[0].layout.kind, LayoutKind::dlio);
  EXPECT_EQ(rc.points[0].model.state.weight_dtype, DType::f16);
}

TEST(Frameworks, FileNamesCannotLeaveTheDirectory) {
  const std::vector<std::string> names = {"../up",
                                          "a/b",
                                          ".hidden",
                                          ".",
                                          "..",
                                          std::string("odd\x01\x7f\xff name%", 12),
                                          std::string(300, 'x'),
                                          std::string(301, 'x')};
  std::set<std::string> seen;
  for (const auto& n : names) {
    const std::string e = escape_file_name(n);
    EXPECT_EQ(e.find('/'), std::string::npos) << n;
    EXPECT_NE(e.front(), '.') << n;
    EXPECT_LE(e.size(), 200u) << n;
    for (char ch : e) EXPECT_TRUE(ch > 32 && ch < 127) << n;
    EXPECT_TRUE(seen.insert(e).second) << "collision for " << n;
  }
  EXPECT_EQ(escape_file_name("layers.0.attention.wq.weight"), "layers.0.attention.wq.weight");
  EXPECT_EQ(escape_file_name("../up"), "%2E.%2Fup");

  // A file-per-tensor plan of tensors with hostile names stays inside rank_00000/.
  ModelDesc m;
  m.name = "hostile";
  m.num_layers = 1;
  for (const auto& n : names) {
    TensorDesc t;
    t.name = n;
    t.shape = {16};
    t.layer = 0;
    m.tensors.push_back(t);
  }
  PlanInput in;
  in.model = &m;
  in.par = resolve_parallelism(Parallelism{}, 1, m);
  in.layout.kind = LayoutKind::file_per_tensor;
  in.real_world = 1;
  in.node_of_rank = {0};
  const IoPlan plan = make_plan(in);
  for (const auto& f : plan_file_list(plan)) {
    const std::string p = f["path"];
    EXPECT_EQ(p.rfind("rank_00000/", 0), 0u) << p;
    EXPECT_EQ(p.find('/', 11), std::string::npos) << p;
  }
}

TEST(Frameworks, TorchSnapshotBatchesSmallTensors) {
  // tiny: every tensor is far below 128 MiB, so each rank writes its state in one slab file.
  Job small("tiny", LayoutKind::torchsnapshot, 1, 1, 1, 4);
  EXPECT_EQ(small.files.size(), 4u + 1u);
  std::set<int> writers;
  for (const auto& [path, f] : small.files) {
    if (path == ".snapshot_metadata") continue;
    EXPECT_EQ(path.rfind("batched/", 0), 0u) << path;
    EXPECT_EQ(path.size(), 8u + 36u) << path;  // batched/<uuid4>
    writers.insert(f["writers"][0].get<int>());
  }
  EXPECT_EQ(writers.size(), 4u);
  EXPECT_EQ(small.writer(".snapshot_metadata"), 0);
  // Llama-2-7B at TP2 x DP4, ZeRO 1: the 256 MiB optimizer fragments of the embedding stay
  // objects of their own; everything under 128 MiB goes into slabs of under 128 MiB.
  Job big("llama2-7b", LayoutKind::torchsnapshot, 2, 1, 1, 8);
  size_t objects = 0, slabs = 0;
  for (const auto& [path, f] : big.files) {
    const uint64_t size = f["size"].get<uint64_t>();
    if (path.rfind("batched/", 0) == 0) {
      ++slabs;
      EXPECT_LT(size, 128ull << 20) << path;
    } else if (path != ".snapshot_metadata") {
      ++objects;
      EXPECT_GE(size, 128ull << 20) << path;
    }
  }
  EXPECT_GT(objects, 0u);
  EXPECT_GT(slabs, 8u);
  EXPECT_EQ(big.plan.stats.payload_bytes, big.plan.stats.kind_bytes.at("weights") +
                                              big.plan.stats.kind_bytes.at("master") +
                                              big.plan.stats.kind_bytes.at("exp_avg") +
                                              big.plan.stats.kind_bytes.at("exp_avg_sq"));
}

TEST(Frameworks, DcpWriterOptions) {
  auto files_of = [](const nlohmann::json& cfg) {
    const auto rc = parse_config(cfg);
    const auto& pc = rc.points.at(0);
    ModelDesc m = build_model(pc.model);
    PlanInput in;
    in.model = &m;
    in.state = pc.model.state;
    in.par = resolve_parallelism(pc.parallelism, 4, m);
    in.layout = pc.layout;
    in.real_world = 4;
    in.node_of_rank.assign(4, 0);
    std::set<std::string> out;
    for (const auto& f : plan_file_list(make_plan(in))) out.insert(f["path"].get<std::string>());
    return out;
  };
  nlohmann::json base = {{"model", "tiny"}, {"preset", "torch-dcp"}};
  auto threads = base;
  threads["dcp"] = {{"thread_count", 3}};
  const auto t = files_of(threads);
  EXPECT_EQ(t.size(), 4u * 3u + 1u);
  EXPECT_TRUE(t.count("__3_2.distcp"));
  auto per_item = base;
  per_item["dcp"] = {{"single_file_per_rank", false}};
  const auto p = files_of(per_item);
  EXPECT_GT(p.size(), 4u * 10u);  // one file per tensor item
  EXPECT_TRUE(p.count("__0_0.distcp"));
  // Refused: on another layout, unknown keys, a zero thread count.
  auto wrong = nlohmann::json{
      {"model", "tiny"}, {"layout", "file-per-shard"}, {"dcp", {{"thread_count", 2}}}};
  EXPECT_THROW(parse_config(wrong), ConfigError);
  auto typo = base;
  typo["dcp"] = {{"threads", 2}};
  EXPECT_THROW(parse_config(typo), ConfigError);
  auto zero = base;
  zero["dcp"] = {{"thread_count", 0}};
  EXPECT_THROW(parse_config(zero), ConfigError);
}
