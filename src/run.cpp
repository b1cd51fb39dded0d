// Executes a run: for every sweep point and repetition, barrier-separated save and restore
// phases with cache defeat in between, then cross-rank reduction into the report.
#include "ckptbench/run.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "ckptbench/backend.hpp"
#include "ckptbench/buffers.hpp"
#include "ckptbench/error.hpp"
#include "ckptbench/fs.hpp"
#include "ckptbench/layout.hpp"
#include "ckptbench/lustre.hpp"
#include "ckptbench/metrics.hpp"
#include "ckptbench/model.hpp"
#include "ckptbench/report.hpp"
#include "ckptbench/sharding.hpp"
#include "ckptbench/transfer.hpp"
#include "ckptbench/units.hpp"

namespace ckpt {

namespace {

using json = nlohmann::json;

constexpr int kTagData = 4711;

volatile sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

// Parses CKPT_FAULT_INJECT ("key=value,...").
std::map<std::string, std::string> fault_spec() {
  std::map<std::string, std::string> kv;
  const char* env = std::getenv(kFaultEnv);
  if (!env || !*env) return kv;
  std::string s(env);
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    if (eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return kv;
}

bool fault_requested(int point, int rep, const char* phase, int rank) {
  auto kv = fault_spec();
  if (kv.empty()) return false;
  auto match = [&](const char* k, const std::string& v) { return !kv.count(k) || kv[k] == v; };
  return match("point", std::to_string(point)) && match("rep", std::to_string(rep)) &&
         match("phase", phase) && match("rank", std::to_string(rank));
}

// Test hook between save and restore ("phase=between,action=delete|truncate|corrupt"): damages
// this rank's first file the way a failing file system or a careless user would.
void damage_between_phases(const RankIo& io, const std::string& dir) {
  auto kv = fault_spec();
  if (io.files.empty() || io.files.front().extents.empty()) return;
  const FileSpec& f = io.files.front();
  std::string path = dir + "/" + f.path;
  std::error_code ec;
  if (kv["action"] == "delete") {
    std::filesystem::remove(path, ec);
  } else if (kv["action"] == "truncate") {
    std::filesystem::resize_file(path, f.extents.back().offset, ec);
  } else if (kv["action"] == "corrupt") {
    const Extent& e = f.extents.front();
    std::fstream fs(path, std::ios::in | std::ios::out | std::ios::binary);
    fs.seekg(static_cast<std::streamoff>(e.offset + e.length / 2));
    char c = 0;
    fs.read(&c, 1);
    c = static_cast<char>(c ^ 0x5A);
    fs.seekp(static_cast<std::streamoff>(e.offset + e.length / 2));
    fs.write(&c, 1);
  }
}

std::string hostname() {
  char h[256] = {0};
  gethostname(h, sizeof h - 1);
  return h;
}

// Error agreement after a step that may fail on some ranks. Every rank calls it with its own
// outcome; if any rank failed, every rank throws the lowest failing rank's message (prefixed
// with rank and host), with the same error kind. Non-blocking with a bound: a failed rank whose
// peers never arrive (stuck in a collective the failed rank left) aborts the job instead of
// hanging it.
enum class Outcome { ok = 0, io = 1, config = 2, timeout = 3 };

// Per-point deadline (monotonic seconds; 0 = none). Checked at every agreement (soft: the point
// stops cleanly at the next phase boundary) and by a watchdog thread (hard: a phase stuck far
// past the deadline ends the process, and with it the job, after saying why).
std::atomic<double> g_deadline{0};
std::atomic<int> g_deadline_point{0};
double g_timeout_s = 0;

struct Agreement {
  MPI_Comm comm;
  double grace_s;
  void operator()(Outcome mine, std::string msg, double phase_elapsed_s) const {
    double dl = g_deadline.load();
    if (mine == Outcome::ok && dl > 0 && now_s() > dl) {
      mine = Outcome::timeout;
      msg = "point " + std::to_string(g_deadline_point.load()) + " timed out: it ran longer than " +
            "timeout_s = " + std::to_string(static_cast<int>(g_timeout_s)) + " s";
    }
    if (mine == Outcome::ok && g_stop_signal != 0) {
      mine = Outcome::io;
      msg = std::string("interrupted by signal ") +
            std::to_string(static_cast<int>(g_stop_signal)) + " (" + strsignal(g_stop_signal) + ")";
    }
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    int local[2] = {static_cast<int>(mine), mine == Outcome::ok ? INT32_MAX : rank};
    int global[2] = {0, 0};
    int sendv[2] = {local[0], -local[1]};
    int recv[2];
    MPI_Request req;
    MPI_Iallreduce(sendv, recv, 2, MPI_INT, MPI_MAX, comm, &req);
    double limit = std::max(grace_s, 3 * phase_elapsed_s);
    double t0 = now_s();
    int done = 0;
    while (!done) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) break;
      if (mine != Outcome::ok && now_s() - t0 > limit) {
        std::fprintf(stderr,
                     "ckptbench: error: %s\nckptbench: other ranks did not reach the error check "
                     "within %.0f s (stuck in a collective?); aborting the job\n",
                     msg.c_str(), limit);
        std::fflush(stderr);
        MPI_Abort(comm, 1);
      }
      usleep(mine == Outcome::ok ? 50 : 1000);
    }
    global[0] = recv[0];
    global[1] = -recv[1];
    if (global[0] == 0) return;
    // Lowest failing rank broadcasts its message.
    int root = global[1];
    int len = rank == root ? static_cast<int>(msg.size()) : 0;
    MPI_Bcast(&len, 1, MPI_INT, root, comm);
    std::string text(static_cast<size_t>(len), '\0');
    if (rank == root) text = msg;
    MPI_Bcast(text.data(), len, MPI_CHAR, root, comm);
    // The error kind is that of the failing root (config errors exit 2).
    int kind = rank == root ? static_cast<int>(mine) : 0;
    MPI_Bcast(&kind, 1, MPI_INT, root, comm);
    if (kind == static_cast<int>(Outcome::config)) throw ConfigError(text);
    if (kind == static_cast<int>(Outcome::timeout)) throw TimeoutError(text);
    throw IoError(text);
  }
};

// Runs fn; converts exceptions into an outcome and message (prefixed with rank and host).
template <class Fn>
std::pair<Outcome, std::string> attempt(int rank, Fn&& fn) {
  try {
    fn();
    return {Outcome::ok, ""};
  } catch (const ConfigError& e) {
    return {Outcome::config, e.what()};
  } catch (const std::exception& e) {
    return {Outcome::io, "rank " + std::to_string(rank) + " (" + hostname() + "): " + e.what()};
  }
}

// DataPath: the pattern for this rank's extents; MPI messages for node-aggregated ones (one per
// piece of a transfer that another rank owns).
class RankDataPath final : public DataPath {
 public:
  RankDataPath(const Pattern& p, int rank, MPI_Comm comm, bool verify, const std::string& dir)
      : p_(p), rank_(rank), comm_(comm), verify_(verify), dir_(dir) {}

