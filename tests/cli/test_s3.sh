#!/usr/bin/env bash
# The s3 backend against a real S3 server: Ceph's RADOS Gateway beside a one-node cluster
# (scripts/ceph/local-rgw.sh, which starts scripts/ceph/local-ceph.sh), a user and a bucket.
#  1. `ckptbench backends` lists s3 ok;
#  2. every layout (file-per-tensor, file-per-shard, aggregated-rank, aggregated-node,
#     shared-file) saves, restores and verifies through the gateway on 1 and 4 ranks (a 4-rank
#     shared object is one multipart upload from 4 writers); afterwards the run's prefix holds
#     no object and no unfinished upload;
#  3. wrong credentials, a missing bucket and an unreachable endpoint exit 2 before any I/O,
#     naming which;
#  4. a throttling gateway (tests/cli/s3_proxy.py answers 503 SlowDown to every third request):
#     the run retries, counts the retries and throttled answers, and verifies; a gateway that
#     throttles every part upload: the run fails within its attempts with one clear message, and
#     no upload is left;
#  5. the gateway stopped in the middle of a save: a clear error within the retry limit; once the
#     gateway is back, no unfinished upload of the run is left; SIGTERM and a killed rank in the
#     middle of a save leave no upload either;
#  6. the secret key appears in no output: reports, CSV, stdout/stderr, --dry-run, validate.
# Skips (77) only when the gateway cannot run here (packages, root), printing why.
. "$(dirname "$0")/lib.sh"
need_binary
need_backend s3
py="$(python_with boto3)" || { echo "skip: python3-boto3 is not installed (scripts/setup.sh --with-cluster)"; exit 77; }
make_workdir s3
rgw="$SRC/scripts/ceph/local-rgw.sh"
export CKPT_CEPH_PORT=$((20000 + $$ % 20000))
export CKPT_RGW_PORT=$((CKPT_CEPH_PORT + 1))
proxy_pid=""
cli_on_exit() {
  [ -z "$proxy_pid" ] || kill "$proxy_pid" 2> /dev/null
  "$SRC/scripts/ceph/local-ceph.sh" stop --dir "$work/ceph" > /dev/null 2>&1 || true
}
out="$("$rgw" start --dir "$work/ceph" 2>&1)"; code=$?
if [ $code -eq 77 ]; then echo "skip: $out"; exit 77; fi
[ $code -eq 0 ] || { echo "FAIL local-rgw.sh start: exit $code: $out"; exit 1; }
echo "$out"
eval "$("$rgw" env --dir "$work/ceph")"
secret="$(awk -F' = ' '$1 == "aws_secret_access_key" {print $2}' "$AWS_SHARED_CREDENTIALS_FILE")"
[ -n "$secret" ] || { echo "FAIL no secret in $AWS_SHARED_CREDENTIALS_FILE"; exit 1; }
outputs=()   # every file a run wrote or printed, for the secret check

# s3ls PREFIX: "objects N uploads M" below PREFIX of the bucket (boto3, path style).
s3ls() {
  "$py" - "$1" << 'PY'
import os, sys, boto3
c = boto3.client("s3", endpoint_url=os.environ["CKPT_S3_ENDPOINT"], region_name="us-east-1")
b = os.environ["CKPT_S3_BUCKET"]
o = c.list_objects_v2(Bucket=b, Prefix=sys.argv[1]).get("KeyCount", 0)
u = len(c.list_multipart_uploads(Bucket=b, Prefix=sys.argv[1]).get("Uploads", []))
print(f"objects {o} uploads {u}")
PY
}
# run NAME RANKS ENDPOINT [EXTRA...]: a run with the s3 backend below s3://BUCKET/NAME; sets code,
# out (stdout and stderr), and adds the report and the output to `outputs`.
run() {
  local name="$1" n="$2" ep="$3"
  shift 3
  cat > "$work/$name.config.json" << EOF
{"model": {"name": "llama2-7b", "scale": "1/2048"},
 "parallelism": {"tp": 1, "pp": 1, "dp": "auto", "zero_stage": 1},
 "backend": "s3", "s3": {"url": "s3://$CKPT_S3_BUCKET/$name", "endpoint": "$ep",
 "max_attempts": 4, "backoff_ms": 50, "connect_timeout_s": 2},
 "block_size": "5M", "queue_depth": 4, "repetitions": 1, "verify": true, "cache": "none"}
EOF
  out="$(timeout 300 "${MPI_BASE[@]}" -n "$n" "$BIN" run --config "$work/$name.config.json" \
        --target "$work/t-$name" --output "$work/$name.json" --csv "$work/$name.csv" "$@" 2>&1)"
  code=$?
  echo "$out" > "$work/$name.out"
  outputs+=("$work/$name.out" "$work/$name.json" "$work/$name.csv")
}

