#include "ckptbench/plan/read_dir.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/plan/sharding.hpp"

namespace ckpt {

using json = nlohmann::json;

ReadAssign parse_read_assign(const std::string& s) {
  if (s == "auto") return ReadAssign::automatic;
  if (s == "size") return ReadAssign::size;
  if (s == "loader") return ReadAssign::loader;
  throw ConfigError("--read-assign '" + s +
                    "': allowed are auto (the loader's assignment when the directory is "
                    "recognised, else by size), size, loader");
}

namespace {

std::string dir_of(const std::string& p) {
  const size_t s = p.rfind('/');
  return s == std::string::npos ? std::string() : p.substr(0, s);
}
std::string base_of(const std::string& p) {
  const size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}
std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}
std::string shown(const std::string& dir) { return dir.empty() ? std::string(".") : dir; }

// A loader rule that cannot be used here: why (the rule is recognised, it does not apply).
struct NotApplicable {
  std::string why;
};

class Index {
 public:
  explicit Index(const DirFiles& files) {
    for (size_t i = 0; i < files.size(); i++) at_[files[i].first] = i;
  }
  std::optional<size_t> find(const std::string& path) const {
    auto it = at_.find(path);
    if (it == at_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<std::string, size_t> at_;
};

ReadDirAssignment by_size(const DirFiles& files, int world) {
  ReadDirAssignment a;
  a.rule = "size";
  a.description =
      "each file whole, read by one rank: largest first to the rank with the fewest bytes so far "
      "(ties: the lowest rank)";
  a.reads.resize(static_cast<size_t>(world));
  std::vector<size_t> order(files.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return files[x].second > files[y].second; });
  std::vector<uint64_t> load(static_cast<size_t>(world), 0);
  for (size_t i : order) {
    const size_t r = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[r] += files[i].second;
    a.reads[r].push_back(i);
  }
  for (auto& r : a.reads) std::sort(r.begin(), r.end());
  return a;
}

// ---- Hugging Face safetensors (transformers from_pretrained). ----

bool safetensors_found(const DirFiles& files) {
  for (const auto& f : files) {
    const std::string b = base_of(f.first);
    if (b.size() > 12 && (b.ends_with(".safetensors") || b.ends_with(".safetensors.index.json")))
      return true;
  }
  return false;
}

// Every rank reads config.json, the index, then every shard its weight_map names, in sorted order
// (get_checkpoint_shard_files: sorted(set(weight_map.values()))): each process loads the whole
// model. Without an index, the one .safetensors file.
ReadDirAssignment safetensors_rule(const DirFiles& files, int world,
                                   const std::function<std::string(const std::string&)>& read) {
  const Index idx(files);
  std::vector<std::string> indexes, singles;
  for (const auto& f : files) {
    const std::string b = base_of(f.first);
    if (b.ends_with(".safetensors.index.json")) indexes.push_back(f.first);
    if (b.ends_with(".safetensors")) singles.push_back(f.first);
  }
  // One model: the top-level model.safetensors.index.json, else the only index at the top
  // level, else the only index anywhere.
  auto pick = [](const std::vector<std::string>& v, const std::string& preferred) {
    std::vector<std::string> top;
    for (const auto& p : v)
      if (p == preferred) return std::vector<std::string>{p};
    for (const auto& p : v)
      if (dir_of(p).empty()) top.push_back(p);
    return top.empty() ? v : top;
  };
  std::vector<size_t> order;
  std::string dir, how;
  if (!indexes.empty()) {
    const auto chosen = pick(indexes, "model.safetensors.index.json");
    if (chosen.size() != 1)
      throw NotApplicable{"several safetensors indexes (" + chosen[0] + ", " + chosen[1] +
                          (chosen.size() > 2 ? ", ..." : "") +
                          "): which model is loaded is not "
                          "clear; give the model's folder"};
    const std::string& index = chosen[0];
    dir = dir_of(index);
    json j;
    try {
      j = parse_json_limited(read(index), index);
    } catch (const std::exception& e) {
      throw NotApplicable{std::string(e.what())};
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object() ||
        j["weight_map"].empty())
      throw NotApplicable{index + ": no \"weight_map\" object naming the shards"};
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string())
        throw NotApplicable{index + ": weight_map[\"" + name + "\"] is not a file name"};
      shards.insert(file.get<std::string>());
    }
    if (auto c = idx.find(join(dir, "config.json"))) order.push_back(*c);
    order.push_back(*idx.find(index));
    for (const auto& s : shards) {
      auto i = idx.find(join(dir, s));
      if (!i)
        throw NotApplicable{index + " names shard '" + s + "', which is not a regular file in " +
                            shown(dir)};
      order.push_back(*i);
    }
    how = "its config.json (if there), " + index + ", then the " + std::to_string(shards.size()) +
          " shards its weight_map names, in sorted order";
  } else {
    const auto chosen = pick(singles, "model.safetensors");
    if (chosen.size() != 1)
      throw NotApplicable{
          "several .safetensors files and no model.safetensors.index.json: not "
          "one Hugging Face model"};
    dir = dir_of(chosen[0]);
    if (auto c = idx.find(join(dir, "config.json"))) order.push_back(*c);
    order.push_back(*idx.find(chosen[0]));
    how = "its config.json (if there), then " + chosen[0];
  }
  ReadDirAssignment a;
  a.rule = "safetensors";
  a.description =
      "Hugging Face transformers from_pretrained, one process per rank: every rank "
      "reads " +
      how + " (each rank loads the whole model; ranks of a node share its page cache)";
  a.reads.assign(static_cast<size_t>(world), order);
  return a;
}

// ---- DeepSpeed (engine.load_checkpoint of a global_stepN/ tag). ----

