#!/usr/bin/env bash
# What a person at the terminal gets (issue 17, item 3): a run header, a summary table that never
# cuts parameters (a legend above it when they are long) with spread, IOPS and metadata rates, and
# --csv with the documented columns, one row per point x phase, matching the report.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
need_backend io_uring
make_workdir output
cat > "$work/c.json" << 'J'
{"model": {"name": "tiny", "scale": 0.25}, "parallelism": {"tp": 2, "dp": "auto"},
 "layout": "aggregated-rank", "backend": "io_uring", "repetitions": 3,
 "sweep": {"block_size": ["64K", "1M"], "io_uring.fixed_buffers": [true, false],
           "io_uring.fixed_files": [false]}}
J
timeout 300 "${MPI[@]}" -n 2 "$BIN" run -c "$work/c.json" --target "$work/t" -o "$work/r.json" \
  --csv "$work/r.csv" > "$work/out" 2>&1; code=$?
[ $code = 0 ] && ok "run with --csv" || { bad "run: exit $code: $(tail -5 "$work/out")"; summary output; exit 1; }
grep -q "^ckptbench .*world 2 rank(s) on 1 node(s), tp 2 pp 1 dp auto (= 1) ZeRO" "$work/out" &&
  grep -q "^  layout aggregated-rank, backend io_uring" "$work/out" && grep -q "^  target $work/t (" "$work/out" &&
  grep -q "4 point(s) x 3 repetition(s), swept: block_size io_uring.fixed_buffers io_uring.fixed_files" "$work/out" &&
  ok "run header: model, world, parallelism, layout, backend, target, points" || bad "header: $(head -6 "$work/out")"
# Parameters too long for a column: a legend with every one in full, nothing cut.
grep -q "^points:" "$work/out" && grep -q "^  4  block_size=1M io_uring.fixed_buffers=false io_uring.fixed_files=false$" "$work/out" &&
  ! grep -q '\.\.\.' "$work/out" && ok "long parameters in a legend, never cut" || bad "legend: $(grep -A6 '^points:' "$work/out")"
grep -q "reps GiB/s med      min      max   stddev  IOPS med  meta op/s" "$work/out" &&
  ok "table has spread, IOPS and metadata rates" || bad "table header: $(grep -m1 '^point' "$work/out")"

chk="$(python3 - "$work/r.json" "$work/r.csv" << 'P' 2>&1
import csv, json, statistics, sys
d = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2], newline="")))
want = ("point,phase,status,params,model,world,layout,backend,direct,block_size,queue_depth,"
        "repetitions,bytes,files,bw_GiBps_min,bw_GiBps_median,bw_GiBps_max,bw_GiBps_mean,"
        "bw_GiBps_stddev,elapsed_s_median,iops_median,meta_ops_per_s_median,lat_p50_us_median,"
        "lat_p99_us_median,straggler_ratio_median").split(",")
assert rows[0] == want, rows[0]
body = rows[1:]
assert len(body) == 2 * len(d["points"]) == 8, len(body)
for row in body:
    r = dict(zip(want, row))
    p = d["points"][int(r["point"]) - 1]
    reps = [x[r["phase"]] for x in p["repetitions"]]
    bw = [x["bandwidth_GiBps"] for x in reps]
    assert int(r["repetitions"]) == len(bw) == 3
    assert float(r["bw_GiBps_median"]) == statistics.median(bw)
    assert float(r["bw_GiBps_min"]) == min(bw) and float(r["bw_GiBps_max"]) == max(bw)
    assert abs(float(r["bw_GiBps_stddev"]) - statistics.stdev(bw)) < 1e-12
    assert float(r["iops_median"]) == statistics.median(x["iops"] for x in reps)
    assert float(r["lat_p99_us_median"]) == statistics.median(x["latency"]["p99_us"] for x in reps)
    assert int(r["bytes"]) == reps[0]["bytes"] and int(r["world"]) == 2
    assert r["model"] == "tiny" and r["backend"] == "io_uring" and r["status"] == p["status"]
    assert r["params"] == ";".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}"
                                   for k, v in p["params"].items()), r["params"]
    assert int(r["block_size"]) == p["config"]["block_size"]
print("good")
P
)"
[ "$chk" = good ] && ok "CSV: documented columns, one row per point x phase, values = the report's" || bad "csv: $chk"

# scripts/ckptreport.py csv writes the same bytes from the report.
if "$(python_with json)" "$SRC/scripts/ckptreport.py" csv "$work/r.json" -o "$work/py.csv" && cmp -s "$work/py.csv" "$work/r.csv"; then
  ok "run --csv and scripts/ckptreport.py csv write identical files"
else
  bad "csv differs from ckptreport.py: $(diff <(tr ',' '\n' < "$work/py.csv") <(tr ',' '\n' < "$work/r.csv") | head -5)"
fi

# cache auto never drops the node's page cache, even as root: buffered I/O gets fadvise, and the
# console says which method ran (issue 17, item 5).
timeout 300 "${MPI[@]}" -n 2 "$BIN" run -c "$work/c.json" --set 'sweep={}' --set direct=false \
  --set cache=auto -r 1 --target "$work/t3" -o "$work/r3.json" > "$work/out3" 2>&1; code=$?
[ $code = 0 ] && [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["settings"]["cache"])' "$work/r3.json")" = fadvise ] &&
  grep -q "cache fadvise)" "$work/out3" && ok "cache auto as $(id -un): fadvise, named on the console" || bad "cache auto: exit $code: $(tail -3 "$work/out3")"

# A CSV path that cannot be written is refused before any I/O (exit 2, nothing created).
out="$(timeout 120 "${MPI[@]}" -n 2 "$BIN" run -c "$work/c.json" --target "$work/t2" -o "$work/r2.json" --csv "$work" 2>&1)"; code=$?
[ $code = 2 ] && grep -q -- "--csv '$work' is a directory" <<< "$out" && [ ! -e "$work/t2" ] &&
  ok "--csv to a directory: exit 2 before any I/O" || bad "csv dir: exit $code: $out"
summary output
