#!/usr/bin/env bash
# Several hosts on one machine, for Open MPI: writes a hostfile of HOSTS names (ckpt-node1 ...
# ckpt-nodeN, slots=RANKS_PER_HOST each) and runs mpiexec with HOSTS x RANKS_PER_HOST ranks, each
# host's daemon started by scripts/multihost/rsh-agent.sh in a UTS namespace named after it. MPI
# then sees separate nodes: MPI_Get_processor_name and gethostname give the host's name,
# MPI_COMM_TYPE_SHARED splits by host, shared memory is used within a host and TCP between hosts.
#
#   scripts/multihost/mpiexec.sh [--cache-dir DIR]... HOSTS RANKS_PER_HOST [MPIEXEC OPTIONS] -- CMD [ARGS...]
#   scripts/multihost/mpiexec.sh [--cache-dir DIR]... --check    does it work here? (exit 0, or 77 and why;
#                                a real 2-host job whose ranks must report ckpt-node1 and ckpt-node2:
#                                a name that resolves to this machine is local for Open MPI)
#   scripts/multihost/mpiexec.sh ... --print ...                 print the hostfile and the command only
#
# --cache-dir DIR (repeatable; created if missing) gives each host a client cache of its own for
# DIR: in the host's mount namespace DIR is mounted over itself with bindfs (FUSE), so all hosts see
# the same files at the same path, each through its own page cache, as cluster nodes do with a
# parallel file system. Without it all hosts share this machine's page cache, so a file written
# on one host is cached for all. Ranks are placed in blocks: ranks 0..k-1 on ckpt-node1, and so on.
#
# Open MPI settings added (and why):
#   --mca plm_rsh_agent rsh-agent.sh   start each host's orted through the agent instead of ssh
#   --mca btl_tcp_if_include lo        MPI messages between hosts go over loopback; Open MPI leaves
#                                      127.0.0.0/8 out by default, so on a machine (or container)
#                                      whose only interface is lo no two hosts could reach each other
#   --bind-to none                     every host's daemon sees all cores and would bind its ranks
#                                      as if it had the machine to itself (rank 0 of every host on
#                                      core 0); CKPT_MULTIHOST_BIND=core restores per-host binding
# Open MPI's tree spawn is kept (its default fan-out of 64 lets mpiexec start every daemon itself
# up to 64 hosts); plm_rsh_no_tree_spawn=1 must not be set: orted is then told to --daemonize
# and leaves the agent, which would unmount the host's --cache-dir under it.
#
# Environment: CKPT_MULTIHOST_MPIEXEC (default mpiexec; Open MPI 4.x), CKPT_MULTIHOST_PREFIX (host
# name prefix, default ckpt-node), CKPT_MULTIHOST_BIND (default none), CKPT_MULTIHOST_LOG=FILE
# (the agent logs what Open MPI passes it). Needs root (namespaces, FUSE). The ranks get this
# shell's environment (the agent inherits it), so `-x VAR` is not needed.
# Exit status: mpiexec's; 2 usage; 77 (--check, or a run that cannot start here) with the reason.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
agent="$here/rsh-agent.sh"
me="multihost"
usage="usage: $0 [--cache-dir DIR]... HOSTS RANKS_PER_HOST [MPIEXEC OPTIONS] -- CMD [ARGS...]  |  $0 [--cache-dir DIR]... --check"

die() { echo "$me: error: $1" >&2; exit "${2:-1}"; }
cant() { echo "$me: cannot run several hosts here: $*" >&2; exit 77; }

cache_dirs=() check=0 print=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cache-dir)
      [ $# -ge 2 ] || die "--cache-dir needs a directory ($usage)" 2
      mkdir -p -- "$2" 2> /dev/null || die "--cache-dir '$2': cannot create it" 2
      d="$(cd -- "$2" && pwd -P)" || die "--cache-dir '$2': not a directory" 2
      [[ "$d" != *:* ]] || die "--cache-dir '$d': a ':' in the path is not supported" 2
      cache_dirs+=("$d"); shift 2 ;;
    --cache-dir=*) set -- --cache-dir "${1#*=}" "${@:2}" ;;
    --check) check=1; shift ;;
    --print) print=1; shift ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
