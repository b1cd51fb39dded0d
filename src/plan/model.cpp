// Model zoo, custom dimensions and the "model" config section -> tensor inventory (pure).
#include "ckptbench/plan/model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/plan/dlio.hpp"
#include "ckptbench/plan/safetensors.hpp"

namespace ckpt {

namespace {

struct DTypeInfo {
  DType t;
  const char* name;
  uint64_t bits;  // per element; 4 and 6 for the packed sub-byte floats
  bool is_float;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::f64, "f64", 64, true},        {DType::f32, "f32", 32, true},
    {DType::f16, "f16", 16, true},        {DType::bf16, "bf16", 16, true},
    {DType::f8_e4m3, "f8_e4m3", 8, true}, {DType::f8_e5m2, "f8_e5m2", 8, true},
    {DType::f8_e8m0, "f8_e8m0", 8, true}, {DType::f6_e2m3, "f6_e2m3", 6, true},
    {DType::f6_e3m2, "f6_e3m2", 6, true}, {DType::f4, "f4", 4, true},
    {DType::c64, "c64", 64, true},        {DType::i64, "i64", 64, false},
    {DType::i32, "i32", 32, false},       {DType::i16, "i16", 16, false},
    {DType::i8, "i8", 8, false},          {DType::u64, "u64", 64, false},
    {DType::u32, "u32", 32, false},       {DType::u16, "u16", 16, false},
    {DType::u8, "u8", 8, false},          {DType::boolean, "bool", 8, false},
};

const DTypeInfo& info(DType t) {
  for (const auto& d : kDTypes)
    if (d.t == t) return d;
  throw Error("internal: unknown dtype");
}

// Checked arithmetic: every product of dimensions goes through these.
uint64_t mul(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw ConfigError(what + ": size overflows 64 bits");
  return r;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

TransformerDims llama(uint64_t h, uint64_t layers, uint64_t f, uint64_t heads, uint64_t kv,
                      uint64_t vocab) {
  TransformerDims d;
  d.hidden = h;
  d.layers = layers;
  d.ffn = f;
  d.heads = heads;
  d.kv_heads = kv;
  d.vocab = vocab;
  return d;
}

TransformerDims gpt3_175b() {
  // GPT-3 (Brown et al. 2020): LayerNorm, biases everywhere, plain 4h MLP, learned positions
  // (2048), input and output embeddings tied. 174.6 B parameters ("175 B").
  TransformerDims d = llama(12288, 96, 4 * 12288, 96, 96, 50257);
  d.gated_mlp = false;
  d.layernorm = true;
  d.attn_bias = true;
  d.tied_embeddings = true;
  d.positions = 2048;
  return d;
}

TransformerDims moe(TransformerDims d, uint64_t experts) {
  d.experts = experts;
  return d;
}

}  // namespace

uint64_t dtype_bits(DType t) { return info(t).bits; }

uint64_t dtype_bytes(DType t, uint64_t numel) {
  const uint64_t bits = info(t).bits;
  // ceil(numel * bits / 8) without forming numel * bits: whole groups of 8 elements take `bits`
  // bytes, the rest (< 8 elements) at most `bits` bytes.
  uint64_t whole = 0, total = 0;
  if (__builtin_mul_overflow(numel / 8, bits, &whole) ||
      __builtin_add_overflow(whole, ((numel % 8) * bits + 7) / 8, &total))
    throw ConfigError(std::to_string(numel) + " elements of " + info(t).name +
                      ": byte count overflows 64 bits");
  return total;
}

uint64_t dtype_size(DType t) {
  const DTypeInfo& d = info(t);
  if (d.bits % 8 != 0) {
    std::string msg = "internal: dtype_size(";
    msg += d.name;
    msg += "): sub-byte dtype has no per-element byte size, use dtype_bytes";
    throw Error(msg);
  }
  return d.bits / 8;
}
std::string_view dtype_name(DType t) { return info(t).name; }
bool dtype_is_float(DType t) { return info(t).is_float; }

std::optional<DType> parse_dtype(std::string_view s) {
  const std::string l = lower(s);
  for (const auto& d : kDTypes)
    if (l == d.name) return d.t;
  struct Alias {
    const char* name;
    DType t;
  };
  static constexpr Alias aliases[] = {
      {"fp64", DType::f64},         {"float64", DType::f64},      {"double", DType::f64},
      {"fp32", DType::f32},         {"float32", DType::f32},      {"float", DType::f32},
      {"fp16", DType::f16},         {"float16", DType::f16},      {"half", DType::f16},
      {"bfloat16", DType::bf16},    {"fp8_e4m3", DType::f8_e4m3}, {"fp8_e5m2", DType::f8_e5m2},
      {"int64", DType::i64},        {"int32", DType::i32},        {"int16", DType::i16},
      {"int8", DType::i8},          {"uint8", DType::u8},         {"boolean", DType::boolean},
      {"uint16", DType::u16},       {"uint32", DType::u32},       {"uint64", DType::u64},
      {"fp8_e8m0", DType::f8_e8m0}, {"complex64", DType::c64},    {"fp4", DType::f4},
      {"fp6_e2m3", DType::f6_e2m3}, {"fp6_e3m2", DType::f6_e3m2},
  };
  for (const auto& a : aliases)
    if (l == a.name) return a.t;
  return std::nullopt;
}

uint64_t TensorDesc::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n = mul(n, d, "tensor " + name);
  return n;
}

