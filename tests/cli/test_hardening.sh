#!/usr/bin/env bash
# Reliability, second round (issue 16): hostile configs (deep nesting, huge sweeps, megabyte
# values), a symlink to / higher up the target path, refusals that must leave nothing behind,
# two runs on one target or one report path, --timeout recorded as given, command-line errors
# printed once, no report .tmp left when the report cannot be written. Every case runs under
# `timeout`, so a hang fails the case instead of the suite.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
make_workdir hard
export OMPI_MCA_rmaps_base_oversubscribe=1
cli_on_exit() { [ -n "${bg:-}" ] && kill -9 "$bg" 2> /dev/null; rmdir /tmp/ckpt-hard-probe 2> /dev/null; true; }

# 1. A 100,000-level array as a comment (and inside a sweep): exit 2 with a message, no crash.
"$PY3" -c "print('{\"model\": \"tiny\", \"comment\": ' + '['*100000 + ']'*100000 + '}')" > "$work/deep.json"
timeout 30 "$BIN" validate "$work/deep.json" > "$work/l" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "nested deeper than 64" "$work/l" && ok "deep nesting refused (exit 2)" || bad "deep nesting: exit $rc: $(head -c 300 "$work/l")"
"$PY3" -c "print('{\"model\": \"tiny\", \"sweep\": {\"queue_depth\": ' + '['*5000 + '1' + ']'*5000 + '}}')" > "$work/deep2.json"
timeout 30 "$BIN" validate "$work/deep2.json" > "$work/l" 2>&1; rc=$?
[ $rc = 2 ] && ok "deep nesting inside sweep refused" || bad "deep sweep: exit $rc"

# 2. A sweep of 120,000 points from a few hundred bytes: refused at once, with the count.
"$PY3" - "$work/sweep.json" <<'PY'
import json, sys
sw = {"queue_depth": list(range(1, 101)), "block_size": [4096 * i for i in range(1, 101)],
      "align": [0, 4096], "preallocate": [True, False], "sync": ["none", "file", "end"]}
json.dump({"model": "tiny", "sweep": sw}, open(sys.argv[1], "w"))
PY
s=$(date +%s%N); timeout 30 "$BIN" validate "$work/sweep.json" > "$work/l" 2>&1; rc=$?
ms=$(( ($(date +%s%N) - s) / 1000000 ))
[ $rc = 2 ] && [ $ms -lt 5000 ] && grep -q "120000 points" "$work/l" && ok "huge sweep refused in $ms ms" || bad "huge sweep: exit $rc after $ms ms"

# 3. Messages stay short whatever the input: a 100,000-character layout name.
"$PY3" -c "import json; json.dump({'model': 'tiny', 'layout': 'x' * 100000}, open('$work/long.json', 'w'))"
timeout 30 "$BIN" validate "$work/long.json" > "$work/l" 2>&1; rc=$?
n=$(wc -c < "$work/l")
[ $rc = 2 ] && [ "$n" -lt 3000 ] && ok "message of a huge value bounded ($n bytes)" || bad "long value: exit $rc, $n bytes"

# 3b. Found by the config fuzzer: a number beyond a double, and a world beyond an int
# (tp 65536 x pp 65536): both are config errors (exit 2) naming what is wrong.
echo '{"model": "tiny", "repetitions": 1e999}' > "$work/huge-num.json"
timeout 30 "$BIN" validate "$work/huge-num.json" > "$work/l" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "huge-num.json.*out of range" "$work/l" && ok "1e999 refused as a config error" || bad "1e999: exit $rc: $(head -c 300 "$work/l")"
echo '{"model": "tiny", "parallelism": {"tp": 65536, "pp": 65536, "dp": 1}}' > "$work/huge-world.json"
timeout 30 "$BIN" validate "$work/huge-world.json" > "$work/l" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "4294967296 ranks exceeds" "$work/l" && ok "tp*pp*dp beyond 2^30 refused" || bad "huge world: exit $rc: $(head -c 300 "$work/l")"

