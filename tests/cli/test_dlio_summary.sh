#!/usr/bin/env bash
# --dlio-summary writes DLIO's summary.json layout (docs/metrics.md, "DLIO / MLPerf Storage
# summary"): its numbers follow DLIO's definitions applied to the main report, the lookups that
# MLCommons' storage reporting makes on summary.json succeed with the right types, and a sweep of
# several points is refused before any I/O; a summary that cannot be written after the run is
# recorded in the report (output_errors) and exits 1.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
PY="$(python_with json)" || { echo "skip: no python3"; exit 77; }
make_workdir dlio
cat > "$work/c.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1}, "layout": "aggregated-rank",
 "backend": "posix", "block_size": "256K", "repetitions": 3, "cache": "fadvise"}
J
if timeout 180 "${MPI[@]}" -n 4 "$BIN" run --config "$work/c.json" --target "$work/t" \
  --output "$work/r.json" --dlio-summary "$work/summary.json" --quiet > "$work/out" 2>&1; then
  ok "run with --dlio-summary"
else
  bad "run with --dlio-summary"; cat "$work/out"; summary dlio_summary; exit 1
fi
grep -q "^DLIO summary: $work/summary.json" "$work/out" && ok "path printed" || bad "path printed"

"$PY" - "$work/r.json" "$work/summary.json" <<'PY' && ok "summary checks" || bad "summary checks"
import json, math, re, statistics, sys
try:
    import numpy as np
    np_mean, np_std = np.mean, np.std          # what DLIO's StatsCounter.end_run calls
except ImportError:                            # np.std has ddof = 0: the population stdev
    np_mean, np_std = statistics.fmean, statistics.pstdev
r = json.load(open(sys.argv[1])); summary = json.load(open(sys.argv[2]))
fails = 0; n = 0
def check(cond, what):
    global fails, n
    n += 1; print(("  ok   " if cond else "  FAIL ") + what); fails += 0 if cond else 1
def close(a, b): return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)

# --- (a) DLIO's definitions applied to the main report -------------------------------------
p = r["points"][0]; env = r["environment"]; m = summary["metric"]; reps = p["repetitions"]
# checkpoint_size (dlio_benchmark/checkpointing/base_checkpointing.py __init__): model + optimizer
# bytes summed over ranks / 1024^3 -- ckptbench's plan.payload_bytes, no padding or index.
size = p["plan"]["payload_bytes"] / 1024. / 1024. / 1024.
check(close(m["checkpoint_size_GB"], size), "checkpoint_size_GB = payload_bytes / 2^30")
check(p["plan"]["padding_bytes"] > 0, "the run has padding (stream), so payload != bytes moved")
for ph, key in (("save", "save"), ("restore", "load")):
    # duration: rank 0's own time (statscounter.py end_save_ckpt / end_load_ckpt)
    dur = [x[ph]["rank_times_s"][0] for x in reps]
    # throughput = self.checkpoint_size / duration (same functions)
    io = [size / d for d in dur]
    check(close(m[f"{key}_checkpoint_duration_mean_seconds"], np_mean(dur)), f"{key} duration mean")
    check(close(m[f"{key}_checkpoint_duration_stdev_seconds"], np_std(dur)), f"{key} duration np.std")
    check(close(m[f"{key}_checkpoint_io_mean_GB_per_second"], np_mean(io)), f"{key} io mean")
    check(close(m[f"{key}_checkpoint_io_stdev_GB_per_second"], np_std(io)), f"{key} io np.std")
    if len(set(io)) > 1:  # population, not sample, stdev
        check(not close(m[f"{key}_checkpoint_io_stdev_GB_per_second"], statistics.stdev(io)),
              f"{key} io stdev is not the sample stdev")
    c = summary["ckptbench"][ph]
    el = [x[ph]["elapsed_s"] for x in reps]; bw = [x[ph]["bandwidth_GiBps"] for x in reps]
    check(c["rank0_time_s"] == dur and c["elapsed_s"] == el, f"ckptbench.{ph} time series")
    check(all(a <= b for a, b in zip(dur, el)), f"{ph}: rank 0 time <= slowest rank time")
    check(close(c["elapsed_s_mean"], np_mean(el)) and close(c["elapsed_s_stdev"], np_std(el)),
          f"ckptbench.{ph}.elapsed_s mean/stdev")
    check(close(c["bandwidth_GiBps_mean"], np_mean(bw)) and close(c["bandwidth_GiBps_stdev"], np_std(bw)),
          f"ckptbench.{ph}.bandwidth_GiBps mean/stdev")
    check(c["bytes"] == reps[0][ph]["bytes"] > p["plan"]["payload_bytes"], f"ckptbench.{ph}.bytes = moved")
