#include "ckptbench/plan/layout.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/plan/frameworks.hpp"

namespace ckpt {

const EnumNames<LayoutKind>& layout_kind_names() {
  using K = LayoutKind;
  static const EnumNames<K> n = {{K::file_per_tensor, "file-per-tensor"},
                                 {K::file_per_shard, "file-per-shard"},
                                 {K::aggregated_rank, "aggregated-rank"},
                                 {K::aggregated_node, "aggregated-node"},
                                 {K::shared_file, "shared-file"},
                                 {K::deepspeed, "deepspeed"},
                                 {K::megatron, "megatron"},
                                 {K::megatron_dist, "megatron-dist"},
                                 {K::torch_dcp, "torch-dcp"},
                                 {K::torchsnapshot, "torchsnapshot"},
                                 {K::dlio, "dlio"}};
  return n;
}

std::vector<std::string> layout_names() { return layout_kind_names().names(); }

LayoutKind parse_layout(const std::string& name) {
  if (auto k = layout_kind_names().find(name)) return *k;
  throw ConfigError("'layout': unknown value '" + text_excerpt(name) +
                    "' (allowed: " + layout_kind_names().list() + ")");
}

std::string layout_name(LayoutKind k) { return layout_kind_names().name(k); }

nlohmann::json plan_stats_json(const PlanStats& st) {
  nlohmann::json hist = nlohmann::json::object();
  for (auto [b, n] : st.size_histogram)
    hist[b < 0 ? std::string("0") : ("2^" + std::to_string(b))] = n;
  return {{"files", st.files},
          {"dirs", st.dirs},
          {"payload_bytes", st.payload_bytes},
          {"padding_bytes", st.padding_bytes},
          {"index_bytes", st.index_bytes},
          {"file_bytes", st.file_bytes},
          {"zero_padding_bytes", st.zero_padding_bytes},
          {"rank_payload_bytes",
           {{"min", st.rank_bytes_min}, {"mean", st.rank_bytes_mean}, {"max", st.rank_bytes_max}}},
          {"file_size_histogram", hist},
          {"state_kind_bytes", st.kind_bytes}};
}

nlohmann::json plan_file_list(const IoPlan& plan, const ModelDesc* items_of) {
  std::map<uint32_t, const FileSpec*> by_id;
  // A shared file's regions: per writer, the first and the end offset of the shards it
  // transfers.
  std::map<uint32_t, nlohmann::json> regions;
  for (const auto& r : plan.ranks)
    for (const auto& f : r.files) {
      by_id.emplace(f.id, &f);
      if (!f.shared || f.extents.empty()) continue;
      uint64_t lo = UINT64_MAX, hi = 0;
      for (const auto& e : f.extents) {
        if (e.shard < 0) continue;  // the index footer, written by one rank at the end
        lo = std::min(lo, e.offset);
        hi = std::max(hi, e.offset + e.padded);
      }
      if (hi > 0) regions[f.id].push_back({{"rank", r.rank}, {"offset", lo}, {"end", hi}});
    }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [id, f] : by_id) {
    nlohmann::json j = {{"path", f->path}, {"size", f->size}, {"writers", f->writers.get()}};
    if (auto it = regions.find(id); it != regions.end()) j["regions"] = it->second;
    if (items_of) {
      // Every writer's tensor data in file order (a rank's FileSpec holds its own extents).
      std::vector<const Extent*> ex;
      for (const auto& r : plan.ranks)
        for (const auto& g : r.files)
          if (g.id == id)
            for (const auto& e : g.extents)
              if (e.shard >= 0) ex.push_back(&e);
      std::sort(ex.begin(), ex.end(),
                [](const Extent* a, const Extent* b) { return a->offset < b->offset; });
      nlohmann::json items = nlohmann::json::array();
      for (const Extent* e : ex) {
        const Shard& sh =
            plan.shards[static_cast<size_t>(e->vrank)].shards[static_cast<size_t>(e->shard)];
        items.push_back({{"name", shard_label(*items_of, sh)},
                         {"dtype", std::string(dtype_name(sh.dtype))},
                         {"bytes", e->length},
                         {"offset", e->offset},
                         {"vrank", e->vrank},
                         {"shard", e->shard},
                         {"rank", e->source}});
      }
      j["items"] = std::move(items);
    }
    out.push_back(j);
  }
  return out;
}

