// safetensors header reader and model import. Reads only the 8-byte length and the JSON header of
// each file (pread of the prefix), never the tensor data.
#include "ckptbench/plan/safetensors.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"

namespace ckpt {

namespace {

constexpr uint64_t kMaxHeader = 100ull << 20;  // 100 MiB
constexpr size_t kMaxEntries = 10'000'000;
constexpr int kMaxDepth = 16;                        // legit headers nest 3 deep
constexpr uint64_t kMaxIndexBytes = 100ull << 20;    // model.safetensors.index.json
constexpr uint64_t kMaxHfConfigBytes = 16ull << 20;  // config.json beside the model
constexpr const char* kWantModel =
    "give a .safetensors file, a model.safetensors.index.json or a directory of shards";

using json = nlohmann::json;

std::optional<DType> st_dtype(const std::string& s) {
  static const std::pair<const char*, DType> names[] = {
      {"F64", DType::f64},         {"F32", DType::f32},         {"F16", DType::f16},
      {"BF16", DType::bf16},       {"F8_E4M3", DType::f8_e4m3}, {"F8_E5M2", DType::f8_e5m2},
      {"I64", DType::i64},         {"I32", DType::i32},         {"I16", DType::i16},
      {"I8", DType::i8},           {"U8", DType::u8},           {"BOOL", DType::boolean},
      {"U16", DType::u16},         {"U32", DType::u32},         {"U64", DType::u64},
      {"F8_E8M0", DType::f8_e8m0}, {"C64", DType::c64},         {"F6_E2M3", DType::f6_e2m3},
      {"F6_E3M2", DType::f6_e3m2}, {"F4", DType::f4},
  };
  for (const auto& [n, t] : names)
    if (s == n) return t;
  return std::nullopt;
}

std::string st_dtype_names() {
  return "F64, F32, F16, BF16, F8_E4M3, F8_E5M2, F8_E8M0, F6_E2M3, F6_E3M2, F4, C64, I64, I32, "
         "I16, I8, U64, U32, U16, U8, BOOL";
}

// Printable, bounded rendering of an untrusted name for messages.
std::string shown(std::string_view s) {
  std::string r;
  for (char c : s.substr(0, 120)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      r += "\\x";
      r += hex[u >> 4];
      r += hex[u & 15];
    } else {
      r += c;
    }
  }
  if (s.size() > 120) r += "...";
  return "\"" + r + "\"";
}

// Names (tensor names, index file names) must be safe to use as path components.
const char* unsafe_name_reason(std::string_view n) {
  if (n.empty()) return "empty name";
  if (n.front() == '/') return "absolute name";
  if (n.find("..") != std::string_view::npos) return "name contains \"..\"";
  if (n.find('\0') != std::string_view::npos) return "name contains NUL";
  if (n.find('\\') != std::string_view::npos) return "name contains a backslash";
  return nullptr;
}

uint64_t le64(std::string_view b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[static_cast<size_t>(i)]);
  return v;
}

void pread_all(int fd, char* buf, size_t n, uint64_t off, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, buf + done, n - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw ConfigError(path + ": read failed: " + errno_text(errno));
    }
    if (r == 0) throw ConfigError(path + ": truncated safetensors file (unexpected end of file)");
    done += static_cast<size_t>(r);
  }
}

// `what` and `want` word the refusal of a path that is not a regular file (InputFile): a FIFO
// named as the model or among its shards is refused, never opened for a blocking read.
std::vector<SafetensorsEntry> read_header_file(const std::string& path, const std::string& what,
                                               const std::string& want) {
  InputFile f(path, what + " '" + path + "'", want);
  if (!f.is_open())
    throw ConfigError(path + ": cannot open safetensors file: " + errno_text(f.error()));
  const uint64_t size = f.size();
  if (size < 8)
    throw ConfigError(path + ": truncated safetensors file (" + std::to_string(size) +
                      " bytes, shorter than the 8-byte header length)");
  std::string buf(8, '\0');
  pread_all(f.fd(), buf.data(), 8, 0, path);
  const uint64_t n = le64(buf);
  if (n > kMaxHeader || n > size - 8) {
    // Let the parser produce the message; it needs only the 8 bytes to decide.
    return parse_safetensors_header(buf, size, path);
  }
  buf.resize(8 + n);
  pread_all(f.fd(), buf.data() + 8, n, 8, path);
  return parse_safetensors_header(buf, size, path);
}

