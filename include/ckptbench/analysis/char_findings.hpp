// The findings of a characterization (pure): per stage, what its probes measured, with 95 %
// intervals and the ratios that decide between settings (O_DIRECT against buffered, packed
// against aligned regions), the bandwidth ceilings and the phases' fixed cost.
// docs/characterize.md.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "ckptbench/analysis/char_probe.hpp"

namespace ckpt {

// characterization.findings: from the search's probes, its chosen data path (data_path_of) and
// its metadata measurement (`md`, empty when not measured).
nlohmann::json characterize_findings(const std::vector<Probe>& probes, const SearchFacts& facts,
                                     const nlohmann::json& chosen, const nlohmann::json& md);

// The phases' fixed cost at the chosen data path: the intercept of the mean phase time against
// bytes per rank through the full-size probe over all ranks and the small one. Null without both.
nlohmann::json fixed_cost(const std::vector<Probe>& probes, const nlohmann::json& chosen);

}  // namespace ckpt
