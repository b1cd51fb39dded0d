// Parallel HDF5 backend: one HDF5 file per plan file (H5Pset_fapl_mpio on the file's
// communicator: MPI_COMM_SELF for a private file, the writers for a shared one), one dataset per
// tensor shard at /rank_<vrank>/<state kind>/<tensor name>, written and read in block_size
// hyperslabs with independent or collective transfers (H5Pset_dxpl_mpio). The plan's byte
// offsets do not apply: HDF5 places the data itself (aligned with H5Pset_alignment).
#include "ckptbench/io/backends/hdf5.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/backends/mpiio.hpp"
#include "ckptbench/io/driver.hpp"

namespace ckpt {

namespace {
// An H5Fclose of a failed phase failed: the library holds a half-closed file, which its shutdown
// would touch (and crash on); the shutdown hook then leaves the library alone.
bool g_close_failed = false;
}  // namespace
namespace hdf5 {

namespace {

void read_chunk(ObjectReader& r, const std::string& k, Options& o) {
  const json* c = r.raw(k);
  if (!c) return;
  if (c->is_string() && c->get<std::string>() == "contiguous")
    o.chunk = 0;
  else
    o.chunk = json_to_size(*c, "hdf5.chunk");
  if (o.chunk > (1ull << 30))
    throw ConfigError("'hdf5.chunk': " + std::to_string(o.chunk) +
                      " is too large (HDF5 chunks must stay under 4 GiB; allowed: up to 1 GiB, "
                      "or \"contiguous\")");
}

void read_metadata_cache(ObjectReader& r, const std::string& k, Options& o) {
  const json* m = r.raw(k);
  if (!m) return;
  ObjectReader mr(*m, "hdf5.metadata_cache");
  o.mdc_initial = mr.opt_size("initial_size");
  o.mdc_min = mr.opt_size("min_size");
  o.mdc_max = mr.opt_size("max_size");
  mr.finish();
  // H5C__MIN_MAX_CACHE_SIZE and H5C__MAX_MAX_CACHE_SIZE.
  constexpr uint64_t lo = 1024, hi = 128ull << 20;
  for (auto [name, v] : {std::pair{"initial_size", o.mdc_initial}, std::pair{"min_size", o.mdc_min},
                         std::pair{"max_size", o.mdc_max}})
    if (v && (*v < lo || *v > hi))
      throw ConfigError("'hdf5.metadata_cache." + std::string(name) + "': " + std::to_string(*v) +
                        " is outside what HDF5 accepts (1 KiB .. 128 MiB)");
  uint64_t mn = o.mdc_min.value_or(lo), mx = o.mdc_max.value_or(hi);
  if (mn > mx)
    throw ConfigError("'hdf5.metadata_cache': min_size " + std::to_string(mn) +
                      " is larger than max_size " + std::to_string(mx));
  if (o.mdc_initial && (*o.mdc_initial < mn || *o.mdc_initial > mx))
    throw ConfigError("'hdf5.metadata_cache.initial_size': " + std::to_string(*o.mdc_initial) +
                      " must lie between min_size and max_size");
}

const OptionTable<Options>& option_table() {
  static const OptionTable<Options> t{{
      {"transfer",
       [](ObjectReader& r, const std::string& k, Options& o) {
         o.collective = r.choice(k, "independent", {"independent", "collective"}) == "collective";
       }},
      {"chunk", read_chunk},
      {"align_threshold", [](ObjectReader& r, const std::string& k,
                             Options& o) { o.align_threshold = r.size(k, 0, true); }},
      {"coll_metadata_write", [](ObjectReader& r, const std::string& k,
                                 Options& o) { o.coll_metadata_write = r.boolean(k, true); }},
      {"all_coll_metadata_ops", [](ObjectReader& r, const std::string& k,
                                   Options& o) { o.all_coll_metadata_ops = r.boolean(k, false); }},
      {"metadata_cache", read_metadata_cache},
      {"hints", [](ObjectReader& r, const std::string& k,
                   Options& o) { o.hints = mpiio::parse_hints(r.raw(k), "hdf5.hints"); }},
  }};
  return t;
}

}  // namespace

std::vector<std::string> option_keys() { return option_table().keys(); }

Options parse_options(const PointConfig& cfg) {
  Options o = option_table().parse(cfg.backend_options, "hdf5");
  mpiio::add_striping_hints(o.hints, cfg);
  return o;
}

std::string library_version() {
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  return std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel);
}

std::string dataset_path(const ModelDesc& m, int vrank, const Shard& s) {
  char grp[32];
  std::snprintf(grp, sizeof grp, "/rank_%05d/", vrank);
  std::string name =
      s.tensor < m.tensors.size() ? m.tensors[s.tensor].name : "tensor_" + std::to_string(s.tensor);
  std::replace(name.begin(), name.end(), '/', '|');
  if (name.empty() || name == ".") name = "_";
  if (s.fragment) name += "@" + std::to_string(s.elem_offset);
  return grp + std::string(state_kind_name(s.kind)) + "/" + name;
}

DatasetShape dataset_shape(const Shard& s, uint64_t bytes) {
  DatasetShape d;
  const uint64_t bits = dtype_bits(s.dtype);
  // Packed sub-byte elements (f4, f6_*) have no HDF5 type: a 1-D uint8 dataset of the packed
  // bytes (ceil(numel * bits / 8), the shard's byte count), true shape in attribute "shape".
  d.elem_size = bits % 8 == 0 ? bits / 8 : 0;
  if (d.elem_size == 0 || bytes % d.elem_size != 0) {
    d.raw_bytes = true;
    d.elem_size = 1;
    d.dims = {bytes};
    d.reshaped = true;
    return d;
  }
  uint64_t n = bytes / d.elem_size, prod = 1;
  for (auto x : s.shape) prod *= x;
  if (!s.shape.empty() && prod == n) {
    d.dims = s.shape;
  } else {
    d.dims = {n};
    d.reshaped = true;
  }
  return d;
}

std::vector<uint64_t> chunk_dims(const std::vector<uint64_t>& dims, uint64_t elem_size,
                                 uint64_t chunk_bytes) {
  std::vector<uint64_t> c(dims.size(), 1);
  uint64_t left = std::max<uint64_t>(1, chunk_bytes / std::max<uint64_t>(1, elem_size));
  for (size_t i = dims.size(); i-- > 0;) {
    c[i] = std::max<uint64_t>(1, std::min(dims[i], left));
    left = std::max<uint64_t>(1, left / c[i]);
  }
  return c;
}

namespace {
void blocks_rec(const std::vector<uint64_t>& dims, size_t d, std::vector<uint64_t>& prefix,
                uint64_t a, uint64_t b, std::vector<Block>& out) {
  if (a >= b) return;
  const size_t nd = dims.size();
  auto emit = [&](uint64_t row, uint64_t rows) {
    Block blk;
    blk.start = prefix;
    blk.start.push_back(row);
    blk.count.assign(prefix.size(), 1);
    blk.count.push_back(rows);
    for (size_t i = d + 1; i < nd; i++) {
      blk.start.push_back(0);
      blk.count.push_back(dims[i]);
    }
    out.push_back(std::move(blk));
  };
  if (d + 1 == nd) {
    emit(a, b - a);
    return;
  }
  uint64_t inner = 1;
  for (size_t i = d + 1; i < nd; i++) inner *= dims[i];
  uint64_t ra = a / inner, rb = b / inner, oa = a % inner, ob = b % inner;
  if (ra == rb) {
    prefix.push_back(ra);
    blocks_rec(dims, d + 1, prefix, oa, ob, out);
    prefix.pop_back();
    return;
  }
  if (oa != 0) {
    prefix.push_back(ra);
    blocks_rec(dims, d + 1, prefix, oa, inner, out);
    prefix.pop_back();
    ra++;
  }
  if (rb > ra) emit(ra, rb - ra);
  if (ob != 0) {
    prefix.push_back(rb);
    blocks_rec(dims, d + 1, prefix, 0, ob, out);
    prefix.pop_back();
  }
}
}  // namespace

std::vector<Block> linear_blocks(const std::vector<uint64_t>& dims, uint64_t first,
                                 uint64_t count) {
  std::vector<Block> out;
  if (dims.empty() || count == 0) return out;
  std::vector<uint64_t> prefix;
  blocks_rec(dims, 0, prefix, first, first + count, out);
  return out;
}

}  // namespace hdf5

