#!/usr/bin/env bash
# A real one-node Slurm on this machine, for trying the sbatch templates and `srun` launches
# without a cluster (tests/cli/test_slurm.sh uses it). Debian's Slurm and MUNGE, started by hand
# (no systemd needed), all state under one directory, stopped again with `stop`.
#
#   scripts/slurm/local-cluster.sh start  [--dir DIR] [--cpus N]   install if missing, configure,
#                                                                   start munged, slurmctld, slurmd
#   scripts/slurm/local-cluster.sh status [--dir DIR]               daemons and node state
#   scripts/slurm/local-cluster.sh stop   [--dir DIR]               stop what `start` started
#   scripts/slurm/local-cluster.sh env    [--dir DIR]               prints `export SLURM_CONF=...`
#
# Then:  eval "$(scripts/slurm/local-cluster.sh env)"; sinfo; sbatch --wait ...; srun -n 2 hostname
#
# DIR (default /tmp/ckpt-slurm, or $CKPT_SLURM_DIR) holds slurm.conf, the logs, spool and state,
# and the daemons' PID files. The node is this host with N CPUs (default: the online cores; more
# than the machine has is accepted - SlurmdParameters=config_overrides - and lets more tasks
# start than there are cores). MpiDefault=none, so a launch chooses its PMI plugin the way
# scripts/slurm/run.sbatch does (`srun --mpi=list`); Debian's Open MPI 4.1 needs --mpi=pmix.
# TaskPlugin=task/affinity makes --cpu-bind real. Ports: slurmctld $CKPT_SLURM_PORT (default 6817),
# slurmd the next one; give another port to run a second cluster beside a first. Needs root (the daemons run as root and the
# packages may have to be installed). Exit status: 0 done, 2 usage, 77 Slurm cannot run here
# (the reason is printed), 1 anything else.
set -euo pipefail

die() { echo "local-cluster: error: $*" >&2; exit "${2:-1}"; }
cant() { echo "local-cluster: cannot run Slurm here: $*" >&2; exit 77; }

cmd="${1:-}"
[ $# -gt 0 ] && shift
dir="${CKPT_SLURM_DIR:-/tmp/ckpt-slurm}"
cpus="$(getconf _NPROCESSORS_ONLN)"
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) [ $# -ge 2 ] || die "--dir needs a directory" 2; dir="$2"; shift 2 ;;
    --cpus)
      [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--cpus needs a positive integer" 2
      cpus="$2"; shift 2 ;;
    *) die "unknown argument '$1' (usage: $0 start|status|stop|env [--dir DIR] [--cpus N])" 2 ;;
  esac
done
case "$cmd" in start | stop | status | env) ;; *)
  die "command '$cmd': allowed start, status, stop, env (usage: $0 CMD [--dir DIR] [--cpus N])" 2 ;;
esac
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

if [ "$cmd" = env ]; then
  printf 'export SLURM_CONF=%q\n' "$conf"
  exit 0
fi

# alive PIDFILE: the process named in PIDFILE runs.
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2> /dev/null; }

# stop_pid PIDFILE NAME: SIGTERM, up to 15 s, then SIGKILL.
stop_pid() {
  local f="$1" pid i
  alive "$f" || { rm -f "$f"; return 0; }
  pid="$(cat "$f")"
  kill "$pid" 2> /dev/null || true
  for i in $(seq 150); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2> /dev/null; then
    echo "local-cluster: $2 (pid $pid) did not stop in 15 s: killed" >&2
    kill -9 "$pid" 2> /dev/null || true
  fi
  rm -f "$f"
}

if [ "$cmd" = stop ]; then
  # Jobs first, so none is left running on a node that is going away.
  if alive "$dir/slurmctld.pid" && command -v scancel > /dev/null; then
    scancel --quiet --full --user="$(id -un)" 2> /dev/null || true
  fi
  stop_pid "$dir/slurmd.pid" slurmd
  stop_pid "$dir/slurmctld.pid" slurmctld
  stop_pid "$dir/munged.pid" munged  # only when this script started it
  echo "local-cluster: stopped (state kept in $dir)"
  exit 0
fi

if [ "$cmd" = status ]; then
  for d in munged slurmctld slurmd; do
    if alive "$dir/$d.pid"; then echo "$d: running (pid $(cat "$dir/$d.pid"))"
    else echo "$d: not started by $0"; fi
  done
  alive "$dir/slurmctld.pid" && sinfo -N -o '%N %T %c %m' || true
  exit 0
