#include "ckptbench/agreement.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ckptbench/error.hpp"
#include "ckptbench/metrics.hpp"
#include "ckptbench/run.hpp"

namespace ckpt {

namespace {
// The only mutable file-scope state: what a signal handler may touch.
volatile sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }
}  // namespace

int stop_signal() { return static_cast<int>(g_stop_signal); }

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

void Agreement::operator()(Outcome mine, std::string msg, double phase_elapsed_s) const {
  if (mine == Outcome::ok && deadline != nullptr && deadline->passed()) {
    mine = Outcome::timeout;
    msg = "point " + std::to_string(deadline->point()) + " timed out: it ran longer than " +
          "timeout_s = " + std::to_string(static_cast<int>(deadline->timeout_s())) + " s";
  }
  if (mine == Outcome::ok && stop_signal() != 0) {
    mine = Outcome::io;
    msg = std::string("interrupted by signal ") + std::to_string(static_cast<int>(stop_signal())) +
          " (" + strsignal(stop_signal()) + ")";
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
  const std::string text = bcast_string(rank == root ? msg : std::string(), root, comm);
  // The error kind is that of the failing root (config errors exit 2).
  int kind = rank == root ? static_cast<int>(mine) : 0;
  MPI_Bcast(&kind, 1, MPI_INT, root, comm);
  if (kind == static_cast<int>(Outcome::config)) throw ConfigError(text);
  if (kind == static_cast<int>(Outcome::timeout)) throw TimeoutError(text);
  throw IoError(text);
}

Watchdog::Watchdog(const Deadline& d, double timeout_s, int rank) {
  if (timeout_s <= 0) return;
  const double grace = std::max(30.0, timeout_s);
  thread_ = std::thread([this, &d, grace, rank] {
    while (!stop_.load()) {
      const double at = d.at();
      if (at > 0 && now_s() > at + grace) {
        std::fprintf(stderr,
                     "ckptbench: error (rank %d): point %d is stuck %.0f s past its timeout_s "
                     "(%.0f s) inside a phase; ending the job. The report on disk holds the "
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