std::string shard_label(const ModelDesc& m, const Shard& s) {
  // Appended piece by piece: `"@" + std::to_string(...)` trips GCC 12's -Wrestrict false
  // positive (GCC bug 105329) at -O3, which breaks Release builds with -Werror.
  std::string l = m.tensors[s.tensor].name;
  l += '/';
  l += state_kind_name(s.kind);
  if (s.fragment) {
    l += '@';
    l += std::to_string(s.elem_offset);
  }
  return l;
}

namespace {

// A file of the global plan with all its extents (of every writer).
struct GFile {
  std::string path;
  std::vector<Extent> extents;
  // torch.save writes this file (with framing torch-zip it becomes a zip archive) and pickles
  // `objects` bytes of non-tensor state beside the tensors.
  bool torch_save = false;
  uint64_t objects = 0;
  std::vector<Req> write_reqs, read_reqs;
  FileRole role = FileRole::data;  // FileSpec::role
  std::string text;                // FileSpec::text
  int index_writer = -1;           // real rank writing the footer index (-1: no index)
  uint64_t index_len = 0;
};

constexpr uint64_t kIndexHeader = 4096, kIndexEntry = 64;

struct Builder {
  const PlanInput& in;
  IoPlan& plan;
  uint64_t align;
  std::vector<GFile> files;
  std::set<std::string> dirs;

  int real_of(int v) const { return v % in.real_world; }

  uint64_t padded(uint64_t len) const {
    return in.layout.pad_to_align ? round_up(len, align) : len;
  }

  // Appends the shards `items` of vrank v to file f starting at its current end.
  void append(GFile& f, uint64_t& cursor, int v, const std::vector<int>& items, int source) {
    const auto& sh = plan.shards[v].shards;
    for (int i : items) {
      Extent e;
      e.offset = round_up(cursor, align);
      e.length = sh[i].bytes;
      e.padded = padded(e.length);
      e.vrank = v;
      e.shard = i;
      e.source = source;
      cursor = e.offset + e.padded;
      if (e.length > 0) f.extents.push_back(e);
    }
  }

  void add_index(GFile& f, uint64_t& cursor, int writer) {
    f.index_len = kIndexHeader + kIndexEntry * f.extents.size();
    Extent e;
    e.offset = round_up(cursor, align);
    e.length = f.index_len;
    e.padded = padded(e.length);
    e.vrank = -1;
    e.shard = -1;
    e.source = writer;
    cursor = e.offset + e.padded;
    f.extents.push_back(e);
    f.index_writer = writer;
  }

  // Non-tensor bytes of a framework file (pickle, zip records, metadata), written by `writer`.
  void add_meta(GFile& f, uint64_t& cursor, uint64_t len, int writer) {
    Extent e;
    e.offset = round_up(cursor, align);
    e.length = len;
    e.padded = padded(len);
    e.source = writer;
    cursor = e.offset + e.padded;
    f.extents.push_back(e);
  }

  std::vector<int> all_items(int v) const {
    std::vector<int> it(plan.shards[v].shards.size());
    for (size_t i = 0; i < it.size(); i++) it[i] = static_cast<int>(i);
    return it;
  }

  // Consecutive virtual ranks [first, last) into one aggregated file with an index.
  void group_file(const std::string& path, const std::vector<int>& vranks, int leader) {
    GFile f;
    f.path = path;
    uint64_t cursor = 0;
    // Without a leader each real rank writes its own region: start each at region_align.
    const uint64_t region = leader < 0 ? in.layout.region_align : 0;
    int prev = -1;
    for (int v : vranks) {
      if (region > 0 && prev >= 0 && real_of(v) != prev) cursor = round_up(cursor, region);
      prev = real_of(v);
      append(f, cursor, v, all_items(v), real_of(v));
    }
    int writer = leader >= 0 ? leader : real_of(vranks.front());
    add_index(f, cursor, writer);
    files.push_back(std::move(f));
  }