const std::regex kDsModel(R"(mp_rank_(\d+)_model_states\.pt)");
const std::regex kDsZ3Model(R"(zero_pp_rank_(\d+)_mp_rank_(\d+)_model_states\.pt)");
const std::regex kDsOptim(R"((bf16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_optim_states\.pt)");
const std::regex kDsLayer(R"(layer_(\d+)-model_(\d+)-model_states\.pt)");
const std::regex kDsExpert(R"((expp_rank_\d+_mp_rank_\d+_optim_states\.pt|.*expert_\d+.*))");

bool deepspeed_found(const DirFiles& files) {
  for (const auto& f : files) {
    const std::string b = base_of(f.first);
    if (std::regex_match(b, kDsModel) || std::regex_match(b, kDsZ3Model) ||
        std::regex_match(b, kDsOptim))
      return true;
  }
  return false;
}

int to_int(const std::string& s) { return s.size() > 6 ? 1 << 30 : std::stoi(s); }

// The DeepSpeed tag directory to read: the one with DeepSpeed files, or with several, the one
// `latest` (in their common parent) names.
std::string deepspeed_tag(const DirFiles& files,
                          const std::function<std::string(const std::string&)>& read) {
  std::set<std::string> tags;
  for (const auto& f : files) {
    const std::string b = base_of(f.first);
    if (std::regex_match(b, kDsModel) || std::regex_match(b, kDsZ3Model) ||
        std::regex_match(b, kDsOptim))
      tags.insert(dir_of(f.first));
  }
  std::string tag = *tags.begin();
  if (tags.size() <= 1) return tag;
  // Several tags: the loader reads the one `latest` names (in their common parent).
  const std::string parent = dir_of(tag);
  const std::string latest = join(parent, "latest");
  const Index idx(files);
  const auto at = idx.find(latest);
  if (!at)
    throw NotApplicable{"several DeepSpeed tags (" + *tags.begin() + ", " + *tags.rbegin() +
                        ") and no 'latest' file naming one: give the tag directory"};
  // DeepSpeed writes the tag name alone (a directory name): at most 255 bytes are read, and
  // only a name of one path component is used; nothing else of the file reaches the report.
  constexpr uint64_t kMaxTag = 255;
  if (files[*at].second > kMaxTag + 2)
    throw NotApplicable{latest + " is " + std::to_string(files[*at].second) +
                        " bytes, not a tag name (DeepSpeed writes one directory name, at most " +
                        std::to_string(kMaxTag) + " bytes): give the tag directory"};
  std::string t = read(latest);
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\r')) t.pop_back();
  if (t.empty() || t.size() > kMaxTag || t.find('/') != std::string::npos ||
      t.find('\0') != std::string::npos || t == "." || t == "..")
    throw NotApplicable{latest + " holds no tag name (" + std::to_string(t.size()) +
                        " bytes, not one directory name): give the tag directory"};
  tag = join(parent, t);
  if (!tags.contains(tag))
    throw NotApplicable{latest + " names tag '" + text_excerpt(t, 100) +
                        "', which has no DeepSpeed files here"};
  return tag;
}

// The files of one DeepSpeed tag, by the rank that saved them (indices into the DirFiles).
struct DsTagFiles {
  std::map<int, size_t> model;                           // mp -> file
  std::map<std::pair<int, int>, size_t> z3model, optim;  // (dp, mp) -> file
  std::map<std::pair<int, int>, size_t> layer;           // pipeline: (layer index, tp) -> file
};

DsTagFiles deepspeed_tag_files(const DirFiles& files, const std::string& tag) {
  DsTagFiles t;
  std::map<std::pair<int, int>, bool> optim_bf16;
  for (size_t i = 0; i < files.size(); i++) {
    if (dir_of(files[i].first) != tag) continue;
    const std::string b = base_of(files[i].first);
    std::smatch m;
    if (std::regex_match(b, m, kDsLayer)) {
      t.layer[{to_int(m[1]), to_int(m[2])}] = i;
    } else if (std::regex_match(b, m, kDsZ3Model)) {
      t.z3model[{to_int(m[1]), to_int(m[2])}] = i;
    } else if (std::regex_match(b, m, kDsOptim)) {
      const std::pair<int, int> k{to_int(m[2]), to_int(m[3])};
      const bool bf16 = m[1].matched;
      // Both kinds for one rank: the bf16_ file, as a bf16 engine tries first.
      if (!t.optim.contains(k) || bf16) t.optim[k] = i, optim_bf16[k] = bf16;
    } else if (std::regex_match(b, m, kDsModel)) {
      t.model[to_int(m[1])] = i;
    } else if (std::regex_match(b, kDsExpert)) {
      throw NotApplicable{"DeepSpeed MoE expert files (" + b +
                          "): expert-parallel loading is not modelled"};
    }
  }
  return t;
}

// The parallelism a DeepSpeed tag was saved with.
struct DsShape {
  bool z3 = false;    // ZeRO-3: per-rank model files
  bool zero = false;  // ZeRO optimizer partitions
  int MP = 0, DP = 0;
};

// 0..n-1, each once.
bool contiguous(const std::set<int>& s) {
  return !s.empty() && *s.begin() == 0 && *s.rbegin() == static_cast<int>(s.size()) - 1;
}

