// Model description -> tensor inventory (pure). Built-in zoo, custom dimensions, safetensors
// import.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt {

enum class DType {
  f64,
  f32,
  f16,
  bf16,
  f8_e4m3,
  f8_e5m2,
  f8_e8m0,
  c64,
  i64,
  i32,
  i16,
  i8,
  u64,
  u32,
  u16,
  u8,
  boolean,
  // Sub-byte floats (OCP microscaling element types), packed: numel * bits / 8 bytes, see
  // dtype_bits / dtype_bytes.
  f4,       // 4 bits (MXFP4 E2M1)
  f6_e2m3,  // 6 bits
  f6_e3m2,  // 6 bits
};
// Bits per element: 4 (f4), 6 (f6_e2m3, f6_e3m2), else 8 x the byte size.
uint64_t dtype_bits(DType t);
// Bytes of `numel` packed elements: ceil(numel * bits / 8), exact for byte-sized dtypes (the
// safetensors rule; a sub-byte tensor whose numel * bits is not a multiple of 8 is refused at
// import, but a TP split or ZeRO fragment of one is rounded up). Throws ConfigError on overflow.
uint64_t dtype_bytes(DType t, uint64_t numel);
// Bytes per element of a byte-sized dtype. Throws Error for the sub-byte dtypes (f4, f6_*):
// every byte count goes through dtype_bytes.
uint64_t dtype_size(DType t);
std::string_view dtype_name(
    DType t);  // "bf16", "f32", ... (safetensors spellings accepted on parse)
std::optional<DType> parse_dtype(std::string_view s);
// Floating-point dtypes carry optimizer state; integer/bool tensors (buffers) save weights only.
// The sub-byte float formats (f4, f6_*) count as floating point like f8_*: a tensor stored in
// them is a (quantized) weight and gets master/optimizer state in TrainingState's dtypes; use
// optimizer "none" for an inference-only quantized checkpoint.
bool dtype_is_float(DType t);

// Where a tensor lives in the pipeline.
enum class Placement { layer, first_stage, last_stage };
enum class StateKind;

struct TensorDesc {
  std::string name;  // e.g. "layers.3.attention.wq.weight"; never contains "..", no leading '/'
  std::vector<uint64_t> shape;  // full (unsharded) shape
  int tp_split_dim = -1;        // dimension split across TP ranks; -1 = replicated on every TP rank
  Placement placement = Placement::layer;
  int layer = -1;  // layer index when placement == layer
  // Weight dtype of this tensor when it differs from TrainingState::weight_dtype (safetensors
  // import keeps each tensor's own dtype). Master/optimizer dtypes always come from TrainingState.
  std::optional<DType> dtype;
  // tp_split_dim need not be divisible by TP (vocabulary-parallel embedding/lm_head: Megatron pads
  // the vocabulary; ckptbench instead gives the first (n % TP) TP ranks one extra row, so the
  // bytes summed over ranks stay exact).
  bool tp_uneven_ok = false;
  // Synthetic tensor holding one state kind only (DLIO sizing: layer tensors hold weights, the
  // optimizer groups one optimizer kind each); unset = every kind of the training state.
  std::optional<StateKind> only_kind;
  uint64_t numel() const;
};

// Dimensions of a decoder-only transformer (docs/config.md, `model`).
struct TransformerDims {
  uint64_t hidden = 0;
  uint64_t layers = 0;
  uint64_t ffn = 0;  // intermediate size; 0 = 4 * hidden
  uint64_t heads = 0;
  uint64_t kv_heads = 0;  // 0 = heads
  uint64_t vocab = 0;
  bool tied_embeddings = false;
  bool gated_mlp = true;   // SwiGLU (w1,w2,w3) vs plain GPT (fc1+bias, fc2+bias)
  bool layernorm = false;  // LayerNorm (weight+bias) instead of RMSNorm
  bool attn_bias = false;  // GPT-style qkv/o biases
  uint64_t experts = 0;    // 0 or 1 = dense; E > 1 = MoE with a router [h, E]
  uint64_t positions = 0;  // learned position embeddings [positions, h] (GPT); 0 = none (RoPE)
};