bool ends_with(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

std::string dir_of(const std::string& p) {
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

// Layer index from "...layers.{i}." / "...h.{i}." / "...blocks.{i}." (first match).
int infer_layer(const std::string& name) {
  static const char* const keys[] = {"layers.", "h.", "blocks."};
  for (const char* k : keys) {
    const std::string key = k;
    size_t pos = 0;
    while ((pos = name.find(key, pos)) != std::string::npos) {
      const bool boundary = pos == 0 || name[pos - 1] == '.' || name[pos - 1] == '/';
      size_t q = pos + key.size();
      size_t digits = 0;
      uint64_t v = 0;
      while (q < name.size() && name[q] >= '0' && name[q] <= '9' && digits < 9) {
        v = v * 10 + static_cast<uint64_t>(name[q] - '0');
        ++q;
        ++digits;
      }
      if (boundary && digits > 0 && (q == name.size() || name[q] == '.'))
        return static_cast<int>(v);
      pos += key.size();
    }
  }
  return -1;
}

// Does any dot-separated component of `name` equal one of `parts`?
bool has_component(const std::string& name, std::initializer_list<std::string_view> parts) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const std::string_view c(name.data() + start, end - start);
    for (auto p : parts)
      if (c == p) return true;
    start = end + 1;
  }
  return false;
}

bool contains_any(const std::string& name, std::initializer_list<std::string_view> parts) {
  for (auto p : parts)
    if (name.find(p) != std::string::npos) return true;
  return false;
}

TensorDesc to_tensor(SafetensorsEntry&& e) {
  TensorDesc t;
  t.shape = std::move(e.shape);
  t.dtype = e.dtype;
  t.layer = infer_layer(e.name);
  const bool vocab = contains_any(e.name, {"embed", "lm_head", "wte"});
  const bool is_weight = ends_with(e.name, ".weight") || t.shape.size() >= 2;
  if (vocab && !contains_any(e.name, {"embed_positions", "wpe"})) {
    t.tp_split_dim = 0;
    t.tp_uneven_ok = true;
  } else if (has_component(e.name, {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "w1",
                                    "w3", "c_fc", "query_key_value", "fc1"})) {
    t.tp_split_dim = 0;  // column-parallel: weight and bias split on the output dim
  } else if (has_component(e.name, {"o_proj", "down_proj", "w2", "dense", "c_proj", "fc2"})) {
    t.tp_split_dim = is_weight && t.shape.size() >= 2 ? 1 : -1;  // row-parallel; bias replicated
  } else {
    t.tp_split_dim = -1;
  }
  if (t.tp_split_dim >= static_cast<int>(t.shape.size())) t.tp_split_dim = -1;
  if (t.layer >= 0) {
    t.placement = Placement::layer;
  } else if (contains_any(e.name, {"lm_head", "norm", "ln_f"}) &&
             !contains_any(e.name, {"embed"})) {
    t.placement = Placement::last_stage;
  } else {
    t.placement = Placement::first_stage;
  }
  t.name = std::move(e.name);
  return t;
}

