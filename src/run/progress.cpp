// What a run shows while it runs: the live line of a phase, one line per repetition, and the
// partial document rewritten after every repetition.
#include "ckptbench/run/progress.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ckptbench/base/error.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/run/execution.hpp"

namespace ckpt {

std::string progress_params(const PointConfig& pc) {
  if (pc.params.empty()) return layout_name(pc.layout.kind) + " " + pc.backend;
  std::string s;
  for (auto it = pc.params.begin(); it != pc.params.end(); ++it) {
    std::string v = it->is_string() ? it->get<std::string>() : it->dump();
    s += (s.empty() ? "" : " ") + it.key() + "=" + v;
  }
  return s;
}

LiveLine::LiveLine(bool on, const PhaseRecorder& rec, const char* phase, int point, int points,
                   uint64_t total_bytes) {
  if (!on) return;
  const double total = static_cast<double>(total_bytes);
  try {
    t_ = start_thread("the live line", [this, &rec, total, phase, point, points] {
      double last_b = 0, last_t = now_s();
      while (!stop_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        if (stop_.load()) break;
        double t = now_s(), b = static_cast<double>(rec.bytes());
        double rate = t > last_t ? (b - last_b) / (t - last_t) : 0;
        last_b = b;
        last_t = t;
        std::printf("\r[%d/%d] %-7s rank 0: %.1f of %.1f MiB, now %.3f GiB/s   ", point, points,
                    phase, b / 1048576.0, total / 1048576.0, rate / 1073741824.0);
        std::fflush(stdout);
      }
      std::printf("\r\033[K");
      std::fflush(stdout);
    });
  } catch (const IoError& e) {
    // Cosmetic: the phase runs without it, and says so once.
    static bool said = false;
    if (!said) std::fprintf(stderr, "ckptbench: warning: no live line: %s\n", e.what());
    said = true;
  }
}

void LiveLine::stop() {
  stop_ = true;
  if (t_.joinable()) t_.join();
}

void print_repetition(const RunState& rs, const PointRun& pt, int rep, const PhaseResult* save,
                      const PhaseResult* restore) {
  if (!rs.say) return;
  // Appended piece by piece: `"[" + std::to_string(...)` trips GCC 12's -Wrestrict false
  // positive (GCC bug 105329) at -O3, which breaks the Release build of scripts/demo.sh.
  std::string line = "[";
  line += std::to_string(pt.index);
  line += '/';
  line += std::to_string(rs.cfg.points.size());
  line += "] ";
  line += progress_params(pt.pc);
  line += " rep ";
  line += std::to_string(rep + 1);
  line += '/';
  line += std::to_string(rs.cfg.repetitions);
  line += ':';
  char buf[160];
  if (save) {
    std::snprintf(buf, sizeof buf, " save %.3f GiB/s (%.3f s)", save->bandwidth_GiBps(),
                  save->elapsed_s);
    line += buf;
  }
  if (restore) {
    std::snprintf(buf, sizeof buf, "%s restore %.3f GiB/s (%.3f s, cache %s)", save ? "," : "",
                  restore->bandwidth_GiBps(), restore->elapsed_s, cache_name(pt.cache).c_str());
    line += buf;
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

nlohmann::json partial_document(const nlohmann::json& doc, const nlohmann::json& current) {
  nlohmann::json partial = doc;
  if (!current.is_null()) {
    nlohmann::json& cur = partial["points"].emplace_back(current);
    if (!cur.contains("repetitions")) cur["repetitions"] = nlohmann::json::array();
    cur["status"] = "incomplete";
  }
  partial["status"] = "failed";
  partial["error"] =
      "interrupted: the run did not finish (this document is rewritten when it does)";
  partial["points_completed"] = doc["points"].size();
  return partial;
}

void sync_current(RunState& rs, const PointRun& pt, const nlohmann::json* rep) {
  nlohmann::json cur = pt.pj;
  cur["warnings"] = pt.warnings;
  auto g = live_lock(rs);  // the watcher may be reading rs.current
  nlohmann::json reps = nlohmann::json::array();
  if (rs.current.is_object() && rs.current.contains("repetitions"))
    reps = std::move(rs.current["repetitions"]);
  if (rep != nullptr) reps.push_back(*rep);
  cur["repetitions"] = std::move(reps);
  rs.current = std::move(cur);
}

void report_progress(RunState& rs) {
  if (rs.rank != 0 || !rs.opt.on_progress) return;
  const double t0 = now_s();
  if (t0 < rs.progress_due_s) return;
  rs.opt.on_progress(partial_document(rs.doc, rs.current));
  const double t1 = now_s();
  rs.progress_due_s = t1 + std::max(kProgressGapS, 9 * (t1 - t0));
}

}  // namespace ckpt
