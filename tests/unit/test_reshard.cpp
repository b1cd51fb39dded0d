// Restore at another parallelism: the reads each restoring rank needs cover the saved bytes
// exactly (no gap, no byte twice), come from the right saved copies, stay inside the files, and
// follow the scaled geometry of reshard.hpp.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "ckptbench/base/error.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/plan/reshard.hpp"

using namespace ckpt;
using json = nlohmann::json;

namespace {

ModelDesc custom(uint64_t hidden, uint64_t ffn, uint64_t vocab, uint64_t layers = 2) {
  return build_model(parse_model_config(json{{"name", "custom"},
                                             {"hidden", hidden},
                                             {"layers", layers},
                                             {"heads", 4},
                                             {"ffn", ffn},
                                             {"vocab", vocab}}));
}

Parallelism par(int tp, int pp, int zero, int emulate = 0) {
  Parallelism p;
  p.tp = tp;
  p.pp = pp;
  p.dp = 0;
  p.zero_stage = zero;
  p.emulate_world = emulate;
  return p;
}

struct Saved {
  Parallelism par;
  IoPlan plan;
};

Saved save(const ModelDesc& m, const Parallelism& p, int world, LayoutKind kind, double scale,
           uint64_t chunk = 0, TrainingState ts = {}) {
  Saved s;
  s.par = resolve_parallelism(p, world, m);
  PlanInput in;
  in.model = &m;
  in.state = ts;
  in.par = s.par;
  in.scale = scale;
  in.layout.kind = kind;
  in.layout.align = 4096;
  in.layout.chunk_size = chunk;
  in.real_world = world;
  in.node_of_rank.assign(static_cast<size_t>(world), 0);
  s.plan = make_plan(in);
  return s;
}

ReshardInput input(const ModelDesc& m, const Saved& s, const Parallelism& restore, int world,
                   double scale, bool weights_only = false) {
  ReshardInput in;
  in.model = &m;
  in.scale = scale;
  in.saved_par = s.par;
  in.saved = &s.plan;
  in.restore_par = resolve_parallelism(restore, world, m);
  in.weights_only = weights_only;
  in.real_world = world;
  return in;
}

// The saved extents by file and offset, to find which saved shard a read falls in.
struct SavedExt {
  uint64_t end;
  int vrank, shard;
};
using SavedIndex = std::map<uint32_t, std::map<uint64_t, SavedExt>>;

SavedIndex index_saved(const IoPlan& plan) {
  SavedIndex idx;
  for (const auto& r : plan.ranks)
    for (const auto& f : r.files)
      for (const auto& e : f.extents)
        if (e.shard >= 0 && e.length > 0)
          idx[f.id][e.offset] = {e.offset + e.length, e.vrank, e.shard};
  return idx;
}

// The saved extent holding [off, off + len) of file `id`, or nullptr.
const SavedExt* find_saved(const SavedIndex& idx, uint32_t id, uint64_t off, uint64_t len) {
  auto f = idx.find(id);
  if (f == idx.end()) return nullptr;
  auto it = f->second.upper_bound(off);
  if (it == f->second.begin()) return nullptr;
  --it;
  if (off + len > it->second.end) return nullptr;
  return &it->second;
}

const Shard& saved_shard(const IoPlan& plan, const SavedExt& e) {
  return plan.shards[static_cast<size_t>(e.vrank)].shards[static_cast<size_t>(e.shard)];
}

bool replicated(const ModelDesc& m, const Shard& s) { return m.tensors[s.tensor].tp_split_dim < 0; }

// One read with the saved and held shards it belongs to.
struct Tagged {
  uint32_t file;
  uint64_t offset, length;
  int vrank, shard;       // restoring vrank and held index
  const SavedExt* saved;  // saved extent holding it
};

// Every read of the plan, checked to lie inside its file and inside one saved extent. Only valid
// without emulation (one vrank per real rank: no merged extents).
std::vector<Tagged> tagged_reads(const ReshardPlan& rp, const SavedIndex& idx) {
  std::vector<Tagged> out;
  for (const auto& r : rp.ranks)
    for (const auto& f : r.files) {
      uint64_t prev_end = 0;
      for (const auto& e : f.extents) {
        EXPECT_LE(e.offset + e.length, f.size) << f.path;
        EXPECT_GT(e.length, 0u);
        EXPECT_EQ(e.padded, e.length);
        EXPECT_GE(e.offset, prev_end) << "unsorted or overlapping reads in " << f.path;
        EXPECT_EQ(e.source, r.rank);
        prev_end = e.offset + e.length;
        const SavedExt* s = find_saved(idx, f.id, e.offset, e.length);
        EXPECT_NE(s, nullptr) << "read outside the saved shards: " << f.path << " @" << e.offset
                              << "+" << e.length;
        if (s) out.push_back({f.id, e.offset, e.length, e.vrank, e.shard, s});
      }
    }
  return out;
}

// The reads of distinct holders (held fragments, or whole shards held by DP rank 0) of saved
// shards matching `pred` cover every saved byte of those shards exactly once, less `unreadable`.
template <class Pred>
void check_coverage(const Saved& s, const ReshardInput& in, const ReshardPlan& rp, Pred pred,
                    uint64_t unreadable = 0) {
  const SavedIndex idx = index_saved(s.plan);
  std::map<int, std::vector<Shard>> held;
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> by_file;
  uint64_t read = 0;
  for (const Tagged& t : tagged_reads(rp, idx)) {
    if (!held.count(t.vrank)) held[t.vrank] = reshard_held_shards(in, t.vrank);
    const Shard& h = held[t.vrank].at(static_cast<size_t>(t.shard));
    const Shard& o = saved_shard(s.plan, *t.saved);
    EXPECT_EQ(h.tensor, o.tensor);
    EXPECT_EQ(h.kind, o.kind);
    if (!h.fragment && rank_coord(in.restore_par, t.vrank).dp != 0) continue;
    if (!pred(o)) continue;
    by_file[t.file].push_back({t.offset, t.offset + t.length});
    read += t.length;
  }
  for (auto& [id, v] : by_file) {
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); i++)
      EXPECT_LE(v[i - 1].second, v[i].first) << "byte read twice in file " << id;
  }
  uint64_t want = 0;
  for (const auto& [id, exts] : idx)
    for (const auto& [off, e] : exts)
      if (pred(saved_shard(s.plan, e))) want += e.end - off;
  EXPECT_GT(want, 0u);
  EXPECT_EQ(read + unreadable, want);
}