uint64_t ModelDesc::num_params() const {
  uint64_t n = 0;
  for (const auto& t : tensors)
    if (!t.only_kind || *t.only_kind == StateKind::weights) n += t.numel();
  return n;
}

uint64_t TrainingState::bytes_per_param() const {
  uint64_t bits = dtype_bits(weight_dtype);
  if (optimizer == Optimizer::adam) bits += dtype_bits(master_dtype) + 2 * dtype_bits(optim_dtype);
  if (optimizer == Optimizer::sgd) bits += dtype_bits(master_dtype) + dtype_bits(optim_dtype);
  return (bits + 7) / 8;
}

std::string_view state_kind_name(StateKind k) {
  switch (k) {
    case StateKind::weights:
      return "weights";
    case StateKind::master:
      return "master";
    case StateKind::exp_avg:
      return "exp_avg";
    case StateKind::exp_avg_sq:
      return "exp_avg_sq";
    case StateKind::momentum:
      return "momentum";
  }
  return "?";
}

std::vector<StateKind> saved_state_kinds(const TrainingState& ts) {
  switch (ts.optimizer) {
    case Optimizer::adam:
      return {StateKind::weights, StateKind::master, StateKind::exp_avg, StateKind::exp_avg_sq};
    case Optimizer::sgd:
      return {StateKind::weights, StateKind::master, StateKind::momentum};
    case Optimizer::none:
      return {StateKind::weights};
  }
  return {StateKind::weights};
}

DType state_dtype(const TrainingState& ts, StateKind k) {
  switch (k) {
    case StateKind::weights:
      return ts.weight_dtype;
    case StateKind::master:
      return ts.master_dtype;
    default:
      return ts.optim_dtype;
  }
}

std::optional<DType> tensor_state_dtype(const TensorDesc& t, const TrainingState& ts, StateKind k) {
  const DType w = t.dtype.value_or(ts.weight_dtype);
  if (t.only_kind) {
    if (*t.only_kind != k) return std::nullopt;
    return k == StateKind::weights ? w : state_dtype(ts, k);
  }
  if (k == StateKind::weights) return w;
  if (!dtype_is_float(w)) return std::nullopt;
  return state_dtype(ts, k);
}

uint64_t state_bytes(const ModelDesc& m, const TrainingState& ts, StateKind k) {
  uint64_t b = 0;
  for (const auto& t : m.tensors)
    if (auto dt = tensor_state_dtype(t, ts, k)) b += dtype_bytes(*dt, t.numel());
  return b;
}

uint64_t training_state_bytes(const ModelDesc& m, const TrainingState& ts) {
  uint64_t b = 0;
  for (StateKind k : saved_state_kinds(ts)) b += state_bytes(m, ts, k);
  return b;
}

