// safetensors header parsing and model import from real files written to a temp directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "ckptbench/error.hpp"
#include "ckptbench/model.hpp"
#include "ckptbench/safetensors.hpp"
#include "ckptbench/sharding.hpp"
#include "support.hpp"

namespace ckpt {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using ckpt_test::expect_config_error;

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// Header bytes (length + JSON text) for `header`.
std::string header_bytes(const std::string& text) { return le64(text.size()) + text; }

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::path(::testing::TempDir()) / "ckpt_st_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes header text and `data_size` zero bytes (sparse); returns the path.
  std::string write_raw(const std::string& name, const std::string& bytes, uint64_t data_size) {
    const std::string p = (dir_ / name).string();
    {
      std::ofstream f(p, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    fs::resize_file(p, bytes.size() + data_size);
    return p;
  }
  std::string write(const std::string& name, const json& header, uint64_t data_size) {
    return write_raw(name, header_bytes(header.dump()), data_size);
  }
  // A consistent header for tensors (name, dtype, shape) laid out back to back.
  static json layout(
      const std::vector<std::tuple<std::string, std::string, std::vector<uint64_t>>>& tensors,
      uint64_t* data_size) {
    json h = json::object();
    uint64_t off = 0;
    for (const auto& [name, dt, shape] : tensors) {
      uint64_t n = dt == "BF16" || dt == "F16" ? 2 : dt == "F32" || dt == "I32" ? 4 : 8;
      for (uint64_t d : shape) n *= d;
      h[name] = {{"dtype", dt}, {"shape", shape}, {"data_offsets", {off, off + n}}};
      off += n;
    }
    h["__metadata__"] = {{"format", "pt"}};
    *data_size = off;
    return h;
  }

  fs::path dir_;
};

const TensorDesc* find(const ModelDesc& m, const std::string& name) {
  for (const auto& t : m.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

TEST_F(SafetensorsTest, ImportsOneFile) {
  uint64_t size = 0;
  const json h = layout({{"model.embed_tokens.weight", "BF16", {64, 16}},
                         {"model.layers.0.self_attn.q_proj.weight", "BF16", {16, 16}},
                         {"model.layers.0.self_attn.o_proj.weight", "BF16", {16, 16}},
                         {"model.layers.0.input_layernorm.weight", "F32", {16}},
                         {"model.layers.1.mlp.down_proj.weight", "F16", {16, 32}},
                         {"model.layers.1.mlp.up_proj.weight", "F16", {32, 16}},
                         {"model.norm.weight", "F32", {16}},
                         {"lm_head.weight", "BF16", {64, 16}},
                         {"step", "I64", {}}},
                        &size);
  const std::string p = write("model.safetensors", h, size);
  const ModelDesc m = import_safetensors(p);
  EXPECT_EQ(m.tensors.size(), 9u);
  EXPECT_EQ(m.num_layers, 2u);
  EXPECT_EQ(m.source, "safetensors:" + p);
  EXPECT_FALSE(m.dims);
  const TensorDesc* q = find(m, "model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->tp_split_dim, 0);
  EXPECT_EQ(q->layer, 0);
  EXPECT_EQ(q->dtype, DType::bf16);
  EXPECT_EQ(find(m, "model.layers.0.self_attn.o_proj.weight")->tp_split_dim, 1);
  EXPECT_EQ(find(m, "model.layers.1.mlp.down_proj.weight")->tp_split_dim, 1);
  EXPECT_EQ(find(m, "model.layers.1.mlp.down_proj.weight")->dtype, DType::f16);
  EXPECT_EQ(find(m, "model.layers.1.mlp.up_proj.weight")->tp_split_dim, 0);
  EXPECT_EQ(find(m, "model.layers.0.input_layernorm.weight")->tp_split_dim, -1);
  EXPECT_EQ(find(m, "model.embed_tokens.weight")->placement, Placement::first_stage);
  EXPECT_EQ(find(m, "model.embed_tokens.weight")->tp_split_dim, 0);
  EXPECT_EQ(find(m, "model.norm.weight")->placement, Placement::last_stage);
  EXPECT_EQ(find(m, "lm_head.weight")->placement, Placement::last_stage);
  EXPECT_EQ(find(m, "step")->shape, std::vector<uint64_t>{});
  // Pipeline order: first-stage, layers, last-stage.
  EXPECT_EQ(m.tensors.back().placement, Placement::last_stage);
  EXPECT_NE(m.tensors.front().placement, Placement::last_stage);

  // Weights keep each tensor's own dtype; the integer buffer gets no optimizer state.
  const TrainingState ts;
  EXPECT_EQ(state_bytes(m, ts, StateKind::weights), size);
  const uint64_t float_params = m.num_params() - 1;
  EXPECT_EQ(state_bytes(m, ts, StateKind::master), 4 * float_params);

  // Through the config path, and sharded over TP2 x PP2.
  const ModelConfig c = parse_model_config(json{{"safetensors", p}});
  EXPECT_EQ(c.preset, "safetensors");
  EXPECT_EQ(model_config_to_json(parse_model_config(model_config_to_json(c))),
            model_config_to_json(c));
  const ModelDesc m2 = build_model(c);
  EXPECT_EQ(m2.tensors.size(), 9u);
  const Parallelism par = resolve_parallelism(Parallelism{2, 2, 0, 1}, 8, m2);
  uint64_t weights = 0;
  for (int r = 0; r < 8; ++r)
    for (const Shard& s : shards_for_rank(m2, ts, par, r).shards)
      if (s.kind == StateKind::weights && m2.tensors[s.tensor].tp_split_dim >= 0)
        weights += s.bytes;
  uint64_t split_bytes = 0;
  for (const auto& t : m2.tensors)
    if (t.tp_split_dim >= 0) split_bytes += t.numel() * dtype_size(*t.dtype);
  EXPECT_EQ(weights, split_bytes);
}

TEST_F(SafetensorsTest, GptStyleNames) {
  uint64_t size = 0;
  const json h = layout({{"transformer.wte.weight", "F32", {50, 8}},
                         {"transformer.h.3.mlp.c_fc.weight", "F32", {8, 32}},
                         {"transformer.h.3.mlp.c_proj.weight", "F32", {32, 8}},
                         {"transformer.ln_f.weight", "F32", {8}},
                         {"blocks.7.attn.query_key_value.weight", "F32", {24, 8}}},
                        &size);
  const ModelDesc m = import_safetensors(write("gpt.safetensors", h, size));
  EXPECT_EQ(find(m, "transformer.h.3.mlp.c_fc.weight")->layer, 3);
  EXPECT_EQ(find(m, "transformer.h.3.mlp.c_fc.weight")->tp_split_dim, 0);
  EXPECT_EQ(find(m, "transformer.h.3.mlp.c_proj.weight")->tp_split_dim, 1);
  EXPECT_EQ(find(m, "transformer.wte.weight")->placement, Placement::first_stage);
  EXPECT_EQ(find(m, "transformer.ln_f.weight")->placement, Placement::last_stage);
  EXPECT_EQ(find(m, "blocks.7.attn.query_key_value.weight")->layer, 7);
  EXPECT_EQ(m.num_layers, 8u);
}

TEST_F(SafetensorsTest, DirectoryAndIndex) {
  uint64_t s1 = 0, s2 = 0;
  const json h1 = layout({{"model.embed_tokens.weight", "BF16", {64, 16}},
                          {"model.layers.0.mlp.up_proj.weight", "BF16", {32, 16}}},
                         &s1);
  const json h2 = layout({{"model.layers.1.mlp.up_proj.weight", "BF16", {32, 16}},
                          {"lm_head.weight", "BF16", {64, 16}}},
                         &s2);
  write("model-00002-of-00002.safetensors", h2, s2);
  write("model-00001-of-00002.safetensors", h1, s1);
  const ModelDesc d = import_safetensors(dir_.string());
  EXPECT_EQ(d.tensors.size(), 4u);
  EXPECT_EQ(d.num_layers, 2u);

  json idx = {{"metadata", {{"total_size", s1 + s2}}},
              {"weight_map",
               {{"model.embed_tokens.weight", "model-00001-of-00002.safetensors"},
                {"model.layers.0.mlp.up_proj.weight", "model-00001-of-00002.safetensors"},
                {"model.layers.1.mlp.up_proj.weight", "model-00002-of-00002.safetensors"},
                {"lm_head.weight", "model-00002-of-00002.safetensors"}}}};
  const std::string ip = (dir_ / "model.safetensors.index.json").string();
  std::ofstream(ip) << idx.dump();
  const ModelDesc i = import_safetensors(ip);
  EXPECT_EQ(i.tensors.size(), 4u);
  EXPECT_EQ(i.num_params(), d.num_params());

  // The index names a tensor its file does not hold.
  idx["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "model-00002-of-00002.safetensors";
  std::ofstream(ip, std::ios::trunc) << idx.dump();
  expect_config_error([&] { import_safetensors(ip); }, "does not list it");
  // Files must not escape the index directory.
  idx["weight_map"].erase("model.layers.9.mlp.up_proj.weight");
  idx["weight_map"]["lm_head.weight"] = "../model-00002-of-00002.safetensors";
  std::ofstream(ip, std::ios::trunc) << idx.dump();
  expect_config_error([&] { import_safetensors(ip); }, "inside the index's directory");
  idx["weight_map"]["lm_head.weight"] = "/etc/passwd";
  std::ofstream(ip, std::ios::trunc) << idx.dump();
  expect_config_error([&] { import_safetensors(ip); }, "inside the index's directory");
  idx["weight_map"]["lm_head.weight"] = "sub/x.safetensors";
  std::ofstream(ip, std::ios::trunc) << idx.dump();
  expect_config_error([&] { import_safetensors(ip); }, "inside the index's directory");
  std::ofstream(ip, std::ios::trunc) << "{\"weight_map\": [1]}";
  expect_config_error([&] { import_safetensors(ip); }, "weight_map");
  std::ofstream(ip, std::ios::trunc) << "{not json";
  expect_config_error([&] { import_safetensors(ip); }, "not valid JSON");
}

TEST_F(SafetensorsTest, DirectoryErrors) {
  const fs::path empty = dir_ / "empty";
  fs::create_directory(empty);
  expect_config_error([&] { import_safetensors(empty.string()); }, "no *.safetensors");
  expect_config_error([&] { import_safetensors((dir_ / "missing").string()); }, "cannot access");
  // Same tensor in two files.
  uint64_t s = 0;
  const json h = layout({{"a.weight", "F32", {4}}}, &s);
  write("x1.safetensors", h, s);
  write("x2.safetensors", h, s);
  expect_config_error([&] { import_safetensors(dir_.string()); }, "more than one file");
}

TEST_F(SafetensorsTest, MalformedFiles) {
  auto entry = [](const std::string& dt, std::vector<uint64_t> shape, uint64_t b, uint64_t e) {
    return json{{"dtype", dt}, {"shape", shape}, {"data_offsets", {b, e}}};
  };
  // Truncated: fewer than 8 bytes; header length beyond the file; length absurd.
  expect_config_error([&] { import_safetensors(write_raw("t1.safetensors", "abc", 0)); },
                      "truncated");
  expect_config_error([&] { import_safetensors(write_raw("t2.safetensors", le64(100) + "{}", 0)); },
                      "exceeds the file size");
  expect_config_error(
      [&] { import_safetensors(write_raw("t3.safetensors", le64(~0ull), 1 << 20)); }, "absurd");
  expect_config_error(
      [&] { import_safetensors(write_raw("t4.safetensors", le64(200ull << 20), 0)); }, "absurd");
  // Bad JSON, non-object header, non-object entry.
  expect_config_error(
      [&] { import_safetensors(write_raw("j1.safetensors", header_bytes("{\"a\": "), 0)); },
      "not valid JSON");
  expect_config_error(
      [&] { import_safetensors(write_raw("j2.safetensors", header_bytes("[1,2]"), 0)); },
      "must be a JSON object");
  expect_config_error(
      [&] {
        import_safetensors(write("j3.safetensors", json{{"a", 3}}, 0));
      },
      "entry must be an object");
  expect_config_error(
      [&] {
        import_safetensors(write("j4.safetensors", json{{"a", {{"dtype", "F32"}}}}, 0));
      },
      "needs");
  expect_config_error(
      [&] {
        import_safetensors(
            write("j5.safetensors", json{{"__metadata__", 1}, {"a", entry("F32", {1}, 0, 4)}}, 4));
      },
      "__metadata__");
  // Deep nesting where the format allows any value (inside __metadata__).
  const std::string deep =
      "{\"__metadata__\":{\"x\":" + std::string(100, '[') + std::string(100, ']') + "}}";
  expect_config_error(
      [&] { import_safetensors(write_raw("j6.safetensors", header_bytes(deep), 0)); },
      "nests too deeply");
  // Read as a stream: a value of the wrong kind is refused where it stands, whatever its size.
  std::string many = "{\"a\":[";
  for (int i = 0; i < 4'100'000; ++i) many += "0,";
  many += "0]}";
  expect_config_error(
      [&] { import_safetensors(write_raw("j7.safetensors", header_bytes(many), 0)); },
      "entry must be an object, got array");
  expect_config_error(
      [&] {
        json e = entry("F32", std::vector<uint64_t>(17, 1), 0, 4);
        import_safetensors(write("j8.safetensors", json{{"a", e}}, 4));
      },
      "at most 16 dimensions");
  // The same name twice: the JSON object keeps one, the file has both; refused.
  expect_config_error(
      [&] {
        const std::string dup = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
        import_safetensors(write_raw("j9.safetensors", header_bytes(dup), 8));
      },
      "listed twice");
  // Unknown dtype, bad shape.
  expect_config_error(
      [&] {
        import_safetensors(write("d1.safetensors", json{{"a", entry("F128", {1}, 0, 16)}}, 16));
      },
      "unknown dtype");
  expect_config_error(
      [&] {
        json e = entry("F32", {1}, 0, 4);
        e["shape"] = {-1};
        import_safetensors(write("d2.safetensors", json{{"a", e}}, 4));
      },
      "non-negative integer");
  // Offsets: out of range, end < begin, overlapping, size mismatch.
  expect_config_error(
      [&] {
        import_safetensors(write("o1.safetensors", json{{"a", entry("F32", {4}, 0, 16)}}, 8));
      },
      "out of range");
  expect_config_error(
      [&] {
        import_safetensors(write("o2.safetensors", json{{"a", entry("F32", {1}, 8, 4)}}, 8));
      },
      "< begin");
  expect_config_error(
      [&] {
        import_safetensors(
            write("o3.safetensors",
                  json{{"a", entry("F32", {2}, 0, 8)}, {"b", entry("F32", {2}, 4, 12)}}, 12));
      },
      "overlap");
  expect_config_error(
      [&] {
        import_safetensors(write("o4.safetensors", json{{"a", entry("F32", {3}, 0, 8)}}, 8));
      },
      "shape x dtype needs 12");
  expect_config_error(
      [&] {
        json e = entry("F64", {1ull << 62, 4}, 0, 8);
        import_safetensors(write("o5.safetensors", json{{"a", e}}, 8));
      },
      "overflow");
  // Unsafe names.
  for (const std::string& bad : std::vector<std::string>{"", "/abs/x", "model/../x", "a..b",
                                                         std::string("a\0b", 3), "a\\b"}) {
    expect_config_error(
        [&] {
          import_safetensors(write("n.safetensors", json{{bad, entry("F32", {1}, 0, 4)}}, 4));
        },
        "unsafe name");
  }
  // Not a regular file / unreadable.
  expect_config_error([&] { import_safetensors((dir_ / "nope.safetensors").string()); },
                      "cannot access");
}

TEST(SafetensorsHeader, ParsesInMemoryAndSortsByOffset) {
  const std::string text =
      R"({"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[12,24]},)"
      R"("a":{"dtype":"BOOL","shape":[12],"data_offsets":[0,12]},)"
      R"("e":{"dtype":"F8_E5M2","shape":[0],"data_offsets":[24,24]},"__metadata__":{}})";
  const std::string bytes = header_bytes(text);
  const auto v = parse_safetensors_header(bytes, bytes.size() + 24, "mem");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name, "a");
  EXPECT_EQ(v[0].dtype, DType::boolean);
  EXPECT_EQ(v[1].name, "b");
  EXPECT_EQ(v[1].shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(v[2].dtype, DType::f8_e5m2);
  // The prefix given is shorter than the header it announces.
  EXPECT_THROW(parse_safetensors_header(bytes.substr(0, 20), bytes.size() + 24, "mem"),
               ConfigError);
  EXPECT_THROW(parse_safetensors_header("", 0, "mem"), ConfigError);
}

}  // namespace
}  // namespace ckpt

TEST(SafetensorsHeader, AcceptsEveryByteSizedDtypeOfTheFormat) {
  // dtype, bytes per element (safetensors' Dtype::size()).
  const std::vector<std::pair<std::string, uint64_t>> types = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8},     {"C64", 8}};
  std::string text = "{";
  uint64_t off = 0;
  for (size_t i = 0; i < types.size(); i++) {
    const uint64_t n = 3 * types[i].second;
    if (i) text += ",";
    text += "\"t";
    text += std::to_string(i);
    text += "\":{\"dtype\":\"";
    text += types[i].first;
    text += "\",\"shape\":[3],\"data_offsets\":[";
    text += std::to_string(off);
    text += ",";
    text += std::to_string(off + n);
    text += "]}";
    off += n;
  }
  text += "}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; i++) bytes[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  bytes += text;
  const auto entries = ckpt::parse_safetensors_header(bytes, bytes.size() + off, "all.safetensors");
  ASSERT_EQ(entries.size(), types.size());
  for (size_t i = 0; i < types.size(); i++) {
    EXPECT_EQ(ckpt::dtype_size(entries[i].dtype), types[i].second) << types[i].first;
    EXPECT_EQ(entries[i].end - entries[i].begin, 3 * types[i].second) << types[i].first;
  }
  // One the format does not define is refused, naming those it does.
  const std::string bad = R"({"x":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})";
  std::string b2(8, '\0');
  b2[0] = static_cast<char>(bad.size());
  b2 += bad;
  ckpt_test::expect_config_error(
      [&] { ckpt::parse_safetensors_header(b2, b2.size() + 16, "bad.safetensors"); },
      "U64, U32, U16");
}
