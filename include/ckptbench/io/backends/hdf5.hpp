// Parallel HDF5 backend internals (src/io/backends/hdf5.cpp), exposed for the unit tests: options,
// dataset naming and shape, and the hyperslab decomposition of a linear element range.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ckptbench/plan/config.hpp"
#include "ckptbench/plan/model.hpp"
#include "ckptbench/plan/sharding.hpp"

namespace ckpt::hdf5 {

// The "hdf5" config section, validated.
struct Options {
  bool collective = false;          // "transfer": "independent" | "collective" (H5Pset_dxpl_mpio)
  uint64_t chunk = 0;               // "chunk": "contiguous" (0) or a chunk size in bytes
  uint64_t align_threshold = 0;     // "align_threshold": objects >= this are aligned; 0 = `align`
  bool coll_metadata_write = true;  // H5Pset_coll_metadata_write
  bool all_coll_metadata_ops = false;  // H5Pset_all_coll_metadata_ops
  // "metadata_cache": {initial_size, min_size, max_size} (H5Pset_mdc_config); unset = default.
  std::optional<uint64_t> mdc_initial, mdc_min, mdc_max;
  std::vector<std::pair<std::string, std::string>> hints;  // "hints": MPI-IO hints for H5FD_mpio
                                                           // (+ striping from the point)
};
Options parse_options(const PointConfig& cfg);  // throws ConfigError naming the key
std::vector<std::string> option_keys();         // of the "hdf5" section (its parse table)

// "1.10.8" (H5get_libversion).
std::string library_version();

// Where a shard lives in the file: "/rank_00003/exp_avg/layers.0.attention.wq.weight", plus
// "@<elem_offset>" for ZeRO fragments. '/' inside a tensor name becomes '|' (HDF5 reserves '/'
// for groups), "." alone becomes "_".
std::string dataset_path(const ModelDesc& m, int vrank, const Shard& s);

// What a dataset of `bytes` bytes holding shard `s` looks like.
struct DatasetShape {
  std::vector<uint64_t> dims;  // TP-local shape when bytes == numel * dtype size, else 1-D
  bool reshaped = false;       // 1-D stand-in for a scaled shard (true shape in attribute "shape")
  bool raw_bytes = false;      // bytes not a multiple of the element size: stored as uint8
  uint64_t elem_size = 1;
};
DatasetShape dataset_shape(const Shard& s, uint64_t bytes);

// Chunk dimensions of about `chunk_bytes` for a dataset (last dimensions filled first).
std::vector<uint64_t> chunk_dims(const std::vector<uint64_t>& dims, uint64_t elem_size,
                                 uint64_t chunk_bytes);

// A row-major element range [first, first + count) of an array of `dims` as hyperslab blocks
// (start, count) in row-major order: at most 2 * dims.size() - 1 blocks.
struct Block {
  std::vector<uint64_t> start, count;
};
std::vector<Block> linear_blocks(const std::vector<uint64_t>& dims, uint64_t first, uint64_t count);

}  // namespace ckpt::hdf5
