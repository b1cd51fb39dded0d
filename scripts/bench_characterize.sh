#!/usr/bin/env bash
# The recommendation of `characterize` against a full cartesian sweep over the same space, on the
# same target (issue 27; docs/characterize.md; docs/PERFORMANCE.md, "Characterization").
#   scripts/bench_characterize.sh --target DIR [--ranks N] [--budget MIN] [--report CH.json]
#                                 [--sweep SWEEP.json] [--reps R] [--pairs K] [--out DIR]
#     --target DIR   the file system to characterise (a fresh directory below it is used)
#     --ranks N      ranks (default 4)
#     --budget MIN   characterize's budget in minutes (default 10)
#     --report F     use this characterization report instead of running characterize
#     --sweep F      use this sweep report (an earlier run's sweep.json) instead of sweeping; the
#                    pairs then run at its probe size
#     --reps R       repetitions of every sweep point (default 3)
#     --pairs K      interleaved pairs (recommended, sweep best) measured at the end (default 5)
#     --out DIR      where the reports go (default a temporary directory, kept)
# Steps: (1) characterize; (2) `run` of the probes' own config (the same synthetic checkpoint,
# probe size and settings) swept over backend x direct x block_size {64K..16M, x4} x queue_depth
# {1..64, x2} (posix at queue depth 1 only: it keeps one transfer in flight; MPI-IO without
# O_DIRECT: it has none here); (3) K interleaved pairs of the recommended data path and the
# sweep's best point, each pair in one run (2 points x 1 repetition), because the best of a
# sweep's noisy means is biased upwards; prints each side's median save GiB/s, their ratio
# (goal >= 0.95) and the characterization's predicted against measured save time (goal within
# 15 %).
# Environment: CKPT_BINARY (default build/ckptbench).
set -euo pipefail
source "$(dirname "$0")/common.sh"
target="" ranks=4 budget=10 report="" sweep="" reps=3 pairs=5 out=""
die2() { echo "bench_characterize: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="${2:?--target needs a value}"; shift 2 ;;
    --ranks) ranks="${2:?--ranks needs a value}"; shift 2 ;;
    --budget) budget="${2:?--budget needs a value}"; shift 2 ;;
    --report) report="${2:?--report needs a value}"; shift 2 ;;
    --sweep) sweep="${2:?--sweep needs a value}"; shift 2 ;;
    --reps) reps="${2:?--reps needs a value}"; shift 2 ;;
    --pairs) pairs="${2:?--pairs needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
    *) die2 "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$target" ] || die2 "--target DIR is required"
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || die2 "--ranks $ranks: a positive integer"
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die2 "--reps $reps: a positive integer"
[[ "$pairs" =~ ^[1-9][0-9]*$ ]] || die2 "--pairs $pairs: a positive integer"
[[ "$budget" =~ ^[0-9]+([.][0-9]+)?$ ]] || die2 "--budget $budget: minutes, a positive number"
[ -z "$report" ] || [ -r "$report" ] || die2 "--report $report: cannot be read"
[ -z "$sweep" ] || [ -r "$sweep" ] || die2 "--sweep $sweep: cannot be read"
bin="${CKPT_BINARY:-$CKPT_ROOT/build/ckptbench}"
[ -x "$bin" ] || die2 "no binary at $bin (scripts/demo.sh builds it, or set CKPT_BINARY)"
command -v mpiexec > /dev/null || die2 "mpiexec not found (Open MPI)"
[ -n "$out" ] || out="$(mktemp -d "${TMPDIR:-/tmp}/bench_characterize.XXXXXX")"
mkdir -p "$out" "$target"
work="$target/bench_characterize.$$"
mkdir "$work"
trap 'rm -rf "$work"' EXIT
run_mpi() { "${MPIEXEC[@]}" -n "$ranks" "$bin" "$@"; }
t0=$SECONDS
echo "bench_characterize: $("$bin" --version | head -1), $ranks ranks, target $target, reports in $out"

