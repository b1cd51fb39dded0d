// File-system detection from statfs magic: the file systems this machine has (ext4 for /var/tmp,
// tmpfs via a mount made here when root, /dev/shm), the names of cluster file systems, and the
// numeric fallback for the others.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/fs/fs.hpp"
#include "ckptbench/fs/lustre.hpp"
#include "ckptbench/fs/page_cache.hpp"
#include "support.hpp"

using namespace ckpt;
using ckpt_test::disk_tmp_base;
using ckpt_test::TmpDir;
namespace fsys = std::filesystem;

TEST(FsTypeName, ClusterAndLocalFileSystems) {
  EXPECT_EQ(fs_type_name(0x0BD00BD0), "lustre");  // LL_SUPER_MAGIC
  EXPECT_EQ(fs_type_name(0x47504653), "gpfs");    // "GPFS": IBM Storage Scale
  EXPECT_EQ(fs_type_name(0x19830326), "beegfs");
  EXPECT_EQ(fs_type_name(0x6969), "nfs");
  EXPECT_EQ(fs_type_name(0x58465342), "xfs");  // "XFSB"
  EXPECT_EQ(fs_type_name(0xEF53), "ext4");     // ext2/3/4 share the magic
  EXPECT_EQ(fs_type_name(0x01021994), "tmpfs");
}

TEST(FsTypeName, UnknownMagicIsReportedByNumber) {
  EXPECT_EQ(fs_type_name(0x9FA0), "0x9fa0");  // procfs: not in the table
  EXPECT_EQ(fs_type_name(0x12345678), "0x12345678");
}

// What `stat -f -c %t` (GNU coreutils, hex magic) says about a path, or "" when unavailable.
static std::string stat_f_magic(const std::string& path) {
  try {
    CommandResult r = run_command({"stat", "-f", "-c", "%t", path}, 30);
    if (!r.ok()) return "";
    std::string s = r.out;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  } catch (const Error&) {
    return "";
  }
}

static std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

TEST(ProbeFs, VarTmpAgreesWithStatF) {
  FsInfo fi = probe_fs("/var/tmp");
  std::string expect = stat_f_magic("/var/tmp");
  if (!expect.empty()) {
    EXPECT_EQ(hex(fi.magic), expect);
  }
  EXPECT_EQ(fi.type, fs_type_name(fi.magic));
  EXPECT_GT(fi.total_bytes, 0u);
  EXPECT_LE(fi.free_bytes, fi.total_bytes);
  EXPECT_GT(fi.block_size, 0u);
  if (fi.magic != 0xEF53)
    GTEST_SKIP() << "/var/tmp is " << fi.type << " here, not ext4 (the ext4 check is skipped)";
  EXPECT_EQ(fi.type, "ext4");
}

TEST(ProbeFs, ProcIsNamedByNumber) {
  struct statfs sf;
  if (statfs("/proc", &sf) != 0 || static_cast<uint32_t>(sf.f_type) != 0x9FA0)
    GTEST_SKIP() << "/proc is not procfs here";
  EXPECT_EQ(probe_fs("/proc").type, "0x9fa0");
}

TEST(ProbeFs, DevShmIsTmpfs) {
  struct statfs sf;
  if (statfs("/dev/shm", &sf) != 0) GTEST_SKIP() << "no /dev/shm";
  if (static_cast<uint32_t>(sf.f_type) != 0x01021994)
    GTEST_SKIP() << "/dev/shm is not tmpfs here (magic 0x" << hex(sf.f_type) << ")";
  FsInfo fi = probe_fs("/dev/shm");
  EXPECT_EQ(fi.type, "tmpfs");
  EXPECT_EQ(hex(fi.magic),
            stat_f_magic("/dev/shm").empty() ? hex(fi.magic) : stat_f_magic("/dev/shm"));
}

