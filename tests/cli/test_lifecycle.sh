#!/usr/bin/env bash
# The checkpoint lifecycle from the command line: `plan` lists, before any I/O, what each
# restoring rank reads of a checkpoint restored at another parallelism (text and --json agree,
# the per-rank numbers add up); the lifecycle configs under configs/ run on 4 ranks (scaled down)
# and their reports say what the issue promises: blocked below durable for async, deletions and
# `latest` for a cadence, needed bytes read and verified for a resharded restore; a bad lifecycle
# value is refused with exit 2 before any file exists. Exit 77 = skipped.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
make_workdir lifecycle

# 1. plan: the resharded restore's reads per restoring rank.
cfg="$SRC/configs/reshard-tp4pp2-to-tp2.json"
if out="$("$BIN" plan --config "$cfg" --world 4 2>&1)"; then
  if grep -q '^  restore at .*"tp":2.*saved files read' <<< "$out" &&
    [ "$(grep -c '^    rank [0-3] (virtual' <<< "$out")" -eq 4 ]; then
    ok "plan prints the restore and one line per restoring rank"
  else bad "plan output lacks the restore: $out"; fi
else bad "plan failed: $out"; fi
"$BIN" plan --config "$cfg" --world 4 --json > "$work/plan.json" 2>&1 || bad "plan --json failed"
if "$PY3" - "$work/plan.json" <<'PY'; then ok "plan --json: per-rank bytes and reads add up to the totals"; else bad "plan --json restore totals"; fi
import json, sys
r = json.load(open(sys.argv[1]))["points"][0]["restore"]
assert r["parallelism"]["tp"] == 2 and r["parallelism"]["pp"] == 1, r["parallelism"]
assert sum(x["bytes"] for x in r["ranks"]) == r["needed_bytes"] > 0
assert sum(x["reads"] for x in r["ranks"]) == r["reads"] > 0
assert [x["vranks"] for x in r["ranks"]] == [[0], [1], [2], [3]]
PY

# 2. The lifecycle configs run (tiny scale, one repetition) and report what they promise.
run_cfg() {  # NAME CONFIG: sets code, out; report in $work/NAME.json
  out="$(timeout 300 "${MPI[@]}" -n 4 "$BIN" run --config "$2" --set 'model.scale="1/2048"' \
    --set compute_s=0.3 --repetitions 1 --target "$work/t-$1" --output "$work/$1.json" --quiet 2>&1)"
  code=$?
}
for name in lifecycle-async lifecycle-cadence reshard-tp4pp2-to-tp2 restore-weights-only; do
  c="$SRC/configs/$name.json"
  if [ "$name" = lifecycle-async ] && ! backend_built io_uring; then
    skip_unbuilt io_uring "$name"; continue
  fi
  run_cfg "$name" "$c"
  if [ "$code" -ne 0 ]; then bad "$name: exit $code: $out"; continue; fi
  if "$PY3" - "$work/$name.json" "$name" <<'PY'; then ok "$name: report holds"; else bad "$name: report"; fi
import json, sys
d, name = json.load(open(sys.argv[1])), sys.argv[2]
assert d["status"] == "ok", d.get("error")
for p in d["points"]:
    for rep in p["repetitions"]:
        assert rep["verified"] and rep["bytes_verified"] > 0
        if name == "lifecycle-async":
            l = rep["lifecycle"]
            assert len(l["checkpoints"]) == 3
            for c in l["checkpoints"]:
                if l["save_mode"] == "async":
                    assert c["snapshot_s"]["max"] < c["durable_s"]["max"], c
                else:
                    assert c["blocked_s"] == c["durable_s"], c
        if name == "lifecycle-cadence":
            l = rep["lifecycle"]
            assert l["latest"] == "global_step500" and l["retention"]["deleted"] == 3
            assert [c.get("deleted", {}).get("dir") for c in l["checkpoints"]] == \
                [None, None, "global_step100", "global_step200", "global_step300"]
        if name in ("reshard-tp4pp2-to-tp2", "restore-weights-only"):
            need = p["plan"]["restore"]["needed_bytes"]
            assert rep["restore"]["bytes"] == need == rep["bytes_verified"], (need, rep["restore"]["bytes"])
PY
done

# The reports against docs/report.schema.json.
if SPY="$(python_with jsonschema)"; then
  for name in lifecycle-async lifecycle-cadence reshard-tp4pp2-to-tp2 restore-weights-only; do
    [ -f "$work/$name.json" ] || continue
    if out="$("$SPY" - "$SRC/docs/report.schema.json" "$work/$name.json" 2>&1 <<'PY'
import json, sys, jsonschema
v = jsonschema.Draft7Validator(json.load(open(sys.argv[1])))
errs = [("/".join(map(str, e.absolute_path)) + ": " + e.message[:160])
        for e in v.iter_errors(json.load(open(sys.argv[2])))]
print("; ".join(errs[:5]))
sys.exit(1 if errs else 0)
PY
)"; then ok "$name report validates against the schema"; else bad "$name: $out"; fi
  done
else echo "skip schema validation: no python3 with jsonschema"; fi

# The lifecycle figure (scripts/plot.py) from the async report.
if PY="$(python_with matplotlib)" && [ -f "$work/lifecycle-async.json" ]; then
  if "$PY" "$SRC/scripts/plot.py" "$work/lifecycle-async.json" --out "$work/fig" > /dev/null 2>&1 &&
    [ -s "$work/fig/lifecycle.png" ]; then ok "plot.py draws lifecycle.png"
  else bad "plot.py did not draw lifecycle.png"; fi
else echo "skip lifecycle figure: no matplotlib or no async report"; fi

# 3. Bad lifecycle values: exit 2, the key named, no file made.
bad_value() {  # JSON-FRAGMENT NEEDLE
  echo "{\"model\": \"tiny\", $1}" > "$work/bad.json"
  out="$(timeout 60 "${MPI[@]}" -n 4 "$BIN" run --config "$work/bad.json" --target "$work/t-bad" \
    --output "$work/bad-report.json" --quiet 2>&1)"
  code=$?
  if [ "$code" -eq 2 ] && grep -q -- "$2" <<< "$out" && [ ! -e "$work/t-bad" ]; then
    ok "refused: $1"
  else bad "not refused with exit 2 naming $2 (exit $code, target $(ls "$work" | grep -c t-bad)): $out"; fi
}
bad_value '"save_mode": "later"' "save_mode"
bad_value '"keep_last": -1' "keep_last"
bad_value '"restore": {"parallelism": {"tp": 3}}' "restore.parallelism"
bad_value '"restore": {"weights_only": "yes"}' "restore.weights_only"
bad_value '"compute_kind": "gpu"' "compute_kind"

summary lifecycle
