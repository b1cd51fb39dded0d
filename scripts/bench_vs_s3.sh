#!/usr/bin/env bash
# ckptbench's s3 backend side by side with what users run, on the same Ceph cluster:
#  - against boto3's transfer manager (python3-boto3: upload_fileobj / download_fileobj with the
#    same part size, threshold and concurrency) on the same object sizes: save and restore;
#  - against ckptbench's posix backend on the CephFS of the same cluster (same OSD): the choice
#    between the object store and the file system a user actually weighs.
# Interleaved rounds (the order rotates each round), medians, one TSV.
#
#   scripts/bench_vs_s3.sh [--pairs N] [--scale S] [--part SIZE] [--qd N] [--out FILE]
#
# Defaults: 5 rounds, llama2-7b scaled 1/128 (one object of about 0.7 GiB: aggregated-rank on one
# rank), 8 MiB parts, 8 requests in flight, TSV in results/bench_vs_s3/<date>-<commit>.tsv.
# Starts the cluster and the gateway (scripts/ceph/local-rgw.sh, local-ceph.sh; root) and stops
# them at the end. Prints per-round GiB/s and the medians; docs/PERFORMANCE.md has the numbers.
set -euo pipefail
source "$(dirname "$0")/common.sh"
pairs=5 scale="1/128" part="8M" qd=8 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) pairs="$2"; shift 2 ;;
    --scale) scale="$2"; shift 2 ;;
    --part) part="$2"; shift 2 ;;
    --qd) qd="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--pairs N] [--scale S] [--part SIZE] [--qd N] [--out FILE]" >&2; exit 2 ;;
  esac
done
[[ "$pairs" =~ ^[1-9][0-9]*$ ]] || { echo "bench_vs_s3: --pairs '$pairs': a positive integer" >&2; exit 2; }
[[ "$qd" =~ ^[1-9][0-9]*$ ]] || { echo "bench_vs_s3: --qd '$qd': a positive integer" >&2; exit 2; }
BIN="$CKPT_ROOT/build/ckptbench"
[ -x "$BIN" ] || { echo "bench_vs_s3: build the binary first (scripts/demo.sh)" >&2; exit 2; }
PY=/usr/bin/python3
"$PY" -c "import boto3" 2> /dev/null || { echo "bench_vs_s3: needs python3-boto3 (apt-get install python3-boto3)" >&2; exit 2; }
commit="$(git -C "$CKPT_ROOT" rev-parse --short HEAD)$(git -C "$CKPT_ROOT" diff --quiet || echo -dirty)"
[ -n "$out" ] || out="$CKPT_ROOT/results/bench_vs_s3/$(date -u +%F)-$commit.tsv"
mkdir -p "$(dirname "$out")"
work="$(mktemp -d /var/tmp/bench-s3.XXXXXX)"
cdir="$work/ceph"
cleanup() { "$CKPT_ROOT/scripts/ceph/local-ceph.sh" stop --dir "$cdir" > /dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"$CKPT_ROOT/scripts/ceph/local-rgw.sh" start --dir "$cdir"
eval "$("$CKPT_ROOT/scripts/ceph/local-rgw.sh" env --dir "$cdir")"
eval "$("$CKPT_ROOT/scripts/ceph/local-ceph.sh" env --dir "$cdir")"
mpi=(mpiexec -n 1)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)

# One config for both ckptbench sides: the backend and the target differ.
cat > "$work/config.json" << EOF
{"model": {"name": "llama2-7b", "scale": "$scale"},
 "parallelism": {"tp": 1, "pp": 1, "dp": 1, "zero_stage": 1}, "layout": "aggregated-rank",
 "block_size": "$part", "queue_depth": $qd, "repetitions": 1, "verify": false,
 "s3": {"url": "s3://$CKPT_S3_BUCKET/bench", "endpoint": "$CKPT_S3_ENDPOINT"}}