# 1. characterize
if [ -z "$report" ]; then
  report="$out/characterize.json"
  echo "== characterize --budget $budget"
  run_mpi characterize --target "$work/char" --budget "$budget" -o "$report" \
    --recommend "$out/recommended.json"
  echo "characterize took $((SECONDS - t0)) s"
fi

# 2. the sweep over the same space, with the probes' own config
py() { python3 - "$@"; }
py "$report" "$out/sweep-config.json" "$reps" "$work/sweep" <<'PYEOF'
import json, sys
rep, dst, reps, target = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = json.load(open(rep))
ch = d["characterization"]
# The probes' config: the first probe over all ranks, one file per rank.
base = None
for p in d["points"]:
    pr = p.get("probe", {})
    if pr.get("members") == "all" and pr.get("stage") not in ("calibrate", "validate", "region_align", "stripes"):
        base = dict(p["config"])
        break
if base is None:
    sys.exit("bench_characterize: the report has no probe over all ranks")
keep = ("model", "parallelism", "layout", "transfer", "sync", "verify", "cache", "region_align",
        "preallocate", "align")
cfg = {k: base[k] for k in keep if k in base}
backends = sorted({p["settings"]["backend"] for p in ch["probes"] if p["stage"] == "backend"})
cfg.update({"name": "bench_characterize sweep", "target": target, "repetitions": reps,
            "sweep": {"backend": backends, "direct": [False, True],
                      "block_size": ["64K", "256K", "1M", "4M", "16M"],
                      "queue_depth": [1, 2, 4, 8, 16, 32, 64]},
            "exclude": [{"backend": "posix", "queue_depth": q} for q in [2, 4, 8, 16, 32, 64]]})
# Combinations characterize found refused here (MPI-IO with O_DIRECT) are left out likewise.
for p in ch["probes"]:
    if p["stage"] == "backend" and p["status"] == "skipped":
        cfg["exclude"].append({"backend": p["settings"]["backend"], "direct": p["settings"]["direct"]})
json.dump(cfg, open(dst, "w"), indent=1)
print("sweep: backends %s, probe %s bytes per rank" % (backends, ch["probe"]["bytes_per_rank"]))
PYEOF
if [ -n "$sweep" ]; then
  echo "== sweep: $sweep (given)"
  [ "$sweep" -ef "$out/sweep.json" ] || cp "$sweep" "$out/sweep.json"
else
  echo "== sweep ($out/sweep-config.json)"
  t1=$SECONDS
  run_mpi run -c "$out/sweep-config.json" -o "$out/sweep.json" -q
  echo "sweep took $((SECONDS - t1)) s"
fi

# 3. interleaved pairs: the recommended data path and the sweep's best, K times
cat > "$work/pairs.py" <<'PYEOF'
import itertools, json, statistics, sys

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
def to_bytes(v):
    if isinstance(v, int):
        return v
    v = str(v).strip().upper().replace("IB", "").replace("B", "")
    return int(float(v[:-1]) * UNITS[v[-1]]) if v[-1] in UNITS else int(v)
def key(c):
    return {"backend": c["backend"], "direct": bool(c["direct"]),
            "block_size": to_bytes(c["block_size"]), "queue_depth": int(c["queue_depth"])}
KEEP = ("model", "parallelism", "layout", "transfer", "sync", "verify", "cache", "region_align",
        "preallocate", "align")

