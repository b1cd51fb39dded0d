// The data pattern: fill and check round-trip at any position; any changed byte is found.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/buffers.hpp"

using namespace ckpt;

// The fast path (window of a prefilled buffer, stamps only) gives the same bytes as a full fill,
// at every 4 KiB-aligned offset and any length, and the check accepts both.
TEST(Pattern, StagedWindowEqualsFullFill) {
  Pattern p(64 << 10, 7);
  BufferPool pool(1, 256 << 10, 4096, p.period());
  pool.prefill(p);
  Buffer& b = pool.at(0);
  for (uint64_t off : {0ull, 4096ull, 61440ull, 65536ull, 1ull << 20, (1ull << 20) + 8192}) {
    for (uint64_t len : {512ull, 4096ull, 5000ull, 65536ull, 256ull << 10}) {
      std::byte* w = stage_pattern(p, b, 3, off, len);
      EXPECT_EQ(w, b.data + off % p.period()) << off << " " << len;  // the fast path was taken
      std::vector<std::byte> full(len);
      p.fill(full, 3, off);
      ASSERT_EQ(0, memcmp(full.data(), w, len)) << off << " " << len;
      EXPECT_FALSE(p.check({w, len}, 3, off).has_value());
    }
  }
}

// Offsets that are not multiples of 4 KiB take the full fill; a dirty buffer is repaired before
// its window is used again.
TEST(Pattern, UnalignedOffsetsAndDirtyBuffers) {
  Pattern p(8192, 5);
  BufferPool pool(1, 16384, 4096, p.period());
  pool.prefill(p);
  Buffer& b = pool.at(0);
  std::byte* w = stage_pattern(p, b, 1, 1536, 3072);
  EXPECT_EQ(w, b.data);
  EXPECT_FALSE(p.check({w, 3072}, 1, 1536).has_value());
  EXPECT_LT(b.dirty_lo, b.dirty_hi);
  w = stage_pattern(p, b, 1, 8192, 16384);  // window at phase 0 overlaps the dirty part
  EXPECT_EQ(w, b.data);
  EXPECT_FALSE(p.check({w, 16384}, 1, 8192).has_value());
  EXPECT_EQ(b.dirty_lo, b.dirty_hi);
}

TEST(Pattern, DependsOnFileAndOffset) {
  Pattern p(8192, 1);
  std::vector<std::byte> a(8192), b(8192);
  p.fill(a, 1, 0);
  p.fill(b, 2, 0);
  EXPECT_NE(0, memcmp(a.data(), b.data(), a.size()));
  EXPECT_TRUE(p.check(a, 2, 0).has_value());     // wrong file
  EXPECT_TRUE(p.check(a, 1, 4096).has_value());  // wrong offset
  EXPECT_FALSE(p.check(a, 1, 0).has_value());
  EXPECT_THROW(Pattern(1000, 1), Error);  // the period must be a multiple of 4 KiB
}

// Any cut of a range verifies the same bytes: two pieces filled separately equal one fill.
TEST(Pattern, AnyCutGivesTheSameBytes) {
  Pattern p(4096, 9);
  std::vector<std::byte> whole(20000);
  p.fill(whole, 5, 8190);
  for (uint64_t cut : {1ull, 2ull, 15ull, 17ull, 4090ull, 12345ull}) {
    std::vector<std::byte> parts(20000);
    p.fill({parts.data(), cut}, 5, 8190);
    p.fill({parts.data() + cut, 20000 - cut}, 5, 8190 + cut);
    ASSERT_EQ(0, memcmp(whole.data(), parts.data(), whole.size())) << cut;
  }
}

TEST(Pattern, UnalignedPositionsAndCorruption) {
  Pattern p(4096, 9);
  for (uint64_t pos : {0ull, 1ull, 15ull, 17ull, 4090ull, 12345ull}) {
    std::vector<std::byte> buf(10000);
    p.fill(buf, 5, 8192 + pos);
    ASSERT_FALSE(p.check(buf, 5, 8192 + pos).has_value()) << pos;
    for (size_t at : {size_t{0}, size_t{9}, size_t{4000}, size_t{9999}}) {
      auto copy = buf;
      copy[at] ^= std::byte{1};
      auto bad = p.check(copy, 5, 8192 + pos);
      ASSERT_TRUE(bad.has_value()) << pos << " " << at;
      EXPECT_EQ(*bad, at);
    }
  }
}

// The pool is one region: buffers are aligned, do not overlap, and the huge-page measurement
// reads the pool's own mappings (never "unknown" on Linux, whole 2 MiB pages, none with THP off).
TEST(BufferPool, OneAlignedRegionAndItsHugePagesAreMeasured) {
  const uint64_t mib = 1 << 20;
  BufferPool pool(8, mib, 4096);
  for (size_t i = 0; i < pool.count(); i++) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.at(i).data) % 4096, 0u) << i;
    if (i > 0) {
      EXPECT_GE(pool.at(i).data, pool.at(i - 1).data + mib) << i;
    }
  }
  // The first buffer starts on a 2 MiB boundary (so each 1 MiB buffer lies in one huge page).
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.at(0).data) % (2 * mib), 0u);
  pool.prefill(Pattern(mib, 3));  // touch every page
  const int64_t huge = pool.huge_page_bytes();
  ASSERT_GE(huge, 0) << "the pool's mapping was not found in /proc/self/smaps";
  EXPECT_EQ(huge % static_cast<int64_t>(2 * mib), 0);
  EXPECT_LE(huge, static_cast<int64_t>(pool.total_bytes() + 4 * mib));
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode((std::istreambuf_iterator<char>(thp)), std::istreambuf_iterator<char>());
  if (mode.find("[never]") != std::string::npos) {
    EXPECT_EQ(huge, 0);
  }
}
