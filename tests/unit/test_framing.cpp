// torch.save's zip framing and the requests of its file streams, checked against what torch
// 1.13.1 wrote and read here: a dict of 15 tensors saved to rank_00000.ckpt, listed with Python's
// zipfile and traced with strace (docs/layouts.md, "torch.save framing").
#include <gtest/gtest.h>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/framing.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/transfer.hpp"
#include "support.hpp"

using namespace ckpt;
using ckpt_test::expect_config_error;

namespace {

// {"layers.0.attention.wq.weight": bf16 1024x1024, "norm.weight": f32 1024, "tiny": f32 10,
//  "t0".."t11": f32 300 each}
std::vector<ZipItem> observed_items() {
  std::vector<ZipItem> v = {{2097152, 28}, {4096, 11}, {40, 4}};
  for (int i = 0; i < 12; i++) v.push_back({1200, i < 10 ? 2u : 3u});
  return v;
}

}  // namespace

TEST(Framing, TorchZipOffsetsAsZipfileListsThem) {
  const TorchZip z = torch_zip("rank_00000", observed_items(), 4096, 1079);
  EXPECT_EQ(z.size, 2119403u);
  EXPECT_EQ(z.pickle.header, 0u);
  EXPECT_EQ(z.pickle.data, 64u);
  // header offsets of data/0 .. data/14 (data/10..14 are written before data/2: key order)
  const uint64_t header[15] = {1159,    2098384, 2109056, 2109176, 2110464,
                               2111744, 2113024, 2114304, 2115584, 2116864,
                               2102608, 2103936, 2105216, 2106496, 2107776};
  for (int i = 0; i < 15; i++) EXPECT_EQ(z.tensors[i].header, header[i]) << "data/" << i;
  EXPECT_EQ(z.tensors[0].data, 1216u);
  EXPECT_EQ(z.version.header, 2118144u);
  EXPECT_EQ(z.cdir, 2118226u);
  EXPECT_EQ(z.cdir_len, 1079u);
}

TEST(Framing, TorchZipWritesAsStraced) {
  const TorchZip z = torch_zip("rank_00000", observed_items(), 4096, 1079);
  // writev lengths in order; the 40-byte tensor is buffered with its neighbours' headers
  const uint64_t want[] = {1143, 2097225, 4224, 1328, 1280, 1280, 1280, 1280, 1408,
                           1280, 1280,    1280, 1280, 1280, 1280, 1177, 98};
  ASSERT_EQ(z.writes.size(), std::size(want));
  uint64_t off = 0;
  for (size_t i = 0; i < z.writes.size(); i++) {
    EXPECT_EQ(z.writes[i].len, want[i]) << "write " << i;
    EXPECT_EQ(z.writes[i].offset, off);
    off += z.writes[i].len;
  }
  EXPECT_EQ(off, z.size);
}

TEST(Framing, TorchLoadReadsAsStraced) {
  const TorchZip z = torch_zip("rank_00000", observed_items(), 4096, 1079);
  const Req want[] = {{0, 4096},       {0, 4096},       {2115307, 4096}, {2119381, 22},
                      {2119361, 42},   {2119305, 98},   {2118226, 1177}, {2118144, 1259},
                      {0, 4096},       {4096, 2094272}, {2098384, 4096}, {2102480, 4096},
                      {2109056, 4096}, {2113152, 4096}, {2117248, 2155}, {2102608, 4096},
                      {2106704, 4096}};
  ASSERT_EQ(z.reads.size(), std::size(want));
  for (size_t i = 0; i < z.reads.size(); i++) {
    EXPECT_EQ(z.reads[i].offset, want[i].offset) << "read " << i;
    EXPECT_EQ(z.reads[i].len, want[i].len) << "read " << i;
  }
}

TEST(Framing, PickleEstimateWithinAFewPercent) {
  // measured pickle sizes of n 1-D tensors with 5-byte keys
  const std::pair<size_t, uint64_t> measured[] = {
      {1, 169}, {2, 231}, {10, 719}, {100, 7949}, {1000, 86251}};
  for (auto [n, bytes] : measured) {
    const uint64_t est = torch_pickle_bytes(std::vector<ZipItem>(n, ZipItem{2, 5}));
    EXPECT_NEAR(static_cast<double>(est), static_cast<double>(bytes), 0.02 * bytes) << n;
  }
}

