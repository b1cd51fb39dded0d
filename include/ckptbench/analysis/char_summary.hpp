// The text rank 0 prints after `ckptbench characterize` (pure): the findings of a
// characterization report with their 95 % intervals, and its recommendation with the prediction
// and the check run. docs/characterize.md.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace ckpt {

// The findings and the recommendation of a characterization report as text (rank 0 prints it).
std::string characterize_summary(const nlohmann::json& doc);

}  // namespace ckpt
