#!/usr/bin/env bash
# scripts/plot.py, scripts/compare.py and scripts/ckptreport.py on real and crafted reports:
#  - a small real sweep (block size x queue depth) on 4 ranks -> plot.py draws the figures it has
#    data for (files exist, non-empty, PNG/SVG signatures, short titles, units on the axes) and
#    notes the ones it skips; inputs that are not reports are skipped with a warning naming them;
#    fio and IOR outputs given with --reference become labelled lines; 32 crafted points give
#    small multiples and a latency heatmap; without matplotlib it says how to get it (exit 2);
#  - compare.py: exact ratios B/A, Welch's t-test verdicts with >= 3 repetitions per side,
#    "not enough repetitions" below that (and nothing called significant), matching on config
#    and on params, no hint suggesting the --match mode given, exit 0; a schema_version mismatch
#    and an unreadable file exit 2 with a clear message;
#  - compare.py with a realfw.py report and a ckptbench report (either order): real against
#    replay, points paired on their plan, the times, the ratio replay/real, the replay's split
#    (storage = open + io + sync + close, cpu, source) and the real side's io/sync;
#  - ckptreport.py csv: the header, one row per point x phase, values recomputed from the report;
#  - hostile reports (200,000 levels deep, over the 256 MiB cap, not UTF-8, a lone surrogate,
#    points not a list, points[].config a list, a number that is a string, NaN or Infinity, min
#    above median): plot.py and compare.py exit 2 with one line on stderr naming the file and the
#    JSON path, no traceback; a 100,000-character name and param value: plot.py draws every figure
#    with the text cut (no matplotlib raster overflow), nothing on stderr;
#  - inputs that are not regular files (a FIFO nothing writes, a directory, /dev/null) as a report
#    or a --reference: exit 2 at once (within timeout 20) with one line naming the path and what
#    it is, a --reference one skipped with a warning; plot.py --out an existing file, under a
#    file, on procfs (a read-only directory as a user): exit 2, one line, before the reports are
#    read, nothing changed; ckptreport.py csv -o a directory, under a file, a FIFO: exit 2; a
#    figure or CSV too large to write (ulimit -f): exit 2, no half-written file, no temporary
#    file, no directory made for it;
#  - a characterization report (ckptbench characterize, 4 ranks, a short search): it validates
#    against the schema; plot.py draws the characterization figures (transfer size, queue depth,
#    backend x O_DIRECT, ceilings and misalignment, predicted vs measured) with the usual ones, and
#    skips them with notes when the characterization object is not as documented; compare.py
#    labels its probes and pairs two characterizations' probes on their settings; csv reads it;
#  - an object store's points (tests/cli/data/s3-vs-posix.json, a real report of backend posix
#    and s3; this test cannot start the S3 gateway): it validates against the schema; plot.py and
#    compare.py label an s3 point in the backend's words (bucket@endpoint, part=, inflight=, no
#    cache), a posix point as before; axis titles name the part size and requests in flight; the
#    requests figure (latency and count by request kind); compare.py's requests by kind (counts,
#    p50 ratios where both reports have the kind, retries and throttled); requests of the wrong
#    types are passed over;
#  - a characterization of an object store (tests/cli/data/char-s3.json, a real `ckptbench
#    characterize` of s3 on 2 ranks; `store` in its characterization): it validates against the
#    schema; plot.py draws its characterization figures in the store's words (part size, requests
#    in flight, "s3, 8 in flight", no buffered/O_DIRECT/QD/block size), and pooled with a file
#    system's (results/characterize-example.json) both in their own words on the shared axes.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
PY="$(python_with matplotlib)" ||
  { echo "skip: no python3 with matplotlib (scripts/setup.sh --with-plots)"; exit 77; }
make_workdir plotcmp

# ---- 1. a real report: 2 block sizes x 2 queue depths, 2 repetitions, 4 ranks (a few MiB)
cat > "$work/sweep.json" <<'EOF'
{
  "name": "plot-test",
  "comment": "tiny model, 2 block sizes x 2 queue depths, a comment that must stay out of titles",
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

# ---- 10. a characterization report (ckptbench characterize): a short search on 4 ranks
# (8 MiB probes, 2-3 repetitions each) and the check run of its recommendation. It validates
# against the report schema (when jsonschema is here); plot.py draws its characterization figures
# beside the usual ones; compare.py and ckptreport.py read it as the report it also is.
# Its checks run in the background from the end of section 1 on, beside sections 2-9 (they read
# only section 1's report); their lines are printed, and their counts added, at the end.
# The search itself runs first, alone: its stages share a time budget, so it must not compete
# with this test's other work. Its budget (1 minute) is an upper bound for a loaded machine, not
# the time it takes (at 0.3 the suite's load could spend it before the later stages).
mkdir -p "$work/char-t"
char_out="$(timeout 300 "${MPI[@]}" -n 4 "$BIN" characterize --target "$work/char-t" --budget 1 \
    --probe-size 8M --min-reps 2 --max-reps 3 --ci-width 0.5 -q -o "$work/char.json" 2>&1)"
char_rc=$?
char_section() {
passes=0; fails=0
out="$char_out"
if [ "$char_rc" -eq 0 ] && [ -s "$work/char.json" ]; then
  ok "ckptbench characterize produced a report"
  JS="$(python_with jsonschema)" || JS=""
  if [ -n "$JS" ]; then
    check="$("$JS" - "$SRC/docs/report.schema.json" "$work/char.json" <<'EOF' 2>&1
import json, sys
import jsonschema
v = jsonschema.Draft7Validator(json.load(open(sys.argv[1])))
errs = ["/".join(map(str, e.absolute_path)) + ": " + e.message[:160]
        for e in v.iter_errors(json.load(open(sys.argv[2])))]
print("; ".join(errs[:5]) if errs else "valid")
EOF
)"
    if [ "$check" = valid ]; then ok "the characterization report validates against docs/report.schema.json"
    else bad "characterization report vs the schema: $check"; fi
  else
    echo "note: no python3 with jsonschema; the characterization report is not validated here"
  fi
  # The figures the report has data for (queue depth: not applicable without a backend that keeps
  # several transfers in flight; validation: --no-validate or a failed check run).
  read -r want_qd want_val <<< "$("$PY" -c 'import json, sys
c = json.load(open(sys.argv[1]))["characterization"]
qd = "curve" in c["findings"].get("queue_depth", {})
val = c.get("recommendation", {}).get("validation", {}).get("status") == "ok"
print(int(qd), int(val))' "$work/char.json")"
  out="$("$PY" "$SRC/scripts/plot.py" "$work/char.json" --out "$work/figc" 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && ! grep -q Traceback <<< "$out"; then ok "plot.py on a characterization report exits 0"
  else bad "plot.py on the characterization report: exit $code: $out"; fi
  figs="transfer_size backends ceilings"
  [ "$want_qd" = 1 ] && figs="$figs queue_depth"
  [ "$want_val" = 1 ] && figs="$figs validation"
  for fig in $figs; do
    f="$work/figc/characterization_$fig"
    sig="$(head -c 8 "$f.png" 2>/dev/null | od -An -c | tr -d ' ')"
    if [ -s "$f.png" ] && [ "$sig" = '211PNG\r\n032\n' ] && [ -s "$f.svg" ] && grep -q '<svg' "$f.svg"; then
      ok "figure characterization_$fig.png ($(stat -c %s "$f.png") bytes) and .svg"
    else bad "figure characterization_$fig: png/svg missing, empty or not an image: $out"; fi
  done
  [ "$want_qd" = 1 ] || { grep -q "skipped characterization_queue_depth" <<< "$out" &&
    ok "characterization_queue_depth skipped with a note (queue depth not applicable here)" ||
    bad "no note for the missing queue-depth figure: $out"; }
  missing=""
  for fig in phase_steps rank_times latency; do [ -s "$work/figc/$fig.png" ] || missing="$missing $fig"; done
  if [ -z "$missing" ]; then ok "the usual figures are drawn for the characterization report's points too"
  else bad "figures not drawn for the characterization report:$missing"; fi
  # What the figures show, read from the SVGs' text: axes with units, the knee and the best marked,
  # 95 % intervals, the ceilings and the misalignment ratio, predicted against measured.
  svgok=1
  for want in "transfer_size:bandwidth vs transfer size" "transfer_size:block size (bytes per transfer, log2 axis" \
              "transfer_size:save bandwidth (GiB/s)" "transfer_size:restore bandwidth (GiB/s)" \
              "transfer_size:bars = 95 % interval" "transfer_size:smallest within 5 % of the best save" \
              "transfer_size:(highest mean save)" "backends:O_DIRECT" "backends:buffered" \
              "ceilings:one rank" "ceilings:all ranks" "ceilings:bandwidth (GiB/s)"; do
    grep -qF -- "${want#*:}" "$work/figc/characterization_${want%%:*}.svg" ||
      { svgok=0; bad "characterization_${want%%:*}: no text '${want#*:}'"; }
  done
  if [ "$("$PY" -c 'import json,sys; print(int("misalignment" in json.load(open(sys.argv[1]))["characterization"]["findings"]))' "$work/char.json")" = 1 ]; then
    grep -q 'packed/aligned x[0-9.]*' "$work/figc/characterization_ceilings.svg" ||
      { svgok=0; bad "characterization_ceilings: no packed/aligned ratio"; }
  fi
  if [ "$want_qd" = 1 ]; then
    grep -qF 'queue depth (transfers in flight per rank, log2 axis)' "$work/figc/characterization_queue_depth.svg" ||
      { svgok=0; bad "characterization_queue_depth: no queue-depth axis label"; }
  fi
  if [ "$want_val" = 1 ]; then
    for want in "measured/predicted x" "time (s)" "predicted time (s)" "(recommended)"; do
      grep -qF -- "$want" "$work/figc/characterization_validation.svg" ||
        { svgok=0; bad "characterization_validation: no text '$want'"; }
    done
  fi
  [ $svgok -eq 1 ] && ok "characterization figures: units, 95 % intervals, knee and best, ceilings, misalignment ratio, predicted vs measured"

  # Pooled with an ordinary report: both reports' figures, the characterization ones labelled by report.
  out="$("$PY" "$SRC/scripts/plot.py" "$work/r.json" "$work/char.json" --out "$work/figc2" --format png 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && [ -s "$work/figc2/characterization_backends.png" ] &&
     [ -s "$work/figc2/heatmap_qd_block_size.png" ] && [ -s "$work/figc2/latency.png" ]; then
    ok "plot.py pools a characterization report with a run report"
  else bad "plot.py r.json char.json: exit $code: $out"; fi

  # A characterization object that is not what the schema says: notes, the other figures, exit 0.
  "$PY" - "$work" <<'EOF'
import copy, json, sys
work = sys.argv[1]
d = json.load(open(f"{work}/char.json"))
x = copy.deepcopy(d); x["characterization"]["findings"] = [1, 2]
json.dump(x, open(f"{work}/char-badfind.json", "w"))
x = copy.deepcopy(d); x["characterization"] = "nope"
json.dump(x, open(f"{work}/char-str.json", "w"))
x = copy.deepcopy(d)
for e in x["characterization"]["findings"]["transfer_size"]["curve"]:
    e["save_GiBps"] = {"mean": "fast"}
x["characterization"]["recommendation"]["validation"] = {"status": "failed", "error": "boom"}
json.dump(x, open(f"{work}/char-badcurve.json", "w"))
# As characterize writes it while it searches: status running, only the settings and probes.
x = copy.deepcopy(d)
x["status"] = "running"
x["error"] = "the search had not ended when this was written (killed, or still running)"
x.pop("finished_at", None)
keep = ("version", "target", "fs_type", "budget_s", "ci_width", "confidence", "repetitions",
        "probe", "stages", "stage_notes", "probes")
x["characterization"] = {k: v for k, v in x["characterization"].items() if k in keep}
json.dump(x, open(f"{work}/char-running.json", "w"))
# Another probe size: every config differs (model.scale; by a factor that makes no scale of one
# report another probe's in the other: the ceilings' one-rank and small probes scale by 1/4 and
# 1/2 of the full one), the probes' settings do not.
x = copy.deepcopy(d)
for p in x["points"]:
    if isinstance(p["config"].get("model"), dict):
        p["config"]["model"]["scale"] = p["config"]["model"].get("scale", 1) * 0.37
json.dump(x, open(f"{work}/char-half.json", "w"))
EOF
  out="$("$PY" "$SRC/scripts/plot.py" "$work/char-badfind.json" --out "$work/figc3" --format png 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && [ "$(grep -c 'skipped characterization_' <<< "$out")" -ge 4 ] &&
     [ -s "$work/figc3/rank_times.png" ] && ! grep -q Traceback <<< "$out"; then
    ok "plot.py: findings that are not an object: the characterization figures skipped with notes, exit 0"
  else bad "plot.py with bad findings: exit $code: $out"; fi
  out="$("$PY" "$SRC/scripts/plot.py" "$work/char-str.json" --out "$work/figc4" --format png 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && grep -q "characterization is not an object" <<< "$out" &&
     [ -s "$work/figc4/rank_times.png" ] && ! grep -q Traceback <<< "$out"; then
    ok "plot.py: a characterization that is a string: a note, the other figures, exit 0"
  else bad "plot.py with a string characterization: exit $code: $out"; fi
  out="$("$PY" "$SRC/scripts/plot.py" "$work/char-badcurve.json" --out "$work/figc5" --format png 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && grep -q "skipped characterization_transfer_size: no characterization report has a transfer_size curve" <<< "$out" &&
     grep -q "the check run failed: boom" <<< "$out" && [ -s "$work/figc5/characterization_backends.png" ] &&
     ! grep -q Traceback <<< "$out"; then
    ok "plot.py: a curve without numbers and a failed check run: those figures skipped with notes"
  else bad "plot.py with a bad curve / failed check run: exit $code: $out"; fi

  out="$("$PY" "$SRC/scripts/plot.py" "$work/char-running.json" --out "$work/figc6" --format svg 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && grep -q "so far: the search had not ended" "$work/figc6/characterization_transfer_size.svg" &&
     [ -s "$work/figc6/characterization_backends.svg" ] && [ ! -e "$work/figc6/characterization_ceilings.svg" ] &&
     ! grep -q Traceback <<< "$out"; then
    ok "plot.py: the report written during the search: transfer-size and backend figures of the probes so far"
  else bad "plot.py with a running characterization: exit $code: $out"; fi

  # compare.py and ckptreport.py: a characterization report is a report.
  out="$("$PY" "$SRC/scripts/compare.py" "$work/char.json" "$work/char.json" 2>&1)"; code=$?
  npts="$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["points"]))' "$work/char.json")"
  if [ "$code" -eq 0 ] && [ "$(grep -c '^\[[0-9]*\] ' <<< "$out")" -eq "$npts" ] &&
     grep -q '^\[1\] calibrate: posix aggregated-rank buffered bs=1048576 qd=1$' <<< "$out" &&
     grep -q '^\[[0-9]*\] backend: posix aggregated-rank O_DIRECT' <<< "$out" &&
     grep -q '^\[[0-9]*\] ceilings: .* (rank0, 1 ranks)$' <<< "$out" &&
     { [ "$want_val" = 0 ] || grep -q '^\[[0-9]*\] validate: ' <<< "$out"; }; then
    ok "compare.py: a characterization report against itself, every probe labelled by stage, O_DIRECT and ranks"
  else bad "compare.py char.json char.json: exit $code: $out"; fi
  out="$("$PY" "$SRC/scripts/compare.py" "$work/char.json" "$work/char-half.json" 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && [ "$(grep -c "matched on the probe's settings: the probe sizes differ" <<< "$out")" -eq "$npts" ] &&
     ! grep -q 'no match' <<< "$out"; then
    ok "compare.py: two characterizations with other probe sizes pair every probe on its settings"
  else bad "compare.py char.json char-half.json: exit $code: $out"; fi
  out="$("$PY" "$SRC/scripts/ckptreport.py" csv "$work/char.json" -o "$work/char.csv" 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && [ "$(($(wc -l < "$work/char.csv") - 1))" -eq "$((2 * npts))" ]; then
    ok "ckptreport.py csv: a characterization report gives a row per probe and phase"
  else bad "ckptreport.py csv char.json: exit $code: $out"; fi
else
  bad "ckptbench characterize failed: $out"
fi
echo "$passes $fails" > "$work/char.counts"
}
char_section > "$work/char.log" 2>&1 &
char_pid=$!
# On an early exit, wait for it before the work directory is removed.
cli_on_exit() { [ -z "${char_pid:-}" ] || wait "$char_pid" 2> /dev/null; }


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
for skipped in layouts stripes bandwidth_points requests; do
  if [ ! -e "$work/fig/$skipped.png" ]; then ok "no $skipped figure for this sweep"
  else bad "figure $skipped drawn for a block size x queue depth sweep"; fi
