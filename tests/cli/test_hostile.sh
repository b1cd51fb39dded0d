#!/usr/bin/env bash
# The fourth reliability round (docs/reliability.md, "Hostile environment, fourth round"): each
# case is a defect the fault battery found, run the way it was found, in bounded time (every
# command under `timeout`, so a regression fails instead of hanging). Cases that need root (tmpfs,
# FUSE through bindfs, a read-only bind mount) say "skip" with the reason otherwise.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
PY="$(python_with json)" || { echo "skip: no python3"; exit 77; }
make_workdir hostile
mounts=()
cli_on_exit() {
  local m
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m="${mounts[$i]}"
    mountpoint -q "$m" 2> /dev/null && { fusermount -u "$m" 2> /dev/null || umount -l "$m"; }
  done
}
root=0
[ "$(id -u)" -eq 0 ] && root=1
TINY='"model": "tiny", "parallelism": {"tp": 1, "zero_stage": 1}, "cache": "none", "repetitions": 1'  # direct: false by default
cfg() { echo "{$TINY${1:+, $1}}" > "$work/$2"; }
jq_py() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2> /dev/null; }
# run SECONDS NP ARGS...: ckptbench under mpiexec, bounded; sets rc and out.
run() {
  local secs="$1" np="$2"; shift 2
  out="$(timeout -k 5 "$secs" "${MPI_BASE[@]}" -n "$np" "$BIN" "$@" 2>&1)"
  rc=$?
}
tmpfs_at() {  # DIR SIZE: a small tmpfs (root only)
  mkdir -p "$1" && mount -t tmpfs -o "size=$2" tmpfs "$1" && mounts+=("$1")
}
cfg "" tiny.json

# 1. A forged dead lock naming a ckptbench-* directory the run did not create: left alone.
mkdir -p "$work/t1/ckptbench-my-own-data"
echo keep > "$work/t1/ckptbench-my-own-data/file"
printf '%s 999999 2026-01-01T00:00:00Z\nrun_dir ckptbench-my-own-data\nkeep 0\n' "$(hostname)" > "$work/t1/.ckptbench.lock"
run 120 1 run -c "$work/tiny.json" --target "$work/t1" -o "$work/o1.json" --quiet
[ -f "$work/t1/ckptbench-my-own-data/file" ] && ok "1 forged lock: the directory it names is left alone (exit $rc)" ||
  bad "1 forged lock: got '$work/t1/ckptbench-my-own-data' deleted"
run 120 1 run -c "$work/tiny.json" --target "$work/t1" -o "$work/o1.json" --quiet --force
[ $rc -eq 0 ] && [ -f "$work/t1/ckptbench-my-own-data/file" ] &&
  grep -q "left alone" <<< "$out" && ok "1 forged lock with --force: runs, says the directory was left alone" ||
  bad "1 forged lock with --force: exit $rc, $(grep -c . <<< "$out") lines: $(tail -2 <<< "$out")"
# A run killed with SIGKILL: its own directory (with its marker) is removed at the take-over.
mkdir -p "$work/t1k"
"$BIN" run -c "$work/tiny.json" --target "$work/t1k" -o "$work/o1k.json" --quiet \
  --set repetitions=1000 > /dev/null 2>&1 &
victim=$!
for _ in $(seq 100); do ls -d "$work/t1k"/ckptbench-*/point-001 > /dev/null 2>&1 && break; sleep 0.1; done
kill -KILL "$victim"
wait "$victim" 2> /dev/null  # reaped: its pid is gone, as a node's crashed run's is
dead="$(cd "$work/t1k" && ls -d ckptbench-* 2> /dev/null | head -1)"
if [ -n "$dead" ] && [ -f "$work/t1k/$dead/.ckptbench-run" ]; then
  run 120 1 run -c "$work/tiny.json" --target "$work/t1k" -o "$work/o1k.json" --quiet
  [ $rc -eq 0 ] && [ ! -e "$work/t1k/$dead" ] && ok "1 a killed run's own directory is removed at the take-over" ||
    bad "1 take-over of a killed run: exit $rc, left: $(ls -A "$work/t1k")"
