// The JSON document (schema versioned) and environment capture.
#pragma once
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>

namespace ckpt {

inline constexpr int kSchemaVersion = 1;

// Collective: hosts, ranks, ranks per node, MPI library, kernel, liburing and HDF5 versions,
// target path and file system. Valid on rank 0.
nlohmann::json capture_environment(const std::string& target, MPI_Comm comm);

// Skeleton document: schema_version, tool, started_at.
nlohmann::json new_report();

// Writes the document atomically (tmp + rename); creates parent directories.
void write_report(const nlohmann::json& doc, const std::string& path);

// Human summary table of a report (one row per point and phase).
std::string summary_table(const nlohmann::json& doc);

// A DLIO-benchmark-style summary (MLPerf Storage checkpointing) of a report: per point, save and
// load throughput and duration, mean and sample stdev over repetitions, checkpoint size in GiB.
nlohmann::json dlio_summary(const nlohmann::json& doc);

// UTC timestamp "2026-12-02T11:25:15Z".
std::string utc_now();

}  // namespace ckpt
