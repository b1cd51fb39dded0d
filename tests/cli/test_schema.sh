#!/usr/bin/env bash
# Real reports against docs/report.schema.json: a 2x2 sweep (block_size x backend, 2
# repetitions) on 4 ranks, a partial document caught while that sweep runs, a run failing at
# point 2, a lifecycle run, a --read-dir run, and a short `ckptbench characterize` (its final
# report and one caught while it searches). Each must validate; crafted broken documents must not
# (so the test can fail). Every field name in a real report must appear in docs/metrics.md and
# every field its tables document must occur in a real report (so the docs cannot drift either
# way), and the derived numbers must follow the formulas docs/metrics.md gives (for characterize:
# the probes' samples and intervals, the check run's measured times and ratios). Exit 77 = skipped.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SCHEMA="$SRC/docs/report.schema.json"
DOCS="$SRC/docs/metrics.md"
need_binary
need_backend io_uring  # the sweep crosses posix with io_uring (and metrics.md documents its fields)
if [ ! -f "$SCHEMA" ] || [ ! -f "$DOCS" ]; then echo "FAIL: $SCHEMA or $DOCS missing"; exit 1; fi
PY="$(python_with jsonschema)" ||
  { echo "skip: no python3 with the jsonschema module (apt install python3-jsonschema)"; exit 77; }

make_workdir schema
poller=""
cli_on_exit() { if [ -n "$poller" ]; then kill "$poller" 2> /dev/null; fi; }

# fadvise, not the default drop-caches: dropping the whole machine's page cache is slow and
# disturbs whatever else runs here.
cat > "$work/sweep.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "repetitions": 2, "cache": "fadvise",
 "sweep": {"block_size": ["64K", "256K"], "backend": ["posix", "io_uring"]}}
J

# run NAME CONFIG [FAULT]: 4 ranks, quiet; sets code and out, the report is $work/NAME.json.
run() {
  local name="$1" cfg="$2" fault="${3:-}"
  out="$(CKPT_FAULT_INJECT="$fault" timeout 180 "${MPI[@]}" -x CKPT_FAULT_INJECT -n 4 "$BIN" run \
        --config "$cfg" --target "$work/t-$name" --output "$work/$name.json" --quiet 2>&1)"
  code=$?
}

# poll_partial SRC DST KIND: in the background, polls the report path SRC while a run rewrites it
# and copies the first document of KIND to DST: "interrupted" (a run's partial document, status
# failed) or "running" (characterize's, with 3 points or more). Sets $poller.
poll_partial() {
  "$PY" - "$1" "$2" "$3" <<'EOF' &
import json, sys, time
src, dst, kind = sys.argv[1], sys.argv[2], sys.argv[3]
def wanted(d):
    if kind == "interrupted":
        return d.get("status") == "failed" and str(d.get("error", "")).startswith("interrupted")
    return d.get("status") == "running" and len(d.get("points", [])) >= 3
end = time.time() + 170
while time.time() < end:
    try:
        with open(src) as f:
            d = json.load(f)
        if wanted(d):
            with open(dst, "w") as f:
                json.dump(d, f)
            sys.exit(0)
    except (OSError, ValueError):
        pass
    time.sleep(0.02)
EOF
  poller=$!
}

# The partial document (rewritten after every repetition until the run ends) is caught while the
# sweep runs: poll the report path and keep the first "interrupted" version seen.
poll_partial "$work/sweep.json.out" "$work/partial.json" interrupted
out="$(timeout 180 "${MPI[@]}" -n 4 "$BIN" run --config "$work/sweep.json" --target "$work/t-sweep" \
       --output "$work/sweep.json.out" --quiet 2>&1)"
code=$?
mv -f "$work/sweep.json.out" "$work/sweep-report.json" 2> /dev/null
kill "$poller" 2> /dev/null; wait "$poller" 2> /dev/null; poller=""
if [ "$code" -eq 0 ]; then ok "sweep run exits 0"; else bad "sweep run: exit $code: $out"; fi

run failed "$work/sweep.json" "point=2,phase=save,rank=1"
if [ "$code" -eq 1 ]; then ok "failed run exits 1"; else bad "failed run: exit $code: $out"; fi

