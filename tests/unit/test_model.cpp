// Model zoo, custom models and the "model" config section.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/plan/model.hpp"
#include "support.hpp"

namespace ckpt {
namespace {

using nlohmann::json;

ModelDesc zoo(const std::string& name) { return build_model(parse_model_config(json(name))); }

const TensorDesc* find(const ModelDesc& m, const std::string& name) {
  for (const auto& t : m.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

using ckpt_test::expect_config_error;

TEST(ModelZoo, ParameterCountsMatchDesignTable) {
  // Published parameter counts of the zoo models; Mixtral from its public config (46.7 B).
  const std::map<std::string, double> expected = {
      {"llama2-7b", 6.74e9}, {"llama2-13b", 13.0e9},   {"llama2-70b", 69.0e9},
      {"llama3-8b", 8.03e9}, {"llama3-70b", 70.6e9},   {"llama3.1-405b", 405.9e9},
      {"gpt3-175b", 175e9},  {"mixtral-8x7b", 46.7e9},
  };
  for (const auto& [name, params] : expected) {
    const ModelDesc m = zoo(name);
    const double got = static_cast<double>(m.num_params());
    EXPECT_LT(std::fabs(got - params) / params, 0.005) << name << ": " << got;
    EXPECT_EQ(m.source, "zoo") << name;
    EXPECT_EQ(m.num_layers, m.dims->layers) << name;
  }
}

TEST(ModelZoo, EveryEntryBuildsAndTinyIsSmall) {
  for (const auto& e : model_zoo()) {
    const ModelDesc m = zoo(e.name);
    EXPECT_FALSE(m.tensors.empty()) << e.name;
    EXPECT_FALSE(e.description.empty()) << e.name;
    for (const auto& t : m.tensors) {
      EXPECT_EQ(t.name.find(".."), std::string::npos);
      EXPECT_LT(t.tp_split_dim, static_cast<int>(t.shape.size())) << t.name;
      if (t.placement == Placement::layer) {
        EXPECT_GE(t.layer, 0) << t.name;
        EXPECT_LT(static_cast<uint64_t>(t.layer), m.num_layers) << t.name;
      }
    }
  }
  const ModelDesc tiny = zoo("tiny");
  // 14 B/param training state at scale 1: a few tens of MiB in all, a few MiB per rank of 4.
  EXPECT_LT(training_state_bytes(tiny, TrainingState{}), 64ull << 20);
  EXPECT_GT(zoo("tiny-moe").dims->experts, 1u);
}

TEST(ModelZoo, TensorNamesShapesAndSplitDims) {
  const ModelDesc m = zoo("llama3-8b");
  const uint64_t h = 4096, kv = 1024, f = 14336, V = 128256;
  struct Want {
    const char* name;
    std::vector<uint64_t> shape;
    int split;
    Placement place;
  };
  const Want wants[] = {
      {"model.embed_tokens.weight", {V, h}, 0, Placement::first_stage},
      {"model.layers.0.self_attn.q_proj.weight", {h, h}, 0, Placement::layer},
      {"model.layers.0.self_attn.k_proj.weight", {kv, h}, 0, Placement::layer},
      {"model.layers.0.self_attn.v_proj.weight", {kv, h}, 0, Placement::layer},
      {"model.layers.0.self_attn.o_proj.weight", {h, h}, 1, Placement::layer},
      {"model.layers.31.mlp.gate_proj.weight", {f, h}, 0, Placement::layer},
      {"model.layers.31.mlp.up_proj.weight", {f, h}, 0, Placement::layer},
      {"model.layers.31.mlp.down_proj.weight", {h, f}, 1, Placement::layer},
      {"model.layers.5.input_layernorm.weight", {h}, -1, Placement::layer},
      {"model.layers.5.post_attention_layernorm.weight", {h}, -1, Placement::layer},
      {"model.norm.weight", {h}, -1, Placement::last_stage},
      {"lm_head.weight", {V, h}, 0, Placement::last_stage},
  };
  for (const auto& w : wants) {
    const TensorDesc* t = find(m, w.name);
    ASSERT_NE(t, nullptr) << w.name;
    EXPECT_EQ(t->shape, w.shape) << w.name;
    EXPECT_EQ(t->tp_split_dim, w.split) << w.name;
    EXPECT_EQ(t->placement, w.place) << w.name;
  }
  EXPECT_EQ(find(m, "model.layers.31.mlp.down_proj.weight")->layer, 31);
  EXPECT_EQ(m.tensors.size(), 2u + 32u * 9u + 1u);
  EXPECT_EQ(m.tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(m.tensors.back().name, "lm_head.weight");
}

TEST(ModelZoo, GptAndMoeTensors) {
  const ModelDesc g = zoo("gpt3-175b");
  EXPECT_EQ(find(g, "lm_head.weight"), nullptr);  // tied
  ASSERT_NE(find(g, "model.layers.0.mlp.fc1.bias"), nullptr);
  EXPECT_EQ(find(g, "model.layers.0.mlp.fc1.bias")->tp_split_dim, 0);
  EXPECT_EQ(find(g, "model.layers.0.mlp.fc2.weight")->tp_split_dim, 1);
  EXPECT_EQ(find(g, "model.layers.0.mlp.fc2.bias")->tp_split_dim, -1);
  EXPECT_EQ(find(g, "model.layers.0.self_attn.o_proj.bias")->tp_split_dim, -1);
  EXPECT_EQ(find(g, "model.layers.0.self_attn.q_proj.bias")->tp_split_dim, 0);
  EXPECT_NE(find(g, "model.norm.bias"), nullptr);
  EXPECT_NE(find(g, "model.embed_positions.weight"), nullptr);

  const ModelDesc x = zoo("mixtral-8x7b");
  const TensorDesc* router = find(x, "model.layers.3.block_sparse_moe.gate.weight");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->tp_split_dim, -1);
  EXPECT_EQ(router->shape, (std::vector<uint64_t>{8, 4096}));
  for (const char* w : {"w1", "w2", "w3"}) {
    const TensorDesc* t =
        find(x, std::string("model.layers.3.block_sparse_moe.experts.7.") + w + ".weight");
    ASSERT_NE(t, nullptr) << w;
    EXPECT_EQ(t->tp_split_dim, std::string(w) == "w2" ? 1 : 0);
  }
  EXPECT_EQ(find(x, "model.layers.3.mlp.gate_proj.weight"), nullptr);
}

TEST(TrainingState, BytesPerParamAndKinds) {
  TrainingState ts;
  EXPECT_EQ(ts.bytes_per_param(), 14u);
  EXPECT_EQ(saved_state_kinds(ts).size(), 4u);
  ts.optimizer = Optimizer::sgd;
  EXPECT_EQ(ts.bytes_per_param(), 10u);
  EXPECT_EQ(saved_state_kinds(ts).back(), StateKind::momentum);
  ts.optimizer = Optimizer::none;
  EXPECT_EQ(ts.bytes_per_param(), 2u);
  EXPECT_EQ(saved_state_kinds(ts), std::vector<StateKind>{StateKind::weights});
  const ModelDesc m = zoo("llama2-7b");
  EXPECT_EQ(training_state_bytes(m, TrainingState{}), 14 * m.num_params());
  EXPECT_EQ(state_bytes(m, TrainingState{}, StateKind::exp_avg), 4 * m.num_params());
}

TEST(DType, ParseAndNames) {
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("BF16"), DType::bf16);
  EXPECT_EQ(parse_dtype("F8_E4M3"), DType::f8_e4m3);
  EXPECT_EQ(parse_dtype("fp32"), DType::f32);
  EXPECT_EQ(parse_dtype("BOOL"), DType::boolean);
  EXPECT_FALSE(parse_dtype("f128"));
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_name(DType::f8_e5m2), "f8_e5m2");
  EXPECT_FALSE(dtype_is_float(DType::i64));
}

TEST(ModelConfig, ZooNameWithOverridesAndRoundTrip) {
  const json j = {{"name", "llama2-7b"}, {"layers", 2},       {"dtype", "f16"},
                  {"optimizer", "sgd"},  {"scale", "1/1024"}, {"comment", "x"}};
  const ModelConfig c = parse_model_config(j);
  EXPECT_EQ(c.preset, "llama2-7b");
  ASSERT_TRUE(c.custom);
  EXPECT_EQ(c.custom->layers, 2u);
  EXPECT_EQ(c.custom->hidden, 4096u);
  EXPECT_EQ(c.state.weight_dtype, DType::f16);
  EXPECT_EQ(c.state.optimizer, Optimizer::sgd);
  EXPECT_DOUBLE_EQ(c.scale, 1.0 / 1024);
  const ModelDesc m = build_model(c);
  EXPECT_EQ(m.source, "custom");
  EXPECT_EQ(m.num_layers, 2u);

  const json out = model_config_to_json(c);
  EXPECT_EQ(out["hidden"], 4096);
  EXPECT_EQ(out["ffn"], 11008);
  EXPECT_EQ(out["dtype"], "f16");
  const ModelConfig back = parse_model_config(out);
  EXPECT_EQ(model_config_to_json(back), out);
  EXPECT_EQ(build_model(back).num_params(), m.num_params());
}

TEST(ModelConfig, CustomModel) {
  const json j = {{"name", "custom"},  {"hidden", 512},          {"layers", 3},
                  {"heads", 8},        {"vocab", 1000},          {"gated_mlp", false},
                  {"layernorm", true}, {"tied_embeddings", true}};
  const ModelConfig c = parse_model_config(j);
  ASSERT_TRUE(c.custom);
  EXPECT_EQ(c.custom->ffn, 2048u);  // default 4h
  EXPECT_EQ(c.custom->kv_heads, 8u);
  const ModelDesc m = build_model(c);
  const uint64_t h = 512, f = 2048, V = 1000;
  // embedding + per layer (2 LN w+b, qkvo, fc1 w+b, fc2 w+b) + final LN
  const uint64_t per_layer = 4 * h + 4 * h * h + f * h + f + h * f + h;
  EXPECT_EQ(m.num_params(), V * h + 3 * per_layer + 2 * h);
}

TEST(ModelConfig, Errors) {
  expect_config_error([] { parse_model_config(json("llama9")); }, "unknown model");
  expect_config_error([] { parse_model_config(json(42)); }, "expected a zoo model name");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "custom"}, {"hidden", 64}});
      },
      "model.layers");
  expect_config_error([] { parse_model_config(json{{"name", "tiny"}, {"bogus", 1}}); }, "bogus");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"dtype", "f128"}});
      },
      "model.dtype");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"scale", 0}});
      },
      "model.scale");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"scale", 2.0}});
      },
      "model.scale");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"scale", "1/x"}});
      },
      "model.scale");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"optimizer", "lion"}});
      },
      "model.optimizer");
  expect_config_error([] { parse_model_config(json{{"name", "tiny"}, {"heads", 7}}); }, "heads");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"kv_heads", 3}});
      },
      "kv_heads");
  expect_config_error(
      [] {
        parse_model_config(json{{"safetensors", "/x"}, {"hidden", 64}});
      },
      "safetensors");
  expect_config_error(
      [] {
        parse_model_config(json{{"safetensors", "/x"}, {"sizing", "dlio"}});
      },
      "dlio");
  expect_config_error([] { parse_model_config(json{{"hidden", 64}}); }, "model.name");
  expect_config_error(
      [] {
        parse_model_config(json{{"safetensors", "/x"}, {"dtype", "f16"}});
      },
      "model.dtype");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"sizing", "fast"}});
      },
      "model.sizing");
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"layers", 1000000}, {"experts", 1000}});
      },
      "10 million");
}