// The tag's shape, checked against the job's world: a ZeRO checkpoint loads on its own
// data-parallel size only, one without on a multiple of its model-parallel size.
DsShape deepspeed_shape(const DsTagFiles& t, const std::string& tag, int world) {
  DsShape s;
  s.z3 = !t.z3model.empty();
  std::set<int> mps, dps;
  for (const auto& [k, i] : s.z3 ? t.z3model : t.optim) dps.insert(k.first), mps.insert(k.second);
  if (!s.z3)
    for (const auto& [mp, i] : t.model) mps.insert(mp);
  if (!contiguous(mps))
    throw NotApplicable{"DeepSpeed model-parallel ranks in " + shown(tag) + " are not 0.." +
                        std::to_string(mps.size() - 1)};
  s.MP = static_cast<int>(mps.size());
  s.zero = s.z3 || !t.optim.empty();
  if (s.zero) {
    if (!contiguous(dps))
      throw NotApplicable{"DeepSpeed ZeRO data-parallel ranks in " + shown(tag) + " are not 0.." +
                          std::to_string(dps.size() - 1)};
    s.DP = static_cast<int>(dps.size());
    if (world != s.DP * s.MP)
      throw NotApplicable{"the DeepSpeed checkpoint " + shown(tag) + " was saved by " +
                          std::to_string(s.DP * s.MP) + " ranks (data-parallel " +
                          std::to_string(s.DP) + " x model-parallel " + std::to_string(s.MP) +
                          ") and DeepSpeed loads ZeRO optimizer state only on the same "
                          "data-parallel size: run on " +
                          std::to_string(s.DP * s.MP) + " ranks"};
  } else if (world % s.MP != 0) {
    throw NotApplicable{"the DeepSpeed checkpoint " + shown(tag) + " has " + std::to_string(s.MP) +
                        " model-parallel ranks: run on a multiple of " + std::to_string(s.MP) +
                        " ranks"};
  }
  return s;
}

// A pipeline tag's grid: tensor-parallel size (the layer files' model_YY), pipeline stages
// (model-parallel size / tensor-parallel size) and the layer indices each stage loads.
struct DsPipe {
  int T = 0, PP = 0;
  std::vector<std::vector<int>> stage;  // stage -> its layer indices, ascending
};

std::string ds_layer_name(int idx, int tp) {
  return format_text("layer_%02d-model_%02d-model_states.pt", idx, tp);
}

// Which stage holds a layer file is not in the directory (PipelineModule partitions its specs
// when it is built). The indices are taken as Megatron-DeepSpeed's GPTModelPipe numbers them, and
// split as ckptbench's writer (src/plan/frameworks.cpp, deepspeed()) splits them: the lowest index
// is the embedding (first stage); the highest is the output layer, preceded by the final norm,
// when its file is larger than the one before it (a norm's file is smaller than a transformer
// layer's and an output layer's), else it is the final norm alone (tied embeddings: the last
// stage's copy has no file); both go to the last stage. The indices between are the transformer
// layers, in contiguous ranges, the first stages taking the extra layer (stage_layers, which
// equals DeepSpeed's partition_balanced by type:transformer in the cases docs/layouts.md lists).
DsPipe deepspeed_pipe(const DirFiles& files, const DsTagFiles& t, const std::string& tag,
                      const DsShape& s) {
  if (s.z3)
    throw NotApplicable{"DeepSpeed pipeline layer files and ZeRO-3 model files in " + shown(tag) +
                        ": DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only"};
  std::set<int> tps, idx;
  for (const auto& [k, i] : t.layer) idx.insert(k.first), tps.insert(k.second);
  if (!contiguous(tps))
    throw NotApplicable{"the tensor-parallel ranks of the DeepSpeed layer files in " + shown(tag) +
                        " (model_YY) are not 0.." + std::to_string(tps.size() - 1)};
  DsPipe p;
  p.T = static_cast<int>(tps.size());
  if (s.MP % p.T != 0)
    throw NotApplicable{"the DeepSpeed tag " + shown(tag) + " has " + std::to_string(s.MP) +
                        " model-parallel ranks (mp_rank_XX), not a multiple of the " +
                        std::to_string(p.T) + " tensor-parallel ranks of its layer files"};
  p.PP = s.MP / p.T;
  for (int i : idx)
    for (int tp = 0; tp < p.T; tp++)
      if (!t.layer.contains({i, tp}))
        throw NotApplicable{"no " + ds_layer_name(i, tp) + " in " + shown(tag) + " (layer " +
                            std::to_string(i) + " has files of other tensor-parallel ranks)"};
  const std::vector<int> v(idx.begin(), idx.end());
  p.stage.resize(static_cast<size_t>(p.PP));
  if (p.PP == 1) {
    p.stage[0] = v;
    return p;
  }
  const size_t n = v.size();
  auto size_of = [&](size_t k) { return files[t.layer.at({v[k], 0})].second; };
  const size_t trail = n >= 3 && size_of(n - 1) > size_of(n - 2) ? 2 : 1;
  if (n < 1 + trail + static_cast<size_t>(p.PP))
    throw NotApplicable{"the " + std::to_string(n) + " layer indices in " + shown(tag) +
                        " cannot be an embedding, at least one transformer layer on each of " +
                        std::to_string(p.PP) + " pipeline stages and the final norm"};
  const uint64_t L = n - 1 - trail;
  p.stage[0].push_back(v[0]);
  for (int st = 0; st < p.PP; st++) {
    const auto [a, b] = stage_layers(L, p.PP, st);
    for (uint64_t k = a; k < b; k++) p.stage[static_cast<size_t>(st)].push_back(v[1 + k]);
  }
  for (size_t k = n - trail; k < n; k++) p.stage.back().push_back(v[k]);
  return p;
}

// "01-03" or "05".
std::string ds_index_range(const std::vector<int>& v) {
  if (v.empty()) return "none";
  std::string r = format_text("%02d", v.front());
  if (v.size() > 1) r += format_text("-%02d", v.back());
  return r;
}

