#include "ckptbench/mpi/agreement.hpp"

#include <semaphore.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/metrics.hpp"

namespace ckpt {

namespace {
// A limit as given: 0.5 prints "0.5", 30 prints "30" (never rounded to a whole "0 s").
std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}
}  // namespace

namespace {
// The only mutable file-scope state: what a signal handler may touch.
volatile sig_atomic_t g_stop_signal = 0;
// Posted by the handler (sem_post is async-signal-safe) so that a waiter wakes at once.
sem_t g_stop_sem;
const bool g_stop_sem_ok = sem_init(&g_stop_sem, 0, 0) == 0;
extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  if (g_stop_sem_ok) sem_post(&g_stop_sem);
}
}  // namespace

int stop_signal() { return static_cast<int>(g_stop_signal); }

namespace {
std::atomic<bool> g_ending_job{false};
}  // namespace

void mark_ending_job() { g_ending_job = true; }
bool ending_job() { return g_ending_job.load(); }

int wait_stop_signal(double timeout_s) {
  if (const int sig = stop_signal(); sig != 0) return sig;
  if (!g_stop_sem_ok) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(timeout_s, 0.05)));
    return stop_signal();
  }
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const auto ns = static_cast<long long>(timeout_s * 1e9) + ts.tv_nsec;
  ts.tv_sec += static_cast<time_t>(ns / 1000000000LL);
  ts.tv_nsec = static_cast<long>(ns % 1000000000LL);
  while (sem_timedwait(&g_stop_sem, &ts) != 0 && errno == EINTR && stop_signal() == 0) {
  }
  return stop_signal();
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // SIGUSR1/SIGUSR2: what `sbatch --signal=USR1@60` sends before the time limit (and mpirun
  // forwards); SIGHUP: a lost terminal or a batch system's hang-up. All stop like SIGTERM.
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP}) sigaction(sig, &sa, nullptr);
}

std::string bcast_string(std::string s, int root, MPI_Comm comm) {
  int n = static_cast<int>(s.size());
  MPI_Bcast(&n, 1, MPI_INT, root, comm);
  s.resize(static_cast<size_t>(n));
  MPI_Bcast(s.data(), n, MPI_CHAR, root, comm);
  return s;
}

std::string cbor_bytes(const nlohmann::json& j) {
  const std::vector<std::uint8_t> v = nlohmann::json::to_cbor(j);
  return std::string(v.begin(), v.end());
}

nlohmann::json bcast_json(const nlohmann::json& j, int root, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string bytes;
  if (rank == root) bytes = cbor_bytes(j);
  bytes = bcast_string(std::move(bytes), root, comm);
  return nlohmann::json::from_cbor(bytes);
}

std::string hostname() {
  char h[256] = {0};
  gethostname(h, sizeof h - 1);
  return h;
}

void Deadline::arm(int point, double timeout_s) {
  timeout_s_ = timeout_s;
  point_ = point;
  at_ = timeout_s > 0 ? now_s() + timeout_s : 0.0;
}

bool Deadline::passed() const {
  const double at = at_.load();
  return at > 0 && now_s() > at;
}

Backoff::Backoff(double spin_s, long max_us) : t0_(now_s()), spin_s_(spin_s), max_us_(max_us) {}

double Backoff::waited_s() const { return now_s() - t0_; }

void Backoff::pause() {
  if (waited_s() < spin_s_) return;
  usleep(static_cast<useconds_t>(us_));
  us_ = std::min(max_us_, us_ * 2);
}

bool StallGuard::expired(double waited_s, int rank) const {
  // The other ranks wait longer than rank 0 so that rank 0, while alive, prints the message and
  // rewrites the report before anybody aborts the job: half the limit, at least 5 s (a report
  // write on a loaded node or under a sanitizer), at most 60 s.
  const double margin = rank == 0 ? 0.0 : std::clamp(limit_s / 2, 5.0, 60.0);
  return limit_s > 0 && waited_s > limit_s + margin;
}

void StallGuard::fire(MPI_Comm comm, int rank, double waited_s, const std::string& what) const {
  std::string msg = "rank ";
  msg += std::to_string(rank);
  msg += " (" + hostname() + "): stalled: waited " + std::to_string(static_cast<long>(waited_s));
  msg += " s " + what + ", longer than stall_timeout_s = ";
  msg += std::to_string(static_cast<long>(limit_s));
  msg += " s (a rank stopped, hung in I/O, or held in a debugger?); ending the job";
  std::fprintf(stderr, "ckptbench: error: %s\n", msg.c_str());
  std::fflush(stderr);
  mark_ending_job();
  if (on_stall) {
    try {
      on_stall(msg);
    } catch (...) {
    }
  }
  MPI_Abort(comm, 4);
  std::_Exit(4);  // not reached
}

