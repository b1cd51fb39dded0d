#!/usr/bin/env bash
# The s3 backend under faults, against a real S3 server (Ceph's RADOS Gateway):
#  4. a throttling gateway (tests/cli/s3_proxy.py answers 503 SlowDown to every third request):
#     the run retries, counts the retries and throttled answers, and verifies; a gateway that
#     throttles every part upload: the run fails within its attempts with one clear message, and
#     no upload is left;
#  5. the gateway stopped in the middle of a save: a clear error within the retry limit; once the
#     gateway is back, no unfinished upload of the run is left; SIGTERM and a killed rank in the
#     middle of a save leave no upload either;
# and the secret key is in none of the outputs.
# The gateway: the ctest fixture's (tests/cli/s3_gateway.sh) or the test's own (tests/cli/s3lib.sh).
# Skips (77) only when the gateway cannot run here (packages, root), printing why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh" s3-faults

echo "# 4. throttling"
proxy_port=$((CKPT_RGW_PORT + 1))
start_proxy() {  # start_proxy MODE
  [ -z "$proxy_pid" ] || { kill "$proxy_pid" 2> /dev/null; wait "$proxy_pid" 2> /dev/null; }
  : > "$work/injected"
  S3_PROXY_COUNT="$work/injected" "$py" "$SRC/tests/cli/s3_proxy.py" "$proxy_port" "$CKPT_RGW_PORT" "$1" \
    > "$work/proxy.out" 2>&1 &
  proxy_pid=$!
  for _ in $(seq 50); do grep -q ready "$work/proxy.out" 2> /dev/null && return 0; sleep 0.1; done
  return 1
}
start_proxy every3 || bad "the proxy did not start: $(cat "$work/proxy.out")"
run throttle 4 "http://127.0.0.1:$proxy_port" --set layout=shared-file --set s3.max_attempts=8
got="$(jq_py "$work/throttle.json" "(lambda r: ' '.join(str(x) for x in [d['status'], r['save']['counters']['throttled']['sum'] + r['restore']['counters']['throttled']['sum'], r['save']['counters']['retries']['sum'] + r['restore']['counters']['retries']['sum']]))(d['points'][0]['repetitions'][0])")"
read -r st thr rtr <<< "$got"
injected="$(wc -l < "$work/injected")"
if [ $code -eq 0 ] && [ "$st" = ok ] && [ "${thr:-0}" -gt 0 ] && [ "$thr" = "$rtr" ] && [ "$thr" -le "$injected" ]; then
  ok "every third request throttled: the run retried and verified ($thr throttled answers counted in the phases, $rtr retries, $injected injected in all)"
else bad "throttled run: exit $code, status/throttled/retries '$got', injected $injected: $(tail -n 3 <<< "$out")"; fi
start_proxy parts || bad "the proxy did not restart"
run slowdown 4 "http://127.0.0.1:$proxy_port" --set layout=aggregated-rank
nerr="$(grep -c 'ckptbench: error' <<< "$out")"
if [ $code -ne 0 ] && grep -q "SlowDown" <<< "$out" && grep -q "after 4 attempts" <<< "$out" &&
  [ "$(s3ls slowdown/)" = "objects 0 uploads 0" ]; then
  ok "every part throttled: failed after 4 attempts ($nerr error line(s)), nothing left"
else bad "always throttled: exit $code, left $(s3ls slowdown/): $out"; fi
kill "$proxy_pid" 2> /dev/null; wait "$proxy_pid" 2> /dev/null; proxy_pid=""

echo "# 5. the gateway stopped, SIGTERM, a killed rank: no unfinished upload left"
# big NAME EXTRA...: a larger save in the background (pid in $bg).
big() {
  local name="$1"; shift
  cat > "$work/$name.config.json" << EOF
{"model": {"name": "llama2-7b", "scale": "1/128"},
 "parallelism": {"tp": 1, "pp": 1, "dp": "auto", "zero_stage": 1}, "layout": "aggregated-rank",
 "backend": "s3", "s3": {"url": "s3://$CKPT_S3_BUCKET/$name", "endpoint": "$CKPT_S3_ENDPOINT",
 "max_attempts": 3, "backoff_ms": 50, "connect_timeout_s": 2},
 "block_size": "5M", "queue_depth": 2, "repetitions": 1, "verify": true, "cache": "none"}
EOF
  timeout 300 "${MPI_BASE[@]}" -n 4 "$BIN" run --config "$work/$name.config.json" \
    --target "$work/t-$name" --output "$work/$name.json" "$@" > "$work/$name.out" 2>&1 &
  bg=$!
  outputs+=("$work/$name.out" "$work/$name.json")
}
# wait_uploads NAME: waits until the run has an upload open (its save is under way).
wait_uploads() {
  for _ in $(seq 150); do
    [[ "$(s3ls "$1/")" == *"uploads 0" ]] || return 0
    kill -0 "$bg" 2> /dev/null || return 1
    sleep 0.2
  done
  return 1
}
big gwstop
if wait_uploads gwstop; then
  t0=$(date +%s)
  "$rgw" stop --dir "$gwdir" > /dev/null
  # The save fails within its attempts (3, connection refused at once); its clean-up then waits
  # for the gateway, which comes back here while the run still runs.
  sleep 5
  "$rgw" start --dir "$gwdir" > /dev/null || bad "the gateway did not come back"
  wait "$bg"; code=$?
  t1=$(date +%s)
  left="$(s3ls gwstop/)"
  if [ $code -ne 0 ] && grep -q "ckptbench: error" "$work/gwstop.out" && grep -qi "connect" "$work/gwstop.out" &&
    [ $((t1 - t0)) -le 120 ] && [ "$left" = "objects 0 uploads 0" ]; then
    ok "gateway stopped mid-save: failed naming the connection, ended $((t1 - t0)) s after the stop; after it came back: $left"
  else bad "gateway stopped: exit $code after $((t1 - t0)) s, left '$left': $(grep -m2 error "$work/gwstop.out")"; fi
else bad "gateway stop: the save never had an upload open: $(tail -n 3 "$work/gwstop.out")"; fi

# gone_after NAME: waits (up to 30 s) for the run's prefix to hold no object and no upload; sets
# left to what it holds then.
gone_after() {
  for _ in $(seq 30); do [ "$(s3ls "$1/")" = "objects 0 uploads 0" ] && break; sleep 1; done
  left="$(s3ls "$1/")"
}

big sigterm
if wait_uploads sigterm; then
  kill -TERM $(rank_pids "$work/sigterm.config.json") 2> /dev/null
  wait "$bg"
  gone_after sigterm
  if [ "$left" = "objects 0 uploads 0" ]; then ok "SIGTERM mid-save: $left"
  else bad "SIGTERM mid-save: left $left: $(tail -n 3 "$work/sigterm.out")"; fi
else bad "SIGTERM: the save never had an upload open"; fi

big killed
if wait_uploads killed; then
  victim="$(rank_pids "$work/killed.config.json" | head -n 1)"
  kill -KILL "$victim" 2> /dev/null
  wait "$bg"
  gone_after killed
  if [ "$left" = "objects 0 uploads 0" ]; then ok "a rank killed (SIGKILL) mid-save: $left"
  else bad "a rank killed mid-save: left $left: $(tail -n 3 "$work/killed.out")"; fi
else bad "killed rank: the save never had an upload open"; fi


no_secret_leaked 8
summary s3-faults
