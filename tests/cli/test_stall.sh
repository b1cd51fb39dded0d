#!/usr/bin/env bash
# The stall guard (issue 16 item 7): a rank that stops (SIGSTOP, here by the fault hook's
# action=stop) must not hang the job. With stall_timeout_s 5 the ranks waiting for it end the job
# within seconds (non-zero exit, a message naming the stall; rank 0 records it in the report),
# and while they wait they sleep instead of spinning a core. With node aggregation the waiting
# rank names the rank it waits for. Nothing is left running.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
make_workdir stall
export OMPI_MCA_rmaps_base_oversubscribe=1
stopped=""
cli_on_exit() {
  local p
  for p in $stopped; do kill -CONT "$p" 2> /dev/null; kill -9 "$p" 2> /dev/null; done
  [ -n "${mpid:-}" ] && kill -9 "$mpid" 2> /dev/null
}

cat > "$work/fps.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "256K", "repetitions": 3, "stall_timeout_s": 5}
J
cat > "$work/agg.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 1},
 "layout": "aggregated-node", "ranks_per_node": 2, "backend": "posix", "block_size": "64K",
 "repetitions": 2, "stall_timeout_s": 5}
J

# state PID: the process state letter (R, S, T, ...) from /proc/PID/stat.
state() { sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | cut -d' ' -f1; }
# cpu_ticks PID: utime + stime in clock ticks.
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | awk '{print $12 + $13}'; }
hz="$(getconf CLK_TCK)"

# stall NAME CONFIG FAULT: runs 4 ranks in the background with FAULT, waits until one rank has
# stopped itself, samples a waiting rank's CPU time over 2 s, waits for the job to end; sets
# out, code, dt (seconds from the stop to the end), cpu (ticks used in 2 s), doc.
stall() {
  local name="$1" cfg="$2" fault="$3" i p
  doc="$work/$name-report.json"
  CKPT_FAULT_INJECT="$fault" timeout -k 5 90 "${MPI[@]}" -x CKPT_FAULT_INJECT -n 4 "$BIN" run \
    --config "$cfg" --target "$work/t-$name" --output "$doc" --quiet > "$work/$name.out" 2>&1 &
  mpid=$!
  stopped=""
  for ((i = 0; i < 300; i++)); do
    for p in $(rank_pids "$work/t-$name"); do [ "$(state "$p")" = T ] && stopped="$p"; done
    [ -n "$stopped" ] && break
    kill -0 "$mpid" 2> /dev/null || break
    sleep 0.1
  done
  local t0=$SECONDS
  cpu=-1
  if [ -n "$stopped" ]; then
    sleep 1
    local w=""
    for p in $(rank_pids "$work/t-$name"); do [ "$p" != "$stopped" ] && w="$p"; done
    if [ -n "$w" ]; then
      local c0 c1
      c0="$(cpu_ticks "$w")"; sleep 2; c1="$(cpu_ticks "$w")"
      [ -n "$c0" ] && [ -n "$c1" ] && cpu=$((c1 - c0))
    fi
  fi
  wait "$mpid"
  code=$?
  mpid=""
  dt=$((SECONDS - t0))
  out="$(cat "$work/$name.out")"
}

# no_ranks_left NAME: no rank process of that run is left a few seconds after the job ended;
# the stopped rank is continued and killed if it is.
no_ranks_left() {
  local i left
  for ((i = 0; i < 50; i++)); do
    left="$(rank_pids "$work/t-$1")"
    [ -z "$left" ] && break
    sleep 0.2
  done
  if [ -z "$left" ]; then ok "$1: no rank process left"; else
    bad "$1: rank processes left: $left"
    for p in $left; do kill -CONT "$p"; kill -9 "$p"; done 2> /dev/null
  fi
  stopped=""
}

# 1. file-per-shard: rank 3 stops at the start of restore in repetition 2; the others wait at the
# error check after the restore.
stall fps "$work/fps.json" "rep=2,phase=restore,rank=3,action=stop"
if [ -z "$stopped" ]; then
  bad "fps: no rank stopped itself: exit $code: $(tail -c 600 <<< "$out")"
else
  if [ "$code" -ne 0 ] && [ "$dt" -le 30 ] &&
     grep -q "ckptbench: error: rank 0 ([^)]*): stalled: waited [0-9]* s at an error check in point 1 .*stall_timeout_s = 5 s" <<< "$out"; then
    ok "fps: a stopped rank ends the job after $dt s (exit $code), the stall named"
  else
    bad "fps: exit $code after $dt s (want non-zero within 30 s, the stall named): $(tail -c 800 <<< "$out")"
  fi
  if [ "$cpu" -ge 0 ] && [ "$cpu" -lt $((hz / 2)) ]; then
    ok "fps: a waiting rank used $cpu/$hz s of CPU in 2 s (it sleeps, it does not spin)"
  else
    bad "fps: a waiting rank used $cpu/$hz s of CPU in 2 s (want < 0.5 s)"
  fi
  if [ "$(jq_py "$doc" "d['status']")" = failed ] && jq_py "$doc" "d['error']" | grep -q "stalled" &&
     [ "$(jq_py "$doc" "len(d['points'][0]['repetitions'])")" = 1 ]; then
    ok "fps: rank 0 wrote the report: failed, the stall as the error, repetition 1 kept"
  else
    bad "fps: report: status $(jq_py "$doc" "d.get('status')"), error $(jq_py "$doc" "str(d.get('error'))[:300]"), repetitions $(jq_py "$doc" "len(d['points'][0]['repetitions']) if d.get('points') else None")"
  fi
fi
no_ranks_left fps

# 2. node aggregation: the leader of node 0 stops at the start of save; its sender names it.
stall agg "$work/agg.json" "rep=1,phase=save,rank=0,action=stop"
if [ -z "$stopped" ]; then
  bad "agg: no rank stopped itself: exit $code: $(tail -c 600 <<< "$out")"
else
  if [ "$code" -ne 0 ] && [ "$dt" -le 30 ] &&
     grep -q "ckptbench: error: rank 1 ([^)]*): stalled: waited [0-9]* s for rank 0 to take [0-9]* bytes (node aggregation)" <<< "$out"; then
    ok "agg: a stopped leader ends the job after $dt s (exit $code); its sender names rank 0"
  else
    bad "agg: exit $code after $dt s: $(tail -c 800 <<< "$out")"
  fi
  if [ "$cpu" -ge 0 ] && [ "$cpu" -lt $((hz / 2)) ]; then
    ok "agg: a waiting rank used $cpu/$hz s of CPU in 2 s"
  else
    bad "agg: a waiting rank used $cpu/$hz s of CPU in 2 s (want < 0.5 s)"
  fi
fi
no_ranks_left agg

# 3. the key: 0 (off) is accepted, a negative value is refused.
sed 's/"stall_timeout_s": 5/"stall_timeout_s": 0/' "$work/fps.json" > "$work/off.json"
sed 's/"stall_timeout_s": 5/"stall_timeout_s": -1/' "$work/fps.json" > "$work/neg.json"
o="$("$BIN" validate "$work/off.json" 2>&1)" && ok "stall_timeout_s 0 accepted" || bad "stall_timeout_s 0 refused: $o"
o="$("$BIN" validate "$work/neg.json" 2>&1)"
[ $? -eq 2 ] && grep -q "stall_timeout_s" <<< "$o" && ok "stall_timeout_s -1 refused, key named" || bad "stall_timeout_s -1: $o"
summary
