# What the s3 tests (tests/cli/test_s3_*.sh) share, sourced after tests/cli/lib.sh: the gateway,
# a bucket lister, a run helper and the secret-leak check.
# The gateway: under ctest the fixture's (CKPT_S3_FIXTURE=DIR, started by tests/cli/s3_gateway.sh;
# the s3 tests hold one resource lock, so one of them at a time may stop and restart it), else
# one of the test's own, stopped at its exit. Skips (77) only when the gateway cannot run here
# (packages, root), printing why.
need_binary
need_backend s3
py="$(python_with boto3)" || { echo "skip: python3-boto3 is not installed (scripts/setup.sh --with-cluster)"; exit 77; }
make_workdir "$1"
rgw="$SRC/scripts/ceph/local-rgw.sh"
proxy_pid=""
own_gateway=0
cli_on_exit() {
  [ -z "$proxy_pid" ] || kill "$proxy_pid" 2> /dev/null
  [ $own_gateway -eq 0 ] || "$SRC/scripts/ceph/local-ceph.sh" stop --dir "$gwdir" > /dev/null 2>&1 || true
}
if [ -n "${CKPT_S3_FIXTURE:-}" ] && [ -s "$CKPT_S3_FIXTURE/env" ]; then
  gwdir="$CKPT_S3_FIXTURE/ceph"
  . "$CKPT_S3_FIXTURE/env"
  echo "the fixture's gateway: $CKPT_S3_ENDPOINT"
elif [ -n "${CKPT_S3_FIXTURE:-}" ] && [ -s "$CKPT_S3_FIXTURE/skip" ]; then
  echo "skip: $(cat "$CKPT_S3_FIXTURE/skip")"; exit 77
else
  gwdir="$work/ceph"
  export CKPT_CEPH_PORT="$(free_ports 3)"
  export CKPT_RGW_PORT=$((CKPT_CEPH_PORT + 1))
  own_gateway=1
  out="$("$rgw" start --dir "$gwdir" 2>&1)"; code=$?
  if [ $code -eq 77 ]; then echo "skip: $out"; exit 77; fi
  [ $code -eq 0 ] || { echo "FAIL local-rgw.sh start: exit $code: $out"; exit 1; }
  echo "$out"
  eval "$("$rgw" env --dir "$gwdir")"
fi
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

# s3_config NAME ENDPOINT: writes $work/NAME.config.json, a small checkpoint with the s3 backend
# below s3://BUCKET/NAME.
s3_config() {
  cat > "$work/$1.config.json" << EOF
{"model": {"name": "llama2-7b", "scale": "1/2048"},
 "parallelism": {"tp": 1, "pp": 1, "dp": "auto", "zero_stage": 1},
 "backend": "s3", "s3": {"url": "s3://$CKPT_S3_BUCKET/$1", "endpoint": "$2",
 "max_attempts": 4, "backoff_ms": 50, "connect_timeout_s": 2},
 "block_size": "5M", "queue_depth": 4, "repetitions": 1, "verify": true, "cache": "none"}
EOF
}

# run NAME RANKS ENDPOINT [EXTRA...]: a run of s3_config NAME ENDPOINT; sets code, out (stdout and
# stderr), and adds the report and the output to `outputs`.
run() {
  local name="$1" n="$2" ep="$3"
  shift 3
  s3_config "$name" "$ep"
  out="$(timeout 300 "${MPI_BASE[@]}" -n "$n" "$BIN" run --config "$work/$name.config.json" \
        --target "$work/t-$name" --output "$work/$name.json" --csv "$work/$name.csv" "$@" 2>&1)"
  code=$?
  echo "$out" > "$work/$name.out"
  outputs+=("$work/$name.out" "$work/$name.json" "$work/$name.csv")
}

# no_secret_leaked: the secret key is in none of `outputs` (at least MIN of them exist).
no_secret_leaked() {
  local leaks=() seen=0 f
  for f in "${outputs[@]}"; do
    [ -e "$f" ] || continue
    seen=$((seen + 1))
    grep -qF -- "$secret" "$f" && leaks+=("$f")
  done
  if [ ${#leaks[@]} -eq 0 ] && [ $seen -ge "$1" ]; then
    ok "the secret key is in none of the $seen outputs of this test (reports, CSV, logs)"
  else bad "the secret key leaked into: ${leaks[*]} (outputs seen: $seen)"; fi
}
