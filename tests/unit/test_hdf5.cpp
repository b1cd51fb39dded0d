// HDF5 backend on one rank (MPI singleton): options and validation, dataset naming/shape, the
// hyperslab decomposition, and a save/restore round trip whose file is then read back with the
// HDF5 library and with h5ls / h5dump.
#include "support.hpp"

#ifdef CKPT_HAVE_HDF5
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/backends/hdf5.hpp"

namespace {

using namespace ckpt_test;

PointConfig point(json opts = json::object()) {
  PointConfig p;
  p.backend = "hdf5";
  p.block_size = 1024;
  p.sync = SyncPolicy::end;
  p.backend_options = std::move(opts);
  return p;
}

TensorDesc tensor(const std::string& name, std::vector<uint64_t> shape) {
  TensorDesc t;
  t.name = name;
  t.shape = std::move(shape);
  return t;
}

// Brute force: the elements the blocks cover, in row-major order.
std::vector<uint64_t> covered(const std::vector<uint64_t>& dims,
                              const std::vector<hdf5::Block>& bs) {
  std::set<uint64_t> s;
  for (const auto& b : bs) {
    std::vector<uint64_t> idx(dims.size(), 0);
    uint64_t n = 1;
    for (auto c : b.count) n *= c;
    for (uint64_t k = 0; k < n; k++) {
      uint64_t r = k, lin = 0;
      for (size_t d = dims.size(); d-- > 0;) {
        idx[d] = b.start[d] + r % b.count[d];
        r /= b.count[d];
      }
      for (size_t d = 0; d < dims.size(); d++) lin = lin * dims[d] + idx[d];
      EXPECT_TRUE(s.insert(lin).second) << "element covered twice";
    }
  }
  return {s.begin(), s.end()};
}

TEST(Hdf5Blocks, LinearRangesMatchBruteForce) {
  for (const auto& dims :
       std::vector<std::vector<uint64_t>>{{17}, {3, 5}, {2, 3, 4}, {4, 1, 3, 2}}) {
    uint64_t total = 1;
    for (auto d : dims) total *= d;
    for (uint64_t first = 0; first < total; first++)
      for (uint64_t count = 1; first + count <= total; count++) {
        auto bs = hdf5::linear_blocks(dims, first, count);
        ASSERT_LE(bs.size(), 2 * dims.size() - 1);
        for (const auto& b : bs)
          for (size_t d = 0; d < dims.size(); d++) ASSERT_LE(b.start[d] + b.count[d], dims[d]);
        auto got = covered(dims, bs);
        ASSERT_EQ(got.size(), count);
        for (uint64_t i = 0; i < count; i++) ASSERT_EQ(got[i], first + i);
      }
  }
  EXPECT_TRUE(hdf5::linear_blocks({4, 4}, 0, 0).empty());
}

TEST(Hdf5Naming, PathsShapesChunks) {
  ModelDesc m;
  m.tensors = {tensor("layers.3.attention.wq.weight", {8, 8}), tensor("odd/name", {4})};
  Shard s;
  s.tensor = 0;
  s.kind = StateKind::exp_avg;
  s.dtype = DType::f32;
  s.shape = {4, 8};
  s.numel = 32;
  EXPECT_EQ(hdf5::dataset_path(m, 3, s), "/rank_00003/exp_avg/layers.3.attention.wq.weight");
  s.fragment = true;
  s.elem_offset = 12;
  EXPECT_EQ(hdf5::dataset_path(m, 12345, s), "/rank_12345/exp_avg/layers.3.attention.wq.weight@12");
  Shard o;
  o.tensor = 1;
  EXPECT_EQ(hdf5::dataset_path(m, 0, o), "/rank_00000/weights/odd|name");

  s.fragment = false;
  auto full = hdf5::dataset_shape(s, 128);
  EXPECT_EQ(full.dims, (std::vector<uint64_t>{4, 8}));
  EXPECT_FALSE(full.reshaped);
  EXPECT_EQ(full.elem_size, 4u);
  auto scaled = hdf5::dataset_shape(s, 16);
  EXPECT_EQ(scaled.dims, (std::vector<uint64_t>{4}));
  EXPECT_TRUE(scaled.reshaped);
  auto raw = hdf5::dataset_shape(s, 6);
  EXPECT_TRUE(raw.raw_bytes);
  EXPECT_EQ(raw.dims, (std::vector<uint64_t>{6}));

  EXPECT_EQ(hdf5::chunk_dims({100, 64}, 4, 1024), (std::vector<uint64_t>{4, 64}));
  EXPECT_EQ(hdf5::chunk_dims({10}, 2, 1 << 20), (std::vector<uint64_t>{10}));
  EXPECT_EQ(hdf5::chunk_dims({3, 1000}, 8, 64), (std::vector<uint64_t>{1, 8}));
}

TEST(Hdf5Options, ParseAndReject) {
  auto o =
      hdf5::parse_options(point({{"transfer", "collective"},
                                 {"chunk", "1M"},
                                 {"metadata_cache", {{"initial_size", "4M"}, {"max_size", "16M"}}},
                                 {"hints", {{"cb_nodes", 1}}}}));
  EXPECT_TRUE(o.collective);
  EXPECT_EQ(o.chunk, 1u << 20);
  EXPECT_EQ(*o.mdc_initial, 4u << 20);
  EXPECT_EQ(o.hints.size(), 1u);
  EXPECT_EQ(hdf5::parse_options(point({{"chunk", "contiguous"}})).chunk, 0u);
  expect_config_error([] { hdf5::parse_options(point({{"transfer", "both"}})); }, "hdf5.transfer");
  expect_config_error([] { hdf5::parse_options(point({{"chunk", "contig"}})); }, "hdf5.chunk");
  expect_config_error([] { hdf5::parse_options(point({{"chunk", "2G"}})); }, "hdf5.chunk");
  expect_config_error(
      [] {
        hdf5::parse_options(point({{"metadata_cache", {{"min_size", "8M"}, {"max_size", "4M"}}}}));
      },
      "min_size");
  expect_config_error(
      [] {
        hdf5::parse_options(point({{"metadata_cache", {{"max_size", "1G"}}}}));
      },
      "hdf5.metadata_cache.max_size");
  expect_config_error(
      [] {
        hdf5::parse_options(point({{"metadata_cache", {{"size", 1}}}}));
      },
      "size");
  expect_config_error(
      [] {
        hdf5::parse_options(point({{"hints", {{"cb_nodes", false}}}}));
      },
      "hdf5.hints.cb_nodes");
  expect_config_error([] { hdf5::parse_options(point({{"file_mode", "shared"}})); }, "file_mode");
}

TEST(Hdf5Validate, RejectsPairsThatDoNotMap) {
  const auto& f = find_backend("hdf5");
  EXPECT_NO_THROW(f.validate(point()));
  PointConfig c = point();
  c.layout.chunk_size = 1 << 20;
  expect_config_error([&] { f.validate(c); }, "chunk_size");
  PointConfig n = point();
  n.layout.kind = LayoutKind::aggregated_node;
  expect_config_error([&] { f.validate(n); }, "aggregated-node");
  PointConfig d = point();
  d.direct = true;
  expect_config_error([&] { f.validate(d); }, "O_DIRECT");
  PointConfig q = point();
  q.queue_depth = 8;
  expect_config_error([&] { f.validate(q); }, "queue_depth");
  PointConfig b = point();
  b.block_size = 1001;
  expect_config_error([&] { f.validate(b); }, "multiple of 8");
}

// A tiny model: a bf16 embedding, an f32 optimizer tensor split in two fragments, an f16 norm,
// and one scaled shard (fewer bytes than its shape).
struct Fixture {
  ModelDesc model;
  IoPlan plan;
  RankIo io;
  Fixture() {
    model.name = "tiny";
    model.tensors = {tensor("embed.weight", {64, 24}),
                     tensor("layers.0.attention.wq.weight", {24, 24}), tensor("norm.weight", {24})};
    RankShards rs;
    auto add = [&](uint32_t t, StateKind k, DType dt, std::vector<uint64_t> shape, uint64_t bytes,
                   bool frag = false, uint64_t eo = 0) {
      Shard s;
      s.tensor = t;
      s.kind = k;
      s.dtype = dt;
      s.shape = std::move(shape);
      s.numel = 1;
      for (auto x : s.shape) s.numel *= x;
      s.bytes = bytes;
      s.fragment = frag;
      s.elem_offset = eo;
      rs.shards.push_back(s);
    };
    add(0, StateKind::weights, DType::bf16, {64, 24}, 64 * 24 * 2);
    add(1, StateKind::weights, DType::bf16, {24, 24}, 24 * 24 * 2);
    add(2, StateKind::weights, DType::f16, {24}, 48);
    add(1, StateKind::exp_avg, DType::f32, {300}, 1200, true, 0);
    add(1, StateKind::exp_avg, DType::f32, {276}, 1104, true, 300);
    add(0, StateKind::master, DType::f32, {64, 24}, 800);  // scaled: 200 of 1536 elements
    plan.shards = {rs};
    io.rank = 0;
    io.vranks = {0};
    FileSpec f;
    f.id = 5;
    f.path = "ckpt/model.h5";
    f.create = true;
    f.writers = {0};
    uint64_t off = 0;
    for (int i = 0; i < static_cast<int>(rs.shards.size()); i++) {
      Extent e;
      e.offset = off;
      e.length = e.padded = rs.shards[static_cast<size_t>(i)].bytes;
      e.vrank = 0;
      e.shard = i;
      e.source = 0;
      f.extents.push_back(e);
      off += (e.length + 4095) / 4096 * 4096;
    }
    Extent idx;  // an index footer: no dataset
    idx.offset = off;
    idx.length = idx.padded = 100;
    idx.vrank = 0;
    idx.shard = -1;
    idx.source = 0;
    f.extents.push_back(idx);
    f.size = off + 100;
    io.files = {f};
  }
};

void run_phase(Backend& b, const PointConfig& p, Phase ph, const Fixture& fx,
               const std::string& dir, BufferPool& pool, PatternPath& dp, PhaseRecorder& rec) {
  ckpt_test::run_phase(b, p, ph, fx.io, dir, pool, dp, rec, &fx.plan, &fx.model);
}

struct H5Case {
  const char* name;
  json opts;
  uint64_t block;
};

class Hdf5RoundTrip : public ::testing::TestWithParam<H5Case> {};

TEST_P(Hdf5RoundTrip, SaveRestoreAndReadBack) {
  const H5Case& c = GetParam();
  TmpDir tmp("hdf5-unit");
  std::filesystem::create_directories(tmp.path + "/ckpt");
  Fixture fx;
  PointConfig p = point(c.opts);
  p.block_size = c.block;
  find_backend("hdf5").validate(p);
  auto backend = find_backend("hdf5").create(p);
  BufferPool pool(1, p.block_size, 4096);
  PatternPath dp;
  uint64_t payload = 0;
  for (const auto& s : fx.plan.shards[0].shards) payload += s.bytes;

  PhaseRecorder save;
  run_phase(*backend, p, Phase::save, fx, tmp.path, pool, dp, save);
  EXPECT_EQ(save.bytes(), payload);
  EXPECT_EQ(dp.produced, payload);
  EXPECT_EQ(save.files(), 1u);

  const std::string file = tmp.path + "/ckpt/model.h5";
  // Read back with the library (default serial driver).
  hid_t fid = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(fid, 0);
  struct Want {
    const char* path;
    std::vector<hsize_t> dims;
    const char* dtype;
    hid_t type;
  };
  std::vector<Want> want = {
      {"/rank_00000/weights/embed.weight", {64, 24}, "bf16", H5T_STD_U16LE},
      {"/rank_00000/weights/layers.0.attention.wq.weight", {24, 24}, "bf16", H5T_STD_U16LE},
      {"/rank_00000/weights/norm.weight", {24}, "f16", -1},
      {"/rank_00000/exp_avg/layers.0.attention.wq.weight@0", {300}, "f32", H5T_IEEE_F32LE},
      {"/rank_00000/exp_avg/layers.0.attention.wq.weight@300", {276}, "f32", H5T_IEEE_F32LE},
      {"/rank_00000/master/embed.weight", {200}, "f32", H5T_IEEE_F32LE}};
  for (const auto& w : want) {
    hid_t d = H5Dopen2(fid, w.path, H5P_DEFAULT);
    ASSERT_GE(d, 0) << w.path;
    hid_t sp = H5Dget_space(d);
    std::vector<hsize_t> dims(static_cast<size_t>(H5Sget_simple_extent_ndims(sp)));
    H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
    EXPECT_EQ(dims, w.dims) << w.path;
    hid_t t = H5Dget_type(d);
    if (w.type >= 0) {
      EXPECT_GT(H5Tequal(t, w.type), 0) << w.path;
    } else {
      EXPECT_EQ(H5Tget_class(t), H5T_FLOAT);
      EXPECT_EQ(H5Tget_size(t), 2u);
    }
    hid_t a = H5Aopen(d, "dtype", H5P_DEFAULT);
    ASSERT_GE(a, 0) << w.path;
    hid_t at = H5Aget_type(a);
    std::string v(H5Tget_size(at), '\0');
    H5Aread(a, at, v.data());
    EXPECT_EQ(v, w.dtype) << w.path;
    H5Tclose(at);
    H5Aclose(a);
    EXPECT_EQ(H5Aexists(d, "shape") > 0, std::string(w.path) == "/rank_00000/master/embed.weight");
    // Raw data equals the pattern the data path produced (read as bytes).
    hsize_t n = 1;
    for (auto x : dims) n *= x;
    std::vector<std::byte> buf(n * H5Tget_size(t));
    ASSERT_GE(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), 0);
    (void)buf;
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
  }
  hid_t a = H5Dopen2(fid, "/rank_00000/master/embed.weight", H5P_DEFAULT);
  hid_t sa = H5Aopen(a, "shape", H5P_DEFAULT);
  uint64_t shape[2] = {};
  H5Aread(sa, H5T_NATIVE_UINT64, shape);
  EXPECT_EQ(shape[0], 64u);
  EXPECT_EQ(shape[1], 24u);
  // Datasets at or above the threshold start on the alignment boundary (embed.weight: 3072 B).
  hid_t emb = H5Dopen2(fid, "/rank_00000/weights/embed.weight", H5P_DEFAULT);
  haddr_t off = H5Dget_offset(emb);
  H5Dclose(emb);
  if (!c.opts.contains("chunk") && c.opts.value("align_threshold", 4096) <= 3072) {
    EXPECT_EQ(off % 4096, 0u) << off;
  }
  H5Aclose(sa);
  H5Dclose(a);
  H5Fclose(fid);