uint64_t dlio_num_params(const TransformerDims& d) {
  const uint64_t h = d.hidden, V = d.vocab, L = d.layers, f = d.ffn ? d.ffn : 4 * h;
  const uint64_t kv = d.kv_heads ? d.kv_heads : d.heads;
  const uint64_t d_kv = (h / d.heads) * kv;
  return 2 * V * h + L * (2 * h + h * (h + 2 * d_kv) + h * h + 3 * h * f) + h;
}

const std::vector<ZooEntry>& model_zoo() {
  static const std::vector<ZooEntry> zoo = [] {
    std::vector<ZooEntry> z;
    z.push_back({"llama2-7b", "Llama 2 7B (6.74 B params)", llama(4096, 32, 11008, 32, 32, 32000)});
    z.push_back(
        {"llama2-13b", "Llama 2 13B (13.0 B params)", llama(5120, 40, 13824, 40, 40, 32000)});
    z.push_back({"llama2-70b", "Llama 2 70B, GQA 64/8 (69.0 B params)",
                 llama(8192, 80, 28672, 64, 8, 32000)});
    z.push_back({"llama3-8b", "Llama 3 8B, GQA 32/8 (8.03 B params)",
                 llama(4096, 32, 14336, 32, 8, 128256)});
    z.push_back({"llama3-70b", "Llama 3 70B, GQA 64/8 (70.6 B params)",
                 llama(8192, 80, 28672, 64, 8, 128256)});
    z.push_back({"llama3.1-405b", "Llama 3.1 405B, GQA 128/8 (405.9 B params)",
                 llama(16384, 126, 53248, 128, 8, 128256)});
    // MLPerf Storage checkpoint workloads (mlcommons/storage configs/dlio/workload/llama3_*.yaml)
    // with their own dimensions (the 70B uses 128 heads, the 1T 25872/192 heads, which only DLIO
    // sizing accepts); sized as DLIO sizes them by default.
    z.push_back({"mlperf-llama3-8b",
                 "MLPerf Storage llama3_8b workload (DLIO sizing, 8.03 B params)",
                 llama(4096, 32, 14336, 32, 8, 128256), "dlio"});
    z.push_back({"mlperf-llama3-70b",
                 "MLPerf Storage llama3_70b workload: 128 heads (DLIO sizing, 69.9 B params)",
                 llama(8192, 80, 28672, 128, 8, 128256), "dlio"});
    z.push_back({"mlperf-llama3-405b",
                 "MLPerf Storage llama3_405b workload (DLIO sizing, 405.9 B params)",
                 llama(16384, 126, 53248, 128, 8, 128256), "dlio"});
    z.push_back({"mlperf-llama3-1t",
                 "MLPerf Storage llama3_1t workload: h 25872, 192/32 heads (DLIO sizing, 1.18 T "
                 "params)",
                 llama(25872, 128, 98304, 192, 32, 128256), "dlio"});
    z.push_back({"gpt3-175b",
                 "GPT-3 175B: LayerNorm, biases, plain 4h MLP, tied embeddings (174.6 B params)",
                 gpt3_175b()});
    z.push_back({"mixtral-8x7b", "Mixtral-8x7B-like MoE, 8 experts, GQA 32/8 (46.7 B params)",
                 moe(llama(4096, 32, 14336, 32, 8, 32000), 8)});
    z.push_back({"tiny", "tiny test model: h 256, 4 layers, ffn 688, 8/8 heads (3.7 M params)",
                 llama(256, 4, 688, 8, 8, 1024)});
    z.push_back({"tiny-moe",
                 "tiny MoE test model: h 128, 4 layers, 4 experts of ffn 256 (2.1 M params)",
                 moe(llama(128, 4, 256, 8, 8, 1024), 4)});
    return z;
  }();
  return zoo;
}