ModelDesc make_model(const std::string& path, std::vector<SafetensorsEntry> entries) {
  ModelDesc m;
  m.source = "safetensors:" + path;
  auto slash = path.find_last_of('/', path.size() > 1 ? path.size() - 2 : std::string::npos);
  m.name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (!m.name.empty() && m.name.back() == '/') m.name.pop_back();
  if (entries.empty()) throw ConfigError(path + ": no tensors found");
  {
    std::unordered_set<std::string_view> seen;
    seen.reserve(entries.size());
    for (const auto& e : entries)
      if (!seen.insert(e.name).second)
        throw ConfigError(path + ": tensor " + shown(e.name) + " appears in more than one file");
  }
  int max_layer = -1;
  m.tensors.reserve(entries.size());
  for (auto& e : entries) {
    m.tensors.push_back(to_tensor(std::move(e)));
    max_layer = std::max(max_layer, m.tensors.back().layer);
  }
  // Pipeline order: first-stage tensors, layers ascending, last-stage tensors (stable).
  auto rank = [](const TensorDesc& t) {
    return t.placement == Placement::first_stage  ? -1
           : t.placement == Placement::last_stage ? (1 << 30)
                                                  : t.layer;
  };
  std::stable_sort(m.tensors.begin(), m.tensors.end(),
                   [&](const TensorDesc& a, const TensorDesc& b) { return rank(a) < rank(b); });
  m.num_layers = static_cast<uint64_t>(max_layer + 1);
  return m;
}

ModelDesc import_index(const std::string& path) {
  InputFile in(path, "safetensors index '" + path + "'",
               "give a model.safetensors.index.json file, a .safetensors file or a directory of "
               "shards");
  if (!in.is_open()) throw ConfigError(path + ": cannot open: " + errno_text(in.error()));
  json j = parse_json_limited(in.read_all(kMaxIndexBytes, " for a safetensors index"), path);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw ConfigError(path +
                      ": expected an object with a \"weight_map\" object (tensor name -> "
                      "file name)");
  const std::string dir = dir_of(path);
  std::map<std::string, std::set<std::string>> by_file;  // file -> tensor names it should hold
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string())
      throw ConfigError(path + ": weight_map[" + shown(name) + "]: expected a file name string");
    const std::string f = file.get<std::string>();
    if (const char* why = unsafe_name_reason(f); why || f.find('/') != std::string::npos)
      throw ConfigError(path + ": weight_map[" + shown(name) + "]: file " + shown(f) +
                        " must be a plain file name inside the index's directory (" +
                        (why ? why : "contains '/'") + ")");
    if (const char* why = unsafe_name_reason(name))
      throw ConfigError(path + ": weight_map: tensor " + shown(name) + ": " + why);
    by_file[f].insert(name);
  }
  if (by_file.empty()) throw ConfigError(path + ": weight_map is empty");
  std::vector<SafetensorsEntry> all;
  for (const auto& [f, names] : by_file) {
    const std::string fp = dir + "/" + f;
    auto entries = read_header_file(fp, "safetensors shard",
                                    "the weight_map of '" + path + "' must name regular files");
    std::set<std::string> have;
    for (const auto& e : entries) have.insert(e.name);
    for (const auto& n : names)
      if (!have.count(n))
        throw ConfigError(path + ": weight_map says tensor " + shown(n) + " is in " + fp +
                          ", but that file's header does not list it");
    for (auto& e : entries)
      if (names.count(e.name)) all.push_back(std::move(e));
  }
  return make_model(path, std::move(all));
}