TEST(ModelConfig, DlioSizing) {
  const ModelConfig c = parse_model_config(json{{"name", "llama3-8b"}, {"sizing", "dlio"}});
  EXPECT_EQ(c.state.weight_dtype, DType::f16);  // DLIO counts fp16 weights
  const ModelDesc m = build_model(c);
  // DLIO's layers 0..L+2 (6 tensors per transformer layer), then 6 optimizer groups.
  ASSERT_EQ(m.tensors.size(), 6u * 32 + 3 + 6);
  EXPECT_EQ(m.tensors[0].name, "layer_0.0");
  EXPECT_EQ(m.tensors[6u * 32 + 3].name, "optimization_state.0");
  const uint64_t h = 4096, V = 128256, L = 32, f = 14336, dkv = 128 * 8;
  const uint64_t N = 2 * V * h + L * (2 * h + h * (h + 2 * dkv) + h * h + 3 * h * f) + h;
  EXPECT_EQ(m.num_params(), N);  // the optimizer groups are not parameters
  // For a Llama the DLIO count is the exact count.
  EXPECT_EQ(N, zoo("llama3-8b").num_params());
  EXPECT_EQ(state_bytes(m, c.state, StateKind::weights), 2 * N);
  EXPECT_EQ(state_bytes(m, c.state, StateKind::master), 4 * (N + 5 * h));
  // The MLPerf workload entries default to DLIO sizing; DLIO's dimensions are accepted there.
  EXPECT_EQ(parse_model_config(json("mlperf-llama3-1t")).sizing, "dlio");
  EXPECT_EQ(parse_model_config(json{{"name", "mlperf-llama3-70b"}}).custom->heads, 128u);
}

}  // namespace
}  // namespace ckpt
