// MPI-IO helpers shared by the mpiio and hdf5 backends (src/io/backends/mpiio.cpp), exposed for the
// unit tests: option parsing, hints <-> MPI_Info, per-file communicators, MPI error text.
#pragma once
#include <mpi.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/layout.hpp"

namespace ckpt::mpiio {

// "MPI_ERR_IO: input/output error (class 32)" from MPI_Error_string / MPI_Error_class.
std::string error_text(int err);
// Throws IoError("<what>: <error text>").
[[noreturn]] void throw_mpi(const std::string& what, int err);

// Largest single transfer the MPI backends issue (MPI counts are int).
inline constexpr uint64_t kMaxTransfer = 1ull << 30;

// Why O_DIRECT cannot be offered through this MPI library (the validate() message).
std::string direct_unsupported_reason();

using Hints = std::vector<std::pair<std::string, std::string>>;
// Parses a "hints" object ({key: string | integer}) found at `path` ("mpiio.hints"). Throws
// ConfigError naming the key on other value types.
Hints parse_hints(const nlohmann::json* hints, const std::string& path);
// Adds striping_factor / striping_unit from the point's stripe_count / stripe_size when set and
// not given explicitly.
void add_striping_hints(Hints& hints, const PointConfig& cfg);

// The "mpiio" section, validated.
struct Options {
  bool collective = false;  // "mode": "independent" | "collective"
  Hints hints;
};
Options parse_options(const PointConfig& cfg);  // throws ConfigError
std::vector<std::string> option_keys();         // of the "mpiio" section (its parse table)

// Owns an MPI_Info built from hints (MPI_INFO_NULL when empty).
class Info {
 public:
  explicit Info(const std::vector<std::pair<std::string, std::string>>& hints);
  ~Info();
  Info(const Info&) = delete;
  Info& operator=(const Info&) = delete;
  MPI_Info get() const { return info_; }

 private:
  MPI_Info info_ = MPI_INFO_NULL;
};

// Every key/value of an MPI_Info as a JSON object of strings ({} for MPI_INFO_NULL).
nlohmann::json info_to_json(MPI_Info info);
// MPI_File_get_info read back as JSON (the hints the library reports in force).
nlohmann::json file_hints(MPI_File fh);

// The communicator of each file: MPI_COMM_SELF for a private file, else a communicator over the
// file's writers (MPI_Comm_create_group on `comm`, collective over the writers only), cached per
// writer set. Callers must visit shared files in the same order on every writer (by FileSpec::id).
// When a rank executes another rank's RankIo (cache defeat by rank shift: rank r runs the files of
// rank io_rank), the members are the writers shifted by the same amount (r - io_rank, mod size).
class FileComms {
 public:
  FileComms(MPI_Comm comm, int io_rank);
  ~FileComms();
  FileComms(const FileComms&) = delete;
  FileComms& operator=(const FileComms&) = delete;
  MPI_Comm get(const FileSpec& f);

 private:
  MPI_Comm comm_;
  int me_ = 0, shift_ = 0, size_ = 1;
  std::map<std::vector<int>, MPI_Comm> cache_;
};

// "Open MPI v4.1.4, ..." (first line of MPI_Get_library_version).
std::string library_version();

}  // namespace ckpt::mpiio
