// File-system facts about a directory: the type (statfs magic, CephFS behind FUSE), free space,
// direct-I/O alignment and whether O_DIRECT works, the kernel's pseudo file systems.
#include "ckptbench/fs/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/jsonread.hpp"

namespace fsys = std::filesystem;

namespace ckpt {

std::string fs_type_name(uint64_t magic) {
  switch (magic) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x01021994:
      return "tmpfs";
    case 0x0BD00BD0:
      return "lustre";
    case 0x47504653:
      return "gpfs";
    case 0x19830326:
      return "beegfs";
    case 0x6969:
      return "nfs";
    case 0x9123683E:
      return "btrfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x65735546:
      return "fuse";
    case 0x00C36400:
      return "cephfs";
    case 0xFF534D42:
      return "cifs";
    case 0x5346414F:
      return "afs";
    case 0x858458F6:
      return "ramfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x62656572:
      return "sysfs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(magic));
      return buf;
    }
  }
}

nlohmann::json FsInfo::to_json() const {
  return {{"type", type},
          {"magic", magic},
          {"block_size", block_size},
          {"free_bytes", free_bytes},
          {"total_bytes", total_bytes},
          {"dio_mem_align", dio_mem_align},
          {"dio_offset_align", dio_offset_align},
          {"dio_align_source", dio_align_source}};
}

std::string pseudo_fs_name(uint64_t magic) {
  switch (magic) {  // linux/magic.h
    case 0x62656572:
      return "sysfs";
    case 0x9fa0:
      return "proc";
    case 0x27e0eb:
      return "cgroup";
    case 0x63677270:
      return "cgroup2";
    case 0x64626720:
      return "debugfs";
    case 0x74726163:
      return "tracefs";
    case 0x73636673:
      return "securityfs";
    case 0xcafe4a11:
      return "bpf";
    case 0x6165676c:
      return "pstore";
    case 0x1cd1:
      return "devpts";
    case 0xde5e81e4:
      return "efivarfs";
    case 0xf97cff8c:
      return "selinuxfs";
    case 0x62656570:
      return "configfs";
    case 0x65735543:
      return "fusectl";
    case 0x19800202:
      return "mqueue";
    case 0x6e736673:
      return "nsfs";
    case 0x42494e4d:
      return "binfmt_misc";
    default:
      return "";
  }
}

FsInfo probe_fs(const std::string& dir) {
  FsInfo i;
  struct statfs sf;
  if (statfs(dir.c_str(), &sf) != 0) throw_errno("statfs '" + dir + "'", errno);
  i.magic = static_cast<uint64_t>(static_cast<uint32_t>(sf.f_type));
  i.type = fs_type_name(i.magic);
  // ceph-fuse is a FUSE mount: CephFS answers its virtual attributes (any directory has
  // ceph.dir.entries, any file ceph.file.layout).
  if (i.type == "fuse") {
    char buf[64];
    if (::getxattr(dir.c_str(), "ceph.dir.entries", buf, sizeof buf) >= 0 ||
        ::getxattr(dir.c_str(), "ceph.file.layout", buf, sizeof buf) >= 0 || errno == ERANGE)
      i.type = "cephfs";
  }
  struct statvfs sv;
  if (statvfs(dir.c_str(), &sv) != 0) throw_errno("statvfs '" + dir + "'", errno);
  i.block_size = sv.f_bsize;
  i.free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
  i.total_bytes = static_cast<uint64_t>(sv.f_blocks) * sv.f_frsize;
  return i;
}

uint64_t dio_alignment(const std::string& dir, FsInfo& info, bool probe_file) {
#ifdef STATX_DIOALIGN
  {
    struct statx sx;
    if (statx(AT_FDCWD, dir.c_str(), 0, STATX_DIOALIGN, &sx) == 0 &&
        (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 0) {
      info.dio_mem_align = sx.stx_dio_mem_align;
      info.dio_offset_align = sx.stx_dio_offset_align;
      info.dio_align_source = "statx";
      return sx.stx_dio_offset_align;
    }
    // Directories may not report it; try a probe file.
    std::string probe = dir + "/.ckptbench-dio-probe";
    int fd = probe_file ? open(probe.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0600) : -1;
    if (fd >= 0) {
      bool ok = statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
                (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align > 0;
      close(fd);
      unlink(probe.c_str());
      if (ok) {
        info.dio_mem_align = sx.stx_dio_mem_align;
        info.dio_offset_align = sx.stx_dio_offset_align;
        info.dio_align_source = "statx";
        return sx.stx_dio_offset_align;
      }
    }
  }
#endif
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    std::string p = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                    std::to_string(minor(st.st_dev)) + "/queue/logical_block_size";
    std::ifstream in(p);
    uint64_t v = 0;
    if (!(in >> v)) {
      // Partitions keep the queue directory on the parent device.
      std::ifstream in2("/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                        std::to_string(minor(st.st_dev)) + "/../queue/logical_block_size");
      in2 >> v;
    }
    if (v >= 512 && (v & (v - 1)) == 0) {
      info.dio_mem_align = v;
      info.dio_offset_align = v;
      info.dio_align_source = "sysfs";
      return v;
    }
  }
  info.dio_mem_align = 4096;
  info.dio_offset_align = 4096;
  info.dio_align_source = "default";
  return 4096;
}

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  fsys::path a = fsys::absolute(p, ec);
  if (ec) a = p;
  return a.lexically_normal().string();
}

bool not_writable_errno(int err) { return err == EACCES || err == EPERM || err == EROFS; }

bool supports_odirect(const std::string& dir, std::string* why) {
  std::string probe = dir + "/.ckptbench-odirect-probe";
  int fd =
      ::open(probe.c_str(), O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err != EEXIST && err != ELOOP) ::unlink(probe.c_str());
    // A path too long for the probe is not the file system refusing O_DIRECT.
    if (err == ENAMETOOLONG)
      throw ConfigError("the target's path is too long: probing O_DIRECT with '" +
                        text_excerpt(probe, 300) + "' (" + std::to_string(probe.size()) +
                        " bytes): " + errno_text(err) + "; give a shorter target");
    if (why) *why = errno_text(err);
    return false;
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

bool supports_odirect_read(const std::string& dir, FsInfo& info, std::string* why) {
  namespace sfs = std::filesystem;
  std::error_code ec;
  int fd = -1;
  std::string path;
  int err = 0;
  // The first regular file below dir (the walk does not follow links): opened O_RDONLY, never
  // created, written or removed; O_NONBLOCK so a FIFO swapped in does not block.
  for (auto it = sfs::recursive_directory_iterator(dir, ec);
       !ec && it != sfs::recursive_directory_iterator(); it.increment(ec)) {
    if (!sfs::is_regular_file(it->symlink_status(ec)) || ec) continue;
    path = it->path().string();
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    err = errno;
    break;
  }
  if (path.empty()) {
    if (why) *why = "no saved file to probe O_DIRECT with";
    return false;
  }
  if (fd < 0) {
    if (why)
      *why = errno_text(err) + " (opening the saved file '" + text_excerpt(path, 300) +
             "' read-only with O_DIRECT)";
    return false;
  }
#ifdef STATX_DIOALIGN
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
      sx.stx_dio_offset_align > 0) {
    info.dio_mem_align = sx.stx_dio_mem_align;
    info.dio_offset_align = sx.stx_dio_offset_align;
    info.dio_align_source = "statx";
  }
#endif
  ::close(fd);
  return true;
}

}  // namespace ckpt
