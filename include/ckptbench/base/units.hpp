// Size and duration parsing/formatting shared by config, CLI and report.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ckpt {

// Parses "4096", "4K", "4k", "4KiB", "1M", "1MiB", "2G", "2GiB", "1T". Binary multiples (K = 1024).
// "KB"/"MB"/"GB" are accepted as binary too (the storage-benchmark convention of fio and IOR).
// Throws ConfigError naming `what` on empty, negative, zero (unless allow_zero), overflow or junk.
uint64_t parse_size(std::string_view text, std::string_view what, bool allow_zero = false);

// "1.50 GiB", "4.00 KiB", "512 B".
std::string format_bytes(uint64_t bytes);
// A count with a decimal suffix and three significant digits: 512, 3.70K, 3.69M, 6.74B, 1.01T
// (parameter counts: a 3.7 M-parameter model never shows as "0.00B").
std::string format_count(uint64_t n);

// printf into a string, for short texts (file names, numbers): at most 255 characters. The
// compiler checks the arguments against a literal format.
std::string format_text(const char* f, ...) __attribute__((format(printf, 1, 2)));

// The current UTC time as ISO 8601 with a Z, to the second (2026-12-06T23:03:19Z).
std::string utc_now();

// Smallest multiple of `align` that is >= v (align > 0).
constexpr uint64_t round_up(uint64_t v, uint64_t align) { return (v + align - 1) / align * align; }
constexpr bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace ckpt
