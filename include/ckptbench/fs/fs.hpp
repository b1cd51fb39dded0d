// File-system facts about the target: type, direct-I/O alignment, free space, whether O_DIRECT
// works, the kernel's pseudo file systems. What the run does to the file system is in lock.hpp
// (run locking), beneath.hpp (operations beneath the run's directories) and cache.hpp (page cache).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace ckpt {

struct FsInfo {
  std::string
      type;  // "ext4", "xfs", "tmpfs", "lustre", "gpfs", "beegfs", "nfs", ... or "0x<magic>"
  uint64_t magic = 0;
  uint64_t block_size = 0;  // f_bsize
  uint64_t free_bytes = 0;  // f_bavail * f_frsize
  uint64_t total_bytes = 0;
  uint64_t dio_mem_align = 0;  // statx STATX_DIOALIGN (0 when unknown)
  uint64_t dio_offset_align = 0;
  std::string dio_align_source;  // "statx", "sysfs", "default"
  nlohmann::json to_json() const;
};

std::string fs_type_name(uint64_t magic);
// The kernel's pseudo file systems (sysfs, proc, cgroup, debugfs, tracefs, ...), by statfs magic:
// their name, or "" for any other. A directory made there is a kernel object (a cgroup), not
// storage, so no run goes there.
std::string pseudo_fs_name(uint64_t magic);
// Facts for an existing directory. Throws IoError when it cannot be examined.
FsInfo probe_fs(const std::string& dir);
// Direct-I/O offset alignment for files in dir: statx(STATX_DIOALIGN) on a probe file, else the
// device's logical_block_size from sysfs, else 4096. Sets info fields.
// probe_file false: never creates anything in dir (statx of the directory, else the device's
// logical block size), for directories ckptbench must not write in (--read-dir).
uint64_t dio_alignment(const std::string& dir, FsInfo& info, bool probe_file = true);

// Whether an errno says the target cannot be written by this user (EACCES, EPERM) or at all
// (EROFS): bad input for a run (ConfigError, exit 2), found before any I/O.
bool not_writable_errno(int err);

// Absolute, lexically normalised path.
std::string absolute_path(const std::string& p);

// True when files in dir can be opened with O_DIRECT (probe file created and removed).
bool supports_odirect(const std::string& dir, std::string* why = nullptr);
// For a restore, in a saved run that must stay untouched: whether a saved file below dir opens
// read-only with O_DIRECT (nothing is created); sets info's O_DIRECT alignment from that file
// when the kernel reports it.
bool supports_odirect_read(const std::string& dir, FsInfo& info, std::string* why);

}  // namespace ckpt