// DeepSpeed's PipelineEngine (PipeModelDataParallelTopology, axes pipe, data, model: the tensor-
// parallel rank varies fastest, then the data-parallel one, the stage slowest; ckptbench's default
// rank_order tp-dp-pp): rank r has tp = r % T, dp = r / T % DP, stage = r / (T * DP) and model-
// parallel rank mp = stage * T + tp. engine._load_checkpoint loads mp_rank_{mp}_model_states.pt
// (trainer state; module None), then PipelineModule.load_state_dir loads, for each layer of its
// stage in order, layer_{idx}-model_{tp}-model_states.pt (ckpt_layer_path_list globs every
// model_YY; SDLoader.load picks the rank's own with the same tensor-parallel size), then
// _load_zero_checkpoint its own ZeRO partition. With pp 1 this is mp = r % MP, dp = r / MP.
ReadDirAssignment deepspeed_pipe_rule(const DirFiles& files, int world, const std::string& tag,
                                      const DsTagFiles& t, const DsShape& s) {
  const DsPipe p = deepspeed_pipe(files, t, tag, s);
  const int T = p.T, DP = world / s.MP;
  ReadDirAssignment a;
  a.rule = "deepspeed";
  a.reads.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; r++) {
    const int tp = r % T, dp = r / T % DP, st = r / (T * DP), mp = st * T + tp;
    auto& mine = a.reads[static_cast<size_t>(r)];
    auto m = t.model.find(mp);
    if (m == t.model.end())
      throw NotApplicable{format_text("no mp_rank_%02d_model_states.pt in ", mp) + shown(tag)};
    mine.push_back(m->second);
    for (int idx : p.stage[static_cast<size_t>(st)]) mine.push_back(t.layer.at({idx, tp}));
    if (!s.zero) continue;
    auto o = t.optim.find({dp, mp});
    if (o == t.optim.end())
      throw NotApplicable{
          format_text("no zero_pp_rank_%d_mp_rank_%02d_optim_states.pt in ", dp, mp) + shown(tag)};
    mine.push_back(o->second);
  }
  std::string stages;
  for (size_t st = 0; st < p.stage.size(); st++)
    stages += (st ? ", " : "") + std::to_string(st) + ": " + ds_index_range(p.stage[st]);
  a.description =
      "DeepSpeed PipelineEngine load_checkpoint of tag " + shown(tag) + " (tensor-parallel " +
      std::to_string(T) + " x pipeline " + std::to_string(p.PP) + " = model-parallel " +
      std::to_string(s.MP) + ", data-parallel " + std::to_string(DP) +
      (s.zero ? ", ZeRO-1" : ", no ZeRO") + "): rank r (tp = r % " + std::to_string(T) +
      ", dp = r / " + std::to_string(T) + " % " + std::to_string(DP) + ", stage = r / " +
      std::to_string(T * DP) + ", mp = stage * " + std::to_string(T) +
      " + tp) reads mp_rank_{mp}_model_states.pt, then layer_{idx}-model_{tp}-model_states.pt "
      "for its stage's layers (stage " +
      stages +
      "; the lowest index the embedding, the highest the final norm and output layer, the "
      "transformer layers between split contiguously, the first stages taking the extra one)" +
      (s.zero ? ", then its own *zero_pp_rank_{dp}_mp_rank_{mp}_optim_states.pt" : "");
  return a;
}

// Every rank (mp = rank % MP, dp = rank / MP; tensor-parallel ranks adjacent, as Megatron and
// DeepSpeed lay them out) reads its model file - mp_rank_{mp}_model_states.pt, which every
// data-parallel rank of that mp reads, or under ZeRO-3 zero_pp_rank_{dp}_mp_rank_{mp}_model_states
// .pt - then its own ZeRO optimizer partition (_get_all_zero_checkpoint_state_dicts loads only the
// rank's own file unless elastic checkpointing is on). DeepSpeed refuses another data-parallel size
// for ZeRO optimizer state, so such a directory needs exactly DP x MP ranks.
ReadDirAssignment deepspeed_rule(const DirFiles& files, int world,
                                 const std::function<std::string(const std::string&)>& read) {
  const std::string tag = deepspeed_tag(files, read);
  const DsTagFiles t = deepspeed_tag_files(files, tag);
  const DsShape s = deepspeed_shape(t, tag, world);
  if (!t.layer.empty()) return deepspeed_pipe_rule(files, world, tag, t, s);
  const int MP = s.MP, DP = s.DP;
  const bool z3 = s.z3, zero = s.zero;
  ReadDirAssignment a;
  a.rule = "deepspeed";
  a.reads.resize(static_cast<size_t>(world));
  // The file the loader opens for (dp, mp) from `files_of`, or why the rule does not apply.
  auto take = [&](const auto& files_of, const auto& key, const std::string& name) {
    auto it = files_of.find(key);
    if (it == files_of.end()) throw NotApplicable{"no " + name + " in " + shown(tag)};
    return it->second;
  };
  for (int r = 0; r < world; r++) {
    const int mp = r % MP, dp = r / MP;
    const std::string zr = "zero_pp_rank_" + std::to_string(dp) + "_mp_rank_" +
                           format_text("%02d", mp);  // as DeepSpeed writes it: mp_rank_00
    auto& mine = a.reads[static_cast<size_t>(r)];
    if (z3)
      mine.push_back(take(t.z3model, std::pair{dp, mp}, zr + "_model_states.pt"));
    else
      mine.push_back(take(t.model, mp, format_text("mp_rank_%02d_model_states.pt", mp)));
    if (zero) mine.push_back(take(t.optim, std::pair{dp, mp}, zr + "_optim_states.pt"));
  }
  a.description =
      "DeepSpeed load_checkpoint of tag " + shown(tag) + " (model-parallel " + std::to_string(MP) +
      (zero ? ", data-parallel " + std::to_string(DP) + (z3 ? ", ZeRO-3" : ", ZeRO-1/2") : "") +
      "): rank r (mp = r % " + std::to_string(MP) + ", dp = r / " + std::to_string(MP) +
      ") reads " +
      (z3 ? "zero_pp_rank_{dp}_mp_rank_{mp}_model_states.pt"
          : "mp_rank_{mp}_model_states.pt (every data-parallel rank of that mp reads it)") +
      (zero ? ", then its own *zero_pp_rank_{dp}_mp_rank_{mp}_optim_states.pt" : "");
  return a;
}

