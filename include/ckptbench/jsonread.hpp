// Strict reader for JSON config objects: typed getters with defaults and bounds, and a finish()
// that rejects unknown keys. Every error names the full key path and what is allowed.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ckpt {

using json = nlohmann::json;

// Human-readable JSON type name of a value ("string", "number", "object", ...).
std::string json_type_name(const json& v);

// Deepest nesting any JSON text ckptbench reads may have (configs, safetensors index and
// config.json files): deeper texts are refused while parsing, before the value is built, so no
// recursive walk (dump, error printing, the config reader) ever sees one.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as JSON with the depth limit. Throws ConfigError naming `what` (a file name or
// "config") on a syntax error or too deep a nesting.
json parse_json_limited(const std::string& text, const std::string& what);

// The whole content of a small regular file, opened read-only. Throws ConfigError naming the path:
// cannot open, not a regular file, larger than `limit` bytes, short read.
std::string read_small_file(const std::string& path, uint64_t limit);

// A value for an error message: compact JSON cut to at most `max` characters ("..." and the full
// length appended when cut), so no message quotes an unbounded value.
std::string json_excerpt(const json& v, size_t max = 160);
// The same for a string taken from the input (a key name, a path).
std::string text_excerpt(const std::string& s, size_t max = 160);

class ObjectReader {
 public:
  // `path` is the key path of `obj` for messages ("" for the top level, "model", "sweep", ...).
  // Throws ConfigError if obj is not an object.
  ObjectReader(const json& obj, std::string path);

  bool has(const std::string& key) const;
  // Raw access (marks the key as known). nullptr when absent.
  const json* raw(const std::string& key);

  std::string str(const std::string& key, const std::string& def);
  std::optional<std::string> opt_str(const std::string& key);
  // Value must be one of `allowed`.
  std::string choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& allowed);
  bool boolean(const std::string& key, bool def);
  std::optional<bool> opt_boolean(const std::string& key);
  // Integer in [lo, hi].
  int64_t integer(const std::string& key, int64_t def, int64_t lo, int64_t hi);
  std::optional<int64_t> opt_integer(const std::string& key, int64_t lo, int64_t hi);
  double number(const std::string& key, double def, double lo, double hi);
  // A size: a non-negative integer number of bytes or a string like "4K", "1MiB".
  uint64_t size(const std::string& key, uint64_t def, bool allow_zero = false);
  std::optional<uint64_t> opt_size(const std::string& key, bool allow_zero = false);

  // Full dotted path of a key, for messages.
  std::string key_path(const std::string& key) const;
  // Throws ConfigError listing the first unknown key and the allowed keys.
  void finish() const;
  // Mark a key as known without reading it (e.g. "comment").
  void allow(const std::string& key);

 private:
  const json& obj_;
  std::string path_;
  std::set<std::string> known_;
};

// A config section's options as one table: each row is a key and how to read it into O. The
// table is both the parser and the list of keys (for the docs check and for the sections of
// backends not chosen), so the two cannot disagree.
template <class O>
struct OptionTable {
  using Read = std::function<void(ObjectReader& r, const std::string& key, O& o)>;
  std::vector<std::pair<std::string, Read>> rows;

  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& row : rows) k.push_back(row.first);
    return k;
  }
  // Reads every row (an absent key keeps O's default), then rejects keys not in the table,
  // naming `path`.
  O parse(const json& section, const std::string& path) const {
    ObjectReader r(section, path);
    O o;
    for (const auto& [key, read] : rows) read(r, key, o);
    r.finish();
    return o;
  }
};

// Converts a size value (integer or string) found at `path`.
uint64_t json_to_size(const json& v, const std::string& path, bool allow_zero = false);

}  // namespace ckpt
