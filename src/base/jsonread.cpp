#include "ckptbench/base/jsonread.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "ckptbench/base/error.hpp"
#include "ckptbench/base/units.hpp"

namespace ckpt {

std::string json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 when the byte there starts none.
size_t utf8_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // no overlong forms
    if (c == 0xed) hi = 0x9f;  // no surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;  // nothing beyond U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; k++)
    if (b(i + k) < 0x80 || b(i + k) > 0xbf) return 0;
  return n;
}

}  // namespace

std::string printable_text(const std::string& s) {
  static const char hex[] = "0123456789abcdef";
  std::string r;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x20 || c == 0x7f ? 0 : utf8_length(s, i);
    if (n == 0) {
      r += "\\x";
      r += hex[c >> 4];
      r += hex[c & 15];
      i++;
    } else {
      r.append(s, i, n);
      i += n;
    }
  }
  return r;
}

namespace {

// The lines (from 1) of the key tokens with ordinals `a` and `b` (from 0, in document order):
// a string token is a key when the next character after it that is not white space is ':'. 0 for
// a token not found (the text may end, or break, right after the parser's last key).
std::pair<size_t, size_t> key_lines(const std::string& text, uint64_t a, uint64_t b) {
  size_t line = 1, la = 0, lb = 0;
  uint64_t ordinal = 0;
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  for (size_t i = 0; i < text.size() && lb == 0; i++) {
    if (text[i] == '\n') line++;
    if (text[i] != '"') continue;
    const size_t start = line;
    // To the closing quote; a backslash escapes the character after it (a quote or a backslash
    // too). The text up to the duplicate parsed: no string there holds a raw line break.
    for (i++; i < text.size() && text[i] != '"'; i++)
      if (text[i] == '\\') i++;
    size_t k = i + 1;
    while (k < text.size() && space(text[k])) k++;
    if (k >= text.size() || text[k] != ':') continue;
    if (ordinal == a) la = start;
    if (ordinal == b) lb = start;
    ordinal++;
  }
  return {la, lb};
}

// An object or array the parser is inside: the keys an object has had (each with its ordinal in
// the document), the key or element index the parser is in.
struct OpenValue {
  bool object = false;
  std::map<std::string, uint64_t> keys;
  std::string key;
  uint64_t index = 0;
};

// 'a.b[2].c': where the parser is, from the open values (the last one's key is the one named).
std::string key_path_of(const std::vector<OpenValue>& open) {
  std::string path;
  for (const OpenValue& v : open) {
    if (v.object)
      path += (path.empty() ? "" : ".") + v.key;
    else
      path += "[" + std::to_string(v.index) + "]";
  }
  return path;
}

}  // namespace

