#!/usr/bin/env bash
# --dlio-summary writes a DLIO-style summary whose numbers are the report's, aggregated.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
make_workdir dlio
cat > "$work/c.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1}, "layout": "aggregated-rank",
 "backend": "posix", "block_size": "256K", "repetitions": 3, "cache": "fadvise"}
J
timeout 180 "${MPI[@]}" -n 4 "$BIN" run --config "$work/c.json" --target "$work/t" --output "$work/r.json" \
  --dlio-summary "$work/summary.json" --quiet || { echo "0 passed, 1 failed"; exit 1; }
"$PY" - "$work/r.json" "$work/summary.json" <<'PY'
import json, math, statistics, sys
r = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
p = r["points"][0]; c = s["checkpoints"][0]; m = c["metric"]
fails = 0
def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what); fails += 0 if cond else 1
bw = [x["save"]["bandwidth_GiBps"] for x in p["repetitions"]]
lt = [x["restore"]["elapsed_s"] for x in p["repetitions"]]
check(c["num_checkpoints"] == 3, "three checkpoints")
check(math.isclose(m["save_checkpoint_throughput_GiBps_mean"], statistics.mean(bw)), "save throughput mean")
check(math.isclose(m["save_checkpoint_throughput_GiBps_stdev"], statistics.stdev(bw)), "save throughput stdev")
check(math.isclose(m["load_checkpoint_duration_s_mean"], statistics.mean(lt)), "load duration mean")
check(math.isclose(c["checkpoint_size_GiB"], p["plan"]["payload_bytes"] / 2**30), "size in GiB")
print(f"{5 - fails} passed, {fails} failed")
sys.exit(1 if fails else 0)
PY