echo "# 1. backends"
if "$BIN" backends | grep -qE '^s3 +ok'; then ok "ckptbench backends: s3 ok"
else bad "ckptbench backends: $("$BIN" backends | grep '^s3')"; fi

echo "# 2. every layout, 1 and 4 ranks, through the gateway"
# (aggregated-rank:2 = ranks_per_file 2: two objects, each one upload of two writers)
for variant in file-per-tensor file-per-shard aggregated-rank aggregated-rank:2 aggregated-node shared-file; do
  layout="${variant%%:*}"
  extra=(); [[ "$variant" == *:* ]] && extra=(--set ranks_per_file="${variant#*:}")
  for n in 1 4; do
    name="l-${variant/:/-rpf}-$n"
    run "$name" "$n" "$CKPT_S3_ENDPOINT" --set layout="$layout" "${extra[@]}" --quiet
    # What `plan` said the point would ask of the store is what it asked, request for request.
    cmp_req="$(jq_py "$work/$name.json" "(lambda p, r: all(r[ph]['requests'].get(k, {}).get('count', 0) == v for ph in ('save', 'restore') for k, v in p['requests'][ph].items()))(d['points'][0]['plan'], d['points'][0]['repetitions'][0])")"
    [ "$cmp_req" = True ] || bad "$variant on $n rank(s): the plan's requests are not the run's: $(jq_py "$work/$name.json" "d['points'][0]['plan'].get('requests'), {ph: {k: v['count'] for k, v in d['points'][0]['repetitions'][0][ph].get('requests', {}).items()} for ph in ('save', 'restore')}")"
    got="$(jq_py "$work/$name.json" "d['status'], d['points'][0]['repetitions'][0]['restore']['bytes'], d['points'][0]['repetitions'][0]['save']['bytes'], d['points'][0]['repetitions'][0]['restore'].get('verify_inline')")"
    left="$(s3ls "$name/")"
    if [ $code -eq 0 ] && [[ "$got" == "ok "* ]] && [ "$(echo "$got" | cut -d' ' -f2)" = "$(echo "$got" | cut -d' ' -f3)" ] &&
      [[ "$got" == *True ]] && [ "$left" = "objects 0 uploads 0" ]; then
      ok "$variant on $n rank(s): saved, restored, verified, requests as planned ($got); afterwards $left"
    else bad "$variant on $n rank(s): exit $code, report '$got', left '$left': $(tail -n 3 <<< "$out")"; fi
  done
done
# The shared object of 4 writers was one multipart upload with parts from every writer: one
# create and one complete over all ranks, and every rank uploaded parts.
parts="$(jq_py "$work/l-shared-file-4.json" "(lambda s: (s['requests']['create_upload']['count'], s['requests']['complete']['count'], s['requests']['part']['count'], s['counters']['max_in_flight']['min']))(d['points'][0]['repetitions'][0]['save'])")"
if [[ "$parts" =~ ^\(1,\ 1,\ ([0-9]+),\ ([0-9]+)\)$ ]] && [ "${BASH_REMATCH[1]}" -ge 4 ] && [ "${BASH_REMATCH[2]}" -ge 1 ]; then
  ok "4-rank shared object: one upload created and completed, parts from every rank (create, complete, parts, min in flight: $parts)"
else bad "4-rank shared object: (create, complete, parts, min in flight) $parts"; fi

echo "# 3. refused before any I/O"
bad_creds="$work/bad-credentials"
printf '[ckpt]\naws_access_key_id = %s\naws_secret_access_key = wrong%s\n' \
  "$(awk -F' = ' '$1 == "aws_access_key_id" {print $2}' "$AWS_SHARED_CREDENTIALS_FILE")" "$RANDOM" > "$bad_creds"
AWS_SHARED_CREDENTIALS_FILE="$bad_creds" run badcreds 1 "$CKPT_S3_ENDPOINT"
if [ $code -eq 2 ] && grep -q "credentials ($bad_creds \[ckpt\]) were refused" <<< "$out" &&
  [ "$(s3ls badcreds/)" = "objects 0 uploads 0" ]; then ok "wrong credentials: exit 2, named"
else bad "wrong credentials: exit $code: $out"; fi
cat > "$work/nobucket.config.json" << EOF
{"model": "tiny", "backend": "s3", "block_size": "5M",
 "s3": {"url": "s3://no-such-bucket-$$/x", "endpoint": "$CKPT_S3_ENDPOINT"}}
EOF
out="$("$BIN" run --config "$work/nobucket.config.json" --target "$work/t-nb" --output "$work/nb.json" 2>&1)"; code=$?
outputs+=("$work/nb.json")
if [ $code -eq 2 ] && grep -q "bucket 'no-such-bucket-$$' does not exist" <<< "$out"; then
  ok "missing bucket: exit 2, named"