namespace {

const ZooEntry* find_zoo(const std::string& name) {
  for (const auto& e : model_zoo())
    if (e.name == name) return &e;
  return nullptr;
}

std::string zoo_names() {
  std::string s;
  for (const auto& e : model_zoo()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

// Checks and normalises dims (ffn 0 -> 4h, kv_heads 0 -> heads). `path` names the config section.
// `dlio`: the dimensions DLIO accepts (heads need not divide hidden: DLIO rounds the head size
// down), for model.sizing "dlio".
TransformerDims resolve_dims(TransformerDims d, const std::string& path, bool dlio = false) {
  auto need = [&](uint64_t v, const char* key) {
    if (v == 0)
      throw ConfigError(path + "." + key + ": required for a custom model and must be > 0");
  };
  need(d.hidden, "hidden");
  need(d.layers, "layers");
  need(d.heads, "heads");
  need(d.vocab, "vocab");
  if (d.ffn == 0) d.ffn = 4 * d.hidden;
  if (d.kv_heads == 0) d.kv_heads = d.heads;
  if (!dlio && d.hidden % d.heads != 0)
    throw ConfigError(path + ".heads: " + std::to_string(d.heads) + " does not divide hidden " +
                      std::to_string(d.hidden));
  if (!dlio && (d.kv_heads > d.heads || d.heads % d.kv_heads != 0))
    throw ConfigError(path + ".kv_heads: " + std::to_string(d.kv_heads) + " must divide heads " +
                      std::to_string(d.heads));
  const uint64_t experts = std::max<uint64_t>(d.experts, 1);
  // Tensor count guard: ~ layers * (experts * 3 + 8).
  if (mul(d.layers, experts * 4 + 12, path) > 10'000'000)
    throw ConfigError(path + ": layers x experts gives more than 10 million tensors");
  return d;
}

TensorDesc tensor(std::string name, std::vector<uint64_t> shape, int split, int layer) {
  TensorDesc t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.tp_split_dim = split;
  t.layer = layer;
  t.placement = Placement::layer;
  return t;
}

void add_mlp(std::vector<TensorDesc>& out, const std::string& p, const TransformerDims& d,
             int layer, bool moe_expert) {
  const uint64_t h = d.hidden, f = d.ffn;
  if (d.gated_mlp) {
    if (moe_expert) {
      out.push_back(tensor(p + "w1.weight", {f, h}, 0, layer));
      out.push_back(tensor(p + "w2.weight", {h, f}, 1, layer));
      out.push_back(tensor(p + "w3.weight", {f, h}, 0, layer));
    } else {
      out.push_back(tensor(p + "gate_proj.weight", {f, h}, 0, layer));
      out.push_back(tensor(p + "up_proj.weight", {f, h}, 0, layer));
      out.push_back(tensor(p + "down_proj.weight", {h, f}, 1, layer));
    }
  } else {
    out.push_back(tensor(p + "fc1.weight", {f, h}, 0, layer));
    out.push_back(tensor(p + "fc1.bias", {f}, 0, layer));
    out.push_back(tensor(p + "fc2.weight", {h, f}, 1, layer));
    out.push_back(tensor(p + "fc2.bias", {h}, -1, layer));
  }
}

void add_norm(std::vector<TensorDesc>& out, const std::string& p, const TransformerDims& d,
              int layer) {
  out.push_back(tensor(p + ".weight", {d.hidden}, -1, layer));
  if (d.layernorm) out.push_back(tensor(p + ".bias", {d.hidden}, -1, layer));
}

std::vector<TensorDesc> transformer_tensors(const TransformerDims& d) {
  std::vector<TensorDesc> out;
  const uint64_t h = d.hidden, kvd = h / d.heads * d.kv_heads;
  auto first = [&](TensorDesc t) {
    t.placement = Placement::first_stage;
    t.layer = -1;
    out.push_back(std::move(t));
  };
  auto last = [&](TensorDesc t) {
    t.placement = Placement::last_stage;
    t.layer = -1;
    out.push_back(std::move(t));
  };
  TensorDesc emb = tensor("model.embed_tokens.weight", {d.vocab, h}, 0, -1);
  emb.tp_uneven_ok = true;
  first(emb);
  if (d.positions) first(tensor("model.embed_positions.weight", {d.positions, h}, -1, -1));
  for (uint64_t li = 0; li < d.layers; ++li) {
    const int l = static_cast<int>(li);
    const std::string p = "model.layers." + std::to_string(li) + ".";
    add_norm(out, p + "input_layernorm", d, l);
    const std::string a = p + "self_attn.";
    out.push_back(tensor(a + "q_proj.weight", {h, h}, 0, l));
    out.push_back(tensor(a + "k_proj.weight", {kvd, h}, 0, l));
    out.push_back(tensor(a + "v_proj.weight", {kvd, h}, 0, l));
    if (d.attn_bias) {
      out.push_back(tensor(a + "q_proj.bias", {h}, 0, l));
      out.push_back(tensor(a + "k_proj.bias", {kvd}, 0, l));
      out.push_back(tensor(a + "v_proj.bias", {kvd}, 0, l));
    }
    out.push_back(tensor(a + "o_proj.weight", {h, h}, 1, l));
    if (d.attn_bias) out.push_back(tensor(a + "o_proj.bias", {h}, -1, l));
    add_norm(out, p + "post_attention_layernorm", d, l);
    if (d.experts > 1) {
      const std::string m = p + "block_sparse_moe.";
      out.push_back(tensor(m + "gate.weight", {d.experts, h}, -1, l));
      for (uint64_t e = 0; e < d.experts; ++e)
        add_mlp(out, m + "experts." + std::to_string(e) + ".", d, l, true);
    } else {
      add_mlp(out, p + "mlp.", d, l, false);
    }
  }
  TensorDesc norm = tensor("model.norm.weight", {h}, -1, -1);
  last(norm);
  if (d.layernorm) last(tensor("model.norm.bias", {h}, -1, -1));
  if (!d.tied_embeddings) {
    TensorDesc head = tensor("lm_head.weight", {d.vocab, h}, 0, -1);
    head.tp_uneven_ok = true;
    last(head);
  }
  return out;
}

Optimizer parse_optimizer(const std::string& s) {
  if (s == "adam") return Optimizer::adam;
  if (s == "sgd") return Optimizer::sgd;
  return Optimizer::none;
}

std::string optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::adam:
      return "adam";
    case Optimizer::sgd:
      return "sgd";
    case Optimizer::none:
      return "none";
  }
  return "none";
}

DType read_dtype(ObjectReader& r, const std::string& key, DType def) {
  auto s = r.opt_str(key);
  if (!s) return def;
  auto t = parse_dtype(*s);
  if (!t)
    throw ConfigError(r.key_path(key) + ": unknown dtype \"" + *s +
                      "\" (allowed: f64, f32, f16, bf16, f8_e4m3, f8_e5m2, f8_e8m0, f6_e2m3, "
                      "f6_e3m2, f4, c64, i64, i32, i16, i8, u64, u32, u16, u8, bool; "
                      "fp32/float32/bfloat16/... aliases accepted)");
  return *t;
}

double read_scale(ObjectReader& r) {
  const json* v = r.raw("scale");
  if (!v) return 1.0;
  const std::string where = r.key_path("scale");
  double s = 0;
  if (v->is_number()) {
    s = v->get<double>();
  } else if (v->is_string()) {
    // "1/1024" or "0.001"
    const std::string t = v->get<std::string>();
    try {
      size_t pos = 0;
      const auto slash = t.find('/');
      if (slash == std::string::npos) {
        s = std::stod(t, &pos);
        if (pos != t.size()) throw std::invalid_argument("junk");
      } else {
        const std::string a = t.substr(0, slash), b = t.substr(slash + 1);
        size_t pa = 0, pb = 0;
        const double num = std::stod(a, &pa), den = std::stod(b, &pb);
        // Two positive finite numbers ("-1/-1024" is not a way to write 1/1024).
        if (pa != a.size() || pb != b.size() || !(num > 0) || !(den > 0) || !std::isfinite(num) ||
            !std::isfinite(den))
          throw std::invalid_argument("junk");
        s = num / den;
      }
    } catch (const std::exception&) {
      throw ConfigError(where + ": \"" + text_excerpt(t, 60) +
                        "\" is not a number or a fraction of two positive numbers like \"1/1024\"");
    }
  } else {
    throw ConfigError(where + ": expected a number in (0, 1] or a fraction string like \"1/1024\"");
  }
  if (!(s > 0.0 && s <= 1.0))
    throw ConfigError(where + ": must be in (0, 1], got " + std::to_string(s));
  return s;
}

const char* const kDimKeys[] = {"hidden",   "layers", "ffn",     "heads",
                                "kv_heads", "vocab",  "experts", "positions"};
const char* const kBoolKeys[] = {"tied_embeddings", "gated_mlp", "layernorm", "attn_bias"};

uint64_t* dim_field(TransformerDims& d, std::string_view k) {
  if (k == "hidden") return &d.hidden;
  if (k == "layers") return &d.layers;
  if (k == "ffn") return &d.ffn;
  if (k == "heads") return &d.heads;
  if (k == "kv_heads") return &d.kv_heads;
  if (k == "vocab") return &d.vocab;
  if (k == "experts") return &d.experts;
  return &d.positions;
}

bool* bool_field(TransformerDims& d, std::string_view k) {
  if (k == "tied_embeddings") return &d.tied_embeddings;
  if (k == "gated_mlp") return &d.gated_mlp;
  if (k == "layernorm") return &d.layernorm;
  return &d.attn_bias;
}

}  // namespace