# The checkpoint lifecycle's fields: sync and async saves, 3 checkpoints keeping 1, compute beside
# the flush, a restore at another parallelism through mmap.
cat > "$work/life-config.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "repetitions": 1, "cache": "fadvise",
 "compute_s": 0.2, "checkpoints": 3, "keep_last": 1,
 "restore": {"parallelism": {"tp": 1}, "method": "mmap"},
 "sweep": {"save_mode": ["sync", "async"]}}
J
run life "$work/life-config.json"
if [ "$code" -eq 0 ]; then ok "lifecycle run exits 0"; else bad "lifecycle run: exit $code: $out"; fi

# --read-dir of a DCP-like directory saved by 2 ranks, read on 4: the loader rule does not apply
# (the report says why) and the files are read by size.
mkdir -p "$work/dcp"
head -c 300 /dev/zero > "$work/dcp/.metadata"
head -c 70000 /dev/zero > "$work/dcp/__0_0.distcp"
head -c 50000 /dev/zero > "$work/dcp/__1_0.distcp"
echo '{"model": "tiny", "repetitions": 1, "cache": "fadvise"}' > "$work/readdir-config.json"
out="$(timeout 180 "${MPI[@]}" -n 4 "$BIN" run --config "$work/readdir-config.json" --phases restore \
       --read-dir "$work/dcp" --output "$work/readdir.json" --quiet 2>&1)"; code=$?
if [ "$code" -eq 0 ]; then ok "--read-dir run exits 0"; else bad "--read-dir run: exit $code: $out"; fi

# verify "after" (source shard): restore.verify_after_s.
cat > "$work/after-config.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard", "source": "shard",
 "verify": "after", "repetitions": 1, "cache": "fadvise"}
J
run after "$work/after-config.json"
if [ "$code" -eq 0 ]; then ok "verify-after run exits 0"; else bad "verify-after run: exit $code: $out"; fi

# ckptbench characterize: a short search (8 MiB probes, 2-3 repetitions each) and the check run
# of its recommendation; its report adds `characterization` and points with `probe`. The report
# is rewritten after every probe while the search runs (status running): one is caught as above.
# The budget (1 minute) is an upper bound, not the time it takes (about 15 s idle): at 0.3 the
# whole suite's load beside it spent the budget before the metadata and model stages twice in
# clean-clone rehearsals, and the checks below need the model.
poll_partial "$work/characterize.json" "$work/char-partial.json" running
out="$(timeout 300 "${MPI[@]}" -n 4 "$BIN" characterize --target "$work/t-char" --budget 1 \
       --probe-size 8M --min-reps 2 --max-reps 3 --ci-width 0.5 -q -o "$work/characterize.json" 2>&1)"
code=$?
kill "$poller" 2> /dev/null; wait "$poller" 2> /dev/null; poller=""
if [ "$code" -eq 0 ]; then ok "characterize run exits 0"; else bad "characterize run: exit $code: $out"; fi

# Separate jobs: a save job, then a restore job --from it that removes the saved run
# (--remove-saved: saved_run_removed).
echo '{"model": "tiny", "repetitions": 1, "cache": "fadvise"}' > "$work/phases-config.json"
"${MPI[@]}" -n 4 "$BIN" run --config "$work/phases-config.json" --phases save --target "$work/t-phases" \
  --output "$work/phases-save.json" --quiet > /dev/null 2>&1
rd="$(jq_py "$work/phases-save.json" "d['environment']['run_dir']" 2> /dev/null)"
out="$(timeout 180 "${MPI[@]}" -n 4 "$BIN" run --phases restore --from "$rd" --remove-saved \
       --output "$work/phases-restore.json" --quiet 2>&1)"; code=$?
if [ "$code" -eq 0 ] && [ -n "$rd" ] && [ ! -e "$rd" ]; then ok "restore job --remove-saved exits 0, saved run gone"
else bad "restore job --remove-saved: exit $code, '$rd' $( [ -e "$rd" ] && echo still there): $out"; fi

