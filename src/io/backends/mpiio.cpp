// MPI-IO backend: MPI_File_open on the file's communicator (MPI_COMM_SELF for a private file, the
// file's writers for a shared one), then independent (MPI_File_write_at / read_at, or the
// nonblocking iwrite_at / iread_at with queue_depth > 1) or collective (*_at_all) transfers,
// MPI_File_sync per the sync policy, MPI_File_close. Hints come from the "mpiio" config section.
#include "ckptbench/io/backends/mpiio.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <deque>
#include <memory>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/io/backend.hpp"
#include "ckptbench/io/driver.hpp"
#include "ckptbench/mpi/agreement.hpp"

namespace ckpt {
namespace mpiio {

std::string error_text(int err) {
  char buf[MPI_MAX_ERROR_STRING + 1] = {};
  int len = 0;
  if (MPI_Error_string(err, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(err);
  int cls = 0;
  std::string s(buf, static_cast<size_t>(std::max(len, 0)));
  if (MPI_Error_class(err, &cls) == MPI_SUCCESS)
    s += " (MPI error class " + std::to_string(cls) + ")";
  return s;
}

void throw_mpi(const std::string& what, int err) { throw IoError(what + ": " + error_text(err)); }

std::string direct_unsupported_reason() {
  return "O_DIRECT is not available through MPI-IO here: Open MPI 4.1's default io component "
         "OMPIO (fs/ufs) opens files without O_DIRECT and has no hint to ask for it, and its "
         "ROMIO 3.2.1 honours direct_read/direct_write only in the XFS driver (ad_xfs), which "
         "this build does not use; use backend \"posix\" or \"io_uring\" for O_DIRECT, or set "
         "'direct': false (restore then defeats the page cache with the 'cache' setting)";
}

Hints parse_hints(const nlohmann::json* hints, const std::string& path) {
  Hints out;
  if (hints) {
    if (!hints->is_object())
      throw ConfigError("'" + path +
                        "': expected an object of MPI-IO hints ({\"cb_nodes\": 2, "
                        "\"romio_cb_write\": \"enable\"}), got " +
                        json_type_name(*hints));
    for (auto it = hints->begin(); it != hints->end(); ++it) {
      const std::string key = path + "." + it.key();
      if (it.key().empty() || it.key().size() >= static_cast<size_t>(MPI_MAX_INFO_KEY))
        throw ConfigError("'" + key + "': hint names must be 1.." +
                          std::to_string(MPI_MAX_INFO_KEY - 1) + " characters (MPI_MAX_INFO_KEY)");
      const auto& v = it.value();
      std::string val;
      if (v.is_string())
        val = v.get<std::string>();
      else if (v.is_number_unsigned())
        val = std::to_string(v.get<uint64_t>());
      else if (v.is_number_integer())
        val = std::to_string(v.get<int64_t>());
      else
        throw ConfigError("'" + key +
                          "': expected a string or an integer (MPI_Info values are "
                          "strings; switches such as romio_cb_write take \"enable\", \"disable\" "
                          "or \"automatic\"), got " +
                          json_type_name(v) + " " + v.dump());
      if (val.empty() || val.size() >= static_cast<size_t>(MPI_MAX_INFO_VAL))
        throw ConfigError("'" + key + "': hint values must be 1.." +
                          std::to_string(MPI_MAX_INFO_VAL - 1) + " characters (MPI_MAX_INFO_VAL)");
      out.emplace_back(it.key(), val);
    }
  }
  return out;
}

void add_striping_hints(Hints& hints, const PointConfig& cfg) {
  auto has = [&](const std::string& k) {
    return std::any_of(hints.begin(), hints.end(), [&](const auto& kv) { return kv.first == k; });
  };
  if (cfg.stripe_count > 0 && !has("striping_factor"))
    hints.emplace_back("striping_factor", std::to_string(cfg.stripe_count));
  if (cfg.stripe_size > 0 && !has("striping_unit"))
    hints.emplace_back("striping_unit", std::to_string(cfg.stripe_size));
}

namespace {
const OptionTable<Options>& option_table() {
  static const OptionTable<Options> t{{
      {"mode",
       [](ObjectReader& r, const std::string& k, Options& o) {
         o.collective = r.choice(k, "independent", {"independent", "collective"}) == "collective";
       }},
      {"hints", [](ObjectReader& r, const std::string& k,
                   Options& o) { o.hints = parse_hints(r.raw(k), "mpiio.hints"); }},
      {"direct",
       [](ObjectReader& r, const std::string& k, Options&) {
         if (r.boolean(k, false))
           throw ConfigError("'mpiio.direct': true is not supported: " +
                             direct_unsupported_reason());
       }},
  }};
  return t;
}
}  // namespace

std::vector<std::string> option_keys() { return option_table().keys(); }

Options parse_options(const PointConfig& cfg) {
  Options o = option_table().parse(cfg.backend_options, "mpiio");
  add_striping_hints(o.hints, cfg);
  return o;
}

Info::Info(const std::vector<std::pair<std::string, std::string>>& hints) {
  if (hints.empty()) return;
  MPI_Info_create(&info_);
  for (const auto& [k, v] : hints) MPI_Info_set(info_, k.c_str(), v.c_str());
}

Info::~Info() {
  if (info_ != MPI_INFO_NULL) MPI_Info_free(&info_);
}

nlohmann::json info_to_json(MPI_Info info) {
  nlohmann::json j = nlohmann::json::object();
  if (info == MPI_INFO_NULL) return j;
  int n = 0;
  MPI_Info_get_nkeys(info, &n);
  for (int i = 0; i < n; i++) {
    char key[MPI_MAX_INFO_KEY + 1] = {};
    MPI_Info_get_nthkey(info, i, key);
    int len = 0, flag = 0;
    MPI_Info_get_valuelen(info, key, &len, &flag);
    if (!flag) continue;
    std::string val(static_cast<size_t>(len) + 1, '\0');
    MPI_Info_get(info, key, len + 1, val.data(), &flag);
    val.resize(static_cast<size_t>(len));
    j[key] = val;
  }
  return j;
}

nlohmann::json file_hints(MPI_File fh) {
  MPI_Info info = MPI_INFO_NULL;
  if (MPI_File_get_info(fh, &info) != MPI_SUCCESS) return nlohmann::json::object();
  nlohmann::json j = info_to_json(info);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  return j;
}

FileComms::~FileComms() {
  for (auto& [w, c] : cache_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
}

FileComms::FileComms(MPI_Comm comm, int io_rank) : comm_(comm) {
  MPI_Comm_rank(comm, &me_);
  MPI_Comm_size(comm, &size_);
  shift_ = ((me_ - io_rank) % size_ + size_) % size_;
}

MPI_Comm FileComms::get(const FileSpec& f) {
  if (!f.shared || f.writers.size() <= 1) return MPI_COMM_SELF;
  std::vector<int> members;
  members.reserve(f.writers.size());
  for (int w : f.writers) members.push_back((w + shift_) % size_);
  std::sort(members.begin(), members.end());
  if (!std::binary_search(members.begin(), members.end(), me_))
    throw IoError("file '" + f.path + "' is shared, but its writers do not include rank " +
                  std::to_string(me_) + " (plan inconsistency)");
  auto it = cache_.find(members);
  if (it != cache_.end()) return it->second;
  MPI_Group world = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  MPI_Comm_group(comm_, &world);
  int rc = MPI_Group_incl(world, static_cast<int>(members.size()), members.data(), &group);
  MPI_Group_free(&world);
  if (rc != MPI_SUCCESS) throw_mpi("MPI_Group_incl for the writers of '" + f.path + "'", rc);
  MPI_Comm c = MPI_COMM_NULL;
  // The tag only has to tell apart concurrent creations by the same ranks; creations are
  // sequential per rank, so a constant is enough.
  rc = MPI_Comm_create_group(comm_, group, 0x6b70, &c);
  MPI_Group_free(&group);
  if (rc != MPI_SUCCESS) throw_mpi("MPI_Comm_create_group for the writers of '" + f.path + "'", rc);
  cache_.emplace(members, c);
  return c;
}

std::string library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {};
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, static_cast<size_t>(std::max(len, 0)));
  auto nl = s.find_first_of("\n,");
  if (nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace mpiio

namespace {

using mpiio::throw_mpi;

std::string where(const std::string& path, uint64_t off, uint64_t len) {
  return "'" + path + "' offset " + std::to_string(off) + " length " + std::to_string(len);
}

class MpiioBackend final : public Backend {
 public:
  explicit MpiioBackend(const PointConfig& cfg) : cfg_(cfg), opt_(mpiio::parse_options(cfg)) {}

  TransportCaps caps(const PhaseContext& ctx) const override {
    TransportCaps c;
    c.depth = opt_.collective ? 1u : depth_of(ctx);
    c.whole_file = opt_.collective;
    c.collective_files = true;  // MPI_File_open / sync / close are collective
    return c;
  }

  void begin(PhaseContext& ctx) override {
    ctx_ = &ctx;
    save_ = ctx.phase == Phase::save;
    depth_ = opt_.collective ? 1 : depth_of(ctx);
    info_ = std::make_unique<mpiio::Info>(opt_.hints);
    comms_ = std::make_unique<mpiio::FileComms>(ctx.comm, ctx.io->rank);
    files_.assign(ctx.io->files.size(), Open{});
    pending_.clear();
    done_.clear();
  }

  void end(PhaseContext&) noexcept override {
    comms_.reset();
    info_.reset();
    ctx_ = nullptr;
  }

  // A file the driver created is closed and opened again through MPI-IO (which cannot be told to
  // create exclusively without following a link); the creator's create precedes every writer's
  // open (the driver's barrier for shared plans).
  void open(PhaseContext& ctx, size_t i, int created_fd) override {
    const FileSpec& f = ctx.io->files[i];
    Open& o = files_[i];
    o.path = ctx.dir + "/" + f.path;
    o.id = f.id;
    if (created_fd >= 0 && ::close(created_fd) != 0) throw_errno("close '" + o.path + "'", errno);
    o.comm = comms_->get(f);
    // A restore checks first, without blocking, that a regular file is there (MPI_File_open of a
    // FIFO would block).
    if (!save_)
      agree_on_file(o, error_of([&] { check_saved_file(ctx, f); }),
                    "its check before MPI_File_open");
    int amode = save_ ? MPI_MODE_WRONLY : MPI_MODE_RDONLY;
    int rc = MPI_File_open(o.comm, o.path.c_str(), amode, info_->get(), &o.fh);
    if (rc != MPI_SUCCESS) {
      // The MPI error class often hides the cause: the errno text of a POSIX open of the path.
      std::string what =
          std::string("MPI_File_open '") + o.path + "' (" + (save_ ? "write" : "read") + ")";
      if (const std::string why = posix_open_reason(o.path, save_); !why.empty())
        throw IoError(what + ": " + why + " (" + mpiio::error_text(rc) + ")");
      throw_mpi(what + " (a POSIX open of the same path works)", rc);
    }
    ctx.rec->metadata();
    if (hints_effective_.empty()) hints_effective_ = mpiio::file_hints(o.fh);
  }

  uint64_t size(size_t i) override {
    MPI_Offset size = 0;
    int rc = MPI_File_get_size(files_[i].fh, &size);
    if (rc != MPI_SUCCESS) throw_mpi("MPI_File_get_size '" + files_[i].path + "'", rc);
    return static_cast<uint64_t>(size);
  }

  // depth 1: MPI_File_write_at / read_at, complete on return. Deeper: MPI_File_iwrite_at /
  // iread_at, completed in submission order.
  void submit(size_t i, unsigned slot, uint64_t off, uint64_t len, std::byte* data) override {
    Open& o = files_[i];
    ctx_->rec->count(Counter::submit_calls);
    const auto moff = static_cast<MPI_Offset>(off);
    const int n = static_cast<int>(len);
    if (depth_ == 1) {
      MPI_Status st;
      int rc = save_ ? MPI_File_write_at(o.fh, moff, data, n, MPI_BYTE, &st)
                     : MPI_File_read_at(o.fh, moff, data, n, MPI_BYTE, &st);
      check(o, rc, st, save_ ? "MPI_File_write_at" : "MPI_File_read_at", off, len);
      done_.push_back(slot);
      return;
    }
    Pending p{MPI_REQUEST_NULL, i, slot, off, len};
    int rc = save_ ? MPI_File_iwrite_at(o.fh, moff, data, n, MPI_BYTE, &p.req)
                   : MPI_File_iread_at(o.fh, moff, data, n, MPI_BYTE, &p.req);
    if (rc != MPI_SUCCESS)
      throw_mpi(std::string(save_ ? "MPI_File_iwrite_at " : "MPI_File_iread_at ") +
                    where(o.path, off, len),
                rc);
    pending_.push_back(p);
  }

  void reap(std::vector<unsigned>& done) override {
    if (depth_ == 1) {
      done.insert(done.end(), done_.begin(), done_.end());
      done_.clear();
      return;
    }
    // The oldest, then whichever of the next ones are complete already.
    bool first = true;
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      MPI_Status st;
      int rc;
      if (first) {
        rc = MPI_Wait(&p.req, &st);
        first = false;
      } else {
        int flag = 0;
        rc = MPI_Test(&p.req, &flag, &st);
        if (rc == MPI_SUCCESS && !flag) break;
      }
      const Pending q = p;
      pending_.pop_front();
      check(files_[q.file], rc, st, save_ ? "MPI_File_iwrite_at" : "MPI_File_iread_at", q.off,
            q.len);
      done.push_back(q.slot);
    }
  }

  void drain() noexcept override {
    for (auto& p : pending_) MPI_Wait(&p.req, MPI_STATUS_IGNORE);
    pending_.clear();
  }

  // Collective: every rank of the file's communicator makes the same number of *_at_all calls:
  // the most any of them needs; a rank with nothing left joins with a zero-length transfer. A rank
  // that fails to stage, transfer or verify keeps joining the remaining calls with zero-length
  // transfers (ROMIO reports an error of the two-phase write to the aggregator that met it, not to
  // every caller), and the writers agree on failures every kAgreeEvery calls and after the last, so
  // a failure stops them all within kAgreeEvery calls. Agreeing after every call cost an allreduce
  // per call: on 4 ranks sharing 2 cores it halved the collective write rate (1 MiB calls, 0.49 ->
  // 0.23 GiB/s).
  static constexpr uint64_t kAgreeEvery = 32;
  void transfer_file(PhaseContext& ctx, size_t i) override {
    Open& o = files_[i];
    const FileSpec& f = ctx.io->files[i];
    Buffer& buf = ctx.pool->at(0);
    const char* call = save_ ? "MPI_File_write_at_all" : "MPI_File_read_at_all";
    std::vector<Transfer> mine;
    for_each_transfer(f, cfg_.block_size, cfg_.transfer,
                      [&](const Transfer& tr) { mine.push_back(tr); });
    uint64_t calls = mine.size();
    if (o.comm != MPI_COMM_SELF) {
      const uint64_t n = mine.size();
      MPI_Allreduce(&n, &calls, 1, MPI_UINT64_T, MPI_MAX, o.comm);
    }
    std::exception_ptr err;
    auto guarded = [&](auto&& fn) {
      if (!err) try {
          fn();
        } catch (...) {
          err = std::current_exception();
        }
    };
    for (uint64_t k = 0; k < calls; k++) {
      // After a failure this rank joins with nothing (its transfer, if any, is not made).
      const Transfer* tr = !err && k < mine.size() ? &mine[k] : nullptr;
      std::byte* p = buf.data;
      if (save_ && tr) guarded([&] { p = ctx.data->produce(f, *tr, buf); });
      if (err) tr = nullptr;
      MPI_Status st;
      const uint64_t t = now_ns();
      ctx.rec->count(Counter::submit_calls);
      const auto off = static_cast<MPI_Offset>(tr ? tr->offset : 0);
      const int n = tr ? static_cast<int>(tr->len) : 0;
      int rc = save_ ? MPI_File_write_at_all(o.fh, off, p, n, MPI_BYTE, &st)
                     : MPI_File_read_at_all(o.fh, off, p, n, MPI_BYTE, &st);
      guarded([&] {
        if (!tr) {
          if (rc != MPI_SUCCESS)
            throw_mpi(std::string(call) + " (empty, joining the others) '" + o.path + "'", rc);
          ctx.rec->count(Counter::collective_empty_calls);
          return;
        }
        check(o, rc, st, call, tr->offset, tr->len);
        ctx.rec->op(tr->len, now_ns() - t);
        if (!save_) ctx.data->consume(f, *tr, buf);
      });
      if ((k + 1) % kAgreeEvery == 0 || k + 1 == calls) agree_on_file(o, err, call);
    }
  }

  // Both collective over a shared file's writers, who agree on the outcome (a rank whose sync
  // failed does not leave the others waiting in the close).
  void sync(size_t i) override {
    int rc = MPI_File_sync(files_[i].fh);
    std::exception_ptr err;
    if (rc != MPI_SUCCESS) err = mpi_error("MPI_File_sync '" + files_[i].path + "'", rc);
    agree_on_file(files_[i], err, "MPI_File_sync");
  }

  void close(size_t i) override {
    int rc = MPI_File_close(&files_[i].fh);
    files_[i].fh = MPI_FILE_NULL;
    std::exception_ptr err;
    if (rc != MPI_SUCCESS) err = mpi_error("MPI_File_close '" + files_[i].path + "'", rc);
    agree_on_file(files_[i], err, "MPI_File_close");
    ctx_->rec->metadata();
  }

  static std::exception_ptr mpi_error(const std::string& what, int rc) {
    return error_of([&] { throw_mpi(what, rc); });
  }

  // Files private to this rank are closed; a shared file's close is collective and could hang
  // while the other writers are not failing, so its handle is left to MPI_Finalize.
  void abandon() noexcept override {
    for (auto& o : files_)
      if (o.fh != MPI_FILE_NULL && o.comm == MPI_COMM_SELF) MPI_File_close(&o.fh);
  }

  // Every writer of a shared file opened it (MPI_File_open is collective) and none has closed
  // it, so each is here with it open: the closes meet in file-id order.
  void close_abandoned(MPI_Comm) noexcept override {
    std::vector<Open*> open;
    for (auto& o : files_)
      if (o.fh != MPI_FILE_NULL) open.push_back(&o);
    std::sort(open.begin(), open.end(), [](const Open* a, const Open* b) { return a->id < b->id; });
    for (Open* o : open) {
      MPI_File_close(&o->fh);  // an error here has nothing left to report to
      o->fh = MPI_FILE_NULL;
    }
  }

  nlohmann::json describe() const override {
    nlohmann::json j;
    j["mode"] = opt_.collective ? "collective" : "independent";
    j["api"] = opt_.collective ? "MPI_File_write_at_all / MPI_File_read_at_all"
               : depth_ > 1    ? "MPI_File_iwrite_at / MPI_File_iread_at (FIFO completion)"
                               : "MPI_File_write_at / MPI_File_read_at";
    j["transfers_in_flight"] = depth_;
    j["library"] = mpiio::library_version();
    const char* io = std::getenv("OMPI_MCA_io");
    j["io_component"] = io ? std::string(io) : std::string("library default");
    nlohmann::json req = nlohmann::json::object();
    for (const auto& [k, v] : opt_.hints) req[k] = v;
    j["hints_requested"] = req;
    j["hints_effective"] = hints_effective_;
    j["shared_file_comm"] = "MPI_Comm_create_group over the file's writers";
    if (cfg_.preallocate) j["preallocate_by"] = "the creating rank, before MPI_File_open";
    j["o_direct"] = false;
    j["sync_call"] = "MPI_File_sync";
    return j;
  }

 private:
  struct Open {
    MPI_File fh = MPI_FILE_NULL;
    MPI_Comm comm = MPI_COMM_SELF;
    std::string path;
    uint32_t id = 0;  // FileSpec::id: the order of collective calls
  };
  struct Pending {
    MPI_Request req = MPI_REQUEST_NULL;
    size_t file = 0;
    unsigned slot = 0;
    uint64_t off = 0, len = 0;
  };

  unsigned depth_of(const PhaseContext& ctx) const {
    return static_cast<unsigned>(std::max<size_t>(
        1,
        std::min<size_t>(static_cast<size_t>(std::max(1, cfg_.queue_depth)), ctx.pool->count())));
  }

  // All writers of o learn whether any of them failed (agree_on_step).
  void agree_on_file(const Open& o, const std::exception_ptr& err, const char* call) {
    agree_on_step(o.comm, err, "another writer of '" + o.path + "' failed in " + call);
  }

  void check(const Open& o, int rc, MPI_Status& st, const char* call, uint64_t off, uint64_t len) {
    if (rc != MPI_SUCCESS) throw_mpi(std::string(call) + " " + where(o.path, off, len), rc);
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (n < 0 || static_cast<uint64_t>(n) != len)
      throw IoError(std::string(call) + " " + where(o.path, off, len) + ": transferred " +
                    std::to_string(n) + " bytes" + short_transfer_cause(o, off + len));
  }

  // MPI-IO reports a short transfer without the system's errno: say what can be known.
  std::string short_transfer_cause(const Open& o, uint64_t end) const {
    if (save_)
      return " (short write: MPI-IO passes no error code on; the file system took no more - "
             "full, over quota or an I/O error; " +
             free_space_text(o.path) + ")";
    MPI_Offset size = 0;
    if (MPI_File_get_size(o.fh, &size) != MPI_SUCCESS)
      return " (short read; MPI-IO passes no error code on)";
    if (static_cast<uint64_t>(size) < end)
      return " (the file ends at byte " + std::to_string(size) + ": truncated since the save)";
    return " (short read inside the file, which has " + std::to_string(size) +
           " bytes: an I/O error; MPI-IO passes no error code on)";
  }
  static std::string free_space_text(const std::string& path) {
    struct statvfs sv;
    const std::string dir = path.substr(0, path.rfind('/'));
    if (::statvfs(dir.c_str(), &sv) != 0) return "free space unknown";
    return "free now: " + format_bytes(static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize);
  }

  PointConfig cfg_;
  mpiio::Options opt_;
  PhaseContext* ctx_ = nullptr;
  bool save_ = true;
  unsigned depth_ = 1;
  std::unique_ptr<mpiio::Info> info_;
  std::unique_ptr<mpiio::FileComms> comms_;
  std::vector<Open> files_;
  std::deque<Pending> pending_;
  std::vector<unsigned> done_;
  nlohmann::json hints_effective_ = nlohmann::json::object();
};

}  // namespace

BackendFactory mpiio_backend() {
  BackendFactory f;
  f.name = "mpiio";
  f.read_only_refusal =
      "MPI_File_open may create helper files beside the file it opens (Open MPI's shared-file-"
      "pointer files), which would change the directory";
  f.description =
      "MPI-IO: independent (write_at/read_at) or collective (*_at_all) transfers, hints";
  f.probe = [] { return std::string(); };
  f.option_keys = mpiio::option_keys();
  f.validate = [](const PointConfig& p) {
    mpiio::Options o = mpiio::parse_options(p);
    if (p.direct)
      throw ConfigError("'direct': true is not supported by backend \"mpiio\": " +
                        mpiio::direct_unsupported_reason());
    if (p.block_size > mpiio::kMaxTransfer)
      throw ConfigError("'block_size': " + std::to_string(p.block_size) +
                        " is too large for backend \"mpiio\" (MPI counts are int; allowed: up to "
                        "1 GiB per transfer)");
    if (o.collective && p.source == SourceMode::shard)
      throw ConfigError(
          "'source': \"shard\" needs a backend that transfers requests; \"mpiio\" mode "
          "\"collective\" moves whole files itself (use mode \"independent\" or source \"pool\")");
    if (o.collective && p.queue_depth > 1)
      throw ConfigError("'queue_depth': " + std::to_string(p.queue_depth) +
                        " does not apply to \"mpiio\" mode \"collective\" (one blocking *_at_all "
                        "call at a time, every rank joining); use queue_depth 1, or mode "
                        "\"independent\" for nonblocking MPI_File_iwrite_at/iread_at");
  };
  f.create = [](const PointConfig& p) -> std::unique_ptr<Backend> {
    return std::make_unique<MpiioBackend>(p);
  };
  return f;
}

}  // namespace ckpt