fi

# ------------------------------------------------------------------------------------ start
[ "$(id -u)" -eq 0 ] || cant "needs root (slurmd runs jobs as any user; munged needs /run/munge)"
pkgs=(slurmctld slurmd slurm-client munge)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get > /dev/null || cant "Slurm is not installed (${missing[*]}) and there is no apt-get"
  echo "local-cluster: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; }; } \
    > "${TMPDIR:-/tmp}/local-cluster-apt.log" 2>&1 ||
    cant "apt-get install ${missing[*]} failed (see ${TMPDIR:-/tmp}/local-cluster-apt.log)"
fi
alive "$dir/slurmctld.pid" && die "a cluster from $dir is running already (stop it first)"
mkdir -p "$dir/spool" "$dir/state" "$dir/log"

# MUNGE authenticates every Slurm message. Reuse a munged that already runs (its socket answers).
if munge -n < /dev/null 2> /dev/null | unmunge > /dev/null 2>&1; then
  echo "local-cluster: using the munged that runs already"
else
  [ -s /etc/munge/munge.key ] || { command -v mungekey > /dev/null && mungekey --create --force 2> /dev/null; } ||
    cant "no /etc/munge/munge.key and mungekey could not create one"
  install -d -o munge -g munge -m 0755 /run/munge
  chown munge:munge /etc/munge/munge.key 2> /dev/null || true
  install -d -o munge -g munge -m 0700 /var/log/munge
  # munged runs as user munge, so its log and PID file stay in its own directories.
  runuser -u munge -- /usr/sbin/munged > /dev/null 2>&1 || true
  for i in $(seq 50); do
    munge -n < /dev/null 2> /dev/null | unmunge > /dev/null 2>&1 && break
    sleep 0.1
  done
  munge -n < /dev/null 2> /dev/null | unmunge > /dev/null 2>&1 ||
    cant "munged did not start: $(tail -n 3 /var/log/munge/munged.log 2> /dev/null | tr '\n' ' ')"
  cp /run/munge/munged.pid "$dir/munged.pid" 2> /dev/null || pgrep -n -x munged > "$dir/munged.pid"
fi

host="$(hostname -s)"
port="${CKPT_SLURM_PORT:-6817}"
[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65534 ] ||
  die "CKPT_SLURM_PORT '$port': allowed 1024-65534" 2
mem_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 - 512))
cat > "$conf" << EOF
# Written by scripts/slurm/local-cluster.sh: one node, this host, for tests and trials.
ClusterName=ckptlocal
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/backfill
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.daemon.pid
SlurmdPidFile=$dir/slurmd.daemon.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
InactiveLimit=0
KillWait=5
MinJobAge=60
SlurmctldTimeout=30
SlurmdTimeout=30
Waittime=0
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF

/usr/sbin/slurmctld -D -i -f "$conf" > "$dir/log/slurmctld.out" 2>&1 &
echo $! > "$dir/slurmctld.pid"
/usr/sbin/slurmd -D -f "$conf" > "$dir/log/slurmd.out" 2>&1 &
echo $! > "$dir/slurmd.pid"

# Ready when the node is idle (about 2 s here); 30 s at most.
state=""
for i in $(seq 300); do
  alive "$dir/slurmctld.pid" || break
  alive "$dir/slurmd.pid" || break
  state="$(sinfo -h -N -n "$host" -o '%T' 2> /dev/null || true)"
  [ "$state" = idle ] && break
  sleep 0.1
done
if [ "$state" != idle ]; then
  why="node state '${state:-none}'"
  alive "$dir/slurmctld.pid" || why="slurmctld exited: $(tail -n 3 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" 2> /dev/null | tr '\n' ' ')"
  alive "$dir/slurmd.pid" || why="slurmd exited: $(tail -n 3 "$dir/log/slurmd.log" "$dir/log/slurmd.out" 2> /dev/null | tr '\n' ' ')"
  "$0" stop --dir "$dir" > /dev/null 2>&1 || true
  cant "the node did not become idle in 30 s: $why"
fi
echo "local-cluster: Slurm $(sinfo -V | awk '{print $2}') up: node $host, $cpus CPUs, partition local" \
  "(export SLURM_CONF=$conf; stop with: $0 stop --dir $dir)"
