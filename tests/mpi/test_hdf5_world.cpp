// HDF5 backend on 4 real ranks: transfer (independent, collective) x file mode (per-rank files,
// one shared file, 2 ranks per file) x ZeRO stage 0/1 (unequal ranks), with verify, a rank-shift
// restore, and every file read back by the HDF5 library and h5ls: every tensor shard of every
// writer is a dataset with the right shape and dtype.
#include "world_plan.hpp"

#ifdef CKPT_HAVE_HDF5
#include <hdf5.h>

#include <cstdio>
#include <map>

#include "ckptbench/io/backends/hdf5.hpp"

namespace {

using namespace ckpt_test;

struct Case {
  std::string name;
  json opts;
  LayoutKind layout;
  int ranks_per_file;
  int zero;
  double scale;
};

class Hdf5World : public ::testing::TestWithParam<Case> {};

uint64_t payload(const RankIo& io) {
  uint64_t b = 0;
  for (const auto& f : io.files)
    for (const auto& e : f.extents)
      if (e.shard >= 0) b += e.length;
  return b;
}

// Rank 0: opens every file of the plan with the serial library and checks each shard's dataset.
void check_files(const PlanSetup& s, const std::string& dir, bool scaled) {
  std::map<std::string, std::vector<std::pair<int, const Extent*>>> files;  // path -> extents
  for (const auto& r : s.plan.ranks)
    for (const auto& f : r.files)
      for (const auto& e : f.extents)
        if (e.shard >= 0) files[f.path].push_back({e.vrank, &e});
  ASSERT_FALSE(files.empty());
  size_t reshaped = 0;
  for (const auto& [path, exts] : files) {
    const std::string full = dir + "/" + path;
    hid_t fid = H5Fopen(full.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(fid, 0) << full;
    for (const auto& [v, e] : exts) {
      const Shard& sh = s.plan.shards[static_cast<size_t>(v)].shards[static_cast<size_t>(e->shard)];
      const std::string ds = hdf5::dataset_path(s.model, v, sh);
      hid_t d = H5Dopen2(fid, ds.c_str(), H5P_DEFAULT);
      ASSERT_GE(d, 0) << full << ":" << ds;
      hid_t sp = H5Dget_space(d);
      std::vector<hsize_t> dims(static_cast<size_t>(H5Sget_simple_extent_ndims(sp)));
      H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
      std::vector<uint64_t> got(dims.begin(), dims.end());
      auto want = hdf5::dataset_shape(sh, e->length);
      EXPECT_EQ(got, want.dims) << ds;
      if (!scaled) {
        EXPECT_EQ(got, sh.shape) << ds << " keeps the TP-local shape";
      }
      hid_t t = H5Dget_type(d);
      EXPECT_EQ(H5Tget_size(t), dtype_size(sh.dtype)) << ds;
      hid_t a = H5Aopen(d, "dtype", H5P_DEFAULT);
      hid_t at = H5Aget_type(a);
      std::string name(H5Tget_size(at), '\0');
      H5Aread(a, at, name.data());
      EXPECT_EQ(name, dtype_name(sh.dtype)) << ds;
      if (want.reshaped) {
        reshaped++;
        EXPECT_GT(H5Aexists(d, "shape"), 0) << ds;
      }
      H5Tclose(at);
      H5Aclose(a);
      H5Tclose(t);
      H5Sclose(sp);
      H5Dclose(d);
    }
    H5Fclose(fid);
    // h5ls sees the same number of datasets.
    std::string ls = run_cmd("h5ls -r '" + full + "' 2>&1");
    size_t n = 0;
    for (size_t p = ls.find(" Dataset {"); p != std::string::npos; p = ls.find(" Dataset {", p + 1))
      n++;
    EXPECT_EQ(n, exts.size()) << ls;
  }
  if (scaled) {
    EXPECT_GT(reshaped, 0u);
  }
}

TEST_P(Hdf5World, SaveRestoreVerifyReadBack) {
  const Case& c = GetParam();
  PlanSetup s("hdf5", c.opts, c.layout, 2, 1, c.zero, c.ranks_per_file, c.scale);
  const RankIo& io = s.mine();
  const uint64_t mine = payload(io);
  const auto [lo, hi] = world_min_max(mine);
  ASSERT_LT(lo, hi);
  if (c.zero == 0) {
    ASSERT_EQ(lo, 0u);
  }

  SharedDir dir;
  s.make_dirs(dir.path);
  auto backend = find_backend("hdf5").create(s.pc);
  BufferPool pool(1, s.pc.block_size, 4096);
  PatternPath dp;
  PhaseRecorder save;
  run_or_abort([&] { run_phase(*backend, s, Phase::save, io, dir.path, pool, dp, save); });
  EXPECT_EQ(save.bytes(), mine);
  EXPECT_EQ(dp.produced, mine);
  EXPECT_EQ(save.files(), io.files.size());
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) check_files(s, dir.path, c.scale < 1.0);
  MPI_Barrier(MPI_COMM_WORLD);

  PhaseRecorder restore;
  run_or_abort([&] { run_phase(*backend, s, Phase::restore, io, dir.path, pool, dp, restore); });
  EXPECT_EQ(restore.bytes(), mine);
  EXPECT_EQ(dp.consumed, mine);

  const RankIo& other = s.neighbour();
  EXPECT_EQ(restore_verified(*backend, s, other, dir.path, pool), payload(other));

  json d = backend->describe();
  EXPECT_EQ(d["transfer"], c.opts.value("transfer", "independent"));
  if (c.opts.value("transfer", "") == "collective" && mine > 0) {
    EXPECT_NE(d["actual_io_mode"], "none yet");
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  struct L {
    const char* n;
    LayoutKind k;
    int rpf;
  };
  for (const char* t : {"independent", "collective"})
    for (const L& l :
         {L{"per_rank", LayoutKind::file_per_shard, 0}, L{"shared", LayoutKind::shared_file, 0},
          L{"two_per_file", LayoutKind::aggregated_rank, 2}})
      for (int z : {0, 1})
        v.push_back({std::string(t) + "_" + l.n + "_zero" + std::to_string(z),
                     json{{"transfer", t}}, l.k, l.rpf, z, 1.0});
  v.push_back({"chunked_scaled_shared", json{{"chunk", "4K"}, {"transfer", "collective"}},
               LayoutKind::shared_file, 0, 1, 1.0 / 64});
  v.push_back({"scaled_per_rank_coll_md",
               json{{"all_coll_metadata_ops", true}, {"metadata_cache", {{"max_size", "8M"}}}},
               LayoutKind::file_per_shard, 0, 0, 1.0 / 64});
  return v;
}

INSTANTIATE_TEST_SUITE_P(All, Hdf5World, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace

#else
CKPT_BACKEND_NOT_BUILT_TEST(Hdf5World, "hdf5")
#endif  // CKPT_HAVE_HDF5
