// FNV-1a 64: the one non-cryptographic hash of the tool (plan digests, config agreement).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ckpt {

class Fnv1a {
 public:
  Fnv1a& add(const void* p, size_t n);
  Fnv1a& u64(uint64_t v) { return add(&v, sizeof v); }
  // A string with its length first (so that "ab","c" and "a","bc" differ).
  Fnv1a& str(const std::string& s) { return u64(s.size()).add(s.data(), s.size()); }
  uint64_t value() const { return h_; }
  std::string hex() const;  // 16 lowercase hex digits

 private:
  uint64_t h_ = 1469598103934665603ull;
};

}  // namespace ckpt
