// The data pattern: fill and check round-trip at any position; any changed byte is found.
#include <gtest/gtest.h>

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