  std::byte* produce(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    std::byte* p = stage_pattern(p_, buf, f.id, t.offset, t.len);
    for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
      if (!remote(e)) return;
      recv(p + at, n, e.source, f.path, e.offset + pos);
      buf.taint(static_cast<uint64_t>(p - buf.data) + at,
                static_cast<uint64_t>(p - buf.data) + at + n);
    });
    return p;
  }

  void consume(const FileSpec& f, const Transfer& t, Buffer& buf) override {
    buf.taint(0, t.len);
    for_each_piece(f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t at) {
      if (remote(e))
        send(buf.data + at, n, e.source);
      else
        check(f.id, f.path, e, pos, buf.data + at, n);
    });
  }

  // Verifies n bytes at position pos of extent e (its payload part only, never the padding).
  void check(uint32_t file_id, const std::string& path, const Extent& e, uint64_t pos,
             const std::byte* data, uint64_t n) {
    if (!verify_) return;
    const uint64_t k = pos >= e.length ? 0 : std::min(n, e.length - pos);
    if (k == 0) return;
    auto bad = p_.check({data, k}, file_id, e.offset + pos);
    if (bad) {
      uint64_t off = e.offset + pos + *bad;
      throw IoError("verify failed: file '" + dir_ + "/" + path + "' byte offset " +
                    std::to_string(off) + " differs from what was written (extent at offset " +
                    std::to_string(e.offset) + ", " + std::to_string(e.length) + " bytes)");
    }
    bytes_verified_ += k;
  }

  void send(const std::byte* data, uint64_t len, int dest) {
    if (MPI_Send(data, static_cast<int>(len), MPI_BYTE, dest, kTagData, comm_) != MPI_SUCCESS)
      throw IoError("node aggregation: MPI_Send of " + std::to_string(len) + " bytes to rank " +
                    std::to_string(dest) + " failed");
  }

  void recv(std::byte* data, uint64_t len, int src, const std::string& path, uint64_t off) {
    MPI_Status st;
    int rc = MPI_Recv(data, static_cast<int>(len), MPI_BYTE, src, kTagData, comm_, &st);
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (rc != MPI_SUCCESS || static_cast<uint64_t>(got) != len)
      throw IoError("node aggregation: expected " + std::to_string(len) + " bytes from rank " +
                    std::to_string(src) + " for '" + path + "' offset " + std::to_string(off) +
                    ", got " + std::to_string(got));
  }

  const Pattern& pattern() const { return p_; }
  uint64_t bytes_verified() const { return bytes_verified_; }
  // Rank-shift restore: this rank reads files another rank wrote and verifies them itself (the
  // pattern is a function of file and offset, as in IOR's -C), so nothing is sent back and no
  // rank waits for a peer inside the timed phase. Node aggregation (the only other case of an
  // extent whose source is another rank) is refused with rank-shift.
  void set_rank_shift(bool on) { shifted_ = on; }

 private:
  bool remote(const Extent& e) const { return !shifted_ && e.source >= 0 && e.source != rank_; }

  const Pattern& p_;
  int rank_;
  MPI_Comm comm_;
  bool verify_;
  std::string dir_;
  uint64_t bytes_verified_ = 0;
  bool shifted_ = false;
};

// Non-leader side of node aggregation: stream this rank's pieces of the leader's files to the
// leader (save), or receive them back and verify (restore). The pieces are the leader's transfers
// cut at extent boundaries, so each message matches one the leader posts, in the same order.
// Staging memory: one pool buffer.
void remote_side(const IoPlan& plan, const RankIo& io, Phase phase, const PointConfig& pc,
                 Buffer& buf, RankDataPath& dp, PhaseRecorder& rec) {
  if (io.leader < 0 || io.remote.empty()) return;
  double t0 = now_s();
  std::vector<uint32_t> ids;
  for (const auto& r : io.remote)
    if (ids.empty() || ids.back() != r.file_id) ids.push_back(r.file_id);
  for (uint32_t id : ids) {
    const FileSpec* f = nullptr;
    for (const auto& lf : plan.ranks[static_cast<size_t>(io.leader)].files)
      if (lf.id == id) f = &lf;
    if (f == nullptr)
      throw IoError("node aggregation: leader file not in the plan (internal error)");
    for_each_transfer(*f, pc.block_size, pc.transfer, [&](const Transfer& t) {
      for_each_piece(*f, t, [&](const Extent& e, uint64_t pos, uint64_t n, uint64_t) {
        if (e.source != io.rank) return;
        if (phase == Phase::save) {
          dp.pattern().fill({buf.data, n}, f->id, e.offset + pos);
          buf.taint(0, n);
          dp.send(buf.data, n, io.leader);
        } else {
          dp.recv(buf.data, n, io.leader, f->path, e.offset + pos);
          buf.taint(0, n);
          dp.check(f->id, f->path, e, pos, buf.data, n);
        }
      });
    });
  }
  rec.add_time(Step::io, now_s() - t0);
}

struct NodeMap {
  std::vector<int> node_of_rank;
  int nodes = 1;
  bool emulated = false;
};