# Reports of the s3 backend against a real gateway (tests/cli/test_s3_*.sh makes such reports;
# these were recorded with it): a sweep of posix and s3, and a characterization of the store.
docs=("$work/sweep-report.json" "$work/failed.json" "$work/life.json" "$work/readdir.json"
      "$work/after.json" "$work/characterize.json" "$work/phases-save.json"
      "$work/phases-restore.json" "$SRC/tests/cli/data/s3-vs-posix.json"
      "$SRC/tests/cli/data/char-s3.json")
[ -f "$work/char-partial.json" ] && docs+=("$work/char-partial.json")
[ -f "$work/partial.json" ] && docs+=("$work/partial.json")

"$PY" - "$SCHEMA" "$DOCS" "${docs[@]}" <<'EOF'
import copy, json, math, re, statistics, sys
import jsonschema

schema_path, docs_path, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
fails = passes = 0
def ok(m):
    global passes; passes += 1; print("ok   " + m)
def bad(m):
    global fails; fails += 1; print("FAIL " + m)

schema = json.load(open(schema_path))
jsonschema.Draft7Validator.check_schema(schema)
V = jsonschema.Draft7Validator(schema)
def errors(doc):
    return ["/".join(map(str, e.absolute_path)) + ": " + e.message[:160]
            for e in sorted(V.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]

docs = {}
for p in paths:
    try:
        docs[p.rsplit("/", 1)[-1]] = json.load(open(p))
    except (OSError, ValueError) as e:
        bad(f"{p}: no readable report: {e}")
for name, d in docs.items():
    errs = errors(d)
    if errs: bad(f"{name} violates the schema: " + "; ".join(errs[:8]))
    else: ok(f"{name} validates against docs/report.schema.json")

sweep = docs.get("sweep-report.json")
failed = docs.get("failed.json")
partial = docs.get("partial.json")
char = docs.get("characterize.json")
char_partial = docs.get("char-partial.json")

# --- What each run must contain. ---
if sweep:
    pts = sweep.get("points", [])
    want = {(b, k) for b in ("64K", "256K") for k in ("posix", "io_uring")}
    got = {(p["params"].get("block_size"), p["params"].get("backend")) for p in pts}
    if sweep.get("status") == "ok" and len(pts) == 4 and got == want and \
       all(len(p["repetitions"]) == 2 and p["status"] == "ok" for p in pts):
        ok("sweep: 4 points x 2 repetitions, status ok")
    else:
        bad(f"sweep: status {sweep.get('status')}, params {sorted(got)}")
if failed:
    fpts = failed.get("points", [])
    if failed.get("status") == "failed" and failed.get("points_completed") == 1 and \
       [p.get("status") for p in fpts] == ["ok", "failed"] and \
       "injected fault" in fpts[1].get("error", "") and \
       "injected fault" in failed.get("error", "") and "finished_at" in failed:
        ok("failed run: status failed, 1 finished point and the failed one with its error, "
           "finished_at")
    else:
        bad("failed run document: " + json.dumps({k: failed.get(k) for k in
            ("status", "error", "points_completed")}))
if partial:
    last = partial["points"][-1] if partial.get("points") else {}
    if last.get("status") == "incomplete" and "finished_at" not in partial and \
       partial.get("points_completed") == len(partial["points"]) - 1:
        ok("partial document: last point incomplete, no finished_at, points_completed right")
    else:
        bad(f"partial document: last point {last.get('status')}, "
            f"points_completed {partial.get('points_completed')} of {len(partial.get('points', []))}")
else:
    print("note: no partial document was caught while the sweep ran (timing); not validated")
if char_partial:
    c = char_partial.get("characterization", {})
    if char_partial.get("status") == "running" and "finished_at" not in char_partial and \
       "error" in char_partial and c.get("probes") and "findings" not in c and \
       len(char_partial["points"]) == sum(1 for p in c["probes"] if p["status"] == "ok"):
        ok("characterize's document during the search: status running, error, no finished_at, "
           "the probes so far (a point each), no findings yet")
    else:
        bad(f"characterize's document during the search: status {char_partial.get('status')}, "
            f"keys {sorted(c)}")
else:
    print("note: no document was caught while characterize searched (timing); not validated")

# --- The schema must reject broken documents. ---
if sweep:
    def broken(desc, mutate):
        d = copy.deepcopy(sweep)
        mutate(d)
        if errors(d): ok(f"schema rejects {desc}")
        else: bad(f"schema accepts {desc}")
    rep = lambda d: d["points"][0]["repetitions"][0]
    broken("bandwidth_GiBps as a string",
           lambda d: rep(d)["save"].__setitem__("bandwidth_GiBps", "1.5"))
    broken("a missing schema_version", lambda d: d.pop("schema_version"))
    broken("a missing restore latency p99_us", lambda d: rep(d)["restore"]["latency"].pop("p99_us"))
    broken("a negative elapsed_s", lambda d: rep(d)["restore"].__setitem__("elapsed_s", -0.1))
    broken("an unknown cache method", lambda d: rep(d)["cache"].__setitem__("method", "hope"))
    broken("an unknown sync policy", lambda d: rep(d)["save"].__setitem__("sync", "sometimes"))
    broken("an unknown status", lambda d: d.__setitem__("status", "done"))
    broken("status failed without error", lambda d: d.__setitem__("status", "failed"))
    broken("an ok point without summary", lambda d: d["points"][1].pop("summary"))
    broken("resident_fraction above 1", lambda d: rep(d)["cache"].__setitem__("resident_fraction", 1.5))
if char:
    def cbroken(desc, mutate):
        d = copy.deepcopy(char)
        mutate(d)
        if errors(d): ok(f"schema rejects a characterization with {desc}")
        else: bad(f"schema accepts a characterization with {desc}")
    ch = lambda d: d["characterization"]
    okp = lambda d: next(p for p in ch(d)["probes"] if p["status"] == "ok" and p["save_GiBps"]["n"] > 1)
    cbroken("no findings", lambda d: ch(d).pop("findings"))
    cbroken("an ok probe without save_GiBps", lambda d: okp(d).pop("save_GiBps"))
    cbroken("an unknown probe status", lambda d: okp(d).__setitem__("status", "done"))
    cbroken("an unknown stage", lambda d: okp(d).__setitem__("stage", "warmup"))
    cbroken("members 'some'", lambda d: okp(d).__setitem__("members", "some"))
    cbroken("an interval bound beside a null half_width",
            lambda d: okp(d)["save_GiBps"].update(half_width=None))
    cbroken("the model without sync_s_per_file", lambda d: ch(d)["model"].pop("sync_s_per_file"))
    cbroken("a model ceiling of 0", lambda d: ch(d)["model"]["save"].__setitem__("rank_GiBps", 0))
    cbroken("model version 2", lambda d: ch(d)["model"].__setitem__("version", 2))
    cbroken("model and model_missing", lambda d: ch(d).__setitem__("model_missing", "x"))
    cbroken("a validation status 'maybe'",
            lambda d: ch(d)["recommendation"]["validation"].__setitem__("status", "maybe"))
    cbroken("ceilings without nodes", lambda d: ch(d)["findings"]["ceilings"].pop("nodes"))
    cbroken("a point probe without stage", lambda d: d["points"][0]["probe"].pop("stage"))
    cbroken("status running beside finished_at", lambda d: d.__setitem__("status", "running"))

# --- Every field name of a real report appears in docs/metrics.md. ---
# Names count when they appear inside a `code span` of the docs.
text = open(docs_path).read()
documented = set()
for span in re.findall(r"`([^`\n]+)`", text):
    documented.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span))
