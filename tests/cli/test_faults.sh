#!/usr/bin/env bash
# Failures mid-run: a failing rank at point 3 leaves a document with the 2 finished points and
# the error; a file deleted, truncated or corrupted between save and restore gives a clear
# error naming it. Nothing hangs (every run under a timeout), exit code 1.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_workdir faults

cat > "$work/sweep.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "sweep": {"block_size": ["64K", "128K", "256K", "512K"]}}
J
cat > "$work/one.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "256K"}
J

# run NAME FAULT CONFIG: runs on 4 ranks with the fault injected; sets out, code, doc.
run() {
  local name="$1" fault="$2" cfg="$3"
  doc="$work/$name.json"
  out="$(CKPT_FAULT_INJECT="$fault" timeout 180 "${MPI[@]}" -x CKPT_FAULT_INJECT -n 4 "$BIN" run \
        --config "$cfg" --target "$work/t-$name" --output "$doc" --quiet 2>&1)"
  code=$?
}


run point3 "point=3,phase=save,rank=1" "$work/sweep.json"
if [ "$code" -eq 1 ]; then ok "point 3 failure exits 1"; else bad "point 3 failure: exit $code: $out"; fi
if [ -f "$doc" ] && [ "$(jq_py "$doc" "d['status']")" = failed ] \
   && [ "$(jq_py "$doc" "len(d['points'])")" = 2 ] \
   && [ "$(jq_py "$doc" "all(p['status']=='ok' for p in d['points'])")" = True ] \
   && jq_py "$doc" "d['error']" | grep -q "rank 1" && jq_py "$doc" "d['error']" | grep -q "injected fault"; then
  ok "partial document: 2 finished points and the error"
else
  bad "partial document wrong: $(cat "$doc" 2>/dev/null | head -c 600)"
fi
[ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ] && ok "error printed once" || bad "error printed $(grep -c "ckptbench: error" <<< "$out") times: $out"

for action in delete truncate corrupt; do
  run "$action" "phase=between,action=$action,rank=1" "$work/one.json"
  case "$action" in
    delete) want="No such file or directory" ;;
    truncate) want="truncated" ;;
    corrupt) want="verify failed" ;;
  esac
  if [ "$code" -eq 1 ] && grep -q "$want" <<< "$out" && grep -q "rank 1" <<< "$out" && grep -q "optim_states.pt\|model_states.pt" <<< "$out"; then
    ok "$action between save and restore: clear error naming the file"
  else
    bad "$action: exit $code, output: $out"
  fi
  if [ "$action" = corrupt ] && ! grep -q "byte offset [0-9]" <<< "$out"; then bad "corrupt: no offset in: $out"; fi
done
# The run directories are removed after a failure (nothing half-written left behind).
left="$(find "$work" -name '*.pt' | wc -l)"
[ "$left" -eq 0 ] && ok "no checkpoint files left after failures" || bad "$left files left behind"
summary
