// Lustre striping without Lustre: lfs command construction and validation, the getstripe parser
// on captured outputs, not-applicable / strict on this machine's file system, the whole Lustre
// path against a fake `lfs` (CKPT_LFS), MPI-IO hints and per-node bandwidth.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ckptbench/base/error.hpp"
#include "ckptbench/fs/fs.hpp"
#include "ckptbench/fs/lustre.hpp"
#include "ckptbench/plan/config.hpp"

using namespace ckpt;
using json = nlohmann::json;
namespace fsys = std::filesystem;

namespace {

using Argv = std::vector<std::string>;

struct TempDir {
  std::string path;
  TempDir() {
    std::string t = "/var/tmp/ckpt_lustre_XXXXXX";
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fsys::remove_all(path, ec);
  }
};

// Sets an environment variable for the scope of a test.
struct EnvGuard {
  std::string name;
  std::string old;
  bool had = false;
  EnvGuard(const std::string& n, const std::string& v) : name(n) {
    if (const char* o = std::getenv(n.c_str())) {
      had = true;
      old = o;
    }
    ::setenv(n.c_str(), v.c_str(), 1);
  }
  ~EnvGuard() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

StripeRequest req(int count, uint64_t size, std::string pool = "") {
  StripeRequest r;
  r.count = count;
  r.size = size;
  r.pool = std::move(pool);
  return r;
}

std::string read_all(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

// A stand-in for lfs: logs its arguments, answers getstripe with the file named by
// $FAKE_LFS_GETSTRIPE, fails setstripe when $FAKE_LFS_FAIL is set.
std::string write_fake_lfs(const std::string& dir) {
  std::string p = dir + "/lfs";
  std::ofstream(p) << "#!/bin/sh\n"
                      "echo \"$@\" >> \"$FAKE_LFS_LOG\"\n"
                      "if [ \"$1\" = setstripe ] && [ -n \"$FAKE_LFS_FAIL\" ]; then\n"
                      "  echo \"lfs setstripe: error: pool 'nope' does not exist\" >&2\n"
                      "  exit 22\n"
                      "fi\n"
                      "if [ \"$1\" = getstripe ]; then cat \"$FAKE_LFS_GETSTRIPE\"; fi\n"
                      "exit 0\n";
  ::chmod(p.c_str(), 0755);
  return p;
}

// ---- Captured `lfs getstripe` outputs (formats of lustre/utils/liblustreapi.c). ----

// `lfs getstripe -c -S -p file` on a plain (v3) layout with a pool.
const char* kPlainPool =
    "lmm_stripe_count:  4\n"
    "lmm_stripe_size:   1048576\n"
    "lmm_pool:          flash\n"
    "\n";
// Same with the path line some versions print first, and no pool (the line is omitted).
const char* kPathNoPool =
    "/lustre/scratch/me/ckpt/point-001/rep-01/mp_rank_00_model_states.pt\n"
    "lmm_stripe_count:  8\n"
    "lmm_stripe_size:   4194304\n"
    "\n";
// A PFL file: only the last instantiated component, indented by six spaces.
const char* kPflLastInit =
    "      lmm_stripe_count:  16\n"
    "      lmm_stripe_size:   16777216\n"
    "      lmm_pool:          hdd\n"
    "\n";
// Full `lfs getstripe -v` of a two-component PFL file.
const char* kPflVerbose =
    "/mnt/lustre/f\n"
    "composite_header:\n"
    "  lcm_magic:         0x0BD60BD0\n"
    "  lcm_size:          264\n"
    "  lcm_flags:         0\n"
    "  lcm_layout_gen:    2\n"
    "  lcm_mirror_count:  1\n"
    "  lcm_entry_count:   2\n"
    "components:\n"
    "  - lcme_id:             1\n"
    "    lcme_mirror_id:      0\n"
    "    lcme_flags:          init\n"
    "    lcme_extent.e_start: 0\n"
    "    lcme_extent.e_end:   1048576\n"
    "    lcme_offset:         128\n"
    "    lcme_size:           56\n"
    "    sub_layout:\n"
    "      lmm_magic:         0x0BD10BD0\n"
    "      lmm_seq:           0x200000401\n"
    "      lmm_object_id:     0x1\n"
    "      lmm_fid:           [0x200000401:0x1:0x0]\n"
    "      lmm_stripe_count:  1\n"
    "      lmm_stripe_size:   1048576\n"
    "      lmm_pattern:       raid0\n"
    "      lmm_layout_gen:    0\n"
    "      lmm_stripe_offset: 0\n"
    "      lmm_objects:\n"
    "      - 0: { l_ost_idx: 0, l_fid: [0x100000000:0x2:0x0] }\n"
    "\n"
    "  - lcme_id:             2\n"
    "    lcme_mirror_id:      0\n"
    "    lcme_flags:          init\n"
    "    lcme_extent.e_start: 1048576\n"
    "    lcme_extent.e_end:   EOF\n"
    "    lcme_offset:         184\n"
    "    lcme_size:           80\n"
    "    sub_layout:\n"
    "      lmm_magic:         0x0BD10BD0\n"
    "      lmm_seq:           0x200000401\n"
    "      lmm_object_id:     0x1\n"
    "      lmm_fid:           [0x200000401:0x1:0x0]\n"
    "      lmm_stripe_count:  2\n"
    "      lmm_stripe_size:   4194304\n"
    "      lmm_pattern:       raid0\n"
    "      lmm_layout_gen:    0\n"
    "      lmm_stripe_offset: 1\n"
    "      lmm_objects:\n"
    "      - 0: { l_ost_idx: 1, l_fid: [0x100010000:0x2:0x0] }\n"
    "      - 1: { l_ost_idx: 0, l_fid: [0x100000000:0x3:0x0] }\n"
    "\n";
// Plain `lfs getstripe file` (classic, non-composite) with the object table.
const char* kClassicFull =
    "/mnt/lustre/ckpt/layer_01-model_00-model_states.pt\n"
    "lmm_stripe_count:  2\n"
    "lmm_stripe_size:   1048576\n"
    "lmm_pattern:       raid0\n"
    "lmm_layout_gen:    0\n"
    "lmm_stripe_offset: 3\n"
    "\tobdidx\t\t objid\t\t objid\t\t group\n"
    "\t     3\t      12345678\t     0xbc614e\t             0\n"
    "\t     0\t      12345679\t     0xbc614f\t             0\n"
    "\n";
// `lfs getstripe -y` (YAML) of a DoM + OST component file; the second is not instantiated.
const char* kYamlDom =
    "  lcm_layout_gen:    3\n"
    "  lcm_mirror_count:  1\n"
    "  lcm_entry_count:   2\n"
    "  component0:\n"
    "    lcme_id:             1\n"
    "    lcme_mirror_id:      0\n"
    "    lcme_flags:          init\n"
    "    lcme_extent.e_start: 0\n"
    "    lcme_extent.e_end:   65536\n"
    "    sub_layout:\n"
    "      lmm_stripe_count:  0\n"
    "      lmm_stripe_size:   65536\n"
    "      lmm_pattern:       mdt\n"
    "      lmm_layout_gen:    0\n"
    "      lmm_stripe_offset: 0\n"
    "  component1:\n"
    "    lcme_id:             2\n"
    "    lcme_mirror_id:      0\n"
    "    lcme_flags:          0\n"
    "    lcme_extent.e_start: 65536\n"
    "    lcme_extent.e_end:   EOF\n"
    "    sub_layout:\n"
    "      lmm_stripe_count:  -1\n"
    "      lmm_stripe_size:   1048576\n"
    "      lmm_pattern:       raid0\n"
    "      lmm_layout_gen:    0\n"
    "      lmm_stripe_offset: -1\n"
    "      lmm_pool:          flash\n"
    "      lmm_objects:\n"
    "      - l_ost_idx: 0\n"
    "        l_fid:     0x100000000:0x2:0x0\n"
    "\n";
// A directory's default layout: one line.
const char* kDirLine =
    "stripe_count:  -1 stripe_size:   4194304 pattern:       raid0 stripe_offset: -1 "
    "pool:          flash\n";

}  // namespace

// ---- Command construction and validation. ----

TEST(StripeRequest, AnyAndJson) {
  EXPECT_FALSE(StripeRequest{}.any());
  EXPECT_TRUE(req(4, 0).any());
  EXPECT_TRUE(req(-1, 0).any());
  EXPECT_TRUE(req(0, 1 << 20).any());
  EXPECT_TRUE(req(0, 0, "flash").any());
  EXPECT_EQ(req(4, 1 << 20, "p").to_json(), (json{{"stripe_count", 4},
                                                  {"stripe_size", 1 << 20},
                                                  {"stripe_pool", "p"},
                                                  {"object_size", 0}}));
  StripeRequest o;
  o.object_size = 4 << 20;
  EXPECT_TRUE(o.any());
}

TEST(StripeRequest, ObjectSizeIsAMultipleOfTheStripeSize) {
  StripeRequest r = req(2, 1 << 20);
  r.object_size = 3 << 19;  // 1.5 MiB
  const std::string m = config_error([&] { validate_stripe_request(r); });
  EXPECT_NE(m.find("'object_size'"), std::string::npos) << m;
  r.object_size = 100000;
  EXPECT_NE(config_error([&] { validate_stripe_request(r); }).find("64 KiB"), std::string::npos);
  r.object_size = 4 << 20;
  EXPECT_NO_THROW(validate_stripe_request(r));
}

TEST(StripingProviders, ChosenByFileSystemTypeEachSaysWhatItCannotHonour) {
  ASSERT_NE(striping_provider("lustre"), nullptr);
  ASSERT_NE(striping_provider("cephfs"), nullptr);
  EXPECT_EQ(striping_provider("ext4"), nullptr);
  EXPECT_EQ(striping_provider("fuse"), nullptr);
  StripeRequest r = req(-1, 1 << 20);
  r.object_size = 4 << 20;
  // Lustre has no object size; CephFS no "all OSTs".
  const auto l = striping_provider("lustre")->unsupported(r);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].rfind("object_size 4.00 MiB: not applicable on Lustre", 0), 0u) << l[0];
  const auto c = striping_provider("cephfs")->unsupported(r);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].rfind("stripe_count -1", 0), 0u) << c[0];
  EXPECT_TRUE(striping_provider("cephfs")->unsupported(req(4, 1 << 20)).empty());
  // strict makes a field the file system cannot honour an error before anything is touched.
  EXPECT_NE(striping_error("/nonexistent", r, "cephfs", true).find("stripe_count -1"),
            std::string::npos);
  EXPECT_EQ(striping_error("/nonexistent", req(4, 1 << 20), "cephfs", true), "");
}