// Head counts and sizes from a Hugging Face config.json beside the import, when it has
// "num_attention_heads" (or GPT-2's "n_head"), at the top level or in "text_config". They become
// m.dims so that resolve_parallelism applies the zoo's TP rules (heads, kv_heads, ffn divisible
// by TP) to the imported model; the tensor inventory still comes from the safetensors headers.
// No config.json, or one without a head count, leaves m.dims empty.
void read_hf_config(const std::string& path, ModelDesc& m) {
  InputFile in(path, "'" + path + "' (read beside the safetensors model for its head counts)",
               "make it a regular JSON file or remove it");
  if (!in.is_open()) {
    if (in.error() == ENOENT) return;
    throw ConfigError(path + ": cannot open: " + errno_text(in.error()));
  }
  // Read for the attention head count of the model.
  json j = parse_json_limited(in.read_all(kMaxHfConfigBytes, " for a config.json"), path);
  if (!j.is_object()) return;
  auto has_heads = [](const json& o) {
    return o.is_object() && (o.contains("num_attention_heads") || o.contains("n_head"));
  };
  const json* c = &j;
  if (!has_heads(j)) {
    auto tc = j.find("text_config");
    if (tc == j.end() || !has_heads(*tc)) return;
    c = &*tc;
  }
  // First of `keys` present: a positive integer, or 0 when absent or null.
  auto get = [&](std::initializer_list<const char*> keys) -> uint64_t {
    for (const char* k : keys) {
      auto it = c->find(k);
      if (it == c->end() || it->is_null()) continue;
      if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 ||
          it->get<uint64_t>() > (uint64_t{1} << 40))
        throw ConfigError(path + ": \"" + k + "\" must be a positive integer, got " +
                          json_excerpt(*it));
      return it->get<uint64_t>();
    }
    return 0;
  };
  TransformerDims d;
  d.heads = get({"num_attention_heads", "n_head"});
  d.kv_heads = get({"num_key_value_heads", "num_kv_heads", "n_head_kv"});
  if (d.kv_heads == 0) {
    auto mq = c->find("multi_query");  // Falcon-7B: one KV head
    d.kv_heads = mq != c->end() && mq->is_boolean() && mq->get<bool>() ? 1 : d.heads;
  }
  d.hidden = get({"hidden_size", "n_embd"});
  d.ffn = get({"intermediate_size", "n_inner", "ffn_dim"});
  if (d.ffn == 0) d.ffn = 4 * d.hidden;  // GPT-2: n_inner null = 4 x n_embd; 0 when unknown
  d.layers = get({"num_hidden_layers", "n_layer"});
  if (d.layers == 0) d.layers = m.num_layers;
  d.vocab = get({"vocab_size"});
  if (d.heads == 0) return;  // "num_attention_heads": null
  m.dims = d;
}

ModelDesc import_dir(const std::string& path) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(path.c_str()), ::closedir);
  if (!d) throw ConfigError(path + ": cannot open directory: " + errno_text(errno));
  std::vector<std::string> files;
  while (dirent* e = ::readdir(d.get())) {
    const std::string n = e->d_name;
    if (n.size() > 12 && ends_with(n, ".safetensors") && n[0] != '.') files.push_back(n);
  }
  if (files.empty()) throw ConfigError(path + ": directory holds no *.safetensors files");
  std::sort(files.begin(), files.end());
  std::vector<SafetensorsEntry> all;
  for (const auto& f : files) {
    auto entries =
        read_header_file(path + "/" + f, "safetensors shard",
                         "every *.safetensors file in a model directory must be a regular file");
    for (auto& e : entries) all.push_back(std::move(e));
  }
  return make_model(path, std::move(all));
}

std::string offsets_text(const SafetensorsEntry& e) {
  std::string r = "data_offsets [";
  r += std::to_string(e.begin);
  r += ", ";
  r += std::to_string(e.end);
  r += "]";
  return r;
}

// Shape, offsets and size of one entry against each other and the data section (safetensors
// Metadata::validate, per tensor: numel * bitsize must not overflow, must be a multiple of 8, and
// end - begin must equal numel * bitsize / 8).
template <class Where>
void validate_entry(const SafetensorsEntry& e, Where&& where_fn, uint64_t data_size) {
  const auto where = [&] { return where_fn(); };
  uint64_t numel = 1;
  for (uint64_t x : e.shape)
    if (__builtin_mul_overflow(numel, x, &numel))
      throw ConfigError(where() + ": shape element count overflows");
  if (e.end < e.begin)
    throw ConfigError(where() + ": " + offsets_text(e) + ": end " + std::to_string(e.end) +
                      " < begin " + std::to_string(e.begin));
  if (e.end > data_size)
    throw ConfigError(where() + ": " + offsets_text(e) + " out of range of the " +
                      std::to_string(data_size) + "-byte data section");
  const uint64_t bits = dtype_bits(e.dtype);
  uint64_t nbits = 0;
  if (__builtin_mul_overflow(numel, bits, &nbits))
    throw ConfigError(where() + ": shape x dtype size overflows 64 bits");
  if (nbits % 8 != 0)
    throw ConfigError(where() + ": " + std::to_string(numel) + " elements of " +
                      std::string(dtype_name(e.dtype)) + " are " + std::to_string(nbits) +
                      " bits, not a whole number of bytes (safetensors requires numel x bits to "
                      "be a multiple of 8)");
  const uint64_t nbytes = nbits / 8;
  if (nbytes != e.end - e.begin)
    throw ConfigError(where() + ": " + offsets_text(e) + " span " +
                      std::to_string(e.end - e.begin) + " bytes but shape x dtype needs " +
                      std::to_string(nbytes));
}

