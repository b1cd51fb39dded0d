// One mapping per enum between its values and the names configs, reports and messages spell:
// the parser, the resolved config, the report and the error's list of allowed values all read
// the same table, so a name cannot differ between them.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt {

// "a, b, c": the allowed values as error messages list them.
std::string join_names(const std::vector<std::string>& names);

template <class E>
class EnumNames {
 public:
  EnumNames(std::initializer_list<std::pair<E, const char*>> rows) {
    for (const auto& [v, n] : rows) rows_.emplace_back(v, n);
  }
  // The value's name ("?" for a value the table lacks: a programming error the tests catch).
  const std::string& name(E v) const {
    for (const auto& r : rows_)
      if (r.first == v) return r.second;
    static const std::string unknown = "?";
    return unknown;
  }
  std::optional<E> find(std::string_view s) const {
    for (const auto& r : rows_)
      if (r.second == s) return r.first;
    return std::nullopt;
  }
  // The names in table order.
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const auto& r : rows_) v.push_back(r.second);
    return v;
  }
  std::string list() const { return join_names(names()); }

 private:
  std::vector<std::pair<E, std::string>> rows_;
};

}  // namespace ckpt
