#!/usr/bin/env bash
# An ssh stand-in for Open MPI that makes "hosts" on this machine: each daemon (orted) runs in a
# UTS namespace of its own whose hostname is the host name Open MPI asked for, so every rank that
# daemon starts sees gethostname() == HOST, MPI_Get_processor_name() == HOST, and Open MPI itself
# maps the ranks of different daemons to different nodes (MPI_COMM_TYPE_SHARED, the shared-memory
# BTL only within a node, TCP between nodes). scripts/multihost/mpiexec.sh sets it up; by hand:
#
#   mpiexec --mca plm_rsh_agent scripts/multihost/rsh-agent.sh --hostfile H ...
#
# Open MPI 4.1 runs it like ssh:  AGENT [ssh options] HOST COMMAND...   where COMMAND is a shell
# command line that starts orted (`orted -mca ess "env" -mca ess_base_jobid ... --tree-spawn ...`).
# ssh options (-x, -o X, -p N, -l USER, ...; added with the MCA parameter plm_rsh_args) are
# accepted and ignored. The words of COMMAND are joined with spaces and run by /bin/sh -c, as sshd
# does. The environment is the launcher's (ssh would give a login environment instead).
#
# A client cache per host (CKPT_MULTIHOST_CACHE_DIRS=DIR[:DIR...], absolute paths of existing
# directories): the daemon also gets a mount namespace of its own in which each DIR is mounted
# over itself with bindfs (FUSE). Every host sees the same files at the same path, but through a
# FUSE mount of its own, and so with a page cache of its own, the way each node of a cluster has
# its own parallel-file-system client: a file written on ckpt-node1 is not in ckpt-node2's cache.
# The backing directory's page cache (the host file system under the FUSE mounts) is shared, as a
# storage server's cache would be. The mounts end with the daemon (bindfs runs with
# PR_SET_PDEATHSIG, so they also go if this script is killed).
#
#   CKPT_MULTIHOST_LOG=FILE   append each call's arguments to FILE (to see what Open MPI passes)
#   rsh-agent.sh --check      exit 0 when namespaces (and, with CKPT_MULTIHOST_CACHE_DIRS, FUSE
#                             mounts) work here; else the reason and exit 77
#
# Needs root (unshare(2) of UTS and mount namespaces, mount(2) of FUSE), util-linux `unshare`,
# `hostname`, `setpriv`, and for the cache dirs `bindfs` (Debian package bindfs) and /dev/fuse.
# Exit status: COMMAND's, or 255 when the agent itself fails (as ssh does).
set -u
me="rsh-agent"
self="$(readlink -f "${BASH_SOURCE[0]}")"
# FUSE options of the per-host mounts. kernel_cache: a host keeps what it wrote or read in its page
# cache across opens, as a cluster client does (FUSE's default drops a file's cache at every open,
# which would make every restore look uncached, own files included). attr_timeout=0 and
# entry_timeout=0: sizes and names are asked for every time, so a host sees at once what another
# host wrote (close-to-open, as on NFS). Pages a host has cached are not revalidated, so a page
# rewritten by another host would be stale there; a checkpoint writes each byte once.
fuse_opts="kernel_cache,attr_timeout=0,entry_timeout=0"

die() { echo "$me: error: $*" >&2; exit 255; }

# why_not_quick: the checks made at every launch: root and the tools (empty: fine).
why_not_quick() {
  [ "$(id -u)" -eq 0 ] || { echo "needs root for unshare(2) and mount(2) (running as uid $(id -u))"; return; }
  local t
  for t in unshare hostname setpriv; do
    command -v "$t" > /dev/null || { echo "'$t' not found (Debian packages util-linux, hostname)"; return; }
  done
  [ -z "${CKPT_MULTIHOST_CACHE_DIRS:-}" ] || command -v bindfs > /dev/null ||
    echo "'bindfs' not found: apt-get install bindfs (per-host client caches need it)"
}

# why_not: prints why this agent cannot work here (empty: it can), trying a UTS namespace and,
# with CKPT_MULTIHOST_CACHE_DIRS, a FUSE mount in a mount namespace.
why_not() {
  local err
  err="$(why_not_quick)"
  [ -z "$err" ] || { echo "$err"; return; }
  # shellcheck disable=SC2016  # expanded by the inner shell
  err="$(unshare --uts -- sh -c 'hostname ckpt-probe && [ "$(hostname)" = ckpt-probe ]' 2>&1)" ||
    { echo "cannot make a UTS namespace with its own hostname: ${err//$'\n'/; }"; return; }
  [ -n "${CKPT_MULTIHOST_CACHE_DIRS:-}" ] || return 0
  [ -c /dev/fuse ] || { echo "/dev/fuse does not exist (FUSE is not available here)"; return; }
  local probe
  probe="$(mktemp -d "${TMPDIR:-/tmp}/ckpt-fuse-probe.XXXXXX")" || { echo "cannot make a probe directory"; return; }
  err="$(unshare --mount --propagation private -- "$self" --ckpt-probe-fuse "$probe" 2>&1)"
  local rc=$?
  rmdir "$probe" 2> /dev/null
  [ $rc -eq 0 ] || echo "cannot mount FUSE (bindfs) in a mount namespace: ${err//$'\n'/; }"
}

# is_fuse_mount DIR DEV0: DIR is now a FUSE mount (device no longer DEV0, FUSE's statfs magic).
is_fuse_mount() {
  [ "$(stat -c %d "$1" 2> /dev/null)" != "$2" ] && [ "$(stat -f -c %t "$1" 2> /dev/null)" = 65735546 ]
}