  // One file per tensor shard, in a directory per virtual rank.
  void build_file_per_tensor() {
    const int V = static_cast<int>(plan.shards.size());
    for (int v = 0; v < V; v++) {
      const auto& sh = plan.shards[v].shards;
      if (sh.empty()) continue;
      std::string dir = format_text("rank_%05d", v);
      dirs.insert(dir);
      for (size_t i = 0; i < sh.size(); i++) {
        GFile f;
        // Piece by piece, as in shard_label (GCC 12 -Wrestrict false positive otherwise).
        f.path = dir;
        f.path += '/';
        f.path += escape_file_name(in.model->tensors[sh[i].tensor].name);
        f.path += '.';
        f.path += state_kind_name(sh[i].kind);
        if (sh[i].fragment) {
          f.path += '.';
          f.path += std::to_string(sh[i].elem_offset);
        }
        uint64_t cursor = 0;
        append(f, cursor, v, {static_cast<int>(i)}, real_of(v));
        if (!f.extents.empty()) files.push_back(std::move(f));
      }
    }
  }

  // Per virtual rank a model-states file (its weights) and an optimizer-states file.
  void build_file_per_shard() {
    const int V = static_cast<int>(plan.shards.size());
    const auto& par = in.par;
    auto mp_of = [&](const RankCoord& c) { return c.tp + par.tp * c.pp; };
    for (int v = 0; v < V; v++) {
      const auto& rs = plan.shards[v];
      std::vector<int> weights, optim;
      for (size_t i = 0; i < rs.shards.size(); i++)
        (rs.shards[i].kind == StateKind::weights ? weights : optim).push_back(static_cast<int>(i));
      std::string mp = format_text("mp_rank_%02d", mp_of(rs.coord));
      std::string prefix = in.state.weight_dtype == DType::bf16 ? "bf16_" : "";
      if (!weights.empty()) {
        GFile f;
        f.path = par.zero_stage == 3 ? prefix + format_text("zero_pp_rank_%d_", rs.coord.dp) + mp +
                                           "_model_states.pt"
                                     : mp + "_model_states.pt";
        uint64_t cursor = 0;
        append(f, cursor, v, weights, real_of(v));
        if (!f.extents.empty()) files.push_back(std::move(f));
      }
      if (!optim.empty()) {
        GFile f;
        f.path = prefix + format_text("zero_pp_rank_%d_", rs.coord.dp) + mp + "_optim_states.pt";
        uint64_t cursor = 0;
        append(f, cursor, v, optim, real_of(v));
        if (!f.extents.empty()) files.push_back(std::move(f));
      }
    }
  }

  // aggregated-rank and shared-file: ranks_per_file consecutive virtual ranks per file.
  void build_rank_groups() {
    const int V = static_cast<int>(plan.shards.size());
    int k = in.layout.ranks_per_file;
    if (k <= 0) k = in.layout.kind == LayoutKind::shared_file ? V : 1;
    for (int g = 0; g * k < V; g++) {
      std::vector<int> vr;
      for (int v = g * k; v < std::min(V, (g + 1) * k); v++)
        if (!plan.shards[v].shards.empty()) vr.push_back(v);
      if (vr.empty()) continue;
      std::string path = k == V && in.layout.kind == LayoutKind::shared_file
                             ? std::string("checkpoint.ckpt")
                         : k == 1 ? format_text("rank_%05d.ckpt", g)
                                  : format_text("group_%05d.ckpt", g);
      group_file(path, vr, -1);
    }
  }