json parse_json_limited(const std::string& text, const std::string& what) {
  // nlohmann's lexer takes a NUL byte for the end of the input and would ignore what follows it;
  // no JSON text holds one (a string writes it \u0000).
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw ConfigError(what + ": not valid JSON: a NUL byte at offset " + std::to_string(nul) +
                      " (a binary file?)");
  // The callback sees each value's depth as the parser reaches it; throwing stops the parse
  // before anything deeper is built (nlohmann's parser itself keeps its own stack, not recursion).
  // It also refuses a key given twice in one object (the parser would keep the last value and
  // drop the first without a word), naming both lines: the callback knows no position, so it
  // counts the keys in document order and key_lines finds the two tokens in the text.
  int deepest = 0;
  std::vector<OpenValue> open;  // the objects and arrays the parser is inside, outermost first
  uint64_t keys_seen = 0;
  bool duplicated = false;  // `dup` may be "", a key too
  std::string dup, dup_path;
  uint64_t dup_first = 0, dup_second = 0;
  const auto element_done = [&open] {
    if (!open.empty() && !open.back().object) open.back().index++;
  };
  auto guard = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (depth > kMaxJsonDepth) {
      deepest = depth;
      throw ConfigError("");
    }
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        open.emplace_back();
        open.back().object = ev == json::parse_event_t::object_start;
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        element_done();
        break;
      case json::parse_event_t::value:
        element_done();
        break;
      case json::parse_event_t::key:
        if (!open.empty() && open.back().object && parsed.is_string()) {
          OpenValue& o = open.back();
          o.key = parsed.get<std::string>();
          if (const auto [it, fresh] = o.keys.emplace(o.key, keys_seen); !fresh) {
            duplicated = true;
            dup = o.key;
            dup_path = key_path_of(open);
            dup_first = it->second;
            dup_second = keys_seen;
            throw ConfigError("");
          }
        }
        keys_seen++;
        break;
    }
    return true;
  };
  try {
    return json::parse(text, guard);
  } catch (const json::parse_error& e) {
    throw ConfigError(what + ": not valid JSON: " + text_excerpt(printable_text(e.what()), 300));
  } catch (const json::out_of_range& e) {
    // 406: a number beyond a double (1e999); the parser's message names it.
    throw ConfigError(what + ": a value out of range: " + text_excerpt(e.what(), 300));
  } catch (const ConfigError&) {
    if (duplicated) {
      const auto [la, lb] = key_lines(text, dup_first, dup_second);
      std::vector<std::string> where;
      if (dup_path != dup) where.push_back("'" + text_excerpt(printable_text(dup_path), 200) + "'");
      if (la > 0 && la == lb)
        where.push_back("both on line " + std::to_string(la));
      else if (la > 0 && lb > 0)
        where.push_back("lines " + std::to_string(la) + " and " + std::to_string(lb));
      else if (la > 0)
        where.push_back("first on line " + std::to_string(la));
      std::string at;
      for (const auto& w : where) at += (at.empty() ? " (" : ", ") + w;
      if (!at.empty()) at += ")";
      throw ConfigError(what + ": the key \"" + text_excerpt(printable_text(dup), 100) +
                        "\" appears twice in one object" + at + "; give each key once");
    }
    if (deepest == 0) throw;
    throw ConfigError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                      " levels (arrays/objects inside each other); no ckptbench input needs "
                      "more than a few");
  }
}

std::string text_excerpt(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  std::string out = s.substr(0, max);
  out += "... (";
  out += std::to_string(s.size());
  out += " characters)";
  return out;
}

std::string json_excerpt(const json& v, size_t max) {
  return text_excerpt(v.dump(-1, ' ', false, json::error_handler_t::replace), max);
}

ObjectReader::ObjectReader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {
  if (!obj_.is_object())
    throw ConfigError((path_.empty() ? std::string("config") : "'" + path_ + "'") +
                      ": expected a JSON object, got " + json_type_name(obj_));
}

std::string ObjectReader::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool ObjectReader::has(const std::string& key) const { return obj_.contains(key); }

const json* ObjectReader::raw(const std::string& key) {
  known_.insert(key);
  auto it = obj_.find(key);
  return it == obj_.end() ? nullptr : &*it;
}

void ObjectReader::allow(const std::string& key) { known_.insert(key); }

static ConfigError type_error(const std::string& path, const json& v, const std::string& want) {
  return ConfigError("'" + path + "': expected " + want + ", got " + json_type_name(v) + " " +
                     json_excerpt(v));
}

std::optional<std::string> ObjectReader::opt_str(const std::string& key) {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw type_error(key_path(key), *v, "a string");
  return v->get<std::string>();
}

std::string ObjectReader::str(const std::string& key, const std::string& def) {
  return opt_str(key).value_or(def);
}

std::string ObjectReader::choice(const std::string& key, const std::string& def,
                                 const std::vector<std::string>& allowed) {
  std::string v = str(key, def);
  for (const auto& a : allowed)
    if (a == v) return v;
  throw ConfigError("'" + key_path(key) + "': unknown value '" + text_excerpt(v) +
                    "' (allowed: " + join_names(allowed) + ")");
}

std::optional<bool> ObjectReader::opt_boolean(const std::string& key) {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw type_error(key_path(key), *v, "true or false");
  return v->get<bool>();
}

bool ObjectReader::boolean(const std::string& key, bool def) {
  return opt_boolean(key).value_or(def);
}

std::optional<int64_t> ObjectReader::opt_integer(const std::string& key, int64_t lo, int64_t hi) {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  int64_t x = 0;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      throw type_error(key_path(key), *v, "a smaller integer");
    x = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9e15) {
    x = static_cast<int64_t>(v->get<double>());
  } else {
    throw type_error(key_path(key), *v, "an integer");
  }
  if (x < lo || x > hi)
    throw ConfigError("'" + key_path(key) + "': " + std::to_string(x) +
                      " is out of range (allowed: " + std::to_string(lo) + " to " +
                      std::to_string(hi) + ")");
  return x;
}