// ---- PyTorch Distributed Checkpoint (dcp.load with FileSystemReader). ----

const std::regex kDcpData(R"(__(\d+)_(\d+)\.distcp)");

bool dcp_found(const DirFiles& files) {
  for (const auto& f : files)
    if (base_of(f.first) == ".metadata" || std::regex_match(base_of(f.first), kDcpData))
      return true;
  return false;
}

// The step number a checkpoint directory's name ends in (torchtitan's step-N, checkpoint-N,
// global_stepN, iter_NNNNNNN), if any.
std::optional<uint64_t> trailing_step(const std::string& dir) {
  const std::string b = base_of(dir);
  size_t k = b.size();
  while (k > 0 && b[k - 1] >= '0' && b[k - 1] <= '9') k--;
  if (k == b.size() || b.size() - k > 18) return std::nullopt;
  return std::stoull(b.substr(k));
}

// The DCP checkpoint to load: the only directory with a .metadata, or, with several in one
// folder whose names all end in a step number, the highest step (torchtitan's CheckpointManager
// ._find_load_step: the largest N of the step-N folders holding a .metadata). `how` says which.
std::string dcp_dir(const DirFiles& files, std::string& how) {
  std::set<std::string> dirs;
  for (const auto& f : files)
    if (base_of(f.first) == ".metadata") dirs.insert(dir_of(f.first));
  if (dirs.empty())
    throw NotApplicable{"__R_N.distcp files but no .metadata: not a DCP checkpoint"};
  if (dirs.size() == 1) return *dirs.begin();
  const std::string list = " (" + shown(*dirs.begin()) + ", " + (dirs.size() > 2 ? "..., " : "") +
                           shown(*dirs.rbegin()) + ")";
  const std::string several = "several DCP checkpoints" + list;
  std::map<uint64_t, std::string> by_step;
  for (const auto& d : dirs) {
    const auto n = trailing_step(d);
    if (!n || dir_of(d) != dir_of(*dirs.begin()))
      throw NotApplicable{several + ": " +
                          (n ? "not in one folder" : "'" + shown(d) + "' ends in no step number") +
                          ", so which one a loader picks is not clear; give one of them"};
    if (by_step.contains(*n))
      throw NotApplicable{several + ": " + shown(by_step[*n]) + " and " + shown(d) +
                          " carry the same step number " + std::to_string(*n) +
                          "; give one of them"};
    by_step[*n] = d;
  }
  const std::string chosen = by_step.rbegin()->second;
  how = ", the highest step of " + std::to_string(dirs.size()) + " DCP checkpoints" + list +
        ", as torchtitan's checkpoint manager picks it";
  return chosen;
}

// Every rank reads .metadata (local_step: storage_reader.read_metadata()), then the items of its
// state dict; saved and loaded with the same sharding (FSDP/TP), those are in its own
// __{rank}_{n}.distcp files. On another rank count DCP reshards: which byte ranges each rank reads
// is in the pickled .metadata, which ckptbench does not parse. Appends to `reads`; returns the
// saving rank count.
int dcp_reads(const DirFiles& files, int world, const std::string& dir,
              std::vector<std::vector<size_t>>& reads) {
  const Index idx(files);
  std::map<int, std::map<int, size_t>> of_rank;  // saving rank -> n -> file
  for (size_t i = 0; i < files.size(); i++) {
    std::smatch m;
    const std::string b = base_of(files[i].first);
    if (dir_of(files[i].first) == dir && std::regex_match(b, m, kDcpData))
      of_rank[to_int(m[1])][to_int(m[2])] = i;
  }
  const int W = of_rank.empty() ? 1 : of_rank.rbegin()->first + 1;
  if (world != W)
    throw NotApplicable{"the DCP checkpoint " + shown(dir) + " was saved by " + std::to_string(W) +
                        " ranks; on another rank count DCP reshards, and which byte ranges each "
                        "rank then reads is in the pickled .metadata, which ckptbench does not "
                        "parse: run on " +
                        std::to_string(W) + " ranks, or use --read-assign size"};
  const auto meta = idx.find(join(dir, ".metadata"));
  if (!meta) throw NotApplicable{"no .metadata in " + shown(dir) + ": not a DCP checkpoint"};
  reads.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; r++) {
    auto& mine = reads[static_cast<size_t>(r)];
    mine.push_back(*meta);
    if (auto it = of_rank.find(r); it != of_rank.end())
      for (const auto& [n, i] : it->second) mine.push_back(i);
  }
  return W;
}

ReadDirAssignment dcp_rule(const DirFiles& files, int world) {
  std::string how;
  const std::string dir = dcp_dir(files, how);
  ReadDirAssignment a;
  a.rule = "dcp";
  const int W = dcp_reads(files, world, dir, a.reads);
  a.description = "PyTorch DCP load of " + shown(dir) + how + ", saved by " + std::to_string(W) +
                  " ranks, loaded with the same sharding: every rank reads .metadata, then rank r "
                  "its own __r_N.distcp files (replicated items DCP deduplicated at save are read "
                  "here by their saving rank only)";
  return a;
}