// Replicated tensors: each holder reads one full copy, from saved TP rank t % saved tp.
void check_replicated(const ModelDesc& m, const Saved& s, const ReshardInput& in,
                      const ReshardPlan& rp) {
  const SavedIndex idx = index_saved(s.plan);
  std::map<std::tuple<uint32_t, int, int>, uint64_t> saved_bytes;  // (tensor, kind, tp)
  for (size_t v = 0; v < s.plan.shards.size(); v++)
    for (const Shard& sh : s.plan.shards[v].shards)
      saved_bytes[{sh.tensor, static_cast<int>(sh.kind),
                   rank_coord(s.par, static_cast<int>(v)).tp}] += sh.bytes;
  std::map<std::pair<int, int>, uint64_t> per_held;  // (vrank, held shard) -> bytes
  std::map<int, std::vector<Shard>> held;
  size_t checked = 0;
  for (const Tagged& t : tagged_reads(rp, idx)) {
    const Shard& o = saved_shard(s.plan, *t.saved);
    if (!replicated(m, o)) continue;
    const int tp = rank_coord(in.restore_par, t.vrank).tp;
    EXPECT_EQ(rank_coord(s.par, t.saved->vrank).tp, tp % s.par.tp);
    per_held[{t.vrank, t.shard}] += t.length;
  }
  for (const auto& [key, bytes] : per_held) {
    if (!held.count(key.first)) held[key.first] = reshard_held_shards(in, key.first);
    const Shard& h = held[key.first].at(static_cast<size_t>(key.second));
    if (h.fragment) continue;
    const int tp = rank_coord(in.restore_par, key.first).tp % s.par.tp;
    EXPECT_EQ(bytes, (saved_bytes[{h.tensor, static_cast<int>(h.kind), tp}]))
        << m.tensors[h.tensor].name;
    checked++;
  }
  EXPECT_GT(checked, 0u);
}

