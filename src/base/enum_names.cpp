#include "ckptbench/base/enum_names.hpp"

namespace ckpt {

std::string join_names(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

}  // namespace ckpt