// ---- Megatron-LM (megatron/training/checkpointing.py, load_checkpoint). ----

const std::regex kMgRankDir(R"(mp_rank_(\d+)(_(\d+))?)");
const std::string kMgTracker = "latest_checkpointed_iteration.txt";

// The Megatron files of one iteration directory (indices into the DirFiles).
struct MgIter {
  std::map<std::pair<int, int>, size_t> model, optim;  // (tp, pp) -> model_optim_rng.pt, distrib_
  bool pp_suffix = false, no_suffix = false;           // mp_rank_TT_PPP / mp_rank_TT directories
  std::optional<size_t> config, common;  // torch_dist: metadata.json (next to .metadata), common.pt
};

// The iteration directories: those holding legacy mp_rank_TT[_PPP]/{model_optim_rng,distrib_optim}
// .pt files, and torch_dist ones (DCP's .metadata next to Megatron's metadata.json, which
// check_is_distributed_checkpoint looks for).
std::map<std::string, MgIter> megatron_iters(const DirFiles& files) {
  std::map<std::string, MgIter> it;
  const Index idx(files);
  for (size_t i = 0; i < files.size(); i++) {
    const std::string& p = files[i].first;
    const std::string b = base_of(p), d = dir_of(p), db = base_of(d);
    std::smatch m;
    if ((b == "model_optim_rng.pt" || b == "distrib_optim.pt") && !d.empty() &&
        std::regex_match(db, m, kMgRankDir)) {
      MgIter& x = it[dir_of(d)];
      const std::pair<int, int> k{to_int(m[1]), m[3].matched ? to_int(m[3]) : 0};
      (m[3].matched ? x.pp_suffix : x.no_suffix) = true;
      (b == "model_optim_rng.pt" ? x.model : x.optim)[k] = i;
    } else if (b == "metadata.json" && idx.find(join(d, ".metadata"))) {
      MgIter& x = it[d];
      x.config = i;
      x.common = idx.find(join(d, "common.pt"));
    }
  }
  return it;
}

bool megatron_found(const DirFiles& files) { return !megatron_iters(files).empty(); }

// The iteration a load reads and the tracker every rank reads first.
struct MgChoice {
  std::string dir;
  std::optional<size_t> tracker;
  std::string how;  // for the description
};

// The iteration latest_checkpointed_iteration.txt (in the iterations' parent) names, read as
// Megatron's read_metadata reads it: the stripped text is an integer (iter_{:07d}) or "release"
// (release/); without a tracker, the only iteration (a directory given as iter_* itself).
MgChoice megatron_choice(const DirFiles& files, const std::map<std::string, MgIter>& iters,
                         const std::function<std::string(const std::string&)>& read) {
  const Index idx(files);
  const std::string first = iters.begin()->first, parent = dir_of(first);
  bool one_parent = !first.empty();
  for (const auto& [d, x] : iters) one_parent = one_parent && dir_of(d) == parent;
  MgChoice c;
  if (one_parent) c.tracker = idx.find(join(parent, kMgTracker));
  if (!c.tracker) {
    if (iters.size() > 1)
      throw NotApplicable{"several Megatron iterations (" + shown(first) + ", " +
                          shown(iters.rbegin()->first) + ") and no " + kMgTracker +
                          " naming one: give the iter directory"};
    c.dir = first;
    c.how = first.empty() ? std::string("the iteration directory given (no tracker read)")
                          : "iteration " + first + " (the only one, no tracker)";
    return c;
  }
  const std::string tracker = files[*c.tracker].first;
  constexpr uint64_t kMaxTracker = 64;  // an integer or "release", with a newline
  if (files[*c.tracker].second > kMaxTracker)
    throw NotApplicable{tracker + " is " + std::to_string(files[*c.tracker].second) +
                        " bytes, not an iteration number (Megatron writes one integer or "
                        "'release'): give the iter directory"};
  std::string t = read(tracker);
  const auto space = [](char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); };
  while (!t.empty() && space(t.back())) t.pop_back();
  while (!t.empty() && space(t.front())) t.erase(t.begin());
  const bool digits = !t.empty() && t.size() <= 18 && std::all_of(t.begin(), t.end(), [](char ch) {
    return ch >= '0' && ch <= '9';
  });
  if (t == "release")
    c.dir = join(parent, "release");
  else if (digits && std::stoull(t) > 0)
    c.dir = join(parent, format_text("iter_%07llu", std::stoull(t)));
  else
    throw NotApplicable{tracker +
                        " holds neither an iteration number nor 'release' (Megatron's "
                        "read_metadata stops there): give the iter directory"};
  if (!iters.contains(c.dir))
    throw NotApplicable{tracker + " names " + (digits ? "iteration " + t : t) + ", but " +
                        shown(c.dir) + " holds no Megatron checkpoint here"};
  c.how = "iteration " + shown(c.dir) + " (named by " + tracker + ", of " +
          std::to_string(iters.size()) + " here)";
  return c;
}

std::string mg_rank_dir(int tp, int pp, bool suffix) {
  return suffix ? format_text("mp_rank_%02d_%03d", tp, pp) : format_text("mp_rank_%02d", tp);
}