done
for skipped in layouts stripes requests; do
  if grep -q "skipped $skipped:" <<< "$out"; then ok "figure $skipped skipped with a note"
  else bad "figure $skipped: expected a one-line 'skipped' note: $out"; fi
done
# matplotlib's SVGs carry every text drawn as a comment: titles and axis labels can be read.
svg="$work/fig/bandwidth_vs_block_size.svg"
if grep -q 'plot-test: bandwidth vs block size' "$svg" && ! grep -q 'must stay out of titles' "$svg"; then
  ok "figure title is the config name, not the comment"
else
  bad "bandwidth_vs_block_size title: $(grep -o '<!-- [^>]*bandwidth vs block size[^>]* -->' "$svg" | head -2)"
fi
units_ok=1
for want in "bandwidth_vs_block_size:save bandwidth (GiB/s)" "bandwidth_vs_block_size:block size (bytes" \
            "heatmap_qd_block_size:median bandwidth (GiB/s)" "heatmap_qd_block_size:queue depth (transfers" \
            "rank_times:save time per rank (s)" "latency:latency per transfer (µs)"; do
  grep -qF -- "${want#*:}" "$work/fig/${want%%:*}.svg" || { units_ok=0; bad "${want%%:*}: no axis label '${want#*:}'"; }
done
[ $units_ok -eq 1 ] && ok "axes carry their units (GiB/s, bytes, transfers, s, µs)"

out="$("$PY" "$SRC/scripts/plot.py" "$work/r.json" "$work/r.json" --out "$work/fig2" --format png 2>&1)"
if [ $? -eq 0 ] && [ -s "$work/fig2/bandwidth_vs_block_size.png" ] && [ ! -e "$work/fig2/latency.svg" ]; then
  ok "plot.py pools two reports, --format png only"
else
  bad "plot.py with two reports / --format png: $out"
fi
out="$("$PY" "$SRC/scripts/plot.py" "$work/nonexistent.json" --out "$work/fig3" 2>&1)"; code=$?
if [ "$code" -eq 2 ] && grep -q "cannot read" <<< "$out" && grep -q "none of the inputs is a ckptbench report" <<< "$out"; then
  ok "plot.py: no report among the inputs exits 2"
else bad "plot.py on a missing file: exit $code: $out"; fi

# ---- 2. reference outputs (fio, IOR) and inputs that are not reports
# fio's JSON as fio 3.x writes it (jobs[].write/read with bw_bytes in B/s); a real one when fio
# is installed, to follow its actual format.
cat > "$work/fio.json" <<'EOF'
note: this line is not JSON, as fio sometimes prints before its output
{"fio version": "fio-3.33", "jobs": [{"jobname": "w", "groupid": 0, "error": 0,
  "write": {"io_bytes": 1610612736, "bw_bytes": 1610612736, "bw": 1572864, "runtime": 1000},
  "read": {"io_bytes": 0, "bw_bytes": 0, "bw": 0, "runtime": 0}}]}
EOF
# IOR's JSON (ior -O summaryFormat=JSON, hpc/ior src/ior-output.c): summary[] per operation.
cat > "$work/ior.json" <<'EOF'
{"Version": "4.0.0", "tests": [], "summary": [
  {"operation": "write", "API": "POSIX", "TestID": 0, "bwMaxMIB": 600.0, "bwMinMIB": 400.0,
   "bwMeanMIB": 512.0, "bwStdMIB": 80.0, "MeanTime": 1.0},
  {"operation": "read", "API": "POSIX", "TestID": 0, "bwMaxMIB": 1100.0, "bwMinMIB": 900.0,
   "bwMeanMIB": 1024.0, "bwStdMIB": 80.0, "MeanTime": 0.5}]}
EOF
out="$("$PY" "$SRC/scripts/plot.py" "$work/r.json" --out "$work/fig4" --format svg \
       --reference "$work/fio.json" --reference "$work/ior.json" 2>&1)"; code=$?
svg="$work/fig4/bandwidth_vs_block_size.svg"
if [ "$code" -eq 0 ] && grep -q 'fio write 1.50 GiB/s' "$svg" && grep -q 'IOR write 0.50 GiB/s (mean)' "$svg" &&
   grep -q 'IOR read 1.00 GiB/s (mean)' "$svg" && ! grep -q 'fio read' "$svg"; then
  ok "plot.py --reference: fio write 1.50 GiB/s, IOR write 0.50 / read 1.00 GiB/s lines on the bandwidth figure"