int64_t ObjectReader::integer(const std::string& key, int64_t def, int64_t lo, int64_t hi) {
  return opt_integer(key, lo, hi).value_or(def);
}

double ObjectReader::number(const std::string& key, double def, double lo, double hi) {
  const json* v = raw(key);
  if (!v) return def;
  if (!v->is_number()) throw type_error(key_path(key), *v, "a number");
  double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    throw ConfigError("'" + key_path(key) + "': " + json_excerpt(*v) +
                      " is out of range (allowed: " + json(lo).dump() + " to " + json(hi).dump() +
                      ")");
  return x;
}

uint64_t json_to_size(const json& v, const std::string& path, bool allow_zero) {
  if (v.is_string()) return parse_size(v.get<std::string>(), "'" + path + "'", allow_zero);
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    uint64_t x = v.get<uint64_t>();
    if (x == 0 && !allow_zero)
      throw ConfigError("'" + path + "': invalid size 0 (must be greater than zero)");
    return x;
  }
  if (v.is_number_integer() || (v.is_number_float() && v.get<double>() < 0))
    throw ConfigError("'" + path + "': invalid size " + json_excerpt(v) + " (negative)");
  throw type_error(path, v, "a size (byte count or string like \"4K\", \"1MiB\")");
}

std::optional<uint64_t> ObjectReader::opt_size(const std::string& key, bool allow_zero) {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  return json_to_size(*v, key_path(key), allow_zero);
}

uint64_t ObjectReader::size(const std::string& key, uint64_t def, bool allow_zero) {
  return opt_size(key, allow_zero).value_or(def);
}

void ObjectReader::finish() const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (known_.count(it.key())) continue;
    std::string list;
    for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
    throw ConfigError("unknown key '" + text_excerpt(key_path(it.key())) + "' (allowed" +
                      (path_.empty() ? "" : " in '" + path_ + "'") + ": " + list + ")");
  }
}

std::string file_kind_text(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (a named pipe, or a pipe such as <(...) gives)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

namespace {

std::string limit_text(uint64_t limit) {
  if (limit >= (1ull << 30) && limit % (1ull << 30) == 0)
    return std::to_string(limit >> 30) + " GiB";
  if (limit >= (1ull << 20) && limit % (1ull << 20) == 0)
    return std::to_string(limit >> 20) + " MiB";
  return format_bytes(limit);
}

}  // namespace

InputFile::InputFile(const std::string& path, std::string what, std::string want)
    : what_(std::move(what)), want_(std::move(want)) {
  auto refuse = [&](unsigned mode) {
    const std::string kind = file_kind_text(mode);
    return ConfigError(what_ + " is " + kind +
                       (kind.rfind("not ", 0) == 0 ? "" : ", not a regular file") +
                       (want_.empty() ? "" : ": " + want_));
  };
  // stat first: a socket cannot be opened at all (ENXIO), and opening a device can act on it.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw refuse(st.st_mode);
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    err_ = errno;
    return;
  }
  // The descriptor's own type decides: the path may have been replaced since the stat.
  if (::fstat(fd_, &st) != 0) {
    const int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw ConfigError(what_ + ": fstat: " + errno_text(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw refuse(st.st_mode);
  }
  const int fl = ::fcntl(fd_, F_GETFL);
  if (fl < 0 || ::fcntl(fd_, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    const int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw ConfigError(what_ + ": fcntl: " + errno_text(e));
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::read_all(uint64_t limit, const std::string& limit_of) const {
  if (size_ > limit)
    throw ConfigError(what_ + " is " + std::to_string(size_) + " bytes, larger than the " +
                      limit_text(limit) + " limit" + limit_of);
  std::string s(static_cast<size_t>(size_), '\0');
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::pread(fd_, s.data() + done, s.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ConfigError(what_ + ": read: " + errno_text(errno));
    if (n == 0) throw ConfigError(what_ + ": short read (the file shrank)");
    done += static_cast<size_t>(n);
  }
  return s;
}

std::string read_small_file(const std::string& path, uint64_t limit) {
  InputFile f(path, path, "");
  if (!f.is_open()) throw ConfigError(path + ": cannot open: " + errno_text(f.error()));
  return f.read_all(limit);
}

}  // namespace ckpt
