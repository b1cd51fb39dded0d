#!/usr/bin/env bash
# The rest of ckptbench on a real S3 server (Ceph's RADOS Gateway):
#  6. MLPerf Storage's checkpoint sizing runs on the store; `characterize` on it searches the part
#     size and requests in flight and measures PUT/HEAD/DELETE/LIST rates; a save job and a
#     separate restore job (--phases save, --phases restore --from) on another rank count;
#  7. the secret key appears in no output: reports, CSV, stdout/stderr, CKPT_S3_TRACE's trace.
# The gateway: the ctest fixture's (tests/cli/s3_gateway.sh) or the test's own (tests/cli/s3lib.sh).
# Skips (77) only when the gateway cannot run here (packages, root), printing why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh" s3-tools

echo "# 6. the rest of the tool on the store: MLPerf Storage's sizing, characterize"
# MLPerf Storage's llama3_8b checkpoint (DLIO's files, emulated world 8) as objects: one PUT per
# file, the restore streamed in parts (as s3torchconnector's reader does), the plan's requests.
out="$(timeout 300 "${MPI_BASE[@]}" -n 4 "$BIN" run --config "$SRC/configs/mlperf-llama3-8b.json" \
  --set backend=s3 --set s3.url="s3://$CKPT_S3_BUCKET/mlperf" --set s3.endpoint="$CKPT_S3_ENDPOINT" \
  --set block_size=8M --repetitions 1 --target "$work/t-mlperf" --output "$work/mlperf.json" 2>&1)"; code=$?
echo "$out" > "$work/mlperf.out"
outputs+=("$work/mlperf.out" "$work/mlperf.json")
got="$(jq_py "$work/mlperf.json" "(lambda p, r: (d['status'], r['verified'], all(r[ph]['requests'].get(k, {}).get('count', 0) == v for ph in ('save', 'restore') for k, v in p['plan']['requests'][ph].items() if v), p['plan']['requests']['objects']))(d['points'][0], d['points'][0]['repetitions'][0])")"
if [ $code -eq 0 ] && [ "$got" = "('ok', True, True, 16)" ] && [ "$(s3ls mlperf/)" = "objects 0 uploads 0" ]; then
  ok "MLPerf Storage llama3-8b sizing on s3: 16 objects saved, restored, verified, requests as planned"
else bad "MLPerf sizing on s3: exit $code, $got: $(tail -n 3 <<< "$out")"; fi
# characterize on the store: parts and requests in flight searched, request rates measured.
s3_config char "$CKPT_S3_ENDPOINT"
out="$(timeout 300 "${MPI_BASE[@]}" -n 2 "$BIN" characterize --config "$work/char.config.json" \
  --target "$work/t-char" --budget 0.5 --probe-size 12M --max-reps 4 \
  --stages backend,transfer_size,direct,metadata \
  --output "$work/char.json" 2>&1)"; code=$?
echo "$out" > "$work/char.out"
outputs+=("$work/char.out" "$work/char.json" "$work/char.recommended.json")
got="$(jq_py "$work/char.json" "(lambda c: (c['store']['backend'], '5M' in {p['settings']['block_size'] for p in c['probes'] if p['stage'] == 'transfer_size'}, c['findings']['metadata']['create_per_s']['mean'] > 0, c['findings']['metadata']['list_keys_per_s']['mean'] > 0, 'O_DIRECT' in str(c['stage_notes'].get('direct', ''))))(d['characterization'])")"
if [ $code -eq 0 ] && [ "$got" = "('s3', True, True, True, True)" ] && grep -q "PUT .*/s, HEAD" <<< "$out" &&
  [ "$(s3ls char/)" = "objects 0 uploads 0" ]; then
  ok "characterize on s3: part sizes from 5 MiB, PUT/HEAD/DELETE/LIST rates, no O_DIRECT stage, nothing left"
else bad "characterize on s3: exit $code, $got: $(tail -n 5 <<< "$out")"; fi

# Separate jobs: a 4-rank save job keeps its objects; a 2-rank restore job --from its run
# directory reads and verifies every byte, then (--remove-saved) removes the objects and the
# directory.
s3_config phases "$CKPT_S3_ENDPOINT"
out="$(timeout 300 "${MPI_BASE[@]}" -n 4 "$BIN" run --config "$work/phases.config.json" --set layout=shared-file \
  --phases save --target "$work/t-phases" --output "$work/phases-save.json" 2>&1)"; code=$?
echo "$out" > "$work/phases-save.out"
outputs+=("$work/phases-save.out" "$work/phases-save.json")
rd="$(jq_py "$work/phases-save.json" "d['environment']['run_dir']")"
kept="$(s3ls phases/)"
out="$(timeout 300 "${MPI_BASE[@]}" -n 2 "$BIN" run --phases restore --from "$rd" --remove-saved \
  --output "$work/phases-restore.json" 2>&1)"; code2=$?