namespace {

using hdf5::DatasetShape;

// The text of the current HDF5 error stack (innermost calls first), then cleared.
std::string h5_error() {
  std::string out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned n, const H5E_error2_t* e, void* d) -> herr_t {
        auto* s = static_cast<std::string*>(d);
        if (n >= 4) return 0;
        if (!s->empty()) *s += "; ";
        *s += std::string(e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "");
        char minor[128] = {};
        if (H5Eget_msg(e->min_num, nullptr, minor, sizeof minor) > 0)
          *s += std::string(" (") + minor + ")";
        return 0;
      },
      &out);
  H5Eclear2(H5E_DEFAULT);
  return out.empty() ? std::string("HDF5 call failed (no error stack)") : out;
}

[[noreturn]] void throw_h5(const std::string& what) {
  throw IoError(what + ": HDF5: " + h5_error());
}

// A file HDF5 could not create or open: its error stack rarely names the system's reason, so the
// path is opened the same way with POSIX for the errno text.
[[noreturn]] void throw_h5_open(const std::string& what, const std::string& path, bool write) {
  const std::string why = posix_open_reason(path, write);
  if (why.empty()) throw_h5(what + " (a POSIX open of the same path works)");
  throw IoError(what + ": " + why + " (HDF5: " + h5_error() + ")");
}

template <class T>
T h5check(T v, const std::string& what) {
  if (v < 0) throw_h5(what);
  return v;
}

// Owns an identifier of a local (non-collective) object: property list, dataspace, datatype.
class Hid {
 public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Hid() { reset(); }
  Hid(Hid&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = -1;
    }
    return *this;
  }
  hid_t get() const { return id_; }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// Fixed-size description of one dataset, exchanged between the writers of a shared file (every
// rank must create every dataset of the file with the same arguments).
struct DsetRec {
  int32_t vrank = -1, shard = -1;
  uint32_t tensor = 0;
  uint8_t kind = 0, dtype = 0, fragment = 0, ndim = 0;
  uint64_t length = 0, elem_offset = 0, numel = 0;
  uint64_t shape[8] = {};
};

struct Dset {
  DsetRec rec;
  Shard shard;  // rebuilt from rec
  std::string path;
  DatasetShape shape;
  const Extent* mine = nullptr;  // this rank's extent, when it transfers this dataset
  hid_t id = -1;
};