TEST(CephLayout, ParsesTheLayoutAttribute) {
  const json j =
      parse_ceph_layout("stripe_unit=1048576 stripe_count=4 object_size=4194304 pool=cephfs_data");
  EXPECT_EQ(j["stripe_size"], 1048576);
  EXPECT_EQ(j["stripe_count"], 4);
  EXPECT_EQ(j["object_size"], 4194304);
  EXPECT_EQ(j["pool"], "cephfs_data");
  EXPECT_FALSE(j.contains("pool_namespace"));
  EXPECT_EQ(parse_ceph_layout("stripe_unit=65536 stripe_count=1 object_size=65536 pool=p "
                              "pool_namespace=ns\n")["pool_namespace"],
            "ns");
  try {
    parse_ceph_layout("stripe_count=4 object_size=4194304");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("no stripe_unit"), std::string::npos);
  }
  // What the readback compares: the request against the obtained layout.
  StripeRequest r = req(4, 1 << 20);
  r.object_size = 8 << 20;
  EXPECT_NE(stripe_mismatch(r, j).find("object_size 8.00 MiB requested, got 4.00 MiB"),
            std::string::npos);
  r.object_size = 4 << 20;
  EXPECT_EQ(stripe_mismatch(r, j), "");
}

TEST(SetstripeCommand, CountSizePool) {
  EXPECT_EQ(setstripe_command("/l/d", req(4, 1 << 20)),
            (Argv{"lfs", "setstripe", "-c", "4", "-S", "1M", "/l/d"}));
  EXPECT_EQ(setstripe_command("/l/d", req(8, 4ull << 20, "flash")),
            (Argv{"lfs", "setstripe", "-c", "8", "-S", "4M", "-p", "flash", "/l/d"}));
  // -1 = every OST; the value follows -c as its own argument.
  EXPECT_EQ(setstripe_command("/l/d", req(-1, 0)), (Argv{"lfs", "setstripe", "-c", "-1", "/l/d"}));
  EXPECT_EQ(setstripe_command("/l/d", req(0, 64 << 10)),
            (Argv{"lfs", "setstripe", "-S", "64K", "/l/d"}));
  EXPECT_EQ(setstripe_command("/l/d", req(0, 192 << 10)),
            (Argv{"lfs", "setstripe", "-S", "192K", "/l/d"}));
  EXPECT_EQ(setstripe_command("/l/d", req(0, 0, "fs1.ssd")),
            (Argv{"lfs", "setstripe", "-p", "fs1.ssd", "/l/d"}));
  EXPECT_EQ(setstripe_command("/l/d", req(1, (4ull << 30) - (64 << 10))).at(5), "4194240K");
  // A relative directory that looks like an option is made explicit.
  EXPECT_EQ(setstripe_command("-odd", req(2, 0)).back(), "./-odd");
}