EOF
# ckpt BACKEND: one save + restore; prints "save_GiBps restore_GiBps bytes".
ckpt() {
  local extra=() target="$work/t-local"
  if [ "$1" = posix ]; then extra=(--set cache=fadvise --set sync=end); target="$CKPT_CEPH_MOUNT/bench"; fi
  "${mpi[@]}" "$BIN" run --config "$work/config.json" --set backend="$1" "${extra[@]}" \
    --target "$target" --output "$work/r.json" --quiet > "$work/ckpt.log" 2>&1 ||
    { echo "bench_vs_s3: ckptbench $1 failed: $(tail -n 3 "$work/ckpt.log")" >&2; exit 1; }
  "$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))["points"][0]["repetitions"][0]
print(r["save"]["bandwidth_GiBps"], r["restore"]["bandwidth_GiBps"], r["save"]["bytes"])' "$work/r.json"
}
# boto BYTES: boto3's transfer manager uploads and downloads one object of BYTES from and into
# memory; prints "save_GiBps restore_GiBps".
boto() {
  "$PY" - "$1" "$part" "$qd" << 'PY'
import io, os, sys, time, boto3
from boto3.s3.transfer import TransferConfig
size, part, qd = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
part_b = int(part[:-1]) * units[part[-1]] if part[-1] in units else int(part)
s3 = boto3.client("s3", endpoint_url=os.environ["CKPT_S3_ENDPOINT"], region_name="us-east-1")
cfg = TransferConfig(multipart_threshold=part_b, multipart_chunksize=part_b, max_concurrency=qd,
                     use_threads=qd > 1)
b, key = os.environ["CKPT_S3_BUCKET"], "bench-boto3/object"
data = os.urandom(1 << 20) * (size >> 20) + os.urandom(size & ((1 << 20) - 1))
t0 = time.perf_counter()
s3.upload_fileobj(io.BytesIO(data), b, key, Config=cfg)
t1 = time.perf_counter()
sink = io.BytesIO()
s3.download_fileobj(b, key, sink, Config=cfg)
t2 = time.perf_counter()
assert sink.getbuffer().nbytes == size
s3.delete_object(Bucket=b, Key=key)
print(size / (t1 - t0) / (1 << 30), size / (t2 - t1) / (1 << 30))
PY
}

printf 'round\ttool\tphase\tGiBps\tbytes\n' > "$out"
bytes=""
for round in $(seq "$pairs"); do
  order=(s3 boto3 cephfs)
  for ((k = 0; k < (round - 1) % 3; k++)); do order=("${order[@]:1}" "${order[0]}"); done
  for tool in "${order[@]}"; do
    case "$tool" in
      s3) read -r sv rs bytes < <(ckpt s3) ;;
      cephfs) read -r sv rs _ < <(ckpt posix) ;;
      boto3)
        [ -n "$bytes" ] || read -r _ _ bytes < <(ckpt s3)
        read -r sv rs < <(boto "$bytes") ;;
    esac
    printf '%s\t%s\tsave\t%s\t%s\n%s\t%s\trestore\t%s\t%s\n' "$round" "$tool" "$sv" "$bytes" \
      "$round" "$tool" "$rs" "$bytes" >> "$out"
    printf 'round %s %-7s save %.3f GiB/s restore %.3f GiB/s\n' "$round" "$tool" "$sv" "$rs"
  done
done
"$PY" - "$out" "$commit" << 'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
med = {}
for tool in ("s3", "boto3", "cephfs"):
    for phase in ("save", "restore"):
        v = [float(r["GiBps"]) for r in rows if r["tool"] == tool and r["phase"] == phase]
        med[tool, phase] = statistics.median(v)
print(f"medians at {sys.argv[2]} over {len(rows) // 6} rounds (GiB/s):")
for phase in ("save", "restore"):
    s3, b, c = med["s3", phase], med["boto3", phase], med["cephfs", phase]
    print(f"  {phase:8s} ckptbench s3 {s3:.3f}  boto3 {b:.3f} (s3/boto3 {s3 / b:.2f})  "
          f"ckptbench posix on CephFS {c:.3f} (s3/cephfs {s3 / c:.2f})")
print("TSV:", sys.argv[1])
PY
