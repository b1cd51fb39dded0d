# Dependency discovery for ckptbench (included by the top-level CMakeLists.txt).
#
# Everything is looked up through CMake's own search first, so an install prefix given with
# -DCMAKE_PREFIX_PATH=<prefix>[;<prefix>...] (Spack, environment modules, a private install) is
# found before the system's copy; pkg-config is only a fallback. docs/cluster.md, "Building
# beyond Debian".
#
# Sets:
#   ckpt::mpi      MPI's C API (MPI::MPI_C)
#   ckpt::hdf5     parallel HDF5's C library          (CKPT_WITH_HDF5=ON)
#   ckpt::uring    liburing                           (CKPT_WITH_IO_URING=ON)
#   CURL::libcurl  libcurl, for the s3 backend         (CKPT_WITH_S3=ON)
#   URING_VERSION  liburing's version for src/base/version.hpp.in ("unknown" when nobody says)
#   GTest::gtest                                      (CKPT_BUILD_TESTS=ON)
#   CLI11::CLI11, nlohmann_json::nlohmann_json, Threads::Threads, ZLIB::ZLIB
# An option that is ON whose dependency is missing stops the configuration with a message that
# names the option to turn off.

include(CheckCSourceCompiles)
include(CMakePushCheckState)

# ckpt_missing(OPTION WHAT HOW): the fatal error for a dependency an ON option needs.
function(ckpt_missing option what how)
  message(FATAL_ERROR
    "${what}\n"
    "${how}\n"
    "Or configure without it: -D${option}=OFF (the backend is then listed as \"not built\" by "
    "`ckptbench backends` and a config naming it is refused).")
endfunction()

# --- MPI -------------------------------------------------------------------------------------------
# The C API only (the deprecated MPI C++ bindings stay out: OMPI_SKIP_MPICXX / MPICH_SKIP_MPICXX on
# ckptcore); the CXX component checks that the C++ compiler can build against this MPI.
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI REQUIRED COMPONENTS C CXX)
add_library(ckpt::mpi INTERFACE IMPORTED)
target_link_libraries(ckpt::mpi INTERFACE MPI::MPI_C)

find_package(PkgConfig QUIET)

# --- parallel HDF5 -------------------------------------------------------------------------------
# find_package(HDF5) (FindHDF5: hdf5-config.cmake, else the h5pcc/h5cc wrapper, else a library
# search below HDF5_ROOT / CMAKE_PREFIX_PATH) must give the parallel build (HDF5_IS_PARALLEL):
# the backend opens files with H5Pset_fapl_mpio. HDF5_PREFER_PARALLEL makes FindHDF5 try h5pcc
# before h5cc, so a Debian with both libhdf5-dev and libhdf5-openmpi-dev picks the parallel one.
# When find_package finds nothing, or only a serial HDF5, pkg-config is asked for a parallel one:
# hdf5-openmpi, hdf5-mpich (Debian, Ubuntu), hdf5_parallel (Cray), then plain hdf5, each taken
# only if its hdf5.h defines H5_HAVE_PARALLEL and H5Pset_fapl_mpio links.
if(CKPT_WITH_HDF5)
  if(NOT DEFINED HDF5_PREFER_PARALLEL)
    set(HDF5_PREFER_PARALLEL ON)
  endif()
  find_package(HDF5 COMPONENTS C)
  set(_ckpt_hdf5_serial "")
  if(HDF5_FOUND AND HDF5_IS_PARALLEL)
    add_library(ckpt::hdf5 INTERFACE IMPORTED)
    target_link_libraries(ckpt::hdf5 INTERFACE HDF5::HDF5)
    message(STATUS "ckptbench: parallel HDF5 ${HDF5_VERSION} (find_package: ${HDF5_INCLUDE_DIRS})")
  else()
    if(HDF5_FOUND)
      set(_ckpt_hdf5_serial "${HDF5_VERSION} at ${HDF5_INCLUDE_DIRS}")
      message(STATUS "ckptbench: find_package(HDF5) found a serial HDF5 (${_ckpt_hdf5_serial}); "
                     "asking pkg-config for a parallel one")
    endif()
    if(PKG_CONFIG_FOUND)
      foreach(_m hdf5-openmpi hdf5-mpich hdf5_parallel hdf5)
        string(MAKE_C_IDENTIFIER "CKPT_PC_${_m}" _v)
        pkg_check_modules(${_v} QUIET IMPORTED_TARGET ${_m})
        if(NOT ${_v}_FOUND)
          continue()
        endif()
        cmake_push_check_state(RESET)
        set(CMAKE_REQUIRED_LIBRARIES PkgConfig::${_v} MPI::MPI_C)
        set(CMAKE_REQUIRED_QUIET ON)
        check_c_source_compiles("#include <hdf5.h>
#ifndef H5_HAVE_PARALLEL
#error serial HDF5
#endif
int main(void) { return H5Pset_fapl_mpio(H5P_DEFAULT, MPI_COMM_WORLD, MPI_INFO_NULL) < 0; }"
                                ${_v}_PARALLEL)
        cmake_pop_check_state()
        if(${_v}_PARALLEL)
          add_library(ckpt::hdf5 INTERFACE IMPORTED)
          target_link_libraries(ckpt::hdf5 INTERFACE PkgConfig::${_v})
          message(STATUS "ckptbench: parallel HDF5 ${${_v}_VERSION} (pkg-config ${_m})")
          break()
        endif()
        if(NOT _ckpt_hdf5_serial)
          set(_ckpt_hdf5_serial "${${_v}_VERSION} from pkg-config ${_m}")
        endif()
      endforeach()
    endif()
    if(NOT TARGET ckpt::hdf5)
      if(_ckpt_hdf5_serial)
        ckpt_missing(CKPT_WITH_HDF5
          "ckptbench: the HDF5 found is the serial build (${_ckpt_hdf5_serial}); the hdf5 backend needs parallel HDF5 (H5_HAVE_PARALLEL, built with MPI)."
          "Point CMake at a parallel HDF5 built with this MPI: -DCMAKE_PREFIX_PATH=<its prefix> or -DHDF5_ROOT=<its prefix> (Debian/Ubuntu: apt install libhdf5-openmpi-dev; Spack: hdf5+mpi; Cray: module load cray-hdf5-parallel).")
      else()
        ckpt_missing(CKPT_WITH_HDF5
          "ckptbench: parallel HDF5 not found (neither find_package(HDF5 COMPONENTS C) nor pkg-config hdf5-openmpi / hdf5-mpich / hdf5_parallel / hdf5)."
          "Point CMake at a parallel HDF5 built with this MPI: -DCMAKE_PREFIX_PATH=<its prefix> or -DHDF5_ROOT=<its prefix> (Debian/Ubuntu: apt install libhdf5-openmpi-dev; Spack: hdf5+mpi; Cray: module load cray-hdf5-parallel).")
      endif()
    endif()
  endif()