TEST(Framing, LargeRecordsAndNames) {
  // A 5 GiB tensor: zip64 extras in its local header, a 24-byte descriptor, one writev.
  const TorchZip z = torch_zip("big", {{5ull << 30, 1}, {100, 1}});
  EXPECT_EQ(z.tensors[0].data % 64, 0u);
  EXPECT_GT(z.tensors[1].header, z.tensors[0].data + (5ull << 30));
  EXPECT_EQ(z.tensors[1].header - (z.tensors[0].data + (5ull << 30)), 24u);
  uint64_t sum = 0;
  for (const auto& w : z.writes) sum += w.len;
  EXPECT_EQ(sum, z.size);
  EXPECT_EQ(torch_archive_name("a/b/rank_00000.ckpt"), "rank_00000");
  EXPECT_EQ(torch_archive_name("x.weight.exp_avg"), "x.weight");
  EXPECT_EQ(torch_archive_name("latest"), "latest");
  EXPECT_EQ(parse_framing("torch-zip"), Framing::torch_zip);
  EXPECT_THROW(parse_framing("zip"), ConfigError);
}

namespace {

IoPlan framed_plan(const nlohmann::json& extra, int world = 4) {
  nlohmann::json j = {{"model", {{"name", "llama2-7b"}, {"scale", 0.001}}},
                      {"parallelism", {{"tp", 1}, {"dp", "auto"}, {"zero_stage", 1}}},
                      {"preset", "torch-save"}};
  for (const auto& [k, v] : extra.items()) j[k] = v;
  RunConfig rc = parse_config(j);
  const PointConfig& pc = rc.points.at(0);
  static ModelDesc m;
  m = build_model(pc.model);
  Parallelism par = resolve_parallelism(pc.parallelism, world, m);
  return make_plan(plan_input(pc, m, par, 4096, world, std::vector<int>(world, 0)));
}

}  // namespace

// The torch-save preset: one archive per rank; its extents tile it, the tensor data sits where
// the zip puts it, the save requests cover it once in order and the restore requests cover it.
TEST(Framing, TorchSavePresetPlan) {
  for (const char* layout : {"aggregated-rank", "file-per-shard", "deepspeed", "megatron"}) {
    SCOPED_TRACE(layout);
    IoPlan plan = framed_plan({{"layout", layout}});
    uint64_t files = 0;
    for (const auto& r : plan.ranks)
      for (const auto& f : r.files) {
        if (f.write_reqs.empty()) {
          // only files torch.save does not write (DeepSpeed's latest, zero_to_fp32.py, ...)
          EXPECT_TRUE(f.path == "latest" || f.path == "zero_to_fp32.py" ||
                      f.path == "latest_checkpointed_iteration.txt")
              << f.path;
          continue;
        }
        files++;
        uint64_t cur = 0, tensors = 0;
        for (const auto& e : f.extents) {
          EXPECT_EQ(e.offset, cur) << f.path;
          EXPECT_EQ(e.padded, e.length);
          if (e.shard >= 0) {
            EXPECT_EQ(e.offset % 64, 0u);
            tensors++;
          }
          cur += e.length;
        }
        EXPECT_EQ(cur, f.size);
        EXPECT_GT(tensors, 0u);
        uint64_t pos = 0, n = 0;
        for_each_transfer(f, 1 << 20, TransferMode::per_tensor, [&](const Transfer& t) {
          EXPECT_EQ(t.offset, pos);
          pos += t.len;
          n++;
        });
        EXPECT_EQ(pos, f.size);
        EXPECT_EQ(n, f.write_reqs.size());
        EXPECT_LE(n, tensors + 3);  // at most one request per record (small ones buffered)
        std::vector<bool> seen(f.extents.size(), false);
        for_each_transfer(
            f, 1 << 20, TransferMode::per_tensor,
            [&](const Transfer& t) {
              for_each_piece(f, t, [&](const Extent& e, uint64_t, uint64_t, uint64_t) {
                seen[static_cast<size_t>(&e - f.extents.data())] = true;
              });
            },
            true);
        for (size_t i = 0; i < seen.size(); i++)
          if (f.extents[i].shard >= 0) {
            EXPECT_TRUE(seen[i]) << f.path << " extent " << i;
          }
      }
    EXPECT_GT(files, 0u);
  }
}

TEST(Framing, RefusedWhereTorchSaveDoesNotWrite) {
  expect_config_error([] { framed_plan({{"layout", "shared-file"}}); }, "'framing'");
  expect_config_error([] { framed_plan({{"layout", "torchsnapshot"}}); }, "'framing'");
  expect_config_error([] { framed_plan({{"ranks_per_file", 2}}); }, "one writer");
  expect_config_error([] { framed_plan({{"direct", true}}); }, "direct=true");
  expect_config_error([] { framed_plan({{"framing", "zip"}}); }, "'framing'");
}