// Reads per (restoring vrank, held shard, saved shard) pair, by the tensor's split dimension.
std::map<int, std::vector<size_t>> runs_per_pair(const ModelDesc& m, const Saved& s,
                                                 const ReshardPlan& rp) {
  const SavedIndex idx = index_saved(s.plan);
  std::map<std::tuple<int, int, int, int>, size_t> pairs;
  std::map<std::tuple<int, int, int, int>, int> split;
  for (const Tagged& t : tagged_reads(rp, idx)) {
    const auto key = std::make_tuple(t.vrank, t.shard, t.saved->vrank, t.saved->shard);
    pairs[key]++;
    split[key] = m.tensors[saved_shard(s.plan, *t.saved).tensor].tp_split_dim;
  }
  std::map<int, std::vector<size_t>> out;
  for (const auto& [key, n] : pairs) out[split[key]].push_back(n);
  return out;
}

}  // namespace

TEST(Reshard, IdentityReadsOwnExtents) {
  const ModelDesc m = custom(64, 128, 102);
  for (LayoutKind kind : {LayoutKind::file_per_shard, LayoutKind::aggregated_rank}) {
    const Saved s = save(m, par(2, 1, 0), 2, kind, 1.0);
    const ReshardInput in = input(m, s, par(2, 1, 0), 2, 1.0);
    const ReshardPlan rp = reshard_plan(in);
    ASSERT_EQ(rp.ranks.size(), 2u);
    for (int r = 0; r < 2; r++) {
      std::set<std::tuple<uint32_t, uint64_t, uint64_t>> want, got;
      for (const auto& f : s.plan.ranks[r].files)
        for (const auto& e : f.extents)
          if (e.shard >= 0 && e.length > 0) want.insert({f.id, e.offset, e.length});
      for (const auto& f : rp.ranks[r].files) {
        EXPECT_FALSE(f.create);
        EXPECT_FALSE(f.shared);
        EXPECT_EQ(f.writers, std::vector<int>{r});
        for (const auto& e : f.extents) got.insert({f.id, e.offset, e.length});
      }
      EXPECT_EQ(got, want) << layout_name(kind) << " rank " << r;
      EXPECT_EQ(rp.ranks[r].vranks, std::vector<int>{r});
      EXPECT_EQ(rp.ranks[r].payload_bytes, rp.ranks[r].transfer_bytes);
    }
    EXPECT_EQ(rp.needed_bytes, s.plan.stats.payload_bytes);
    EXPECT_EQ(rp.unreadable_bytes, 0u);
  }
}

TEST(Reshard, TensorParallelChangeScale1) {
  const ModelDesc m = custom(64, 128, 102);  // vocab 102: uneven over TP 4
  for (auto [stp, rtp] : {std::pair{4, 2}, std::pair{2, 4}}) {
    SCOPED_TRACE("tp " + std::to_string(stp) + " -> " + std::to_string(rtp));
    const Saved s = save(m, par(stp, 1, 0), stp, LayoutKind::file_per_shard, 1.0);
    const ReshardInput in = input(m, s, par(rtp, 1, 0), rtp, 1.0);
    const ReshardPlan rp = reshard_plan(in);
    check_coverage(s, in, rp, [&](const Shard& o) { return !replicated(m, o); });
    check_replicated(m, s, in, rp);
    const auto runs = runs_per_pair(m, s, rp);
    ASSERT_TRUE(runs.count(0) && runs.count(1));
    for (size_t n : runs.at(0)) EXPECT_EQ(n, 1u);  // column-parallel: one read per pair
    // Row-parallel: TP 2 -> 4 needs half of every saved row: one strided read per row (hidden
    // 64); TP 4 -> 2 needs whole saved shards, contiguous in their files: one read per pair.
    for (size_t n : runs.at(1)) EXPECT_EQ(n, stp < rtp ? 64u : 1u);
    for (size_t n : runs.at(-1)) EXPECT_EQ(n, 1u);
  }
}