else
  bad "plot.py --reference: exit $code: $out / $(grep -o '<!-- [^>]*\(fio\|IOR\)[^>]* -->' "$svg" 2>/dev/null)"
fi
if grep -q 'red line: fio write 1.50 GiB/s' "$work/fig4/heatmap_qd_block_size.svg"; then
  ok "plot.py --reference: the heatmap's colour bar names the fio line"
else bad "heatmap without the reference: $(grep -o '<!-- [^>]*red line[^>]* -->' "$work/fig4/heatmap_qd_block_size.svg")"; fi
if command -v fio > /dev/null; then
  if fio --output-format=json --name=ref --rw=write --size=4M --bs=1M \
         --filename="$work/ref.fio" > "$work/fio-real.json" 2> "$work/fio.err"; then
    out="$("$PY" "$SRC/scripts/plot.py" "$work/r.json" --out "$work/fig5" --format svg \
           --reference "$work/fio-real.json" 2>&1)"; code=$?
    if [ "$code" -eq 0 ] && grep -q 'fio write [0-9.]* GiB/s' "$work/fig5/bandwidth_vs_block_size.svg"; then
      ok "plot.py --reference with a real fio JSON output: $(grep -o 'reference fio write [0-9.]* GiB/s' <<< "$out")"
    else bad "plot.py with a real fio output: exit $code: $out"; fi
  else
    echo "note: fio could not run here ($(head -c 200 "$work/fio.err")); real-output check left out"
  fi
fi
out="$("$PY" "$SRC/scripts/plot.py" "$work/r.json" --out "$work/fig6" --reference "$work/sweep.json" 2>&1)"; code=$?
if [ "$code" -eq 0 ] && grep -q "warning: --reference: skipping .*sweep.json: not a fio JSON output" <<< "$out"; then
  ok "plot.py --reference: a file that is neither fio nor IOR is skipped with a warning"
else bad "plot.py --reference on a config: exit $code: $out"; fi

echo '{"jobs": "not a list", "points": "no"}' > "$work/other.json"
printf '{not json' > "$work/broken.json"
out="$("$PY" "$SRC/scripts/plot.py" "$work/other.json" "$work/r.json" "$work/broken.json" \
       "$work/fio.json" "$work/missing.json" --out "$work/fig7" --format png 2>&1)"; code=$?
if [ "$code" -eq 0 ] && [ -s "$work/fig7/bandwidth_vs_block_size.png" ] &&
   grep -q "warning: skipping .*other.json: not a ckptbench report" <<< "$out" &&
   grep -q "warning: skipping .*broken.json: not valid JSON" <<< "$out" &&
   grep -q "warning: skipping .*fio.json: .*give it with --reference" <<< "$out" &&
   grep -q "warning: skipping .*missing.json: cannot read" <<< "$out"; then
  ok "plot.py skips 4 inputs that are not reports with a warning each, draws the report, exits 0"
else
  bad "plot.py with non-report inputs: exit $code: $out"
fi

# Without matplotlib: -S keeps Python's site directories (where matplotlib lives) off the path;
# CKPT_PYTHON_SWITCHED=1 stops the switch to /usr/bin/python3.
out="$(CKPT_PYTHON_SWITCHED=1 "$PY" -S "$SRC/scripts/plot.py" "$work/r.json" --out "$work/fig8" 2>&1)"; code=$?
if [ "$code" -eq 2 ] && grep -q "plot.py: error: needs matplotlib" <<< "$out" &&
   grep -q "apt-get install python3-matplotlib (or scripts/setup.sh --with-plots)" <<< "$out" &&
   ! grep -q Traceback <<< "$out"; then
  ok "plot.py without matplotlib: exit 2 and how to get it, no traceback"
else bad "plot.py without matplotlib: exit $code: $out"; fi
if /usr/bin/python3 -c 'import matplotlib' 2> /dev/null; then
  out="$(env -u CKPT_PYTHON_SWITCHED "$PY" -S "$SRC/scripts/plot.py" "$work/r.json" --out "$work/fig9" --format png 2>&1)"; code=$?
  if [ "$code" -eq 0 ] && grep -q "re-running with /usr/bin/python3" <<< "$out" && [ -s "$work/fig9/latency.png" ]; then
    ok "plot.py run by a python without matplotlib re-runs itself with /usr/bin/python3"
  else bad "plot.py switching to /usr/bin/python3: exit $code: $out"; fi
fi
for s in plot.py compare.py ckptreport.py; do
  if [ -x "$SRC/scripts/$s" ] && [ "$(head -1 "$SRC/scripts/$s")" = '#!/usr/bin/env python3' ]; then
    ok "scripts/$s is executable with #!/usr/bin/env python3"
  else bad "scripts/$s: not executable or another shebang: $(head -1 "$SRC/scripts/$s")"; fi
done

# ---- 3. 32 points (backend x direct x queue depth x block size) from the real report's points
"$PY" - "$work" <<'EOF'
import copy, itertools, json, sys
work = sys.argv[1]
doc = json.load(open(f"{work}/r.json"))
tmpl = doc["points"][0]
doc["points"] = []
for i, (be, d, qd, bs) in enumerate(itertools.product(("posix", "io_uring"), (True, False), (1, 4),
                                                      (65536, 262144, 1048576, 4194304))):
    p = copy.deepcopy(tmpl)
    p["index"] = i + 1
    p["params"] = {"backend": be, "direct": d, "queue_depth": qd, "block_size": bs}
    p["config"].update(p["params"])
    doc["points"].append(p)
doc["config"]["name"] = "thirty-two"
json.dump(doc, open(f"{work}/r32.json", "w"))
EOF
out="$("$PY" "$SRC/scripts/plot.py" "$work/r32.json" --out "$work/fig32" --format svg 2>&1)"; code=$?
bw="$work/fig32/bandwidth_vs_block_size.svg"; lat="$work/fig32/latency.svg"; rt="$work/fig32/rank_times.svg"
if [ "$code" -eq 0 ] && grep -q 'io_uring: save, median' "$bw" && grep -q 'posix: restore, median' "$bw" &&
   [ "$(grep -c '<!-- O_DIRECT, QD=4 -->' "$bw")" -eq 2 ]; then
  ok "32 points: bandwidth_vs_block_size in a row of panels per backend, 4 lines each"
else bad "32 points, bandwidth_vs_block_size: exit $code: $out / $(grep -o '<!-- [^>]*: save[^>]* -->' "$bw" 2>/dev/null)"; fi
if grep -q 'latency per transfer (µs, log scale)' "$lat" && ! grep -q 'drawing the first' <<< "$out"; then
  ok "32 points: latency is a point x percentile heatmap, every point drawn"
else bad "32 points, latency: $out"; fi
if grep -q '<!-- point -->' "$rt" && grep -q 'posix, O_DIRECT, QD=1, bs=64K' "$rt"; then
  ok "32 points: rank_times has a labelled row per point"
else bad "32 points, rank_times: $(grep -c '<!--' "$rt")"; fi

# ---- 4. compare.py: the real report against itself, 2 repetitions per side
out="$("$PY" "$SRC/scripts/compare.py" "$work/r.json" "$work/r.json" 2>&1)"; code=$?
n1="$(grep -c ' 1\.000 ' <<< "$out")"
nn="$(grep -c 'not enough repetitions to judge (n=2 vs n=2; need >= 3 each)' <<< "$out")"
if [ "$code" -eq 0 ] && [ "$n1" -eq 8 ] && [ "$nn" -eq 8 ] && ! grep -qi 'significant' <<< "$out"; then
  ok "compare.py: a report against itself gives 8 ratios of 1.000, each 'not enough repetitions (n=2 vs n=2)'"
else bad "compare.py self-comparison: exit $code, $n1 ratios of 1.000, $nn verdicts: $out"; fi

# ---- 5. crafted reports with known numbers
# point(INDEX, BLOCK_SIZE, SAVE bandwidths, RESTORE bandwidths): one repetition per value.
"$PY" - "$work" <<'EOF'
import json, statistics, sys
work = sys.argv[1]
def point(i, bs, save, restore, params=None, cfg=None):
    cfg = cfg or {"model": {"name": "tiny"}, "layout": "aggregated-rank", "backend": "posix",
                  "block_size": bs, "queue_depth": 1, "direct": True}
    reps = [{"repetition": k + 1,
             "save": {"bandwidth_GiBps": save[k], "bytes": 1000, "files": 4},
             "restore": {"bandwidth_GiBps": restore[k], "bytes": 1000, "files": 4}}
            for k in range(len(save))]
    s = lambda v: {"bandwidth_GiBps": {"min": min(v), "median": statistics.median(v),
                                       "max": max(v)}, "repetitions": len(v)}
    return {"index": i, "params": params if params is not None else {"block_size": bs},
            "config": cfg, "status": "ok", "repetitions": reps,
            "summary": {"save": s(save), "restore": s(restore)}}
def doc(points, v=1, name="x"):
    return {"schema_version": v, "tool": {"name": "ckptbench"}, "status": "ok",
            "config": {"name": name, "model": "llama2-7b"}, "environment": {"ranks": 8},
            "points": points}
A = doc([point(1, 1048576, (0.9, 1.0, 1.1), (1.9, 2.0, 2.1)),
         point(2, 4194304, (4.0, 4.0, 4.0), (3.0, 3.2, 3.4))], name="A")
# B, matched on config: point 1 save doubles (Welch p = 0.0048), restore 0.75 with a wide spread
# (p = 0.22); point 2 save 1/4 (p = 0.00037), restore 1.25 (p = 0.0090); plus a point only in B.
B = doc([point(1, 4194304, (0.9, 1.0, 1.1), (3.9, 4.0, 4.1)),
         point(2, 1048576, (1.8, 2.0, 2.2), (1.4, 1.5, 2.05)),
         point(3, 65536, (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))], name="B")
# P: no config match (queue depth differs), matched on params instead.
P = doc([point(1, 1048576, (0.45, 0.5, 0.55), (2.0, 2.0, 2.0),
               cfg={"block_size": 1048576, "queue_depth": 64})], name="P")
