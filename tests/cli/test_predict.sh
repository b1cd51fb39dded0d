#!/usr/bin/env bash
# `ckptbench plan --predict REPORT`: the prediction model of a characterization report
# (characterization.model, docs/characterize.md "The prediction model") applied to every sweep
# point of the example configs; JSON and text output; a missing, foreign or broken report exits 2
# with one line naming the file and the key.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
PY="$(python_with json)" || { echo "skip: no python3"; exit 77; }
make_workdir predict

# A crafted report: measured on one node of 4 ranks with io_uring, O_DIRECT, 1 MiB, depth 4.
cat > "$work/report.json" << 'J'
{"schema_version": 1, "characterization": {"model": {
  "version": 1,
  "measured_on": {"ranks": 4, "nodes": 1, "ranks_per_node": 4, "fs_type": "ext4",
                  "target": "/var/tmp/x", "commit": "abc1234"},
  "settings": {"backend": "io_uring", "block_size": 1048576, "queue_depth": 4, "direct": true,
               "transfer": "stream"},
  "save": {"rank_GiBps": 1.5, "node_GiBps": 2, "aggregate_GiBps": 1.8, "aggregate_saturated": false},
  "restore": {"rank_GiBps": 2.5, "node_GiBps": 4, "aggregate_GiBps": 4, "aggregate_saturated": true},
  "data_path": [
    {"backend": "io_uring", "direct": true, "block_size": 65536, "queue_depth": 1,
     "save_GiBps": 0.5, "restore_GiBps": 1},
    {"backend": "io_uring", "direct": true, "block_size": 1048576, "queue_depth": 4,
     "save_GiBps": 2, "restore_GiBps": 4},
    {"backend": "io_uring", "direct": true, "block_size": 4194304, "queue_depth": 16,
     "save_GiBps": 4, "restore_GiBps": 6},
    {"backend": "posix", "direct": true, "block_size": 1048576, "queue_depth": 1,
     "save_GiBps": 1, "restore_GiBps": 2}],
  "layout_factor": {"shared-file": {"save": 0.5, "restore": 0.8}},
  "metadata": {"create_per_s": 1000, "open_per_s": 5000, "unlink_per_s": 2000},
  "sync_s_per_file": 0.002}}}
J

# check FILE.json: every point's prediction adds up and its data time is the largest bound, from
# the bytes it reports and the model above; prints "good" or what is wrong.
check='
import json, sys
G = 2 ** 30
d = json.load(open(sys.argv[1]))
model = json.load(open(sys.argv[2]))["characterization"]["model"]
close = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
for p in d["points"]:
    q = p["prediction"]
    assert q["model_source"] == sys.argv[2], q["model_source"]
    assert close(q["save_s"], q["data_save_s"] + q["create_s"] + q["sync_s"]), q
    assert close(q["restore_s"], q["data_restore_s"] + q["open_s"]), q
    assert close(q["create_s"], q["creates"] / 1000) and close(q["open_s"], q["opens"] / 5000), q
    assert close(q["sync_s"], q["max_rank_syncs"] * 0.002), q
    for ph in ("save", "restore"):
        t = q[ph]
        terms = {"rank": t["max_rank_bytes"] / (t["rank_GiBps"] * G),
                 "node": t["max_node_bytes"] / (t["node_GiBps"] * G),
                 "aggregate": t["total_bytes"] / (t["aggregate_GiBps"] * G)}
        assert close(t["data_s"], max(terms.values())), (ph, t, terms)
        assert close(q["data_" + ph + "_s"], t["data_s"]) and q[ph + "_bound"] == t["bound"], q
        assert close(terms[t["bound"]], t["data_s"]), (ph, t)
        m = model[ph]
        f = t["path_factor"] * t["layout_factor"]
        assert close(t["rank_GiBps"], m["rank_GiBps"] * f) and close(t["node_GiBps"], m["node_GiBps"] * f), (ph, t)
print("good")
'

# 1. One point: the plan's bytes, creates (one file per shard), opens, syncs; no scaling.
out="$("$BIN" plan -c "$SRC/configs/quickstart.json" --world 4 --set backend=io_uring \
  --set queue_depth=4 --set transfer=stream --predict "$work/report.json" --json 2> "$work/err")"; code=$?
printf '%s\n' "$out" > "$work/q.json"
chk="$("$PY" -c "$check" "$work/q.json" "$work/report.json" 2>&1)"
[ $code = 0 ] && [ "$chk" = good ] && ok "plan --predict --json: terms add up, data = the largest bound" ||
  bad "plan --predict quickstart: exit $code, $chk, $(cat "$work/err")"