TEST(Reshard, TensorParallelChangeScaled) {
  const ModelDesc m = custom(256, 512, 1001);
  const double scale = 1.0 / 64;
  for (auto [stp, rtp] : {std::pair{4, 2}, std::pair{2, 4}}) {
    SCOPED_TRACE("tp " + std::to_string(stp) + " -> " + std::to_string(rtp));
    const Saved s = save(m, par(stp, 1, 0), stp, LayoutKind::file_per_shard, scale);
    const ReshardInput in = input(m, s, par(rtp, 1, 0), rtp, scale);
    const ReshardPlan rp = reshard_plan(in);
    EXPECT_EQ(rp.unreadable_bytes, 0u);  // whole shards are never empty
    check_coverage(s, in, rp, [&](const Shard& o) { return !replicated(m, o); });
    check_replicated(m, s, in, rp);
    const auto runs = runs_per_pair(m, s, rp);
    ASSERT_TRUE(runs.count(1));
    // O_s = llround(256 / 64) strided reads, not 256 rows (TP 2 -> 4); one (TP 4 -> 2).
    for (size_t n : runs.at(1)) EXPECT_EQ(n, stp < rtp ? 4u : 1u);
    for (size_t n : runs.at(0)) EXPECT_EQ(n, 1u);
    if (stp > rtp) {
      EXPECT_LT(rp.needed_bytes, s.plan.stats.payload_bytes);  // replicated copies left unread
    }
  }
}

TEST(Reshard, ZeroStageChanges) {
  const ModelDesc m = custom(64, 128, 102);
  for (double scale : {1.0, 1.0 / 64}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    const auto optim = [](const Shard& o) { return o.kind != StateKind::weights; };
    const auto all = [](const Shard&) { return true; };
    {  // ZeRO 1 dp 2 -> ZeRO 0 dp 1 (same TP: every saved byte read exactly once)
      const Saved s = save(m, par(2, 1, 1), 4, LayoutKind::file_per_shard, scale);
      const ReshardInput in = input(m, s, par(2, 1, 0), 2, scale);
      const ReshardPlan rp = reshard_plan(in);
      check_coverage(s, in, rp, all, rp.unreadable_bytes);
      if (rp.unreadable_bytes == 0) check_coverage(s, in, rp, optim);
      EXPECT_EQ(rp.needed_bytes + rp.unreadable_bytes, s.plan.stats.payload_bytes);
    }
    {  // ZeRO 0 dp 1 -> ZeRO 3 dp 2
      const Saved s = save(m, par(2, 1, 0), 2, LayoutKind::file_per_shard, scale);
      const ReshardInput in = input(m, s, par(2, 1, 3), 4, scale);
      const ReshardPlan rp = reshard_plan(in);
      EXPECT_EQ(rp.unreadable_bytes, 0u);
      check_coverage(s, in, rp, optim);
      check_coverage(s, in, rp, all);
      for (const auto& r : rp.ranks) EXPECT_GT(r.payload_bytes, 0u);
    }
  }
  {  // ZeRO 1 TP 4 dp 2 -> ZeRO 3 TP 2 dp 4, ZeRO 2 TP 2 dp 4 -> ZeRO 1 TP 4 dp 2
    const Saved s = save(m, par(4, 1, 1), 8, LayoutKind::file_per_shard, 1.0);
    const ReshardInput in = input(m, s, par(2, 1, 3), 8, 1.0);
    const ReshardPlan rp = reshard_plan(in);
    check_coverage(s, in, rp, [&](const Shard& o) { return !replicated(m, o); });
    const Saved s2 = save(m, par(2, 1, 2), 8, LayoutKind::file_per_shard, 1.0);
    const ReshardInput in2 = input(m, s2, par(4, 1, 1), 8, 1.0);
    const ReshardPlan rp2 = reshard_plan(in2);
    check_coverage(s2, in2, rp2, [&](const Shard& o) { return !replicated(m, o); });
    check_replicated(m, s2, in2, rp2);
  }
}

