#!/usr/bin/env bash
# `ckptbench characterize` from the command line (issue 27): a small search on 4 ranks writes the
# report, the findings table and the recommended config, which `run` and `plan --predict` accept;
# bad options exit 2 with one line naming the option before anything is made; SIGTERM during the
# search leaves an incomplete report with what was measured and removes the probes' directory.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
PY="$(python_with json)" || { echo "skip: no python3"; exit 77; }
make_workdir characterize
small=(--budget 2 --probe-size 8M --min-reps 2 --max-reps 3 --ci-width 0.5)

# 1. A small search.
out="$(timeout 300 "${MPI[@]}" -n 4 "$BIN" characterize --target "$work/t" "${small[@]}" \
  -o "$work/r.json" 2>&1)"
rc=$?
[ $rc -eq 0 ] && ok "small search: exit 0" || bad "small search: exit $rc: $(tail -5 <<< "$out")"
for line in "Findings on" "best data path" "transfer size" "queue depth" "O_DIRECT" \
  "misaligned regions" "ceilings" "metadata" "Recommended: layout" "measured here"; do
  grep -q "$line" <<< "$out" && ok "findings table: '$line'" || bad "findings table lacks '$line'"
done
[ "$(jq_py "$work/r.json" 'd["status"]')" = ok ] && ok "report status ok" || bad "report status"
rec="$work/r.recommended.json"
[ -s "$rec" ] && ok "recommended config next to the report" || bad "no $rec"
[ "$(jq_py "$work/r.json" 'd["characterization"]["recommendation"]["path"]')" = "$rec" ] &&
  ok "the report names the recommended config" || bad "recommendation.path"
[ -z "$(ls -A "$work/t" 2> /dev/null)" ] && ok "nothing left in the target (the run made it and removed it)" ||
  bad "left in the target: $(ls -A "$work/t")"
# The recommended config runs as written (its target is the characterised directory).
if timeout 300 "${MPI[@]}" -n 4 "$BIN" run -c "$rec" -q -r 1 -o "$work/rec-run.json" > /dev/null 2>&1; then
  ok "the recommended config runs"
else
  bad "the recommended config does not run"
fi
# plan --predict reads the report's model; its prediction for the recommended config is the
# report's.
pred="$("$BIN" plan -c "$rec" --world 4 --predict "$work/r.json" --json 2> "$work/perr")"
if [ $? -eq 0 ]; then
  same="$("$PY" -c '
import json, sys
p = json.loads(sys.argv[1])["points"][0]["prediction"]
r = json.load(open(sys.argv[2]))["characterization"]["recommendation"]["prediction"]
print(abs(p["save_s"] - r["save_s"]) <= 1e-9 * r["save_s"] and abs(p["restore_s"] - r["restore_s"]) <= 1e-9 * r["restore_s"])
' "$pred" "$work/r.json")"
  [ "$same" = True ] && ok "plan --predict gives the report's prediction for its recommendation" ||
    bad "plan --predict differs from the report's prediction"
else
  bad "plan --predict on the report: $(cat "$work/perr")"
fi

# 2. Bad options: exit 2, one line naming the option, nothing made. The refused runs start two at
# a time (each with its own target and report path), then each is checked.
# bad_start N ARGS...: starts refused run N in the background; its output and status go to files.
bad_start() {
  local n="$1"; shift
  rm -rf "$work/bad$n"
  ( timeout 120 "${MPI[@]}" -n 2 "$BIN" characterize --target "$work/bad$n" "${small[@]}" "$@" \
      -o "$work/bad$n.json" > "$work/bad$n.out" 2>&1
    echo $? > "$work/bad$n.rc" ) &
}
check_bad() {  # N NEEDLE: run N was refused naming NEEDLE
  local n="$1" needle="$2" o rc
  o="$(cat "$work/bad$n.out" 2> /dev/null)"
  rc="$(cat "$work/bad$n.rc" 2> /dev/null || echo "(none)")"
  if [ "$rc" = 2 ] && grep -q -- "$needle" <<< "$o" && [ ! -e "$work/bad$n" ] && [ ! -e "$work/bad$n.json" ] &&
    [ "$(grep -c 'error' <<< "$o")" -eq 1 ]; then
    ok "refused: $needle"
  else
    bad "$needle: exit $rc, target $( [ -e "$work/bad$n" ] && echo made || echo absent): $o"
  fi
}
touch "$work/plain"
cases=("--budget|--budget 0" "--budget|--budget nan" "--ci-width|--ci-width 2"
       "unknown stage 'warp'|--stages backend,warp" "--min-reps|--min-reps 1" "--probe-size|--probe-size 1P"
       "layout|--set layout=nope" "--recommend|--recommend $work/plain/x.json")
for ((i = 0; i < ${#cases[@]}; i += 2)); do
  for n in $i $((i + 1)); do
    [ "$n" -lt ${#cases[@]} ] || continue
    read -r -a args <<< "${cases[$n]#*|}"
    bad_start "$n" "${args[@]}"
  done
  wait
  for n in $i $((i + 1)); do
    [ "$n" -lt ${#cases[@]} ] && check_bad "$n" "${cases[$n]%%|*}"
  done
done

# 3. SIGTERM during the search: an incomplete report, exit 1, nothing left in the target.
timeout 300 "${MPI[@]}" -n 4 "$BIN" characterize --target "$work/sig" --budget 5 --probe-size 8M \
  -o "$work/sig.json" > "$work/sig.out" 2>&1 &
job=$!
for _ in $(seq 1 300); do
  grep -q "characterize: backend" "$work/sig.out" 2> /dev/null && break
  sleep 0.1
done
kill -TERM $(rank_pids "characterize --target $work/sig") 2> /dev/null
wait $job
rc=$?
[ $rc -eq 1 ] && ok "SIGTERM: exit 1" || bad "SIGTERM: exit $rc: $(tail -3 "$work/sig.out")"
[ "$(jq_py "$work/sig.json" 'd["status"]')" = incomplete ] && ok "SIGTERM: report incomplete" ||
  bad "SIGTERM: report status $(jq_py "$work/sig.json" 'd.get("status")')"
[ "$(jq_py "$work/sig.json" 'len(d["points"]) >= 1')" = True ] &&
  ok "SIGTERM: the measured points are kept" || bad "SIGTERM: no point kept"
[ -z "$(ls -A "$work/sig" 2> /dev/null)" ] && ok "SIGTERM: the probes' directory is removed" ||
  bad "SIGTERM: left: $(ls -A "$work/sig")"
summary characterize