else bad "missing bucket: exit $code: $out"; fi
run unreachable 1 "http://127.0.0.1:9"
if [ $code -eq 2 ] && grep -q "http://127.0.0.1:9" <<< "$out" && grep -qi "connect" <<< "$out"; then
  ok "unreachable endpoint: exit 2, named"
else bad "unreachable endpoint: exit $code: $out"; fi

# Objects S3 would refuse: writers' ranges below its 5 MiB part minimum (4 writers of a 5.5 MiB
# shared object): run, validate (a world tp*pp*dp) and plan refuse it naming the limit.
run smallparts 4 "$CKPT_S3_ENDPOINT" --set layout=shared-file --set model.scale=1/16384
v="$("$BIN" validate --config "$work/smallparts.config.json" --set layout=shared-file \
  --set model.scale=1/16384 --set parallelism.dp=4 2>&1)"; vcode=$?
if [ $code -eq 2 ] && [ $vcode -eq 2 ] && grep -q "S3's 5 MiB minimum" <<< "$out" &&
  grep -q "layout 'shared-file'" <<< "$v" && ! grep -q "rep 1" <<< "$out" &&
  [ "$(s3ls smallparts/)" = "objects 0 uploads 0" ]; then
  ok "parts below S3's minimum: run and validate exit 2 before any I/O, naming the limit"
else bad "parts below S3's minimum: run exit $code ($out), validate exit $vcode ($v)"; fi

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
  "$rgw" stop --dir "$work/ceph" > /dev/null
  # The save fails within its attempts (3, connection refused at once); its clean-up then waits
  # for the gateway, which comes back here while the run still runs.
  sleep 5
  "$rgw" start --dir "$work/ceph" > /dev/null || bad "the gateway did not come back"
  wait "$bg"; code=$?
  t1=$(date +%s)
  left="$(s3ls gwstop/)"
  if [ $code -ne 0 ] && grep -q "ckptbench: error" "$work/gwstop.out" && grep -qi "connect" "$work/gwstop.out" &&
    [ $((t1 - t0)) -le 120 ] && [ "$left" = "objects 0 uploads 0" ]; then
    ok "gateway stopped mid-save: failed naming the connection, ended $((t1 - t0)) s after the stop; after it came back: $left"
  else bad "gateway stopped: exit $code after $((t1 - t0)) s, left '$left': $(grep -m2 error "$work/gwstop.out")"; fi
else bad "gateway stop: the save never had an upload open: $(tail -n 3 "$work/gwstop.out")"; fi

big sigterm
if wait_uploads sigterm; then
  kill -TERM $(rank_pids "$work/sigterm.config.json") 2> /dev/null
  wait "$bg"
  for _ in $(seq 30); do [ "$(s3ls sigterm/)" = "objects 0 uploads 0" ] && break; sleep 1; done
  left="$(s3ls sigterm/)"
  if [ "$left" = "objects 0 uploads 0" ]; then ok "SIGTERM mid-save: $left"
  else bad "SIGTERM mid-save: left $left: $(tail -n 3 "$work/sigterm.out")"; fi
else bad "SIGTERM: the save never had an upload open"; fi

big killed
if wait_uploads killed; then
  victim="$(rank_pids "$work/killed.config.json" | head -n 1)"
  kill -KILL "$victim" 2> /dev/null
  wait "$bg"
  for _ in $(seq 30); do [ "$(s3ls killed/)" = "objects 0 uploads 0" ] && break; sleep 1; done
  left="$(s3ls killed/)"
  if [ "$left" = "objects 0 uploads 0" ]; then ok "a rank killed (SIGKILL) mid-save: $left"
  else bad "a rank killed mid-save: left $left: $(tail -n 3 "$work/killed.out")"; fi
else bad "killed rank: the save never had an upload open"; fi

echo "# 6. the secret appears nowhere"
"$BIN" run --config "$work/l-shared-file-4.config.json" --target "$work/t-dry" --dry-run > "$work/dry.out" 2>&1
"$BIN" validate --config "$work/l-shared-file-4.config.json" > "$work/validate.out" 2>&1
CKPT_S3_TRACE=1 "$BIN" run --config "$work/l-file-per-shard-1.config.json" --target "$work/t-trace" \
  --output "$work/trace.json" > "$work/trace.out" 2>&1
outputs+=("$work/dry.out" "$work/validate.out" "$work/trace.out" "$work/trace.json")
leaks=()
for f in "${outputs[@]}"; do
  [ -e "$f" ] || continue
  grep -qF -- "$secret" "$f" && leaks+=("$f")
done
if [ ${#leaks[@]} -eq 0 ] && [ ${#outputs[@]} -gt 20 ]; then
  ok "the secret key is in none of ${#outputs[@]} outputs (reports, CSV, logs, --dry-run, validate, CKPT_S3_TRACE)"
else bad "the secret key leaked into: ${leaks[*]}"; fi

summary s3