if [ ${#cache_dirs[@]} -gt 0 ]; then
  CKPT_MULTIHOST_CACHE_DIRS="$(IFS=:; echo "${cache_dirs[*]}")"
  export CKPT_MULTIHOST_CACHE_DIRS
else
  unset CKPT_MULTIHOST_CACHE_DIRS
fi

mpiexec="${CKPT_MULTIHOST_MPIEXEC:-mpiexec}"
prefix="${CKPT_MULTIHOST_PREFIX:-ckpt-node}"
[[ "$prefix" =~ ^[A-Za-z][A-Za-z0-9-]{0,50}$ ]] || die "CKPT_MULTIHOST_PREFIX '$prefix': letters, digits and '-' only" 2

# what_is_wrong: why several hosts cannot be made here (empty: they can).
what_is_wrong() {
  command -v "$mpiexec" > /dev/null || { echo "'$mpiexec' not found (set CKPT_MULTIHOST_MPIEXEC)"; return; }
  local v
  v="$("$mpiexec" --version 2>&1 | head -n 1)"
  [[ "$v" == *"Open MPI"*" 4."* || "$v" == *"OpenRTE"*" 4."* ]] ||
    { echo "needs Open MPI 4.x's mpiexec (plm_rsh_agent); '$mpiexec --version' says: ${v:-nothing}"; return; }
  "$agent" --check > /dev/null 2>&1 || { "$agent" --check 2>&1 | sed 's/^rsh-agent: cannot make hosts here: //'; return; }
}

# Open MPI refuses root unless told (and the agent needs root).
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

hostfile=""
cleanup() { [ -z "$hostfile" ] || rm -f "$hostfile"; }
trap cleanup EXIT

# launch HOSTS RPH [MPIEXEC OPTIONS] -- CMD...: runs (or prints) the job; returns mpiexec's status.
launch() {
  local hosts="$1" rph="$2" i
  shift 2
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  [ $# -ge 2 ] || die "no command after '--' ($usage)" 2
  shift
  hostfile="$(mktemp "${TMPDIR:-/tmp}/ckpt-multihost-hosts.XXXXXX")" || die "cannot write a hostfile"
  for ((i = 1; i <= hosts; i++)); do echo "$prefix$i slots=$rph"; done > "$hostfile"
  local cmd=("$mpiexec" --hostfile "$hostfile" -n $((hosts * rph))
             --mca plm_rsh_agent "$agent" --mca btl_tcp_if_include lo
             --bind-to "${CKPT_MULTIHOST_BIND:-none}" "${opts[@]}" "$@")
  if [ "$print" -eq 1 ]; then
    echo "# hostfile (a temporary file, removed after the run):"; sed 's/^/#   /' "$hostfile"
    [ -z "${CKPT_MULTIHOST_CACHE_DIRS:-}" ] || echo "CKPT_MULTIHOST_CACHE_DIRS=$CKPT_MULTIHOST_CACHE_DIRS"
    printf '%q ' "${cmd[@]}"; echo
    rm -f "$hostfile"
    return 0
  fi
  # In the background, so that a TERM or INT to this script (timeout, Ctrl-C) reaches mpiexec,
  # which then stops the hosts' daemons and ranks; stdin stays the caller's.
  local pid rc
  "${cmd[@]}" <&0 &
  pid=$!
  trap 'kill -TERM "$pid" 2> /dev/null' TERM INT HUP
  while :; do
    wait "$pid"; rc=$?
    kill -0 "$pid" 2> /dev/null || break
  done
  trap - TERM INT HUP
  rm -f "$hostfile"
  return $rc
}

if [ "$check" -eq 1 ]; then
  [ $# -eq 0 ] || die "--check takes no other arguments ($usage)" 2
  why="$(what_is_wrong)"
  [ -z "$why" ] || { echo "$me: cannot run several hosts here: $why"; exit 77; }
  # A real two-host job: each rank prints its host name; two distinct names expected.
  out="$(launch 2 1 --timeout 60 -- hostname 2>&1)"; rc=$?
  names="$(sort -u <<< "$out" | tr '\n' ' ')"
  if [ $rc -ne 0 ]; then
    echo "$me: cannot run several hosts here: a 2-host test job gave exit $rc: $(tail -c 600 <<< "$out")"
    exit 77
  fi
  if [ "$names" != "${prefix}1 ${prefix}2 " ]; then
    echo "$me: cannot run several hosts here: the ranks of a 2-host test job ran on '${names% }'," \
      "not '${prefix}1 ${prefix}2' (a name that resolves to this machine is local for Open MPI:" \
      "getent hosts ${prefix}1 ${prefix}2; set CKPT_MULTIHOST_PREFIX)"
    exit 77
  fi
  echo "$me: ok: 2 hosts (${prefix}1 ${prefix}2) started through $agent${CKPT_MULTIHOST_CACHE_DIRS:+, each with its own FUSE view of $CKPT_MULTIHOST_CACHE_DIRS}"
  exit 0
fi

[ $# -ge 4 ] || die "$usage" 2
if ! [[ "$1" =~ ^[1-9][0-9]*$ ]] || [ "$1" -gt 64 ]; then die "HOSTS '$1': a number from 1 to 64" 2; fi
[[ "$2" =~ ^[1-9][0-9]*$ ]] || die "RANKS_PER_HOST '$2': a positive number" 2
if [ "$print" -eq 0 ]; then
  why="$(what_is_wrong)"
  [ -z "$why" ] || cant "$why"
fi
launch "$@"