else
  bad "1 the killed run left no run directory with its marker: $(ls -A "$work/t1k" 2> /dev/null)"
fi

# A config with a key given twice: refused (the parser kept the last value without a word).
echo '{"model": "tiny", "layout": "shared-file", "layout": "file-per-shard"}' > "$work/dup.json"
out="$("$BIN" validate "$work/dup.json" 2>&1)"; rc=$?
[ $rc -eq 2 ] && grep -q 'the key "layout" appears twice' <<< "$out" && ok "a duplicated config key: exit 2 naming it" ||
  bad "duplicated key: exit $rc: $out"

# 5. Lock files that are not lock files: refused at once, nothing read from them.
mkdir -p "$work/t5a" "$work/t5b"
mkfifo "$work/t5a/.ckptbench.lock"
ln -s /dev/zero "$work/t5b/.ckptbench.lock"
mkfifo "$work/o5.json.lock"
for c in "t5a FIFO target lock:$work/t5a:$work/o5a.json" "t5b /dev/zero link:$work/t5b:$work/o5b.json" \
  "report FIFO lock:$work/t5c:$work/o5.json"; do
  IFS=: read -r what target report <<< "$c"
  s0=$SECONDS
  out="$(timeout -k 5 20 "$BIN" run -c "$work/tiny.json" --target "$target" -o "$report" --quiet 2>&1)"
  rc=$?
  [ $rc -eq 2 ] && grep -q "not a lock file ckptbench wrote" <<< "$out" && [ $((SECONDS - s0)) -lt 10 ] &&
    ok "5 $what: exit 2 in $((SECONDS - s0)) s, named" || bad "5 $what: exit $rc after $((SECONDS - s0)) s: $out"
done

# 7. A manifest's pattern.period_bytes beyond what a save writes: refused before anything is sized.
run 120 2 run -c "$work/tiny.json" --target "$work/t7" -o "$work/o7s.json" --quiet --phases save
saved="$(ls -d "$work/t7"/ckptbench-* 2> /dev/null | head -1)"
if [ -n "$saved" ]; then
  "$PY" - "$saved/ckptbench-manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["points"][0]["pattern"]["period_bytes"] = 2**50
json.dump(m, open(sys.argv[1], "w"))
EOF
  s0=$SECONDS
  run 60 2 run -c "$work/tiny.json" --phases restore --from "$saved" -o "$work/o7.json" --quiet
  [ $rc -eq 2 ] && grep -q "period_bytes" <<< "$out" && [ $((SECONDS - s0)) -lt 30 ] &&
    ok "7 period_bytes 2^50: exit 2 naming the key" || bad "7 period_bytes 2^50: exit $rc: $(tail -3 <<< "$out")"
else
  bad "7 the save for the manifest case failed: $(tail -3 <<< "$out")"
fi

# 6. A saved data file swapped for a FIFO between save and restore (the test hook's action=fifo),
# for each backend: the restore fails at once naming it (a plain open would block until the stall
# guard); from a separate save job, the check before any I/O names it too.
for be in posix io_uring mpiio hdf5; do
  skip_unbuilt "$be" "6 $be" && continue
  [ "$(backend_status "$be")" = ok ] || { echo "skip 6 $be: $(backend_status "$be")"; continue; }
  cfg "\"backend\": \"$be\", \"stall_timeout_s\": 60" "fifo-$be.json"
  s0=$SECONDS
  out="$(CKPT_FAULT_INJECT="phase=between,action=fifo,rank=1" timeout -k 5 50 "${MPI_BASE[@]}" -n 2 \
    -x CKPT_FAULT_INJECT "$BIN" run -c "$work/fifo-$be.json" --target "$work/t6-$be" -o "$work/o6-$be.json" --quiet 2>&1)"
  rc=$?
  [ $rc -eq 1 ] && [ $((SECONDS - s0)) -lt 30 ] && grep -q "FIFO" <<< "$out" &&
    [ "$(jq_py "$work/o6-$be.json" 'd["status"]')" = failed ] &&
    ok "6 $be: a saved file replaced by a FIFO: exit 1 in $((SECONDS - s0)) s, named" ||
    bad "6 $be: FIFO between the phases: exit $rc after $((SECONDS - s0)) s: $(grep -m2 error <<< "$out")"