TEST(SetstripeCommand, LfsProgramFromEnvironment) {
  EnvGuard g("CKPT_LFS", "/opt/lustre/bin/lfs");
  EXPECT_EQ(setstripe_command("/l/d", req(2, 0)).front(), "/opt/lustre/bin/lfs");
  EXPECT_EQ(getstripe_command("/l/f"),
            (Argv{"/opt/lustre/bin/lfs", "getstripe", "-c", "-S", "-p", "/l/f"}));
}

TEST(SetstripeCommand, RejectsWhatLustreRejects) {
  EXPECT_NE(config_error([] { setstripe_command("/d", req(0, 100000)); }).find("64 KiB"),
            std::string::npos);
  EXPECT_NE(config_error([] { setstripe_command("/d", req(0, 96 << 10)); }).find("stripe_size"),
            std::string::npos);
  EXPECT_NE(config_error([] { setstripe_command("/d", req(0, 4ull << 30)); }).find("4 GiB"),
            std::string::npos);
  EXPECT_NE(config_error([] { setstripe_command("/d", req(-2, 0)); }).find("stripe_count"),
            std::string::npos);
  EXPECT_NE(config_error([] { setstripe_command("/d", req(70000, 0)); }).find("stripe_count"),
            std::string::npos);
  for (const char* bad :
       {"has space", "-p", "semi;colon", "sixteen_chars_xx", "toolongfs.pool", "fs.", ".pool"})
    EXPECT_NE(config_error([&] { setstripe_command("/d", req(0, 0, bad)); }).find("stripe_pool"),
              std::string::npos)
        << bad;
  EXPECT_NE(config_error([] { setstripe_command("/d", StripeRequest{}); }).find("no stripe"),
            std::string::npos);
  EXPECT_NO_THROW(validate_stripe_request(StripeRequest{}));
  EXPECT_NO_THROW(validate_stripe_request(req(-1, (4ull << 30) - (64 << 10), "fs.pool_1")));
}

