#!/usr/bin/env bash
# A real Slurm (scripts/slurm/local-cluster.sh: Debian's slurmctld, slurmd and munged on this
# host): the sbatch templates submitted with `sbatch --wait`, and `srun -n 4 ckptbench run`
# launched directly through PMIx. Each report must have the ranks, status ok, the Slurm job id of
# the job that ran it and the CPUs each rank was bound to. Skips (77) only when the daemons
# cannot start here (not root, no apt, ...), printing why.
. "$(dirname "$0")/lib.sh"
need_binary
py="$(python_with json)" || { echo "skip: no python3"; exit 77; }

work="$(mktemp -d "${TMPDIR:-/tmp}/ckpt-slurm-test-XXXXXX")"
cluster="$SRC/scripts/slurm/local-cluster.sh"
# A port of its own, so a cluster someone else started on this host is left alone.
export CKPT_SLURM_PORT="$(free_ports 2)"
cleanup() {
  "$cluster" stop --dir "$work/slurm" > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# 4 ranks need 4 CPUs in Slurm's eyes: on a smaller machine the node is declared with 4
# (config_overrides); binding is then only real for as many ranks as there are cores.
cores="$(getconf _NPROCESSORS_ONLN)"
out="$("$cluster" start --dir "$work/slurm" --cpus $((cores < 4 ? 4 : cores)) 2>&1)"; code=$?
if [ $code -eq 77 ]; then echo "skip: $out"; exit 77; fi
[ $code -eq 0 ] || { echo "FAIL local-cluster.sh start: exit $code: $out"; exit 1; }
echo "$out"
eval "$("$cluster" env --dir "$work/slurm")"

# Small and quick: Llama-2-7B state at 1/512 (about 170 MiB over the ranks), one repetition.
export CKPT_BIN="$BIN" CKPT_TARGET="$work/target" CKPT_CONFIG="$SRC/configs/quickstart.json"
export CKPT_RUN_ARGS="--quiet --set model.scale=1/512 --set repetitions=1"
cd "$work" || exit 1

# report_check FILE JOBID RANKS [MORE_PYTHON]: status ok, RANKS ranks, the Slurm job id, every
# rank's CPU list; prints what is wrong.
report_check() {
  "$py" - "$@" << 'PY'
import json, sys
path, job, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = sys.argv[4] if len(sys.argv) > 4 else ""
try:
    d = json.load(open(path))
except Exception as e:
    sys.exit(f"no report: {e}")
env = d["environment"]
slurm = env.get("launcher", {}).get("slurm", {})
problems = []
if d.get("status") != "ok": problems.append(f"status {d.get('status')}")
if env["ranks"] != ranks: problems.append(f"{env['ranks']} ranks, not {ranks}")
if slurm.get("job_id") != job: problems.append(f"Slurm job id {slurm.get('job_id')!r}, not {job!r}")
if len(env.get("cpus_allowed", [])) != ranks: problems.append(f"cpus_allowed {env.get('cpus_allowed')}")
if extra:
    exec(extra)
print("; ".join(problems) if problems else
      f"{env['ranks']} ranks, job {slurm['job_id']} step {slurm.get('step_id')}, "
      f"launcher {env['launcher']['kind']}, cpus {env['cpus_allowed']}")
sys.exit(1 if problems else 0)
PY
}

# submit NAME SBATCH_ARGS...: sbatch --wait; sets job, code, log (the job's stdout+stderr).
submit() {
  local name="$1"
  shift
  log="$work/$name.out"
  job="$(timeout 300 sbatch --parsable --wait -o "$log" -e "$log" "$@")"; code=$?
  job="${job%%;*}"
}

echo "# 1. run.sbatch, 2 ranks with 1 CPU each, bound to cores: each rank on its own CPU"
export CKPT_OUTPUT="$work/run2.json"
submit run2 -N 1 -n 2 --ntasks-per-node=2 -c 1 "$SRC/scripts/slurm/run.sbatch"
msg="$(report_check "$CKPT_OUTPUT" "$job" 2 "
c = env['cpus_allowed']
if len(set(c)) != 2 or any(',' in x or '-' in x for x in c): problems.append(f'not one CPU per rank: {c}')
if env['launcher']['kind'] != 'srun': problems.append('launcher ' + env['launcher']['kind'])
if slurm.get('cpus_per_task') != '1': problems.append(f\"cpus_per_task {slurm.get('cpus_per_task')}\")
" 2>&1)"; rc=$?
if [ $code -eq 0 ] && [ $rc -eq 0 ] && grep -q "== report: $CKPT_OUTPUT (exit 0)" "$log"; then
  ok "run.sbatch -n 2 -c 1: $msg; the job's output names the report"
else
  bad "run.sbatch -n 2 -c 1: sbatch exit $code: $msg: $(tail -n 5 "$log" 2> /dev/null)"
fi

echo "# 2. run.sbatch, 4 ranks, 1 CPU each ($cores cores here: binding only when there are 4)"
export CKPT_OUTPUT="$work/run4.json"
bind=cores
[ "$cores" -ge 4 ] || bind=none
submit run4 -N 1 -n 4 --ntasks-per-node=4 -c 1 --export="ALL,CKPT_BIND=$bind" "$SRC/scripts/slurm/run.sbatch"
msg="$(report_check "$CKPT_OUTPUT" "$job" 4 "
if slurm.get('ntasks') != '4': problems.append(f\"ntasks {slurm.get('ntasks')}\")
if env['launcher']['kind'] != 'srun': problems.append('launcher ' + env['launcher']['kind'])
" 2>&1)"; rc=$?
if [ $code -eq 0 ] && [ $rc -eq 0 ] && grep -q -- "--mpi=pmix" "$log"; then
  ok "run.sbatch -n 4: $msg; srun chose --mpi=pmix from srun --mpi=list"
else
  bad "run.sbatch -n 4: sbatch exit $code: $msg: $(tail -n 5 "$log" 2> /dev/null)"
fi

echo "# 3. srun -n 4 ckptbench run, launched directly (PMIx), inside an allocation"
rm -f "$work/srun4.json"
log="$work/srun4.out"
job="$(timeout 300 sbatch --parsable --wait -o "$log" -e "$log" -N 1 -n 4 -c 1 \
  --wrap "srun --mpi=pmix --cpu-bind=$bind -n 4 $BIN run --target $work/target --quiet --set model.scale=1/512 \
          --set repetitions=1 --set layout=aggregated-rank -o $work/srun4.json")"; code=$?
msg="$(report_check "$work/srun4.json" "${job%%;*}" 4 2>&1)"; rc=$?
if [ $code -eq 0 ] && [ $rc -eq 0 ]; then ok "srun -n 4 ckptbench run: $msg"
else bad "srun -n 4 ckptbench run: sbatch exit $code: $msg: $(tail -n 5 "$log" 2> /dev/null)"; fi

echo "# 4. stripe-sweep.sbatch (not Lustre here: CKPT_ALLOW_NON_LUSTRE=1), stripe counts 1 and 2, size 1M"
export CKPT_OUTPUT="$work/stripes.json"
submit stripes -N 1 -n 2 --ntasks-per-node=2 -c 1 --export="ALL,CKPT_ROOT=$SRC,CKPT_CONFIG=,CKPT_ALLOW_NON_LUSTRE=1,CKPT_STRIPE_COUNTS=1 2,CKPT_STRIPE_SIZES=1M" \
  "$SRC/scripts/slurm/stripe-sweep.sbatch"
msg="$(report_check "$CKPT_OUTPUT" "$job" 2 "
pts = d['points']
if [p['params'].get('stripe_count') for p in pts] != [1, 2]: problems.append(f\"points {[p['params'] for p in pts]}\")
" 2>&1)"; rc=$?
if [ $code -eq 0 ] && [ $rc -eq 0 ] && [ -s "$work/stripes.config.json" ]; then
  ok "stripe-sweep.sbatch: $msg; 2 points, stripe_count 1 and 2; the config run is saved"
else
  bad "stripe-sweep.sbatch: sbatch exit $code: $msg: $(tail -n 5 "$log" 2> /dev/null)"
fi

echo "# 5. bad input ends the job with exit 2 and a message, before any rank starts"
export CKPT_OUTPUT="$work/bad.json"
submit bad-config -N 1 -n 2 --ntasks-per-node=2 -c 1 --export="ALL,CKPT_CONFIG=$work/missing.json" "$SRC/scripts/slurm/run.sbatch"
if [ $code -eq 2 ] && grep -q "config '$work/missing.json' not found" "$log" && [ ! -e "$CKPT_OUTPUT" ]; then
  ok "a missing CKPT_CONFIG: sbatch --wait exit 2, the job names the file"
else
  bad "a missing CKPT_CONFIG: exit $code: $(tail -n 3 "$log" 2> /dev/null)"
fi
submit bad-stripe -N 1 -n 2 --ntasks-per-node=2 -c 1 --export="ALL,CKPT_STRIPE_COUNT=many" "$SRC/scripts/slurm/run.sbatch"
if [ $code -eq 2 ] && grep -q "CKPT_STRIPE_COUNT 'many': allowed an integer" "$log"; then
  ok "CKPT_STRIPE_COUNT=many: exit 2 with what is allowed"
else
  bad "CKPT_STRIPE_COUNT=many: exit $code: $(tail -n 3 "$log" 2> /dev/null)"
fi
submit bad-key -N 1 -n 2 --ntasks-per-node=2 -c 1 --export="ALL,CKPT_RUN_ARGS=--quiet --set layout=round-robin" \
  "$SRC/scripts/slurm/run.sbatch"
if [ $code -eq 2 ] && grep -q "round-robin" "$log" && grep -q "== no report at" "$log"; then
  ok "a bad layout through srun: the job exits 2 (ckptbench's exit), names the value, says no report"
else
  bad "a bad layout through srun: exit $code: $(tail -n 3 "$log" 2> /dev/null)"
fi

echo "# 6. save-restore.sh: a save job on 2 ranks, then (afterok) a restore job on 1 rank"
unset CKPT_OUTPUT
log="$work/save-restore.out"
CKPT_RESULTS="$work/sr" CKPT_TARGET="$work/target-sr" timeout 400 \
  "$SRC/scripts/slurm/save-restore.sh" --wait -N 1 -n 2 --ntasks-per-node=2 -c 1 -o "$work/save.out" -e "$work/save.out" \
  -- -N 1 -n 1 --ntasks-per-node=1 -c 1 -o "$work/restore.out" -e "$work/restore.out" > "$log" 2>&1; code=$?
save_report="$(ls "$work"/sr/ckptbench-save-*.json 2> /dev/null)"
restore_report="$(ls "$work"/sr/ckptbench-restore-*.json 2> /dev/null)"
restore_job="$(sed -n 's/^restore job \([0-9]*\) ended.*/\1/p' "$log")"
msg="$(report_check "$restore_report" "$restore_job" 1 "
s = json.load(open('$save_report'))
if s.get('phases') != 'save' or s.get('status') != 'ok': problems.append(f\"save report {s.get('phases')} {s.get('status')}\")
if d.get('phases') != 'restore': problems.append(f\"phases {d.get('phases')}\")
rf = d.get('restored_from', {})
if rf.get('run_dir') != s['environment']['run_dir']: problems.append(f\"restored_from {rf.get('run_dir')} != {s['environment']['run_dir']}\")
if rf.get('saved_world') != 2: problems.append(f\"saved_world {rf.get('saved_world')}\")
if slurm.get('job_id') == s['environment']['launcher']['slurm']['job_id']: problems.append('one job')
if d['started_at'] < s['finished_at']: problems.append('the restore started before the save ended')
reps = d['points'][0]['repetitions']
if not reps or not all(r.get('verified') and r.get('bytes_verified', 0) > 0 for r in reps): problems.append(f'not verified: {reps}')
" 2>&1)"; rc=$?
if [ $code -eq 0 ] && [ $rc -eq 0 ] && [ -d "$(dirname "$(ls -d "$work"/target-sr/ckptbench-*/ckptbench-manifest.json)")" ]; then
  ok "save-restore.sh: $msg; restored from the save job's run directory after it ended, every byte verified, the saved run kept"
else
  bad "save-restore.sh: exit $code: $msg: $(tail -n 5 "$log" "$work/restore.out" 2> /dev/null)"
fi

echo "# 7. the Slurm daemons stop"
"$cluster" stop --dir "$work/slurm" > /dev/null 2>&1
if ! "$cluster" status --dir "$work/slurm" | grep -q running; then ok "local-cluster.sh stop: no daemon left"
else bad "local-cluster.sh stop: $("$cluster" status --dir "$work/slurm")"; fi

summary "slurm"
