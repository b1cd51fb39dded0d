#include "ckptbench/base/units.hpp"

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <limits>
#include <string>

#include "ckptbench/base/error.hpp"

namespace ckpt {

std::string format_text(const char* f, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

uint64_t parse_size(std::string_view text, std::string_view what, bool allow_zero) {
  auto bad = [&](const std::string& why) -> ConfigError {
    return ConfigError(std::string(what) + ": invalid size '" + std::string(text) + "' (" + why +
                       "; use a byte count or a number with K, M, G, T, e.g. 4K, 1MiB, 2GiB)");
  };
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) i++;
  if (i < text.size() && text[i] == '-') throw bad("negative");
  size_t start = i;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) throw bad("too large");
    v = v * 10 + d;
    i++;
  }
  if (i == start) throw bad("no number");
  while (i < text.size() && text[i] == ' ') i++;
  std::string unit;
  for (; i < text.size(); i++) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) break;
    unit += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  }
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) i++;
  if (i != text.size()) throw bad("trailing characters");
  int shift = 0;
  if (unit.empty() || unit == "B") {
    shift = 0;
  } else {
    char u = unit[0];
    std::string rest = unit.substr(1);
    if (!(rest.empty() || rest == "B" || rest == "IB")) throw bad("unknown unit '" + unit + "'");
    switch (u) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      case 'P':
        shift = 50;
        break;
      default:
        throw bad("unknown unit '" + unit + "'");
    }
  }
  if (shift > 0 && v > (std::numeric_limits<uint64_t>::max() >> shift)) throw bad("too large");
  v <<= shift;
  if (v == 0 && !allow_zero) throw bad("must be greater than zero");
  return v;
}

std::string format_count(uint64_t n) {
  if (n < 1000) return std::to_string(n);
  static const char* suffix[] = {"K", "M", "B", "T", "P", "E"};
  double v = static_cast<double>(n);
  int i = -1;
  while (v >= 999.5 && i < 5) {
    v /= 1000.0;
    i++;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf,
                v >= 99.95   ? "%.0f%s"
                : v >= 9.995 ? "%.1f%s"
                             : "%.2f%s",
                v, suffix[i]);
  return buf;
}

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

}  // namespace ckpt