// ---- The getstripe parser. ----

TEST(ParseGetstripe, PlainWithPool) {
  json j = parse_getstripe(kPlainPool);
  EXPECT_EQ(j["stripe_count"], 4);
  EXPECT_EQ(j["stripe_size"], 1048576);
  EXPECT_EQ(j["pool"], "flash");
  EXPECT_FALSE(j.contains("components"));
}

TEST(ParseGetstripe, PathLineAndNoPool) {
  json j = parse_getstripe(kPathNoPool);
  EXPECT_EQ(j["stripe_count"], 8);
  EXPECT_EQ(j["stripe_size"], 4194304);
  EXPECT_EQ(j["pool"], "");
}

TEST(ParseGetstripe, PflLastInstantiatedComponentIndented) {
  json j = parse_getstripe(kPflLastInit);
  EXPECT_EQ(j["stripe_count"], 16);
  EXPECT_EQ(j["stripe_size"], 16 << 20);
  EXPECT_EQ(j["pool"], "hdd");
}

TEST(ParseGetstripe, VerboseCompositeUsesLastInstantiatedComponent) {
  json j = parse_getstripe(kPflVerbose);
  EXPECT_EQ(j["stripe_count"], 2);
  EXPECT_EQ(j["stripe_size"], 4194304);
  EXPECT_EQ(j["pattern"], "raid0");
  EXPECT_EQ(j["ost_indices"], (json{1, 0}));
  ASSERT_EQ(j["components"].size(), 2u);
  EXPECT_EQ(j["components"][0]["stripe_count"], 1);
  EXPECT_EQ(j["components"][0]["lcme_extent.e_end"], "1048576");
  EXPECT_EQ(j["components"][1]["lcme_extent.e_end"], "EOF");
}

