// Which node each rank is on (real, or emulated with ranks_per_node), and the cache-defeat method
// a restore uses.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "ckptbench/config.hpp"

namespace ckpt {

struct NodeMap {
  std::vector<int> node_of_rank;
  int nodes = 1;
  bool emulated = false;
  // Per node: its host (MPI_Get_processor_name of the node's lowest rank); for emulated nodes,
  // the host of their first rank (several emulated nodes may then share one host).
  std::vector<std::string> names;
};

// Collective on comm: nodes from MPI_COMM_TYPE_SHARED, or consecutive groups of ranks_per_node.
NodeMap node_map(MPI_Comm comm, int ranks_per_node);

// Resolves cache "auto" (pure): direct with O_DIRECT; else rank-shift on several real nodes (not
// emulated ones, which share one page cache) unless node aggregation sends data between ranks;
// else fadvise. Never drop-caches (it empties the whole node's page cache: only when asked). Any
// other choice is returned as it is.
CacheMode resolve_cache(const PointConfig& pc, const NodeMap& nm, bool has_remote);

}  // namespace ckpt
