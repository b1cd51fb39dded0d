// libFuzzer target for the config reader with sweep expansion (fuzz/build.sh config builds and
// runs it). The input is the text of a config file; the target does what `ckptbench validate`
// does (src/cli/main.cpp cmd_validate): load_config_file on a path, parse_config (defaults,
// presets, sweep and exclude expansion, every key checked), then per point build_model and, when
// the world is known, resolve_parallelism. The file is an in-memory file (memfd) read through
// /proc/self/fd/N, so the bytes go through the same loader as on the command line, including
// any limit it applies before or while parsing.
//
// Expected outcomes: success, or a ckpt::Error (ConfigError: bad input, including text that is
// not JSON, nested too deep or holding a number beyond a double). Anything else is a finding: any
// other exception (e.g. a nlohmann exception that escaped a check: the CLI would print a library
// message and exit 1 instead of 2), a crash, a sanitizer report (ASan, UBSan, LeakSanitizer), a
// timeout or running out of memory.
//
// Skipped: sweeps of 1,001 to 100,000 points (too_costly_sweep: bounded by design, too slow
// under instrumentation).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/cli/options.hpp"
#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"

namespace {

int config_fd() {
  static const int fd = [] {
    const int f = memfd_create("ckpt-fuzz-config", 0);
    if (f < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    return f;
  }();
  return fd;
}

// A sweep that expands to more than kFuzzMaxPoints points but no more than the cap
// (ckpt::kMaxSweepPoints, counted by parse_config before any point is built). Its cost is linear
// and bounded by the cap, by design: 100,000 points take 4.8 s and 600 MB in a release build of
// `ckptbench validate`, but 135 s and several GB under this target's instrumentation (1.35 ms and
// ~50 KB a point), which libFuzzer would report as a timeout or out-of-memory at every run that
// stumbles on one. Sweeps over the cap are still fed to parse_config (refused before expansion).
constexpr uint64_t kFuzzMaxPoints = 1000;
bool too_costly_sweep(const nlohmann::json& doc) {
  if (!doc.is_object()) return false;
  const auto it = doc.find("sweep");
  if (it == doc.end() || !it->is_object()) return false;
  uint64_t n = 1;
  for (const auto& axis : *it) {
    const uint64_t k = axis.is_array() && !axis.empty() ? axis.size() : 1;
    n = n > ckpt::kMaxSweepPoints / k ? ckpt::kMaxSweepPoints + 1 : n * k;
  }
  return n > kFuzzMaxPoints && n <= ckpt::kMaxSweepPoints;
}

// Mirrors cmd_validate (src/cli/main.cpp): keep the two in step.
void validate(const std::string& path) {
  const nlohmann::json doc = ckpt::load_config_file(path);
  if (too_costly_sweep(doc)) return;
  ckpt::RunConfig rc = ckpt::parse_config(doc);
  for (const auto& p : rc.points) {
    ckpt::ModelDesc m = ckpt::build_model(p.model);
    int world = p.parallelism.emulate_world;
    if (world == 0 && p.parallelism.dp > 0)
      world = p.parallelism.tp * p.parallelism.pp * p.parallelism.dp;
    if (world > 0) ckpt::resolve_parallelism(p.parallelism, world, m);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = config_fd();
  if (ftruncate(fd, 0) != 0) std::abort();
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    validate(path);
  } catch (const ckpt::Error&) {
    // Refused with a message for the user: the expected outcome for most inputs.
  }
  return 0;
}