TEST(ParseGetstripe, ClassicFullOutputWithObjectTable) {
  json j = parse_getstripe(kClassicFull);
  EXPECT_EQ(j["stripe_count"], 2);
  EXPECT_EQ(j["stripe_size"], 1048576);
  EXPECT_EQ(j["pattern"], "raid0");
}

TEST(ParseGetstripe, YamlDomFileReportsTheInstantiatedMdtComponent) {
  json j = parse_getstripe(kYamlDom);
  // Only the DoM component holds data; the OST component is a template (flags 0).
  EXPECT_EQ(j["stripe_count"], 0);
  EXPECT_EQ(j["stripe_size"], 65536);
  EXPECT_EQ(j["pattern"], "mdt");
  ASSERT_EQ(j["components"].size(), 2u);  // "component0:" + "lcme_id" count once each
  EXPECT_EQ(j["components"][1]["stripe_count"], -1);
  EXPECT_EQ(j["components"][1]["pool"], "flash");
}

TEST(ParseGetstripe, DirectoryOneLineForm) {
  json j = parse_getstripe(kDirLine);
  EXPECT_EQ(j["stripe_count"], -1);
  EXPECT_EQ(j["stripe_size"], 4194304);
  EXPECT_EQ(j["pool"], "flash");
}

TEST(ParseGetstripe, CrLfAndJunkTolerated) {
  json j = parse_getstripe("lmm_stripe_count:  3\r\nlmm_stripe_size:   2097152\r\n");
  EXPECT_EQ(j["stripe_count"], 3);
  EXPECT_EQ(j["stripe_size"], 2097152);
  EXPECT_THROW(parse_getstripe(""), IoError);
  EXPECT_THROW(parse_getstripe("lfs getstripe: /x: Operation not supported\n"), IoError);
  EXPECT_THROW(parse_getstripe("4\n"), IoError);  // unlabelled single value: ambiguous
}

// ---- Not Lustre: this machine. ----

TEST(ApplyStriping, NotApplicableWarningOnThisFileSystem) {
  TempDir t;
  FsInfo fi = probe_fs(t.path);
  ASSERT_NE(fi.type, "lustre");
  json rep;
  std::string w = apply_striping(t.path, req(4, 1 << 20), fi.type, false, rep);
  EXPECT_NE(w.find("stripe_count 4"), std::string::npos) << w;
  EXPECT_NE(w.find("which has no striping layouts"), std::string::npos) << w;
  EXPECT_NE(w.find(fi.type), std::string::npos) << w;
  EXPECT_EQ(rep["status"], "not-applicable");
  EXPECT_EQ(rep["fs"], fi.type);
  EXPECT_NE(rep["reason"].get<std::string>().find(fi.type), std::string::npos);
  EXPECT_EQ(rep["requested"]["stripe_size"], 1 << 20);
  EXPECT_TRUE(fsys::is_empty(t.path));  // nothing was created
}

TEST(ApplyStriping, StrictIsAConfigErrorNamingTheFileSystem) {
  TempDir t;
  FsInfo fi = probe_fs(t.path);
  json rep = json::object();
  std::string msg =
      config_error([&] { (void)apply_striping(t.path, req(8, 4 << 20), fi.type, true, rep); });
  EXPECT_EQ(msg.rfind("stripe settings need a file system with striping layouts (Lustre, "
                      "CephFS); target is " +
                          fi.type,
                      0),
            0u)
      << msg;
  EXPECT_NE(msg.find(t.path), std::string::npos) << msg;
  EXPECT_TRUE(rep.empty());
  if (fi.type != "ext4") GTEST_SKIP() << "target is " << fi.type << ", expected ext4 here";
  EXPECT_NE(msg.find("target is ext4"), std::string::npos);
}