// HDF5 file type for a dtype; bf16, fp8 and bool have no HDF5 equivalent and are stored as
// same-size unsigned integers (the "dtype" attribute says what they are).
Hid file_type(DType t, bool raw_bytes) {
  auto copy = [](hid_t base) { return Hid(H5Tcopy(base), H5Tclose); };
  if (raw_bytes) return copy(H5T_STD_U8LE);
  switch (t) {
    case DType::f64:
      return copy(H5T_IEEE_F64LE);
    case DType::f32:
      return copy(H5T_IEEE_F32LE);
    case DType::f16: {
      // IEEE binary16 (HDF5 1.10 has no predefined half type).
      Hid h = copy(H5T_IEEE_F32LE);
      h5check(H5Tset_fields(h.get(), 15, 10, 5, 0, 10), "H5Tset_fields (f16)");
      h5check(H5Tset_precision(h.get(), 16), "H5Tset_precision (f16)");
      h5check(H5Tset_size(h.get(), 2), "H5Tset_size (f16)");
      h5check(H5Tset_ebias(h.get(), 15), "H5Tset_ebias (f16)");
      return h;
    }
    case DType::bf16:
      return copy(H5T_STD_U16LE);
    case DType::i64:
      return copy(H5T_STD_I64LE);
    case DType::i32:
      return copy(H5T_STD_I32LE);
    case DType::i16:
      return copy(H5T_STD_I16LE);
    case DType::i8:
      return copy(H5T_STD_I8LE);
    case DType::u64:
    case DType::c64:  // HDF5 1.10 has no complex type: 8 raw bytes + attribute dtype=c64
      return copy(H5T_STD_U64LE);
    case DType::u32:
      return copy(H5T_STD_U32LE);
    case DType::u16:
      return copy(H5T_STD_U16LE);
    case DType::u8:
    case DType::f8_e4m3:
    case DType::f8_e5m2:
    case DType::f8_e8m0:
    case DType::boolean:
    case DType::f4:  // packed sub-byte: uint8 bytes (dataset_shape makes them raw bytes)
    case DType::f6_e2m3:
    case DType::f6_e3m2:
      return copy(H5T_STD_U8LE);
  }
  return copy(H5T_STD_U8LE);
}

const char* file_type_name(DType t) {
  switch (t) {
    case DType::f64:
      return "H5T_IEEE_F64LE";
    case DType::f32:
      return "H5T_IEEE_F32LE";
    case DType::f16:
      return "IEEE binary16 (custom H5T_FLOAT, 2 bytes)";
    case DType::bf16:
      return "H5T_STD_U16LE + attribute dtype=bf16";
    case DType::i64:
      return "H5T_STD_I64LE";
    case DType::i32:
      return "H5T_STD_I32LE";
    case DType::i16:
      return "H5T_STD_I16LE";
    case DType::i8:
      return "H5T_STD_I8LE";
    case DType::u64:
      return "H5T_STD_U64LE";
    case DType::u32:
      return "H5T_STD_U32LE";
    case DType::u16:
      return "H5T_STD_U16LE";
    case DType::u8:
      return "H5T_STD_U8LE";
    case DType::c64:
      return "H5T_STD_U64LE + attribute dtype=c64";
    case DType::f8_e4m3:
    case DType::f8_e5m2:
    case DType::f8_e8m0:
    case DType::boolean:
      return "H5T_STD_U8LE + attribute dtype";
    case DType::f4:
    case DType::f6_e2m3:
    case DType::f6_e3m2:
      return "H5T_STD_U8LE, 1-D, the packed bytes (ceil(numel * bits / 8)) + attributes dtype "
             "and shape";
  }
  return "H5T_STD_U8LE";
}

void write_attr_string(hid_t obj, const char* name, const std::string& v) {
  Hid t(H5Tcopy(H5T_C_S1), H5Tclose);
  h5check(H5Tset_size(t.get(), std::max<size_t>(1, v.size())), "H5Tset_size");
  h5check(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "H5Tset_strpad");  // exact-size, no NUL
  Hid sp(H5Screate(H5S_SCALAR), H5Sclose);
  Hid a(h5check(H5Acreate2(obj, name, t.get(), sp.get(), H5P_DEFAULT, H5P_DEFAULT),
                std::string("H5Acreate2 '") + name + "'"),
        H5Aclose);
  h5check(H5Awrite(a.get(), t.get(), v.c_str()), std::string("H5Awrite '") + name + "'");
}