TEST(Framing, SourceShardRefusals) {
  expect_config_error([] { framed_plan({{"source", "disk"}}); }, "'source'");
  expect_config_error(
      [] {
        framed_plan({{"source", "shard"},
                     {"layout", "shared-file"},
                     {"framing", "none"},
                     {"framework_cpu", false}});
      },
      "'source'");
  expect_config_error(
      [] {
        framed_plan(
            {{"source", "shard"}, {"parallelism", {{"tp", 1}, {"dp", 1}, {"emulate_world", 8}}}});
      },
      "emulate_world");
  expect_config_error([] { framed_plan({{"framing", "none"}}); }, "'framework_cpu'");
  EXPECT_NO_THROW(framed_plan({{"source", "shard"}}));
}

// DCP 1.13, one file per rank: the first item of __1_0.distcp (3,276,800 bytes of data) as
// zipfile lists it (data.pkl 159 bytes, data/0 header at 239, version at 3,277,136, the archive
// ends at 3,277,547) and the writes strace showed (320, 3,276,800, 427: the item's head, its
// data, its tail at the flush).
TEST(Framing, DcpItemArchivesAsStraced) {
  const DcpFile f = dcp_file({{3276800, 40}, {746648, 40}, {100, 40}});
  EXPECT_EQ(f.data[0], 320u);
  EXPECT_EQ(f.data[1], 3277547u + 320u);
  ASSERT_GE(f.writes.size(), 4u);
  EXPECT_EQ(f.writes[0].len, 320u);
  EXPECT_EQ(f.writes[1].len, 3276800u);
  EXPECT_EQ(f.writes[2].len, 427u);
  EXPECT_EQ(f.writes[3].len, 320u);
  uint64_t sum = 0;
  for (const auto& w : f.writes) {
    EXPECT_EQ(w.offset, sum);
    sum += w.len;
  }
  EXPECT_EQ(sum, f.size);
  // the small last item goes out in one write at its flush
  EXPECT_LT(f.writes.back().len, 4096u);
  for (const auto& r : f.reads) EXPECT_LE(r.offset + r.len, f.size);
  EXPECT_GT(dcp_metadata_bytes({40, 40}, true), 1024u);
}

TEST(Framing, DcpPresetPlan) {
  for (bool single : {false, true}) {
    SCOPED_TRACE(single);
    IoPlan plan = framed_plan({{"preset", "torch-dcp"},
                               {"framing", "torch-zip"},
                               {"dcp", {{"single_file_per_rank", single}}}});
    uint64_t distcp = 0, meta = 0, meta_writers = 0;
    EXPECT_TRUE(plan.commit);
    for (const auto& r : plan.ranks)
      for (const auto& f : r.files) {
        if (f.path == ".metadata") {
          // A commit record every rank lists (reads first on restore), one writes.
          meta++;
          EXPECT_EQ(f.role, FileRole::commit);
          if (f.create) meta_writers++;
          ASSERT_EQ(f.write_reqs.size(), 1u);
          EXPECT_EQ(f.write_reqs[0].len, f.size);
          for (const auto& e : f.extents) EXPECT_EQ(e.source, r.rank);
          continue;
        }
        EXPECT_EQ(f.role, FileRole::data) << f.path;
        distcp++;
        EXPECT_FALSE(f.write_reqs.empty()) << f.path;
        uint64_t cur = 0;
        for (const auto& e : f.extents) {
          EXPECT_EQ(e.offset, cur);
          cur += e.length;
        }
        EXPECT_EQ(cur, f.size);
      }
    EXPECT_EQ(meta, plan.ranks.size());
    EXPECT_EQ(meta_writers, 1u);
    if (single)
      EXPECT_EQ(distcp, 4u);
    else
      EXPECT_GT(distcp, 4u);
  }
}

// pickle.load of DCP's .metadata through a 4 KiB BufferedReader, as strace showed for torch
// 1.13.1: read(4096), read(40960) straight into the frame, read(4096) returning the 1,602-byte
// tail; pickle.dump's one write.
TEST(Framing, PickleFileAsStraced) {
  const PickleFile p = pickle_file(46658);
  ASSERT_EQ(p.writes.size(), 1u);
  EXPECT_EQ(p.writes[0].offset, 0u);
  EXPECT_EQ(p.writes[0].len, 46658u);
  ASSERT_EQ(p.reads.size(), 3u);
  EXPECT_EQ(p.reads[0].offset, 0u);
  EXPECT_EQ(p.reads[0].len, 4096u);
  EXPECT_EQ(p.reads[1].offset, 4096u);
  EXPECT_EQ(p.reads[1].len, 40960u);
  EXPECT_EQ(p.reads[2].offset, 45056u);
  EXPECT_EQ(p.reads[2].len, 1602u);
  EXPECT_EQ(pickle_file(8192).reads.size(), 2u);  // no tail
  EXPECT_EQ(pickle_file(100).reads.size(), 1u);
  EXPECT_EQ(pickle_file(100).reads[0].len, 100u);
  EXPECT_TRUE(pickle_file(0).reads.empty());
}