  // The layouts of real frameworks: their files as framework_files lays them out.
  void build_framework() {
    FwStructure fw = framework_files(in, plan.shards);
    for (auto& d : fw.dirs) dirs.insert(d);
    for (const auto& ff : fw.files) {
      GFile f;
      f.path = ff.path;
      f.role = ff.role;
      f.text = ff.text;
      uint64_t cursor = 0;
      const int writer = real_of(ff.writer);
      for (const auto& it : ff.items) append(f, cursor, it.vrank, {it.shard}, writer);
      if (ff.meta_bytes > 0) add_meta(f, cursor, ff.meta_bytes, writer);
      // Records go beside the backend with plain POSIX calls: never padded (FileRole).
      if (f.role != FileRole::data)
        for (auto& e : f.extents) e.padded = e.length;
      // The torch.save files of these frameworks: those holding tensors (not latest,
      // zero_to_fp32.py or DCP's files); their meta bytes less torch.save's own estimate
      // are the pickled trainer state.
      const bool ts = in.layout.kind == LayoutKind::deepspeed ||
                      in.layout.kind == LayoutKind::megatron || in.layout.kind == LayoutKind::dlio;
      if (ts && !ff.items.empty()) {
        f.torch_save = true;
        const uint64_t own = torch_save_meta(ff.items.size());
        f.objects = ff.meta_bytes > own ? ff.meta_bytes - own : 0;
      }
      if (!f.extents.empty()) files.push_back(std::move(f));
    }
  }

  // aggregated-node: one file per node, written by its lowest rank (the leader).
  void build_node_files() {
    const int V = static_cast<int>(plan.shards.size());
    if (static_cast<int>(in.node_of_rank.size()) != in.real_world)
      throw ConfigError("layout 'aggregated-node' needs the node of every rank");
    int nodes = 0;
    for (int n : in.node_of_rank) nodes = std::max(nodes, n + 1);
    for (int n = 0; n < nodes; n++) {
      int leader = -1;
      for (int r = 0; r < in.real_world; r++)
        if (in.node_of_rank[r] == n) {
          leader = r;
          break;
        }
      if (leader < 0) continue;
      // Virtual ranks replayed by the node's real ranks, in rank order.
      std::vector<int> vr;
      for (int v = 0; v < V; v++)
        if (in.node_of_rank[real_of(v)] == n && !plan.shards[v].shards.empty()) vr.push_back(v);
      if (vr.empty()) continue;
      GFile f;
      f.path = format_text("node_%04d.ckpt", n);
      uint64_t cursor = 0;
      for (int v : vr) append(f, cursor, v, all_items(v), real_of(v));
      add_index(f, cursor, leader);
      files.push_back(std::move(f));
      node_leader_[files.size() - 1] = leader;
    }
  }

  void build() {
    switch (in.layout.kind) {
      case LayoutKind::file_per_tensor:
        build_file_per_tensor();
        break;
      case LayoutKind::file_per_shard:
        build_file_per_shard();
        break;
      case LayoutKind::aggregated_rank:
      case LayoutKind::shared_file:
        build_rank_groups();
        break;
      case LayoutKind::deepspeed:
      case LayoutKind::megatron:
      case LayoutKind::megatron_dist:
      case LayoutKind::torch_dcp:
      case LayoutKind::torchsnapshot:
      case LayoutKind::dlio:
        build_framework();
        break;
      case LayoutKind::aggregated_node:
        build_node_files();
        break;
    }
  }

  std::map<size_t, int> node_leader_;  // file index -> leader (node aggregation)

