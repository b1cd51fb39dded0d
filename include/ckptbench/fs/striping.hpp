// Striping as a file-system capability: one small interface, one provider per file system that
// has directory striping layouts - Lustre (`lfs setstripe` / llapi, `lfs getstripe`) and CephFS
// (the `ceph.dir.layout.*` extended attributes, read back from `ceph.file.layout`). The provider
// is chosen by the detected file-system type; on a file system without one, stripe settings are
// "not-applicable" (a warning, an error with `strict`). No MPI here: rank 0 calls these and the
// caller shares the outcome.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ckpt {

// Stripe settings of one sweep point (config keys stripe_count / stripe_size / stripe_pool /
// object_size).
struct StripeRequest {
  int count = 0;             // 0 = file-system default; -1 = all OSTs (Lustre); N > 0 = N
  uint64_t size = 0;         // stripe size (CephFS: stripe unit); 0 = default; a multiple of 64K
  std::string pool;          // Lustre OST pool / CephFS data pool; "" = none
  uint64_t object_size = 0;  // CephFS object size; 0 = default; a multiple of stripe size
  bool any() const { return count != 0 || size != 0 || !pool.empty() || object_size != 0; }
  nlohmann::json to_json() const;  // {"stripe_count", "stripe_size", "stripe_pool", "object_size"}
};

// Throws ConfigError naming the key when a request can never work on any striping file system:
// count < -1 or > 65535, size or object size not a multiple of 64 KiB or >= 4 GiB, an object
// size that is not a multiple of the stripe size, a malformed pool name. Cheap and file-system
// independent: called at config validation so `ckptbench validate` catches it.
void validate_stripe_request(const StripeRequest& req);

// One file system's striping.
class StripingProvider {
 public:
  virtual ~StripingProvider() = default;
  virtual const char* fs() const = 0;  // the FsInfo::type it serves: "lustre", "cephfs"
  // The request fields this file system cannot honour, each "key value: why" (empty: none).
  virtual std::vector<std::string> unsupported(const StripeRequest& req) const = 0;
  // Sets the default layout of an existing, empty directory (the fields it honours; at least one
  // is set): new files and subdirectories inherit it. Returns the report's "method" and, for a
  // command, "command". Throws IoError with what failed.
  virtual nlohmann::json apply(const std::string& dir, const StripeRequest& req) const = 0;
  // The layout one file got: {"stripe_count", "stripe_size", "pool"} (+ "object_size" where the
  // file system has one). Throws IoError.
  virtual nlohmann::json read(const std::string& file) const = 0;
  virtual const char* read_method() const = 0;  // "lfs getstripe", "getxattr ceph.file.layout"
};

// The provider for an FsInfo::type ("lustre", "cephfs"); nullptr when it has no striping.
const StripingProvider* striping_provider(const std::string& fs_type);

// The ConfigError apply_striping(dir, ...) would throw before touching anything, as a message
// ("" = none): an invalid request, stripe settings with strict on a file system without
// striping, or a field the file system cannot honour with strict. Pure: for the checks a run
// makes before any I/O.
std::string striping_error(const std::string& dir, const StripeRequest& req,
                           const std::string& fs_type, bool strict);

// Sets the default layout of an existing, still empty directory through the file system's
// provider. fs_type is FsInfo::type.
//  - nothing requested: out_report = {"status": "not-requested"}; returns "".
//  - a provider: out_report = {"status": "applied", "method", ["command",] "requested", "fs",
//    ["not_applied": [fields it cannot honour]]}; returns "" or a warning naming the fields it
//    cannot honour (strict: ConfigError instead). Failure -> IoError.
//  - no provider: strict -> ConfigError naming the file system; else out_report = {"status":
//    "not-applicable", "reason", "fs", "requested"} and a one-line warning is returned.
// Invalid requests throw ConfigError on every file system. Call on one rank only.
[[nodiscard]] std::string apply_striping(const std::string& dir, const StripeRequest& req,
                                         const std::string& fs_type, bool strict,
                                         nlohmann::json& out_report);

// The layout files actually got. Samples at most max_samples files evenly over the list (first
// and last included; 0 = all). fs_type "" = detect from the first file.
//  - a provider: {"status": "ok" | "partial" | "error", "fs", "method", "files_total",
//    "files_sampled", "files": [{"file", "stripe_count", "stripe_size", "pool"[, "object_size"]}
//    | {"file", "error"}], "summary": {"stripe_count": {"4": n, ...}, "stripe_size", "pool"
//    [, "object_size"]}}
//  - otherwise (or no files): {"status": "not-applicable", "fs": ...}.
// Per-file failures are recorded, not thrown. Call on one rank, outside timed phases.
nlohmann::json read_striping(const std::vector<std::string>& files, size_t max_samples,
                             const std::string& fs_type = "");

// "" when the layout read back matches the request, else a warning naming the differences
// (Lustre clamps a stripe count larger than the number of OSTs, for instance). Count -1 matches
// any count; unset fields match anything.
std::string stripe_mismatch(const StripeRequest& req, const nlohmann::json& readback);

// Parses a CephFS layout extended attribute (`ceph.file.layout` / `ceph.dir.layout`:
// "stripe_unit=1048576 stripe_count=4 object_size=4194304 pool=cephfs_data [pool_namespace=ns]")
// into {"stripe_count", "stripe_size" (= stripe_unit), "object_size", "pool"[, "pool_namespace"]}.
// Throws IoError naming the text when stripe_unit, stripe_count or object_size is missing.
nlohmann::json parse_ceph_layout(const std::string& text);

// The providers (each in its own file).
const StripingProvider& lustre_striping();
const StripingProvider& cephfs_striping();

}  // namespace ckpt