// The tensors, sorted by (begin, end), must tile the data section: each starts where the previous
// ended (the first at 0), and the last ends at the end of the data section (safetensors: sort by
// data_offsets, Metadata::validate requires begin == previous end, read_metadata requires the last
// end + 8 + header length == file size). Listing order in the header does not matter.
void check_tiling(const std::vector<SafetensorsEntry>& sorted, uint64_t data_size,
                  const std::string& what) {
  uint64_t cursor = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const auto& e : sorted) {
    if (e.begin != cursor) {
      std::string msg = what + ": tensor " + shown(e.name) + " " + offsets_text(e);
      if (e.begin < cursor) {
        msg += " overlaps tensor " + shown(prev->name) + " " + offsets_text(*prev) +
               " in the data section";
      } else {
        msg += " leaves a " + std::to_string(e.begin - cursor) + "-byte gap after ";
        msg += prev ? "tensor " + shown(prev->name) + " " + offsets_text(*prev)
                    : std::string("the start of the data section");
        msg += " (safetensors requires the tensors to cover the data section back to back)";
      }
      throw ConfigError(msg);
    }
    cursor = e.end;
    prev = &e;
  }
  if (cursor != data_size) {
    std::string msg = what + ": ";
    msg +=
        prev ? "the last tensor " + shown(prev->name) + " " + offsets_text(*prev) + " ends at byte "
             : std::string("the header lists no tensor, the data ends at byte ");
    msg += std::to_string(cursor) + " but the data section holds " + std::to_string(data_size) +
           " bytes: " + std::to_string(data_size - cursor) +
           " bytes belong to no tensor (safetensors requires the tensors to cover the data "
           "section exactly)";
    throw ConfigError(msg);
  }
}

// The header read as a stream of JSON events (nlohmann's SAX interface), entry by entry, without
// building a document: time and memory are linear in the header (the DOM parser with a callback
// was quadratic in the number of tensors), nesting is bounded, and duplicate names are seen.
class HeaderReader {
 public:
  HeaderReader(const std::string& what, uint64_t data_size, size_t header_bytes)
      : what_(what), data_size_(data_size) {
    // A tensor takes at least ~50 bytes of header: size the tables once.
    names_.reserve(header_bytes / 64);
    out_.reserve(header_bytes / 64);
  }