  // The command-line tools agree.
  if (std::system("command -v h5ls >/dev/null 2>&1") == 0) {
    std::string ls = run_cmd("h5ls -r '" + file + "' 2>&1");
    EXPECT_NE(ls.find("/rank_00000/weights/embed.weight Dataset {64, 24}"), std::string::npos)
        << ls;
    EXPECT_NE(ls.find("/rank_00000/exp_avg/layers.0.attention.wq.weight@300 Dataset {276}"),
              std::string::npos)
        << ls;
    std::string h = run_cmd("h5dump -H '" + file + "' 2>&1");
    EXPECT_NE(h.find("DATASET \"embed.weight\""), std::string::npos) << h;
    EXPECT_NE(h.find("H5T_STD_U16LE"), std::string::npos) << h;
    EXPECT_EQ(h.find("h5dump error"), std::string::npos) << h;
  }

  PhaseRecorder restore;
  run_phase(*backend, p, Phase::restore, fx, tmp.path, pool, dp, restore);
  EXPECT_EQ(restore.bytes(), payload);
  EXPECT_EQ(dp.consumed, payload);

  json d = backend->describe();
  EXPECT_EQ(d["library_version"].get<std::string>().substr(0, 2), "1.");
  EXPECT_EQ(d["transfer"], c.opts.value("transfer", "independent"));
  EXPECT_TRUE(d["metadata_cache"].contains("max_size"));
  EXPECT_EQ(d["alignment"]["alignment"], 4096);
  EXPECT_EQ(d["datasets"], 6);
  EXPECT_EQ(d["index_extents_skipped"], 1);  // in the last phase
}

