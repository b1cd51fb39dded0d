// The JSON document (schema versioned) and environment capture.
#pragma once
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ckptbench/plan/config.hpp"

namespace ckpt {

inline constexpr int kSchemaVersion = 1;

// Collective: hosts, ranks, ranks per node, MPI library, kernel, liburing and HDF5 versions,
// target path and file system. Valid on rank 0.
nlohmann::json capture_environment(const std::string& target, MPI_Comm comm);

// Skeleton document: schema_version, tool, started_at.
nlohmann::json new_report();

// Writes the document atomically (tmp + rename); creates parent directories.
// JSON text of a document for a file or the terminal. Strings are bytes on Linux (a path need not
// be UTF-8) while JSON text is UTF-8: bytes that are not UTF-8 become U+FFFD (docs/metrics.md,
// "Paths that are not UTF-8").
std::string json_text(const nlohmann::json& doc, int indent = -1);
std::string json_text(const nlohmann::ordered_json& doc, int indent = -1);
void write_report(const nlohmann::json& doc, const std::string& path);
void write_report(const nlohmann::ordered_json& doc, const std::string& path);

// Human summary table of a report (one row per point and phase).
// The table printed after a run: per point and phase, files, bytes, repetitions, bandwidth
// (median, min, max, sample stddev over repetitions), median IOPS, metadata ops/s and phase time;
// parameters in full (a legend above the table when they do not fit a column).
std::string summary_table(const nlohmann::json& doc);
// One row per point x phase (docs/metrics.md, "CSV"): csv_columns() in order, header first.
const std::vector<std::string>& csv_columns();
std::string csv_table(const nlohmann::json& doc);
void write_csv(const nlohmann::json& doc, const std::string& path);
// Printed by rank 0 before the first point: model, world, parallelism, layout, backend, target.
std::string run_header(const nlohmann::json& doc, const RunConfig& cfg);

// DLIO's summary.json (the file MLPerf Storage's reporting reads) for a one-point report: DLIO's
// keys, key order and definitions (duration = rank 0's phase time, throughput = payload GiB /
// duration, numpy population std over the repetitions), plus a "ckptbench" object with the
// slowest-rank times and bytes moved. Reads /proc/cpuinfo and /proc/meminfo of the calling host
// (call it on rank 0). Null when the point did not finish; std::invalid_argument for a report
// with several points. docs/metrics.md, "DLIO / MLPerf Storage summary (--dlio-summary)".
nlohmann::ordered_json dlio_summary(const nlohmann::json& doc);

}  // namespace ckpt