  // Framing torch-zip: each torch.save file becomes its zip archive (framing.hpp).
  void frame() {
    if (in.layout.framing != Framing::torch_zip) return;
    const LayoutKind k = in.layout.kind;
    const bool plain = k == LayoutKind::file_per_tensor || k == LayoutKind::file_per_shard ||
                       k == LayoutKind::aggregated_rank;
    const bool dcp = k == LayoutKind::torch_dcp || k == LayoutKind::megatron_dist;
    if (!plain && !dcp && k != LayoutKind::deepspeed && k != LayoutKind::megatron &&
        k != LayoutKind::dlio)
      throw ConfigError(
          "'framing': torch-zip frames files that torch.save writes, one rank each: "
          "layouts file-per-tensor, file-per-shard, aggregated-rank, deepspeed, megatron, dlio, "
          "torch-dcp, megatron-dist; not '" +
          layout_name(k) + "'");
    if (in.layout.chunk_size > 0)
      throw ConfigError("'framing': torch-zip writes each file whole; unset 'chunk_size'");
    auto ends_with = [](const std::string& p, const std::string& x) {
      return p.size() >= x.size() && p.compare(p.size() - x.size(), x.size(), x) == 0;
    };
    std::vector<size_t> fqns;  // DCP: every item's FQN length, for .metadata
    for (auto& f : files) {
      if (plain) f.torch_save = true;
      const bool item_file = dcp && ends_with(f.path, ".distcp");
      if (!f.torch_save && !item_file) continue;
      int writer = -1;
      std::vector<Extent> data;
      std::vector<ZipItem> items;
      for (const auto& e : f.extents) {
        if (writer >= 0 && e.source != writer)
          throw ConfigError("'framing': torch-zip needs one writer per file; '" + f.path +
                            "' has several (set ranks_per_file 1)");
        writer = e.source;
        if (e.shard < 0) continue;
        data.push_back(e);
        const Shard& s =
            plan.shards[static_cast<size_t>(e.vrank)].shards[static_cast<size_t>(e.shard)];
        items.push_back({e.length, shard_label(*in.model, s).size()});
        // DCP keys carry the owner ("v<vrank>/" in scripts/realfw.py).
        if (item_file) fqns.push_back(items.back().name_len + 2 + std::to_string(e.vrank).size());
      }
      std::vector<uint64_t> at;
      uint64_t size = 0;
      if (item_file) {
        DcpFile d = dcp_file(items);
        at = std::move(d.data);
        size = d.size;
        f.write_reqs = std::move(d.writes);
        f.read_reqs = std::move(d.reads);
      } else {
        TorchZip z = torch_zip(torch_archive_name(f.path), items, 4096,
                               torch_pickle_bytes(items) + f.objects);
        for (const auto& t : z.tensors) at.push_back(t.data);
        size = z.size;
        f.write_reqs = std::move(z.writes);
        f.read_reqs = std::move(z.reads);
      }
      f.extents = tile(data, at, size, writer);
      f.index_writer = -1;
      f.index_len = 0;
    }
    // The coordinator's .metadata: its size from the items (DCP pickles Metadata whole).
    if (dcp)
      for (auto& f : files)
        if (f.path == ".metadata" || ends_with(f.path, "/.metadata")) {
          const int writer = f.extents.empty() ? 0 : f.extents.front().source;
          const uint64_t size = dcp_metadata_bytes(fqns, in.layout.dcp_single_file);
          f.extents = tile({}, {}, size, writer);
          PickleFile p = pickle_file(size);
          f.write_reqs = std::move(p.writes);
          f.read_reqs = std::move(p.reads);
        }
  }

  // Data extents at the offsets the framing gives them (`at`, in the order of `data`), the
  // framing bytes (headers, descriptors, pickles, central directories) as extents without a
  // shard between them: the file's bytes [0, size) tiled.
  static std::vector<Extent> tile(std::vector<Extent> data, const std::vector<uint64_t>& at,
                                  uint64_t size, int writer) {
    for (size_t i = 0; i < data.size(); i++) {
      data[i].offset = at[i];
      data[i].padded = data[i].length;
    }
    std::sort(data.begin(), data.end(),
              [](const Extent& a, const Extent& b) { return a.offset < b.offset; });
    std::vector<Extent> all;
    uint64_t cur = 0;
    auto gap = [&](uint64_t to) {
      if (to <= cur) return;
      Extent g;
      g.offset = cur;
      g.length = g.padded = to - cur;
      g.source = writer;
      all.push_back(g);
      cur = to;
    };
    for (const auto& e : data) {
      gap(e.offset);
      all.push_back(e);
      cur = e.offset + e.length;
    }
    gap(size);
    return all;
  }

