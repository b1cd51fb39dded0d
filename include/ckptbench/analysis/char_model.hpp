// The model a characterization measures (characterization.model, which analysis/predict.hpp
// reads) and the pieces of its recommendation that need no run: the recommended config for a
// layout, the layouts tried, the striping measured best, where the config is written. Pure.
// docs/characterize.md.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/analysis/char_probe.hpp"

namespace ckpt {

// characterization.model at the chosen data path: the ceilings of one rank, one node and all
// ranks, the data paths measured, the metadata rates, the shared-file factor. Null, with
// *why_not, when a measurement it needs is missing.
nlohmann::json characterize_model(const std::vector<Probe>& probes, const SearchFacts& facts,
                                  const nlohmann::json& chosen, const nlohmann::json& md,
                                  std::string* why_not);

// The recommended config: the user's document with the measured settings in place (sweep
// removed: one configuration).
nlohmann::json recommended_doc(const nlohmann::json& user, const nlohmann::json& data_path,
                               const std::string& layout, const nlohmann::json& extra,
                               const std::string& target, const std::string& report);

// The striping settings (stripe_count, stripe_size, object_size) of the fastest probe of stage
// stripes; an empty object without one.
nlohmann::json recommended_striping(const std::vector<Probe>& probes);

// The layouts the recommendation predicts: the usual four, aggregated-node on several nodes, and
// the user's own layout (`user`'s "layout") when it is none of them.
std::vector<std::string> candidate_layouts(int nodes, const nlohmann::json& user);

// Where the recommended config goes: `given` (--recommend), else next to the report
// (<report without .json>.recommended.json).
std::string recommended_path(const std::string& given, const std::string& report);

}  // namespace ckpt