// Legacy torch format. Megatron's default rank order tp-cp-ep-dp-pp (parallel_state
// .initialize_model_parallel; ckptbench's default rank_order tp-dp-pp): rank r has tp = r % T,
// dp = r / T % DP, pp = r / (T * DP). Every rank reads the tracker (read_metadata), then
// mp_rank_{tp}[_{pp}]/model_optim_rng.pt (_load_base_checkpoint: every data-parallel rank); with
// the distributed optimizer, data-parallel rank 0 of each model-parallel group also reads its
// distrib_optim.pt (DistributedOptimizer.load_parameter_state: torch.load on data-parallel rank 0,
// then load_parameter_state_from_dp_zero scatters it).
ReadDirAssignment megatron_legacy(int world, const MgChoice& c, const MgIter& x) {
  const std::string in = " in " + shown(c.dir);
  if (x.pp_suffix && x.no_suffix)
    throw NotApplicable{"both mp_rank_TT and mp_rank_TT_PPP directories" + in +
                        ": not one Megatron checkpoint"};
  std::set<int> tps, pps;
  for (const auto* m : {&x.model, &x.optim})
    for (const auto& [k, i] : *m) tps.insert(k.first), pps.insert(k.second);
  if (!contiguous(tps) || !contiguous(pps))
    throw NotApplicable{"the mp_rank_TT[_PPP] directories" + in +
                        " are not tensor-parallel ranks 0..T-1 by pipeline ranks 0..P-1"};
  const int T = static_cast<int>(tps.size()), P = static_cast<int>(pps.size());
  for (int tp = 0; tp < T; tp++)
    for (int pp = 0; pp < P; pp++) {
      const std::string rd = mg_rank_dir(tp, pp, x.pp_suffix);
      if (!x.model.contains({tp, pp})) throw NotApplicable{"no " + rd + "/model_optim_rng.pt" + in};
      if (!x.optim.empty() && !x.optim.contains({tp, pp}))
        throw NotApplicable{"no " + rd + "/distrib_optim.pt" + in + ", although other " +
                            "model-parallel ranks have one"};
    }
  if (world % (T * P) != 0)
    throw NotApplicable{"the Megatron checkpoint " + shown(c.dir) + " was saved with tensor-" +
                        "parallel " + std::to_string(T) + " x pipeline " + std::to_string(P) +
                        ": run on a multiple of " + std::to_string(T * P) + " ranks"};
  const int DP = world / (T * P);
  ReadDirAssignment a;
  a.rule = "megatron";
  a.reads.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; r++) {
    const int tp = r % T, dp = r / T % DP, pp = r / (T * DP);
    auto& mine = a.reads[static_cast<size_t>(r)];
    if (c.tracker) mine.push_back(*c.tracker);
    mine.push_back(x.model.at({tp, pp}));
    if (dp == 0 && !x.optim.empty()) mine.push_back(x.optim.at({tp, pp}));
  }
  a.description =
      "Megatron-LM load_checkpoint (legacy torch format) of " + c.how + ", tensor-parallel " +
      std::to_string(T) + " x pipeline " + std::to_string(P) + ", data-parallel " +
      std::to_string(DP) + ": rank r (tp = r % " + std::to_string(T) + ", dp = r / " +
      std::to_string(T) + " % " + std::to_string(DP) + ", pp = r / " + std::to_string(T * DP) +
      ") reads " + (c.tracker ? kMgTracker + ", then " : std::string()) +
      (x.pp_suffix ? "mp_rank_{tp}_{pp}" : "mp_rank_{tp}") +
      "/model_optim_rng.pt (every data-parallel rank reads it)" +
      (x.optim.empty() ? std::string()
                       : ", then data-parallel rank 0 its distrib_optim.pt (the distributed "
                         "optimizer's state, scattered from there)");
  return a;
}

// torch_dist format: every rank reads the tracker (read_metadata), metadata.json
// (check_is_distributed_checkpoint / maybe_load_config) and common.pt (load_common_state_dict),
// then DCP's load_state_dict in the iteration directory: .metadata, then its own __r_N.distcp
// files (the DCP rule; the saving rank count).
ReadDirAssignment megatron_dist(const DirFiles& files, int world, const MgChoice& c,
                                const MgIter& x) {
  if (!x.model.empty() || !x.optim.empty())
    throw NotApplicable{"both legacy mp_rank_* files and a torch_dist checkpoint in " +
                        shown(c.dir) + ": not one Megatron checkpoint"};
  if (!x.common)
    throw NotApplicable{"no common.pt in the torch_dist checkpoint " + shown(c.dir) +
                        " (Megatron's load_common_state_dict reads it)"};
  std::vector<std::vector<size_t>> dcp;
  const int W = dcp_reads(files, world, c.dir, dcp);
  ReadDirAssignment a;
  a.rule = "megatron";
  a.reads.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; r++) {
    auto& mine = a.reads[static_cast<size_t>(r)];
    if (c.tracker) mine.push_back(*c.tracker);
    mine.push_back(*x.config);
    mine.push_back(*x.common);
    mine.insert(mine.end(), dcp[static_cast<size_t>(r)].begin(), dcp[static_cast<size_t>(r)].end());
  }
  a.description = "Megatron-LM load_checkpoint (torch_dist format) of " + c.how + ", saved by " +
                  std::to_string(W) + " ranks: every rank reads " +
                  (c.tracker ? kMgTracker + ", " : std::string()) +
                  "metadata.json and common.pt, then as PyTorch DCP loads with the same sharding "
                  ".metadata and rank r its own __r_N.distcp files";
  return a;
}

ReadDirAssignment megatron_rule(const DirFiles& files, int world,
                                const std::function<std::string(const std::string&)>& read) {
  const auto iters = megatron_iters(files);
  const MgChoice c = megatron_choice(files, iters, read);
  const MgIter& x = iters.at(c.dir);
  return x.config ? megatron_dist(files, world, c, x) : megatron_legacy(world, c, x);
}

}  // namespace