chk="$("$PY" - "$work/q.json" << 'P' 2>&1
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
q = p["prediction"]
assert q["creates"] == p["files"], (q["creates"], p["files"])
assert q["opens"] == p["files"] and q["max_rank_syncs"] >= 1, q
assert q["save"]["total_bytes"] == p["file_bytes"], (q["save"]["total_bytes"], p["file_bytes"])
assert q["save"]["path_factor"] == 1 and q["save"]["layout_factor"] == 1, q
assert q["nodes"] == 1 and q["ranks"] == 4 and not q["extrapolated"], q
assert q["notes"] == [], q["notes"]
print("good")
P
)"
[ "$chk" = good ] && ok "quickstart: creates and opens = files, bytes = file bytes, no scaling, no notes" || bad "quickstart prediction: $chk"

# 2. A sweep: each point's data path scaled from the model's own entry (exact, nearest, none).
out="$("$BIN" plan -c "$SRC/configs/sweep-blocksize-qd.json" --world 4 --set transfer=stream \
  --predict "$work/report.json" --json 2> "$work/err")"; code=$?
printf '%s\n' "$out" > "$work/s.json"
chk="$("$PY" -c "$check" "$work/s.json" "$work/report.json" 2>&1)"
[ $code = 0 ] && [ "$chk" = good ] && ok "sweep-blocksize-qd: every point's prediction adds up" ||
  bad "sweep: exit $code, $chk, $(cat "$work/err")"
chk="$("$PY" - "$work/s.json" << 'P' 2>&1
import json, sys
pts = {(p["block_size"], p["params"]["queue_depth"]): p["prediction"] for p in json.load(open(sys.argv[1]))["points"]}
assert len(pts) == 16, len(pts)
K, M = 1024, 1024 * 1024
def f(bs, qd): return pts[(bs, qd)]["save"]["path_factor"], pts[(bs, qd)]["restore"]["path_factor"]
assert f(M, 4) == (1, 1), f(M, 4)                 # the model's own settings
assert f(4 * M, 16) == (2, 1.5), f(4 * M, 16)     # exact entry: 4/2, 6/4
assert f(64 * K, 1) == (0.25, 0.25), f(64 * K, 1) # exact entry: 0.5/2, 1/4
assert not any("nearest" in n for n in pts[(4 * M, 16)]["notes"])
# 256K lies 2 steps (log2) from 64K and from 1M: at depth 1 the 64K/1 entry is nearer.
assert f(256 * K, 1) == (0.25, 0.25), f(256 * K, 1)
assert any("nearest measured: io_uring direct, block 64.00 KiB, queue depth 1" in n for n in pts[(256 * K, 1)]["notes"]), pts[(256 * K, 1)]["notes"]
# 4M at depth 32: the 4M/16 entry.
assert f(4 * M, 32) == (2, 1.5), f(4 * M, 32)
print("good")
P
)"
[ "$chk" = good ] && ok "sweep: data path scaled by the exact or nearest entry, noted" || bad "sweep scaling: $chk"

# 3. Not measured, shared files, more nodes than measured.
out="$("$BIN" plan -c "$SRC/configs/quickstart.json" --world 4 --set backend=mpiio \
  --set direct=false --predict "$work/report.json" --json 2>&1)"
n="$("$PY" -c 'import json,sys; q=json.loads(sys.stdin.read())["points"][0]["prediction"]; print(q["save"]["path_factor"], any("(mpiio buffered, block 1.00 MiB, queue depth 1) was not measured" in n for n in q["notes"]))' <<< "$out" 2>&1)"
[ "$n" = "1.0 True" ] && ok "a data path not measured: not scaled, noted" || bad "mpiio: $n"
out="$("$BIN" plan -c "$SRC/configs/layout-shared-file.json" --world 4 --set backend=io_uring \
  --set queue_depth=4 --predict "$work/report.json" --json 2>&1)"
n="$("$PY" -c 'import json,sys; q=json.loads(sys.stdin.read())["points"][0]["prediction"]; print(q["shared_files"], q["creates"], q["opens"], q["save"]["layout_factor"], q["restore"]["layout_factor"], q["save"]["rank_GiBps"])' <<< "$out" 2>&1)"
[ "$n" = "True 1 4 0.5 0.8 0.75" ] && ok "shared-file: one create, 4 opens, the shared-file factor" || bad "shared-file: $n"
out="$("$BIN" plan -c "$SRC/configs/quickstart.json" --world 16 --set ranks_per_node=4 \
  --set backend=io_uring --set queue_depth=4 --predict "$work/report.json" --json 2>&1)"
