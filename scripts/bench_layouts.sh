#!/usr/bin/env bash
# Every layout side by side on a scaled Llama-2-7B (TP2 x DP2, ZeRO-1) on 4 ranks: save and
# restore bandwidth, files/s, metadata ops/s and peak RSS per rank vs. the checkpoint size.
# Usage: scripts/bench_layouts.sh [scale] [backend] [direct]
#   scale   model.scale (default 0.03: ~2.6 GiB of training state, >= 8x the buffer pool)
#   backend posix | io_uring (default posix), direct true|false (default true)
# Env: CKPT_BINARY (default build/ckptbench), CKPT_BENCH_DIR (scratch, default /var/tmp),
#      CKPT_REPS (default 3).
set -euo pipefail
source "$(dirname "$0")/common.sh"
scale="${1:-0.03}"; backend="${2:-posix}"; direct="${3:-true}"
bin="${CKPT_BINARY:-$CKPT_ROOT/build/ckptbench}"
[ -x "$bin" ] || configure_build "$CKPT_ROOT/build" -DCMAKE_BUILD_TYPE=Release
reps="${CKPT_REPS:-3}"
work="$(mktemp -d "${CKPT_BENCH_DIR:-/var/tmp}/ckpt-bench-layouts.XXXXXX")"
trap 'rm -rf "$work"' EXIT
qd=1; [ "$backend" = io_uring ] && qd=16
cat > "$work/cfg.json" <<J
{"name": "layouts", "comment": "every layout, scaled llama2-7b, TP2 DP2 ZeRO-1",
 "model": {"name": "llama2-7b", "scale": $scale},
 "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
 "backend": "$backend", "queue_depth": $qd, "block_size": "1M", "direct": $direct, "sync": "end",
 "repetitions": $reps, "ranks_per_node": 2,
 "sweep": {"layout": ["file-per-tensor", "file-per-shard", "aggregated-rank", "aggregated-node", "shared-file"]}}
J
out="${CKPT_BENCH_OUT:-$work/report.json}"
"${MPIEXEC[@]}" -n 4 "$bin" run --config "$work/cfg.json" --target "$work/t" --output "$out" --quiet >/dev/null
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{'layout':17} {'files':>6} {'size':>9} {'save GiB/s':>11} {'restore GiB/s':>14} {'save files/s':>13} {'meta ops/s':>11} {'peak RSS/rank':>14} {'pool':>8}")
for p in d["points"]:
    if p["status"] != "ok": print(p["config"]["layout"], "FAILED", p.get("error")); continue
    s, r = p["summary"]["save"], p["summary"]["restore"]
    reps = p["repetitions"]
    save_el = sorted(x["save"]["elapsed_s"] for x in reps)[len(reps)//2]
    meta = sorted(x["save"]["metadata_ops_per_s"] for x in reps)[len(reps)//2]
    files = p["plan"]["files"]
    print(f"{p['config']['layout']:17} {files:6d} {p['plan']['file_bytes']/2**30:7.2f}Gi "
          f"{s['bandwidth_GiBps']['median']:11.3f} {r['bandwidth_GiBps']['median']:14.3f} "
          f"{files/save_el:13.1f} {meta:11.1f} {p['memory']['peak_rss_bytes']['max']/2**20:11.1f}MiB "
          f"{p['memory']['buffer_pool_bytes']/2**20:6.1f}Mi")
e = d["environment"]
print(f"# {e['ranks']} ranks, {e['file_system']['type']}, backend {d['points'][0]['config']['backend']}, "
      f"direct {d['points'][0]['config']['direct']}, medians of {len(d['points'][0]['repetitions'])} repetitions; "
      f"cache {d['points'][0]['settings']['cache']}")
PY