TEST(Reshard, PipelineChangeChunkedFiles) {
  const ModelDesc m = custom(64, 128, 102);
  struct Case {
    int stp, spp, rtp;
  };
  for (const Case c : {Case{1, 2, 1}, Case{4, 2, 2}})
    for (uint64_t chunk : {uint64_t{0}, uint64_t{4096}}) {
      SCOPED_TRACE("tp" + std::to_string(c.stp) + "xpp" + std::to_string(c.spp) + " -> tp" +
                   std::to_string(c.rtp) + " chunk " + std::to_string(chunk));
      const int sworld = c.stp * c.spp;
      const Saved s =
          save(m, par(c.stp, c.spp, 0), sworld, LayoutKind::file_per_tensor, 1.0, chunk);
      if (chunk) {  // some shard is split across chunk files
        std::map<std::pair<int, int>, std::set<uint32_t>> files_of;
        for (const auto& r : s.plan.ranks)
          for (const auto& f : r.files)
            for (const auto& e : f.extents)
              if (e.shard >= 0 && e.length > 0) files_of[{e.vrank, e.shard}].insert(f.id);
        size_t split = 0;
        for (const auto& [k, ids] : files_of) split += ids.size() > 1;
        ASSERT_GT(split, 0u);
      }
      const ReshardInput in = input(m, s, par(c.rtp, 1, 0), c.rtp, 1.0);
      const ReshardPlan rp = reshard_plan(in);
      check_coverage(s, in, rp, [&](const Shard& o) { return !replicated(m, o); });
      check_replicated(m, s, in, rp);
      // Every file of the plan matches the saved file of that id.
      std::map<uint32_t, std::pair<std::string, uint64_t>> saved_files;
      for (const auto& r : s.plan.ranks)
        for (const auto& f : r.files) saved_files[f.id] = {f.path, f.size};
      for (const auto& r : rp.ranks) {
        uint32_t prev = 0;
        for (size_t i = 0; i < r.files.size(); i++) {
          const auto& f = r.files[i];
          if (i) {
            EXPECT_LT(prev, f.id);
          }
          prev = f.id;
          EXPECT_EQ(saved_files.at(f.id), (std::pair{f.path, f.size}));
        }
      }
      if (c.stp == 1) {
        EXPECT_EQ(rp.needed_bytes, s.plan.stats.payload_bytes);
      }
    }
}

TEST(Reshard, WeightsOnlyReadsOnlyWeights) {
  const ModelDesc m = custom(64, 128, 102);
  for (LayoutKind kind : {LayoutKind::aggregated_rank, LayoutKind::shared_file}) {
    const Saved s = save(m, par(2, 1, 1), 4, kind, 1.0);
    const ReshardInput in = input(m, s, par(1, 1, 0), 1, 1.0, true);
    const ReshardPlan rp = reshard_plan(in);
    const SavedIndex idx = index_saved(s.plan);
    size_t n = 0;
    for (const Tagged& t : tagged_reads(rp, idx)) {
      EXPECT_EQ(saved_shard(s.plan, *t.saved).kind, StateKind::weights);
      n++;
    }
    EXPECT_GT(n, 0u);
    for (const Shard& h : reshard_held_shards(in, 0)) EXPECT_EQ(h.kind, StateKind::weights);
    check_coverage(s, in, rp, [&](const Shard& o) {
      return o.kind == StateKind::weights && !replicated(m, o);
    });
    EXPECT_EQ(rp.needed_bytes, state_bytes(m, in.state, StateKind::weights));
  }
}

TEST(Reshard, EmulatedWorldMergesOverlaps) {
  const ModelDesc m = custom(64, 128, 102);
  const Saved s = save(m, par(2, 1, 1), 4, LayoutKind::file_per_shard, 1.0);
  // TP 2 x DP 4 ZeRO 0 on 4 real ranks: real rank r replays vranks r and r + 4, which hold the
  // same state (TP rank r % 2): every range is needed twice and read once.
  const ReshardInput in = input(m, s, par(2, 1, 0, 8), 4, 1.0);
  ASSERT_EQ(virtual_world(in.restore_par), 8);
  const ReshardPlan rp = reshard_plan(in);
  const ReshardInput one = input(m, s, par(2, 1, 0), 2, 1.0);
  const ReshardPlan rp1 = reshard_plan(one);
  ASSERT_EQ(rp.ranks.size(), 4u);
  std::map<uint32_t, std::set<int>> readers;
  for (const auto& r : rp.ranks)
    for (const auto& f : r.files) readers[f.id].insert(r.rank);
  uint64_t reads = 0;
  for (int r = 0; r < 4; r++) {
    const RankIo& ri = rp.ranks[static_cast<size_t>(r)];
    EXPECT_EQ(ri.vranks, (std::vector<int>{r, r + 4}));
    EXPECT_EQ(ri.payload_bytes, rp1.ranks[static_cast<size_t>(r % 2)].payload_bytes);
    for (const auto& f : ri.files) {
      for (size_t i = 1; i < f.extents.size(); i++)
        EXPECT_LE(f.extents[i - 1].offset + f.extents[i - 1].length, f.extents[i].offset);
      reads += f.extents.size();
      const std::set<int>& want = readers[f.id];
      EXPECT_EQ(f.writers, std::vector<int>(want.begin(), want.end()));
      EXPECT_EQ(f.shared, want.size() > 1);
      EXPECT_TRUE(f.shared);  // ranks r and r + 2 read the same TP rank's files
      for (const auto& e : f.extents) EXPECT_TRUE(e.vrank == r || e.vrank == r + 4);
    }
  }
  EXPECT_EQ(reads, rp.reads);
  EXPECT_EQ(rp.needed_bytes, 2 * rp1.needed_bytes);
  EXPECT_EQ(rp.reads, 2 * rp1.reads);

  const json j = reshard_plan_json(rp, in.restore_par, false);
  EXPECT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["needed_bytes"], rp.needed_bytes);
  EXPECT_EQ(j["bytes_min"], j["bytes_max"]);
  EXPECT_EQ(j["ranks"][1]["vranks"], json({1, 5}));
  EXPECT_EQ(j["parallelism"]["emulate_world"], 8);
}

