#!/usr/bin/env bash
# A real one-node CephFS on this machine, for trying the Ceph layouts and MPI-IO on a parallel
# file system without a cluster. Debian's Ceph (mon, mgr, one BlueStore OSD on a sparse file,
# MDS), started by hand (no systemd, no cephadm), mounted with ceph-fuse; all state under one
# directory, stopped and removed again with `stop`.
#
#   scripts/ceph/local-ceph.sh start  [--dir DIR] [--mount MNT]   install if missing, configure,
#                                                                  start the daemons, create the
#                                                                  CephFS, mount it at MNT
#   scripts/ceph/local-ceph.sh status [--dir DIR]                  daemons, cluster state, mount
#   scripts/ceph/local-ceph.sh stop   [--dir DIR]                  unmount, stop what `start`
#                                                                  started, remove DIR
#   scripts/ceph/local-ceph.sh env    [--dir DIR]                  prints `export CEPH_CONF=...`
#                                                                  and `export CKPT_CEPH_MOUNT=...`
#
# Then:  eval "$(scripts/ceph/local-ceph.sh env)"; ceph -s; ls "$CKPT_CEPH_MOUNT"
#        setfattr -n ceph.dir.layout.stripe_count -v 4 "$CKPT_CEPH_MOUNT/d"
#        getfattr -n ceph.file.layout "$CKPT_CEPH_MOUNT/d/file"
#
# DIR (default /tmp/ckpt-ceph, or $CKPT_CEPH_DIR) holds ceph.conf, the keyrings, the mon, mgr,
# OSD and MDS data, the logs (DIR/log), the PID files and admin sockets (DIR/run) and the OSD's
# sparse 20 GiB block file (it needs 4 GiB free to start; data written to the CephFS fills it).
# MNT defaults to DIR/mnt. Pools cephfs_data and cephfs_metadata, size 1, 8 PGs each; the file
# system is named cephfs. The mon listens on msgr2 only, 127.0.0.1:$CKPT_CEPH_PORT (default 3300);
# give another port (and DIR) to run a second cluster beside a first. `stop` stops only the
# processes whose PIDs `start` recorded (never by name): SIGTERM, SIGKILL after 20 s (e.g. a
# ceph-fuse whose MDS died); about 8 s. Then it deletes DIR. `start` takes about 15 s once the
# packages are there (installing them, about 35 s more); it is a no-op when the cluster is up and
# mounted, starts afresh when DIR holds one that is not, and when a step fails it prints the logs'
# tails and stops what it started. Needs root, /dev/fuse, about 0.6-1 GiB of memory.
# Exit status: 0 done, 2 usage, 77 Ceph cannot run here (the reason is printed), 1 anything else.
set -euo pipefail

me="local-ceph"
die() { echo "$me: error: $1" >&2; exit "${2:-1}"; }
cant() { echo "$me: cannot run Ceph here: $*" >&2; exit 77; }

cmd="${1:-}"
[ $# -gt 0 ] && shift
dir="${CKPT_CEPH_DIR:-/tmp/ckpt-ceph}"
mnt=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) { [ $# -ge 2 ] && [ -n "$2" ]; } || die "--dir needs a directory" 2; dir="$2"; shift 2 ;;
    --mount) { [ $# -ge 2 ] && [ -n "$2" ]; } || die "--mount needs a directory" 2; mnt="$2"; shift 2 ;;
    *) die "unknown argument '$1' (usage: $0 start|status|stop|env [--dir DIR] [--mount MNT])" 2 ;;
  esac
done
case "$cmd" in start | stop | status | env) ;; *)
  die "command '$cmd': allowed start, status, stop, env (usage: $0 CMD [--dir DIR] [--mount MNT])" 2 ;;
