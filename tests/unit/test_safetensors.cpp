// safetensors header parsing and model import from real files written to a temp directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/safetensors.hpp"
#include "ckptbench/plan/sharding.hpp"
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

// Sub-byte dtypes, the tiling of the data section and the parallelism checks of imported models
// (issue 15 item 4).
#ifdef CKPT_HAVE_HDF5
#include <hdf5.h>
#endif

namespace ckpt {
namespace {

json st_entry(const std::string& dt, std::vector<uint64_t> shape, uint64_t b, uint64_t e) {
  return json{{"dtype", dt}, {"shape", shape}, {"data_offsets", {b, e}}};
}

// parse_safetensors_header on an in-memory file of header `h` and `data` data bytes.
std::vector<SafetensorsEntry> parse_mem(const json& h, uint64_t data) {
  const std::string b = header_bytes(h.dump());
  return parse_safetensors_header(b, b.size() + data, "mem.safetensors");
}

TEST(SubByteDtypes, BitsAndPackedBytes) {
  EXPECT_EQ(dtype_bits(DType::f4), 4u);
  EXPECT_EQ(dtype_bits(DType::f6_e2m3), 6u);
  EXPECT_EQ(dtype_bits(DType::f6_e3m2), 6u);
  EXPECT_EQ(dtype_bits(DType::bf16), 16u);
  EXPECT_EQ(dtype_bits(DType::boolean), 8u);
  EXPECT_EQ(dtype_bytes(DType::f4, 16), 8u);
  EXPECT_EQ(dtype_bytes(DType::f4, 15), 8u);  // 60 bits: rounded up (a fragment or TP piece)
  EXPECT_EQ(dtype_bytes(DType::f4, 1), 1u);
  EXPECT_EQ(dtype_bytes(DType::f6_e2m3, 4), 3u);
  EXPECT_EQ(dtype_bytes(DType::f6_e3m2, 5), 4u);  // 30 bits
  EXPECT_EQ(dtype_bytes(DType::f6_e3m2, 0), 0u);
  EXPECT_EQ(dtype_bytes(DType::f32, 3), 12u);
  EXPECT_EQ(dtype_bytes(DType::f4, ~0ull), (~0ull / 8) * 4 + 4);  // no intermediate overflow
  EXPECT_THROW(dtype_bytes(DType::f64, 1ull << 62), ConfigError);
  EXPECT_EQ(dtype_size(DType::u16), 2u);
  EXPECT_THROW(dtype_size(DType::f4), Error);  // no per-element byte size
  EXPECT_EQ(parse_dtype("F4"), DType::f4);
  EXPECT_EQ(parse_dtype("F6_E2M3"), DType::f6_e2m3);
  EXPECT_EQ(parse_dtype("fp6_e3m2"), DType::f6_e3m2);
  EXPECT_EQ(dtype_name(DType::f6_e3m2), "f6_e3m2");
  EXPECT_TRUE(dtype_is_float(DType::f4));
  TrainingState ts;
  ts.weight_dtype = DType::f4;
  EXPECT_EQ(ts.bytes_per_param(), 13u);  // 4 + 32 + 2 x 32 bits = 12.5 bytes, rounded up
  expect_config_error(
      [] {
        parse_model_config(json{{"name", "tiny"}, {"dtype", "f5"}});
      },
      "f6_e2m3, f6_e3m2, f4");
}

TEST_F(SafetensorsTest, SubByteTensorsImportWithPackedByteCounts) {
  // F4 [4,4] = 64 bits = 8 bytes, F6_E2M3 [4] = 24 bits = 3 bytes, F6_E3M2 [2,2] = 3 bytes.
  const json h = {{"model.layers.0.self_attn.q_proj.weight", st_entry("F4", {4, 4}, 0, 8)},
                  {"model.layers.0.mlp.up_proj.weight", st_entry("F6_E2M3", {4}, 8, 11)},
                  {"model.layers.1.mlp.down_proj.weight", st_entry("F6_E3M2", {2, 2}, 11, 14)},
                  {"model.layers.1.scales", st_entry("U8", {2}, 14, 16)}};
  const ModelDesc m = import_safetensors(write("q.safetensors", h, 16));
  ASSERT_EQ(m.tensors.size(), 4u);
  EXPECT_EQ(find(m, "model.layers.0.self_attn.q_proj.weight")->dtype, DType::f4);
  EXPECT_EQ(find(m, "model.layers.0.mlp.up_proj.weight")->dtype, DType::f6_e2m3);
  EXPECT_EQ(find(m, "model.layers.1.mlp.down_proj.weight")->dtype, DType::f6_e3m2);
  const TrainingState ts;
  EXPECT_EQ(state_bytes(m, ts, StateKind::weights), 16u);               // the data section, exactly
  EXPECT_EQ(state_bytes(m, ts, StateKind::master), 4u * (16 + 4 + 4));  // f32, float tensors only

  // numel x bits not a multiple of 8: refused whatever the offsets say (safetensors
  // MisalignedSlice), naming the tensor.
  for (uint64_t end : {7, 8})
    expect_config_error(
        [&] {
          import_safetensors(
              write("odd4.safetensors", json{{"w4", st_entry("F4", {3, 5}, 0, end)}}, end));
        },
        "tensor \"w4\": 15 elements of f4 are 60 bits, not a whole number of bytes");
  expect_config_error(
      [&] {
        import_safetensors(
            write("odd6.safetensors", json{{"w6", st_entry("F6_E3M2", {3}, 0, 3)}}, 3));
      },
      "tensor \"w6\": 3 elements of f6_e3m2 are 18 bits");
  // Length != numel x bits / 8.
  expect_config_error(
      [&] {
        import_safetensors(
            write("len4.safetensors", json{{"w", st_entry("F4", {4, 4}, 0, 16)}}, 16));
      },
      "tensor \"w\": data_offsets [0, 16] span 16 bytes but shape x dtype needs 8");
}

TEST_F(SafetensorsTest, SubByteShardsAreRoundedUpPerPiece) {
  // q_proj F4 [2,3] (3 bytes) is split on dim 0 by TP2: two [1,3] pieces of 12 bits, 2 bytes
  // each (ceil). up_proj F4 [4,4] splits into two 4-byte halves, exactly.
  const json h = {{"model.layers.0.self_attn.q_proj.weight", st_entry("F4", {2, 3}, 0, 3)},
                  {"model.layers.0.mlp.up_proj.weight", st_entry("F4", {4, 4}, 3, 11)}};
  const ModelDesc m = import_safetensors(write("tp.safetensors", h, 11));
  TrainingState ts;
  ts.optimizer = Optimizer::none;
  const Parallelism tp2 = resolve_parallelism(Parallelism{2, 1, 1, 0}, 2, m);
  for (int r = 0; r < 2; ++r) {
    const RankShards rs = shards_for_rank(m, ts, tp2, r);
    ASSERT_EQ(rs.shards.size(), 2u);
    for (const Shard& s : rs.shards) {
      const bool q = m.tensors[s.tensor].name.find("q_proj") != std::string::npos;
      EXPECT_EQ(s.numel, q ? 3u : 8u);
      EXPECT_EQ(s.bytes, q ? 2u : 4u) << m.tensors[s.tensor].name << " rank " << r;
    }
    EXPECT_EQ(rs.payload_bytes, 6u);
  }
  // ZeRO-3 over DP 2 of the 22 f4 weights: 11 elements each, 6 bytes per rank's fragments
  // (q_proj 6 elements = 3 bytes + 5 of up_proj = 3 bytes; then 11 of up_proj = 6 bytes).
  const Parallelism z3 = resolve_parallelism(Parallelism{1, 1, 2, 3}, 2, m);
  const RankShards r0 = shards_for_rank(m, ts, z3, 0), r1 = shards_for_rank(m, ts, z3, 1);
  ASSERT_EQ(r0.shards.size(), 2u);
  ASSERT_EQ(r1.shards.size(), 1u);
  EXPECT_EQ(r0.shards[0].numel, 6u);
  EXPECT_EQ(r0.shards[0].bytes, 3u);
  EXPECT_EQ(r0.shards[1].numel, 5u);
  EXPECT_EQ(r0.shards[1].bytes, 3u);  // 20 bits, rounded up
  EXPECT_EQ(r1.shards[0].numel, 11u);
  EXPECT_EQ(r1.shards[0].bytes, 6u);  // 44 bits, rounded up
  EXPECT_EQ(r1.shards[0].elem_offset, 5u);
}

TEST_F(SafetensorsTest, OffsetsMustTileTheDataSection) {
  // Listing order does not matter (safetensors sorts by data_offsets): accepted.
  const auto v =
      parse_mem(json{{"b", st_entry("F32", {1}, 4, 8)}, {"a", st_entry("F32", {1}, 0, 4)}}, 8);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].name, "a");
  // Gap between two tensors.
  expect_config_error(
      [] {
        parse_mem(json{{"a", st_entry("F32", {1}, 0, 4)}, {"b", st_entry("F32", {1}, 8, 12)}}, 12);
      },
      "tensor \"b\" data_offsets [8, 12] leaves a 4-byte gap after tensor \"a\" data_offsets "
      "[0, 4]");
  // Gap before the first tensor.
  expect_config_error(
      [] {
        parse_mem(json{{"a", st_entry("F32", {1}, 4, 8)}}, 8);
      },
      "tensor \"a\" data_offsets [4, 8] leaves a 4-byte gap after the start of "
      "the data section");
  // Overlap, listed in either order.
  for (bool swap : {false, true}) {
    json h = {{swap ? "b" : "a", st_entry("F32", {2}, 0, 8)},
              {swap ? "a" : "b", st_entry("F32", {2}, 4, 12)}};
    const std::string first = swap ? "b" : "a", second = swap ? "a" : "b";
    expect_config_error([&] { parse_mem(h, 12); },
                        "tensor \"" + second + "\" data_offsets [4, 12] overlaps tensor \"" +
                            first + "\" data_offsets [0, 8]");
  }
  // The same bytes claimed twice.
  expect_config_error(
      [] {
        parse_mem(json{{"a", st_entry("F32", {1}, 0, 4)}, {"b", st_entry("I32", {1}, 0, 4)}}, 4);
      },
      "overlaps tensor");
  // An empty tensor inside another one (safetensors: begin must equal the previous end).
  expect_config_error(
      [] {
        parse_mem(json{{"a", st_entry("F32", {2}, 0, 8)}, {"e", st_entry("F32", {0}, 4, 4)}}, 8);
      },
      "tensor \"e\" data_offsets [4, 4] overlaps tensor \"a\"");
  // Bytes after the last tensor; a data section with no tensor.
  expect_config_error(
      [] {
        parse_mem(json{{"a", st_entry("U8", {4}, 0, 4)}}, 8);
      },
      "the last tensor \"a\" data_offsets [0, 4] ends at byte 4 but the data "
      "section holds 8 bytes: 4 bytes belong to no tensor");
  expect_config_error([] { parse_mem(json::object(), 3); }, "3 bytes belong to no tensor");
  // Offsets out of order within an entry (end before begin).
  expect_config_error(
      [] {
        parse_mem(json{{"r", st_entry("F32", {1}, 8, 4)}}, 8);
      },
      "tensor \"r\": data_offsets [8, 4]: end 4 < begin 8");
  // Length mismatch.
  expect_config_error(
      [] {
        parse_mem(json{{"m", st_entry("F32", {3}, 0, 8)}}, 8);
      },
      "tensor \"m\": data_offsets [0, 8] span 8 bytes but shape x dtype needs 12");
  // Through a real file as well (the data size comes from the file size).
  expect_config_error(
      [&] {
        import_safetensors(
            write("gap.safetensors",
                  json{{"a", st_entry("F32", {1}, 0, 4)}, {"b", st_entry("F32", {1}, 6, 10)}}, 10));
      },
      "2-byte gap");
}

