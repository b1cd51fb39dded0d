// Placeholders of the backends a build leaves out (-DCKPT_WITH_HDF5=OFF, -DCKPT_WITH_IO_URING=OFF):
// CMakeLists.txt then does not compile src/io/backends/hdf5.cpp or uring.cpp, and these stand in
// for their factories, so the registry still knows every backend by name: `ckptbench backends`
// lists it as not built, and a config naming it gets that reason (exit 2) instead of "unknown
// value".
#include <utility>

#include "ckptbench/base/error.hpp"
#include "ckptbench/io/backend.hpp"

namespace ckpt {

BackendFactory not_built_backend(const std::string& name, const std::string& description,
                                 const std::string& option, const std::string& library_key) {
  BackendFactory f;
  f.name = name;
  f.description = description;
  f.not_built = "not built (configure with -D" + option + "=ON)";
  const std::string refusal = "'backend': \"" + name + "\" cannot be used: " + f.not_built;
  f.probe = [why = f.not_built] { return why; };
  f.library = [key = library_key] { return std::make_pair(key, std::string("not built")); };
  f.validate = [refusal](const PointConfig&) { throw ConfigError(refusal); };
  f.create = [refusal](const PointConfig&) -> std::unique_ptr<Backend> {
    throw ConfigError(refusal);
  };
  return f;
}

// The descriptions and library keys are those of src/io/backends/hdf5.cpp, uring.cpp and s3.cpp.
#ifndef CKPT_HAVE_HDF5
BackendFactory hdf5_backend() {
  return not_built_backend(
      "hdf5", "parallel HDF5 (MPI-IO driver): one dataset per tensor shard, group per rank",
      "CKPT_WITH_HDF5", "hdf5_version");
}
#endif

#ifndef CKPT_HAVE_IO_URING
BackendFactory uring_backend() {
  return not_built_backend("io_uring",
                           "liburing: queue_depth transfers in flight across extents and files; "
                           "fixed buffers/files, SQPOLL, submission batching",
                           "CKPT_WITH_IO_URING", "liburing_version");
}
#endif

#ifndef CKPT_HAVE_S3
BackendFactory s3_backend() {
  return not_built_backend(
      "s3",
      "S3 objects through libcurl (SigV4): block_size parts, queue_depth "
      "requests in flight, ranged GETs; shared objects as one multipart upload",
      "CKPT_WITH_S3", "libcurl_version");
}
#endif

}  // namespace ckpt
