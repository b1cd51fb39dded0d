#include "ckptbench/base/malloc_policy.hpp"

#include <malloc.h>

#include <cstdlib>

namespace ckpt {
namespace {

enum class SetBy { not_yet, ckptbench, environment, failed };
SetBy g_set_by = SetBy::not_yet;
std::string g_setting;  // the environment's own choice, when it made one

// The environment's malloc threshold settings, "" when it made none.
std::string environment_setting() {
  std::string s;
  auto add = [&](const char* name) {
    const char* v = std::getenv(name);
    if (!v) return;
    if (!s.empty()) s += " ";
    s += std::string(name) + "=" + v;
  };
  add("MALLOC_MMAP_THRESHOLD_");
  add("MALLOC_TRIM_THRESHOLD_");
  if (const char* t = std::getenv("GLIBC_TUNABLES")) {
    const std::string tunables = t;
    if (tunables.find("glibc.malloc.mmap_threshold") != std::string::npos ||
        tunables.find("glibc.malloc.trim_threshold") != std::string::npos) {
      if (!s.empty()) s += " ";
      s += "GLIBC_TUNABLES=" + tunables;
    }
  }
  return s;
}

}  // namespace

void pin_malloc_thresholds() {
  if (g_set_by != SetBy::not_yet) return;
  g_setting = environment_setting();
  if (!g_setting.empty()) {
    g_set_by = SetBy::environment;
    return;
  }
  const bool ok = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMallocMmapThreshold)) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kMallocTrimThreshold)) == 1;
  g_set_by = ok ? SetBy::ckptbench : SetBy::failed;
}

nlohmann::json malloc_policy_json() {
  nlohmann::json j;
  switch (g_set_by) {
    case SetBy::ckptbench:
      j["set_by"] = "ckptbench";
      j["mmap_threshold_bytes"] = kMallocMmapThreshold;
      j["trim_threshold_bytes"] = kMallocTrimThreshold;
      break;
    case SetBy::environment:
      j["set_by"] = "environment";
      j["setting"] = g_setting;
      break;
    case SetBy::failed:
    case SetBy::not_yet:
      j["set_by"] = "glibc default";
      j["note"] =
          g_set_by == SetBy::failed
              ? "mallopt refused the thresholds: glibc's dynamic mmap threshold applies"
              : "thresholds not set by this process: glibc's dynamic mmap threshold applies";
      break;
  }
  return j;
}

}  // namespace ckpt
