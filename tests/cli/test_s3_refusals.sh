#!/usr/bin/env bash
# The s3 backend refuses before any I/O, naming what is wrong (exit 2): wrong credentials, a
# missing bucket, an unreachable endpoint, objects S3 would refuse (parts below its 5 MiB
# minimum); nothing is left in the bucket; the secret key is in none of the outputs, also
# --dry-run's and validate's.
# The gateway: the ctest fixture's (tests/cli/s3_gateway.sh) or the test's own (tests/cli/s3lib.sh).
# Skips (77) only when the gateway cannot run here (packages, root), printing why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh" s3-refusals

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


# An s3:// target: refused where it names another store, disagrees with s3.url, or meets a
# point of a file backend; `workdir` without it.
t_out="$( { "$BIN" run --config "$work/smallparts.config.json" --target gs://b/p 2>&1
           "$BIN" run --config "$work/smallparts.config.json" --target "s3://$CKPT_S3_BUCKET/elsewhere" 2>&1
           "$BIN" run --config "$work/smallparts.config.json" --set backend=posix --target "s3://$CKPT_S3_BUCKET/smallparts" 2>&1
           "$BIN" run --config "$work/smallparts.config.json" --set workdir="$work/wd" --target "$work/t-wd" 2>&1; } )"
if [ "$(grep -c '^ckptbench: error' <<< "$t_out")" -eq 4 ] && grep -q "'gs://' is no object store" <<< "$t_out" &&
  grep -q "'s3.url' \"s3://$CKPT_S3_BUCKET/smallparts\" and the target" <<< "$t_out" &&
  grep -q "point 1 uses backend 'posix'" <<< "$t_out" && grep -q "'workdir' applies to an object store target" <<< "$t_out" &&
  [ ! -e "$work/t-wd" ]; then
  ok "s3:// targets: another scheme, a different s3.url, a file backend's point, workdir with a directory: each refused, named"
else bad "s3:// target refusals: $t_out"; fi

"$BIN" run --config "$work/smallparts.config.json" --target "$work/t-dry" --dry-run > "$work/dry.out" 2>&1
"$BIN" validate --config "$work/smallparts.config.json" > "$work/validate.out" 2>&1
outputs+=("$work/dry.out" "$work/validate.out")
no_secret_leaked 5
summary s3-refusals