ReadDirAssignment assign_read_dir(
    const DirFiles& files, int world, ReadAssign how,
    const std::function<std::string(const std::string&)>& read_small) {
  if (world < 1) throw Error("assign_read_dir: no ranks");
  struct Rule {
    const char* name;
    bool found;
    std::function<ReadDirAssignment()> make;
  };
  const Rule rules[] = {
      {"deepspeed", deepspeed_found(files),
       [&] { return deepspeed_rule(files, world, read_small); }},
      {"megatron", megatron_found(files), [&] { return megatron_rule(files, world, read_small); }},
      {"dcp", dcp_found(files), [&] { return dcp_rule(files, world); }},
      {"safetensors", safetensors_found(files),
       [&] { return safetensors_rule(files, world, read_small); }},
  };
  std::vector<std::string> recognised, why;
  for (const auto& r : rules)
    if (r.found) recognised.push_back(r.name);
  std::optional<ReadDirAssignment> got;
  if (how != ReadAssign::size)
    for (const auto& r : rules) {
      if (!r.found || got) continue;
      try {
        got = r.make();
      } catch (const NotApplicable& e) {
        why.push_back(std::string(r.name) + ": " + e.why);
      }
    }
  std::string fallback;
  for (const auto& w : why) fallback += (fallback.empty() ? "" : "; ") + w;
  if (how == ReadAssign::loader && !got)
    throw ConfigError(
        "--read-assign loader: " +
        (recognised.empty()
             ? std::string("the directory is not a checkpoint ckptbench recognises (a Hugging Face "
                           "safetensors model, a DeepSpeed tag directory, a Megatron-LM "
                           "checkpoint, a PyTorch DCP checkpoint); use --read-assign size")
             : fallback));
  ReadDirAssignment a = got ? std::move(*got) : by_size(files, world);
  a.recognised = recognised;
  a.fallback = fallback;
  std::vector<bool> read(files.size(), false);
  for (const auto& r : a.reads)
    for (size_t i : r) read[i] = true;
  for (size_t i = 0; i < files.size(); i++)
    if (!read[i]) a.skipped.push_back(i);
  return a;
}

json ReadDirAssignment::to_json() const {
  return {{"rule", rule},         {"description", description},
          {"fallback", fallback}, {"recognised", recognised},
          {"reads", reads},       {"skipped", skipped}};
}

ReadDirAssignment ReadDirAssignment::from_json(const json& j) {
  ReadDirAssignment a;
  a.rule = j.at("rule");
  a.description = j.at("description");
  a.fallback = j.at("fallback");
  a.recognised = j.at("recognised").get<std::vector<std::string>>();
  a.reads = j.at("reads").get<std::vector<std::vector<size_t>>>();
  a.skipped = j.at("skipped").get<std::vector<size_t>>();
  return a;
}

json ReadDirAssignment::summary(const DirFiles& files) const {
  uint64_t bytes = 0, skipped_bytes = 0;
  std::map<size_t, int> readers;
  for (const auto& r : reads)
    for (size_t i : r) bytes += files[i].second, readers[i]++;
  uint64_t multi = 0;
  for (const auto& [i, n] : readers) multi += n > 1;
  json sk = json::array();
  for (size_t i : skipped) {
    skipped_bytes += files[i].second;
    if (sk.size() < 20) sk.push_back(files[i].first);
  }
  json j = {{"rule", rule},
            {"description", description},
            {"recognised", recognised},
            {"files_read", readers.size()},
            {"files_read_by_several_ranks", multi},
            {"bytes_read_by_all_ranks", bytes},
            {"skipped_files", skipped.size()},
            {"skipped_bytes", skipped_bytes},
            {"skipped_first", sk}};
  if (!fallback.empty()) j["not_applied"] = fallback;
  return j;
}

IoPlan read_dir_plan(const DirFiles& files, const ReadDirAssignment& a) {
  const size_t world = a.reads.size();
  if (world < 1) throw Error("read_dir_plan: no ranks");
  IoPlan plan;
  plan.ranks.resize(world);
  std::map<size_t, std::vector<int>> readers;
  for (size_t r = 0; r < world; r++)
    for (size_t i : a.reads[r]) readers[i].push_back(static_cast<int>(r));
  std::map<size_t, RankList> lists;  // one list per file, shared by its readers' FileSpecs
  for (auto& [i, v] : readers) lists.emplace(i, std::move(v));
  std::vector<uint64_t> load(world, 0);
  for (size_t r = 0; r < world; r++) {
    RankIo& io = plan.ranks[r];
    io.rank = static_cast<int>(r);
    io.vranks = {static_cast<int>(r)};  // each rank reads as itself
    for (size_t i : a.reads[r]) {
      FileSpec f;
      f.id = static_cast<uint32_t>(i);
      f.path = files.at(i).first;
      f.size = files[i].second;
      f.writers = lists.at(i);
      f.shared = f.writers.size() > 1;
      if (f.size > 0) {
        Extent e;
        e.offset = 0;
        e.length = e.padded = f.size;
        e.source = static_cast<int>(r);
        f.extents.push_back(e);
      }
      io.payload_bytes += f.size;
      io.transfer_bytes += f.size;
      load[r] += f.size;
      io.files.push_back(std::move(f));
    }
  }
  PlanStats& st = plan.stats;
  st.files = readers.size();
  for (const auto& [i, rs] : readers) {
    const uint64_t size = files[i].second;
    st.file_bytes += size;
    st.size_histogram[size == 0 ? -1 : 63 - __builtin_clzll(size)]++;
  }
  for (uint64_t l : load) st.payload_bytes += l;
  st.rank_bytes_min = *std::min_element(load.begin(), load.end());
  st.rank_bytes_max = *std::max_element(load.begin(), load.end());
  st.rank_bytes_mean = static_cast<double>(st.payload_bytes) / static_cast<double>(world);
  return plan;
}

}  // namespace ckpt