TEST(StripingError, PreflightWithoutSideEffects) {
  EXPECT_EQ(striping_error("/t", req(4, 1 << 20), "ext4", false), "");
  EXPECT_EQ(striping_error("/t", req(4, 1 << 20), "lustre", true), "");
  EXPECT_EQ(striping_error("/t", StripeRequest{}, "ext4", true), "");
  EXPECT_EQ(striping_error("/t", req(4, 0), "xfs", true)
                .rfind("stripe settings need a file system with striping layouts (Lustre, "
                       "CephFS); target is xfs ('/t')",
                       0),
            0u);
  EXPECT_NE(striping_error("/t", req(0, 1000), "lustre", false).find("64 KiB"), std::string::npos);
  PointConfig pc;
  pc.stripe_count = -1;
  pc.stripe_size = 4 << 20;
  pc.stripe_pool = "flash";
  StripeRequest r = stripe_request(pc);
  EXPECT_EQ(r.count, -1);
  EXPECT_EQ(r.size, 4u << 20);
  EXPECT_EQ(r.pool, "flash");
  EXPECT_FALSE(stripe_request(PointConfig{}).any());
}

TEST(ApplyStriping, NothingRequestedIsSilentEvenWhenStrict) {
  TempDir t;
  json rep;
  EXPECT_EQ(apply_striping(t.path, StripeRequest{}, "ext4", true, rep), "");
  EXPECT_EQ(rep["status"], "not-requested");
}

TEST(ApplyStriping, InvalidRequestFailsOnEveryFileSystem) {
  json rep;
  EXPECT_THROW((void)apply_striping("/nonexistent", req(0, 1000), "ext4", false, rep), ConfigError);
  EXPECT_THROW((void)apply_striping("/nonexistent", req(0, 1000), "lustre", false, rep),
               ConfigError);
}

TEST(ReadStriping, NotApplicableOnThisFileSystem) {
  TempDir t;
  std::vector<std::string> files;
  for (int i = 0; i < 3; i++) {
    files.push_back(t.path + "/f" + std::to_string(i));
    std::ofstream(files.back()) << "x";
  }
  json j = read_striping(files, 16);
  EXPECT_EQ(j["status"], "not-applicable");
  EXPECT_EQ(j["fs"], probe_fs(t.path).type);
  EXPECT_EQ(read_striping({}, 16)["status"], "not-applicable");
  EXPECT_EQ(read_striping({t.path + "/missing"}, 16)["status"], "error");
}

// ---- The Lustre path against a fake lfs. ----

#ifndef CKPT_HAVE_LUSTREAPI
TEST(FakeLfs, SetstripeRunsTheCommandOnTheDirectory) {
  TempDir t;
  EnvGuard lfs("CKPT_LFS", write_fake_lfs(t.path));
  EnvGuard log("FAKE_LFS_LOG", t.path + "/log");
  json rep;
  std::string w =
      apply_striping(t.path + "/point-001", req(4, 1 << 20, "flash"), "lustre", true, rep);
  EXPECT_EQ(w, "");
  EXPECT_EQ(rep["status"], "applied");
  EXPECT_EQ(rep["method"], "lfs");
  EXPECT_EQ(rep["fs"], "lustre");
  EXPECT_NE(rep["command"].get<std::string>().find("setstripe -c 4 -S 1M -p flash"),
            std::string::npos);
  EXPECT_EQ(read_all(t.path + "/log"), "setstripe -c 4 -S 1M -p flash " + t.path + "/point-001\n");
}

TEST(FakeLfs, SetstripeFailureCarriesCommandAndOutput) {
  TempDir t;
  EnvGuard lfs("CKPT_LFS", write_fake_lfs(t.path));
  EnvGuard log("FAKE_LFS_LOG", t.path + "/log");
  EnvGuard fail("FAKE_LFS_FAIL", "1");
  json rep;
  try {
    (void)apply_striping(t.path, req(2, 0, "nope"), "lustre", false, rep);
    FAIL() << "no error";
  } catch (const IoError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("setstripe -c 2 -p nope"), std::string::npos) << m;
    EXPECT_NE(m.find("exited with status 22"), std::string::npos) << m;
    EXPECT_NE(m.find("pool 'nope' does not exist"), std::string::npos) << m;
  }
}