void wait_guarded(MPI_Request& req, MPI_Comm comm, const StallGuard& g, const std::string& what,
                  double spin_s) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  Backoff b(spin_s);
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (g.expired(b.waited_s(), rank)) g.fire(comm, rank, b.waited_s(), what);
    b.pause();
  }
}

void guarded_barrier(MPI_Comm comm, const StallGuard& g, const std::string& what) {
  MPI_Request req;
  MPI_Ibarrier(comm, &req);
  wait_guarded(req, comm, g, what);
}

void guarded_allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm, const StallGuard& g, const std::string& what) {
  MPI_Request req;
  MPI_Iallreduce(send, recv, count, type, op, comm, &req);
  wait_guarded(req, comm, g, what);
}

void Agreement::operator()(Outcome mine, std::string msg, double phase_elapsed_s) const {
  if (mine == Outcome::ok && deadline != nullptr && deadline->passed()) {
    mine = Outcome::timeout;
    msg = "point " + std::to_string(deadline->point()) + " timed out: it ran longer than " +
          "timeout_s = " + format_seconds(deadline->timeout_s()) + " s";
  }
  if (mine == Outcome::ok && stop_signal() != 0) {
    mine = Outcome::io;
    msg = std::string("interrupted by signal ") + std::to_string(static_cast<int>(stop_signal())) +
          " (" + strsignal(stop_signal()) + ")";
  }
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // {any failure, -(lowest failing rank), -(lowest rank failing on its own, not Outcome::peer)}
  const bool failed = mine != Outcome::ok, own = failed && mine != Outcome::peer;
  int sendv[3] = {failed ? 1 : 0, failed ? -rank : -INT32_MAX, own ? -rank : -INT32_MAX};
  int recv[3];
  MPI_Request req;
  MPI_Iallreduce(sendv, recv, 3, MPI_INT, MPI_MAX, comm, &req);
  double limit = std::max(grace_s, 3 * phase_elapsed_s);
  Backoff b;
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (failed && b.waited_s() > limit) {
      std::fprintf(stderr,
                   "ckptbench: error: %s\nckptbench: other ranks did not reach the error check "
                   "within %.0f s (stuck in a collective?); aborting the job\n",
                   msg.c_str(), limit);
      std::fflush(stderr);
      MPI_Abort(comm, 1);
    }
    if (!failed && stall.expired(b.waited_s(), rank)) {
      std::string what = "at an error check";
      if (deadline != nullptr && deadline->point() > 0)
        what += " in point " + std::to_string(deadline->point());
      what += " for ranks that did not reach it (which ones cannot be told from here)";
      stall.fire(comm, rank, b.waited_s(), what);
    }
    b.pause();
  }
  if (recv[0] == 0) return;
  // The lowest rank with an error of its own broadcasts its message (else the lowest failing).
  const int root = recv[2] != -INT32_MAX ? -recv[2] : -recv[1];
  const std::string text = bcast_string(rank == root ? msg : std::string(), root, comm);
  // The error kind is that of the failing root (config errors exit 2).
  int kind = rank == root ? static_cast<int>(mine) : 0;
  MPI_Bcast(&kind, 1, MPI_INT, root, comm);
  if (kind == static_cast<int>(Outcome::config)) throw ConfigError(text);
  if (kind == static_cast<int>(Outcome::timeout)) throw TimeoutError(text);
  throw IoError(text);
}

Watchdog::Watchdog(const Deadline& d, double timeout_s, int rank)
    : d_(d), timeout_s_(timeout_s), rank_(rank) {}

void Watchdog::start() {
  if (timeout_s_ <= 0) return;
  const double grace = std::max(30.0, timeout_s_);
  // Rank 0 speaks first; the others 5 s later, by when rank 0's exit has usually ended the job
  // (the message once, not once per rank).
  const double margin = rank_ == 0 ? 0.0 : 5.0;
  thread_ = start_thread("the timeout_s watchdog", [this, grace, margin] {
    const Deadline& d = d_;
    const int rank = rank_;
    while (!stop_.load()) {
      const double at = d.at();
      if (at > 0 && now_s() > at + grace + margin) {
        std::fprintf(stderr,
                     "ckptbench: error (rank %d): point %d is stuck %.0f s past its timeout_s "
                     "(%g s) inside a phase; ending the job. The report on disk holds the "
                     "finished repetitions.\n",
                     rank, d.point(), grace, d.timeout_s());
        std::fflush(stderr);
        std::_Exit(3);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
}

Watchdog::~Watchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace ckpt
