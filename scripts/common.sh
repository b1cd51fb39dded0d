# Shared by demo.sh, test.sh and the benchmark scripts (sourced, not run).
CKPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Open MPI refuses root unless told; only then do we pass the flags.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  MPI_ROOT_FLAG=(--allow-run-as-root)
else
  MPI_ROOT_FLAG=()
fi
MPIEXEC=(mpiexec "${MPI_ROOT_FLAG[@]}" --oversubscribe)
jobs_n() { nproc 2>/dev/null || echo 2; }
# The configuration of build/, shared by scripts/demo.sh (the binary) and scripts/test.sh
# (everything): the library and the binary at -O2 as RelWithDebInfo builds them, without debug
# information (a third of the compile time, most of the link time; configure with
# -DCMAKE_BUILD_TYPE=RelWithDebInfo for gdb), the tests' own sources at -O1
# (CKPT_TEST_OPT_FLAGS, tests/CMakeLists.txt); warnings as errors (Debian 12's compilers build the
# tree without one). docs/reliability.md, "Test suite time", has what each choice saved.
CKPT_TEST_BUILD_ARGS=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
                      -DCKPT_WERROR=ON)
# configure_build DIR [cmake args...]   (CKPT_BUILD_TARGET="name ..." builds those targets only)
configure_build() {
  local dir="$1"; shift
  cmake -S "$CKPT_ROOT" -B "$dir" "$@" >/dev/null
  if [ -n "${CKPT_BUILD_TARGET:-}" ]; then
    local targets
    read -ra targets <<< "$CKPT_BUILD_TARGET"
    cmake --build "$dir" -j "$(jobs_n)" --target "${targets[@]}"
  else
    cmake --build "$dir" -j "$(jobs_n)"
  fi
}
# asan_env: the environment of the sanitized tests (scripts/test.sh --sanitize, scripts/ci_extra.sh;
# docs/reliability.md, "Sanitizer build"), which mpiexec passes on to the ranks.
# - detect_leaks=0: Open MPI's own allocations at MPI_Finalize are not ours to report.
# - HWLOC_COMPONENTS=-pci: MPI_Init's topology discovery reads the PCI ID database through
#   libpciaccess, which grows its buffer by realloc; under ASan every realloc copies and
#   quarantines, and MPI_Init took 7 s (0.8 s without PCI discovery). Process binding needs
#   no PCI devices.
asan_env() {
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  export HWLOC_COMPONENTS=-pci
}
