#!/usr/bin/env bash
# Bad input: one clear message naming the key or path, exit code 2, no file created; on 4 ranks
# the message is printed once and nothing hangs.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_workdir badinput

# expect NAME EXPECTED_SUBSTRING CMD...: exit 2, message contains substring, printed once,
# and no file appears under $work/target*.
expect() {
  local name="$1" want="$2"; shift 2
  local before after out code
  before="$(find "$work" | sort)"
  out="$(timeout 120 "$@" 2>&1)"; code=$?
  after="$(find "$work" | sort)"
  local n
  n="$(grep -c "ckptbench: error" <<< "$out")"
  if [ "$code" -ne 2 ]; then
    bad "$name: exit $code (want 2): $out"; return
  fi
  if ! grep -qF -- "$want" <<< "$out"; then
    bad "$name: message lacks '$want': $out"; return
  fi
  if [ "$n" -ne 1 ]; then
    bad "$name: message printed $n times: $out"; return
  fi
  if [ "$before" != "$after" ]; then
    bad "$name: files were created: $(diff <(echo "$before") <(echo "$after"))"; return
  fi
  ok "$name"
}

cfg() { echo "$2" > "$work/$1.json"; echo "$work/$1.json"; }
base='"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "backend": "posix", "layout": "file-per-shard"'
mkdir -p "$work/empty"