done
run 120 2 run -c "$work/tiny.json" --target "$work/t6" -o "$work/o6s.json" --quiet --phases save
saved="$(ls -d "$work/t6"/ckptbench-* 2> /dev/null | head -1)"
f="$(find "$saved" -type f ! -name 'ckptbench-manifest.json' ! -name '.ckptbench-run' 2> /dev/null | sort | head -1)"
if [ -n "$f" ]; then
  rm "$f" && mkfifo "$f"
  s0=$SECONDS
  run 60 2 run -c "$work/tiny.json" --phases restore --from "$saved" -o "$work/o6.json" --quiet
  [ $rc -eq 2 ] && [ $((SECONDS - s0)) -lt 30 ] && grep -q "not a regular file" <<< "$out" &&
    ok "6 --from: a saved file replaced by a FIFO is refused before any I/O" ||
    bad "6 --from with a FIFO: exit $rc after $((SECONDS - s0)) s: $(tail -3 <<< "$out")"
else
  bad "6 no saved file found in '$saved'"
fi

# 8. A restore never writes into the saved run: a planted link where the O_DIRECT probe used to
# go is neither followed nor removed, and the listing is unchanged.
cfg '"direct": true' direct.json
run 120 2 run -c "$work/direct.json" --target "$work/t8" -o "$work/o8s.json" --quiet --phases save
saved="$(ls -d "$work/t8"/ckptbench-* 2> /dev/null | head -1)"
if [ -n "$saved" ]; then
  echo outside > "$work/outside"
  ln -s "$work/outside" "$saved/.ckptbench-odirect-probe"
  before="$(cd "$saved" && find . -printf '%p %s %T@ %m\n' | sort)"
  run 120 2 run -c "$work/direct.json" --phases restore --from "$saved" -o "$work/o8.json" --quiet
  after="$(cd "$saved" && find . -printf '%p %s %T@ %m\n' | sort)"
  [ $rc -eq 0 ] && [ "$before" = "$after" ] && [ "$(cat "$work/outside")" = outside ] &&
    ok "8 direct restore: nothing in the saved run created, changed or removed" ||
    bad "8 direct restore: exit $rc; changed: $(diff <(echo "$before") <(echo "$after") | head -3) $(tail -2 <<< "$out")"
  if [ $root -eq 1 ]; then
    mkdir -p "$work/ro" && mount --bind "$saved" "$work/ro" && mounts+=("$work/ro") &&
      mount -o remount,bind,ro "$work/ro"
    run 120 2 run -c "$work/direct.json" --phases restore --from "$work/ro" -o "$work/o8r.json" --quiet
    [ $rc -eq 0 ] && ok "8 a read-only copy of a direct save restores" || bad "8 read-only direct restore: exit $rc: $(tail -2 <<< "$out")"
  else
    echo "skip 8 read-only copy: needs root for a read-only bind mount"
  fi
else
  bad "8 the direct save failed: $(tail -3 <<< "$out")"
fi

