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

# free_ports N: a base port B such that B..B+N-1 on 127.0.0.1 are free now, below the kernel's
# ephemeral range (32768 up: an outgoing connection of a test beside this one may hold any port
# there) and from a place that differs per process: for the daemons a test starts (Ceph's mon,
# the S3 gateway, Slurm's).
free_ports() {
  local n="$1" base k used try
  used="$(ss -Htln 2> /dev/null | awk '{print $4}' | sed 's/.*://')"
  for try in $(seq 0 49); do
    base=$((21000 + ($$ * 7 + try * 211) % 11000))
    for ((k = 0; k < n; k++)); do grep -qx "$((base + k))" <<< "$used" && continue 2; done
    echo "$base"; return 0
  done
  echo $((21000 + $$ % 11000))
}

# need_binary: skips the test when CKPT_BINARY is not an executable.
need_binary() {
  if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "skip: CKPT_BINARY '$BIN' is not an executable ckptbench"; exit 77
  fi
}

# backend_status NAME: the status `ckptbench backends --json` gives backend NAME: "ok", why it
# does not work here, or "not built (configure with -DCKPT_WITH_...=ON)" in a build without it.
# The statuses are read once (one binary run, one python3 start) into _backend_statuses in the
# shell that first asks: backend_built, not `$(backend_status ...)`, which runs in a subshell.
_backends_json=""
_backends_read=0
declare -A _backend_statuses=()
_backends_load() {
  [ "$_backends_read" -eq 1 ] && return
  _backends_json="$("$BIN" backends --json 2> /dev/null)"
  local name status lines
  lines="$("$PY3" -c 'import json, sys
for b in json.loads(sys.argv[1]):
    print(b["name"] + "\t" + b["status"])' "$_backends_json" 2> /dev/null)" || return
  while IFS=$'\t' read -r name status; do
    [ -n "$name" ] && _backend_statuses[$name]="$status"
  done <<< "$lines"
  _backends_read=1
}
backend_status() {
  _backends_load
  if [ "$_backends_read" -ne 1 ]; then echo "unknown (ckptbench backends --json failed)"
  else echo "${_backend_statuses[$1]:-unknown backend}"; fi
}
# backend_built NAME: whether this binary has backend NAME (-DCKPT_WITH_HDF5 / _IO_URING).
backend_built() {
  _backends_load
  case "$(backend_status "$1")" in "not built"*) return 1 ;; esac
}
# need_backend NAME...: skips the whole test (exit 77) when one of the backends is not built.
need_backend() {
  local b
  for b in "$@"; do
    backend_built "$b" || { echo "skip: backend $b is $(backend_status "$b")"; exit 77; }
  done
}
# skip_unbuilt NAME CASE: true (and prints "skip CASE: ...") when backend NAME is not built, for a
# test that skips some of its cases:  skip_unbuilt hdf5 "1 hdf5" && continue
skip_unbuilt() {
  backend_built "$1" && return 1
  echo "skip $2: backend $1 is $(backend_status "$1")"
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

# PY3: the python3 of python_with (Debian's first), for lib.sh's own JSON reading: a python3
# earlier in PATH may be a pyenv shim that takes a second to start.
PY3="$(python_with json)" || PY3=python3

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

# MPI_BASE: the launcher and ctest's flags without the rank count (-n/-np N), for tests that choose
# their own rank counts or launch MPMD (`-n 1 A : -n 1 B`).
MPI_BASE=()
_skip_next=0
for _f in "${MPI[@]}"; do
  if [ $_skip_next -eq 1 ]; then _skip_next=0; continue; fi
  case "$_f" in -n|-np|-c) _skip_next=1 ;; *) MPI_BASE+=("$_f") ;; esac
done
unset _f _skip_next

# jq_py FILE EXPR: evaluates a Python expression over the JSON document d in FILE.
jq_py() { "$PY3" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null; }

# rank_pids TAG: PIDs of ckptbench rank processes whose command line contains TAG.
rank_pids() {
  local p
  for p in $(pgrep -f -- "$1"); do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$(basename "$BIN" | cut -c1-15)" ] && echo "$p"
  done | sort -n
}

# wait_for FILE SECONDS PID: waits until FILE is non-empty; fails when PID ends first or on timeout.
wait_for() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [ -s "$1" ] && return 0
    kill -0 "$3" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}
