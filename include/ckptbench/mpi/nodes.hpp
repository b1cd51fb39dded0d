// Which node each rank is on (real, or emulated with ranks_per_node).
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

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

}  // namespace ckpt
