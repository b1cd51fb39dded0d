// The data pattern: fill and check round-trip at any position; any changed byte is found.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ckptbench/buffers.hpp"

using namespace ckpt;

TEST(Pattern, RoundTripAndStampFastPath) {
  Pattern p(64 << 10, 7);
  BufferPool pool(2, 64 << 10, 4096);
  pool.prefill(p);
  Buffer& b = pool.at(0);
  ASSERT_TRUE(b.holds_base);
  // Fast path (only stamps written) must equal the full fill.
  p.fill({b.data, b.size}, 3, 1 << 20, 128 << 10, true);
  std::vector<std::byte> full(b.size);
  p.fill(full, 3, 1 << 20, 128 << 10, false);
  EXPECT_EQ(0, memcmp(full.data(), b.data, b.size));
  EXPECT_FALSE(p.check({b.data, b.size}, 3, 1 << 20, 128 << 10).has_value());
}

TEST(Pattern, DependsOnFileAndOffset) {
  Pattern p(8192, 1);
  std::vector<std::byte> a(8192), b(8192);
  p.fill(a, 1, 0, 0, false);
  p.fill(b, 2, 0, 0, false);
  EXPECT_NE(0, memcmp(a.data(), b.data(), a.size()));
  EXPECT_TRUE(p.check(a, 2, 0, 0).has_value());     // wrong file
  EXPECT_TRUE(p.check(a, 1, 4096, 0).has_value());  // wrong extent offset
  EXPECT_FALSE(p.check(a, 1, 0, 0).has_value());
}

TEST(Pattern, UnalignedPositionsAndCorruption) {
  Pattern p(4096, 9);
  for (uint64_t pos : {0ull, 1ull, 15ull, 17ull, 4090ull, 12345ull}) {
    std::vector<std::byte> buf(10000);
    p.fill(buf, 5, 8192, pos, false);
    ASSERT_FALSE(p.check(buf, 5, 8192, pos).has_value()) << pos;
    for (size_t at : {size_t{0}, size_t{9}, size_t{4000}, size_t{9999}}) {
      auto copy = buf;
      copy[at] ^= std::byte{1};
      auto bad = p.check(copy, 5, 8192, pos);
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