ModelConfig parse_model_config(const nlohmann::json& v, const std::string& path) {
  ModelConfig m;
  if (v.is_string()) {
    const std::string name = v.get<std::string>();
    const ZooEntry* z = find_zoo(name);
    if (!z)
      throw ConfigError(path + ": unknown model \"" + name + "\" (zoo: " + zoo_names() +
                        "; or an object with \"name\": \"custom\" and dimensions, or "
                        "\"safetensors\": path)");
    m.preset = name;
    m.sizing = z->sizing;
    if (m.sizing == "dlio") m.state.weight_dtype = DType::f16;
    m.custom = resolve_dims(z->dims, path, m.sizing == "dlio");
    return m;
  }
  if (!v.is_object())
    throw ConfigError(path + ": expected a zoo model name or an object, got " + json_type_name(v));

  ObjectReader r(v, path);
  r.allow("comment");
  std::optional<std::string> name = r.opt_str("name");
  if (auto preset = r.opt_str("preset")) {
    if (name && *name != *preset)
      throw ConfigError(path + ": \"name\" and \"preset\" disagree; give one of them");
    name = preset;
  }
  const auto st = r.opt_str("safetensors");
  const ZooEntry* zoo_default = name ? find_zoo(*name) : nullptr;
  m.sizing = r.choice("sizing", zoo_default ? zoo_default->sizing : "exact", {"exact", "dlio"});
  // DLIO counts fp16 weights; the other dtypes default as in exact sizing.
  m.state.weight_dtype = read_dtype(r, "dtype", m.sizing == "dlio" ? DType::f16 : DType::bf16);
  m.state.master_dtype = read_dtype(r, "master_dtype", DType::f32);
  m.state.optim_dtype = read_dtype(r, "optim_dtype", DType::f32);
  m.state.optimizer = parse_optimizer(r.choice("optimizer", "adam", {"adam", "sgd", "none"}));
  m.scale = read_scale(r);

  TransformerDims d;
  bool any_dim = false;
  for (const char* k : kDimKeys) {
    // experts may be 0 (dense); positions 0 = none; other zeros mean "default" where allowed.
    if (auto x = r.opt_integer(k, 0, int64_t{1} << 40)) {
      *dim_field(d, k) = static_cast<uint64_t>(*x);
      any_dim = true;
    }
  }
  std::optional<bool> bools[4];
  for (int i = 0; i < 4; ++i) {
    bools[i] = r.opt_boolean(kBoolKeys[i]);
    if (bools[i]) any_dim = true;
  }
  r.finish();

  if (st) {
    if (name && *name != "safetensors")
      throw ConfigError(path +
                        ".name: must be absent or \"safetensors\" when \"safetensors\" is "
                        "given (got \"" +
                        *name + "\")");
    if (any_dim)
      throw ConfigError(path +
                        ": dimension keys cannot be combined with \"safetensors\" (the "
                        "layout comes from the file headers)");
    if (r.has("dtype"))
      throw ConfigError(path +
                        ".dtype: cannot be combined with \"safetensors\" (imported weights "
                        "keep each tensor's own dtype from the file headers)");
    if (st->empty()) throw ConfigError(path + ".safetensors: empty path");
    if (m.sizing == "dlio")
      throw ConfigError(path +
                        ".sizing: \"dlio\" needs model dimensions; it cannot be used with "
                        "\"safetensors\"");
    m.preset = "safetensors";
    m.safetensors_path = *st;
    return m;
  }
  if (!name)
    throw ConfigError(path + ".name: required (a zoo model: " + zoo_names() +
                      "; or \"custom\" with dimensions; or give \"safetensors\": path)");
  if (*name == "safetensors")
    throw ConfigError(path + ".safetensors: required when name is \"safetensors\"");
  TransformerDims base;
  if (*name != "custom") {
    const ZooEntry* z = find_zoo(*name);
    if (!z)
      throw ConfigError(path + ".name: unknown model \"" + *name + "\" (zoo: " + zoo_names() +
                        ", or \"custom\")");
    base = z->dims;
  }
  for (const char* k : kDimKeys)
    if (r.has(k)) *dim_field(base, k) = *dim_field(d, k);
  for (int i = 0; i < 4; ++i)
    if (bools[i]) *bool_field(base, kBoolKeys[i]) = *bools[i];
  m.preset = *name;
  m.custom = resolve_dims(base, path, m.sizing == "dlio");
  return m;
}