TEST(FakeLfs, MissingLfsIsAClearError) {
  TempDir t;
  EnvGuard lfs("CKPT_LFS", t.path + "/no-such-lfs");
  json rep;
  try {
    (void)apply_striping(t.path, req(2, 0), "lustre", false, rep);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("CKPT_LFS"), std::string::npos) << e.what();
  }
}

TEST(FakeLfs, GetstripeSamplesEvenlyAndSummarises) {
  TempDir t;
  EnvGuard lfs("CKPT_LFS", write_fake_lfs(t.path));
  EnvGuard log("FAKE_LFS_LOG", t.path + "/log");
  std::ofstream(t.path + "/out") << kPlainPool;
  EnvGuard out("FAKE_LFS_GETSTRIPE", t.path + "/out");
  std::vector<std::string> files;
  for (int i = 0; i < 100; i++) files.push_back("/lustre/ckpt/f" + std::to_string(i));
  json j = read_striping(files, 5, "lustre");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["files_total"], 100);
  EXPECT_EQ(j["files_sampled"], 5);
  std::vector<std::string> picked;
  for (const auto& f : j["files"]) picked.push_back(f["file"]);
  EXPECT_EQ(picked,
            (std::vector<std::string>{"/lustre/ckpt/f0", "/lustre/ckpt/f25", "/lustre/ckpt/f50",
                                      "/lustre/ckpt/f74", "/lustre/ckpt/f99"}));
  EXPECT_EQ(j["files"][0]["stripe_count"], 4);
  EXPECT_EQ(j["files"][0]["pool"], "flash");
  EXPECT_EQ(j["summary"]["stripe_count"]["4"], 5);
  EXPECT_EQ(j["summary"]["stripe_size"]["1048576"], 5);
  EXPECT_EQ(j["summary"]["pool"]["flash"], 5);
  EXPECT_NE(read_all(t.path + "/log").find("getstripe -c -S -p /lustre/ckpt/f25\n"),
            std::string::npos);
  // All files when there are few; 0 = no limit.
  EXPECT_EQ(read_striping({"/l/a", "/l/b"}, 5, "lustre")["files_sampled"], 2);
  std::vector<std::string> twenty(files.begin(), files.begin() + 20);
  EXPECT_EQ(read_striping(twenty, 0, "lustre")["files_sampled"], 20);
  EXPECT_EQ(read_striping(files, 1, "lustre")["files"][0]["file"], "/lustre/ckpt/f0");
  // Matches what was asked for; a clamped count is reported.
  EXPECT_EQ(stripe_mismatch(req(4, 1 << 20, "fs1.flash"), j), "");
  std::string m = stripe_mismatch(req(8, 1 << 20), j);
  EXPECT_NE(m.find("5 of 5"), std::string::npos) << m;
  EXPECT_NE(m.find("stripe_count 8 requested, got 4"), std::string::npos) << m;
}

TEST(FakeLfs, UnparsableGetstripeIsRecordedPerFile) {
  TempDir t;
  EnvGuard lfs("CKPT_LFS", write_fake_lfs(t.path));
  EnvGuard log("FAKE_LFS_LOG", t.path + "/log");
  std::ofstream(t.path + "/out") << "something else\n";
  EnvGuard out("FAKE_LFS_GETSTRIPE", t.path + "/out");
  json j = read_striping({"/l/a", "/l/b"}, 5, "lustre");
  EXPECT_EQ(j["status"], "error");
  EXPECT_TRUE(j["files"][0].contains("error"));
}
#endif

// ---- Running commands. ----

TEST(RunCommand, CapturesBothStreamsAndStatus) {
  CommandResult r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.status_text(), "exited with status 3");
  EXPECT_TRUE(run_command({"true"}).ok());
}

TEST(RunCommand, NoShellInterpretation) {
  CommandResult r = run_command({"echo", "$HOME;", "`id`", "a b"});
  EXPECT_EQ(r.out, "$HOME; `id` a b\n");
}

TEST(RunCommand, TimeoutKillsTheChild) {
  CommandResult r = run_command({"sleep", "30"}, 0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status_text(), "timed out and was killed");
}