  std::vector<SafetensorsEntry> take() { return std::move(out_); }

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("boolean"); }
  bool number_integer(json::number_integer_t v) {
    if (in_number_array()) {
      if (v < 0) bad_number(std::to_string(v));
      return add_number(static_cast<uint64_t>(v));
    }
    return scalar("number");
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (in_number_array()) return add_number(v);
    return scalar("number");
  }
  bool number_float(json::number_float_t, const std::string& text) {
    if (in_number_array()) bad_number(text);
    return scalar("number");
  }
  bool string(std::string& v) {
    if (depth_ == 2 && entry_ && field_ == Field::dtype) {
      dtype_ = v;
      have_dtype_ = true;
      return true;
    }
    return scalar("string");
  }
  bool binary(json::binary_t&) { return scalar("binary"); }

  bool start_object(std::size_t) {
    enter();
    if (depth_ == 2) {
      if (key1_ == "__metadata__") {
        metadata_ = true;
      } else {
        begin_entry();
      }
    } else if (depth_ == 3 && entry_ && field_ != Field::other) {
      wrong_field_type("object");
    }
    return true;
  }
  bool end_object() {
    if (depth_ == 2) {
      if (metadata_)
        metadata_ = false;
      else if (entry_)
        finish_entry();
    }
    depth_--;
    return true;
  }
  bool key(std::string& k) {
    if (depth_ == 1) {
      key1_ = std::move(k);  // the lexer clears its buffer before the next token
      const std::string& k1 = key1_;
      if (k1 != "__metadata__") {
        if (!names_.insert(k1).second)
          throw ConfigError(what_ + ": tensor " + shown(k1) + " is listed twice in the header");
        if (names_.size() > kMaxEntries)
          throw ConfigError(what_ + ": safetensors header lists more than 10 million tensors");
      }
    } else if (depth_ == 2 && entry_) {
      field_ = k == "dtype"          ? Field::dtype
               : k == "shape"        ? Field::shape
               : k == "data_offsets" ? Field::offsets
                                     : Field::other;
    }
    return true;
  }
  bool start_array(std::size_t) {
    enter();
    if (depth_ == 1)
      throw ConfigError(what_ + ": safetensors header must be a JSON object, got array");
    if (depth_ == 2 && !metadata_) {
      if (key1_ == "__metadata__")
        throw ConfigError(what_ + ": \"__metadata__\" must be an object, got array");
      throw ConfigError(where() + ": entry must be an object, got array");
    }
    if (depth_ == 3 && entry_) {
      if (field_ == Field::shape) {
        have_shape_ = true;
        array_ = Field::shape;
      } else if (field_ == Field::offsets) {
        have_offsets_ = true;
        offsets_n_ = 0;
        array_ = Field::offsets;
      } else if (field_ == Field::dtype) {
        wrong_field_type("array");
      }
    } else if (depth_ == 4 && entry_ && array_ != Field::none) {
      bad_number("array");
    }
    return true;
  }
  bool end_array() {
    if (depth_ == 3) array_ = Field::none;
    depth_--;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    throw ConfigError(what_ + ": safetensors header is not valid JSON (" +
                      printable_text(ex.what()) + ")");
  }

 private:
  enum class Field { none, dtype, shape, offsets, other };

  void enter() {
    if (++depth_ > kMaxDepth) throw ConfigError(what_ + ": safetensors header nests too deeply");
  }
  std::string where() const { return what_ + ": tensor " + shown(key1_); }
  bool in_number_array() const { return depth_ == 3 && entry_ && array_ != Field::none; }
  [[noreturn]] void bad_number(const std::string& got) const {
    throw ConfigError(where() + ": " + (array_ == Field::shape ? "shape" : "data_offsets") +
                      ": expected a non-negative integer, got " + got);
  }
  [[noreturn]] void wrong_field_type(const char* got) const {
    if (field_ == Field::dtype) throw ConfigError(where() + ": dtype must be a string");
    if (field_ == Field::shape)
      throw ConfigError(where() + ": shape must be an array of at most 16 dimensions, got " + got);
    throw ConfigError(where() + ": data_offsets must be [begin, end], got " + got);
  }
  bool scalar(const char* type) {
    if (depth_ == 0)
      throw ConfigError(what_ + ": safetensors header must be a JSON object, got " + type);
    if (depth_ == 1) {
      if (key1_ == "__metadata__")
        throw ConfigError(what_ + ": \"__metadata__\" must be an object, got " + type);
      throw ConfigError(where() + ": entry must be an object, got " + type);
    }
    if (depth_ == 2 && entry_ && field_ != Field::other) wrong_field_type(type);
    if (in_number_array()) bad_number(type);
    return true;  // __metadata__ contents and unknown fields are skipped
  }
  bool add_number(uint64_t v) {
    if (array_ == Field::shape) {
      if (e_.shape.size() == 16)
        throw ConfigError(where() + ": shape must be an array of at most 16 dimensions");
      e_.shape.push_back(v);
    } else {
      if (offsets_n_ == 2) throw ConfigError(where() + ": data_offsets must be [begin, end]");
      (offsets_n_++ == 0 ? e_.begin : e_.end) = v;
    }
    return true;
  }
  void begin_entry() {
    if (const char* why = unsafe_name_reason(key1_))
      throw ConfigError(where() + ": unsafe name (" + why + ")");
    entry_ = true;
    e_ = SafetensorsEntry{};
    e_.name = key1_;
    have_dtype_ = have_shape_ = have_offsets_ = false;
    field_ = array_ = Field::none;
  }
  void finish_entry() {
    entry_ = false;
    if (!have_dtype_ || !have_shape_ || !have_offsets_)
      throw ConfigError(where() + ": entry needs \"dtype\", \"shape\" and \"data_offsets\"");
    const auto t = st_dtype(dtype_);
    if (!t)
      throw ConfigError(where() + ": unknown dtype " + shown(dtype_) +
                        " (allowed: " + st_dtype_names() + ")");
    e_.dtype = *t;
    if (offsets_n_ != 2) throw ConfigError(where() + ": data_offsets must be [begin, end]");
    validate_entry(
        e_, [this] { return where(); }, data_size_);
    out_.push_back(std::move(e_));
  }

  const std::string& what_;
  const uint64_t data_size_;
  int depth_ = 0;
  std::string key1_;  // the current top-level key
  bool metadata_ = false, entry_ = false;
  Field field_ = Field::none, array_ = Field::none;
  SafetensorsEntry e_;
  std::string dtype_;
  bool have_dtype_ = false, have_shape_ = false, have_offsets_ = false;
  int offsets_n_ = 0;
  std::unordered_set<std::string> names_;
  std::vector<SafetensorsEntry> out_;
};

}  // namespace

