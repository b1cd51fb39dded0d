// Striping through the file system's provider (striping.hpp): validation, the provider registry,
// applying a request with warnings for what a file system cannot honour, reading layouts back and
// comparing them with the request. Nothing here knows a particular file system.
#include "ckptbench/fs/striping.hpp"

#include <sys/statfs.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/fs/fs.hpp"

namespace ckpt {

using json = nlohmann::json;

namespace {

constexpr uint64_t kMinStripe = 64 * 1024;   // Lustre LOV_MIN_STRIPE_SIZE, CephFS's unit
constexpr uint64_t kMaxStripe = 1ull << 32;  // stripe and object sizes stay below 4 GiB

std::string describe(const StripeRequest& r) {
  std::string s;
  auto add = [&](const std::string& t) { s += (s.empty() ? "" : ", ") + t; };
  if (r.count != 0) add("stripe_count " + std::to_string(r.count));
  if (r.size != 0) add("stripe_size " + format_bytes(r.size));
  if (!r.pool.empty()) add("stripe_pool '" + r.pool + "'");
  if (r.object_size != 0) add("object_size " + format_bytes(r.object_size));
  return s;
}

bool valid_name_part(const std::string& s, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return s[0] != '-';
}

void check_size(const char* key, uint64_t v) {
  if (v % kMinStripe != 0)
    throw ConfigError(std::string("'") + key + "': " + std::to_string(v) + " bytes (" +
                      format_bytes(v) +
                      ") is not a multiple of 64 KiB; stripe and object sizes are multiples of "
                      "64 KiB (e.g. 1M, 4M), 0 for the file-system default");
  if (v >= kMaxStripe)
    throw ConfigError(std::string("'") + key + "': " + format_bytes(v) +
                      " is too large; stripe and object sizes must be below 4 GiB");
}

}  // namespace

json StripeRequest::to_json() const {
  return {{"stripe_count", count},
          {"stripe_size", size},
          {"stripe_pool", pool},
          {"object_size", object_size}};
}

void validate_stripe_request(const StripeRequest& req) {
  if (req.count < -1 || req.count > 65535)
    throw ConfigError("'stripe_count': " + std::to_string(req.count) +
                      " is out of range (use -1 for all OSTs, 0 for the file-system default, "
                      "or 1..65535)");
  check_size("stripe_size", req.size);
  check_size("object_size", req.object_size);
  if (req.size != 0 && req.object_size != 0 && req.object_size % req.size != 0)
    throw ConfigError("'object_size': " + format_bytes(req.object_size) +
                      " is not a multiple of 'stripe_size' " + format_bytes(req.size) +
                      " (a CephFS object holds whole stripe units)");
  if (!req.pool.empty()) {
    auto dot = req.pool.find('.');
    bool ok = dot == std::string::npos ? valid_name_part(req.pool, 15)
                                       : valid_name_part(req.pool.substr(0, dot), 8) &&
                                             valid_name_part(req.pool.substr(dot + 1), 15);
    if (!ok)
      throw ConfigError("'stripe_pool': '" + req.pool +
                        "' is not a pool name (Lustre POOL or FSNAME.POOL, a CephFS data pool: "
                        "letters, digits, '_' and '-', pool at most 15 characters, fsname at "
                        "most 8)");
  }
}

const StripingProvider* striping_provider(const std::string& fs_type) {
  for (const StripingProvider* p : {&lustre_striping(), &cephfs_striping()})
    if (fs_type == p->fs()) return p;
  return nullptr;
}

std::string striping_error(const std::string& dir, const StripeRequest& req,
                           const std::string& fs_type, bool strict) {
  try {
    validate_stripe_request(req);
    if (!req.any()) return "";
    const StripingProvider* p = striping_provider(fs_type);
    if (!p || (strict && !p->unsupported(req).empty())) {
      json ignored;  // throws before touching anything
      (void)apply_striping(dir, req, fs_type, strict, ignored);
    }
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string apply_striping(const std::string& dir, const StripeRequest& req,
                           const std::string& fs_type, bool strict, json& out_report) {
  if (!req.any()) {
    out_report = {{"status", "not-requested"}};
    return "";
  }
  validate_stripe_request(req);
  const StripingProvider* p = striping_provider(fs_type);
  if (!p) {
    const std::string what = describe(req);
    if (strict)
      throw ConfigError(
          "stripe settings need a file system with striping layouts (Lustre, "
          "CephFS); target is " +
          fs_type + " ('" + dir + "'): " + what +
          " cannot be applied (\"strict\": true). Remove the stripe settings or run "
          "on a Lustre or CephFS directory");
    out_report = {{"status", "not-applicable"},
                  {"reason",
                   "stripe settings apply to Lustre and CephFS only; the target file "
                   "system is " +
                       fs_type},
                  {"fs", fs_type},
                  {"requested", req.to_json()}};
    return what + " requested, but the target file system is " + fs_type +
           ", which has no striping layouts: not applied (\"not-applicable\" in the report; "
           "\"strict\": true makes this an error)";
  }
  const std::vector<std::string> cannot = p->unsupported(req);
  std::string list;
  for (const auto& c : cannot) list += (list.empty() ? "" : "; ") + c;
  if (!cannot.empty() && strict)
    throw ConfigError("on " + fs_type + " ('" + dir + "'): " + list + " (\"strict\": true)");
  // The fields it honours; nothing left: nothing to apply.
  StripeRequest honoured = req;
  for (const auto& c : cannot) {
    if (c.rfind("stripe_count", 0) == 0) honoured.count = 0;
    if (c.rfind("stripe_size", 0) == 0) honoured.size = 0;
    if (c.rfind("stripe_pool", 0) == 0) honoured.pool.clear();
    if (c.rfind("object_size", 0) == 0) honoured.object_size = 0;
  }
  out_report = {{"status", "applied"}, {"fs", fs_type}, {"requested", req.to_json()}};
  if (honoured.any()) out_report.update(p->apply(dir, honoured));
  if (cannot.empty()) return "";
  out_report["not_applied"] = cannot;
  if (!honoured.any()) out_report["status"] = "not-applicable";
  return "on " + fs_type + ": " + list + " - not applied (\"strict\": true makes this an error)";
}

json read_striping(const std::vector<std::string>& files, size_t max_samples,
                   const std::string& fs_type) {
  if (files.empty()) return {{"status", "not-applicable"}, {"reason", "no files"}};
  std::string fs = fs_type;
  if (fs.empty()) {
    try {
      fs = probe_fs(files[0]).type;
    } catch (const Error& e) {
      return {{"status", "error"}, {"error", e.what()}};
    }
  }
  const StripingProvider* p = striping_provider(fs);
  if (!p)
    return {{"status", "not-applicable"},
            {"reason", "stripe layouts exist on Lustre and CephFS only; the file system is " + fs},
            {"fs", fs}};
  const size_t n = files.size();
  const size_t k = max_samples == 0 ? n : std::min(n, max_samples);
  std::vector<size_t> idx;
  for (size_t i = 0; i < k; i++) idx.push_back(k == 1 ? 0 : (i * (n - 1) + (k - 1) / 2) / (k - 1));
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  json list = json::array();
  json summary = {
      {"stripe_count", json::object()}, {"stripe_size", json::object()}, {"pool", json::object()}};
  size_t failed = 0;
  auto bump = [&](const char* key, const json& v) {
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    json& counts = summary[key];  // object_size: only where the file system has one
    if (!counts.is_object()) counts = json::object();
    counts[s] = counts.value(s, 0) + 1;
  };
  for (size_t i : idx) {
    json e = {{"file", files[i]}};
    try {
      json got = p->read(files[i]);
      e.update(got);
      for (const char* key : {"stripe_count", "stripe_size", "pool", "object_size"})
        if (got.contains(key)) bump(key, got[key]);
    } catch (const Error& ex) {
      e["error"] = ex.what();
      failed++;
    }
    list.push_back(e);
  }
  return {{"status", failed == 0 ? "ok" : (failed == idx.size() ? "error" : "partial")},
          {"fs", fs},
          {"method", p->read_method()},
          {"files_total", n},
          {"files_sampled", idx.size()},
          {"files", list},
          {"summary", summary}};
}

std::string stripe_mismatch(const StripeRequest& req, const json& readback) {
  std::vector<const json*> entries;
  if (readback.contains("files") && readback["files"].is_array()) {
    for (const auto& f : readback["files"])
      if (f.contains("stripe_count") || f.contains("stripe_size")) entries.push_back(&f);
  } else if (readback.contains("stripe_count") || readback.contains("stripe_size")) {
    entries.push_back(&readback);
  }
  auto pool_name = [](std::string p) {
    auto dot = p.find('.');
    return dot == std::string::npos ? p : p.substr(dot + 1);
  };
  size_t bad = 0;
  std::string first;
  for (const json* e : entries) {
    std::string why;
    auto add = [&](const std::string& w) { why += (why.empty() ? "" : "; ") + w; };
    const json& c = (*e)["stripe_count"];
    const json& s = (*e)["stripe_size"];
    if (req.count > 0 && c.is_number_integer() && c.get<long long>() != req.count)
      add("stripe_count " + std::to_string(req.count) + " requested, got " + c.dump());
    if (req.size > 0 && s.is_number_integer() && s.get<uint64_t>() != req.size)
      add("stripe_size " + format_bytes(req.size) + " requested, got " +
          format_bytes(s.get<uint64_t>()));
    if (req.object_size > 0 && e->contains("object_size") && (*e)["object_size"].is_number() &&
        (*e)["object_size"].get<uint64_t>() != req.object_size)
      add("object_size " + format_bytes(req.object_size) + " requested, got " +
          format_bytes((*e)["object_size"].get<uint64_t>()));
    if (!req.pool.empty() && pool_name(e->value("pool", std::string())) != pool_name(req.pool))
      add("pool '" + req.pool + "' requested, got '" + e->value("pool", std::string()) + "'");
    if (!why.empty()) {
      if (bad++ == 0) first = why + " (e.g. " + e->value("file", std::string("the file")) + ")";
    }
  }
  if (bad == 0) return "";
  return "stripe layout obtained differs from the request on " + std::to_string(bad) + " of " +
         std::to_string(entries.size()) + " sampled files: " + first;
}

}  // namespace ckpt