check(summary["num_accelerators"] == env["ranks"] == 4, "num_accelerators = ranks")
check(summary["num_hosts"] == env["nodes"], "num_hosts = nodes")
check(summary["hostname"] == env["hosts"][0], "hostname = rank 0's host")
check(summary["ckptbench"]["checkpoints"] == len(reps) == 3, "one DLIO checkpoint per repetition")
check(summary["ckptbench"]["checkpoint_size_bytes"] == p["plan"]["payload_bytes"], "size in bytes")
# DLIO's keys, in the order StatsCounter inserts them, then ours; the metric dict holds exactly
# what end_run writes for a checkpoint-only run (reporting.py prints every metric).
dlio_keys = ["start", "num_accelerators", "num_hosts", "hostname", "metric", "num_files_train",
             "num_files_eval", "num_samples_per_file", "host_cpu_count", "host_processor_name",
             "potential_caching", "host_cpuinfo", "host_meminfo", "host_memory_GB",
             "data_size_per_host_GB", "epochs", "end", "ckptbench"]
check(list(summary) == dlio_keys, "top-level keys and order: " + ",".join(summary))
check(list(m) == [f"{k}_checkpoint_{q}" for k in ("save", "load") for q in
                  ("io_mean_GB_per_second", "io_stdev_GB_per_second",
                   "duration_mean_seconds", "duration_stdev_seconds")] + ["checkpoint_size_GB"],
      "metric keys and order")
ts = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$"   # utility.py LOG_TS_FORMAT
check(bool(re.match(ts, summary["start"])) and bool(re.match(ts, summary["end"])), "start/end format")
check(all(type(v) is float for v in m.values()), "metric values are floats")
check(type(summary["host_cpuinfo"]) is dict and "processor" not in summary["host_cpuinfo"]
      and type(summary["host_meminfo"].get("MemTotal")) is str, "host_cpuinfo/host_meminfo as lines_to_dict")
check(len(summary["host_memory_GB"]) == len(summary["host_cpu_count"]) == len(summary["potential_caching"])
      == summary["num_hosts"], "per-host lists have num_hosts entries")

# DLIO's own [METRIC] print (dlio_benchmark/utils/statscounter.py, StatsCounter.end_run)
try:
    metric = ""
    metric = metric + f"[METRIC] Checkpoint save duration (seconds): {summary['metric']['save_checkpoint_duration_mean_seconds']:.4f} ({summary['metric']['save_checkpoint_duration_stdev_seconds']:.4f})\n"
    metric = metric + f"[METRIC] Checkpoint save I/O Throughput (GB/second): {summary['metric']['save_checkpoint_io_mean_GB_per_second']:.4f} ({summary['metric']['save_checkpoint_io_stdev_GB_per_second']:.4f})\n"
    metric = metric + f"[METRIC] Checkpoint load duration (seconds): {summary['metric']['load_checkpoint_duration_mean_seconds']:.4f} ({summary['metric']['load_checkpoint_duration_stdev_seconds']:.4f})\n"
    metric = metric + f"[METRIC] Checkpoint load I/O Throughput (GB/second): {summary['metric']['load_checkpoint_io_mean_GB_per_second']:.4f} ({summary['metric']['load_checkpoint_io_stdev_GB_per_second']:.4f})\n"
    check(True, "DLIO end_run [METRIC] lines format")
except Exception as e:
    check(False, f"DLIO end_run [METRIC] lines format: {e!r}")

# --- (b) the lookups mlcommons/storage makes on summary.json, as written there --------------
def replay(what, fn):
    try:
        fn(); check(True, what)
    except Exception as e:
        check(False, f"{what}: {e!r}")
# mlpstorage/rules.py BenchmarkResult._process_result_directory: self.summary = json.load(f)
# mlpstorage/rules.py BenchmarkRun._process_benchmark_result
def process_benchmark_result():
    global num_processes, run_datetime, metrics, total_memory_bytes, total_cores
    summary_workload = summary.get('workload', {})
    num_processes = summary["num_accelerators"]
    run_datetime = summary.get("start")
    metrics = summary.get("metric")
    # mlpstorage/rules.py ClusterInformation.from_dlio_summary_json
    host_memories = summary.get("host_memory_GB")
    host_cpus = summary.get("host_cpu_count")
    num_hosts = summary.get("num_hosts")
    total_memory_bytes = sum(host_memories) * 1024 * 1024 * 1024
    total_cores = sum(host_cpus)
    assert type(num_processes) is int and type(num_hosts) is int and type(total_cores) is int
    assert type(run_datetime) is str and type(metrics) is dict
