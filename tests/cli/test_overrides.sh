#!/usr/bin/env bash
# Command-line overrides (issue 17): --set and --repetitions on run, plan and validate; --config
# accepted by validate; the report records what was overridden; backends/models --json.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
make_workdir overrides
cat > "$work/c.json" << 'J'
{"model": {"name": "tiny", "scale": 0.25}, "parallelism": {"tp": 2, "dp": "auto"},
 "layout": "aggregated-rank", "backend": "posix", "repetitions": 2,
 "sweep": {"block_size": ["64K", "1M"], "queue_depth": [1, 4]},
 "exclude": [{"block_size": "64K", "queue_depth": 4}]}
J

# 1. validate: positional and --config, overrides change the point and repetition counts.
out="$("$BIN" validate "$work/c.json" 2>&1)"
grep -q "valid (3 points x 2 repetitions)" <<< "$out" && ok "validate FILE" || bad "validate FILE: $out"
out="$("$BIN" validate --config "$work/c.json" --set block_size=1M -r 3 2>&1)"
grep -q "valid (2 points x 3 repetitions)" <<< "$out" && grep -q "note: sweep axis 'block_size'" <<< "$out" &&
  ok "validate --config with --set and -r (axis removed, noted)" || bad "validate --set: $out"
out="$("$BIN" validate "$work/c.json" --config "$work/c.json" 2>&1)"; code=$?
[ $code = 2 ] && grep -q "excludes" <<< "$out" && ok "validate FILE and --config together refused" || bad "both: exit $code: $out"
out="$("$BIN" validate "$work/c.json" --set blocksize=1M 2>&1)"; code=$?
[ $code = 2 ] && grep -q "\-\-set 'blocksize=1M': unknown key 'blocksize'" <<< "$out" && ok "misspelt --set key: exit 2 naming it" || bad "bad key: exit $code: $out"
out="$("$BIN" validate "$work/c.json" --set 'sweep.queue_depth=[1,' 2>&1)"; code=$?
[ $code = 2 ] && grep -q "not valid JSON" <<< "$out" && ok "broken JSON list in --set: exit 2" || bad "bad list: exit $code: $out"

# 2. plan: the overrides reach the plan.
out="$("$BIN" plan -c "$work/c.json" --set 'sweep.block_size=["4M"]' --set queue_depth=2 --world 4 --json 2> /dev/null)"
n="$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(len(d["points"]), d["points"][0]["block_size"])' <<< "$out" 2>&1)"
[ "$n" = "1 4194304" ] && ok "plan --set: one point, block 4M" || bad "plan --set: $n"

# 3. run: the report records the overrides as given and the config shows their result.
timeout 300 "${MPI[@]}" -n 2 "$BIN" run -c "$work/c.json" --set 'sweep.block_size=["256K"]' \
  --set queue_depth=2 --repetitions 1 --target "$work/t" -o "$work/r.json" --quiet > "$work/l" 2>&1; code=$?
chk="$(python3 - "$work/r.json" << 'P' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
o = d["overrides"]
assert o["set"] == ['sweep.block_size=["256K"]', "queue_depth=2", "repetitions=1"], o
assert any("queue_depth" in n for n in o["notes"]), o
assert d["config"]["repetitions"] == 1, d["config"]["repetitions"]
assert len(d["points"]) == 1 and len(d["points"][0]["repetitions"]) == 1
assert d["points"][0]["config"]["block_size"] == 262144
assert d["points"][0]["config"]["queue_depth"] == 2
print("good")
P
)"
[ $code = 0 ] && [ "$chk" = good ] && ok "run --set/--repetitions recorded in the report" || bad "run overrides: exit $code, $chk, $(tail -3 "$work/l")"

# 4. Machine-readable listings.
out="$("$BIN" backends --json)"
python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); n={b["name"] for b in d}; assert {"posix","io_uring","mpiio","hdf5"} <= n, n; assert all(set(b) >= {"name","description","status","usable"} for b in d)' <<< "$out" &&
  ok "backends --json" || bad "backends --json: $out"
out="$("$BIN" models --json)"
python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert any(m["name"]=="llama2-7b" for m in d)' <<< "$out" &&
  ok "models --json" || bad "models --json"
summary overrides