void write_attr_u64s(hid_t obj, const char* name, const std::vector<uint64_t>& v) {
  hsize_t n = std::max<size_t>(1, v.size());
  std::vector<uint64_t> data = v.empty() ? std::vector<uint64_t>{0} : v;
  Hid sp(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Hid a(h5check(H5Acreate2(obj, name, H5T_STD_U64LE, sp.get(), H5P_DEFAULT, H5P_DEFAULT),
                std::string("H5Acreate2 '") + name + "'"),
        H5Aclose);
  h5check(H5Awrite(a.get(), H5T_NATIVE_UINT64, data.data()),
          std::string("H5Awrite '") + name + "'");
}

class Hdf5Backend final : public Backend {
 public:
  explicit Hdf5Backend(const PointConfig& cfg) : cfg_(cfg), opt_(hdf5::parse_options(cfg)) {}

  TransportCaps caps(const PhaseContext&) const override {
    TransportCaps c;
    c.whole_file = true;        // one H5Dwrite/H5Dread per dataset piece
    c.collective_files = true;  // H5Fcreate / H5Fflush / H5Fclose are collective
    c.preallocate = false;      // H5Fcreate truncates; datasets are allocated at creation
    c.plan_offsets = false;     // HDF5 places the data: datasets are checked instead
    c.max_open = 256;           // each open file holds a metadata cache
    return c;
  }

  void begin(PhaseContext& ctx) override {
    if (!ctx.model) throw IoError("backend hdf5 needs the model (PhaseContext::model is null)");
    ctx_ = &ctx;
    save_ = ctx.phase == Phase::save;
    // Counters describe the last phase run (datasets: the last save).
    skipped_index_ = 0;
    if (save_) datasets_ = 0;
    // Errors are collected from the stack into the IoError message, not printed.
    H5Eget_auto2(H5E_DEFAULT, &old_err_fn_, &old_err_data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    info_ = std::make_unique<mpiio::Info>(opt_.hints);
    comms_ = std::make_unique<mpiio::FileComms>(ctx.comm, ctx.io->rank);
    files_.assign(ctx.io->files.size(), File{});
    dxpl_ = Hid(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
    h5check(H5Pset_dxpl_mpio(dxpl_.get(),
                             opt_.collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT),
            "H5Pset_dxpl_mpio");
  }

  void end(PhaseContext&) noexcept override {
    dxpl_.reset();
    comms_.reset();
    info_.reset();
    H5Eset_auto2(H5E_DEFAULT, old_err_fn_, old_err_data_);
    ctx_ = nullptr;
  }

  uint64_t size(size_t) override { return 0; }

  void transfer_file(PhaseContext& ctx, size_t i) override { transfer(ctx, files_[i]); }

  void sync(size_t i) override {
    agree_on_step(files_[i].comm, error_of([&] {
                    if (H5Fflush(files_[i].fid, H5F_SCOPE_GLOBAL) < 0)
                      throw_h5("H5Fflush '" + files_[i].path + "'");
                  }),
                  "another writer of '" + files_[i].path + "' failed in H5Fflush");
  }

  // A save flushes before it closes: a flush that fails (a full disk) leaves the file open for
  // close_failed, which can still close it; an H5Fclose that fails leaves HDF5 1.10 with a
  // half-closed file it crashes on later. The writers agree before the collective H5Fclose.
  void close(size_t i) override {
    File& file = files_[i];
    const std::string peer = "another writer of '" + file.path + "' failed closing it";
    std::exception_ptr err = error_of([&] {
      for (auto& d : file.dsets) {
        if (d.id < 0) continue;
        if (H5Dclose(d.id) < 0) throw_h5("H5Dclose '" + d.path + "' in '" + file.path + "'");
        d.id = -1;
        ctx_->rec->metadata();
      }
    });
    if (save_) {
      std::exception_ptr flush = error_of([&] {
        if (H5Fflush(file.fid, H5F_SCOPE_LOCAL) < 0) throw_h5("H5Fflush '" + file.path + "'");
      });
      if (!err) err = flush;
    }
    agree_on_step(file.comm, err, peer);
    const herr_t rc = H5Fclose(file.fid);
    file.fid = -1;  // closed, or half closed: never touched again
    if (rc < 0) g_close_failed = true;
    agree_on_step(file.comm,
                  rc < 0 ? error_of([&] { throw_h5("H5Fclose '" + file.path + "'"); }) : nullptr,
                  peer);
    ctx_->rec->metadata();
  }

  // Files private to this rank are closed; a shared file's close is collective and could hang
  // while the other writers are not failing, so it waits for close_abandoned.
  void abandon() noexcept override {
    for (auto& file : files_)
      if (file.fid >= 0 && file.comm == MPI_COMM_SELF) close_failed(file);
  }

  // The shared files abandon() left: H5Fclose is collective over the file's writers, who are
  // all here (every rank agreed the phase failed) with the file open; file-id order.
  void close_abandoned(MPI_Comm run_comm) noexcept override {
    std::vector<File*> open;
    for (auto& file : files_)
      if (file.fid >= 0) open.push_back(&file);
    std::sort(open.begin(), open.end(), [](const File* a, const File* b) { return a->id < b->id; });
    for (File* file : open) drop_data(*file);
    MPI_Barrier(run_comm);  // every writer's truncation before any close writes metadata
    for (File* file : open) close_failed(*file);
  }

  nlohmann::json describe() const override {
    nlohmann::json j;
    j["library_version"] = hdf5::library_version();
    j["driver"] = "mpio (H5Pset_fapl_mpio)";
    j["mpi_library"] = mpiio::library_version();
    j["transfer"] = opt_.collective ? "collective" : "independent";
    j["actual_io_mode"] = actual_io_mode_;
    j["no_collective_cause"] = no_coll_cause_;
    j["alignment"] = {{"threshold", threshold_}, {"alignment", align_}};
    j["chunk"] = opt_.chunk == 0 ? nlohmann::json("contiguous") : nlohmann::json(opt_.chunk);
    j["alloc_time"] = "early";
    j["fill_time"] = "never";
    j["coll_metadata_write"] = opt_.coll_metadata_write;
    j["all_coll_metadata_ops"] = opt_.all_coll_metadata_ops;
    j["metadata_cache"] = mdc_;
    nlohmann::json req = nlohmann::json::object();
    for (const auto& [k, v] : opt_.hints) req[k] = v;
    j["hints_requested"] = req;
    j["hints_effective"] = hints_effective_;
    j["naming"] =
        "/rank_<vrank %05d>/<state kind>/<tensor name>[@<elem_offset> for ZeRO fragments]";
    j["shape"] =
        "TP-local shape; when scaled (bytes != numel * dtype size) a 1-D dataset of bytes / dtype "
        "size elements with the true shape in attribute \"shape\"; sub-byte dtypes (f4, f6_*): "
        "a 1-D uint8 dataset of the packed bytes, true shape in attribute \"shape\"";
    nlohmann::json types = nlohmann::json::object();
    for (DType t : {DType::f64,     DType::f32,     DType::f16, DType::bf16,    DType::f8_e4m3,
                    DType::f8_e5m2, DType::f8_e8m0, DType::c64, DType::i64,     DType::i32,
                    DType::i16,     DType::i8,      DType::u64, DType::u32,     DType::u16,
                    DType::u8,      DType::boolean, DType::f4,  DType::f6_e2m3, DType::f6_e3m2})
      types[std::string(dtype_name(t))] = file_type_name(t);
    j["dtype_mapping"] = types;
    j["datasets"] = datasets_;
    j["index_extents_skipped"] = skipped_index_;
    j["preallocate"] = "not applicable (HDF5 allocates each dataset at creation)";
    j["sync_call"] = "H5Fflush (MPI_File_sync)";
    j["plan_offsets"] = "not used: HDF5 places datasets itself; file sizes differ from the plan";
    if (cfg_.layout.kind == LayoutKind::file_per_tensor)
      j["warnings"] = {
          "file-per-tensor with hdf5 makes one HDF5 file (superblock, groups, "
          "metadata cache) per tensor shard: the numbers measure HDF5 file "
          "creation more than data movement"};
    return j;
  }

 private:
  struct File {
    const FileSpec* f = nullptr;
    uint32_t id = 0;  // FileSpec::id: the order of collective calls
    std::string path;
    MPI_Comm comm = MPI_COMM_SELF;
    hid_t fid = -1;
    std::vector<Dset> dsets;
  };

  // Closes a file of a failed phase. H5Fclose flushes the file's metadata and sets its size; when
  // that fails (the disk that failed the data is full), HDF5 1.10 leaves the file half closed and
  // crashes when anything touches it again (its own shutdown in MPI_Finalize: SIGSEGV in
  // H5F__close_cb). A failed save's file is removed with the run, so its data is dropped first
  // (truncated to 0 bytes): the close then needs only a few KiB for the metadata. A failed
  // restore never changes the saved file.
  void close_failed(File& file) noexcept {
    for (auto& d : file.dsets)
      if (d.id >= 0) H5Dclose(d.id);
    file.dsets.clear();
    drop_data(file);
    if (H5Fclose(file.fid) < 0) g_close_failed = true;
    file.fid = -1;
  }
  void drop_data(const File& file) const noexcept {
    if (save_) (void)::truncate(file.path.c_str(), 0);
  }

  PointConfig cfg_;
  hdf5::Options opt_;
  bool save_ = true;
  Hid dxpl_;
  uint64_t threshold_ = 0, align_ = 0;
  uint64_t datasets_ = 0, skipped_index_ = 0;
  nlohmann::json mdc_ = nlohmann::json::object();
  nlohmann::json hints_effective_ = nlohmann::json::object();
  std::string actual_io_mode_ = "none yet";
  nlohmann::json no_coll_cause_ = nlohmann::json::object();
  PhaseContext* ctx_ = nullptr;
  H5E_auto2_t old_err_fn_ = nullptr;
  void* old_err_data_ = nullptr;
  std::unique_ptr<mpiio::Info> info_;
  std::unique_ptr<mpiio::FileComms> comms_;
  std::vector<File> files_;

  static DsetRec make_rec(const PhaseContext& ctx, const Extent& e) {
    if (e.vrank < 0 || static_cast<size_t>(e.vrank) >= ctx.plan->shards.size() || e.shard < 0 ||
        static_cast<size_t>(e.shard) >=
            ctx.plan->shards[static_cast<size_t>(e.vrank)].shards.size())
      throw IoError("extent of vrank " + std::to_string(e.vrank) + " shard " +
                    std::to_string(e.shard) + " has no shard in the plan");
    const Shard& s =
        ctx.plan->shards[static_cast<size_t>(e.vrank)].shards[static_cast<size_t>(e.shard)];
    if (s.shape.size() > 8) throw IoError("tensor shard with more than 8 dimensions");
    DsetRec r;
    r.vrank = e.vrank;
    r.shard = e.shard;
    r.tensor = s.tensor;
    r.kind = static_cast<uint8_t>(s.kind);
    r.dtype = static_cast<uint8_t>(s.dtype);
    r.fragment = s.fragment ? 1 : 0;
    r.ndim = static_cast<uint8_t>(s.shape.size());
    r.length = e.length;
    r.elem_offset = s.elem_offset;
    r.numel = s.numel;
    for (size_t i = 0; i < s.shape.size(); i++) r.shape[i] = s.shape[i];
    return r;
  }

  // Every dataset of the file, in the same order on every writer: the writers' extents in comm
  // rank order, each in file order (index/footer extents have no dataset).
  std::vector<Dset> datasets(const PhaseContext& ctx, const File& file) {
    std::vector<DsetRec> mine;
    std::vector<const Extent*> my_ext;
    for (const auto& e : file.f->extents) {
      if (e.shard < 0) {
        skipped_index_++;
        continue;
      }
      mine.push_back(make_rec(ctx, e));
      my_ext.push_back(&e);
    }
    std::vector<DsetRec> all = mine;
    int me = 0;
    std::vector<int> displs;
    if (file.comm != MPI_COMM_SELF) {
      int n = 0;
      MPI_Comm_size(file.comm, &n);
      MPI_Comm_rank(file.comm, &me);
      int bytes = static_cast<int>(mine.size() * sizeof(DsetRec));
      std::vector<int> counts(static_cast<size_t>(n));
      MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, file.comm);
      displs.assign(static_cast<size_t>(n), 0);
      size_t total = 0;
      for (int i = 0; i < n; i++) {
        displs[static_cast<size_t>(i)] = static_cast<int>(total);
        total += static_cast<size_t>(counts[static_cast<size_t>(i)]);
      }
      all.resize(total / sizeof(DsetRec));
      MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(),
                     MPI_BYTE, file.comm);
    }
    const size_t my_first =
        displs.empty() ? 0 : static_cast<size_t>(displs[static_cast<size_t>(me)]) / sizeof(DsetRec);
    std::vector<Dset> out(all.size());
    for (size_t i = 0; i < all.size(); i++) {
      Dset& d = out[i];
      d.rec = all[i];
      d.shard.tensor = d.rec.tensor;
      d.shard.kind = static_cast<StateKind>(d.rec.kind);
      d.shard.dtype = static_cast<DType>(d.rec.dtype);
      d.shard.fragment = d.rec.fragment != 0;
      d.shard.elem_offset = d.rec.elem_offset;
      d.shard.numel = d.rec.numel;
      d.shard.shape.assign(d.rec.shape, d.rec.shape + d.rec.ndim);
      d.shard.bytes = d.rec.length;
      d.path = hdf5::dataset_path(*ctx.model, d.rec.vrank, d.shard);
      d.shape = hdf5::dataset_shape(d.shard, d.rec.length);
      if (i >= my_first && i < my_first + mine.size()) d.mine = my_ext[i - my_first];
    }
    return out;
  }

  Hid make_fapl(const PhaseContext& ctx, const File& file, const mpiio::Info& info) {
    Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    h5check(H5Pset_fapl_mpio(fapl.get(), file.comm, info.get()), "H5Pset_fapl_mpio");
    align_ = ctx.align;
    threshold_ = opt_.align_threshold ? opt_.align_threshold : ctx.align;
    h5check(H5Pset_alignment(fapl.get(), threshold_, align_), "H5Pset_alignment");
    h5check(H5Pset_coll_metadata_write(fapl.get(), opt_.coll_metadata_write),
            "H5Pset_coll_metadata_write");
    h5check(H5Pset_all_coll_metadata_ops(fapl.get(), opt_.all_coll_metadata_ops),
            "H5Pset_all_coll_metadata_ops");
    if (opt_.mdc_initial || opt_.mdc_min || opt_.mdc_max) {
      H5AC_cache_config_t mdc;
      std::memset(&mdc, 0, sizeof mdc);
      mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
      h5check(H5Pget_mdc_config(fapl.get(), &mdc), "H5Pget_mdc_config");
      if (opt_.mdc_min) mdc.min_size = *opt_.mdc_min;
      if (opt_.mdc_max) mdc.max_size = *opt_.mdc_max;
      if (opt_.mdc_initial) {
        mdc.set_initial_size = true;
        mdc.initial_size = *opt_.mdc_initial;
      }
      if (mdc.initial_size < mdc.min_size) mdc.initial_size = mdc.min_size;
      if (mdc.initial_size > mdc.max_size) mdc.initial_size = mdc.max_size;
      h5check(H5Pset_mdc_config(fapl.get(), &mdc), "H5Pset_mdc_config");
    }
    return fapl;
  }

  void record_file_settings(File& file) {
    if (!mdc_.empty()) return;
    H5AC_cache_config_t mdc;
    std::memset(&mdc, 0, sizeof mdc);
    mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    if (H5Fget_mdc_config(file.fid, &mdc) >= 0)
      mdc_ = {{"initial_size", mdc.initial_size},
              {"min_size", mdc.min_size},
              {"max_size", mdc.max_size},
              {"set_initial_size", static_cast<bool>(mdc.set_initial_size)},
              {"evictions_enabled", static_cast<bool>(mdc.evictions_enabled)},
              {"incr_mode", static_cast<int>(mdc.incr_mode)},
              {"decr_mode", static_cast<int>(mdc.decr_mode)},
              {"metadata_write_strategy",
               mdc.metadata_write_strategy == H5AC_METADATA_WRITE_STRATEGY__DISTRIBUTED
                   ? "distributed"
                   : "process 0 only"}};
    void* handle = nullptr;
    if (H5Fget_vfd_handle(file.fid, H5P_DEFAULT, &handle) >= 0 && handle)
      hints_effective_ = mpiio::file_hints(*static_cast<MPI_File*>(handle));
    H5Eclear2(H5E_DEFAULT);
  }

  // A file the driver created is closed and made again by H5Fcreate (which truncates the empty
  // file this run made: HDF5 cannot be told to create exclusively without following a link).
  void open(PhaseContext& ctx, size_t i, int created_fd) override {
    const FileSpec& f = ctx.io->files[i];
    File& file = files_[i];
    file.f = &f;
    file.id = f.id;
    file.path = ctx.dir + "/" + f.path;
    if (created_fd >= 0 && ::close(created_fd) != 0)
      throw_errno("close '" + file.path + "'", errno);
    file.comm = comms_->get(f);
    file.dsets = datasets(ctx, file);
    Hid fapl = make_fapl(ctx, file, *info_);
    if (save_) {
      file.fid = H5Fcreate(file.path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
      if (file.fid < 0) throw_h5_open("H5Fcreate '" + file.path + "'", file.path, true);
    } else {
      // A regular file must be there, checked without blocking (H5Fopen of a FIFO would block);
      // the file's readers agree before the collective open.
      agree_on_step(file.comm, error_of([&] { check_saved_file(ctx, f); }),
                    "another reader of '" + file.path + "' failed its check before H5Fopen");
      file.fid = H5Fopen(file.path.c_str(), H5F_ACC_RDONLY, fapl.get());
      if (file.fid < 0) throw_h5_open("H5Fopen '" + file.path + "' (read-only)", file.path, false);
    }
    ctx.rec->metadata();
    record_file_settings(file);
    if (save_)
      create_datasets(ctx, file);
    else
      open_datasets(ctx, file);
  }

  void create_datasets(PhaseContext& ctx, File& file) {
    Hid lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    h5check(H5Pset_create_intermediate_group(lcpl.get(), 1), "H5Pset_create_intermediate_group");
    for (auto& d : file.dsets) {
      const auto& dims = d.shape.dims;
      std::vector<hsize_t> hd(dims.begin(), dims.end());
      Hid space(H5Screate_simple(static_cast<int>(hd.size()), hd.data(), nullptr), H5Sclose);
      Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
      h5check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
      h5check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
      bool empty = std::any_of(dims.begin(), dims.end(), [](uint64_t x) { return x == 0; });
      if (opt_.chunk != 0 && !empty) {
        auto c = hdf5::chunk_dims(dims, d.shape.elem_size, opt_.chunk);
        std::vector<hsize_t> hc(c.begin(), c.end());
        h5check(H5Pset_chunk(dcpl.get(), static_cast<int>(hc.size()), hc.data()), "H5Pset_chunk");
      }
      Hid type = file_type(d.shard.dtype, d.shape.raw_bytes);
      d.id = H5Dcreate2(file.fid, d.path.c_str(), type.get(), space.get(), lcpl.get(), dcpl.get(),
                        H5P_DEFAULT);
      if (d.id < 0) throw_h5("H5Dcreate2 '" + d.path + "' in '" + file.path + "'");
      write_attr_string(d.id, "dtype", std::string(dtype_name(d.shard.dtype)));
      if (d.shape.reshaped) write_attr_u64s(d.id, "shape", d.shard.shape);
      ctx.rec->metadata();
      datasets_++;
    }
  }

  // Collective transfers (or collective metadata reads) need every dataset open on every rank;
  // otherwise a rank opens only its own.
  void open_datasets(PhaseContext& ctx, File& file) {
    const bool all = opt_.collective || opt_.all_coll_metadata_ops;
    for (auto& d : file.dsets) {
      if (!all && !d.mine) continue;
      d.id = H5Dopen2(file.fid, d.path.c_str(), H5P_DEFAULT);
      if (d.id < 0) throw_h5("H5Dopen2 '" + d.path + "' in '" + file.path + "'");
      ctx.rec->metadata();
      if (!d.mine) continue;
      Hid space(h5check(H5Dget_space(d.id), "H5Dget_space"), H5Sclose);
      Hid type(h5check(H5Dget_type(d.id), "H5Dget_type"), H5Tclose);
      hssize_t n = H5Sget_simple_extent_npoints(space.get());
      uint64_t bytes = static_cast<uint64_t>(n) * H5Tget_size(type.get());
      if (n < 0 || bytes != d.rec.length)
        throw IoError("dataset '" + d.path + "' in '" + file.path + "' holds " +
                      std::to_string(bytes) + " bytes, the plan expects " +
                      std::to_string(d.rec.length) + " (written by a different plan?)");
    }
  }

  // One H5Dwrite/H5Dread of `len` bytes at byte `pos` of dataset d (or an empty collective call
  // when d is not this rank's: mine == false).
  void transfer_op(PhaseContext& ctx, File& file, Dset& d, bool mine, uint64_t pos, uint64_t len) {
    Buffer& buf = ctx.pool->at(0);
    Hid fspace(h5check(H5Dget_space(d.id), "H5Dget_space '" + d.path + "'"), H5Sclose);
    Hid mspace;
    const uint64_t es = d.shape.elem_size;
    if (mine) {
      auto blocks = hdf5::linear_blocks(d.shape.dims, pos / es, len / es);
      for (size_t i = 0; i < blocks.size(); i++) {
        std::vector<hsize_t> st(blocks[i].start.begin(), blocks[i].start.end());
        std::vector<hsize_t> ct(blocks[i].count.begin(), blocks[i].count.end());
        h5check(H5Sselect_hyperslab(fspace.get(), i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR,
                                    st.data(), nullptr, ct.data(), nullptr),
                "H5Sselect_hyperslab '" + d.path + "'");
      }
      hsize_t n = len / es;
      mspace = Hid(H5Screate_simple(1, &n, nullptr), H5Sclose);
    } else {
      hsize_t one = 1;
      mspace = Hid(H5Screate_simple(1, &one, nullptr), H5Sclose);
      H5Sselect_none(mspace.get());
      H5Sselect_none(fspace.get());
    }
    Hid mtype(h5check(H5Dget_type(d.id), "H5Dget_type '" + d.path + "'"), H5Tclose);
    // The bytes of the dataset's extent at [pos, pos + len): one per-tensor transfer.
    Transfer tr;
    if (mine) {
      tr.offset = d.mine->offset + pos;
      tr.len = len;
      tr.extent = static_cast<uint32_t>(d.mine - file.f->extents.data());
    }
    std::byte* p = save_ && mine ? ctx.data->produce(*file.f, tr, buf) : buf.data;
    ctx.rec->count(Counter::submit_calls);
    if (!mine) ctx.rec->count(Counter::collective_empty_calls);
    uint64_t t0 = now_ns();
    herr_t rc = save_ ? H5Dwrite(d.id, mtype.get(), mspace.get(), fspace.get(), dxpl_.get(), p)
                      : H5Dread(d.id, mtype.get(), mspace.get(), fspace.get(), dxpl_.get(), p);
    if (rc < 0)
      throw_h5(std::string(save_ ? "H5Dwrite" : "H5Dread") + " '" + file.path + "' dataset '" +
               d.path + "' byte " + std::to_string(pos) + " length " + std::to_string(len));
    if (!mine) return;
    ctx.rec->op(len, now_ns() - t0);
    if (!save_) ctx.data->consume(*file.f, tr, buf);
  }

  static uint64_t ops_of(uint64_t bytes, uint64_t bs) { return (bytes + bs - 1) / bs; }

  // The writers of a shared file agree on failures before the next call that is collective: every
  // kAgreeEvery collective H5Dwrite/H5Dread and after the last, after a rank's independent
  // transfers of the file, and after H5Fflush and H5Fclose (a rank that failed does not leave the
  // others waiting in them; MPI-IO reports a two-phase write error only to the aggregator that met
  // it). Between agreements a rank that failed joins the collective calls with an empty selection
  // (an allreduce after every call cost as much as the call itself on ranks sharing cores; see
  // the MPI-IO backend).
  static constexpr uint64_t kAgreeEvery = 32;
  void transfer(PhaseContext& ctx, File& file) {
    const uint64_t bs = cfg_.block_size;
    const char* call = save_ ? "H5Dwrite" : "H5Dread";
    const std::string peer = "another writer of '" + file.path + "' failed in " + call;
    std::exception_ptr err;
    uint64_t calls = 0;
    // loop_err: an independent transfer's failure, or the agreement that stopped the collective
    // calls (every writer leaves the loop at the same agreement).
    const std::exception_ptr loop_err = error_of([&] {
      for (auto& d : file.dsets) {
        // Independent: only this rank's datasets. Collective: every rank calls H5Dwrite/H5Dread
        // for every dataset the same number of times (HDF5 1.10 has no multi-dataset I/O), the
        // ranks not holding it with an empty selection.
        if (!opt_.collective && !d.mine) continue;
        const uint64_t len_total = d.rec.length;
        const uint64_t es = d.shape.elem_size;
        for (uint64_t i = 0, n = ops_of(len_total, bs); i < n; i++) {
          uint64_t pos = i * bs, len = std::min(bs, len_total - pos);
          auto op = [&] {
            if (pos % es != 0 || len % es != 0)
              throw IoError("block_size " + std::to_string(bs) + " does not split dataset '" +
                            d.path + "' on element boundaries (" + std::to_string(es) + " bytes)");
            transfer_op(ctx, file, d, d.mine != nullptr, pos, len);
          };
          if (!opt_.collective) {
            op();
            continue;
          }
          if (!err)
            err = error_of(op);
          else  // joins the others with nothing; the first failure is the one reported
            (void)error_of([&] { transfer_op(ctx, file, d, false, pos, len); });
          if (++calls % kAgreeEvery == 0) agree_on_step(file.comm, err, peer);
        }
      }
    });
    if (!opt_.collective)
      agree_on_step(file.comm, loop_err, peer);
    else
      agree_on_step(file.comm, err ? err : loop_err, peer);
    if (opt_.collective && !file.dsets.empty()) {
      H5D_mpio_actual_io_mode_t mode;
      if (H5Pget_mpio_actual_io_mode(dxpl_.get(), &mode) >= 0)
        actual_io_mode_ = mode == H5D_MPIO_NO_COLLECTIVE       ? "no collective"
                          : mode == H5D_MPIO_CHUNK_INDEPENDENT ? "chunk independent"
                          : mode == H5D_MPIO_CHUNK_COLLECTIVE  ? "chunk collective"
                          : mode == H5D_MPIO_CHUNK_MIXED       ? "chunk mixed"
                                                               : "contiguous collective";
      uint32_t local = 0, global = 0;
      if (H5Pget_mpio_no_collective_cause(dxpl_.get(), &local, &global) >= 0)
        no_coll_cause_ = {{"local", local}, {"global", global}};
    } else if (!opt_.collective) {
      actual_io_mode_ = "independent";
    }
  }
};

}  // namespace

BackendFactory hdf5_backend() {
  BackendFactory f;
  f.name = "hdf5";
  f.description = "parallel HDF5 (MPI-IO driver): one dataset per tensor shard, group per rank";
  f.probe = [] { return std::string(); };
  f.library = [] {
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    return std::make_pair(
        std::string("hdf5_version"),
        std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel));
  };
  f.stream_transfers = false;
  f.stream_refusal = "one H5Dwrite/H5Dread per dataset: a transfer cannot cross tensors";
  f.file_offsets_refusal = "HDF5 places each dataset in the file itself";
  f.read_only_refusal =
      "it opens files through MPI-IO, which may create helper files beside them, and reads HDF5 "
      "datasets, not arbitrary files";
  f.option_keys = hdf5::option_keys();
  f.validate = [](const PointConfig& p) {
    hdf5::parse_options(p);
    if (p.source == SourceMode::shard)
      throw ConfigError(
          "'source': \"shard\" needs a backend that transfers requests; \"hdf5\" moves each "
          "dataset itself (use source \"pool\")");
    if (p.direct)
      throw ConfigError(
          "'direct': true is not supported by backend \"hdf5\": its MPI-IO driver "
          "(H5FD_mpio) has no O_DIRECT path (" +
          mpiio::direct_unsupported_reason() +
          "); HDF5's direct driver (H5FD_direct) is serial only");
    if (p.layout.chunk_size != 0)
      throw ConfigError("'chunk_size': " + std::to_string(p.layout.chunk_size) +
                        " cannot be used with backend \"hdf5\": it splits files at byte "
                        "boundaries, so a tensor shard could straddle two files, while HDF5 keeps "
                        "each shard whole as one dataset (use 'hdf5.chunk' for HDF5 chunking)");
    if (p.layout.kind == LayoutKind::aggregated_node)
      throw ConfigError(
          "'layout': \"aggregated-node\" is not supported by backend \"hdf5\": the "
          "node leader would have to write other ranks' shards as datasets of its "
          "file, which this backend does not do (use \"shared-file\" for one HDF5 "
          "file, or 'ranks_per_file')");
    if (p.block_size > mpiio::kMaxTransfer)
      throw ConfigError("'block_size': " + std::to_string(p.block_size) +
                        " is too large for backend \"hdf5\" (allowed: up to 1 GiB per transfer)");
    if (p.block_size % 8 != 0)
      throw ConfigError("'block_size': " + std::to_string(p.block_size) +
                        " must be a multiple of 8 for backend \"hdf5\" (transfers are whole "
                        "elements of up to 8 bytes)");
    if (p.queue_depth > 1)
      throw ConfigError("'queue_depth': " + std::to_string(p.queue_depth) +
                        " does not apply to backend \"hdf5\" (H5Dwrite/H5Dread are blocking, one "
                        "at a time); use queue_depth 1");
  };
  f.create = [](const PointConfig& p) -> std::unique_ptr<Backend> {
    return std::make_unique<Hdf5Backend>(p);
  };
  // After a failed write, a file whose H5Fclose failed stays open in the library; its own
  // shutdown at MPI_Finalize (an MPI_COMM_SELF attribute callback) then crashed in H5F__close_cb
  // with MPI half torn down. Shut the library down while MPI is whole; errors are not printed.
  f.shutdown = [] {
    if (g_close_failed) return;
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    H5close();
  };
  return f;
}

}  // namespace ckpt
