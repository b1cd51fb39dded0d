// Page-cache control between a save and a restore: clean and drop a file's pages
// (fdatasync + POSIX_FADV_DONTNEED), measure what is resident (mincore), drop the node's cache.
#include "ckptbench/fs/page_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/base/error.hpp"

namespace ckpt {

void fadvise_dontneed(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open '" + path + "' to drop its cached pages", errno);
  int rc = ::fdatasync(fd);
  int err = errno;
  if (rc == 0) {
    rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    err = rc;
  }
  ::close(fd);
  if (rc != 0) throw_errno("fdatasync/fadvise '" + path + "'", err);
}

double resident_in_ranges(const std::string& path,
                          const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                          uint64_t* resident_bytes, uint64_t* range_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    if (st.st_size == 0 && resident_bytes) *resident_bytes = 0;
    if (st.st_size == 0 && range_bytes) *range_bytes = 0;
    return st.st_size == 0 ? 0 : -1;
  }
  const uint64_t len = static_cast<uint64_t>(st.st_size);
  void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return -1;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<std::pair<uint64_t, uint64_t>> want = ranges;
  if (want.empty()) want.push_back({0, len});
  std::vector<unsigned char> vec;
  uint64_t res = 0, total = 0;
  bool ok = true;
  for (auto [off, n] : want) {
    if (off >= len || n == 0) continue;
    const uint64_t end = std::min(len, off + n);
    const uint64_t first = off / page * page;
    const uint64_t pages = (end - first + page - 1) / page;
    vec.assign(pages, 0);
    if (mincore(static_cast<char*>(p) + first, end - first, vec.data()) != 0) {
      ok = false;
      break;
    }
    // Whole pages, cut to the range at both ends.
    for (uint64_t k = 0; k < pages; k++) {
      const uint64_t lo = std::max(off, first + k * page);
      const uint64_t hi = std::min(end, first + (k + 1) * page);
      if (vec[k] & 1) res += hi - lo;
    }
    total += end - off;
  }
  munmap(p, len);
  if (!ok) return -1;
  if (resident_bytes) *resident_bytes = res;
  if (range_bytes) *range_bytes = total;
  return total ? static_cast<double>(res) / static_cast<double>(total) : 0.0;
}

bool can_drop_caches() { return geteuid() == 0 && access("/proc/sys/vm/drop_caches", W_OK) == 0; }

std::string drop_caches() {
  ::sync();
  int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open /proc/sys/vm/drop_caches: " + errno_text(errno);
  ssize_t n = ::write(fd, "3\n", 2);
  int err = errno;
  ::close(fd);
  if (n != 2) return "cannot write /proc/sys/vm/drop_caches: " + errno_text(err);
  return "";
}

}  // namespace ckpt