# 13. An HDF5 save restored through posix: the backend mismatch is named.
if backend_built hdf5; then
  cfg '"backend": "hdf5"' h5.json
  cfg '"backend": "posix"' px.json
  run 120 2 run -c "$work/h5.json" --target "$work/t13" -o "$work/o13s.json" --quiet --phases save
  saved="$(ls -d "$work/t13"/ckptbench-* 2> /dev/null | head -1)"
  run 60 2 run -c "$work/px.json" --phases restore --from "$saved" -o "$work/o13.json" --quiet
  [ $rc -eq 2 ] && grep -q "'backend' is \"hdf5\"" <<< "$out" && ! grep -q truncated <<< "$out" &&
    ok "13 hdf5 save, posix restore: exit 2 naming the backends" || bad "13 hdf5/posix: exit $rc: $(tail -2 <<< "$out")"
else
  echo "skip 13: backend hdf5 is $(backend_status hdf5)"
fi

# 10. --read-dir: a 'latest' that is no tag name never reaches the report.
d="$work/ds"
for tag in global_step1 global_step2; do
  mkdir -p "$d/$tag"
  head -c 65536 /dev/zero > "$d/$tag/mp_rank_00_model_states.pt"
done
head -c $((8 << 20)) /dev/zero | tr '\0' 'x' > "$d/latest"
run 120 2 run -c "$work/tiny.json" --phases restore --read-dir "$d" -o "$work/o10.json" --quiet
size=$(stat -c %s "$work/o10.json" 2> /dev/null || echo 0)
[ $rc -eq 0 ] && [ "$size" -gt 0 ] && [ "$size" -lt 1000000 ] && ! grep -q xxxxxxxxxxxxxxxx "$work/o10.json" &&
  ok "10 an 8 MiB 'latest': not a tag, not in the $size-byte report" ||
  bad "10 8 MiB 'latest': exit $rc, report $size bytes: $(tail -2 <<< "$out")"
# A missing, non-directory or kernel --read-dir: exit 2 before anything.
for c in "$work/nonexistent" "$work/tiny.json" /proc/self; do
  run 60 1 run -c "$work/tiny.json" --phases restore --read-dir "$c" -o "$work/o10b.json" --quiet
  [ $rc -eq 2 ] && grep -q -- "--read-dir" <<< "$out" && ok "10 --read-dir $c: exit 2" ||
    bad "10 --read-dir $c: exit $rc: $(tail -2 <<< "$out")"
done

# 2. characterize whose probes fail: status failed, exit 1, no findings from a partial search.
s0=$SECONDS
out="$(CKPT_FAULT_INJECT="rep=2,phase=save,rank=1" timeout -k 5 200 "${MPI_BASE[@]}" -n 2 -x CKPT_FAULT_INJECT "$BIN" characterize \
  --target "$work/t2" --budget 0.5 --probe-size 8M -o "$work/o2.json" 2>&1)"
rc=$?
[ $rc -eq 1 ] && [ "$(jq_py "$work/o2.json" 'd["status"]')" = failed ] && ! grep -q "Findings on" <<< "$out" &&
  ok "2 characterize with failing probes: exit 1, status failed, no findings ($((SECONDS - s0)) s)" ||
  bad "2 characterize with failing probes: exit $rc, status $(jq_py "$work/o2.json" 'd["status"]'): $(tail -3 <<< "$out")"
# 9. --probe-size below the smallest probe: named as such.
run 60 2 characterize --target "$work/t9" --budget 0.2 --probe-size 1M -o "$work/o9.json"
[ $rc -eq 2 ] && grep -q -- "--probe-size: .*below the smallest probe" <<< "$out" && [ ! -e "$work/t9" ] &&
  ok "9 --probe-size 1M: exit 2 naming the minimum" || bad "9 --probe-size 1M: exit $rc: $(tail -2 <<< "$out")"

# --recommend naming the report itself: refused (the report would replace the config).
run 60 2 characterize --target "$work/t9r" --budget 0.2 --probe-size 8M -o "$work/o9r.json" --recommend "$work/o9r.json"
[ $rc -eq 2 ] && grep -q -- "--recommend .* is the same file as --output" <<< "$out" && [ ! -e "$work/t9r" ] &&
  ok "--recommend equal to --output: exit 2" || bad "--recommend = --output: exit $rc: $(tail -2 <<< "$out")"