# Run by why_not in a private mount namespace: bindfs DIR over itself, check, unmount.
# (bindfs in the foreground, as a child that is waited for: a daemonized one would be left to a
# PID 1 that may not reap it.)
if [ "${1:-}" = --ckpt-probe-fuse ]; then
  dev0="$(stat -c %d "$2")"
  bindfs -f "$2" "$2" < /dev/null &
  pid=$!
  for _ in $(seq 100); do
    is_fuse_mount "$2" "$dev0" && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.05
  done
  if ! is_fuse_mount "$2" "$dev0"; then
    kill "$pid" 2> /dev/null; wait "$pid"; rc=$?
    echo "bindfs mounted no FUSE file system on $2 (bindfs exit $rc)"; exit 1
  fi
  umount "$2" || umount -l "$2"
  wait "$pid"
  exit 0
fi

if [ "${1:-}" = --check ]; then
  why="$(why_not)"
  if [ -n "$why" ]; then echo "$me: cannot make hosts here: $why"; exit 77; fi
  echo "$me: ok: UTS namespaces${CKPT_MULTIHOST_CACHE_DIRS:+ and per-host FUSE mounts} work here"
  exit 0
fi

# ---- Inside the new namespaces (the agent re-runs itself there): set the hostname, mount the
# per-host views, run COMMAND, unmount.
if [ "${1:-}" = --ckpt-inside ]; then
  host="$2"; shift 2
  hostname "$host" || die "cannot set the hostname to '$host' in the new UTS namespace"
  export CKPT_MULTIHOST_HOST="$host"  # for the ranks, and to refuse nested launches
  mounted=() fuse_pids=()
  cleanup() {
    local d p
    for d in "${mounted[@]}"; do umount "$d" 2> /dev/null || umount -l "$d" 2> /dev/null; done
    for p in "${fuse_pids[@]}"; do kill "$p" 2> /dev/null; done
    for p in "${fuse_pids[@]}"; do wait "$p" 2> /dev/null; done
  }
  if [ -n "${CKPT_MULTIHOST_CACHE_DIRS:-}" ]; then
    IFS=: read -r -a dirs <<< "$CKPT_MULTIHOST_CACHE_DIRS"
    for d in "${dirs[@]}"; do
      [ -n "$d" ] || continue
      # Mounted over itself: the same path, this host's own FUSE client (and page cache).
      dev0="$(stat -c %d "$d")"
      setpriv --pdeathsig TERM bindfs -f -o "$fuse_opts" "$d" "$d" < /dev/null &
      fuse_pids+=($!)
      ok=0
      for _ in $(seq 100); do
        if is_fuse_mount "$d" "$dev0"; then ok=1; break; fi
        kill -0 "${fuse_pids[-1]}" 2> /dev/null || break
        sleep 0.05
      done
      if [ $ok -ne 1 ]; then cleanup; die "$host: bindfs did not mount '$d' within 5 s"; fi
      mounted+=("$d")
    done
  fi
  child=0
  # mpiexec ends a daemon that does not stop by signalling its agent: pass it on to orted.
  trap '[ "$child" -gt 0 ] && kill -TERM "$child" 2> /dev/null' TERM INT HUP
  # shellcheck disable=SC2145  # the words joined by spaces, as sshd passes them to the shell
  /bin/sh -c "$*" &
  child=$!
  while :; do
    wait "$child"; rc=$?
    kill -0 "$child" 2> /dev/null || break  # wait was interrupted by a trapped signal
  done
  cleanup
  exit "$rc"
fi

# ---- Called by Open MPI as ssh: [options] HOST COMMAND...
if [ -n "${CKPT_MULTIHOST_LOG:-}" ]; then
  # One write per call (O_APPEND), so the lines of agents started at once do not interleave.
  line="$(printf '%s pid %s on %s:' "$(date +%T.%N)" "$$" "$(hostname)"; printf ' [%s]' "$@")"
  printf '%s\n' "$line" >> "$CKPT_MULTIHOST_LOG"
fi
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -[BbcDEeFIiJLlmOoPpQRSWw]) [ $# -ge 2 ] || die "ssh option $1 needs a value"; shift 2 ;;
    -[BbcDEeFIiJLlmOoPpQRSWw]?*) shift ;;  # -p22, -oBatchMode=yes
    -[146AaCfGgKkMNnqsTtVvXxYy]*) shift ;;
    -*) die "unknown ssh option '$1'" ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || die "usage: $0 [ssh options] HOST COMMAND... (got: ${*:-nothing})"
# Called from inside a host: Open MPI's tree spawn let a daemon start another daemon, whose
# namespaces would then nest in this host's (its mounts included).
[ -z "${CKPT_MULTIHOST_HOST:-}" ] ||
  die "called on host '$CKPT_MULTIHOST_HOST' to start '$1': every daemon must be started by mpiexec itself (at most 64 hosts, Open MPI's routed_radix; or raise --mca routed_radix)"
host="$1"; shift
case "$host" in *@*) host="${host#*@}" ;; esac  # user@host
[[ "$host" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,62})$ ]] || die "'$host' is not a usable host name"
why="$(why_not_quick)"
[ -z "$why" ] || die "cannot start host '$host': $why"
if [ -n "${CKPT_MULTIHOST_CACHE_DIRS:-}" ]; then
  IFS=: read -r -a dirs <<< "$CKPT_MULTIHOST_CACHE_DIRS"
  for d in "${dirs[@]}"; do
    [ -z "$d" ] || { [[ "$d" == /* ]] && [ -d "$d" ]; } ||
      die "CKPT_MULTIHOST_CACHE_DIRS: '$d' is not an absolute path of an existing directory"
  done
  exec unshare --uts --mount --propagation private -- "$self" --ckpt-inside "$host" "$@"
fi
exec unshare --uts -- "$self" --ckpt-inside "$host" "$@"
