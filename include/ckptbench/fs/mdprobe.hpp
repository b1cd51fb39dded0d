// The metadata probe of `characterize` (mdtest's pattern): every rank creates, stats, opens and
// unlinks its own files in one directory that all ranks share, each operation kind timed barrier
// to barrier; and the cost of fsync on a small freshly written file.
#pragma once
#include <mpi.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace ckpt {

struct MdSample {
  int files_per_rank = 0;
  int ranks = 0;
  // Slowest rank's time of each operation kind over its files (seconds).
  double create_s = 0, stat_s = 0, open_s = 0, unlink_s = 0;
  // Mean time of one fsync after a 4 KiB write, over every rank's files (seconds).
  double fsync_s = 0;
  int fsync_files = 0;
  // An object store (BackendFactory::metadata_probe): create is a PUT of an empty object, stat
  // and open a HEAD, unlink a DELETE, and rank 0 LISTs every rank's objects in `lists` requests
  // (pages of 1,000) taking list_s; no fsync. 0 for a file system.
  int lists = 0;
  double list_s = 0;
  // Operations per second over all ranks: ranks * files_per_rank / the slowest rank's time.
  double rate(double seconds) const;
  nlohmann::json to_json() const;
};

// Collective on comm. `dir` must not exist: rank 0 makes it, and removes it at the end (also
// after an error). Every rank creates files_per_rank empty files f<rank>.<i> with
// O_CREAT|O_EXCL, stats them, opens and closes them read-only, unlinks them; then writes 4 KiB
// into `fsync_files` files s<rank>.<i> and fsyncs each (timed), and unlinks those. An error on
// any rank becomes an IoError on every rank (naming the rank, file and errno) and nothing is
// left in `dir`.
MdSample md_probe(const std::string& dir, int files_per_rank, int fsync_files, MPI_Comm comm);

// One step of a probe, collective on comm: runs fn on this rank (its error text, or ""), then
// agrees: the first failing rank's text is thrown as IoError on every rank ("metadata probe,
// rank R: ..."). Returns the slowest rank's time of fn (barrier to barrier).
double timed_step(MPI_Comm comm, const std::function<void()>& fn);

}  // namespace ckpt
