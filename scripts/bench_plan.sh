#!/usr/bin/env bash
# Benchmark of `ckptbench plan` (issue 3, "Performance"): llama3.1-405b, TP8 x PP16 x DP128
# (16,384 virtual ranks), ZeRO-1, file-per-tensor, on one process. Targets: < 2 s wall, < 2 GiB
# peak RSS. Prints wall time and max RSS from /usr/bin/time -v, and the plan's arithmetic bounds
# (`estimate`: what the limits are checked against, docs/config.md "limits") beside what was
# built; not a pass/fail test.
#   scripts/bench_plan.sh [path/to/ckptbench] [world=16384] [layout=file-per-tensor]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-${CKPT_BINARY:-$root/build/ckptbench}}"
world="${2:-16384}"
layout="${3:-file-per-tensor}"
[[ -x "$bin" ]] || { echo "bench_plan: $bin not found or not executable (build first)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bench_plan: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/plan405b.json" <<JSON
{
  "name": "bench-plan-llama3.1-405b",
  "comment": "scripts/bench_plan.sh: plan only, no I/O",
  "target": "$tmp/never-written",
  "model": {"name": "llama3.1-405b"},
  "parallelism": {"tp": 8, "pp": 16, "dp": "auto", "zero_stage": 1},
  "layout": "$layout"
}
JSON

/usr/bin/time -v "$bin" plan --config "$tmp/plan405b.json" --world "$world" --json \
  > "$tmp/plan.out" 2> "$tmp/time.txt" || { cat "$tmp/time.txt" >&2; exit 1; }
wall="$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time.txt")"
rss_kb="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time.txt")"
echo "ckptbench plan llama3.1-405b tp8 pp16 world $world zero1 $layout"
echo "  wall time:   $wall (target < 2 s)"
echo "  max RSS:     $((rss_kb / 1024)) MiB (target < 2048 MiB)"
echo "  plan output: $(wc -c < "$tmp/plan.out") bytes of JSON"
python3 - "$tmp/plan.out" <<'PY' 2>/dev/null || true
import json, sys
doc = json.load(open(sys.argv[1]))
pts = doc if isinstance(doc, list) else doc.get("points", [doc])
for p in pts:
    print("  files: {}, payload: {:.2f} TiB".format(p.get("files"), p.get("payload_bytes", 0) / 2**40))
    e = p.get("estimate", {})
    print("  estimate:    {} MiB of plan memory, {} files, {} extents, {} shards".format(
        e.get("memory_bytes", 0) >> 20, e.get("files"), e.get("extents"), e.get("shards")))
PY