// Mounts a 4 MiB tmpfs on a fresh directory, checks detection and size, unmounts.
TEST(ProbeFs, TmpfsMountedByTheTest) {
  if (geteuid() != 0)
    GTEST_SKIP() << "mounting tmpfs needs root (running as uid " << geteuid() << ")";
  std::string dir = "/var/tmp/ckpt_fsdetect_XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr) << std::strerror(errno);
  if (::mount("ckptbench-test", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=4m") != 0) {
    int err = errno;
    ::rmdir(dir.c_str());
    GTEST_SKIP() << "cannot mount tmpfs on " << dir << ": " << std::strerror(err)
                 << " (a container without CAP_SYS_ADMIN?)";
  }
  FsInfo fi;
  bool probed = false;
  std::string what;
  try {
    fi = probe_fs(dir);
    probed = true;
  } catch (const std::exception& e) {
    what = e.what();
  }
  std::string stat_says = stat_f_magic(dir);
  EXPECT_EQ(::umount2(dir.c_str(), 0), 0) << std::strerror(errno);
  ::rmdir(dir.c_str());
  ASSERT_TRUE(probed) << what;
  EXPECT_EQ(fi.type, "tmpfs");
  EXPECT_EQ(fi.magic, 0x01021994u);
  if (!stat_says.empty()) {
    EXPECT_EQ(hex(fi.magic), stat_says);
  }
  EXPECT_EQ(fi.total_bytes, 4u << 20);
  EXPECT_LE(fi.free_bytes, fi.total_bytes);
  // Striping on it is not applicable.
  nlohmann::json rep;
  StripeRequest r;
  r.count = 2;
  EXPECT_NE(apply_striping(dir, r, fi.type, false, rep).find("tmpfs"), std::string::npos);
  EXPECT_EQ(rep["fs"], "tmpfs");
}

TEST(ProbeFs, MissingDirectoryIsAnIoError) {
  EXPECT_THROW(probe_fs("/nonexistent/ckptbench/dir"), IoError);
}

// Residency over byte ranges: a file on disk, its cache dropped, then half of it read back.
TEST(Residency, CountsOnlyTheRangesAsked) {
  TmpDir d("resid", disk_tmp_base());
  const std::string path = d.path + "/f";
  const uint64_t mib = 1 << 20;
  // Larger than the read-ahead window past 2 MiB (read_ahead_kb can be 8 MiB, as on virtio
  // disks), so the last MiB stays unread.
  const uint64_t size = 16 * mib;
  {
    std::string buf(size, 'x');
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(buf.data(), 1, buf.size(), f), buf.size());
    std::fclose(f);
  }
  fadvise_dontneed(path);
  uint64_t res = 1, tot = 0;
  ASSERT_GE(resident_in_ranges(path, {}, &res, &tot), 0);
  EXPECT_EQ(tot, size);
  EXPECT_LT(res, mib) << "the cache of a clean file was not dropped";
  // Read the first 2 MiB back into the cache and measure. drop_caches is global: a test running
  // beside this one (ctest -j) may empty the cache in between, so read and measure again (at
  // most 5 times) until nothing interfered.
  double first = 0;
  uint64_t small_res = 0, small_tot = 0;
  for (int attempt = 0; attempt < 5; attempt++) {
    std::string buf(2 * mib, '\0');
    FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    posix_fadvise(fileno(f), 0, 0, POSIX_FADV_RANDOM);  // no read-ahead past what is read
    ASSERT_EQ(std::fread(buf.data(), 1, buf.size(), f), buf.size());
    std::fclose(f);
    // Ranges: the first half (read: resident); ranges that do not start on a page count their
    // bytes, not whole pages.
    first = resident_in_ranges(path, {{0, 2 * mib}}, &res, &tot);
    resident_in_ranges(path, {{100, 1000}, {5000, 10}}, &small_res, &small_tot);
    if (first == 1.0 && small_res == small_tot) break;
  }
  EXPECT_DOUBLE_EQ(first, 1.0);
  EXPECT_EQ(tot, 2 * mib);
  EXPECT_EQ(small_tot, 1010u);
  EXPECT_EQ(small_res, 1010u);
  resident_in_ranges(path, {{size - 10, 100}, {2 * size, 4096}}, &res, &tot);
  EXPECT_EQ(tot, 10u);
  // The last 1 MiB was never read (no read-ahead, and far past its window).
  double last = resident_in_ranges(path, {{size - mib, mib}}, &res, &tot);
  EXPECT_LT(last, 0.5);
  EXPECT_EQ(resident_in_ranges(d.path + "/missing", {}, &res, &tot), -1);
}