NodeMap node_map(MPI_Comm comm, int ranks_per_node) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  NodeMap nm;
  nm.node_of_rank.resize(size);
  if (ranks_per_node > 0) {
    for (int r = 0; r < size; r++) nm.node_of_rank[r] = r / ranks_per_node;
    nm.emulated = true;
  } else {
    MPI_Comm shm;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
    int leader = rank;
    MPI_Bcast(&leader, 1, MPI_INT, 0, shm);  // lowest world rank of the node (key = rank)
    MPI_Comm_free(&shm);
    std::vector<int> leaders(size);
    MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
    std::vector<int> uniq = leaders;
    std::sort(uniq.begin(), uniq.end());
    uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
    for (int r = 0; r < size; r++)
      nm.node_of_rank[r] =
          static_cast<int>(std::lower_bound(uniq.begin(), uniq.end(), leaders[r]) - uniq.begin());
  }
  nm.nodes = *std::max_element(nm.node_of_rank.begin(), nm.node_of_rank.end()) + 1;
  return nm;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

json summarize(const json& reps, const char* phase) {
  std::vector<double> bw, el;
  for (const auto& r : reps) {
    if (!r.contains(phase)) continue;
    bw.push_back(r[phase]["bandwidth_GiBps"].get<double>());
    el.push_back(r[phase]["elapsed_s"].get<double>());
  }
  if (bw.empty()) return json::object();
  auto mmm = [](const std::vector<double>& v) {
    return json{{"min", *std::min_element(v.begin(), v.end())},
                {"median", median(v)},
                {"max", *std::max_element(v.begin(), v.end())}};
  };
  return {{"bandwidth_GiBps", mmm(bw)}, {"elapsed_s", mmm(el)}, {"repetitions", bw.size()}};
}

json plan_json(const IoPlan& plan, const PointConfig& pc, const Parallelism& par, uint64_t align) {
  json j = plan_stats_json(plan.stats);
  j["transfers"] =
      transfer_stats_json(transfer_stats(plan, pc.block_size, pc.transfer), pc.transfer);
  j["virtual_ranks"] = virtual_world(par);
  j["parallelism"] = parallelism_to_json(par);
  j["align"] = align;
  j["any_shared_file"] = plan.any_shared;
  return j;
}

// A block size larger than every contiguous run changes nothing: say so.
std::string block_size_warning(const PointConfig& pc, const json& transfers) {
  const uint64_t run = transfers.value("largest_run_bytes", uint64_t{0});
  if (run == 0 || pc.block_size <= run) return "";
  return "block_size " + format_bytes(pc.block_size) + " exceeds the largest contiguous run (" +
         format_bytes(run) + ", transfer '" + transfer_mode_name(pc.transfer) +
         "'): every transfer is a whole run, so block size has no effect on this point";
}

// Resolves "auto" and checks that the chosen method can work here.
CacheMode resolve_cache(const PointConfig& pc, const NodeMap& nm, bool has_remote) {
  if (pc.cache != CacheMode::auto_) return pc.cache;
  if (pc.direct) return CacheMode::direct;
  if (can_drop_caches()) return CacheMode::drop_caches;
  if (nm.nodes > 1 && !nm.emulated && !has_remote) return CacheMode::rank_shift;
  return CacheMode::fadvise;
}

std::string progress_params(const PointConfig& pc) {
  if (pc.params.empty()) return layout_name(pc.layout.kind) + " " + pc.backend;
  std::string s;
  for (auto it = pc.params.begin(); it != pc.params.end(); ++it) {
    std::string v = it->is_string() ? it->get<std::string>() : it->dump();
    s += (s.empty() ? "" : " ") + it.key() + "=" + v;
  }
  return s;
}

struct Prepared {
  ModelDesc model;
  Parallelism par;
  NodeMap nodes;
  IoPlan plan;
  uint64_t align = 4096;
};

Prepared prepare_point(const PointConfig& pc, MPI_Comm comm, uint64_t align) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  Prepared p;
  p.model = build_model(pc.model);
  p.par = resolve_parallelism(pc.parallelism, size, p.model);
  p.nodes = node_map(comm, pc.ranks_per_node);
  p.align = align;
  p.plan = make_plan(plan_input(pc, p.model, p.par, align, size, p.nodes.node_of_rank));
  return p;
}

uint64_t point_align(const PointConfig& pc, uint64_t dio_align) {
  if (pc.align) return pc.align;
  return std::max<uint64_t>(4096, dio_align);
}

// The plan's directories below a repetition directory, created exclusively. Parents come before
// children: one depth level at a time, each level's directories shared out round-robin among
// the ranks, with an error agreement after each level.
void make_plan_dirs(const std::vector<std::string>& dirs, int dirfd, const std::string& shown,
                    int rank, int size, const Agreement& agree) {
  auto depth_of = [](const std::string& d) {
    return 1 + static_cast<size_t>(std::count(d.begin(), d.end(), '/'));
  };
  size_t max_depth = 0;
  for (const auto& d : dirs) max_depth = std::max(max_depth, depth_of(d));
  for (size_t depth = 1; depth <= max_depth; depth++) {
    auto [o, m] = attempt(rank, [&] {
      size_t k = 0;
      for (const auto& d : dirs) {
        if (depth_of(d) != depth) continue;
        if (static_cast<int>(k++ % static_cast<size_t>(size)) == rank)
          mkdir_beneath(dirfd, d, shown + "/" + d);
      }
    });
    agree(o, m, 0);
  }
}

// Stops a helper thread (watchdog, live line) on every way out of a scope: sets its stop flag,
// then joins it.
struct StopAndJoin {
  std::atomic<bool>& stop;
  std::thread& t;
  ~StopAndJoin() {
    stop = true;
    if (t.joinable()) t.join();
  }
};

