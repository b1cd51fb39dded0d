#!/usr/bin/env bash
# scripts/plot.py and scripts/compare.py on real and crafted reports:
#  - a small real sweep (block size x queue depth) on 4 ranks -> plot.py draws the figures it has
#    data for (files exist, non-empty, PNG/SVG signatures) and notes the ones it skips;
#  - compare.py on two crafted reports: exact ratios B/A, flags beyond the repetitions' spread,
#    matching on config and on params, exit 0; a schema_version mismatch and an unreadable file
#    exit 2 with a clear message.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
PY="$(python_with matplotlib)" ||
  { echo "skip: no python3 with matplotlib (apt-get install python3-matplotlib)"; exit 77; }
make_workdir plotcmp

# ---- 1. a real report: 2 block sizes x 2 queue depths, 2 repetitions, 4 ranks (a few MiB)
cat > "$work/sweep.json" <<'EOF'
{
  "name": "plot-test",
  "comment": "tiny model, 2 block sizes x 2 queue depths",
  "model": {"name": "tiny", "scale": "1/8"},
  "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
  "layout": "aggregated-rank",
  "backend": "posix",
  "direct": true,
  "repetitions": 2,
  "sweep": {"block_size": ["64K", "256K"], "queue_depth": [1, 4]}
}
EOF
mkdir -p "$work/target"
if out="$(timeout 300 "${MPI[@]}" -n 4 "$BIN" run --config "$work/sweep.json" \
    --target "$work/target" --output "$work/r.json" --quiet 2>&1)" && [ -s "$work/r.json" ]; then
  ok "ckptbench run produced a report"
else
  bad "ckptbench run failed: $out"
  echo "plot/compare: $passes passed, $fails failed"; exit 1
fi

out="$("$PY" "$SRC/scripts/plot.py" "$work/r.json" --out "$work/fig" 2>&1)"; code=$?
if [ "$code" -eq 0 ]; then ok "plot.py exits 0"; else bad "plot.py exit $code: $out"; fi
for fig in bandwidth_vs_block_size heatmap_qd_block_size rank_times latency; do
  for ext in png svg; do
    f="$work/fig/$fig.$ext"
    if [ ! -s "$f" ]; then bad "figure $fig.$ext missing or empty"; continue; fi
    case "$ext" in
      png) sig="$(head -c 8 "$f" | od -An -c | tr -d ' ')"; [ "$sig" = '211PNG\r\n032\n' ] ;;
      svg) grep -q '<svg' "$f" ;;
    esac && ok "figure $fig.$ext ($(stat -c %s "$f") bytes)" || bad "figure $fig.$ext is not a $ext file"
  done
done
for skipped in layouts stripes; do
  if grep -q "skipped $skipped:" <<< "$out" && [ ! -e "$work/fig/$skipped.png" ]; then
    ok "figure $skipped skipped with a note"
  else
    bad "figure $skipped: expected a one-line 'skipped' note and no file: $out"
  fi
done
out="$("$PY" "$SRC/scripts/plot.py" "$work/r.json" "$work/r.json" --out "$work/fig2" --format png 2>&1)"
if [ $? -eq 0 ] && [ -s "$work/fig2/bandwidth_vs_block_size.png" ] && [ ! -e "$work/fig2/latency.svg" ]; then
  ok "plot.py pools two reports, --format png only"
else
  bad "plot.py with two reports / --format png: $out"
fi
out="$("$PY" "$SRC/scripts/plot.py" "$work/nonexistent.json" --out "$work/fig3" 2>&1)"; code=$?
if [ "$code" -eq 2 ] && grep -q "cannot read" <<< "$out"; then ok "plot.py: unreadable report exits 2"
else bad "plot.py on a missing file: exit $code: $out"; fi

# compare.py on the real report against itself: every ratio is exactly 1.
out="$("$PY" "$SRC/scripts/compare.py" "$work/r.json" "$work/r.json" 2>&1)"; code=$?
n1="$(grep -c ' 1\.000 ' <<< "$out")"
if [ "$code" -eq 0 ] && [ "$n1" -eq 8 ]; then ok "compare.py: a report against itself gives 8 ratios of 1.000"
else bad "compare.py self-comparison: exit $code, $n1 ratios of 1.000: $out"; fi