  // Splits every file into chunk files of at most chunk_size bytes.
  void chunk() {
    uint64_t cs = in.layout.chunk_size;
    if (cs == 0) return;
    if (cs % align != 0)
      throw ConfigError("'chunk_size': " + std::to_string(cs) +
                        " is not a multiple of the alignment " + std::to_string(align));
    std::vector<GFile> out;
    std::map<size_t, int> leaders;
    for (size_t fi = 0; fi < files.size(); fi++) {
      auto& f = files[fi];
      std::map<uint64_t, GFile> parts;
      for (const auto& e : f.extents) {
        uint64_t pos = 0;
        while (pos < e.padded) {
          uint64_t off = e.offset + pos;
          uint64_t c = off / cs;
          uint64_t take = std::min(e.padded - pos, (c + 1) * cs - off);
          Extent p = e;
          p.offset = off - c * cs;
          p.padded = take;
          p.length = pos >= e.length ? 0 : std::min(take, e.length - pos);
          GFile& g = parts[c];
          if (g.path.empty()) g.path = f.path + format_text(".chunk%05ld", static_cast<long>(c));
          if (p.length > 0 || p.padded > 0) g.extents.push_back(p);
          pos += take;
        }
      }
      // A file that fits in one chunk keeps its name.
      if (parts.size() == 1) parts.begin()->second.path = f.path;
      for (auto& [c, g] : parts) {
        g.index_writer = f.index_writer;
        auto it = node_leader_.find(fi);
        if (it != node_leader_.end()) leaders[out.size()] = it->second;
        out.push_back(std::move(g));
      }
    }
    files = std::move(out);
    node_leader_ = std::move(leaders);
  }

  void distribute() {
    const int N = in.real_world;
    plan.ranks.resize(N);
    for (int r = 0; r < N; r++) plan.ranks[r].rank = r;
    for (int v = 0; v < static_cast<int>(plan.shards.size()); v++) {
      auto& ri = plan.ranks[real_of(v)];
      ri.vranks.push_back(v);
      ri.payload_bytes += plan.shards[v].payload_bytes;
    }
    for (size_t fi = 0; fi < files.size(); fi++) {
      auto& f = files[fi];
      auto lit = node_leader_.find(fi);
      int leader = lit == node_leader_.end() ? -1 : lit->second;
      // Writer of an extent: the leader for node files, else the extent's source rank.
      std::map<int, std::vector<Extent>> by_rank;
      for (const auto& e : f.extents) by_rank[leader >= 0 ? leader : e.source].push_back(e);
      std::vector<int> wl;
      for (auto& [r, ex] : by_rank) wl.push_back(r);
      const RankList writers(std::move(wl));
      uint64_t size = 0;
      for (const auto& e : f.extents) size = std::max(size, e.offset + e.padded);
      for (auto& [r, ex] : by_rank) {
        FileSpec fs;
        fs.id = static_cast<uint32_t>(fi);
        fs.path = f.path;
        fs.size = size;
        fs.create = r == writers.front();
        fs.shared = writers.size() > 1;
        fs.writers = writers;
        fs.write_reqs = f.write_reqs;
        fs.read_reqs = f.read_reqs;
        fs.role = f.role;
        fs.text = f.text;
        for (const auto& e : ex) plan.ranks[r].transfer_bytes += e.padded;
        fs.extents = std::move(ex);
        plan.ranks[r].files.push_back(std::move(fs));
      }
      // A record (FileRole): every other rank reads it on restore (its own copy of the extents,
      // so it verifies them itself); it never writes it.
      if (f.role != FileRole::data) {
        if (writers.size() != 1 || leader >= 0)
          throw Error("layout: record '" + f.path + "' needs exactly one writer");
        if (f.role == FileRole::commit) plan.commit = true;
        for (int r = 0; r < N; r++) {
          if (r == writers.front()) continue;
          FileSpec fs;
          fs.id = static_cast<uint32_t>(fi);
          fs.path = f.path;
          fs.size = size;
          fs.writers = writers;
          fs.read_reqs = f.read_reqs;
          fs.write_reqs = f.write_reqs;
          fs.role = f.role;
          fs.text = f.text;
          fs.extents = f.extents;
          for (auto& e : fs.extents) e.source = r;
          plan.ranks[r].files.push_back(std::move(fs));
        }
      }
      if (writers.size() > 1) plan.any_shared = true;
      if (leader >= 0) {
        for (const auto& e : f.extents) {
          if (e.source == leader || e.source < 0) continue;
          plan.ranks[e.source].leader = leader;
          plan.ranks[e.source].remote.push_back({static_cast<uint32_t>(fi), f.path, e});
        }
      }
      // Stats.
      auto& st = plan.stats;
      st.files++;
      st.file_bytes += size;
      int b = size == 0 ? -1 : 63 - __builtin_clzll(size);
      st.size_histogram[b]++;
      for (const auto& e : f.extents) {
        if (e.shard < 0) {
          st.index_bytes += e.length;
        } else {
          st.payload_bytes += e.length;
          const Shard& s =
              plan.shards[static_cast<size_t>(e.vrank)].shards[static_cast<size_t>(e.shard)];
          st.kind_bytes[std::string(state_kind_name(s.kind))] += e.length;
        }
        st.padding_bytes += e.padded - e.length;
      }
    }
  }
};

}  // namespace

