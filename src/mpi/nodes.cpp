#include "ckptbench/mpi/nodes.hpp"

#include <algorithm>

namespace ckpt {

NodeMap node_map(MPI_Comm comm, int ranks_per_node) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  NodeMap nm;
  nm.node_of_rank.resize(size);
  if (ranks_per_node > 0) {
    for (int r = 0; r < size; r++) nm.node_of_rank[r] = r / ranks_per_node;
    nm.emulated = true;
  } else {
    MPI_Comm shm;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
    int leader = rank;
    MPI_Bcast(&leader, 1, MPI_INT, 0, shm);  // lowest world rank of the node (key = rank)
    MPI_Comm_free(&shm);
    std::vector<int> leaders(size);
    MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
    std::vector<int> uniq = leaders;
    std::sort(uniq.begin(), uniq.end());
    uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
    for (int r = 0; r < size; r++)
      nm.node_of_rank[r] =
          static_cast<int>(std::lower_bound(uniq.begin(), uniq.end(), leaders[r]) - uniq.begin());
  }
  nm.nodes = *std::max_element(nm.node_of_rank.begin(), nm.node_of_rank.end()) + 1;
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, comm);
  nm.names.assign(static_cast<size_t>(nm.nodes), std::string());
  for (int r = size - 1; r >= 0; r--)  // ends with each node's lowest rank
    nm.names[static_cast<size_t>(nm.node_of_rank[r])] =
        std::string(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return nm;
}

}  // namespace ckpt