# 4. A symbolic link to / higher up the target path is refused (w/lroot/tmp/x is really /tmp/x).
echo '{"model": "tiny", "repetitions": 1}' > "$work/tiny.json"
ln -s / "$work/lroot"; mkdir -p /tmp/ckpt-hard-probe
timeout 120 "${MPI[@]}" "$BIN" run --config "$work/tiny.json" --target "$work/lroot/tmp/ckpt-hard-probe" --force \
  --output "$work/o1.json" > "$work/l" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "symbolic link" "$work/l" && ok "symlink to / in the target path refused" || bad "symlink to /: exit $rc"
[ -z "$(ls -A /tmp/ckpt-hard-probe)" ] && ok "nothing written through the link" || bad "files under /tmp/ckpt-hard-probe"

# 5. Refusals after the target is made leave nothing behind: free space, O_DIRECT on tmpfs.
printf '{"model": {"name": "llama2-7b"}, "repetitions": 1}\n' > "$work/huge.json"
timeout 120 "${MPI[@]}" "$BIN" run --config "$work/huge.json" --target "$work/newdir" --output "$work/o2.json" > "$work/l" 2>&1; rc=$?
[ $rc = 2 ] && [ ! -e "$work/newdir" ] && ok "free-space refusal leaves no target directory" || bad "free space: exit $rc, newdir $(ls -d "$work/newdir" 2>&1)"
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  d="/dev/shm/ckpt-hard-$$"
  printf '{"model": "tiny", "direct": true, "repetitions": 1}\n' > "$work/direct.json"
  timeout 120 "${MPI[@]}" "$BIN" run --config "$work/direct.json" --target "$d" --output "$work/o3.json" > "$work/l" 2>&1; rc=$?
  if [ $rc = 2 ] && [ ! -e "$d" ]; then ok "O_DIRECT refusal leaves no target directory"
  elif [ $rc = 0 ]; then echo "skip O_DIRECT case: /dev/shm accepts O_DIRECT here"; rm -rf "$d"
  else bad "O_DIRECT refusal: exit $rc, $(ls -d "$d" 2>&1)"; rm -rf "$d"; fi
fi

# 6. Two runs on one target at once: the second is refused, naming the first (host, pid).
printf '{"model": {"name": "llama2-7b", "scale": "1/64"}, "repetitions": 4}\n' > "$work/c.json"
mkdir -p "$work/shared"
timeout 300 "${MPI[@]}" "$BIN" run --config "$work/c.json" --target "$work/shared" --output "$work/a.json" --quiet > "$work/la" 2>&1 &
bg=$!
for _ in $(seq 100); do [ -e "$work/shared/.ckptbench.lock" ] && break; sleep 0.1; done
timeout 120 "${MPI[@]}" "$BIN" run --config "$work/c.json" --target "$work/shared" --force --output "$work/b.json" --quiet > "$work/lb" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "in use by another ckptbench run (host $(hostname), pid" "$work/lb" && ok "second run on the same target refused" || bad "second run: exit $rc: $(head -c 300 "$work/lb")"
mkdir -p "$work/other"
timeout 120 "${MPI[@]}" "$BIN" run --config "$work/c.json" --target "$work/other" --output "$work/a.json" --quiet > "$work/lc" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "report '$work/a.json' is in use" "$work/lc" && ok "second run with the same --output refused" || bad "same output: exit $rc: $(head -c 300 "$work/lc")"
wait $bg; rc=$?; bg=""
[ $rc = 0 ] && [ ! -e "$work/shared/.ckptbench.lock" ] && [ ! -e "$work/a.json.lock" ] && ok "first run unharmed, its locks removed" || bad "first run: exit $rc, $(ls -A "$work/shared")"
# A lock left by a dead process of this host is taken over, and the report says so.
echo "$(hostname) 999999 2026-01-01T00:00:00Z" > "$work/other/.ckptbench.lock"
timeout 120 "${MPI[@]}" "$BIN" run --config "$work/tiny.json" --target "$work/other" --force --output "$work/s.json" --quiet > "$work/l" 2>&1; rc=$?
[ $rc = 0 ] && [ "$(jq_py "$work/s.json" "len(d['environment']['stale_locks'])")" = 1 ] && ok "stale lock of a dead run reported and taken over" || bad "stale lock: exit $rc"
# What a run killed by SIGKILL leaves (its lock naming its run directory, the directory with
# files): the next run needs no --force, removes that directory and reports it; a kept one stays.
mkdir -p "$work/dead/ckptbench-2026-01-01T00-00-00Z-999999/sub"
touch "$work/dead/ckptbench-2026-01-01T00-00-00Z-999999/a" "$work/dead/ckptbench-2026-01-01T00-00-00Z-999999/sub/b"
# The run's marker, as every run writes it (the lock's identity): what vouches for the directory.
echo "$(hostname) 999999 2026-01-01T00:00:00Z" > "$work/dead/ckptbench-2026-01-01T00-00-00Z-999999/.ckptbench-run"
printf '%s 999999 2026-01-01T00:00:00Z\nrun_dir ckptbench-2026-01-01T00-00-00Z-999999\nkeep 0\n' "$(hostname)" > "$work/dead/.ckptbench.lock"
timeout 120 "${MPI[@]}" "$BIN" run --config "$work/tiny.json" --target "$work/dead" --output "$work/d.json" --quiet > "$work/l" 2>&1; rc=$?
[ $rc = 0 ] && [ -z "$(ls -A "$work/dead")" ] && jq_py "$work/d.json" "d['environment']['stale_locks'][0]" | grep -q "run directory ckptbench-2026-01-01T00-00-00Z-999999 (4 entries) was removed" &&
  ok "a dead run's lock and directory: no --force needed, directory removed and reported" || bad "dead run debris: exit $rc, left: $(ls -A "$work/dead"), $(head -c 300 "$work/l")"