V2 = dict(A, schema_version=2)
# One repetition each, the same point, B twice as fast: nothing can be judged.
A1 = doc([point(1, 1048576, (1.0,), (2.0,), params={})], name="A1")
B1 = doc([point(1, 1048576, (2.0,), (4.0,), params={})], name="B1")
# Nothing in common with A: other config, other params.
X = doc([point(1, 8192, (1.0,) * 3, (1.0,) * 3, params={"queue_depth": 8},
               cfg={"block_size": 8192, "queue_depth": 8})], name="X")
for n, d in (("A", A), ("B", B), ("P", P), ("V2", V2), ("A1", A1), ("B1", B1), ("X", X)):
    json.dump(d, open(f"{work}/{n}.json", "w"))
open(f"{work}/garbage.json", "w").write("{not json")
EOF

out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/B.json" --json 2>&1)"; code=$?
if [ "$code" -eq 0 ]; then ok "compare.py A B exits 0"; else bad "compare.py A B: exit $code: $out"; fi
cat > "$work/check.py" <<'EOF'
import json, sys
d = json.loads(sys.stdin.read())
got = {(p["index"], ph): (round(p[ph][1]["ratio"], 6), p[ph][1]["flag"], p[ph][1]["matched_on"],
                          round(p[ph][1]["test"]["p"], 4), p[ph][1]["test"]["n"])
       for p in d["points"] for ph in ("save", "restore")}
want = {(1, "save"): (2.0, "+", "config", 0.0048, [3, 3]),
        (1, "restore"): (0.75, "", "config", 0.2201, [3, 3]),
        (2, "save"): (0.25, "-", "config", 0.0004, [3, 3]),
        (2, "restore"): (1.25, "+", "config", 0.009, [3, 3])}
assert got == want, f"got {got}"
assert d["test"]["name"] == "Welch's t-test" and d["test"]["alpha"] == 0.05, d["test"]
assert d["unmatched"]["B"] == ["block_size=65536"], d["unmatched"]
print("ratios ok")
EOF
check="$("$PY" "$work/check.py" <<< "$out" 2>&1)"
if [ "$check" = "ratios ok" ]; then
  ok "compare.py ratios 2.000+/0.750/0.250-/1.250+, Welch p 0.0048/0.22/0.00037/0.0090, the unmatched point"
else bad "compare.py ratios: $check"; fi

out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/B.json" 2>&1)"
if grep -q "test: Welch's t-test (two-sided) on the per-repetition bandwidths, threshold p < 0.05" <<< "$out" &&
   grep -qE '^  save .* 2\.000\+  significantly faster \(p=0\.0048 < 0\.05, n=3 vs n=3\)' <<< "$out" &&
   grep -qE '^  restore .* 0\.750   no significant difference \(p=0\.22 >= 0\.05, n=3 vs n=3\)' <<< "$out" &&
   grep -qE '^  save .* 0\.250-  significantly slower \(p=0\.00037 < 0\.05' <<< "$out" &&
   grep -q '3 of 4 tested differences have p < 0.05; if no setup differed, about 0.2 would by chance alone' <<< "$out" &&
   grep -q 'B points with no match in A: block_size=65536' <<< "$out"; then
  ok "compare.py text: names Welch's t-test and p < 0.05, verdicts with p and n, the chance note"
else
  bad "compare.py text table: $out"
fi

out="$("$PY" "$SRC/scripts/compare.py" "$work/A1.json" "$work/B1.json" 2>&1)"; code=$?
if [ "$code" -eq 0 ] && [ "$(grep -c 'not enough repetitions to judge (n=1 vs n=1; need >= 3 each)' <<< "$out")" -eq 2 ] &&
   grep -qE '^  save .* 2\.000 ' <<< "$out" && ! grep -qE '[0-9]\.[0-9]{3}[+-]' <<< "$out" &&
   ! grep -qi 'significant' <<< "$out"; then
  ok "compare.py with 1 repetition each: 'not enough repetitions to judge (n=1 vs n=1; ...)', no flag, nothing significant"
else bad "compare.py with 1 repetition each: exit $code: $out"; fi

out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/P.json" --json 2>&1)"
check="$("$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); p=d["points"][0]; print(p["index"], round(p["save"][1]["ratio"],6), p["save"][1]["flag"], p["save"][1]["matched_on"], round(p["restore"][1]["ratio"],6), p["restore"][1]["flag"] or "none")' <<< "$out" 2>&1)"
if [ "$check" = "1 0.5 - params 1.0 none" ]; then ok "compare.py falls back to params: ratio 0.500-, 1.000"
else bad "compare.py params match: $check / $out"; fi

# No hint may suggest the --match mode that was given (the default, auto, included).
for m in "" config params auto; do
  out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/X.json" ${m:+--match "$m"} 2>&1)"; code=$?
  given="${m:-auto}"
  if [ "$code" -eq 0 ] && grep -q '^no matching points' <<< "$out" && ! grep -q -- "--match $given" <<< "$out"; then
    ok "compare.py --match ${m:-(default)}: no match, and no hint to use --match $given"
  else bad "compare.py --match ${m:-(default)} without matches: exit $code: $out"; fi
done
out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/X.json" --match config 2>&1)"
if grep -q -- '--match auto also matches on the swept params' <<< "$out"; then
  ok "compare.py --match config without matches points to --match auto"
else bad "compare.py --match config hint: $out"; fi

out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/V2.json" 2>&1)"; code=$?
if [ "$code" -eq 2 ] && grep -q "schema_version" <<< "$out"; then ok "compare.py: schema_version mismatch exits 2"
else bad "compare.py schema mismatch: exit $code: $out"; fi
for f in missing.json garbage.json; do
  out="$("$PY" "$SRC/scripts/compare.py" "$work/A.json" "$work/$f" 2>&1)"; code=$?
  if [ "$code" -eq 2 ] && grep -q "compare.py: error: .*$f" <<< "$out"; then ok "compare.py: $f exits 2"
  else bad "compare.py on $f: exit $code: $out"; fi
done

# ---- 6. compare.py: real (scripts/realfw.py) against replay (ckptbench), crafted numbers
# REAL: one point, 3 repetitions, save 1/3/2 s (median 2), restore 4 s; steps io_s (+ sync_s in
# the save). REPLAY: point 1 has another plan, point 2 the real one's (paired on the plan, not
# the index); save 3 s = open 0.1 + io 1.5 + sync 0.6 + close 0.05 (storage 2.25) + cpu 0.5 +
# source 0.2 (rank mean 3.05: rest 0.1), restore 2 s with open, io and close only; the real save's
# rank mean less io and sync leaves 0.2 s of rest.
"$PY" - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
mmm = lambda v: {"min": v / 2, "mean": v, "max": v * 2}
def ph(elapsed, rank_mean, **steps):
    return {"elapsed_s": elapsed, "bandwidth_GiBps": 1.0, "bytes": 1000,
            "rank_time_s": mmm(rank_mean), "steps": {k: mmm(v) for k, v in steps.items()}}
plan = {"payload_bytes": 1000, "files": 4, "file_bytes": 1100}
real = {"schema_version": 1, "status": "ok",
        "tool": {"name": "ckptbench-realfw", "version": "0.1.0", "runner": "scripts/realfw.py"},
        "framework": {"name": "torch.save", "version": "1.13.1", "fsync": True},
        "points": [{"index": 1, "params": {}, "status": "ok", "plan": plan,
                    "config": {"layout": "aggregated-rank"},
                    "repetitions": [{"repetition": k + 1,
                                     "save": ph(s, s - 0.5, io_s=s - 0.9, sync_s=0.2),
                                     "restore": ph(4.0, 3.5, io_s=3.5)}
                                    for k, s in enumerate((1.0, 3.0, 2.0))]}]}
replay = {"schema_version": 1, "status": "ok", "tool": {"name": "ckptbench", "version": "0.1.0"},
          "points": [{"index": i, "params": {}, "status": "ok",
                      "plan": dict(plan, payload_bytes=1000 * i),
                      "config": {"layout": "aggregated-rank", "backend": "posix"},
                      "repetitions": [{"repetition": 1,
                                       "save": ph(3.0, 3.05, open_s=0.1, io_s=1.5, sync_s=0.6,
                                                  close_s=0.05, cpu_s=0.5, source_s=0.2),
                                       "restore": ph(2.0, 1.8, open_s=0.25, io_s=1.5,
                                                     close_s=0.05)}]} for i in (2, 1)]}
json.dump(real, open(f"{work}/real.json", "w"))
json.dump(replay, open(f"{work}/replay.json", "w"))
EOF
cat > "$work/rvr.py" <<'EOF'
import json, sys
d = json.loads(sys.stdin.read())
assert d["mode"] == "real-vs-replay", d.get("mode")
assert d["reports"]["real"].endswith("/real.json"), d["reports"]
assert d["reports"]["replay"].endswith("/replay.json"), d["reports"]
(p,) = d["points"]
r = lambda x: None if x is None else round(x, 6)
got = (p["replay_index"], p["matched_on"],
       {ph: (r(p[ph]["real_s"]), r(p[ph]["replay_s"]), r(p[ph]["ratio"]), p[ph]["n_real"],
             p[ph]["n_replay"], {k: r(v) for k, v in p[ph]["replay_steps"].items()},
             {k: r(v) for k, v in p[ph]["real_steps"].items()}) for ph in ("save", "restore")})
want = (1, "plan", {
    "save": (2.0, 3.0, 1.5, 3, 1,
             {"rank_mean_s": 3.05, "storage_s": 2.25, "open_s": 0.1, "io_s": 1.5, "sync_s": 0.6,
              "close_s": 0.05, "cpu_s": 0.5, "source_s": 0.2, "rest_s": 0.1},
             {"rank_mean_s": 1.5, "io_s": 1.1, "sync_s": 0.2, "rest_s": 0.2}),
    "restore": (4.0, 2.0, 0.5, 3, 1,
                {"rank_mean_s": 1.8, "storage_s": 1.8, "open_s": 0.25, "io_s": 1.5,
                 "close_s": 0.05, "rest_s": 0.0},
                {"rank_mean_s": 3.5, "io_s": 3.5, "rest_s": 0.0})})
assert got == want, f"got {got}"
assert d["unmatched"] == {"real": [], "replay": ["posix aggregated-rank"]}, d["unmatched"]
print("real vs replay ok")
EOF
for order in "real.json replay.json" "replay.json real.json"; do
  read -r first second <<< "$order"
  out="$("$PY" "$SRC/scripts/compare.py" "$work/$first" "$work/$second" --json 2>&1)"; code=$?
  check="$("$PY" "$work/rvr.py" <<< "$out" 2>&1)"
  if [ "$code" -eq 0 ] && [ "$check" = "real vs replay ok" ]; then
    ok "compare.py $first $second: real vs replay paired on the plan, ratio 1.500/0.500, storage 2.25 = open+io+sync+close, cpu, source, rest, real io/sync/rest"
  else bad "compare.py $first $second (real vs replay): exit $code: $check / $out"; fi