INSTANTIATE_TEST_SUITE_P(
    Modes, Hdf5RoundTrip,
    ::testing::Values(H5Case{"independent", json{{"align_threshold", 2048}}, 1024},
                      H5Case{"partial_rows", json::object(), 40},
                      H5Case{"collective", json{{"transfer", "collective"}}, 1024},
                      H5Case{"chunked",
                             json{{"chunk", 512}, {"metadata_cache", {{"max_size", "8M"}}}}, 1000}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Hdf5Restore, DetectsCorruptionAndWrongFiles) {
  TmpDir tmp("hdf5-unit");
  std::filesystem::create_directories(tmp.path + "/ckpt");
  Fixture fx;
  PointConfig p = point();
  auto backend = find_backend("hdf5").create(p);
  BufferPool pool(1, p.block_size, 4096);
  PatternPath dp;
  PhaseRecorder r1, r2, r3, r4;
  run_phase(*backend, p, Phase::save, fx, tmp.path, pool, dp, r1);
  const std::string file = tmp.path + "/ckpt/model.h5";
  haddr_t off;
  {
    hid_t fid = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(fid, "/rank_00000/weights/layers.0.attention.wq.weight", H5P_DEFAULT);
    off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(fid);
  }
  ASSERT_NE(off, HADDR_UNDEF);
  int fd = ::open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c = 0;
  ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(off + 777)), 1);
  c = static_cast<char>(c ^ 0x11);
  ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(off + 777)), 1);
  ::close(fd);
  try {
    run_phase(*backend, p, Phase::restore, fx, tmp.path, pool, dp, r2);
    FAIL() << "corruption not detected";
  } catch (const IoError& e) {
    // The data path names the byte by its offset in the plan's layout of the file: the
    // dataset's extent (layers.0.attention.wq.weight is extent 1) + 777.
    const std::string want = "offset " + std::to_string(fx.io.files[0].extents[1].offset + 777);
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }

  // A plan whose shard is larger than the dataset on disk.
  Fixture other;
  other.plan.shards[0].shards[1].bytes = 24 * 24 * 4;
  other.io.files[0].extents[1].length = other.io.files[0].extents[1].padded = 24 * 24 * 4;
  try {
    run_phase(*backend, p, Phase::restore, other, tmp.path, pool, dp, r3);
    FAIL() << "size mismatch not detected";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the plan expects 2304"), std::string::npos) << e.what();
  }

  // Not an HDF5 file: the HDF5 error stack is in the message.
  {
    FILE* f = std::fopen(file.c_str(), "w");
    std::fputs("not hdf5", f);
    std::fclose(f);
  }
  try {
    run_phase(*backend, p, Phase::restore, fx, tmp.path, pool, dp, r4);
    FAIL() << "bad file not detected";
  } catch (const IoError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("H5Fopen"), std::string::npos) << w;
    EXPECT_NE(w.find("model.h5"), std::string::npos) << w;
    EXPECT_NE(w.find("HDF5:"), std::string::npos) << w;
  }
}

}  // namespace

#else
CKPT_BACKEND_NOT_BUILT_TEST(Hdf5, "hdf5")
#endif  // CKPT_HAVE_HDF5
