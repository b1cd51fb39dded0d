// CephFS's striping provider: a directory's default layout through the `ceph.dir.layout`
// virtual extended attribute (the MDS starts from the layout the directory would inherit, sets the
// fields given and validates the whole), a file's through `ceph.file.layout`.
#include <sys/xattr.h>

#include <cerrno>
#include <charconv>
#include <sstream>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"
#include "ckptbench/fs/striping.hpp"

namespace ckpt {

using json = nlohmann::json;

json parse_ceph_layout(const std::string& text) {
  json out = json::object();
  std::istringstream in(text);
  std::string kv;
  while (in >> kv) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    const bool number = ec == std::errc() && p == v.data() + v.size();
    if (k == "stripe_unit" && number) out["stripe_size"] = n;
    if (k == "stripe_count" && number) out["stripe_count"] = n;
    if (k == "object_size" && number) out["object_size"] = n;
    if (k == "pool") out["pool"] = v;
    if (k == "pool_namespace" && !v.empty()) out["pool_namespace"] = v;
  }
  for (const char* k : {"stripe_size", "stripe_count", "object_size"})
    if (!out.contains(k))
      throw IoError("CephFS layout '" + text + "': no " +
                    (std::string(k) == "stripe_size" ? std::string("stripe_unit") : k));
  return out;
}

namespace {

std::string get_xattr(const std::string& path, const char* name) {
  std::string buf(256, '\0');
  for (int tries = 0; tries < 4; tries++) {
    const ssize_t n = ::getxattr(path.c_str(), name, buf.data(), buf.size());
    if (n >= 0) {
      buf.resize(static_cast<size_t>(n));
      while (!buf.empty() && (buf.back() == '\0' || buf.back() == '\n')) buf.pop_back();
      return buf;
    }
    if (errno != ERANGE)
      throw IoError("getxattr " + std::string(name) + " '" + path + "': " + errno_text(errno));
    buf.resize(buf.size() * 4);
  }
  throw IoError("getxattr " + std::string(name) + " '" + path + "': value too large");
}

class CephfsStriping final : public StripingProvider {
 public:
  const char* fs() const override { return "cephfs"; }
  std::vector<std::string> unsupported(const StripeRequest& req) const override {
    if (req.count != -1) return {};
    return {
        "stripe_count -1 (all OSTs): CephFS has no such setting (a file is striped over "
        "stripe_count objects at a time, placed by CRUSH); give a count"};
  }
  json apply(const std::string& dir, const StripeRequest& req) const override {
    std::string v;
    auto add = [&](const std::string& kv) { v += (v.empty() ? "" : " ") + kv; };
    if (req.size) add("stripe_unit=" + std::to_string(req.size));
    if (req.count > 0) add("stripe_count=" + std::to_string(req.count));
    if (req.object_size) add("object_size=" + std::to_string(req.object_size));
    if (!req.pool.empty()) {
      const size_t dot = req.pool.find('.');  // Lustre's FSNAME.POOL form: the pool part
      add("pool=" + (dot == std::string::npos ? req.pool : req.pool.substr(dot + 1)));
    }
    if (::setxattr(dir.c_str(), "ceph.dir.layout", v.data(), v.size(), 0) != 0) {
      const int e = errno;
      throw IoError("striping '" + dir + "' failed: setxattr ceph.dir.layout \"" + v +
                    "\": " + errno_text(e) +
                    (e == EINVAL ? " (CephFS refuses a stripe unit larger than the object size "
                                   "and a pool that is not one of the file system's data pools)"
                                 : ""));
    }
    json out = {{"method", "setxattr ceph.dir.layout"}, {"command", v}};
    try {
      out["dir_layout"] = parse_ceph_layout(get_xattr(dir, "ceph.dir.layout"));
    } catch (const Error& e) {
      out["dir_layout_error"] = e.what();
    }
    return out;
  }
  json read(const std::string& file) const override {
    return parse_ceph_layout(get_xattr(file, "ceph.file.layout"));
  }
  const char* read_method() const override { return "getxattr ceph.file.layout"; }
};

}  // namespace

const StripingProvider& cephfs_striping() {
  static const CephfsStriping p;
  return p;
}

}  // namespace ckpt
