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

#include "ckptbench/base/enum_names.hpp"

namespace ckpt {

using json = nlohmann::json;

// Human-readable JSON type name of a value ("string", "number", "object", ...).
std::string json_type_name(const json& v);

// Deepest nesting any JSON text ckptbench reads may have (configs, safetensors index and
// config.json files): deeper texts are refused while parsing, before the value is built, so no
// recursive walk (dump, error printing, the config reader) ever sees one.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as JSON with the depth limit. Throws ConfigError naming `what` (a file name or
// "config") on a syntax error, a NUL byte (the parser would stop there), or too deep a nesting.
json parse_json_limited(const std::string& text, const std::string& what);

// Largest config file ckptbench reads (every rank parses it whole; real configs are a few KiB).
inline constexpr uint64_t kMaxConfigBytes = 16ull << 20;
// Largest report or manifest.json a restore reads (--from).
inline constexpr uint64_t kMaxReportBytes = 1ull << 30;

// "a directory", "a FIFO (a named pipe, ...)", "a socket", "a character device", "a block device"
// or "not a regular file": what a non-regular st_mode is, for messages.
std::string file_kind_text(unsigned mode);

// A file the user named as input (a config, a safetensors file, shard or index, the config.json
// beside it, a --from report or manifest), open for reading. Opening never blocks and never opens
// what is not a regular file: the path is stat()ed first (a socket or device is refused without an
// open, which could have side effects), then opened O_RDONLY|O_NONBLOCK|O_CLOEXEC (a FIFO put in
// place meanwhile does not block the open), checked with fstat on that descriptor before any read,
// and O_NONBLOCK cleared again.
class InputFile {
 public:
  // `what` starts the messages ("config file 'x.json'", "--from 'd': 'd/ckptbench-manifest.json'"),
  // `want` says what to give instead ("give a JSON file"; may be empty). Throws ConfigError
  // "<what> is a FIFO (...), not a regular file: <want>" when the path is not a regular
  // file, and on an fstat/fcntl failure; when the path cannot be opened (or does not exist),
  // is_open() is false and error() the errno, for the caller's own words.
  InputFile(const std::string& path, std::string what, std::string want);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  int error() const { return err_; }
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  // The whole content (pread from 0). Throws ConfigError "<what> is N bytes, larger than the
  // <limit> limit<limit_of>" above `limit` bytes, and on a read error or a file that shrank.
  std::string read_all(uint64_t limit, const std::string& limit_of = "") const;

 private:
  std::string what_, want_;
  int fd_ = -1;
  int err_ = 0;
  uint64_t size_ = 0;
};

// The whole content of a small regular file, opened as InputFile does. Throws ConfigError naming
// the path: cannot open, not a regular file (and what it is), larger than `limit` bytes, short
// read.
std::string read_small_file(const std::string& path, uint64_t limit);

// `s` with control bytes and bytes that are not UTF-8 written as \xNN, for a message quoting
// input (a JSON parser's "last read: ..." of a binary file).
std::string printable_text(const std::string& s);

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
  // The same, for an enum: its names from its one mapping.
  template <class E>
  E choice(const std::string& key, E def, const EnumNames<E>& names) {
    return *names.find(choice(key, names.name(def), names.names()));
  }
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