// Runs a step that comes before any measurement. A failure ends the run without a document:
// bad input (ConfigError) exits 2, anything else (e.g. the run directory cannot be made) exits 1.
// True when the step failed (res holds the exit code and message).
template <class Fn>
bool failed_before_io(RunResult& res, Fn&& fn) {
  try {
    fn();
    return false;
  } catch (const ConfigError& e) {
    res.exit_code = 2;
    res.error = e.what();
  } catch (const Error& e) {
    res.exit_code = 1;
    res.error = e.what();
  }
  return true;
}

}  // namespace

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// rank's string on every rank of comm.
std::string bcast_string(std::string s, int root, MPI_Comm comm) {
  int n = static_cast<int>(s.size());
  MPI_Bcast(&n, 1, MPI_INT, root, comm);
  s.resize(static_cast<size_t>(n));
  MPI_Bcast(s.data(), n, MPI_CHAR, root, comm);
  return s;
}

// "/config/layout" -> "layout"; "/target" -> "target".
std::string pointer_key(const std::string& ptr) {
  std::string k = ptr.rfind("/config/", 0) == 0 ? ptr.substr(8) : ptr.substr(ptr.empty() ? 0 : 1);
  for (char& c : k)
    if (c == '/') c = '.';
  return k;
}

}  // namespace

void agree_on_config(MPI_Comm comm, const std::string& parse_error, const json& identity) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::string text = parse_error.empty() ? identity.dump() : std::string();
  uint64_t mine[2] = {parse_error.empty() ? 0u : 1u, fnv1a(text)};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size));
  MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm);
  // Bad input on some rank: its message (the lowest such rank's), on every rank.
  for (int r = 0; r < size; r++) {
    if (all[2 * static_cast<size_t>(r)] == 0) continue;
    std::string msg = bcast_string(r == rank ? parse_error : std::string(), r, comm);
    bool everywhere = true;
    for (int q = 0; q < size; q++) everywhere &= all[2 * static_cast<size_t>(q)] != 0;
    if (everywhere || r == 0) throw ConfigError(msg);
    throw ConfigError("rank " + std::to_string(r) + " (not rank 0): " + msg +
                      " (ranks read different config files?)");
  }
  std::vector<int> differ;
  for (int r = 1; r < size; r++)
    if (all[2 * static_cast<size_t>(r)] != all[1]) differ.push_back(r);
  if (differ.empty()) return;
  // Name the first key on which rank 0 and the first differing rank disagree.
  const int other = differ.front();
  json a = json::parse(bcast_string(rank == 0 ? text : std::string(), 0, comm));
  json b = json::parse(bcast_string(rank == other ? text : std::string(), other, comm));
  json patch = json::diff(a, b);
  if (patch.empty()) return;  // same document, different hash: cannot happen with one binary
  const std::string ptr = patch[0]["path"].get<std::string>();
  const json::json_pointer jp(ptr);
  auto shown = [&](const json& d) { return d.contains(jp) ? d.at(jp).dump() : "(not set)"; };
  std::string ranks;
  for (size_t i = 0; i < differ.size() && i < 8; i++)
    ranks += (i ? ", " : "") + std::to_string(differ[i]);
  if (differ.size() > 8) ranks += ", ...";
  throw ConfigError("the ranks were given different configurations: '" + pointer_key(ptr) +
                    "' is " + shown(a) + " on rank 0 but " + shown(b) + " on rank " +
                    std::to_string(other) + " (" + std::to_string(differ.size()) + " of " +
                    std::to_string(size) + " ranks differ from rank 0: " + ranks +
                    "); launch every rank with the same config contents, --target and options");
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // SIGUSR1/SIGUSR2: what `sbatch --signal=USR1@60` sends before the time limit (and mpirun
  // forwards); SIGHUP: a lost terminal or a batch system's hang-up. All stop like SIGTERM.
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP}) sigaction(sig, &sa, nullptr);
  // A write past `ulimit -f` then fails with EFBIG, reported with rank, file and offset, instead
  // of SIGXFSZ killing the rank without a word.
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGXFSZ, &ign, nullptr);
}