if [ $root -eq 0 ]; then
  echo "skip 4, 1 (FUSE), 9 (small target): need root for tmpfs and bindfs mounts"
  summary hostile
  exit
fi

# 9. A 40 MiB target: too little, said before any probe (exit 2), no abort.
tmpfs_at "$work/small" 40m
run 60 2 characterize --target "$work/small/c" --budget 0.2 -o "$work/o9b.json"
[ $rc -eq 2 ] && grep -q "too little" <<< "$out" && ! grep -q MPI_ABORT <<< "$out" &&
  ok "9 a 40 MiB target: exit 2, too little space, no abort" || bad "9 40 MiB target: exit $rc: $(tail -3 <<< "$out")"

# 4. HDF5 save on a full file system: exit 1 with a report, no crash in MPI_Finalize.
if backend_built hdf5; then
  for layout in file-per-shard shared-file; do
    tmpfs_at "$work/h5-$layout" 30m
    cfg "\"backend\": \"hdf5\", \"layout\": \"$layout\", \"free_space_check\": false" "h5f-$layout.json"
    run 120 2 run -c "$work/h5f-$layout.json" --target "$work/h5-$layout/t" -o "$work/o4-$layout.json" --quiet
    [ $rc -eq 1 ] && [ "$(jq_py "$work/o4-$layout.json" 'd["status"]')" = failed ] &&
      [ -z "$(ls -A "$work/h5-$layout/t" 2> /dev/null)" ] &&
      ok "4 hdf5 $layout on a full tmpfs: exit 1, report failed, nothing left" ||
      bad "4 hdf5 $layout on a full tmpfs: exit $rc, left: $(ls -A "$work/h5-$layout/t" 2> /dev/null): $(grep -m2 -i 'signal\|error' <<< "$out")"
  done
fi

# 1. MPI-IO collective shared-file save hitting ENOSPC, on tmpfs and through FUSE (bindfs renames
# an open unlinked file to .fuse_hiddenNNN): ends in bounded time with a report, nothing left.
cfg '"backend": "mpiio", "layout": "shared-file", "mpiio": {"mode": "collective"}, "free_space_check": false' mpc.json
tmpfs_at "$work/mp" 30m
s0=$SECONDS
run 90 2 run -c "$work/mpc.json" --target "$work/mp/t" -o "$work/o1m.json" --quiet
[ $rc -eq 1 ] && [ "$(jq_py "$work/o1m.json" 'd["status"]')" = failed ] && [ -z "$(ls -A "$work/mp/t" 2> /dev/null)" ] &&
  ok "1 mpiio collective shared file, full tmpfs: exit 1 in $((SECONDS - s0)) s, report, nothing left" ||
  bad "1 mpiio collective on tmpfs: exit $rc after $((SECONDS - s0)) s, left: $(ls -A "$work/mp/t" 2> /dev/null)"
if command -v bindfs > /dev/null; then
  tmpfs_at "$work/fs" 30m
  mkdir -p "$work/fuse" && bindfs "$work/fs" "$work/fuse" && mounts+=("$work/fuse")
  s0=$SECONDS
  run 90 2 run -c "$work/mpc.json" --target "$work/fuse/t" -o "$work/o1f.json" --quiet
  [ $rc -eq 1 ] && [ "$(jq_py "$work/o1f.json" 'd["status"]')" = failed ] && [ -z "$(ls -A "$work/fuse/t" 2> /dev/null)" ] &&
    ok "1 mpiio collective shared file, full bindfs: exit 1 in $((SECONDS - s0)) s, report, nothing left" ||
    bad "1 mpiio collective on bindfs: exit $rc after $((SECONDS - s0)) s, left: $(ls -A "$work/fuse/t" 2> /dev/null)"
else
  echo "skip 1 FUSE: bindfs not installed (scripts/setup.sh installs it)"
fi
summary hostile