esac
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
dir="${dir%/}"
[ -n "$dir" ] || die "--dir /: choose a directory of its own" 2
conf="$dir/ceph.conf"
run="$dir/run"
marker="$dir/.local-ceph"   # says DIR was made by this script, so `stop` may delete it
# The mount point `start` used is kept in DIR/mountpoint; status, stop and env (and a `start` that
# finds the cluster up) use that one, whatever --mount says.
abspath() { case "$1" in /*) echo "${1%/}" ;; *) echo "$PWD/${1%/}" ;; esac; }
mnt_new="$(abspath "${mnt:-$dir/mnt}")"
[ -n "$mnt_new" ] || die "--mount /: choose a directory of its own" 2
if [ -s "$dir/mountpoint" ]; then mnt="$(cat "$dir/mountpoint")"; else mnt="$mnt_new"; fi
port="${CKPT_CEPH_PORT:-3300}"
export CEPH_CONF="$conf"

if [ "$cmd" = env ]; then
  printf 'export CEPH_CONF=%q\n' "$conf"
  printf 'export CKPT_CEPH_MOUNT=%q\n' "$mnt"
  exit 0
fi

daemons=(mon.a mgr.x osd.0 mds.a)
# ceph CMD...: the CLI on this cluster, never hanging for long.
cephq() { timeout 30 ceph --conf "$conf" --connect-timeout 15 "$@"; }
# running PID: the process runs (a zombie, not yet reaped, does not count).
running() {
  kill -0 "$1" 2> /dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | cut -d' ' -f1)" != Z ]
}
# alive PIDFILE: the process named in PIDFILE runs.
alive() { [ -s "$1" ] && running "$(cat "$1")"; }
# mounted: MNT is in the mount table. Read from /proc, not by stat(): that blocks on a FUSE mount
# whose ceph-fuse or MDS hangs (so does `mountpoint`).
mounted() {
  M="${mnt// /\\040}" awk '$5 == ENVIRON["M"] {f = 1} END {exit !f}' /proc/self/mountinfo
}

# stop_pids NAME...: SIGTERM to each recorded process at once, up to 20 s, then SIGKILL.
stop_pids() {
  local n f pid left pids=()
  for n in "$@"; do
    f="$run/$n.pid"
    if alive "$f"; then pids+=("$(cat "$f")"); kill "$(cat "$f")" 2> /dev/null || true; fi
  done
  for _ in $(seq 200); do
    left=0
    for pid in "${pids[@]}"; do running "$pid" && left=1; done
    [ "$left" -eq 0 ] && break
    sleep 0.1
  done
  for n in "$@"; do
    f="$run/$n.pid"
    if alive "$f"; then
      echo "$me: $n (pid $(cat "$f")) did not stop in 20 s: killed" >&2
      kill -9 "$(cat "$f")" 2> /dev/null || true
    fi
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
  done
  for n in "$@"; do rm -f "$run/$n.pid"; done
}

# unmount: the CephFS off MNT and ceph-fuse gone; fails if MNT stays a mount point. Nothing here
# may stat() MNT while it is mounted (a hung ceph-fuse would hang it too): umount -c, not umount.
unmount() {
  if mounted; then
    if timeout -s KILL 10 fusermount -u "$mnt" 2> /dev/null; then
      for _ in $(seq 50); do mounted || break; sleep 0.1; done
    fi
    if mounted; then   # busy (a file open or a cwd there) or hung: detach it
      echo "$me: $mnt is busy: lazy unmount" >&2
      timeout -s KILL 10 umount -l -c "$mnt" 2> /dev/null || true
    fi
  fi
  stop_pids ceph-fuse
  if mounted; then timeout -s KILL 10 umount -l -c "$mnt" 2> /dev/null || true; fi
  ! mounted && ! timeout -s KILL 10 mountpoint -q "$mnt" 2> /dev/null
}

# teardown: unmount, stop every daemon this DIR's `start` recorded, delete DIR.
teardown() {
  unmount || { echo "$me: $mnt is still mounted; $dir kept" >&2; return 1; }
  # An MDS holding its rank takes 10 s or more to exit on SIGTERM; one whose file system is failed
  # (its rank given up, nothing kept: DIR goes anyway) about 4 s.
  if alive "$run/mds.a.pid" && alive "$run/mon.a.pid"; then
    timeout -s KILL 10 ceph --conf "$conf" --connect-timeout 5 fs fail cephfs > /dev/null 2>&1 || true
  fi
  stop_pids rgw.a   # the S3 gateway of scripts/ceph/local-rgw.sh, if it started one
  stop_pids mds.a osd.0 mgr.x
  stop_pids mon.a
  if [ -e "$dir/mountpoint.made" ]; then rmdir "$mnt" 2> /dev/null || true; fi
  if [ -e "$marker" ]; then
    rm -rf "$dir"
  elif [ -d "$dir" ]; then
    echo "$me: $dir was not made by $0: not deleted" >&2
  fi
}

if [ "$cmd" = stop ]; then
  if [ ! -e "$dir" ]; then echo "$me: nothing to stop ($dir does not exist)"; exit 0; fi
  teardown || exit 1
  echo "$me: stopped (removed $dir)"
  exit 0
fi

if [ "$cmd" = status ]; then
  up=0
  for d in "${daemons[@]}" ceph-fuse; do
    if alive "$run/$d.pid"; then echo "$d: running (pid $(cat "$run/$d.pid"))"; up=1
    else echo "$d: not running (not started by $0 with --dir $dir)"; fi
  done
  if [ "$up" -eq 1 ] && alive "$run/mon.a.pid"; then
    cephq -s 2> /dev/null || echo "ceph -s: no answer"
  fi
  if mounted; then echo "mount: $mnt (ceph-fuse)"; else echo "mount: $mnt is not mounted"; fi
  exit 0
fi

# ------------------------------------------------------------------------------------ start
[ "$(id -u)" -eq 0 ] || cant "needs root (packages, daemons, the FUSE mount)"
[ -c /dev/fuse ] || cant "no /dev/fuse (FUSE is needed for ceph-fuse)"
{ [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65535 ]; } ||
  die "CKPT_CEPH_PORT '$port': allowed 1024-65535" 2

if alive "$run/mon.a.pid" || [ -e "$marker" ]; then
  ok=1
  for d in "${daemons[@]}" ceph-fuse; do alive "$run/$d.pid" || ok=0; done
  if [ "$ok" -eq 1 ] && mounted; then
    echo "$me: already running from $dir, mounted at $mnt"
    exit 0
  fi
  echo "$me: $dir holds a cluster that is not fully up: stopping it and starting afresh" >&2
  teardown || die "could not clean up $dir"
fi
mnt="$mnt_new"
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2> /dev/null)" ]; then
  die "$dir exists, is not empty and was not made by $0: choose another --dir"
fi

pkgs=(ceph ceph-fuse attr)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get > /dev/null || cant "Ceph is not installed (${missing[*]}) and there is no apt-get"
  echo "$me: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq "${missing[@]}" ||
    { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; }; } \
    > "${TMPDIR:-/tmp}/local-ceph-apt.log" 2>&1 ||
    cant "apt-get install ${missing[*]} failed (see ${TMPDIR:-/tmp}/local-ceph-apt.log)"
fi
for t in ceph ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-authtool monmaptool uuidgen mountpoint; do
  command -v "$t" > /dev/null || cant "$t is missing after installing ${pkgs[*]}"
done
command -v fusermount > /dev/null || cant "no fusermount (Debian package fuse, which ceph-fuse depends on)"
if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
  die "port $port on 127.0.0.1 is in use (another cluster? set CKPT_CEPH_PORT)"
fi

mkdir -p "$dir"
parent_fs_free_kb="$(df -Pk "$dir" | awk 'NR == 2 {print $4}')"
[ "${parent_fs_free_kb:-0}" -ge $((4 * 1024 * 1024)) ] ||
  die "only $((${parent_fs_free_kb:-0} / 1024)) MiB free on the file system of $dir: the OSD needs 4 GiB"
[ "$(stat -f -c %T "$dir")" != tmpfs ] ||
  cant "$dir is on tmpfs, where BlueStore cannot open its block file with O_DIRECT: use another --dir"
mountpoint -q "$mnt" 2> /dev/null && die "$mnt is a mount point already"

# From here on a failure prints the logs' tails and stops whatever was started.
started=0
on_exit() {
  local rc=$? f
  { [ "$rc" -ne 0 ] && [ "$started" -eq 0 ]; } || return 0
  echo "$me: start failed; the logs' last lines:" >&2
  for f in "$dir"/log/*.log "$dir"/log/*.out; do
    [ -s "$f" ] || continue
    echo "==> $f <==" >&2
    tail -n 15 "$f" >&2
  done
  teardown > /dev/null 2>&1 || true
  exit "$rc"
}
trap on_exit EXIT
touch "$marker"
echo "$mnt" > "$dir/mountpoint"
[ -d "$mnt" ] || { mkdir -p "$mnt" && touch "$dir/mountpoint.made"; }
mkdir -p "$run" "$dir/log" "$dir/keyring" "$dir/mon" "$dir/mgr" "$dir/osd" "$dir/mds"
fail() { echo "$me: error: $*" >&2; exit 1; }

fsid="$(uuidgen)"
cat > "$conf" << EOF
# Written by scripts/ceph/local-ceph.sh: one node, this host, for tests and trials.
[global]
fsid = $fsid
mon_initial_members = a
mon_host = [v2:127.0.0.1:$port]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_ipv4 = true
ms_bind_ipv6 = false
ms_bind_msgr1 = false
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
keyring = $dir/keyring/\$name.keyring
run_dir = $run
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_max_pg_per_osd = 500

# Daemons: one log, PID file and admin socket each, by name.
[mon]
mon_data = $dir/mon/\$cluster-\$id
keyring = \$mon_data/keyring
log_file = $dir/log/\$name.log
pid_file = $run/\$name.daemon.pid
admin_socket = $run/\$name.asok
mon_data_avail_warn = 5
[mgr]
mgr_data = $dir/mgr/\$cluster-\$id
log_file = $dir/log/\$name.log
pid_file = $run/\$name.daemon.pid
admin_socket = $run/\$name.asok
mgr_initial_modules = iostat
[osd]
osd_data = $dir/osd/\$cluster-\$id
osd_objectstore = bluestore
bluestore_block_path = $dir/osd/\$cluster-\$id.block
bluestore_block_create = true
bluestore_block_size = 21474836480
bluestore_block_db_create = false
bluestore_block_wal_create = false
bluestore_block_preallocate_file = false
bdev_enable_discard = false
osd_memory_target = 1073741824
log_file = $dir/log/\$name.log
pid_file = $run/\$name.daemon.pid
admin_socket = $run/\$name.asok
[mds]
mds_data = $dir/mds/\$cluster-\$id
mds_cache_memory_limit = 268435456
log_file = $dir/log/\$name.log
pid_file = $run/\$name.daemon.pid
admin_socket = $run/\$name.asok

# Clients (ceph CLI, ceph-fuse, libcephfs): one admin socket per process, so that two never
# collide (a collision can make a mount fail and writes land in the directory underneath).
[client]
admin_socket = $run/\$name.\$pid.asok
EOF

# Keys and the mon.
ceph-authtool --create-keyring "$dir/keyring/mon.keyring" --gen-key -n mon. --cap mon 'allow *' > /dev/null
ceph-authtool --create-keyring "$dir/keyring/client.admin.keyring" --gen-key -n client.admin \
  --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' > /dev/null
ceph-authtool "$dir/keyring/mon.keyring" --import-keyring "$dir/keyring/client.admin.keyring" > /dev/null
monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$dir/monmap" > /dev/null
ceph-mon --conf "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring/mon.keyring" \
  > "$dir/log/mkfs-mon.out" 2>&1 || fail "ceph-mon --mkfs failed"

# start_daemon NAME CMD...: run CMD in the foreground of its own session, its PID recorded.
start_daemon() {
  local n="$1"; shift
  setsid "$@" -f < /dev/null > "$dir/log/$n.out" 2>&1 &
  echo $! > "$run/$n.pid"
}
start_daemon mon.a ceph-mon --conf "$conf" -i a
for _ in $(seq 150); do
  alive "$run/mon.a.pid" || fail "ceph-mon exited"
  cephq mon stat > /dev/null 2>&1 && break
  sleep 0.2
done
cephq mon stat > /dev/null 2>&1 || fail "the mon does not answer on 127.0.0.1:$port"

cephq auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
  -o "$dir/keyring/mgr.x.keyring" 2> /dev/null
mkdir -p "$dir/mgr/ceph-x"
start_daemon mgr.x ceph-mgr --conf "$conf" -i x

osd_uuid="$(uuidgen)"
osd_id="$(cephq osd new "$osd_uuid")"
[ "$osd_id" = 0 ] || fail "ceph osd new gave id '$osd_id', expected 0"
cephq auth get-or-create osd.0 mon 'allow profile osd' mgr 'allow profile osd' osd 'allow *' \
  -o "$dir/keyring/osd.0.keyring" 2> /dev/null
mkdir -p "$dir/osd/ceph-0"
ceph-osd --conf "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid" > "$dir/log/mkfs-osd.out" 2>&1 ||
  fail "ceph-osd --mkfs failed"
start_daemon osd.0 ceph-osd --conf "$conf" -i 0

cephq osd pool create cephfs_metadata 8 8 > /dev/null 2>&1 || fail "could not create pool cephfs_metadata"
cephq osd pool create cephfs_data 8 8 > /dev/null 2>&1 || fail "could not create pool cephfs_data"
cephq fs new cephfs cephfs_metadata cephfs_data > /dev/null 2>&1 || fail "ceph fs new failed"
cephq auth get-or-create mds.a mon 'allow profile mds' osd 'allow rwx' mds 'allow' mgr 'allow profile mds' \
  -o "$dir/keyring/mds.a.keyring" 2> /dev/null
mkdir -p "$dir/mds/ceph-a"
start_daemon mds.a ceph-mds --conf "$conf" -i a

# Ready when every PG is active+clean and the MDS is up:active (about 15 s here); 120 s at most.
pgs="" mds=""
for _ in $(seq 240); do
  for d in "${daemons[@]}"; do alive "$run/$d.pid" || fail "$d exited"; done
  pgs="$(cephq pg stat 2> /dev/null || true)"
  mds="$(cephq mds stat 2> /dev/null || true)"
  if [[ "$pgs" =~ ^([0-9]+)\ pgs:\ ([0-9]+)\ active\+clean\; ]] &&
    [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [[ "$mds" == *up:active* ]]; then
    break
  fi
  pgs="" mds="${mds:-none}"
  sleep 0.5
done
[ -n "$pgs" ] || fail "not ready in 120 s: pg stat '$(cephq pg stat 2> /dev/null || true)', mds stat '$mds'"

# The mount: ceph-fuse in the foreground of its own session; it is ready when MNT is a mount point.
setsid ceph-fuse --conf "$conf" --id admin -f --log-file="$dir/log/ceph-fuse.log" "$mnt" \
  < /dev/null > "$dir/log/ceph-fuse.out" 2>&1 &
echo $! > "$run/ceph-fuse.pid"
for _ in $(seq 300); do
  alive "$run/ceph-fuse.pid" || fail "ceph-fuse exited: $(tail -n 3 "$dir/log/ceph-fuse.out" | tr '\n' ' ')"
  mounted && break
  sleep 0.1
done
{ mounted && mountpoint -q "$mnt"; } || fail "$mnt is not a mount point 30 s after ceph-fuse started"
[ "$(stat -f -c %T "$mnt")" = fuseblk ] || [ "$(stat -f -c %T "$mnt")" = fuse ] ||
  fail "$mnt is mounted but not by FUSE ($(stat -f -c %T "$mnt"))"
# One write and read back through the mount, so that a test never starts on a dead mount.
{ echo ok > "$mnt/.local-ceph-probe" && [ "$(cat "$mnt/.local-ceph-probe")" = ok ]; } ||
  fail "could not write and read back a file in $mnt"
rm -f "$mnt/.local-ceph-probe"

started=1
echo "$me: CephFS up: mon 127.0.0.1:$port, 1 OSD, MDS active, mounted at $mnt (ceph-fuse)" \
  "(eval \"\$($0 env --dir $dir)\"; stop with: $0 stop --dir $dir)"
