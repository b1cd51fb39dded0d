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
# configure_build DIR [cmake args...]   (CKPT_BUILD_TARGET=name builds one target only)
configure_build() {
  local dir="$1"; shift
  cmake -S "$CKPT_ROOT" -B "$dir" "$@" >/dev/null
  if [ -n "${CKPT_BUILD_TARGET:-}" ]; then
    cmake --build "$dir" -j "$(jobs_n)" --target "$CKPT_BUILD_TARGET"
  else
    cmake --build "$dir" -j "$(jobs_n)"
  fi
}