echo "$out" > "$work/phases-restore.out"
outputs+=("$work/phases-restore.out" "$work/phases-restore.json")
got="$(jq_py "$work/phases-restore.json" "(lambda r: (d['status'], r['verified'], r['bytes_verified'] > 0, d.get('saved_run_removed') == '$rd'))(d['points'][0]['repetitions'][0])")"
if [ $code -eq 0 ] && [ $code2 -eq 0 ] && [[ "$kept" == "objects 1 uploads 0" ]] &&
  [ "$got" = "('ok', True, True, True)" ] && [ "$(s3ls phases/)" = "objects 0 uploads 0" ] && [ ! -e "$rd" ]; then
  ok "separate jobs on s3: 4-rank save kept its shared object, 2-rank restore verified it, --remove-saved removed it"
else bad "separate jobs on s3: save exit $code (kept '$kept'), restore exit $code2 ($got), left '$(s3ls phases/)': $(tail -n 3 <<< "$out")"; fi

# A saved object gone from the store: the restore job refuses before any I/O, naming it.
"${MPI_BASE[@]}" -n 2 "$BIN" run --config "$work/phases.config.json" --phases save \
  --target "$work/t-phases2" --output "$work/phases2.json" --quiet > "$work/phases2.out" 2>&1
rd="$(jq_py "$work/phases2.json" "d['environment']['run_dir']")"
"$py" - "$(basename "$rd")" << 'PY'
import os, sys, boto3
c = boto3.client("s3", endpoint_url=os.environ["CKPT_S3_ENDPOINT"], region_name="us-east-1")
b = os.environ["CKPT_S3_BUCKET"]
for o in c.list_objects_v2(Bucket=b, Prefix="phases/" + sys.argv[1] + "/").get("Contents", [])[:1]:
    c.delete_object(Bucket=b, Key=o["Key"])
PY
out="$(timeout 120 "${MPI_BASE[@]}" -n 2 "$BIN" run --phases restore --from "$rd" --remove-saved \
  --output "$work/phases2-restore.json" 2>&1)"; code=$?
outputs+=("$work/phases2.out" "$work/phases2.json")
if [ $code -eq 2 ] && grep -q "is missing in the s3 store" <<< "$out" && [ -d "$rd" ]; then
  ok "a saved object deleted: the restore job exits 2 before any I/O naming it, the saved run kept"
else bad "deleted saved object: exit $code: $(grep -m1 error <<< "$out")"; fi

# The store as the target: --target s3://BUCKET/PREFIX, the run directory under workdir.
s3_config urltgt "$CKPT_S3_ENDPOINT"
"$py" -c "import json,sys; d=json.load(open(sys.argv[1])); d['s3'].pop('url'); json.dump(d, open(sys.argv[1], 'w'))" \
  "$work/urltgt.config.json"
out="$(timeout 300 "${MPI_BASE[@]}" -n 2 "$BIN" run --config "$work/urltgt.config.json" \
  --target "s3://$CKPT_S3_BUCKET/urltgt" --set workdir="$work/wd" --output "$work/urltgt.json" 2>&1)"; code=$?
outputs+=("$work/urltgt.json")
got="$(jq_py "$work/urltgt.json" "(d['status'], d['config']['s3']['url'], d['environment']['run_dir'].startswith('$work/wd/'))")"
if [ $code -eq 0 ] && [ "$got" = "('ok', 's3://$CKPT_S3_BUCKET/urltgt', True)" ] &&
  [ "$(s3ls urltgt/)" = "objects 0 uploads 0" ]; then
  ok "--target s3://BUCKET/PREFIX: saved, restored, verified below it, the run directory under workdir"
else bad "--target s3://: exit $code, $got: $(tail -n 3 <<< "$out")"; fi

echo "# 7. the secret appears nowhere"
"$BIN" run --config "$work/char.config.json" --target "$work/t-dry" --dry-run > "$work/dry.out" 2>&1
"$BIN" validate --config "$work/char.config.json" > "$work/validate.out" 2>&1
run trace 1 "$CKPT_S3_ENDPOINT" --set layout=file-per-shard
CKPT_S3_TRACE=1 "$BIN" run --config "$work/trace.config.json" --target "$work/t-trace" \
  --output "$work/trace.json" > "$work/trace.out" 2>&1
outputs+=("$work/dry.out" "$work/validate.out" "$work/trace.out")
grep -q "Authorization: AWS4-HMAC-SHA256" "$work/trace.out" || bad "CKPT_S3_TRACE=1 printed no signed request"
no_secret_leaked 12

summary s3-tools