// A Llama-style 2-layer model, hidden 64, with q/k/v/o [64, 64] (so any TP up to 64 divides
// every split dimension).
json heads_model(uint64_t kv_rows, uint64_t* size) {
  json h = json::object();
  uint64_t off = 0;
  auto add = [&](const std::string& n, std::vector<uint64_t> shape) {
    uint64_t b = 2;
    for (auto d : shape) b *= d;
    h[n] = st_entry("BF16", shape, off, off + b);
    off += b;
  };
  add("model.embed_tokens.weight", {128, 64});
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "self_attn.q_proj.weight", {64, 64});
    add(p + "self_attn.k_proj.weight", {kv_rows, 64});
    add(p + "self_attn.v_proj.weight", {kv_rows, 64});
    add(p + "self_attn.o_proj.weight", {64, 64});
    add(p + "mlp.up_proj.weight", {128, 64});
    add(p + "mlp.down_proj.weight", {64, 128});
    add(p + "input_layernorm.weight", {64});
  }
  add("model.norm.weight", {64});
  add("lm_head.weight", {128, 64});
  *size = off;
  return h;
}

TEST_F(SafetensorsTest, ImportedModelParallelismChecks) {
  uint64_t size = 0;
  const json model = heads_model(64, &size);
  const std::string p = write("model.safetensors", model, size);
  auto resolve = [](const ModelDesc& m, int tp, int pp) {
    return resolve_parallelism(Parallelism{tp, pp, 1, 0}, tp * pp, m);
  };
  // No config.json: the head count is unknown, only the tensors' dimensions are checked.
  const ModelDesc bare = import_safetensors(p);
  EXPECT_FALSE(bare.dims);
  EXPECT_NO_THROW(resolve(bare, 64, 1));
  // PP beyond the number of layers (2, from the tensor names).
  expect_config_error([&] { resolve(bare, 1, 4); }, "more pipeline stages (pp 4) than layers (2)");
  EXPECT_NO_THROW(resolve(bare, 1, 2));

  // A Hugging Face config.json beside the file gives 32 heads: TP64 is refused like for the zoo.
  std::ofstream(dir_ / "config.json") << json{
      {"architectures", {"LlamaForCausalLM"}},
      {"hidden_size", 64},
      {"intermediate_size", 128},
      {"num_attention_heads", 32},
      {"num_hidden_layers", 2},
      {"num_key_value_heads", 32},
      {"vocab_size", 128}}.dump();
  const ModelDesc m = import_safetensors(p);
  ASSERT_TRUE(m.dims);
  EXPECT_EQ(m.dims->heads, 32u);
  EXPECT_EQ(m.dims->ffn, 128u);
  expect_config_error([&] { resolve(m, 64, 1); },
                      "tp 64 does not divide the attention heads (32) of model model.safetensors");
  EXPECT_NO_THROW(resolve(m, 32, 1));
  // The same for a directory and an index import (config.json in that directory).
  expect_config_error([&] { resolve(import_safetensors(dir_.string()), 64, 1); },
                      "attention heads (32)");
  // GQA: 8 KV heads (k/v [16, 64]); TP16 divides every split dim and the heads, not kv_heads.
  const std::string g = (dir_ / "gqa").string();
  fs::create_directory(g);
  uint64_t gsize = 0;
  const json gqa = heads_model(16, &gsize);
  write("gqa/model.safetensors", gqa, gsize);
  std::ofstream(g + "/config.json") << json{
      {"text_config",
       {{"num_attention_heads", 32},
        {"num_key_value_heads", 8},
        {"hidden_size", 64},
        {"intermediate_size", 128}}}}.dump();
  const ModelDesc gm = import_safetensors(g);
  ASSERT_TRUE(gm.dims);
  expect_config_error([&] { resolve(gm, 16, 1); }, "tp 16 exceeds kv_heads (8)");
  EXPECT_NO_THROW(resolve(gm, 8, 1));
  // A config.json that is not JSON is refused; one without a head count is ignored.
  std::ofstream(g + "/config.json", std::ios::trunc) << "{\"num_attention_heads\": ";
  expect_config_error([&] { import_safetensors(g); }, "config.json: not valid JSON");
  std::ofstream(g + "/config.json", std::ios::trunc) << json{{"model", "tiny"}}.dump();
  EXPECT_FALSE(import_safetensors(g).dims);
  std::ofstream(g + "/config.json", std::ios::trunc) << json{{"num_attention_heads", -4}}.dump();
  expect_config_error([&] { import_safetensors(g); },
                      "\"num_attention_heads\" must be a positive integer, got -4");

  // A split dimension TP does not divide: refused naming the tensor, dim, value and TP.
  fs::remove(dir_ / "config.json");
  const json h = {
      {"model.layers.0.self_attn.q_proj.weight", st_entry("BF16", {96, 64}, 0, 12288)},
      {"model.layers.0.self_attn.o_proj.weight", st_entry("BF16", {64, 96}, 12288, 24576)}};
  const ModelDesc odd = import_safetensors(write("odd.safetensors", h, 24576));
  expect_config_error([&] { resolve(odd, 64, 1); },
                      "tp 64 does not divide dim 0 (96) of tensor "
                      "model.layers.0.self_attn.q_proj.weight");
  EXPECT_NO_THROW(resolve(odd, 32, 1));
}