for ranks in 1 4; do
  if [ "$ranks" -eq 1 ]; then run=("$BIN" run); else run=("${MPI[@]}" -n 4 "$BIN" run); fi
  expect "unknown key ($ranks)" "unknown key 'blok_size'" "${run[@]}" --config "$(cfg k "{$base, \"blok_size\": \"1M\"}")" --target "$work/t1"
  expect "wrong type ($ranks)" "'direct': expected true or false" "${run[@]}" --config "$(cfg t "{$base, \"direct\": \"yes\"}")" --target "$work/t1"
  expect "zero size ($ranks)" "'block_size'" "${run[@]}" --config "$(cfg z "{$base, \"block_size\": 0}")" --target "$work/t1"
  expect "negative size ($ranks)" "'block_size'" "${run[@]}" --config "$(cfg n "{$base, \"block_size\": \"-1M\"}")" --target "$work/t1"
  expect "junk size ($ranks)" "'block_size': invalid size 'huge'" "${run[@]}" --config "$(cfg j "{$base, \"block_size\": \"huge\"}")" --target "$work/t1"
  expect "block size not a multiple of 512 ($ranks)" "'block_size': 1000 is not allowed (a multiple of 512" "${run[@]}" --config "$(cfg a "{$base, \"block_size\": 1000}")" --target "$work/t1"
  expect "unaligned direct ($ranks)" "is not a multiple of 'align' 4096 while 'direct' is true" "${run[@]}" --config "$(cfg a2 "{$base, \"direct\": true, \"align\": 4096, \"block_size\": 1536}")" --target "$work/t1"
  expect "missing parent ($ranks)" "does not exist" "${run[@]}" --config "$(cfg ok "{$base}")" --target "$work/no/such/dir"
  mkdir -p "$work/full"; touch "$work/full/precious"
  expect "non-empty target ($ranks)" "--force" "${run[@]}" --config "$(cfg ok "{$base}")" --target "$work/full"
  expect "bad json ($ranks)" "not valid JSON" "${run[@]}" --config "$(cfg bad "{$base,")" --target "$work/t1"
  expect "tp not dividing ($ranks)" "tp" "${run[@]}" --config "$(cfg tp "{\"model\": \"tiny\", \"parallelism\": {\"tp\": 3}}")" --target "$work/t1"
  if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$work/ro"; chmod a-w "$work/ro"
    expect "unwritable target ($ranks)" "not writable" "${run[@]}" --config "$(cfg ok "{$base}")" --target "$work/ro/t"
  else
    # root can write anywhere; a read-only bind would need mount privileges we may not have.
    echo "skip unwritable target ($ranks): running as root (covered as non-root)"
  fi
done
# Separate save and restore jobs: --from a report that is not a finished save's, --read-assign
# values, a loader rule that needs another rank count.
echo '{"phases": "both", "status": "ok", "environment": {"run_dir": "/x"}}' > "$work/both-report.json"
echo '{"phases": "save", "status": "failed", "environment": {"run_dir": "/x"}}' > "$work/failed-save.json"
expect "--from a report of a both run" "not the report of a --phases save run" "$BIN" run --phases restore --from "$work/both-report.json"
expect "--from a failed save's report" "the save job did not finish (status \"failed\")" "$BIN" run --phases restore --from "$work/failed-save.json"
expect "--read-assign value" "--read-assign: round-robin not in {auto,size,loader}" "$BIN" run --phases restore --read-dir "$work/empty" --read-assign round-robin
expect "--read-assign without --read-dir" "--read-assign applies to --read-dir only" "$BIN" run --config "$(cfg ok "{$base}")" --target "$work/t1" --read-assign size
mkdir -p "$work/dcp" && : > "$work/dcp/.metadata" && : > "$work/dcp/__0_0.distcp" && : > "$work/dcp/__1_0.distcp"
expect "--read-assign loader on another rank count" "dcp: the DCP checkpoint . was saved by 2 ranks" "$BIN" run --config "$(cfg ok "{$base}")" --phases restore --read-dir "$work/dcp" --read-assign loader -o "$work/rd.json"
# A target that should be a mounted CephFS but is the local directory underneath: refused.
expect "target_fs not mounted" "'target_fs' is \"cephfs\", but the target '$work/empty' is on" "${MPI[@]}" -n 2 "$BIN" run --config "$(cfg ok "{$base}")" --target "$work/empty" --set target_fs=cephfs -o "$work/tfs.json"
expect "validate unknown key" "unknown key 'blok_size'" "$BIN" validate "$(cfg k "{$base, \"blok_size\": \"1M\"}")"
expect "refuse system dir" "refusing a system directory" "$BIN" run --target /usr
# A key given twice at any depth: refused with the lines of both.
printf '{\n  "model": "tiny",\n  "parallelism": {\n    "tp": 1,\n    "tp": 2\n  }\n}\n' > "$work/dupkey.json"
expect "validate duplicated nested key" "the key \"tp\" appears twice in one object ('parallelism.tp', lines 4 and 5)" "$BIN" validate "$work/dupkey.json"
# validate refuses what every run would refuse, also when dp is "auto" (the job size unknown):
# tp 3 does not divide llama2-7b's 32 attention heads, saved or restored at that tp.
expect "validate tp not dividing the heads, dp auto" "parallelism.tp: tp 3 does not divide the attention heads (32) of model llama2-7b" "$BIN" validate "$(cfg tp3 '{"model": "llama2-7b", "parallelism": {"tp": 3, "dp": "auto"}}')"
expect "validate restore tp not dividing the heads, dp auto" "restore.parallelism.tp: tp 3 does not divide the attention heads (32) of model llama2-7b" "$BIN" validate "$(cfg rtp3 '{"model": "llama2-7b", "parallelism": {"tp": 2, "dp": "auto"}, "restore": {"parallelism": {"tp": 3}}}')"
for c in '"parallelism": {"tp": 2, "dp": "auto"}' '"parallelism": {"tp": 2, "dp": "auto"}, "restore": {"parallelism": {"tp": 4}}'; do
  if out="$("$BIN" validate "$(cfg tp2 "{\"model\": \"llama2-7b\", $c}")" 2>&1)"; then ok "validate llama2-7b $c"
  else bad "validate llama2-7b $c: $out"; fi
done
# A valid config validates with exit 0.
if "$BIN" validate "$(cfg ok "{$base}")" >/dev/null; then ok "validate ok"; else bad "validate ok"; fi
summary