IoPlan make_plan(const PlanInput& in) {
  if (!in.model) throw Error("make_plan: no model");
  if (in.real_world < 1) throw Error("make_plan: empty world");
  IoPlan plan;
  const int V = virtual_world(in.par);
  if (V < in.real_world)
    throw ConfigError("the parallel layout has " + std::to_string(V) + " ranks but the job has " +
                      std::to_string(in.real_world) +
                      " (set parallelism.dp to \"auto\" or raise emulate_world)");
  plan.shards.reserve(V);
  for (int v = 0; v < V; v++)
    plan.shards.push_back(shards_for_rank(*in.model, in.state, in.par, v, in.scale));
  Builder b{in, plan, std::max<uint64_t>(in.layout.align, 1), {}, {}, {}};
  b.build();
  plan.load_in_place =
      in.layout.kind == LayoutKind::torch_dcp || in.layout.kind == LayoutKind::megatron_dist;
  // Every path stays inside the point directory, whatever names an imported model carries.
  for (const auto& f : b.files) {
    bool bad = f.path.empty() || f.path.front() == '/' || f.path.find('\0') != std::string::npos;
    size_t start = 0;
    while (!bad && start <= f.path.size()) {
      size_t slash = f.path.find('/', start);
      std::string comp =
          f.path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      bad = comp.empty() || comp == "." || comp == "..";
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (bad)
      throw ConfigError("file name '" + f.path +
                        "' would escape or confuse the checkpoint directory (empty, '.', '..' or "
                        "absolute components); rename the tensor");
  }
  b.frame();
  b.chunk();
  b.distribute();
  plan.dirs.assign(b.dirs.begin(), b.dirs.end());
  plan.step_dir = framework_step_dir(in.layout.kind, in.layout.step);
  auto& st = plan.stats;
  st.dirs = plan.dirs.size();
  uint64_t mn = UINT64_MAX, mx = 0, sum = 0;
  for (const auto& rs : plan.shards) {
    mn = std::min(mn, rs.payload_bytes);
    mx = std::max(mx, rs.payload_bytes);
    sum += rs.payload_bytes;
    st.zero_padding_bytes += rs.zero_padding_bytes;
  }
  st.rank_bytes_min = V ? mn : 0;
  st.rank_bytes_max = mx;
  st.rank_bytes_mean = V ? static_cast<double>(sum) / V : 0;
  return plan;
}

}  // namespace ckpt