# ---- 2. crafted reports with known numbers
# point(INDEX, BLOCK_SIZE, SAVE min/med/max, RESTORE min/med/max)
"$PY" - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
def point(i, bs, save, restore, params=None):
    cfg = {"model": {"name": "tiny"}, "layout": "aggregated-rank", "backend": "posix",
           "block_size": bs, "queue_depth": 1, "direct": True}
    s = lambda t: {"bandwidth_GiBps": dict(zip(("min", "median", "max"), t)), "repetitions": 3}
    return {"index": i, "params": params if params is not None else {"block_size": bs},
            "config": cfg, "status": "ok", "repetitions": [],
            "summary": {"save": s(save), "restore": s(restore)}}
def doc(points, v=1, name="x"):
    return {"schema_version": v, "tool": {"name": "ckptbench"}, "status": "ok",
            "config": {"name": name}, "points": points}
A = doc([point(1, 1048576, (0.9, 1.0, 1.1), (1.9, 2.0, 2.1)),
         point(2, 4194304, (4.0, 4.0, 4.0), (3.0, 3.2, 3.4))], name="A")
# B: save of point 1 doubles (beyond spread), restore 0.75 inside spread; point 2 matched by
# config: save 1/4 (below spread); restore 1.25 -> 4.0 (beyond); plus one point only in B.
B = doc([point(1, 4194304, (0.9, 1.0, 1.1), (3.9, 4.0, 4.1)),
         point(2, 1048576, (1.8, 2.0, 2.2), (1.4, 1.5, 2.05)),
         point(3, 65536, (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))], name="B")
# P: no config match (queue depth differs), matched on params instead.
P = doc([dict(point(1, 1048576, (0.45, 0.5, 0.55), (2.0, 2.0, 2.0)),
              config={"block_size": 1048576, "queue_depth": 64})], name="P")
V2 = dict(A, schema_version=2)
for n, d in (("A", A), ("B", B), ("P", P), ("V2", V2)):
    json.dump(d, open(f"{work}/{n}.json", "w"))
open(f"{work}/garbage.json", "w").write("{not json")
EOF

out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/B.json" --json 2>&1)"; code=$?
if [ "$code" -eq 0 ]; then ok "compare.py A B exits 0"; else bad "compare.py A B: exit $code: $out"; fi
cat > "$work/check.py" <<'EOF'
import json, sys
d = json.loads(sys.stdin.read())
got = {(p["index"], ph): (round(p[ph][1]["ratio"], 6), p[ph][1]["flag"], p[ph][1]["matched_on"])
       for p in d["points"] for ph in ("save", "restore")}
want = {(1, "save"): (2.0, "+", "config"), (1, "restore"): (0.75, "", "config"),
        (2, "save"): (0.25, "-", "config"), (2, "restore"): (1.25, "+", "config")}
assert got == want, f"got {got}"
assert d["unmatched"]["B"] == ["block_size=65536"], d["unmatched"]
print("ratios ok")
EOF
check="$("$PY" "$work/check.py" <<< "$out" 2>&1)"
if [ "$check" = "ratios ok" ]; then ok "compare.py ratios 2.000+/0.750/0.250-/1.250+ and the unmatched point"
else bad "compare.py ratios: $check"; fi

out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/B.json" 2>&1)"
if grep -qE '^  save .* 2\.000\+' <<< "$out" && grep -qE '^  restore .* 0\.750 ' <<< "$out" &&
   grep -qE '^  save .* 0\.250-' <<< "$out" && grep -q 'B points with no match in A: block_size=65536' <<< "$out"; then
  ok "compare.py text table shows the ratios and flags"
else
  bad "compare.py text table: $out"
fi

out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/P.json" --json 2>&1)"
check="$("$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); p=d["points"][0]; print(p["index"], round(p["save"][1]["ratio"],6), p["save"][1]["flag"], p["save"][1]["matched_on"], round(p["restore"][1]["ratio"],6))' <<< "$out" 2>&1)"
if [ "$check" = "1 0.5 - params 1.0" ]; then ok "compare.py falls back to params: ratio 0.500-, 1.000"
else bad "compare.py params match: $check / $out"; fi

out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/V2.json" 2>&1)"; code=$?
if [ "$code" -eq 2 ] && grep -q "schema_version" <<< "$out"; then ok "compare.py: schema_version mismatch exits 2"
else bad "compare.py schema mismatch: exit $code: $out"; fi
for f in missing.json garbage.json; do
  out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/$f" 2>&1)"; code=$?
  if [ "$code" -eq 2 ] && grep -q "compare.py: error: .*$f" <<< "$out"; then ok "compare.py: $f exits 2"
  else bad "compare.py on $f: exit $code: $out"; fi
done

summary plot/compare