RunResult run_benchmark(const RunConfig& cfg, const RunOptions& opt, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Agreement agree{comm, 60.0};
  RunResult res;
  std::string target = opt.target_override.empty() ? cfg.target : opt.target_override;
  const bool say = rank == 0 && !opt.quiet;

  // ---- Bad input, found before any I/O: exit 2, no document, no file created. ----
  std::vector<Prepared> prepared;  // only kept for a dry run
  uint64_t need_bytes = 0;
  if (failed_before_io(res, [&] {
        auto [o, m] = attempt(rank, [&] {
          if (opt.dry_run || rank != 0) return;
          check_target(target, opt.force);
          if (!opt.output.empty()) {
            // The report must be writable before anything is measured: its directory (or the
            // nearest existing ancestor, where it would be created) must be writable.
            std::filesystem::path parent =
                std::filesystem::path(absolute_path(opt.output)).parent_path();
            while (!parent.empty() && !std::filesystem::exists(parent))
              parent = parent.parent_path();
            if (std::filesystem::is_directory(std::filesystem::path(absolute_path(opt.output))))
              throw ConfigError("--output '" + opt.output + "' is a directory; give a file name");
            if (parent.empty() || access(parent.c_str(), W_OK | X_OK) != 0)
              throw ConfigError("--output '" + opt.output + "': directory '" + parent.string() +
                                "' is not writable (" + errno_text(errno) + ")");
          }
        });
        agree(o, m, 0);
        // Every point's model, sharding and plan are checked up front (deterministic on all ranks).
        auto [o2, m2] = attempt(rank, [&] {
          for (size_t i = 0; i < cfg.points.size(); i++) {
            try {
              Prepared p = prepare_point(cfg.points[i], comm, point_align(cfg.points[i], 4096));
              need_bytes = cfg.keep ? need_bytes + p.plan.stats.file_bytes * cfg.repetitions
                                    : std::max(need_bytes, p.plan.stats.file_bytes);
              if (opt.dry_run) prepared.push_back(std::move(p));
            } catch (const ConfigError& e) {
              if (cfg.points.size() == 1) throw;
              throw ConfigError("point " + std::to_string(i + 1) + " " +
                                cfg.points[i].params.dump() + ": " + e.what());
            }
          }
        });
        agree(o2, m2, 0);
      }))
    return res;

  json doc = new_report();
  doc["config"] = cfg.resolved;
  if (opt.dry_run) {
    doc["dry_run"] = true;
    json pts = json::array();
    for (size_t i = 0; i < prepared.size(); i++) {
      const auto& pc = cfg.points[i];
      pts.push_back({{"index", i + 1},
                     {"params", pc.params},
                     {"config", pc.resolved},
                     {"plan", plan_json(prepared[i].plan, pc, prepared[i].par, prepared[i].align)},
                     {"bytes_per_repetition", 2 * prepared[i].plan.stats.file_bytes}});
    }
    doc["points"] = pts;
    doc["status"] = "ok";
    res.doc = rank == 0 ? doc : json::object();
    res.write_doc = true;  // printed, not written, by main for a dry run
    return res;
  }

  // ---- The run directory and the file system facts. ----
  target = absolute_path(target);
  std::string run_dir;
  FsInfo fsi;
  std::string odirect_why;
  bool odirect_ok = true;
  {
    auto [o, m] = attempt(rank, [&] {
      if (rank != 0) return;
      make_dirs(target);
      char stamp[64];
      std::string t = utc_now();
      std::snprintf(stamp, sizeof stamp, "ckptbench-%s-%d", t.c_str(), static_cast<int>(getpid()));
      for (char& c : stamp)
        if (c == ':') c = '-';
      run_dir = target + "/" + stamp;
      if (::mkdir(run_dir.c_str(), 0755) != 0)
        throw_errno("create run directory '" + run_dir + "'", errno);
      fsi = probe_fs(run_dir);
      dio_alignment(run_dir, fsi);
      odirect_ok = supports_odirect(run_dir, &odirect_why);
      // Free space: the largest point (or all of them with keep) plus 5% and 64 MiB of margin.
      uint64_t want = need_bytes + need_bytes / 20 + (64ull << 20);
      if (cfg.free_space_check && fsi.free_bytes < want) {
        ::rmdir(run_dir.c_str());
        throw ConfigError("target '" + target + "' has " + format_bytes(fsi.free_bytes) +
                          " free, the run needs " + format_bytes(want) +
                          " (largest point plus 5% margin); free space, lower model.scale, or "
                          "set \"free_space_check\": false to try anyway");
      }
    });
    // The run directory could not be made or examined: nothing was measured, no document.
    if (failed_before_io(res, [&] { agree(o, m, 0); })) return res;
  }
  // Share run_dir and fs facts.
  {
    std::string blob = rank == 0 ? json{{"dir", run_dir},
                                        {"fs", fsi.to_json()},
                                        {"odirect", odirect_ok},
                                        {"why", odirect_why}}
                                       .dump()
                                 : std::string();
    int len = static_cast<int>(blob.size());
    MPI_Bcast(&len, 1, MPI_INT, 0, comm);
    blob.resize(static_cast<size_t>(len));
    MPI_Bcast(blob.data(), len, MPI_CHAR, 0, comm);
    json j = json::parse(blob);
    run_dir = j["dir"];
    fsi.type = j["fs"]["type"];
    fsi.dio_offset_align = j["fs"]["dio_offset_align"];
    fsi.dio_mem_align = j["fs"]["dio_mem_align"];
    odirect_ok = j["odirect"];
    odirect_why = j["why"];
  }
  // Everything the run creates is made relative to the run directory, held open here.
  DirFd run_fd;
  {
    auto [o, m] = attempt(rank, [&] { run_fd = DirFd(run_dir); });
    if (failed_before_io(res, [&] { agree(o, m, 0); })) return res;
  }
  // Checks that need the file system: still before any benchmark I/O.
  {
    std::string err;
    for (size_t i = 0; i < cfg.points.size() && err.empty(); i++) {
      const auto& pc = cfg.points[i];
      std::string where = cfg.points.size() > 1 ? "point " + std::to_string(i + 1) + ": " : "";
      if (pc.direct && !odirect_ok)
        err = where + "'direct': true, but the target's file system (" + fsi.type +
              ") refuses O_DIRECT (" + odirect_why + "); set \"direct\": false";
      else if (pc.direct && pc.block_size % fsi.dio_offset_align != 0)
        err = where + "'block_size': " + std::to_string(pc.block_size) +
              " is not a multiple of the target's direct-I/O alignment " +
              std::to_string(fsi.dio_offset_align) + " ('direct' is true)";
      else if (pc.direct && pc.align && pc.align % fsi.dio_offset_align != 0)
        err = where + "'align': " + std::to_string(pc.align) +
              " is not a multiple of the target's direct-I/O alignment " +
              std::to_string(fsi.dio_offset_align);
      else if (auto e = striping_error(run_dir, stripe_request(pc), fsi.type, cfg.strict);
               !e.empty())
        err = where + e;
    }
    if (!err.empty()) {
      if (rank == 0) ::rmdir(run_dir.c_str());
      res.exit_code = 2;
      res.error = err;
      return res;
    }
  }

  doc["environment"] = capture_environment(target, comm);
  doc["environment"]["run_dir"] = run_dir;
  doc["environment"]["file_system"] = fsi.to_json();
  doc["environment"]["backends"] = probe_backends();
  doc["points"] = json::array();
  doc["status"] = "running";

  const int npoints = static_cast<int>(cfg.points.size());
  // The point being run and its finished repetitions, kept for the report if it fails.
  json current = nullptr;
  g_timeout_s = cfg.timeout_s;
  std::atomic<bool> watchdog_stop{false};
  std::thread watchdog;
  if (cfg.timeout_s > 0) {
    const double grace = std::max(30.0, cfg.timeout_s);
    watchdog = std::thread([&watchdog_stop, grace, rank] {
      while (!watchdog_stop.load()) {
        double dl = g_deadline.load();
        if (dl > 0 && now_s() > dl + grace) {
          std::fprintf(stderr,
                       "ckptbench: error (rank %d): point %d is stuck %.0f s past its timeout_s "
                       "(%.0f s) inside a phase; ending the job. The report on disk holds the "
                       "finished repetitions.\n",
                       rank, g_deadline_point.load(), grace, g_timeout_s);
          std::fflush(stderr);
          std::_Exit(3);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  StopAndJoin join_watchdog{watchdog_stop, watchdog};
  try {
    for (int pi = 0; pi < npoints; pi++) {
      const PointConfig& pc = cfg.points[pi];
      const uint64_t align = point_align(pc, fsi.dio_offset_align);
      MPI_Barrier(comm);
      g_deadline_point = pi + 1;
      g_deadline = cfg.timeout_s > 0 ? now_s() + cfg.timeout_s : 0.0;
      json pj = {
          {"index", pi + 1}, {"params", pc.params}, {"config", pc.resolved}, {"status", "running"}};
      json warnings = json::array();
      Prepared prep;
      std::unique_ptr<Backend> backend;
      {
        auto [o, m] = attempt(rank, [&] {
          prep = prepare_point(pc, comm, align);
          backend = find_backend(pc.backend).create(pc);
          if (!backend) throw ConfigError("backend '" + pc.backend + "' is not available here");
        });
        agree(o, m, 0);
      }
      const IoPlan& plan = prep.plan;
      const RankIo& mine = plan.ranks[rank];
      bool has_remote = false;
      for (const auto& r : plan.ranks) has_remote |= !r.remote.empty();
      CacheMode cache = resolve_cache(pc, prep.nodes, has_remote);
      if (cache == CacheMode::rank_shift && has_remote)
        throw ConfigError("'cache': \"rank-shift\" cannot be used with layout 'aggregated-node'");
      if (cache == CacheMode::rank_shift && (prep.nodes.nodes < 2 || prep.nodes.emulated))
        warnings.push_back(
            "cache rank-shift on a single real node: restore reads another rank's files from the "
            "same page cache, so it does not defeat the cache");
      if (cache == CacheMode::none)
        warnings.push_back(
            "cache 'none': restore may be served from the page cache (not disk speed)");
      if (pc.sync == SyncPolicy::none && !pc.direct)
        warnings.push_back(
            "sync 'none' with buffered I/O: save time ends when data reaches the page cache, "
            "not the disk");
      if (pc.sync == SyncPolicy::none && pc.direct)
        warnings.push_back(
            "sync 'none' with O_DIRECT: completed writes may still sit in a volatile disk cache");
      // The point directory, striped (on Lustre) before any file exists in it; repetition
      // directories and files inherit the layout.
      char point_name[32];
      std::snprintf(point_name, sizeof point_name, "point-%03d", pi + 1);
      const std::string point_dir = run_dir + "/" + point_name;
      {
        json striping;
        std::string sw;
        auto [o, m] = attempt(rank, [&] {
          if (rank != 0) return;
          mkdir_beneath(run_fd.get(), point_name, point_dir);
          sw = apply_striping(point_dir, stripe_request(pc), fsi.type, cfg.strict, striping);
        });
        agree(o, m, 0);
        if (!sw.empty()) warnings.push_back(sw);
        pj["striping"] = striping;
      }
      if (rank == 0)
        for (const auto& w : warnings)
          std::fprintf(stderr, "ckptbench: warning: %s\n", w.get<std::string>().c_str());

      pj["plan"] = plan_json(plan, pc, prep.par, align);
      if (std::string w = block_size_warning(pc, pj["plan"]["transfers"]); !w.empty()) {
        if (rank == 0) std::fprintf(stderr, "ckptbench: warning: %s\n", w.c_str());
        warnings.push_back(w);
      }
      std::vector<int> vr_run;
      for (const auto& r : plan.ranks)
        if (!r.vranks.empty()) vr_run.insert(vr_run.end(), r.vranks.begin(), r.vranks.end());
      pj["plan"]["virtual_ranks_run"] = vr_run.size();
      pj["plan"]["real_ranks"] = size;
      pj["plan"]["nodes"] = prep.nodes.nodes;
      pj["plan"]["nodes_emulated"] = prep.nodes.emulated;

      const size_t nbuf = static_cast<size_t>(std::max(1, pc.queue_depth));
      Pattern pattern(Pattern::period_for(pc.block_size),
                      0x5EED0000ull + static_cast<uint64_t>(pi));
      BufferPool pool(nbuf, pc.block_size, std::max<uint64_t>(fsi.dio_mem_align, 4096),
                      pattern.period());

      json reps = json::array();
      for (int rep = 0; rep < cfg.repetitions; rep++) {
        char sub[64];
        std::snprintf(sub, sizeof sub, "point-%03d/rep-%02d", pi + 1, rep + 1);
        const std::string dir = run_dir + "/" + sub;
        // Directories (untimed), each made exclusively and without following links: rank 0
        // makes the repetition directory, then the plan's directories are shared out among the
        // ranks, one depth level at a time (parents before children).
        DirFd rep_fd;
        {
          auto [o, m] = attempt(rank, [&] {
            if (rank == 0) mkdir_beneath(run_fd.get(), sub, dir);
          });
          agree(o, m, 0);
          auto [o1, m1] = attempt(rank, [&] {
            int fd = open_beneath(run_fd.get(), sub, O_RDONLY | O_DIRECTORY);
            if (fd < 0) throw IoError("open directory '" + dir + "': " + beneath_error(-fd));
            rep_fd = DirFd(fd, dir);
          });
          agree(o1, m1, 0);
          make_plan_dirs(plan.dirs, rep_fd.get(), dir, rank, size, agree);
        }
        json rj = {{"repetition", rep + 1}};
        RankDataPath dp(pattern, rank, comm, cfg.verify, dir);
        auto run_phase = [&](Phase phase, const RankIo& io) {
          PhaseRecorder rec;
          PhaseContext ctx;
          ctx.phase = phase;
          ctx.cfg = &pc;
          ctx.plan = &plan;
          ctx.model = &prep.model;
          ctx.io = &io;
          ctx.dir = dir;
          ctx.dirfd = rep_fd.get();
          ctx.comm = comm;
          ctx.pool = &pool;
          ctx.data = &dp;
          ctx.rec = &rec;
          ctx.align = align;
          ctx.dio_align = fsi.dio_offset_align;
          ctx.verify = cfg.verify && phase == Phase::restore;
          // Untimed: every buffer holds the pattern's base again, so a save stages its
          // transfers by writing stamps only.
          if (phase == Phase::save) pool.prefill(pattern);
          MPI_Barrier(comm);
          rec.start_s = now_s();
          // On a terminal, rank 0 shows a live line: its own bytes done and the bandwidth of the
          // last half second.
          std::atomic<bool> live_stop{false};
          std::thread live;
          if (rank == 0 && !opt.quiet && opt.live) {
            const double total = static_cast<double>(io.transfer_bytes);
            const char* pname = phase == Phase::save ? "save" : "restore";
            live = std::thread([&rec, &live_stop, total, pname, pi, npoints] {
              double last_b = 0, last_t = now_s();
              while (!live_stop.load()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(500));
                if (live_stop.load()) break;
                double t = now_s(), b = static_cast<double>(rec.bytes());
                double rate = t > last_t ? (b - last_b) / (t - last_t) : 0;
                last_b = b;
                last_t = t;
                std::printf("\r[%d/%d] %-7s rank 0: %.1f of %.1f MiB, now %.3f GiB/s   ", pi + 1,
                            npoints, pname, b / 1048576.0, total / 1048576.0, rate / 1073741824.0);
                std::fflush(stdout);
              }
              std::printf("\r\033[K");
              std::fflush(stdout);
            });
          }
          StopAndJoin stop_live{live_stop, live};
          auto [o, m] = attempt(rank, [&] {
            const char* pname = phase == Phase::save ? "save" : "restore";
            if (fault_requested(pi + 1, rep + 1, pname, rank))
              throw IoError(std::string("injected fault (") + kFaultEnv + ") in " + pname +
                            " of point " + std::to_string(pi + 1));
            backend->run(ctx);
            remote_side(plan, io, phase, pc, pool.at(0), dp, rec);
          });
          rec.end_s = now_s();
          agree(o, m, rec.end_s - rec.start_s);
          return reduce_phase(rec, comm);
        };
        PhaseResult save = run_phase(Phase::save, mine);
        rj["save"] = save.to_json();
        // Distinct files (a shared file counts once); per-rank handles are counted separately.
        rj["save"]["rank_file_handles"] = save.files;
        rj["save"]["files"] = plan.stats.files;
        rj["save"]["sync"] = sync_name(pc.sync);

        // Cache defeat (untimed), then measure what is still resident.
        json cj = {{"method", cache_name(cache)}};
        {
          auto [o, m] = attempt(rank, [&] {
            if (cache == CacheMode::fadvise)
              for (const auto& f : mine.files) fadvise_dontneed(dir + "/" + f.path);
          });
          agree(o, m, 0);
          if (cache == CacheMode::drop_caches) {
            MPI_Barrier(comm);
            bool leader =
                rank == 0 || prep.nodes.node_of_rank[rank] != prep.nodes.node_of_rank[rank - 1];
            auto [o2, m2] = attempt(rank, [&] {
              if (leader && !prep.nodes.emulated) {
                std::string why = drop_caches();
                if (!why.empty()) throw IoError("cache 'drop-caches': " + why);
              } else if (rank == 0) {
                std::string why = drop_caches();
                if (!why.empty()) throw IoError("cache 'drop-caches': " + why);
              }
            });
            agree(o2, m2, 0);
          }
          // Residency of the files this rank will read (sampled: at most 256 files per rank).
          const RankIo& rio = cache == CacheMode::rank_shift
                                  ? plan.ranks[(rank + std::max(1, size / prep.nodes.nodes)) % size]
                                  : mine;
          uint64_t res_b = 0, tot_b = 0;
          size_t sampled = 0;
          for (const auto& f : rio.files) {
            if (sampled++ >= 256) break;
            uint64_t rb = 0, fb = 0;
            if (resident_fraction(dir + "/" + f.path, &rb, &fb) >= 0) {
              res_b += rb;
              tot_b += fb;
            }
          }
          uint64_t loc[2] = {res_b, tot_b}, glob[2];
          MPI_Allreduce(loc, glob, 2, MPI_UINT64_T, MPI_SUM, comm);
          cj["resident_bytes_sampled"] = glob[0];
          cj["file_bytes_sampled"] = glob[1];
          cj["resident_fraction"] =
              glob[1] ? static_cast<double>(glob[0]) / static_cast<double>(glob[1]) : 0.0;
          cj["bypassed_by_o_direct"] = pc.direct;
        }
        rj["cache"] = cj;

        const RankIo& rio = cache == CacheMode::rank_shift
                                ? plan.ranks[(rank + std::max(1, size / prep.nodes.nodes)) % size]
                                : mine;
        if (fault_requested(pi + 1, rep + 1, "between", rank)) damage_between_phases(mine, dir);
        dp.set_rank_shift(cache == CacheMode::rank_shift);
        PhaseResult restore = run_phase(Phase::restore, rio);
        rj["restore"] = restore.to_json();
        rj["restore"]["rank_file_handles"] = restore.files;
        rj["restore"]["files"] = plan.stats.files;
        uint64_t v = dp.bytes_verified(), vsum = 0;
        MPI_Allreduce(&v, &vsum, 1, MPI_UINT64_T, MPI_SUM, comm);
        if (prep.nodes.nodes > 1) {
          rj["save"]["per_node"] =
              per_node_bandwidth(prep.nodes.node_of_rank, save.rank_bytes, save.rank_times_s);
          rj["restore"]["per_node"] =
              per_node_bandwidth(prep.nodes.node_of_rank, restore.rank_bytes, restore.rank_times_s);
        }
        if (rep == 0 && rank == 0 && pj["striping"].value("status", "") == "applied") {
          std::vector<std::string> files;
          for (const auto& r : plan.ranks)
            for (const auto& f : r.files)
              if (f.create) files.push_back(dir + "/" + f.path);
          json got = read_striping(files, 16, fsi.type);
          pj["striping"]["obtained"] = got;
          std::string w = stripe_mismatch(stripe_request(pc), got);
          if (!w.empty()) {
            std::fprintf(stderr, "ckptbench: warning: %s\n", w.c_str());
            warnings.push_back(w);
          }
        }
        rj["verified"] = cfg.verify;
        rj["bytes_verified"] = vsum;
        rj["restore"]["verify_inline"] = cfg.verify;
        reps.push_back(rj);
        current = pj;
        current["repetitions"] = reps;
        current["warnings"] = warnings;

        if (say)
          std::printf(
              "[%d/%d] %s rep %d/%d: save %.3f GiB/s (%.3f s), restore %.3f GiB/s (%.3f s)\n",
              pi + 1, npoints, progress_params(pc).c_str(), rep + 1, cfg.repetitions,
              save.bandwidth_GiBps(), save.elapsed_s, restore.bandwidth_GiBps(), restore.elapsed_s);
        if (say) std::fflush(stdout);
        // Every rank passes here; only rank 0 writes, and all agree on whether it worked.
        auto [po, pm] = attempt(rank, [&] {
          if (rank != 0 || !opt.on_progress) return;
          json partial = doc;
          json cur = pj;
          cur["repetitions"] = reps;
          cur["status"] = "incomplete";
          partial["points"].push_back(cur);
          partial["status"] = "failed";
          partial["error"] =
              "interrupted: the run did not finish (this document is rewritten when it does)";
          partial["points_completed"] = doc["points"].size();
          opt.on_progress(partial);
        });
        agree(po, pm, 0);
        // Clean up (untimed) unless kept.
        MPI_Barrier(comm);
        if (!cfg.keep) {
          auto [o, m] = attempt(rank, [&] {
            if (rank == 0) remove_tree(dir, run_dir);
          });
          agree(o, m, 0);
        }
      }
      pj["repetitions"] = reps;
      pj["summary"] = {{"save", summarize(reps, "save")}, {"restore", summarize(reps, "restore")}};
      // What the kernel really backed with huge pages (the least of any rank; -1 unknown).
      int64_t huge_min = pool.huge_page_bytes();
      MPI_Allreduce(MPI_IN_PLACE, &huge_min, 1, MPI_INT64_T, MPI_MIN, comm);
      // Only transfers above 512 KiB can need more than 128 scattered 4 KiB pages, the smallest
      // common max_segments of block devices (virtio-blk: 254); smaller ones are never split.
      constexpr uint64_t kSplitRisk = 512u << 10;
      if (pc.direct && huge_min >= 0 && static_cast<uint64_t>(huge_min) < pool.total_bytes() &&
          pc.block_size > kSplitRisk)
        warnings.push_back(
            "only " + format_bytes(static_cast<uint64_t>(huge_min)) + " of the " +
            format_bytes(pool.total_bytes()) +
            " buffer pool is backed by huge pages (transparent huge pages off or memory "
            "fragmented): O_DIRECT transfers from scattered 4 KiB pages can exceed the device's "
            "segment limit and be split, which lowers bandwidth on some devices");
      pj["settings"] = {
          {"align", align},
          {"pad_to_align", pc.direct || pc.transfer == TransferMode::stream},
          {"transfer", transfer_mode_name(pc.transfer)},
          {"dio_offset_align", fsi.dio_offset_align},
          {"buffer_pool_bytes", pool.total_bytes()},
          {"buffers", pool.count()},
          {"buffer_huge_pages", pool.huge_pages()},
          {"buffer_huge_page_bytes", huge_min},
          {"cache", cache_name(cache)},
          {"sync", sync_name(pc.sync)},
          {"preallocate", pc.preallocate},
          {"pattern",
           {{"period_bytes", pattern.period()},
            {"stamp_every_bytes", Pattern::kStampEvery},
            {"function_of", "file and absolute file offset (any transfer cut verifies)"},
            {"fill",
             "pool prefilled before each save, untimed; 16-byte stamp per 4 KiB inside the timed "
             "save (a transfer at an offset that is not a multiple of 4 KiB is copied in full)"},
            {"verify", cfg.verify ? "inline in the timed restore" : "off"}}},
          {"backend", backend->describe()}};
      {
        // Peak resident memory of the rank processes so far (cumulative over the run's points).
        struct rusage ru {};
        getrusage(RUSAGE_SELF, &ru);
        double rss = static_cast<double>(ru.ru_maxrss) * 1024.0, mn = 0, mx = 0;
        MPI_Allreduce(&rss, &mn, 1, MPI_DOUBLE, MPI_MIN, comm);
        MPI_Allreduce(&rss, &mx, 1, MPI_DOUBLE, MPI_MAX, comm);
        pj["memory"] = {{"peak_rss_bytes", {{"min", mn}, {"max", mx}}},
                        {"buffer_pool_bytes", pool.total_bytes()},
                        {"note", "peak since process start, so it covers earlier points too"}};
      }
      pj["warnings"] = warnings;
      pj["status"] = "ok";
      current = nullptr;
      g_deadline = 0.0;
      doc["points"].push_back(pj);
      if (!cfg.keep && rank == 0) {
        std::error_code ec;
        std::filesystem::remove(point_dir, ec);  // empty by now; never removes foreign files
      }
    }
    doc["status"] = "ok";
  } catch (const Error& e) {
    g_deadline = 0.0;
    res.exit_code = dynamic_cast<const ConfigError*>(&e) ? 2 : 1;
    res.error = e.what();
    doc["status"] = "failed";
    doc["error"] = e.what();
    if (dynamic_cast<const TimeoutError*>(&e)) doc["timed_out_point"] = g_deadline_point.load();
    doc["points_completed"] = doc["points"].size();
    if (!current.is_null()) {
      // The failed point keeps the repetitions it finished.
      current["status"] = "failed";
      current["error"] = e.what();
      doc["points"].push_back(current);
    }
    // Every rank agreed on this error, so a barrier is safe; then remove what this run made.
    MPI_Barrier(comm);
    if (!cfg.keep && rank == 0) {
      try {
        remove_tree(run_dir, target);
      } catch (const Error&) {
      }
    }
  }
  if (!cfg.keep && rank == 0) {
    std::error_code ec;
    std::filesystem::remove(run_dir, ec);  // only if empty: never deletes what we did not make
  }
  doc["finished_at"] = utc_now();
  res.write_doc = true;
  res.doc = rank == 0 ? doc : json::object();
  return res;
}

}  // namespace ckpt
