// Text and CSV tables of a report document (report.hpp): what rank 0 prints before and after a
// run, and the CSV export.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/plan/config.hpp"

namespace ckpt {

// Human summary table of a report (one row per point and phase).
// The table printed after a run: per point and phase, files, bytes, repetitions, bandwidth
// (median, min, max, sample stddev over repetitions), median IOPS, metadata ops/s and phase time;
// parameters in full (a legend above the table when they do not fit a column).
std::string summary_table(const nlohmann::json& doc);
// One row per point x phase (docs/metrics.md, "CSV"): csv_columns() in order, header first.
const std::vector<std::string>& csv_columns();
std::string csv_table(const nlohmann::json& doc);
// Writes csv_table(doc) as write_report writes a document (tmp + rename).
void write_csv(const nlohmann::json& doc, const std::string& path);
// Printed by rank 0 before the first point: model, world, parallelism, layout, backend, target.
std::string run_header(const nlohmann::json& doc, const RunConfig& cfg);

}  // namespace ckpt
