# Sourced by tests/cli/test_*.sh. ctest sets CKPT_BINARY, CKPT_SOURCE_DIR, CKPT_MPIEXEC and
# CKPT_MPIEXEC_FLAGS (tests/CMakeLists.txt); exit 77 means skipped.
set -u
BIN="${CKPT_BINARY:-}"
SRC="${CKPT_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# The MPI launcher with ctest's flags (-n 4 --oversubscribe ...); Open MPI refuses root unless told.
read -r -a MPI <<< "${CKPT_MPIEXEC:-mpiexec} ${CKPT_MPIEXEC_FLAGS:-}"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

fails=0; passes=0
ok() { echo "ok   $1"; passes=$((passes+1)); }
bad() { echo "FAIL $1"; fails=$((fails+1)); }
# summary [LABEL]: prints the counts; its status is 0 when nothing failed.
summary() { echo "${1:+$1: }$passes passed, $fails failed"; [ "$fails" -eq 0 ]; }

# need_binary: skips the test when CKPT_BINARY is not an executable.
need_binary() {
  if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "skip: CKPT_BINARY '$BIN' is not an executable ckptbench"; exit 77
  fi
}

# python_with MODULE: prints a python3 that can import MODULE, or fails. Debian's modules
# (python3-matplotlib, python3-jsonschema) belong to /usr/bin/python3; a python3 earlier in PATH
# (pyenv) usually lacks them. CKPT_PYTHON, when set, is tried first.
python_with() {
  local c
  for c in "${CKPT_PYTHON:-}" /usr/bin/python3 python3; do
    [ -n "$c" ] && command -v "$c" > /dev/null || continue
    if "$c" -c "import $1" 2> /dev/null; then command -v "$c"; return 0; fi
  done
  return 1
}

# make_workdir TAG [PARENT]: creates $work (default under /var/tmp, a real disk) and removes it on
# exit, after calling cli_on_exit when the test defines one (e.g. to stop a background job).
make_workdir() {
  work="$(mktemp -d "${2:-/var/tmp}/ckpt-$1.XXXXXX")"
  trap _cli_exit EXIT
}
_cli_exit() {
  if declare -F cli_on_exit > /dev/null; then cli_on_exit; fi
  chmod -R u+w "$work" 2> /dev/null
  rm -rf "$work"
}