# Maps whose keys are data, not field names (free-form or keyed by host/backend/kind/bucket).
FREE = {"config", "params", "settings.backend", "environment.ranks_per_node",
        "environment.backends", "plan.file_size_histogram", "plan.state_kind_bytes",
        "plan.transfers.transfer_size_histogram", "characterization.stage_notes",
        "characterization.model.layout_factor", "characterization.recommendation.config",
        "characterization.store.options"}
missing = {}
def walk(x, path):
    if isinstance(x, dict):
        for k, v in x.items():
            p = f"{path}.{k}" if path else k
            if k not in documented:
                missing.setdefault(k, p)
            # free-form maps: the key itself is documented, its children are not walked
            if p in FREE or re.sub(r"^points\[\]\.", "", p) in FREE: continue
            walk(v, p)
    elif isinstance(x, list):
        for v in x: walk(v, path + "[]")
for d in docs.values(): walk(d, "")
if missing: bad("fields not documented in docs/metrics.md: " +
                ", ".join(f"{k} ({p})" for k, p in sorted(missing.items())))
else: ok("every field name of the real reports is documented in docs/metrics.md")

# --- And the other way: every field a metrics.md table documents occurs in a real report. ---
# (A documented field that is never written is a promise the tool does not keep.) Fields that
# only exist in situations these reports do not create are listed with the reason.
CONDITIONAL = {"timed_out_point": "only when timeout_s stops a run",
               "run_dir_left": "only when a failed run cannot remove its run directory",
               "output_errors": "only when --dlio-summary or --csv cannot be written",
               "per_node": "only with more than one node",
               "model_missing": "only when characterize lacks a measurement the model needs",
               "write_error": "only when characterize cannot write the recommended config"}
