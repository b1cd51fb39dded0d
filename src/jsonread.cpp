#include "ckptbench/jsonread.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include "ckptbench/error.hpp"
#include "ckptbench/units.hpp"

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

json parse_json_limited(const std::string& text, const std::string& what) {
  // The callback sees each value's depth as the parser reaches it; throwing stops the parse
  // before anything deeper is built (nlohmann's parser itself keeps its own stack, not recursion).
  int deepest = 0;
  auto guard = [&deepest](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) {
      deepest = depth;
      throw ConfigError("");
    }
    return true;
  };
  try {
    return json::parse(text, guard);
  } catch (const json::parse_error& e) {
    throw ConfigError(what + ": not valid JSON: " + text_excerpt(e.what(), 300));
  } catch (const json::out_of_range& e) {
    // 406: a number beyond a double (1e999); the parser's message names it.
    throw ConfigError(what + ": a value out of range: " + text_excerpt(e.what(), 300));
  } catch (const ConfigError&) {
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
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw ConfigError("'" + key_path(key) + "': unknown value '" + text_excerpt(v) +
                    "' (allowed: " + list + ")");
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

std::string read_small_file(const std::string& path, uint64_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ConfigError(path + ": cannot open: " + errno_text(errno));
  std::string s;
  std::string err;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    err = "fstat: " + errno_text(errno);
  else if (!S_ISREG(st.st_mode))
    err = "not a regular file";
  else if (static_cast<uint64_t>(st.st_size) > limit)
    err = "larger than " + std::to_string(limit >> 20) + " MiB";
  else {
    s.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < s.size()) {
      const ssize_t n = ::pread(fd, s.data() + done, s.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = n < 0 ? "read: " + errno_text(errno) : "short read (the file shrank)";
        break;
      }
      done += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  if (!err.empty()) throw ConfigError(path + ": " + err);
  return s;
}

}  // namespace ckpt