printf '%s\n' "$out" > "$work/x.json"
n="$("$PY" -c 'import json,sys; q=json.load(open(sys.argv[1]))["points"][0]["prediction"]; print(q["nodes"], q["extrapolated"], round(q["save"]["aggregate_GiBps"], 9), q["restore"]["aggregate_GiBps"], any("saturated" in n for n in q["notes"]))' "$work/x.json" 2>&1)"
[ "$n" = "4 True 7.2 4.0 True" ] && ok "16 ranks, 4 per node: save aggregate extrapolated to 4 nodes (2 x 4 x 0.9), restore saturated" || bad "extrapolation: $n"
chk="$("$PY" -c "$check" "$work/x.json" "$work/report.json" 2>&1)"
[ "$chk" = good ] && ok "extrapolated prediction adds up" || bad "extrapolated: $chk"

# 4. Text output: the prediction lines after each point's text (per-tensor: the transfer note).
out="$("$BIN" plan -c "$SRC/configs/quickstart.json" --world 16 --set transfer=per-tensor \
  --predict "$work/report.json" 2>&1)"; code=$?
[ $code = 0 ] && grep -q "^predictions: the model in $work/report.json (measured on 1 node(s) x 4 ranks, ext4)" <<< "$out" &&
  grep -Eq "^  predicted save [0-9.e+-]+ s \(fixed [0-9.e+-]+ s; data [0-9.e+-]+ s, bound: (rank|node|aggregate); creates [0-9.e+-]+ s; sync [0-9.e+-]+ s\), restore [0-9.e+-]+ s \(fixed [0-9.e+-]+ s; data [0-9.e+-]+ s, bound: (rank|node|aggregate); opens [0-9.e+-]+ s\)$" <<< "$out" &&
  grep -q "^  prediction note: ranks_per_node is not set: all 16 ranks are taken as one node" <<< "$out" &&
  grep -q "^  prediction note: the ceilings were measured with transfer stream, this point uses per-tensor (not scaled)" <<< "$out" &&
  ok "text: header, predicted line, notes" || bad "text output: exit $code: $out"
# Without --predict the output is unchanged.
out="$("$BIN" plan -c "$SRC/configs/quickstart.json" --world 4 --json 2>&1)"
grep -q '"prediction"' <<< "$out" && bad "plan without --predict has a prediction" || ok "no prediction without --predict"

# 5. Bad reports: exit 2, one line naming the file and the key.
refuse() {  # refuse LABEL PATTERN REPORT
  local out code
  out="$("$BIN" plan -c "$SRC/configs/quickstart.json" --world 4 --predict "$3" 2>&1 > /dev/null)"; code=$?
  if [ $code = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && grep -qF -- "$2" <<< "$out"; then
    ok "$1: exit 2, one line"
  else
    bad "$1: exit $code: $out"
  fi
}
refuse "missing report" "ckptbench: error: --predict: $work/none.json: cannot open: No such file" "$work/none.json"
echo '{"points": []}' > "$work/plain.json"
refuse "a report without characterization" "--predict '$work/plain.json': no 'characterization' key" "$work/plain.json"
echo '{"characterization": {"fs_type": "ext4"}}' > "$work/nomodel.json"
refuse "characterization without a model" "--predict '$work/nomodel.json': no 'characterization.model' key" "$work/nomodel.json"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["characterization"]["model"]["save"]["node_GiBps"]=0; json.dump(d, open(sys.argv[2], "w"))' "$work/report.json" "$work/zero.json"
refuse "a zero bandwidth" "--predict '$work/zero.json': 'characterization.model.save.node_GiBps': 0 (integer) is not allowed: want a number > 0, GiB/s" "$work/zero.json"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["characterization"]["model"]["metadata"]["open_per_s"]; json.dump(d, open(sys.argv[2], "w"))' "$work/report.json" "$work/noopen.json"
refuse "a missing rate" "--predict '$work/noopen.json': 'characterization.model.metadata.open_per_s' is missing: want a number > 0" "$work/noopen.json"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["characterization"]["model"]["version"]=2; json.dump(d, open(sys.argv[2], "w"))' "$work/report.json" "$work/v2.json"
refuse "another model version" "'characterization.model.version': 2 (integer) is not allowed: want 1" "$work/v2.json"
printf '{"characterization": ' > "$work/broken.json"
refuse "not JSON" "--predict '$work/broken.json': not valid JSON" "$work/broken.json"
refuse "a directory" "--predict: " "$work"
out="$("$BIN" plan -c "$SRC/configs/quickstart.json" --world 4 --predict '' 2>&1)"; code=$?
[ $code = 2 ] && grep -q "\-\-predict: empty path" <<< "$out" && ok "--predict '': exit 2" || bad "empty --predict: exit $code: $out"
summary predict