def make(report, sweep, dst, target):
    ch = json.load(open(report))["characterization"]
    sw = json.load(open(sweep))
    best = max((p for p in sw["points"] if p.get("status") == "ok"),
               key=lambda p: p["summary"]["save"]["bandwidth_GiBps"]["median"])
    b, r = key(best["config"]), key(ch["chosen"])
    cfg = {k: v for k, v in best["config"].items() if k in KEEP}
    cfg.update({"name": "bench_characterize pairs", "target": target, "repetitions": 1})
    axes = {k: ([b[k], r[k]] if b[k] != r[k] else [b[k]]) for k in b}
    for k, vals in axes.items():
        if len(vals) == 1:
            cfg[k] = vals[0]
    sweep_axes = {k: v for k, v in axes.items() if len(v) > 1}
    if sweep_axes:
        cfg["sweep"] = sweep_axes
        keys = list(sweep_axes)
        excl = []
        for combo in itertools.product(*[sweep_axes[k] for k in keys]):
            c = dict(zip(keys, combo))
            if all(c[k] == b[k] for k in keys) or all(c[k] == r[k] for k in keys):
                continue
            excl.append(c)
        if excl:
            cfg["exclude"] = excl
    json.dump(cfg, open(dst, "w"), indent=1)
    print("sweep best : %s  median save %.3f GiB/s over %d repetitions" % (
        b, best["summary"]["save"]["bandwidth_GiBps"]["median"], len(best["repetitions"])))
    print("recommended: %s" % r)
    print("SAME" if b == r else "DIFFERENT")

def judge(report, out, pairs):
    ch = json.load(open(report))["characterization"]
    r = key(ch["chosen"])
    rec, best = [], []
    for i in range(1, pairs + 1):
        for p in json.load(open("%s/pair-%d.json" % (out, i)))["points"]:
            bw = p["repetitions"][0]["save"]["bandwidth_GiBps"]
            (rec if key(p["config"]) == r else best).append(bw)
    if rec and best:
        mr, mb = statistics.median(rec), statistics.median(best)
        print("recommended: median save %.3f GiB/s over %d runs (%s)" % (
            mr, len(rec), ", ".join("%.3f" % x for x in rec)))
        print("sweep best : median save %.3f GiB/s over %d runs (%s)" % (
            mb, len(best), ", ".join("%.3f" % x for x in best)))
        print("ratio recommended / sweep best: %.3f (goal >= 0.95)" % (mr / mb))

def prediction(report):
    v = json.load(open(report))["characterization"].get("recommendation", {}).get("validation", {})
    if v.get("status") == "ok":
        print("prediction: save predicted %.3f s, measured %.3f s (x%.3f; goal within 15 %%); "
              "restore predicted %.3f s, measured %.3f s (x%.3f)" % (
                  v["predicted"]["save_s"], v["measured"]["save_s"], v["save_ratio"],
                  v["predicted"]["restore_s"], v["measured"]["restore_s"], v["restore_ratio"]))
        r = v.get("reference")
        if r:
            print("reference probe beside the check: save x%.3f, restore x%.3f of its search time; "
                  "against the prediction scaled by that: save x%.3f, restore x%.3f" % (
                      r["save_drift"], r["restore_drift"], r["save_ratio"], r["restore_ratio"]))
    else:
        print("prediction: no check run in the report (%s)" % v.get("error", "validation missing"))

if sys.argv[1] == "make":
    make(*sys.argv[2:6])
elif sys.argv[1] == "judge":
    judge(sys.argv[2], sys.argv[3], int(sys.argv[4]))
else:
    prediction(sys.argv[2])
PYEOF
verdict="$(python3 "$work/pairs.py" make "$report" "$out/sweep.json" "$out/pair-config.json" "$work/pairs")"
echo "$verdict" | grep -v -x -e SAME -e DIFFERENT
if echo "$verdict" | grep -q -x SAME; then
  echo "== the recommended data path is the sweep's best point: ratio 1 by construction"
else
  echo "== $pairs interleaved pairs ($out/pair-config.json)"
  for i in $(seq 1 "$pairs"); do
    run_mpi run -c "$out/pair-config.json" -o "$out/pair-$i.json" -q
  done
  python3 "$work/pairs.py" judge "$report" "$out" "$pairs"
fi
python3 "$work/pairs.py" prediction "$report"
echo "bench_characterize: $((SECONDS - t0)) s in all; reports in $out"