done
out="$("$PY" "$SRC/scripts/compare.py" "$work/replay.json" "$work/real.json" --match config 2>&1)"; code=$?
if [ "$code" -eq 0 ] && grep -q '^real:   real.json: ckptbench-realfw 0.1.0 \[torch.save 1.13.1, fsync per file\]' <<< "$out" &&
   grep -qE '^  save +2\.0000 +3\.0000 +1\.500 +3/1$' <<< "$out" &&
   grep -qE '^  restore +4\.0000 +2\.0000 +0\.500 +3/1$' <<< "$out" &&
   grep -qE '^  phase +rank mean +storage +open +io +sync +close +cpu +source +rest$' <<< "$out" &&
   grep -qE '^  save +3\.0500 +2\.2500 +0\.1000 +1\.5000 +0\.6000 +0\.0500 +0\.5000 +0\.2000 +0\.1000$' <<< "$out" &&
   grep -qE '^  restore +1\.8000 +1\.8000 +0\.2500 +1\.5000 +- +0\.0500 +- +- +0\.0000$' <<< "$out" &&
   grep -qE '^  phase +rank mean +io +sync +rest$' <<< "$out" &&
   grep -qE '^  save +1\.5000 +1\.1000 +0\.2000 +0\.2000$' <<< "$out" &&
   grep -q 'note: --match config is not used for real against replay' <<< "$out" &&
   grep -q '^replay points with no match: posix aggregated-rank' <<< "$out" &&
   ! grep -qi "welch\|significant" <<< "$out"; then
  ok "compare.py real vs replay text: times, ratio, the replay's split with '-' for missing steps, the real side's steps"
else bad "compare.py real vs replay text: exit $code: $out"; fi
# Two realfw reports are two reports like any others: the bandwidth comparison.
out="$("$PY" "$SRC/scripts/compare.py" "$work/real.json" "$work/real.json" 2>&1)"; code=$?
if [ "$code" -eq 0 ] && grep -q '^A: real.json' <<< "$out" && grep -qE '^  save .* 1\.000 ' <<< "$out"; then
  ok "compare.py with two realfw reports keeps the bandwidth comparison"
else bad "compare.py realfw vs realfw: exit $code: $out"; fi

# ---- 7. ckptreport.py csv
header='point,phase,status,params,model,world,layout,backend,direct,block_size,queue_depth,repetitions,bytes,files,bw_GiBps_min,bw_GiBps_median,bw_GiBps_max,bw_GiBps_mean,bw_GiBps_stddev,elapsed_s_median,iops_median,meta_ops_per_s_median,lat_p50_us_median,lat_p99_us_median,straggler_ratio_median'
out="$("$PY" "$SRC/scripts/ckptreport.py" csv "$work/r.json" -o "$work/r.csv" 2>&1)"; code=$?
if [ "$code" -eq 0 ] && [ "$(head -1 "$work/r.csv")" = "$header"$'\r' ]; then ok "ckptreport.py csv: the header, columns in order (CRLF)"
else bad "ckptreport.py csv: exit $code: $out / $(head -1 "$work/r.csv" 2>/dev/null)"; fi
if "$PY" "$SRC/scripts/ckptreport.py" csv "$work/r.json" | cmp -s - "$work/r.csv"; then
  ok "ckptreport.py csv: stdout equals -o FILE"
else bad "ckptreport.py csv: stdout differs from -o FILE"; fi
# Recompute every cell from the report, independently of ckptreport.py.
cat > "$work/csvcheck.py" <<'EOF'
import csv, json, math, statistics, sys
doc = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
errors = []
pts = doc["points"]
if len(rows) != 2 * len(pts):
    errors.append(f"{len(rows)} rows for {len(pts)} points")
def med(vals):
    return statistics.median(vals) if vals else None
def get(r, path):
    for key in path:
        if not isinstance(r, dict) or key not in r:
            return None
        r = r[key]
    return r
def same(cell, want, col, where):
    if want is None:
        ok = cell == ""
    elif isinstance(want, bool):
        ok = cell == ("true" if want else "false")
    elif isinstance(want, int):
        ok = cell == str(want)
    elif isinstance(want, float):
        ok = cell != "" and math.isclose(float(cell), want, rel_tol=1e-12, abs_tol=0)
    else:
        ok = cell == str(want)
    if not ok:
        errors.append(f"{where} {col}: {cell!r}, want {want!r}")
