// DLIO's summary.json for a one-point report (docs/metrics.md, "DLIO / MLPerf Storage summary
// (--dlio-summary)").
#pragma once
#include <nlohmann/json.hpp>

namespace ckpt {

// DLIO's summary.json (the file MLPerf Storage's reporting reads) for a one-point report: DLIO's
// keys, key order and definitions (duration = rank 0's phase time, throughput = payload GiB /
// duration, numpy population std over the repetitions), plus a "ckptbench" object with the
// slowest-rank times and bytes moved. Reads /proc/cpuinfo and /proc/meminfo of the calling host
// (call it on rank 0). Null when the point did not finish; std::invalid_argument for a report
// with several points. docs/metrics.md, "DLIO / MLPerf Storage summary (--dlio-summary)".
nlohmann::ordered_json dlio_summary(const nlohmann::json& doc);

}  // namespace ckpt