struct ModelDesc {
  std::string name;
  std::string source;                   // "zoo", "custom", "safetensors:<path>"
  std::optional<TransformerDims> dims;  // known for zoo/custom models
  uint64_t num_layers = 0;  // for PP splitting (from dims, or inferred from tensor names)
  std::vector<TensorDesc> tensors;
  std::string sizing = "exact";  // "dlio": one synthetic "model_states" tensor of N params
  uint64_t num_params() const;
};

// What state is saved per parameter (docs/config.md, `model.state`).
enum class Optimizer { adam, sgd, none };
struct TrainingState {
  DType weight_dtype = DType::bf16;
  DType master_dtype = DType::f32;  // fp32 master weights (absent when optimizer == none)
  DType optim_dtype = DType::f32;   // Adam moments / SGD momentum
  Optimizer optimizer = Optimizer::adam;
  // Bytes per parameter of the full training state (14 for bf16 + fp32 master + 2 fp32 moments);
  // rounded up to whole bytes when a sub-byte dtype makes it fractional.
  uint64_t bytes_per_param() const;
};

// Kinds of state a shard belongs to. adam: master, exp_avg, exp_avg_sq; sgd: master, momentum.
enum class StateKind { weights, master, exp_avg, exp_avg_sq, momentum };
std::string_view state_kind_name(StateKind k);
// State kinds saved for a training state, weights first.
std::vector<StateKind> saved_state_kinds(const TrainingState& ts);
DType state_dtype(const TrainingState& ts, StateKind k);
// dtype of state kind `k` of tensor `t` (weights use t.dtype when set). nullopt when the tensor
// has no such state (optimizer kinds of integer/bool tensors).
std::optional<DType> tensor_state_dtype(const TensorDesc& t, const TrainingState& ts, StateKind k);
// Bytes of state kind `k` of the whole (unsharded, unreplicated) model at scale 1.
uint64_t state_bytes(const ModelDesc& m, const TrainingState& ts, StateKind k);
// Sum of state_bytes over saved_state_kinds(ts).
uint64_t training_state_bytes(const ModelDesc& m, const TrainingState& ts);
// DLIO/MLPerf parameter count N (docs/config.md, `model.sizing`).
uint64_t dlio_num_params(const TransformerDims& d);

// The "model" section of the config, resolved.
struct ModelConfig {
  std::string preset;  // zoo name, "custom" or "safetensors"
  std::optional<TransformerDims> custom;
  std::string safetensors_path;  // file, directory, or *.index.json
  TrainingState state;
  double scale = 1.0;            // shrink every tensor's bytes, keep tensor/file counts; (0, 1]
  std::string sizing = "exact";  // "exact" | "dlio" (MLPerf Storage checkpoint sizing)
};

// Parses the config's "model" value: a zoo name string, or an object
// {"name"|"preset": ..., "hidden": ..., ..., "dtype": "bf16", "optimizer": "adam", "scale": 0.001,
//  "safetensors": "path", "sizing": "exact|dlio"}. Throws ConfigError naming the key.
ModelConfig parse_model_config(const nlohmann::json& v, const std::string& path = "model");
nlohmann::json model_config_to_json(const ModelConfig& m);

// Builds the tensor inventory. Throws ConfigError on unknown preset or unreadable/malformed import.
ModelDesc build_model(const ModelConfig& m);

struct ZooEntry {
  std::string name;
  std::string description;
  TransformerDims dims;
  std::string sizing = "exact";  // default model.sizing ("dlio" for the MLPerf Storage workloads)
};
const std::vector<ZooEntry>& model_zoo();

}  // namespace ckpt