std::vector<SafetensorsEntry> parse_safetensors_header(std::string_view bytes, uint64_t file_size,
                                                       const std::string& what) {
  if (bytes.size() < 8 || file_size < 8)
    throw ConfigError(what +
                      ": truncated safetensors file (shorter than the 8-byte header length)");
  const uint64_t n = le64(bytes);
  if (n > kMaxHeader)
    throw ConfigError(what + ": absurd safetensors header length " + std::to_string(n) +
                      " bytes (limit 100 MiB)");
  if (n > file_size - 8)
    throw ConfigError(what + ": safetensors header length " + std::to_string(n) +
                      " exceeds the file size " + std::to_string(file_size));
  if (bytes.size() - 8 < n)
    throw ConfigError(what + ": truncated safetensors header (" + std::to_string(bytes.size() - 8) +
                      " of " + std::to_string(n) + " bytes)");
  const uint64_t data_size = file_size - 8 - n;
  const std::string_view text = bytes.substr(8, static_cast<size_t>(n));

  HeaderReader reader(what, data_size, text.size());
  try {
    json::sax_parse(text.begin(), text.end(), &reader);
  } catch (const json::exception& e) {
    throw ConfigError(what + ": safetensors header is not valid JSON (" + printable_text(e.what()) +
                      ")");
  }
  std::vector<SafetensorsEntry> out = reader.take();
  std::sort(out.begin(), out.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  check_tiling(out, data_size, what);
  return out;
}

ModelDesc import_safetensors(const std::string& path) {
  if (path.empty()) throw ConfigError("model.safetensors: empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ConfigError(path + ": cannot access safetensors input: " + errno_text(errno));
  ModelDesc m;
  std::string dir;
  if (S_ISDIR(st.st_mode)) {
    m = import_dir(path);
    dir = path;
  } else {
    m = ends_with(path, ".json")
            ? import_index(path)
            : make_model(path, read_header_file(path, "safetensors file", kWantModel));
    dir = dir_of(path);
  }
  read_hf_config(dir + "/config.json", m);
  return m;
}

}  // namespace ckpt