mkdir -p "$work/kept/ckptbench-2026-01-01T00-00-00Z-999999"
printf '%s 999999 2026-01-01T00:00:00Z\nrun_dir ckptbench-2026-01-01T00-00-00Z-999999\nkeep 1\n' "$(hostname)" > "$work/kept/.ckptbench.lock"
timeout 120 "${MPI[@]}" "$BIN" run --config "$work/tiny.json" --target "$work/kept" --output "$work/k.json" --quiet > "$work/l" 2>&1; rc=$?
[ $rc = 2 ] && grep -q "not empty" "$work/l" && [ -d "$work/kept/ckptbench-2026-01-01T00-00-00Z-999999" ] && ok "a dead run's kept directory is never removed (refused without --force)" || bad "kept debris: exit $rc: $(head -c 300 "$work/l")"

# 7. --timeout is recorded as given (with its fraction).
timeout 120 "${MPI[@]}" "$BIN" run --config "$work/tiny.json" --target "$work/t7" --timeout 30.5 --output "$work/t.json" --quiet > "$work/l" 2>&1; rc=$?
[ $rc = 0 ] && [ "$(jq_py "$work/t.json" "d['config']['timeout_s']")" = 30.5 ] && ok "--timeout 30.5 recorded" || bad "timeout record: exit $rc, $(jq_py "$work/t.json" "d['config']['timeout_s']")"

# 8. A command-line error under the launcher: printed once, with the usual prefix.
timeout 60 "${MPI[@]}" "$BIN" run --no-such-option > "$work/l" 2>&1; rc=$?
n=$(grep -c "ckptbench: error: The following argument was not expected: --no-such-option" "$work/l")
[ "$n" = 1 ] && ok "command-line error printed once (exit $rc)" || bad "command-line error printed $n times: $(head -c 300 "$work/l")"

# 9. The report cannot be written (file size limit): no <report>.tmp stays behind.
( ulimit -f 16; timeout 120 "$BIN" run --config "$work/tiny.json" --target "$work/t9" --output "$work/r9.json" --quiet > "$work/l" 2>&1 ); rc=$?
[ $rc != 0 ] && [ ! -e "$work/r9.json.tmp" ] && ok "no report .tmp left when writing it fails (exit $rc)" || bad "report tmp: exit $rc, $(ls "$work" | grep r9)"

summary
