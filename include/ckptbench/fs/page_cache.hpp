// Page-cache control between a save and a restore: what is resident, and dropping it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ckpt {

// Before a restore: make this rank's written pages clean and drop them (fdatasync +
// posix_fadvise DONTNEED per file). Throws IoError.
void fadvise_dontneed(const std::string& path);
// Bytes of [offset, offset + length) ranges of a file resident in the page cache (mmap + mincore,
// whole pages; ranges past the end are cut): *resident_bytes of *range_bytes. An empty list means
// the whole file. Returns the fraction, or -1 if unknown.
double resident_in_ranges(const std::string& path,
                          const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                          uint64_t* resident_bytes, uint64_t* range_bytes);
// Drops the page cache of this node (sync; echo 3 > /proc/sys/vm/drop_caches). "" or the reason.
std::string drop_caches();
bool can_drop_caches();

}  // namespace ckpt