for k, row in enumerate(rows):
    p, phase = pts[k // 2], ("save", "restore")[k % 2]
    reps = [r[phase] for r in p["repetitions"] if phase in r]
    cfg = p["config"]
    model = doc["config"]["model"]
    model = cfg["model"]["name"] if isinstance(cfg.get("model"), dict) else (
        cfg.get("model") or (model if isinstance(model, str) else model.get("name")))
    vals = [r["bandwidth_GiBps"] for r in reps]
    def g(*path):
        return [x for x in (get(r, path) for r in reps) if x is not None]
    want = {
        "point": p["index"], "phase": phase, "status": p["status"],
        "params": ";".join(f"{a}={b}" for a, b in p["params"].items()),
        "model": model, "world": doc["environment"]["ranks"],
        "layout": cfg.get("layout"), "backend": cfg.get("backend"), "direct": cfg.get("direct"),
        "block_size": cfg.get("block_size"), "queue_depth": cfg.get("queue_depth"),
        "repetitions": len(reps), "bytes": reps[0].get("bytes"), "files": reps[0].get("files"),
        "bw_GiBps_min": min(vals), "bw_GiBps_median": float(med(vals)), "bw_GiBps_max": max(vals),
        "bw_GiBps_mean": sum(vals) / len(vals),
        "bw_GiBps_stddev": statistics.stdev(vals) if len(vals) > 1 else None,
        "elapsed_s_median": med(g("elapsed_s")), "iops_median": med(g("iops")),
        "meta_ops_per_s_median": med(g("metadata_ops_per_s")),
        "lat_p50_us_median": med(g("latency", "p50_us")),
        "lat_p99_us_median": med(g("latency", "p99_us")),
        "straggler_ratio_median": med(g("straggler_ratio")),
    }
    for col, w in want.items():
        same(row[col], w, col, f"row {k + 1} (point {p['index']} {phase})")
print("\n".join(errors[:10]) if errors else f"csv ok ({len(rows)} rows)")
EOF
check="$("$PY" "$work/csvcheck.py" "$work/r.json" "$work/r.csv" 2>&1)"
if [ "$check" = "csv ok (8 rows)" ]; then ok "ckptreport.py csv: 4 points x 2 phases, every cell matches the report"
else bad "ckptreport.py csv values: $check"; fi
"$PY" "$SRC/scripts/ckptreport.py" csv "$work/A1.json" -o "$work/a1.csv"
"$PY" "$SRC/scripts/ckptreport.py" csv "$work/P.json" -o "$work/p.csv"
r1="$(sed -n 2p "$work/a1.csv" | tr -d '\r')"; r2="$(sed -n 3p "$work/p.csv" | tr -d '\r')"
if [ "$r1" = '1,save,ok,,tiny,8,aggregated-rank,posix,true,1048576,1,1,1000,4,1.0,1.0,1.0,1.0,,,,,,,' ] &&
   [ "$r2" = '1,restore,ok,block_size=1048576,llama2-7b,8,,,,1048576,64,3,1000,4,2.0,2.0,2.0,2.0,0.0,,,,,,' ]; then
  ok "ckptreport.py csv: one repetition -> empty stddev; missing values empty; model from the point or the run"
else bad "ckptreport.py csv crafted rows: '$r1' / '$r2'"; fi
out="$("$PY" "$SRC/scripts/ckptreport.py" csv "$work/garbage.json" 2>&1)"; code=$?
if [ "$code" -eq 2 ] && grep -q "ckptreport.py: error: .*garbage.json: not valid JSON" <<< "$out"; then
  ok "ckptreport.py csv on a non-report exits 2 naming the file"
else bad "ckptreport.py csv on garbage: exit $code: $out"; fi

# ---- 8. hostile reports: exit 2 and one line naming the file and what is wrong, no traceback
"$PY" - "$work" <<'EOF'
import copy, json, sys
work = sys.argv[1]
real = json.load(open(f"{work}/r.json"))
A = json.load(open(f"{work}/A.json"))
def put(name, doc):
    json.dump(doc, open(f"{work}/h-{name}.json", "w"))
# 200,000 levels: Python's json parser recurses (RecursionError) long before the end.
open(f"{work}/h-deep.json", "w").write('{"schema_version": 1, "points": ' + "[" * 200000
                                       + "]" * 200000 + "}")
open(f"{work}/h-utf8.json", "wb").write(b'{"schema_version": 1, "points": [], "name": "caf\xe9"}')
d = copy.deepcopy(real); d["points"][3]["config"] = [1, 2]; put("config-list", d)
d = copy.deepcopy(real); d["points"] = {"1": d["points"][0]}; put("points-object", d)
d = copy.deepcopy(real); d["points"][1]["summary"]["save"]["bandwidth_GiBps"]["median"] = "fast"
put("number-string", d)
d = copy.deepcopy(A); d["points"][1]["repetitions"][2]["restore"]["bandwidth_GiBps"] = float("nan")
put("nan", d)  # json.dump writes NaN, which Python's json reads back
d = copy.deepcopy(A); d["points"][0]["summary"]["save"]["bandwidth_GiBps"]["max"] = float("inf")
put("infinity", d)
d = copy.deepcopy(A); d["points"][0]["summary"]["save"]["bandwidth_GiBps"]["min"] = 5.0
put("min-above-median", d)
d = copy.deepcopy(A)
for p in d["points"]:
    # Written as the escape \ud800, which json reads back; printed, it raised UnicodeEncodeError.
    p["params"]["layout"] = p["config"]["layout"] = "x\ud800y"
put("surrogate", d)
# A 100,000-character run name (the figure titles) and layout (a swept param and the resolved
# config: legends, tick labels), starting with mathtext that does not parse.
d = copy.deepcopy(real); d["config"]["name"] = "N" * 100000
for p in d["points"]:
    p["params"]["layout"] = p["config"]["layout"] = (
        "$\\frac{" + "L" * 100000 if p["index"] == 1 else "aggregated-rank")
put("long", d)
EOF
truncate -s 300M "$work/h-big.json"  # sparse: over the cap without writing 300 MiB

# refuse SCRIPT CASE REGEX: SCRIPT (plot.py, or compare.py with the file second of two) on
# $work/h-CASE.json exits 2 with exactly one line on stderr, matching REGEX, and no traceback.
refuse() {
  local script="$1" f="$work/h-$2.json" want="$3" code args
  if [ "$script" = plot.py ]; then args=("$f" --out "$work/hfig-$2" --format png)
  else args=("$work/A.json" "$f"); fi
  "$PY" "$SRC/scripts/$script" "${args[@]}" > "$work/h.out" 2> "$work/h.err"; code=$?
  if [ "$code" -eq 2 ] && [ "$(wc -l < "$work/h.err")" -eq 1 ] &&
     grep -qE -- "^$script: error: $f: $want" "$work/h.err" && ! grep -q Traceback "$work/h.err"; then
    ok "$script $2: exit 2, one line: $(cut -c1-160 "$work/h.err" | sed "s|$work/||")"
  else
    bad "$script $2: exit $code, $(wc -l < "$work/h.err") line(s) on stderr: $(head -c 800 "$work/h.err")"
  fi
}
for script in plot.py compare.py; do
  refuse "$script" deep "nested too deeply to parse \(a report may nest at most 64 levels\)"
  refuse "$script" big "314572800 bytes, larger than 256 MiB"
  refuse "$script" utf8 "not valid JSON \(not UTF-8: byte 0xe9 at offset 48\)"
  refuse "$script" points-object "not a ckptbench report: points is an object, want a list"
  refuse "$script" config-list "points\[3\]\.config is a list, want an object"
  refuse "$script" number-string 'points\[1\]\.summary\.save\.bandwidth_GiBps\.median is a string \("fast"\), want a number'
  refuse "$script" nan "points\[1\]\.repetitions\[2\]\.restore\.bandwidth_GiBps is NaN, want a number"
  refuse "$script" infinity "points\[0\]\.summary\.save\.bandwidth_GiBps\.max is inf, want a number"
  refuse "$script" min-above-median "points\[0\]\.summary\.save\.bandwidth_GiBps: min 5 is above median 1, want min <= median <= max"
  refuse "$script" surrogate "points\[[01]\]\.(params|config)\.layout is a string that is not valid Unicode"
done
out="$("$PY" "$SRC/scripts/ckptreport.py" csv "$work/h-config-list.json" 2>&1)"; code=$?
if [ "$code" -eq 2 ] && [ "$(wc -l <<< "$out")" -eq 1 ] && grep -q 'points\[3\]\.config is a list' <<< "$out"; then
  ok "ckptreport.py csv refuses points[3].config as a list: exit 2, one line"
else bad "ckptreport.py csv on h-config-list.json: exit $code: $out"; fi
# Among good reports a bad one is skipped with a warning, like any input that is not a report.
out="$("$PY" "$SRC/scripts/plot.py" "$work/h-config-list.json" "$work/r.json" --out "$work/hfig-mixed" \
       --format png 2>&1)"; code=$?
if [ "$code" -eq 0 ] && grep -q "warning: skipping .*h-config-list.json: points\[3\]\.config is a list" <<< "$out" &&
   [ -s "$work/hfig-mixed/bandwidth_vs_block_size.png" ]; then
  ok "plot.py skips a bad report among good ones with a warning naming the JSON path, exits 0"
else bad "plot.py with a bad and a good report: exit $code: $out"; fi

# A 100,000-character run name and param value: every figure drawn, the text cut, stderr empty.
"$PY" "$SRC/scripts/plot.py" "$work/h-long.json" --out "$work/hfig-long" --format png,svg \
  > "$work/h.out" 2> "$work/h.err"; code=$?
missing=""
for fig in bandwidth_vs_block_size heatmap_qd_block_size layouts phase_steps rank_times latency; do
  for ext in png svg; do [ -s "$work/hfig-long/$fig.$ext" ] || missing="$missing $fig.$ext"; done
done
if [ "$code" -eq 0 ] && [ -z "$missing" ] && [ ! -s "$work/h.err" ]; then
  ok "plot.py with a 100,000-character name and layout draws all 6 figures (png, svg), nothing on stderr"
else bad "plot.py with 100,000-character strings: exit $code, missing:${missing:- none}: $(head -c 800 "$work/h.err")"; fi
svg="$work/hfig-long/bandwidth_vs_block_size.svg"
if grep -q '<!-- N\{39\}…: bandwidth vs block size -->' "$svg" &&
   grep -q '<!-- \$\\frac{L\{32\}…, QD=1 -->' "$svg" &&
   ! grep -qE 'L{100}|N{100}' "$work"/hfig-long/*.svg; then
  ok "plot.py cuts the long title to 40 characters and the legend entry to 80, with an ellipsis"
else
  bad "plot.py long text: $(grep -o '<!-- [^>]* -->' "$svg" 2>/dev/null | cut -c1-120 | head -8)"
fi

# ---- 9. inputs that are not regular files, outputs that cannot be written (the binary's rules,
# scripts/ckptinput.py). A FIFO (nothing ever writes it: a blocking open would wait forever), a
# directory and a character device given as a report or a --reference end at once with exit 2
# and one line naming the path and what it is; timeout 20 turns a regression into a failure.
mkfifo "$work/pipe.json"
# not_regular SCRIPT CASE PATH KIND ARGS...: SCRIPT ARGS exits 2 with one line on stderr.
not_regular() {
  local script="$1" case="$2" path="$3" kind="$4" code
  shift 4
  timeout 20 "$PY" "$SRC/scripts/$script" "$@" > "$work/nr.out" 2> "$work/nr.err"; code=$?
  if [ "$code" -eq 2 ] && [ "$(wc -l < "$work/nr.err")" -eq 1 ] &&
     grep -qF "$script: error: $path: is $kind" "$work/nr.err" && ! grep -q Traceback "$work/nr.err"; then
    ok "$script $case: exit 2 at once: $(sed "s|$work/||g" "$work/nr.err" | cut -c1-150)"
  else
    bad "$script $case: exit $code$([ "$code" -eq 124 ] && echo " (timed out: blocked)"): $(head -c 600 "$work/nr.err")"
  fi
}
fifo_kind="a FIFO (a named pipe, or a pipe such as <(...) gives), not a regular file"
not_regular plot.py "a FIFO as the report" "$work/pipe.json" "$fifo_kind" "$work/pipe.json" --out "$work/nrfig"
not_regular compare.py "a FIFO as B" "$work/pipe.json" "$fifo_kind" "$work/A.json" "$work/pipe.json"
not_regular compare.py "a FIFO as A" "$work/pipe.json" "$fifo_kind" "$work/pipe.json" "$work/A.json"
not_regular ckptreport.py "csv, a FIFO as the report" "$work/pipe.json" "$fifo_kind" csv "$work/pipe.json"
not_regular compare.py "a directory as B" "$work" "a directory, not a regular file" "$work/A.json" "$work"
not_regular compare.py "/dev/null as B" /dev/null "a character device, not a regular file" "$work/A.json" /dev/null
[ ! -e "$work/nrfig" ] && ok "plot.py with a FIFO as its only input made no --out directory" ||
  bad "plot.py with a FIFO as its only input made $work/nrfig"
out="$(timeout 20 "$PY" "$SRC/scripts/plot.py" "$work/r.json" --out "$work/nrfig2" --format png \
       --reference "$work/pipe.json" 2>&1)"; code=$?
if [ "$code" -eq 0 ] && grep -qF "warning: --reference: skipping $work/pipe.json: is a FIFO" <<< "$out" &&
   [ -s "$work/nrfig2/bandwidth_vs_block_size.png" ]; then
  ok "plot.py --reference a FIFO: skipped with a warning naming it, the figures drawn"
else bad "plot.py --reference FIFO: exit $code$([ "$code" -eq 124 ] && echo " (timed out: blocked)"): $out"; fi
[ -p "$work/pipe.json" ] && ok "the FIFO is still a FIFO" || bad "the FIFO was replaced"

# plot.py --out: an existing regular file, a path under a regular file, a kernel pseudo file
# system (and, as a user, a directory without write permission): exit 2, one line naming --out
# and why, no traceback, before any report is read (a missing report's message does not show),
# nothing made or changed.
echo "not a directory" > "$work/afile"
# bad_out CASE DIR REGEX: plot.py missing.json --out DIR.
bad_out() {
  local code
  timeout 60 "$PY" "$SRC/scripts/plot.py" "$work/missing.json" --out "$2" > "$work/bo.out" 2> "$work/bo.err"; code=$?
  if [ "$code" -eq 2 ] && [ "$(wc -l < "$work/bo.err")" -eq 1 ] &&
     grep -qE -- "^plot.py: error: --out $2: $3" "$work/bo.err" && ! grep -q Traceback "$work/bo.err"; then
    ok "plot.py --out $1: exit 2 before reading the reports: $(sed "s|$work/||g" "$work/bo.err" | cut -c1-150)"
  else bad "plot.py --out $1: exit $code: $(head -c 600 "$work/bo.err")"; fi
}
bad_out "an existing regular file" "$work/afile" "exists and is a regular file, not a directory"
bad_out "under a regular file" "$work/afile/fig" ".*afile is a regular file, not a directory"
bad_out "on procfs" "/proc/ckpt-plot-test" "/proc is on proc, a kernel pseudo file system"
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$work/ro" && chmod 555 "$work/ro"
  bad_out "in a directory without write permission" "$work/ro/fig" ".*ro is not writable"
  chmod 755 "$work/ro"
fi
[ "$(cat "$work/afile")" = "not a directory" ] && [ ! -e /proc/ckpt-plot-test ] &&
  ok "plot.py with a bad --out changed nothing" || bad "plot.py with a bad --out changed $work/afile"
# A figure that cannot be written whole (RLIMIT_FSIZE 1 KiB: the write fails with EFBIG; Python
# ignores SIGXFSZ): exit 2 naming the file, no figure, no temporary file left behind.
out="$( (ulimit -f 1; "$PY" "$SRC/scripts/plot.py" "$work/r.json" --out "$work/fsz" --format png) 2>&1)"; code=$?
if [ "$code" -eq 2 ] && grep -q "plot.py: error: --out $work/fsz/[a-z_]*\.png: cannot write: File too large" <<< "$out" &&
   ! grep -q Traceback <<< "$out" && [ -z "$(ls -A "$work/fsz" 2> /dev/null)" ]; then
  ok "plot.py: a figure too large to write: exit 2, no half-written figure or temporary file"
else bad "plot.py under ulimit -f 1: exit $code: $(head -c 600 <<< "$out") / $(ls -A "$work/fsz" 2>&1)"; fi

# ckptreport.py csv -o: a directory, a path under a file, a FIFO (left as it is; opening it to
# write would wait for a reader), a file too large to write (nothing half-written, no temporary
# file, no directory made for it).
# bad_csv CASE FILE REGEX [ULIMIT_F]
bad_csv() {
  local code
  ( [ -z "${4:-}" ] || ulimit -f "$4"
    exec timeout 20 "$PY" "$SRC/scripts/ckptreport.py" csv "$work/r.json" -o "$2" ) \
    > "$work/bc.out" 2> "$work/bc.err"; code=$?
  if [ "$code" -eq 2 ] && [ "$(wc -l < "$work/bc.err")" -eq 1 ] &&
     grep -qE -- "^ckptreport.py: error: -o $2: $3" "$work/bc.err" && ! grep -q Traceback "$work/bc.err"; then
    ok "ckptreport.py csv -o $1: exit 2: $(sed "s|$work/||g" "$work/bc.err" | cut -c1-150)"
  else bad "ckptreport.py csv -o $1: exit $code: $(head -c 600 "$work/bc.err")"; fi
}
mkdir -p "$work/csvdir"
bad_csv "a directory" "$work/csvdir" "is a directory; give a file name"
bad_csv "under a regular file" "$work/afile/r.csv" ".*afile is a regular file, not a directory"
bad_csv "a FIFO" "$work/pipe.json" "is a FIFO"
[ -p "$work/pipe.json" ] && ok "ckptreport.py csv -o FIFO: the FIFO is left as it is" || bad "csv -o replaced the FIFO"
bad_csv "too large to write (ulimit -f 1)" "$work/csvdir/r.csv" "cannot write: File too large" 1
if [ -z "$(ls -A "$work/csvdir")" ]; then ok "ckptreport.py csv -o: a failed write leaves no file and no temporary file"
else bad "ckptreport.py csv -o, failed write left: $(ls -A "$work/csvdir")"; fi
bad_csv "under a missing directory, too large" "$work/csvdir/new/sub/r.csv" "cannot write: File too large" 1
if [ ! -e "$work/csvdir/new" ]; then ok "ckptreport.py csv -o: the directories made for a failed write are removed"
else bad "ckptreport.py csv -o: a failed write left $(find "$work/csvdir/new")"; fi
if "$PY" "$SRC/scripts/ckptreport.py" csv "$work/r.json" -o "$work/csvdir/new/r.csv" &&
   cmp -s "$work/csvdir/new/r.csv" "$work/r.csv" && [ "$(ls -A "$work/csvdir/new")" = r.csv ]; then
  ok "ckptreport.py csv -o into a missing directory: made, the same CSV, nothing else"
else bad "ckptreport.py csv -o into a missing directory: $(ls -A "$work/csvdir/new" 2>&1)"; fi

# ---- 11. an object store's points: tests/cli/data/s3-vs-posix.json, the report of a real sweep
# (backend posix and s3 x block_size 8M and 16M, queue_depth 8, 2 repetitions, 4 ranks, against
# scripts/ceph/local-rgw.sh's gateway, which this test cannot start; unchanged since). Its s3
# points have settings.backend's bucket, endpoint, part_size_bytes and requests_in_flight, each
# phase's requests by kind and counters.retries/throttled, and cache.method "not applicable".
S3R="$SRC/tests/cli/data/s3-vs-posix.json"
JS="$(python_with jsonschema)" || JS=""
# schema_check FILE: an ok or bad line for a report of tests/cli/data against the schema.
schema_check() {
  local check name="tests/cli/data/$(basename "$1")"
  if [ -z "$JS" ]; then
    echo "note: no python3 with jsonschema; $name is not validated here"; return
  fi
  check="$("$JS" - "$SRC/docs/report.schema.json" "$1" <<'EOF' 2>&1
import json, sys
import jsonschema
v = jsonschema.Draft7Validator(json.load(open(sys.argv[1])))
errs = list(v.iter_errors(json.load(open(sys.argv[2]))))
# Each distinct error once, list items as *: "points/*/repetitions/*/cache: ...".
seen = sorted({"/".join("*" if isinstance(k, int) else str(k) for k in e.absolute_path) + ": "
               + e.message[:160] for e in errs})
print(f"{len(errs)} error(s): " + "; ".join(seen[:6]) if errs else "valid")
EOF
)"
  if [ "$check" = valid ]; then ok "$name validates against docs/report.schema.json"
  else bad "$name vs docs/report.schema.json: $check"; fi
}
schema_check "$S3R"
# Variants: B with every request twice as slow, a kind only B has (list) and retries and throttled
# answers in its restores; Q with queue depth 4 and 8 and posix's cache swept (none, fadvise);
# N without params (labels from the config); H with requests of the wrong types.
"$PY" - "$S3R" "$work" <<'EOF'
import copy, json, sys
d = json.load(open(sys.argv[1]))
work = sys.argv[2]
b = copy.deepcopy(d)
for p in b["points"]:
    for r in p["repetitions"]:
        for ph in ("save", "restore"):
            req = r[ph].get("requests")
            if not req:
                continue
            for v in req.values():
                for f in ("p50_ms", "p90_ms", "p99_ms", "max_ms"):
                    v[f] *= 2
            if ph == "restore":
                req["list"] = {"count": 1, "p50_ms": 3.0, "p90_ms": 3.0, "p99_ms": 3.0, "max_ms": 3.0}
                r[ph]["counters"]["retries"]["sum"] = 3
                r[ph]["counters"]["throttled"]["sum"] = 1
json.dump(b, open(f"{work}/s3-B.json", "w"))
q = copy.deepcopy(d)
q["points"] = []
for qd in (4, 8):
    for p in d["points"]:
        p = copy.deepcopy(p)
        p["index"] = len(q["points"]) + 1
        p["config"]["queue_depth"] = p["params"]["queue_depth"] = qd
        if "requests_in_flight" in p["settings"]["backend"]:
            p["settings"]["backend"]["requests_in_flight"] = qd
        else:
            p["config"]["cache"] = "none" if qd == 4 else "fadvise"
        q["points"].append(p)
json.dump(q, open(f"{work}/s3-Q.json", "w"))
n = copy.deepcopy(d)
for p in n["points"]:
    p["params"] = {}
json.dump(n, open(f"{work}/s3-N.json", "w"))
h = copy.deepcopy(d)
junk = ([1, 2], {"part": "x", "get": {"count": "many", "p50_ms": -1.0, "p99_ms": None}},
        {"head": {"count": 1e308, "p50_ms": 1e-300, "p99_ms": 1e308}}, "requests")
for i, p in enumerate(h["points"]):
    for r in p["repetitions"]:
        r["save"]["requests"] = junk[i]
        r["restore"]["counters"]["retries"] = {"sum": "x"}
json.dump(h, open(f"{work}/s3-H.json", "w"))
EOF

out="$("$PY" "$SRC/scripts/plot.py" "$S3R" --out "$work/figs3" 2>&1)"; code=$?
f="$work/figs3/requests"
sig="$(head -c 8 "$f.png" 2>/dev/null | od -An -c | tr -d ' ')"
if [ "$code" -eq 0 ] && [ -s "$f.png" ] && [ "$sig" = '211PNG\r\n032\n' ] && [ -s "$f.svg" ] &&
   ! grep -q "skipped requests" <<< "$out"; then
  ok "plot.py on s3 points: the requests figure (requests.png, requests.svg)"
else bad "plot.py on tests/cli/data/s3-vs-posix.json: exit $code: $out"; fi
svgok=1
for want in "requests:s3 (ckpt@127.0.0.1:7480), part=8M" "requests:s3 (ckpt@127.0.0.1:7480), part=16M" \
            "requests:save latency per request (ms, log scale)" "requests:save: bar = p50, whisker = p99" \
            "requests:create_upload" "requests:complete" "requests:n=10" "requests:n=14" \
            "latency:posix, bs=8M" "latency:s3 (ckpt@127.0.0.1:7480), part=16M" \
            "rank_times:s3 (ckpt@127.0.0.1:7480), part=8M" "bandwidth_vs_block_size:s3 (ckpt@127.0.0.1:7480)" \
            "bandwidth_vs_block_size:block size (bytes per transfer; K = KiB, M = MiB) / part size (s3)"; do
  grep -qF -- "<!-- ${want#*:}" "$work/figs3/${want%%:*}.svg" ||
    { svgok=0; bad "s3 points, ${want%%:*}.svg: no text '${want#*:}'"; }
done
for kind in part get head; do
  grep -qF -- "<!-- $kind -->" "$f.svg" || { svgok=0; bad "requests.svg: no request kind '$kind'"; }
done
if grep -h -o '<!-- s3 [^>]* -->' "$work"/figs3/*.svg | grep -qE 'bs=|QD='; then
  svgok=0; bad "an s3 point labelled with bs= or QD=: $(grep -h -o '<!-- s3 [^>]* -->' "$work"/figs3/*.svg | grep -E 'bs=|QD=' | head -2)"
fi
[ $svgok -eq 1 ] && ok "plot.py: s3 points labelled s3 (bucket@endpoint), part=; posix ones bs=; the block-size axis names the part size; request kinds and counts drawn"

out="$("$PY" "$SRC/scripts/plot.py" "$work/s3-Q.json" --out "$work/figs3q" --format svg 2>&1)"; code=$?
hm="$work/figs3q/heatmap_qd_block_size.svg"
if [ "$code" -eq 0 ] &&
   grep -qF '<!-- queue depth (transfers in flight per rank) / requests in flight per rank (s3) -->' "$hm" &&
   grep -qF '<!-- queue depth (transfers in flight per rank) -->' "$hm" &&
   grep -qF '<!-- save: s3 (ckpt@127.0.0.1:7480), no cache (object store) -->' "$hm" &&
   grep -qF '<!-- save: posix, cache=fadvise -->' "$hm" &&
   grep -qF '<!-- s3 (ckpt@127.0.0.1:7480), inflight=4, part=8M, no cache (object store) -->' "$work/figs3q/latency.svg" &&
   grep -qF '<!-- posix, QD=8, bs=16M, cache=fadvise -->' "$work/figs3q/latency.svg" &&
   ! grep -h -o '<!-- [^>]*s3 (ckpt[^>]* -->' "$work"/figs3q/*.svg | grep -qE 'cache=|buffered|O_DIRECT'; then
  ok "plot.py: queue depth x part size, the s3 panel's axis says requests in flight, its cache 'no cache (object store)'"
else bad "plot.py on s3 points with queue depth and cache swept: exit $code: $out / $(grep -o '<!-- [^>]*\(queue depth\|s3 (\)[^>]* -->' "$hm" 2>/dev/null | sort -u | head -8)"; fi

out="$("$PY" "$SRC/scripts/compare.py" "$S3R" "$work/s3-B.json" 2>&1)"; code=$?
if [ "$code" -eq 0 ] && grep -q '^\[1\] backend=posix block_size=8M$' <<< "$out" &&
   grep -q '^\[3\] s3 (ckpt@127.0.0.1:7480) part=8M$' <<< "$out" &&
   grep -q '^\[4\] s3 (ckpt@127.0.0.1:7480) part=16M$' <<< "$out" &&
   [ "$(grep -c '^  requests by kind: count and p50 latency in ms' <<< "$out")" -eq 2 ] &&
   grep -qE '^  phase +kind +A n +A p50 ms +B n +B p50 ms +B/A p50$' <<< "$out" &&
   grep -qE '^  save +part +10 +[0-9.]+ +10 +[0-9.]+ +2\.000$' <<< "$out" &&
   grep -qE '^  save +put +2 +[0-9.]+ +2 +[0-9.]+ +2\.000$' <<< "$out" &&
   grep -qE '^  restore +get +14 +[0-9.]+ +14 +[0-9.]+ +2\.000$' <<< "$out" &&
   grep -qE '^  restore +list +- +- +1 +3\.000 +-$' <<< "$out" &&
   [ "$(grep -c '^  restore retries: B 6; throttled: B 2 (summed over ranks and repetitions)$' <<< "$out")" -eq 2 ] &&
   ! grep -q '^  save .*retries' <<< "$out"; then
  ok "compare.py on s3 points: labels part=, requests by kind with counts and p50 ratios, retries and throttled"
else bad "compare.py s3-vs-posix.json s3-B.json: exit $code: $out"; fi
out="$("$PY" "$SRC/scripts/compare.py" "$S3R" "$work/s3-B.json" --json 2>&1)"; code=$?
check="$("$PY" -c 'import json, sys
d = json.loads(sys.stdin.read())
p = {q["index"]: q for q in d["points"]}
a, b = p[3]["save"]
assert "requests" not in p[1]["save"][0] and "requests" not in p[1]["save"][1], p[1]["save"]
assert {k: v["count"] for k, v in a["requests"].items()} == {"create_upload": 4, "part": 10, "complete": 4}, a
assert b["requests_p50_ratio"] == {"create_upload": 2.0, "part": 2.0, "complete": 2.0}, b
a, b = p[4]["restore"]
assert sorted(b["requests"]) == ["get", "head", "list"] and "list" not in b["requests_p50_ratio"], b
assert (a["retries"], a["throttled"], b["retries"], b["throttled"]) == (0, 0, 6, 2), (a, b)
assert "requests_p50_ratio" not in a and "requests.<kind>.count" in d["requests"], d["requests"]
print("json ok")' <<< "$out" 2>&1)"
if [ "$code" -eq 0 ] && [ "$check" = "json ok" ]; then
  ok "compare.py --json on s3 points: requests by kind, requests_p50_ratio where both have the kind, retries, throttled"
else bad "compare.py --json s3 points: exit $code: $check"; fi
out="$("$PY" "$SRC/scripts/compare.py" "$work/s3-N.json" "$work/s3-N.json" 2>&1)"; code=$?
if [ "$code" -eq 0 ] && grep -q '^\[1\] posix aggregated-rank bs=8388608 qd=8$' <<< "$out" &&
   grep -q '^\[3\] s3 (ckpt@127.0.0.1:7480) aggregated-rank part=8M inflight=8$' <<< "$out"; then
  ok "compare.py without params: 's3 (ckpt@127.0.0.1:7480) aggregated-rank part=8M inflight=8', posix 'bs=8388608 qd=8'"
else bad "compare.py on s3 points without params: exit $code: $out"; fi

# Requests of the wrong types (a list, a string, strings for numbers, a negative p50, numbers at
# a float's limits): passed over, no traceback.
out="$("$PY" "$SRC/scripts/plot.py" "$work/s3-H.json" --out "$work/figs3h" --format png 2>&1)"; code=$?
out2="$("$PY" "$SRC/scripts/compare.py" "$work/s3-H.json" "$work/s3-H.json" --json 2>&1)"; code2=$?
out3="$("$PY" "$SRC/scripts/compare.py" "$work/s3-H.json" "$work/s3-H.json" 2>&1)"; code3=$?
if [ "$code" -eq 0 ] && [ "$code2" -eq 0 ] && [ "$code3" -eq 0 ] &&
   ! grep -q Traceback <<< "$out$out2$out3" &&
   [ -s "$work/figs3h/requests.png" ] && [ -s "$work/figs3h/latency.png" ] &&
   "$PY" -c 'import json, sys; json.loads(sys.stdin.read())' <<< "$out2" &&
   grep -qE '^  restore +get +14 ' <<< "$out3" && ! grep -q -- '-1\.000' <<< "$out3"; then
  ok "plot.py and compare.py pass over requests of the wrong types (exit 0, no traceback)"
else bad "requests of the wrong types: plot.py exit $code: $out / compare.py exit $code2, $code3: $(head -c 600 <<< "$out2$out3")"; fi

# ---- 12. a characterization of an object store: tests/cli/data/char-s3.json, the report of a
# real `ckptbench characterize` of backend s3 (2 ranks, against scripts/ceph/local-rgw.sh's
# gateway, which this test cannot start; unchanged since). Its characterization has `store`
# {backend s3, options}; a probe's block_size is the part size, queue_depth the requests in
# flight per rank, every probe buffered (O_DIRECT does not apply), no stripes nor region_align.
# plot.py says so in the store's words; pooled with a file system's characterization
# (results/characterize-example.json), each in its own words, the shared axes naming both.
CS3="$SRC/tests/cli/data/char-s3.json"
schema_check "$CS3"
out="$("$PY" "$SRC/scripts/plot.py" "$CS3" --out "$work/figcs3" --format svg 2>&1)"; code=$?
missing=""
for fig in transfer_size queue_depth backends ceilings validation; do
  grep -q '<svg' "$work/figcs3/characterization_$fig.svg" 2> /dev/null || missing="$missing $fig"
done
if [ "$code" -eq 0 ] && [ -z "$missing" ] && ! grep -q Traceback <<< "$out"; then
  ok "plot.py on an s3 characterization: its five characterization figures"
else bad "plot.py on tests/cli/data/char-s3.json: exit $code, missing:$missing: $out"; fi
# char_svg_has DIR WHAT FIGURE:TEXT: the figure characterization_FIGURE.svg in DIR has TEXT (as
# the comment plot.py writes beside each text); else a FAIL naming WHAT, and svgok=0.
char_svg_has() {
  grep -qF -- "<!-- ${3#*:} -->" "$1/characterization_${3%%:*}.svg" ||
    { svgok=0; bad "$2, characterization_${3%%:*}.svg: no text '${3#*:}'"; }
}
svgok=1
for want in "transfer_size:s3, 8 in flight" \
            "transfer_size:part size (s3 multipart upload; log2 axis; K = KiB, M = MiB)" \
            "transfer_size:char-s3: characterization: bandwidth vs part size (s3)" \
            "transfer_size:knee 8M: smallest within 5 % of the best save" \
            "queue_depth:s3, 8M parts" "queue_depth:requests in flight per rank (s3; log2 axis)" \
            "queue_depth:char-s3: characterization: bandwidth vs requests in flight per rank (s3)" \
            "backends:s3 (object store)" "backends:object store requests" \
            "backends:save: mean, bars = 95 % interval (8M parts, 8 in flight per rank)" \
            "backends:char-s3: characterization: backend (s3, an object store)" \
            "ceilings:who wrote and read at once (the chosen data path, one object per rank)" \
            "ceilings:char-s3: characterization: ceilings" \
            "validation:recommended: aggregated-rank, s3, 8M parts, 1 in flight"; do
  char_svg_has "$work/figcs3" "s3 characterization" "$want"
done
fs_words="$(grep -h -o '<!-- [^>]* -->' "$work"/figcs3/characterization_*.svg |
            grep -E 'buffered|O_DIRECT|QD |bs |block size|queue depth|per transfer|one file|misalign')"
if [ -n "$fs_words" ]; then
  svgok=0; bad "s3 characterization figures in a file system's words: $(head -3 <<< "$fs_words")"
fi
[ $svgok -eq 1 ] && ok "plot.py: an s3 characterization in its words (part size, requests in flight, 's3, 8 in flight'; no buffered, O_DIRECT, QD, block size)"
out="$("$PY" "$SRC/scripts/plot.py" "$CS3" "$SRC/results/characterize-example.json" \
    --out "$work/figcs3p" --format svg 2>&1)"; code=$?
svgok=1
for want in "transfer_size:char-s3: s3, 8 in flight" "transfer_size:characterize-example: posix, O_DIRECT, QD 8" \
            "transfer_size:block size (bytes per transfer, log2 axis; K = KiB, M = MiB) / part size (s3 multipart upload)" \
            "queue_depth:char-s3: s3, 8M parts" "queue_depth:characterize-example: io_uring, O_DIRECT, bs 16M" \
            "queue_depth:queue depth (transfers in flight per rank, log2 axis) / requests in flight per rank (s3)" \
            "backends:char-s3: s3 (object store)" "backends:O_DIRECT: not applicable (object store)" \
            "backends:buffered" "backends:O_DIRECT" "backends:characterize-example: posix" \
            "ceilings:who wrote and read at once (the chosen data path, one file or object per rank)" \
            "validation:char-s3: recommended: aggregated-rank, s3, 8M parts, 1 in flight" \
            "validation:characterize-example: recommended: shared-file, posix, O_DIRECT, 16M, QD 8"; do
  char_svg_has "$work/figcs3p" "s3 and posix characterizations" "$want"
done
if [ "$code" -eq 0 ] && [ $svgok -eq 1 ] && ! grep -q Traceback <<< "$out"; then
  ok "plot.py pools an s3 and a posix characterization, each in its words, the shared axes naming both"
else bad "plot.py char-s3.json characterize-example.json: exit $code: $out"; fi

# ---- 10. the characterization report (run in the background since section 1): its lines
# and counts
wait "$char_pid"; char_pid=""
cat "$work/char.log"
if read -r p f < "$work/char.counts" 2> /dev/null; then passes=$((passes + p)); fails=$((fails + f))
else bad "the characterization section ended before its end (no counts)"; fi

summary plot/compare