TEST(Reshard, RefusesDlioSizingAndMissingState) {
  const ModelDesc d = build_model(parse_model_config(json{{"name", "tiny"}, {"sizing", "dlio"}}));
  ASSERT_EQ(d.sizing, "dlio");
  const Saved s = save(d, par(1, 1, 0), 1, LayoutKind::file_per_shard, 1.0);
  try {
    reshard_plan(input(d, s, par(1, 1, 0), 1, 1.0));
    FAIL() << "dlio sizing accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("restore.parallelism"), std::string::npos) << e.what();
  }

  // A weights-only save (optimizer none) cannot give the optimizer state of a training restore.
  const ModelDesc m = custom(64, 128, 102);
  TrainingState none;
  none.optimizer = Optimizer::none;
  const Saved w = save(m, par(2, 1, 0), 2, LayoutKind::file_per_shard, 1.0, 0, none);
  try {
    reshard_plan(input(m, w, par(1, 1, 0), 1, 1.0));
    FAIL() << "missing optimizer state accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("restore.parallelism"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(reshard_plan(input(m, w, par(1, 1, 0), 1, 1.0, true)));
}

TEST(Reshard, EveryLayout) {
  const ModelDesc m = custom(64, 128, 102);
  for (const std::string& name : layout_names()) {
    const LayoutKind kind = parse_layout(name);
    if (kind == LayoutKind::dlio) continue;
    SCOPED_TRACE(name);
    for (double scale : {1.0, 1.0 / 16}) {
      const Saved s = save(m, par(2, 2, 1), 8, kind, scale);
      const ReshardInput in = input(m, s, par(4, 1, 0), 4, scale);
      const ReshardPlan rp = reshard_plan(in);
      check_coverage(
          s, in, rp, [&](const Shard& o) { return !replicated(m, o); }, rp.unreadable_bytes);
      check_replicated(m, s, in, rp);
    }
  }
}

TEST(Reshard, TinyFragmentsUnreadable) {
  // ZeRO 3 over 2000 DP ranks at scale 1/64: fragments of ~48 elements; those of row-parallel
  // tensors (64 real rows -> 1 scaled row) can map to no scaled element and are never read.
  const ModelDesc m = custom(64, 128, 102);
  const double scale = 1.0 / 64;
  const Saved s = save(m, par(1, 1, 3), 2000, LayoutKind::file_per_shard, scale);
  const auto all = [](const Shard&) { return true; };
  for (const Parallelism& r : {par(1, 1, 0), par(2, 1, 3, 8)}) {
    const int world = r.emulate_world ? r.emulate_world : 1;
    const ReshardInput in = input(m, s, r, world, scale);
    const ReshardPlan rp = reshard_plan(in);
    EXPECT_GT(rp.unreadable_shards, 0u);
    EXPECT_GE(rp.unreadable_bytes, rp.unreadable_shards);
    if (r.tp == 1) {
      check_coverage(s, in, rp, all, rp.unreadable_bytes);
      EXPECT_EQ(rp.needed_bytes + rp.unreadable_bytes, s.plan.stats.payload_bytes);
    } else {
      check_coverage(
          s, in, rp, [&](const Shard& o) { return !replicated(m, o); }, rp.unreadable_bytes);
    }
  }
}