present = set()
def keys_of(x):
    if isinstance(x, dict):
        for k, v in x.items():
            present.add(k)
            keys_of(v)
    elif isinstance(x, list):
        for v in x: keys_of(v)
for d in docs.values(): keys_of(d)
table_fields = set()
for first in re.findall(r"^\| `([^`]+)`", text, re.M):
    table_fields.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", first.split(" ")[0]))
never = sorted(f for f in table_fields - present if f not in CONDITIONAL)
if never: bad("documented in docs/metrics.md but in none of the real reports: " + ", ".join(never))
else: ok(f"all {len(table_fields)} fields of the metrics.md tables occur in the real reports "
         f"(conditional, not checked: {', '.join(sorted(CONDITIONAL))})")

# --- The numbers follow the formulas docs/metrics.md states. ---
def close(a, b, rel=1e-9, abs_=1e-12): return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
problems = []
for name, d in docs.items():
    for p in d.get("points", []):
        plan = p["plan"]
        for r in p["repetitions"]:
            where = f"{name} point {p['index']} rep {r['repetition']}"
            def chk(cond, what):
                if not cond: problems.append(f"{where}: {what}")
            for ph in [x for x in ("save", "restore") if x in r]:  # one phase per job
                m = r[ph]
                pchk = lambda cond, what: chk(cond, f"{ph}: {what}")
                el = m["elapsed_s"]
                pchk(el > 0, "elapsed_s > 0")
                pchk(close(el, m["rank_time_s"]["max"]) and close(el, max(m["rank_times_s"])),
                    "elapsed_s = rank_time_s.max = max(rank_times_s)")
                ranks = p.get("probe", {}).get("ranks", d["environment"]["ranks"])
                pchk(len(m["rank_times_s"]) == ranks, "one rank_times_s per rank (of the probe)")
                pchk(close(m["bandwidth_GiBps"], m["bytes"] / el / 2**30, 1e-6),
                    "bandwidth_GiBps = bytes / elapsed_s / 2^30")
                pchk(close(m["iops"], m["ops"] / el, 1e-6), "iops = ops / elapsed_s")
                pchk(close(m["metadata_ops_per_s"], m["metadata_ops"] / el, 1e-6),
                    "metadata_ops_per_s = metadata_ops / elapsed_s")
                if ph == "restore" and "restore" in plan:  # resharded: exactly the needed ranges
                    pchk(m["bytes"] == plan["restore"]["needed_bytes"] == m["needed_bytes"],
                         f"bytes {m['bytes']} = plan.restore.needed_bytes")
                    pchk(m["files"] == plan["restore"]["files"], "files = plan.restore.files")
                    pchk(m["rank_bytes"] == [x["bytes"] for x in plan["restore"]["ranks"]],
                         "rank_bytes = plan.restore.ranks[].bytes")
                else:
                    pchk(m["bytes"] == plan["payload_bytes"] + plan["padding_bytes"] + plan["index_bytes"],
                        f"bytes {m['bytes']} = payload + padding + index bytes of the plan")
                    pchk(m["files"] == plan["files"], "files = plan.files")
                lat = m["latency"]
                pchk(lat["count"] == m["ops"], "latency.count = ops")
                pchk(lat["p50_us"] <= lat["p90_us"] <= lat["p99_us"] <= lat["p999_us"] <= lat["max_us"],
                    "p50 <= p90 <= p99 <= p999 <= max")
                for s in ("rank_time_s",) + tuple("steps." + k for k in m["steps"]):
                    v = m["steps"][s[6:]] if s.startswith("steps.") else m[s]
                    pchk(v["min"] <= v["mean"] * (1 + 1e-9) + 1e-12 and v["mean"] <= v["max"] * (1 + 1e-9) + 1e-12,
                        f"{s}: min <= mean <= max")
                pchk(m["straggler_ratio"] >= 1 - 1e-9, "straggler_ratio >= 1")
                # An object store's phase (its `requests`) counts its metadata requests instead:
                # HEAD per object read, CreateMultipartUpload and CompleteMultipartUpload per upload.
                if "requests" in m:
                    q = m["requests"]
                    pchk(m["metadata_ops"] == sum(q.get(k, {}).get("count", 0)
                                                  for k in ("head", "create_upload", "complete")),
                         "object store: metadata_ops = head + create_upload + complete")
                else:
                    pchk(m["metadata_ops"] >= 2 * m["rank_file_handles"], "metadata_ops >= opens + closes")
            c = r.get("cache") or {}  # none in a save job; s3's: method "not applicable"
            if c.get("file_bytes_sampled"):
                chk(close(c["resident_fraction"], c["resident_bytes_sampled"] / c["file_bytes_sampled"]),
                    "resident_fraction = resident_bytes_sampled / file_bytes_sampled")
            if r.get("verified") and "restore" in plan:
                chk(r["bytes_verified"] == plan["restore"]["needed_bytes"],
                    "bytes_verified = plan.restore.needed_bytes")
            elif r.get("verified"):
                chk(r["bytes_verified"] == plan["payload_bytes"] + plan["index_bytes"],
                    "bytes_verified = plan.payload_bytes + plan.index_bytes")
            l = r.get("lifecycle")
            prev_wait = 0.0  # the previous checkpoint's flush_wait_s (mean over ranks)
            for c in (l or {}).get("checkpoints", []):
                if l["save_mode"] == "sync":
                    chk(c["blocked_s"] == c["durable_s"], "sync: blocked_s = durable_s")
                else:
                    chk(close(c["blocked_s"]["mean"],
                              c["snapshot_s"]["mean"] + prev_wait, 1e-6, 1e-9),
                        "async: blocked_s = snapshot_s + the previous checkpoint's flush_wait_s "
                        "(means over ranks)")
                    chk(c["snapshot_s"]["max"] <= c["durable_s"]["max"], "snapshot_s <= durable_s")
                    prev_wait = c["flush_wait_s"]["mean"]
            if l and l["save_mode"] == "async" and l.get("checkpoints"):
                chk(close(l["end_wait_s"]["mean"], l["checkpoints"][-1]["flush_wait_s"]["mean"],
                          1e-6, 1e-9), "async: end_wait_s = the last checkpoint's flush_wait_s")
        if p["status"] == "ok":
            for ph in [x for x in ("save", "restore") if x in p["repetitions"][0]]:
                bws = sorted(r[ph]["bandwidth_GiBps"] for r in p["repetitions"])
                s = p["summary"][ph]["bandwidth_GiBps"]
                med = (bws[(len(bws) - 1) // 2] + bws[len(bws) // 2]) / 2
                if not (close(s["min"], bws[0]) and close(s["max"], bws[-1]) and close(s["median"], med)):
                    problems.append(f"{name} point {p['index']} summary.{ph}: not min/median/max of repetitions")
# characterization: the probes' samples are their points' repetitions, the stats follow from the
# samples (t quantiles of Student's t, two-sided 95 %), the check run is the validate point.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
if char:
    c = char["characterization"]
    pts = {p["index"]: p for p in char["points"]}
    for pr in c["probes"]:
        if pr["status"] != "ok":
            continue
        where = f"characterize probe {pr['stage']} point {pr['point']}"
        pt = pts.get(pr["point"])
        want = {"stage": pr["stage"], "members": pr["members"], "ranks": pr["ranks"]}
        if pr.get("small"):
            want["small"] = True
        if pt is None or pt.get("probe") != want:
            problems.append(f"{where}: no point with its probe")
            continue
        for ph in ("save", "restore"):
            st = pr[f"{ph}_GiBps"]
            xs = st["samples"]
            if xs != [r[ph]["bandwidth_GiBps"] for r in pt["repetitions"]]:
                problems.append(f"{where}: {ph} samples != the point's repetitions' bandwidth_GiBps")
            n = len(xs)
            mean = sum(xs) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
            if not (st["n"] == n and close(st["mean"], mean, 1e-9) and close(st["sd"], sd, 1e-9, 1e-12)):
                problems.append(f"{where}: {ph} n/mean/sd do not follow from the samples")
            if n > 1 and n <= len(T975) + 1:
                hw = T975[n - 2] * sd / math.sqrt(n)
                if not (close(st["half_width"], hw, 1e-9, 1e-12) and close(st["low"], max(0.0, mean - hw), 1e-9, 1e-12)
                        and close(st["high"], mean + hw, 1e-9, 1e-12)):
                    problems.append(f"{where}: {ph} half_width/low/high != t * sd / sqrt(n)")
            elif n == 1 and st["half_width"] is not None:
                problems.append(f"{where}: one sample with an interval")
    v = c.get("recommendation", {}).get("validation")
    if v and v.get("status") == "ok":
        vp = pts.get(v["point"], {})
        if vp.get("probe", {}).get("stage") != "validate":
            problems.append("characterize validation: its point is not stage validate")
        else:
            for ph in ("save", "restore"):
                med = statistics.median(r[ph]["elapsed_s"] for r in vp["repetitions"])
                if not close(v["measured"][f"{ph}_s"], med, 1e-9):
                    problems.append(f"characterize validation: measured.{ph}_s != median elapsed_s")
                pr_s = v["predicted"][f"{ph}_s"]
                if pr_s != c["recommendation"]["prediction"][f"{ph}_s"] or \
                   not close(v[f"{ph}_ratio"], med / pr_s, 1e-9):
                    problems.append(f"characterize validation: {ph}_ratio != measured / predicted")
                rf = v.get("reference")
                if rf is None:
                    problems.append("characterize validation: no reference probe")
                    continue
                rp, sp = pts.get(rf["point"], {}), pts.get(rf["search_point"], {})
                if rp.get("probe", {}).get("reference") is not True or \
                   len(rp.get("repetitions", [])) != len(vp["repetitions"]):
                    problems.append("characterize validation: the reference point is not one run per check repetition")
                    continue
                now = statistics.median(r[ph]["elapsed_s"] for r in rp["repetitions"])
                then = statistics.median(r[ph]["elapsed_s"] for r in sp.get("repetitions", []))
                if not (close(rf["now"][f"{ph}_s"], now, 1e-9) and close(rf["search"][f"{ph}_s"], then, 1e-9)
                        and close(rf[f"{ph}_drift"], now / then, 1e-9)
                        and close(rf[f"{ph}_ratio"], med / (pr_s * now / then), 1e-9)):
                    problems.append(f"characterize validation: reference {ph} != medians / drift formula")
    else:
        problems.append(f"characterize: no ok validation ({v})")
if problems: bad("formulas: " + "; ".join(problems[:12]) + (f" (+{len(problems) - 12} more)" if len(problems) > 12 else ""))
else: ok("derived numbers follow the formulas in docs/metrics.md")

print(f"python checks: {passes} passed, {fails} failed")
sys.exit(1 if fails else 0)
EOF
pyrc=$?
if [ "$pyrc" -eq 0 ]; then ok "schema, docs and formula checks"; else bad "schema, docs and formula checks (above)"; fi
summary
