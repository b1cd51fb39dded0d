#!/usr/bin/env bash
# The paper's metadata finding on a real metadata server: configs/metadata-cephfs.json (the same
# Llama-2-7B state saved file per tensor, file per shard and one file per rank) on a CephFS and
# on a local disk, 4 ranks each, then one table of what the metadata server costs.
#
#   scripts/bench_cephfs_metadata.sh [CEPHFS_DIR]
#
# Without CEPHFS_DIR a one-node CephFS is started for the run (scripts/ceph/local-ceph.sh, in a
# temporary directory) and stopped at the end; with it, CEPHFS_DIR must be on CephFS (the runs
# use target_fs "cephfs", so an unmounted directory is refused).
# Env: CKPT_BINARY (default build/ckptbench), CKPT_LOCAL_TARGET (the local disk, default
#      /var/tmp), CKPT_RANKS (4), CKPT_OUT (results/ : metadata-cephfs.json, metadata-local.json,
#      figures/metadata-*/).
# Writes the reports and figures, and prints the table docs/cluster.md quotes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${CKPT_BINARY:-$root/build/ckptbench}"
[ -x "$BIN" ] || { echo "bench_cephfs_metadata: no binary at $BIN (build first or set CKPT_BINARY)" >&2; exit 2; }
RANKS="${CKPT_RANKS:-4}"
OUT="${CKPT_OUT:-$root/results}"
local_base="${CKPT_LOCAL_TARGET:-/var/tmp}"
cfg="$root/configs/metadata-cephfs.json"
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" != 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
scratch="$(mktemp -d "$local_base/ckpt-meta.XXXXXX")"
ceph_dir=""
cleanup() {
  [ -z "$ceph_dir" ] || "$root/scripts/ceph/local-ceph.sh" stop --dir "$ceph_dir" > /dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
if [ $# -ge 1 ]; then
  ceph_target="$1/ckpt-meta-$$"
else
  ceph_dir="$scratch/ceph"
  "$root/scripts/ceph/local-ceph.sh" start --dir "$ceph_dir"
  eval "$("$root/scripts/ceph/local-ceph.sh" env --dir "$ceph_dir")"
  ceph_target="$CKPT_CEPH_MOUNT/meta"
fi
mkdir -p "$OUT"
echo "== CephFS: $ceph_target"
mpiexec -n "$RANKS" "$BIN" run --config "$cfg" --set target_fs=cephfs --target "$ceph_target" \
  --output "$OUT/metadata-cephfs.json" --quiet
echo "== local disk: $scratch/local"
mpiexec -n "$RANKS" "$BIN" run --config "$cfg" --target "$scratch/local" \
  --output "$OUT/metadata-local.json" --quiet
PY=/usr/bin/python3
"$PY" -c 'import matplotlib' 2> /dev/null || PY=python3
for n in cephfs local; do
  "$PY" "$root/scripts/plot.py" "$OUT/metadata-$n.json" --out "$OUT/figures/metadata-$n" > /dev/null || true
done
"$PY" - "$OUT/metadata-cephfs.json" "$OUT/metadata-local.json" << 'PY'
import json, statistics, sys
print("| file system | layout | files | save GiB/s | restore GiB/s | save metadata op/s | save open+close s (mean rank) | save time s |")
print("|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    d = json.load(open(path))
    fs = d["environment"]["file_system"]["type"]
    for p in d["points"]:
        reps = p["repetitions"]
        med = lambda f: statistics.median(f(r) for r in reps)
        s = lambda r: r["save"]
        print(f"| {fs} | {p['params']['layout']} | {s(reps[0])['files']} "
              f"| {med(lambda r: s(r)['bandwidth_GiBps']):.3f} | {med(lambda r: r['restore']['bandwidth_GiBps']):.3f} "
              f"| {med(lambda r: s(r)['metadata_ops_per_s']):.0f} "
              f"| {med(lambda r: s(r)['steps']['open_s']['mean'] + s(r)['steps']['close_s']['mean']):.3f} "
              f"| {med(lambda r: s(r)['elapsed_s']):.3f} |")
print(f"(medians of {len(reps)} repetitions; ckptbench {d['tool']['version']} {d['tool']['git']})")
PY