nlohmann::json model_config_to_json(const ModelConfig& m) {
  json j = json::object();
  j["name"] = m.preset;
  if (m.preset == "safetensors") {
    j["safetensors"] = m.safetensors_path;
  } else if (m.custom) {
    const TransformerDims& d = *m.custom;
    j["hidden"] = d.hidden;
    j["layers"] = d.layers;
    j["ffn"] = d.ffn;
    j["heads"] = d.heads;
    j["kv_heads"] = d.kv_heads;
    j["vocab"] = d.vocab;
    j["experts"] = d.experts;
    j["positions"] = d.positions;
    j["tied_embeddings"] = d.tied_embeddings;
    j["gated_mlp"] = d.gated_mlp;
    j["layernorm"] = d.layernorm;
    j["attn_bias"] = d.attn_bias;
  }
  if (m.preset != "safetensors") j["dtype"] = dtype_name(m.state.weight_dtype);
  j["master_dtype"] = dtype_name(m.state.master_dtype);
  j["optim_dtype"] = dtype_name(m.state.optim_dtype);
  j["optimizer"] = optimizer_name(m.state.optimizer);
  j["scale"] = m.scale;
  j["sizing"] = m.sizing;
  return j;
}

ModelDesc build_model(const ModelConfig& m) {
  if (m.preset == "safetensors") {
    ModelDesc d = import_safetensors(m.safetensors_path);
    d.sizing = "exact";
    return d;
  }
  ModelDesc d;
  d.name = m.preset;
  if (m.custom) {
    d.dims = resolve_dims(*m.custom, "model", m.sizing == "dlio");
  } else {
    const ZooEntry* z = find_zoo(m.preset);
    if (!z)
      throw ConfigError("model: unknown model \"" + m.preset + "\" (zoo: " + zoo_names() + ")");
    d.dims = z->dims;
  }
  const ZooEntry* z = find_zoo(m.preset);
  d.source = (z && z->dims.hidden == d.dims->hidden && z->dims.layers == d.dims->layers &&
              z->dims.ffn == d.dims->ffn && z->dims.heads == d.dims->heads &&
              z->dims.kv_heads == d.dims->kv_heads && z->dims.vocab == d.dims->vocab &&
              z->dims.experts == d.dims->experts && z->dims.positions == d.dims->positions &&
              z->dims.tied_embeddings == d.dims->tied_embeddings &&
              z->dims.gated_mlp == d.dims->gated_mlp && z->dims.layernorm == d.dims->layernorm &&
              z->dims.attn_bias == d.dims->attn_bias)
                 ? "zoo"
                 : "custom";
  d.num_layers = d.dims->layers;
  d.sizing = m.sizing;
  d.tensors = m.sizing == "dlio" ? dlio_tensors(*d.dims) : transformer_tensors(*d.dims);
  return d;
}

}  // namespace ckpt