TEST(RunCommand, SignalAndMissingProgram) {
  CommandResult r = run_command({"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.term_signal, 15);
  EXPECT_THROW(run_command({"/nonexistent/prog"}), IoError);
}

TEST(RunCommand, QuotesForMessages) {
  EXPECT_EQ(command_text({"lfs", "setstripe", "-c", "-1", "/a b/it's"}),
            "lfs setstripe -c -1 '/a b/it'\\''s'");
}

// ---- MPI-IO hints. ----

TEST(StripeHints, FactorAndUnit) {
  std::map<std::string, std::string> h;
  stripe_hints(req(4, 1 << 20), h);
  EXPECT_EQ(h, (std::map<std::string, std::string>{{"striping_factor", "4"},
                                                   {"striping_unit", "1048576"}}));
  std::map<std::string, std::string> all;
  stripe_hints(req(-1, 4 << 20), all);  // "all OSTs" is left to the directory default
  EXPECT_EQ(all, (std::map<std::string, std::string>{{"striping_unit", "4194304"}}));
  std::map<std::string, std::string> user = {{"striping_factor", "2"}};
  stripe_hints(req(8, 0, "flash"), user);  // the user's hint wins; no pool hint
  EXPECT_EQ(user, (std::map<std::string, std::string>{{"striping_factor", "2"}}));
}

// ---- Per-node bandwidth. ----

TEST(PerNodeBandwidth, SumsBytesAndTakesTheSlowestRank) {
  const double G = 1ull << 30;
  json j = per_node_bandwidth({0, 0, 1, 1}, {G, G, G, G}, {1.0, 2.0, 1.0, 0.5});
  EXPECT_EQ(j["nodes"], 2);
  ASSERT_EQ(j["per_node"].size(), 2u);
  EXPECT_EQ(j["per_node"][0]["ranks"], 2);
  EXPECT_DOUBLE_EQ(j["per_node"][0]["bytes"].get<double>(), 2 * G);
  EXPECT_DOUBLE_EQ(j["per_node"][0]["time_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["per_node"][0]["bandwidth_GiBps"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["per_node"][1]["bandwidth_GiBps"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["bandwidth_GiBps"]["min"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["bandwidth_GiBps"]["mean"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["bandwidth_GiBps"]["max"].get<double>(), 2.0);
  EXPECT_EQ(j["slowest_node"], 0);
  EXPECT_DOUBLE_EQ(j["node_imbalance"].get<double>(), 2.0);
}

TEST(PerNodeBandwidth, NamesTheHosts) {
  json j = per_node_bandwidth({0, 0, 1, 1}, {1, 1, 1, 1}, {1.0, 1.0, 2.0, 1.0}, {"n1", "n2"});
  EXPECT_EQ(j["per_node"][0]["host"], "n1");
  EXPECT_EQ(j["per_node"][1]["host"], "n2");
  EXPECT_EQ(j["slowest_node"], 1);
  EXPECT_EQ(j["slowest_host"], "n2");
  EXPECT_FALSE(per_node_bandwidth({0}, {1}, {1})["per_node"][0].contains("host"));
}

TEST(PerNodeBandwidth, EmulatedNodesAndEdgeCases) {
  // ranks_per_node 2 on 4 ranks: node = rank / 2 -> 2 nodes.
  std::vector<int> node;
  for (int r = 0; r < 4; r++) node.push_back(r / 2);
  EXPECT_EQ(per_node_bandwidth(node, {1, 1, 1, 1}, {1, 1, 1, 1})["nodes"], 2);
  // Sparse node ids, a node with no time.
  json j = per_node_bandwidth({7, 3}, {100, 0}, {0.0, 0.0});
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["per_node"][0]["node"], 3);
  EXPECT_TRUE(j["per_node"][0]["bandwidth_GiBps"].is_null());
  EXPECT_TRUE(j["bandwidth_GiBps"].is_null());
  EXPECT_EQ(per_node_bandwidth({}, {}, {})["nodes"], 0);
  EXPECT_THROW(per_node_bandwidth({0, 1}, {1}, {1, 1}), std::invalid_argument);
  EXPECT_THROW(per_node_bandwidth({-1}, {1}, {1}), std::invalid_argument);
}