endif()

# --- liburing ------------------------------------------------------------------------------------
# liburing installs no CMake package: find_path / find_library search CMAKE_PREFIX_PATH (and
# LIBURING_ROOT) first, then the system; pkg-config liburing is the fallback.
if(CKPT_WITH_S3)
  # 7.75 brought CURLOPT_AWS_SIGV4 (Debian 12: 7.88).
  find_package(CURL 7.75)
  if(NOT CURL_FOUND)
    message(FATAL_ERROR "libcurl >= 7.75 not found (Debian: libcurl4-openssl-dev); configure with "
                        "-DCKPT_WITH_S3=OFF to build without the s3 backend")
  endif()
endif()
set(URING_VERSION "unknown")
if(CKPT_WITH_IO_URING)
  find_path(CKPT_URING_INCLUDE_DIR liburing.h HINTS ${LIBURING_ROOT} ENV LIBURING_ROOT
            PATH_SUFFIXES include)
  find_library(CKPT_URING_LIBRARY uring HINTS ${LIBURING_ROOT} ENV LIBURING_ROOT
               PATH_SUFFIXES lib lib64)
  if(CKPT_URING_INCLUDE_DIR AND CKPT_URING_LIBRARY)
    add_library(ckpt::uring UNKNOWN IMPORTED)
    set_target_properties(ckpt::uring PROPERTIES IMPORTED_LOCATION "${CKPT_URING_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${CKPT_URING_INCLUDE_DIR}")
    # The version: liburing >= 2.4 writes it to liburing/io_uring_version.h; older ones only say
    # it in the shared object's file name (liburing.so.2.3).
    set(_h "${CKPT_URING_INCLUDE_DIR}/liburing/io_uring_version.h")
    if(EXISTS "${_h}")
      file(STRINGS "${_h}" _maj REGEX "define IO_URING_VERSION_MAJOR")
      file(STRINGS "${_h}" _min REGEX "define IO_URING_VERSION_MINOR")
      string(REGEX MATCH "[0-9]+" _maj "${_maj}")
      string(REGEX MATCH "[0-9]+" _min "${_min}")
      if(_maj AND NOT _min STREQUAL "")
        set(URING_VERSION "${_maj}.${_min}")
      endif()
    endif()
    if(URING_VERSION STREQUAL "unknown")
      file(REAL_PATH "${CKPT_URING_LIBRARY}" _real)
      if(_real MATCHES "liburing\\.so\\.([0-9]+\\.[0-9]+)")
        set(URING_VERSION "${CMAKE_MATCH_1}")
      endif()
    endif()
    message(STATUS "ckptbench: liburing ${URING_VERSION} (${CKPT_URING_LIBRARY}, "
                   "${CKPT_URING_INCLUDE_DIR})")
  elseif(PKG_CONFIG_FOUND)
    pkg_check_modules(CKPT_PC_URING QUIET IMPORTED_TARGET liburing)
    if(CKPT_PC_URING_FOUND)
      add_library(ckpt::uring INTERFACE IMPORTED)
      target_link_libraries(ckpt::uring INTERFACE PkgConfig::CKPT_PC_URING)
      set(URING_VERSION "${CKPT_PC_URING_VERSION}")
      message(STATUS "ckptbench: liburing ${URING_VERSION} (pkg-config liburing)")
    endif()
  endif()
  if(NOT TARGET ckpt::uring)
    ckpt_missing(CKPT_WITH_IO_URING
      "ckptbench: liburing not found (liburing.h and liburing.so/.a below CMAKE_PREFIX_PATH or the system, nor pkg-config liburing)."
      "Install it (Debian/Ubuntu: apt install liburing-dev; RHEL: dnf install liburing-devel; Spack: liburing) and give its prefix with -DCMAKE_PREFIX_PATH=<prefix> or -DLIBURING_ROOT=<prefix>.")
  endif()
endif()

# --- the rest ------------------------------------------------------------------------------------
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Threads REQUIRED)
# zlib: the CRC-32 of torch.save's records (framework_cpu, src/io/driver.cpp); Debian zlib1g-dev.
find_package(ZLIB REQUIRED)
if(CKPT_BUILD_TESTS)
  find_package(GTest)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR
      "ckptbench: GoogleTest not found (find_package(GTest)).\n"
      "Install it (Debian/Ubuntu: apt install libgtest-dev; Spack: googletest) and give its prefix "
      "with -DCMAKE_PREFIX_PATH=<prefix>, or configure without the tests: -DCKPT_BUILD_TESTS=OFF.")
  endif()
endif()
