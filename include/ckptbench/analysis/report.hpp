// The JSON document (schema versioned), environment capture and writing. Its tables (text, CSV)
// are in report_tables.hpp, DLIO's summary of it in dlio_summary.hpp.
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
// JSON text of a document for a file or the terminal. Strings are bytes on Linux (a path need not
// be UTF-8) while JSON text is UTF-8: bytes that are not UTF-8 become U+FFFD (docs/metrics.md,
// "Paths that are not UTF-8").
std::string json_text(const nlohmann::json& doc, int indent = -1);
std::string json_text(const nlohmann::ordered_json& doc, int indent = -1);
void write_report(const nlohmann::json& doc, const std::string& path);
void write_report(const nlohmann::ordered_json& doc, const std::string& path);
// The writing under write_report (which adds a final newline) and write_csv (report_tables.hpp):
// body as it is into <path>.tmp, then renamed, so a reader never sees half a file; on any
// failure the .tmp file is removed again. Throws IoError naming the report.
void write_report_text(const std::string& body, const std::string& path);

}  // namespace ckpt
