#include "ckptbench/base/hash.hpp"

#include <cstdio>

namespace ckpt {

Fnv1a& Fnv1a::add(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++) {
    h_ ^= b[i];
    h_ *= 1099511628211ull;
  }
  return *this;
}

std::string Fnv1a::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
  return buf;
}

}  // namespace ckpt