replay("rules.py BenchmarkRun._process_benchmark_result + from_dlio_summary_json", process_benchmark_result)
# mlpstorage/rules.py RunID.__str__: id_str += f"_{self.run_datetime}"
replay("rules.py RunID.__str__", lambda: f"_{run_datetime}")
# mlpstorage/reporting.py ReportGenerator.print_results: the metrics loop (there a string would be
# printed raw; DLIO's checkpoint metrics are numbers, so here anything else fails)
def print_results():
    out = []
    for metric, value in metrics.items():
        if type(value) in (int, float):
            if "percentage" in metric.lower():
                out.append(f'\t\t- {metric}: {value:,.1f}%')
            else:
                out.append(f'\t\t- {metric}: {value:,.1f}')
        elif type(value) in (list, tuple):
            out.append(f'\t\t- {metric}: {", ".join(f"{v:,.1f}" for v in value)}')
        else:
            raise TypeError(f"metric {metric} is a {type(value).__name__}, printed raw")
replay("reporting.py ReportGenerator.print_results (metrics loop)", print_results)
# mlpstorage/reporting.py write_csv_file / write_json_file on BenchmarkRun.as_dict (rules.py),
# with flatten_nested_dict and remove_nan_values (mlpstorage/utils.py)
def flatten_nested_dict(nested_dict, parent_key='', separator='.'):
    flat_dict = {}
    for key, value in nested_dict.items():
        new_key = f"{parent_key}{separator}{key}" if parent_key else key
        if isinstance(value, dict):
            flat_dict.update(flatten_nested_dict(value, new_key, separator))
        else:
            flat_dict[new_key] = value
    return flat_dict
def write_files():
    as_dict = {"run_id": "x", "benchmark_type": "checkpointing", "model": None, "command": None,
               "parameters": {}, "system_info": {"total_memory_bytes": total_memory_bytes,
                                                 "total_cores": total_cores}, "metrics": metrics}
    flat = flatten_nested_dict(as_dict)
    flat = {k: v for k, v in flat.items() if not (type(v) in [float, int] and math.isnan(v))}
    assert all(f"metrics.{k}" in flat for k in metrics)
    json.dumps([as_dict], indent=2)
replay("reporting.py write_csv_file/write_json_file (flatten, remove_nan_values)", write_files)
print(f"  {n - fails} of {n} checks passed")
sys.exit(1 if fails else 0)
PY

# Several sweep points: refused before any I/O (exit 2, no report, no summary, no target).
cat > "$work/sweep.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "backend": "posix",
 "sweep": {"block_size": ["256K", "1M"]}}
J
timeout 60 "${MPI_BASE[@]}" -n 2 "$BIN" run --config "$work/sweep.json" --target "$work/t2" \
  --output "$work/r2.json" --dlio-summary "$work/s2.json" --quiet > "$work/out2" 2>&1
rc=$?
[ $rc -eq 2 ] && ok "multi-point run refused (exit 2)" || { bad "multi-point run refused (exit $rc)"; cat "$work/out2"; }
grep -q -- "--dlio-summary: .*2 sweep points" "$work/out2" && ok "refusal names the option" || bad "refusal names the option"
[ ! -e "$work/r2.json" ] && [ ! -e "$work/s2.json" ] && [ ! -e "$work/t2" ] \
  && ok "nothing created" || bad "nothing created"
# A summary that cannot be written after the run (here an immutable file in its place: chattr +i,
# root on a file system with inode flags) is not an "ok" run with exit 1 and no word in the
# report: the report says so in output_errors, the message names --dlio-summary, exit 1, and the
# other outputs (report, CSV) are written.
mkdir -p "$work/t3"
echo '{}' > "$work/s3.json"
if chattr +i "$work/s3.json" 2> /dev/null; then
  timeout 60 "${MPI_BASE[@]}" -n 2 "$BIN" run --config "$work/c.json" --set repetitions=1 \
    --target "$work/t3" --output "$work/r3.json" --dlio-summary "$work/s3.json" \
    --csv "$work/r3.csv" --quiet > "$work/out3" 2>&1
  rc=$?
  chattr -i "$work/s3.json"
  errs="$("$PY" -c "import json,sys; print(*json.load(open(sys.argv[1])).get('output_errors', []), sep='\\n')" "$work/r3.json" 2>&1)"
  if [ $rc -eq 1 ] && grep -q "ckptbench: error: --dlio-summary: .*Operation not permitted" "$work/out3" \
     && grep -q "^--dlio-summary: .*s3.json" <<< "$errs" && [ -s "$work/r3.csv" ] \
     && [ "$(cat "$work/s3.json")" = "{}" ] && [ -z "$(ls -A "$work/t3")" ]; then
    ok "summary not writable after the run: exit 1, output_errors in the report, CSV written"
  else
    bad "summary not writable: exit $rc, output_errors $errs: $(grep error "$work/out3" | head -3)"
  fi
else
  echo "skip (part): chattr +i needs root and a file system with inode flags"
fi
summary dlio_summary
