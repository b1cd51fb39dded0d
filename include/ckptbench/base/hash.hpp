// FNV-1a 64: the one non-cryptographic hash of the tool (plan digests, config agreement).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ckpt {

class Fnv1a {
 public:
  Fnv1a& add(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; i++) {
      h_ ^= b[i];
      h_ *= 1099511628211ull;
    }
    return *this;
  }
  Fnv1a& u64(uint64_t v) { return add(&v, sizeof v); }
  // A string with its length first (so that "ab","c" and "a","bc" differ).
  Fnv1a& str(const std::string& s) { return u64(s.size()).add(s.data(), s.size()); }
  uint64_t value() const { return h_; }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

}  // namespace ckpt
