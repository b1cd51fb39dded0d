#!/usr/bin/env bash
# Many repetitions of one point: the run's time per repetition and what its report costs, so that
# the report writing is seen to stay linear (docs/reliability.md, "Reports are written as the run
# goes"; docs/PERFORMANCE.md, "Many repetitions").
#   scripts/bench_repetitions.sh [--ranks N] [--reps LIST] [--model NAME] [--scale S]
#     --ranks N    ranks (default 2)
#     --reps LIST  comma-separated repetition counts, each one run (default 100,1000,10000)
#     --model M    zoo model (default tiny)
#     --scale S    model.scale (default 1/65536: about 1 KB per repetition, so the time is the
#                  tool's own, not the storage's; 1 measures tiny's 51 MB per repetition)
# Environment: CKPT_BINARY (default build/ckptbench), TMPDIR (where the runs go).
set -euo pipefail
source "$(dirname "$0")/common.sh"
ranks=2 reps_list=100,1000,10000 model=tiny scale=1/65536
die2() { echo "bench_repetitions: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks="${2:?--ranks needs a value}"; shift 2 ;;
    --reps) reps_list="${2:?--reps needs a value}"; shift 2 ;;
    --model) model="${2:?--model needs a value}"; shift 2 ;;
    --scale) scale="${2:?--scale needs a value}"; shift 2 ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) die2 "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || die2 "--ranks $ranks: a positive integer"
[[ "$reps_list" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die2 "--reps $reps_list: positive integers, comma-separated"
bin="${CKPT_BINARY:-$CKPT_ROOT/build/ckptbench}"
[ -x "$bin" ] || die2 "no binary at $bin (scripts/demo.sh builds it, or set CKPT_BINARY)"
work="$(mktemp -d "${TMPDIR:-/tmp}/bench_repetitions.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "bench_repetitions: $("$bin" --version | head -1), $ranks ranks, model $model scale $scale," \
  "target $work"
printf '%-12s %10s %14s %14s %8s\n' repetitions "wall s" "ms/repetition" "report bytes" status
IFS=, read -r -a counts <<< "$reps_list"
for n in "${counts[@]}"; do
  printf '{"model": {"name": "%s", "scale": "%s"}, "direct": false, "cache": "none", "repetitions": %d}\n' \
    "$model" "$scale" "$n" > "$work/c.json"
  rm -rf "$work/t" "$work/r.json"
  mkdir -p "$work/t"
  t0="$(date +%s.%N)"
  rc=0
  "${MPIEXEC[@]}" -n "$ranks" "$bin" run --config "$work/c.json" --target "$work/t" \
    --output "$work/r.json" --quiet > "$work/log" 2>&1 || rc=$?
  t1="$(date +%s.%N)"
  [ $rc -eq 0 ] || { tail -n 5 "$work/log" >&2; die2 "$n repetitions: exit $rc"; }
  python3 - "$work/r.json" "$n" "$t0" "$t1" <<'PY'
import json, os, sys
path, n, t0, t1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
d = json.load(open(path))
reps = len(d["points"][0]["repetitions"])
assert reps == n, f"{reps} repetitions in the report, {n} run"
wall = t1 - t0
print(f"{n:<12d} {wall:10.1f} {wall / n * 1000:14.2f} {os.path.getsize(path):14d} {d['status']:>8}")
PY
done
