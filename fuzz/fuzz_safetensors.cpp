// libFuzzer target for the safetensors header parser (fuzz/build.sh builds and runs it).
// The input is a whole file: 8-byte little-endian header length, JSON header, data section.
// Any exception other than ConfigError, any crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ckptbench/base/error.hpp"
#include "ckptbench/plan/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto entries = ckpt::parse_safetensors_header(bytes, size, "fuzz");
    // Accepted headers must satisfy the documented guarantees.
    const uint64_t n = size >= 8 ? *reinterpret_cast<const uint64_t*>(data) : 0;
    const uint64_t data_size = size - 8 - n;
    // Sorted by offset, back to back from 0 to the end of the data section (no gap, no overlap),
    // each spanning exactly numel * bits / 8 bytes.
    uint64_t prev_end = 0;
    for (const auto& e : entries) {
      if (e.name.empty() || e.name[0] == '/' || e.name.find("..") != std::string::npos ||
          e.begin != prev_end || e.begin > e.end || e.end > data_size)
        __builtin_trap();
      uint64_t numel = 1;
      for (uint64_t x : e.shape) numel *= x;  // no overflow: the parser checked numel * bits
      if (numel * ckpt::dtype_bits(e.dtype) != 8 * (e.end - e.begin)) __builtin_trap();
      prev_end = e.end;
    }
    if (prev_end != data_size) __builtin_trap();
  } catch (const ckpt::ConfigError&) {
    // Rejected input: the expected outcome for most inputs.
  }
  return 0;
}