// An f4 model saved by the HDF5 backend: every sub-byte shard is a 1-D uint8 dataset holding the
// packed bytes, the true shape in attribute "shape"; f32 optimizer state keeps its type and shape.
#ifndef CKPT_HAVE_HDF5
TEST_F(SafetensorsTest, SubByteTensorsAsHdf5Datasets) { CKPT_SKIP_UNLESS_BUILT("hdf5"); }
#else
TEST_F(SafetensorsTest, SubByteTensorsAsHdf5Datasets) {
  const json h = {{"model.layers.0.self_attn.q_proj.weight", st_entry("F4", {4, 4}, 0, 8)},
                  {"model.layers.0.mlp.up_proj.weight", st_entry("F6_E2M3", {2, 4}, 8, 14)}};
  const std::string p = write("h5.safetensors", h, 14);
  const json config = {{"model", {{"safetensors", p}}},
                       {"parallelism", {{"tp", 1}, {"pp", 1}, {"dp", 1}, {"zero_stage", 0}}},
                       {"layout", "aggregated-rank"},
                       {"backend", "hdf5"},
                       {"hdf5", {{"transfer", "independent"}, {"chunk", "contiguous"}}},
                       {"direct", false},
                       {"cache", "fadvise"},
                       {"repetitions", 1},
                       {"verify", true},
                       {"keep", true}};
  ckpt_test::WorldRun run(config, "st-h5");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.error;
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(run.target))
    if (e.is_regular_file() && H5Fis_hdf5(e.path().c_str()) > 0) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  hid_t f = H5Fopen(files[0].c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  struct Want {
    std::string path;
    size_t type_size;
    std::vector<hsize_t> dims;
    hsize_t bytes;
  };
  const std::vector<Want> want = {
      {"/rank_00000/weights/model.layers.0.self_attn.q_proj.weight", 1, {8}, 8},
      {"/rank_00000/weights/model.layers.0.mlp.up_proj.weight", 1, {6}, 6},
      {"/rank_00000/master/model.layers.0.self_attn.q_proj.weight", 4, {4, 4}, 64},
      {"/rank_00000/exp_avg/model.layers.0.mlp.up_proj.weight", 4, {2, 4}, 32}};
  for (const Want& w : want) {
    hid_t d = H5Dopen2(f, w.path.c_str(), H5P_DEFAULT);
    ASSERT_GE(d, 0) << w.path;
    hid_t t = H5Dget_type(d);
    EXPECT_EQ(H5Tget_size(t), w.type_size) << w.path;
    hid_t sp = H5Dget_space(d);
    std::vector<hsize_t> dims(static_cast<size_t>(H5Sget_simple_extent_ndims(sp)));
    H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
    EXPECT_EQ(dims, w.dims) << w.path;
    EXPECT_EQ(H5Dget_storage_size(d), w.bytes) << w.path;
    EXPECT_EQ(H5Aexists(d, "shape") > 0, w.type_size == 1) << w.path;
    H5Sclose(sp);
    H5Tclose(t);
    H5Dclose(d);
  }
  H5Fclose(f);
}
#endif  // CKPT_HAVE_HDF5

}  // namespace
}  // namespace ckpt
