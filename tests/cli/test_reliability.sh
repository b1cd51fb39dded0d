#!/usr/bin/env bash
# Reliability (issue 10): full disk, read-only target, O_DIRECT on tmpfs, a rank killed with
# SIGKILL, SIGTERM to every rank, safety of the user's files, the fault-injection hook.
# Every run is under `timeout`, so a hang fails the case instead of the suite. Cases that need
# root (mounts) print "skip <case>: <reason>" when not root. Exit 77 when nothing could run.
set -u
# lib.sh: jq_py, rank_pids, wait_for (this test keeps its own launcher handling and counters).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN="${CKPT_BINARY:?CKPT_BINARY: path to the ckptbench binary}"
[ -x "$BIN" ] || { echo "skip: $BIN is not executable"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 is needed to read the reports"; exit 77; }
# The launcher without its rank count: each case picks its own.
read -r -a flags <<< "${CKPT_MPIEXEC_FLAGS:--n 4 --oversubscribe}"
MPI=("${CKPT_MPIEXEC:-mpiexec}")
skip_next=0
for f in "${flags[@]}"; do
  if [ $skip_next -eq 1 ]; then skip_next=0; continue; fi
  case "$f" in -n|-np|-c) skip_next=1 ;; *) MPI+=("$f") ;; esac
done
command -v "${MPI[0]}" >/dev/null || { echo "skip: no MPI launcher '${MPI[0]}'"; exit 77; }
ROOT=0
if [ "$(id -u)" -eq 0 ]; then
  ROOT=1
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
HOST="$(hostname)"
T0=$SECONDS
section() { echo "$1 (at $((SECONDS - T0)) s)"; }

work="$(mktemp -d /var/tmp/ckpt-rel.XXXXXX)"
mounts=()
bgpid=""
cleanup() {
  [ -n "$bgpid" ] && kill -9 "$bgpid" 2>/dev/null
  local m
  for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null; done
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fails=0; passes=0; skips=0
ok() { echo "ok   $1"; passes=$((passes+1)); }
bad() { echo "FAIL $1"; fails=$((fails+1)); }
skip() { echo "skip $1"; skips=$((skips+1)); }
# COND; verdict NAME: passes when COND (the command just before) succeeded.
verdict() { if [ $? -eq 0 ]; then ok "$1"; else bad "$1: exit $code: $(tail -c 1500 <<< "$out")"; fi; }

# mount_tmpfs DIR OPTS: root only; registers DIR for unmounting at exit.
mount_fs() {
  local type="$1" dir="$2" opts="$3"
  mkdir -p "$dir" && mount -t "$type" -o "$opts" "$type" "$dir" && mounts=("$dir" "${mounts[@]}")
}
# tree_sum DIR: names, types, modes, sizes and contents of everything below DIR.
tree_sum() {
  (cd "$1" && find . -mindepth 1 -printf '%p %y %m %s\n' | LC_ALL=C sort &&
     find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) | sha256sum | cut -d' ' -f1
}

# ck NP TIMEOUT ARGS...: runs `ckptbench ARGS` on NP ranks under a timeout; sets out, code.
# Environment variables listed in FWD (space separated) are exported to the ranks (-x).
FWD=""
ck() {
  local np="$1" lim="$2"; shift 2
  local x=() v
  for v in $FWD; do x+=(-x "$v"); done
  out="$(timeout -k 10 "$lim" "${MPI[@]}" "${x[@]}" -n "$np" "$BIN" "$@" 2>&1)"
  code=$?
}
# ck0 TIMEOUT ARGS...: `ckptbench ARGS` as one process without the launcher (an MPI singleton:
# about 0.5 s here against 2.5 s for `mpiexec -n 1`), for the refusals that happen before any I/O.
ck0() {
  local lim="$1"; shift
  out="$(timeout -k 10 "$lim" "$BIN" "$@" 2>&1)"
  code=$?
}

cat > "$work/tiny.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "256K", "verify": true}
J
cat > "$work/tiny-nocheck.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "256K", "verify": true, "free_space_check": false}
J
cat > "$work/tiny-direct.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "256K", "verify": true, "direct": true}
J
cat > "$work/tiny-direct-nocheck.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "256K", "verify": true, "direct": true,
 "free_space_check": false}
J
cat > "$work/huge.json" <<'J'
{"model": "llama3.1-405b", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "1M"}
J
# About 277 MiB per repetition on 4 ranks (about 1 s each here), 30 repetitions: a wide window to
# kill a rank mid-run; the cases below stop it right after the first repetition.
cat > "$work/long.json" <<'J'
{"model": {"name": "llama2-7b", "scale": 0.003}, "parallelism": {"tp": 2, "dp": "auto"},
 "layout": "file-per-shard", "backend": "posix", "block_size": "1M", "sync": "file",
 "cache": "fadvise", "repetitions": 30, "verify": true}
J
sed 's/"verify": true}/"verify": true, "timeout_s": 3}/' "$work/long.json" > "$work/long-timeout.json"
cat > "$work/tiny-reps.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "256K", "repetitions": 2}
J
# Does this build know "free_space_check"? (Needed to hit a real ENOSPC past the precheck.)
have_nocheck=0
"$BIN" validate "$work/tiny-nocheck.json" >/dev/null 2>&1 && have_nocheck=1

# ---------------------------------------------------------------------------------------------
section "# 1. full disk"
# (a) everywhere: a plan far larger than the disk is refused by the precheck, before any write.
mkdir -p "$work/big"
ck 2 120 run --config "$work/huge.json" --target "$work/big/t" --output "$work/big.json" --quiet
[ "$code" -eq 2 ] && grep -q "free, the run needs" <<< "$out"
verdict "1a precheck refuses a plan larger than the disk (exit 2, free vs needed)"
[ -z "$(ls -A "$work/big/t" 2>/dev/null)" ] && [ ! -e "$work/big.json" ]
verdict "1a nothing created inside the target, no report"
if [ $ROOT -eq 1 ] && mount_fs tmpfs "$work/full" size=16m; then
  ck 4 120 run --config "$work/tiny.json" --target "$work/full" --output "$work/full-a.json" --quiet
  [ "$code" -eq 2 ] && grep -q "has 16.00 MiB free, the run needs" <<< "$out"
  verdict "1a 16 MiB tmpfs: refused before any write (exit 2, names free and needed bytes)"
  [ -z "$(ls -A "$work/full")" ] && [ ! -e "$work/full-a.json" ]
  verdict "1a 16 MiB tmpfs: nothing left inside the target, no report"
  # (b) past the precheck: a real ENOSPC mid-write must be a clean failure on every rank.
  if [ $have_nocheck -eq 1 ]; then
    ck 4 120 run --config "$work/tiny-nocheck.json" --target "$work/full" \
      --output "$work/full-b.json" --quiet
    [ "$code" -eq 1 ] && grep -q "No space left on device" <<< "$out" &&
      grep -q "rank [0-9]* ($HOST)" <<< "$out" && grep -q "$work/full/ckptbench-" <<< "$out"
    verdict "1b ENOSPC mid-write: exit 1, errno text, rank and host, file named"
    [ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ]
    verdict "1b ENOSPC: error printed once"
    [ "$(jq_py "$work/full-b.json" "d[\"status\"]")" = failed ] &&
      jq_py "$work/full-b.json" "d[\"error\"]" | grep -q "No space left"
    verdict "1b ENOSPC: report written with status failed and the error"
    [ -z "$(ls -A "$work/full")" ]
    verdict "1b ENOSPC: the run directory is removed, the file system is empty again"
    # Without preallocation the ENOSPC comes from a write, which must name the offset too.
    sed 's/"free_space_check": false/"free_space_check": false, "preallocate": false/' \
      "$work/tiny-nocheck.json" > "$work/tiny-nocheck-noprealloc.json"
    ck 4 120 run --config "$work/tiny-nocheck-noprealloc.json" --target "$work/full" \
      --output "$work/full-c.json" --quiet
    [ "$code" -eq 1 ] && grep -q "write '$work/full/ckptbench-[^']*' offset [0-9]* length [0-9]*: No space left on device" <<< "$out" &&
      [ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ] && [ -z "$(ls -A "$work/full")" ] &&
      [ "$(jq_py "$work/full-c.json" "d[\"status\"]")" = failed ]
    verdict "1b ENOSPC in a write (preallocate false): exit 1, file and offset named once, report, cleaned up"
  else
    skip "1b ENOSPC mid-write: this build has no way to bypass the free-space precheck (config key \"free_space_check\": false is not accepted)"
  fi
  # (c) no inode left: the run directory itself cannot be created. Still one clean message.
  if mount_fs tmpfs "$work/noinode" size=16m,nr_inodes=1; then
    ck 4 120 run --config "$work/tiny-nocheck.json" --target "$work/noinode" \
      --output "$work/noinode.json" --quiet
    [ "$code" -ne 0 ] && [ "$code" -ne 124 ] && grep -q "create run directory '$work/noinode/ckptbench-" <<< "$out" &&
      grep -q "No space left on device" <<< "$out" && [ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ] &&
      ! grep -q MPI_ABORT <<< "$out"
    verdict "1c no inode for the run directory: clean failure, message once, no MPI_Abort"
  else
    bad "1c cannot mount a tmpfs with nr_inodes=1 as root"
  fi
else
  if [ $ROOT -eq 1 ]; then bad "1a cannot mount a tmpfs as root"; else skip "1a-1c 16 MiB tmpfs: not root (needs mount)"; fi
fi

# ---------------------------------------------------------------------------------------------
section "# 2. read-only target"
if [ $ROOT -eq 1 ]; then
  if mount_fs tmpfs "$work/ro" ro,size=16m; then
    ck 2 60 run --config "$work/tiny.json" --target "$work/ro" --output "$work/ro.json" --quiet
    [ "$code" -eq 2 ] && grep -q "$work/ro" <<< "$out" && grep -q "Read-only file system" <<< "$out"
    verdict "2 read-only tmpfs as target: exit 2, path and EROFS named"
    ck 2 60 run --config "$work/tiny.json" --target "$work/ro/sub" --output "$work/ro.json" --quiet
    [ "$code" -eq 2 ] && grep -q "$work/ro" <<< "$out" && grep -q "Read-only file system" <<< "$out"
    verdict "2 new directory below a read-only mount: exit 2, path named"
  else
    bad "2 cannot mount a read-only tmpfs as root"
  fi
  mkdir -p "$work/bind-src" "$work/bind"
  if mount --bind "$work/bind-src" "$work/bind" && mounts=("$work/bind" "${mounts[@]}") &&
     mount -o remount,bind,ro "$work/bind"; then
    ck 2 60 run --config "$work/tiny.json" --target "$work/bind" --output "$work/bind.json" --quiet
    [ "$code" -eq 2 ] && grep -q "$work/bind" <<< "$out" && grep -q "Read-only file system" <<< "$out"
    verdict "2 read-only bind mount as target: exit 2, path named"
  else
    bad "2 cannot make a read-only bind mount as root"
  fi
else
  skip "2 read-only mounts: not root (needs mount); testing a chmod a-w directory instead"
  mkdir -p "$work/nowrite"; chmod a-w "$work/nowrite"
  ck 2 60 run --config "$work/tiny.json" --target "$work/nowrite" --output "$work/nw.json" --quiet
  [ "$code" -eq 2 ] && grep -q "$work/nowrite" <<< "$out" && grep -q "not writable" <<< "$out"
  verdict "2 chmod a-w target: exit 2, path named, not writable"
fi

# ---------------------------------------------------------------------------------------------
section "# 3. direct: true on tmpfs"
shm=""
if [ $ROOT -eq 1 ] && mount_fs tmpfs "$work/shm" size=256m; then
  shm="$work/shm/t"
elif [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ]; then
  shm="$(mktemp -u /dev/shm/ckpt-rel.XXXXXX)"   # removed below
fi
if [ -n "$shm" ]; then
  ck 4 120 run --config "$work/tiny-direct.json" --target "$shm" --output "$work/direct.json" --quiet
  if [ "$code" -eq 0 ]; then
    [ "$(jq_py "$work/direct.json" "d[\"status\"]")" = ok ] &&
      [ "$(jq_py "$work/direct.json" "d[\"environment\"][\"file_system\"][\"type\"]")" = tmpfs ] &&
      [ "$(jq_py "$work/direct.json" "d[\"points\"][0][\"repetitions\"][0][\"bytes_verified\"] > 0")" = True ]
    verdict "3 tmpfs accepts O_DIRECT (kernel $(uname -r)): clean, verified run, fs type recorded"
  else
    [ "$code" -eq 2 ] && grep -q "refuses O_DIRECT" <<< "$out"
    verdict "3 tmpfs rejects O_DIRECT (kernel $(uname -r)): exit 2 \"refuses O_DIRECT\""
  fi
  [ -z "$(ls -A "$shm" 2>/dev/null)" ]
  verdict "3 nothing left in the target"
  case "$shm" in /dev/shm/*) rm -rf "$shm" ;; esac
else
  skip "3 direct on tmpfs: not root and /dev/shm is not a writable tmpfs"
fi
# ramfs has no O_DIRECT at all (and reports 0 bytes free, so the precheck must be off to get
# as far as the O_DIRECT probe).
if [ $ROOT -eq 1 ] && [ $have_nocheck -eq 1 ] && mount_fs ramfs "$work/ramfs" mode=755; then
  ck 2 60 run --config "$work/tiny-direct-nocheck.json" --target "$work/ramfs" \
    --output "$work/ramfs.json" --quiet
  [ "$code" -eq 2 ] && grep -q "refuses O_DIRECT" <<< "$out" && grep -q "ramfs" <<< "$out" &&
    [ -z "$(ls -A "$work/ramfs")" ]
  verdict "3 ramfs (no O_DIRECT): exit 2 \"refuses O_DIRECT\" naming the file system, nothing left"
elif [ $ROOT -eq 1 ]; then
  skip "3 ramfs refusal: needs \"free_space_check\": false (ramfs reports 0 bytes free)"
else
  skip "3 ramfs refusal: not root (needs mount)"
fi

# ---------------------------------------------------------------------------------------------
section "# 4. a rank killed with SIGKILL mid-run"
tag="$work/kill-target"
( timeout -k 10 150 "${MPI[@]}" -n 4 "$BIN" run --config "$work/long.json" --target "$tag" \
    --output "$work/kill.json" --quiet > "$work/kill.out" 2>&1; echo $? > "$work/kill.rc" ) &
bgpid=$!
if wait_for "$work/kill.json" 90 "$bgpid"; then
  victim="$(rank_pids "$tag" | tail -1)"
  if [ -n "$victim" ]; then
    t0=$SECONDS
    kill -9 "$victim"
    wait "$bgpid"; bgpid=""
    took=$((SECONDS - t0)); code="$(cat "$work/kill.rc")"; out="$(cat "$work/kill.out")"
    [ "$took" -le 60 ] && [ "$code" -ne 0 ]
    verdict "4 job ends within 60 s of the kill (took ${took} s), exit non-zero"
    [ "$(jq_py "$work/kill.json" "d[\"status\"]")" = failed ] &&
      [ "$(jq_py "$work/kill.json" "len(d[\"points\"][0][\"repetitions\"]) >= 1")" = True ]
    verdict "4 report on disk is valid JSON with status failed and >= 1 repetition"
    sleep 1
    [ -z "$(rank_pids "$tag")" ]
    verdict "4 no rank process left behind"
  else
    bad "4 no running rank found to kill (run already over?): $(cat "$work/kill.out")"
    wait "$bgpid"; bgpid=""
  fi
else
  kill -9 "$bgpid" 2>/dev/null; wait "$bgpid" 2>/dev/null; bgpid=""
  bad "4 no report after 90 s (first repetition never finished): $(tail -c 1500 "$work/kill.out")"
fi

section "# 4b. SIGTERM to every rank (as a batch system does): stop at the next phase boundary"
tag="$work/term-target"
( timeout -k 10 150 "${MPI[@]}" -n 4 "$BIN" run --config "$work/long.json" --target "$tag" \
    --output "$work/term.json" --quiet > "$work/term.out" 2>&1; echo $? > "$work/term.rc" ) &
bgpid=$!
if wait_for "$work/term.json" 90 "$bgpid"; then
  t0=$SECONDS
  # shellcheck disable=SC2046
  kill -TERM $(rank_pids "$tag") 2>/dev/null
  wait "$bgpid"; bgpid=""
  took=$((SECONDS - t0)); code="$(cat "$work/term.rc")"; out="$(cat "$work/term.out")"
  [ "$took" -le 60 ] && [ "$code" -eq 1 ] && grep -q "interrupted by signal 15" <<< "$out" &&
    [ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ]
  verdict "4b SIGTERM: exit 1 within 60 s (took ${took} s), message names the signal, once"
  [ "$(jq_py "$work/term.json" "d[\"status\"]")" = failed ] &&
    jq_py "$work/term.json" "d[\"error\"]" | grep -q "signal 15"
  verdict "4b SIGTERM: final report status failed, error names the signal"
  [ -z "$(find "$tag" -mindepth 1 2>/dev/null)" ]
  verdict "4b SIGTERM: the run directory is removed"
else
  kill -9 "$bgpid" 2>/dev/null; wait "$bgpid" 2>/dev/null; bgpid=""
  bad "4b no report after 90 s: $(tail -c 1500 "$work/term.out")"
fi

# ---------------------------------------------------------------------------------------------
section "# 5. safety of the user's files"
for t in / /usr /var/tmp; do
  ck0 60 run --config "$work/tiny.json" --target "$t" --output "$work/sys.json" --quiet
  [ "$code" -eq 2 ] && grep -q "refusing a system directory" <<< "$out" && [ ! -e "$work/sys.json" ]
  verdict "5 --target $t refused (exit 2, system directory)"
done
mkdir -p "$work/fakehome"
HOME="$work/fakehome" ck0 60 run --config "$work/tiny.json" --target "$work/fakehome" \
  --output "$work/home.json" --quiet
[ "$code" -eq 2 ] && grep -q "home directory" <<< "$out" && [ -z "$(ls -A "$work/fakehome")" ]
verdict "5 --target \$HOME refused (exit 2), home left empty"
ck0 60 run --config "$work/tiny.json" --target "$HOME" --output "$work/home.json" --quiet
[ "$code" -eq 2 ]
verdict "5 --target \$HOME ($HOME) refused (exit 2)"

mkdir -p "$work/real"
ln -s "$work/real" "$work/link"
ln -s / "$work/link-root"
for t in "$work/link" "$work/link/" "$work/link-root"; do
  ck0 60 run --config "$work/tiny.json" --target "$t" --output "$work/link.json" --quiet
  [ "$code" -eq 2 ] && grep -q "symbolic link" <<< "$out" && [ -z "$(ls -A "$work/real")" ]
  verdict "5 symlink target $t refused (exit 2), nothing written through it"
done

# A non-empty directory with the user's data, including names the tool itself would use.
user="$work/userdata"
mkdir -p "$user/sub" "$user/ckptbench-2020-01-01T00-00-00Z-1" "$user/point-001"
head -c 100000 /dev/urandom > "$user/weights.bin"
echo "do not touch" > "$user/sub/notes.txt"
echo "an older run" > "$user/ckptbench-2020-01-01T00-00-00Z-1/keep.json"
echo "user file" > "$user/point-001/rep-01"
ln -s weights.bin "$user/alias"
chmod 600 "$user/sub/notes.txt"
before="$(tree_sum "$user")"
ck 4 60 run --config "$work/tiny.json" --target "$user" --output "$work/noforce.json" --quiet
[ "$code" -eq 2 ] && grep -q "not empty" <<< "$out" && [ "$(tree_sum "$user")" = "$before" ] && [ ! -e "$work/noforce.json" ]
verdict "5 non-empty target without --force refused (exit 2), contents untouched"
ck 4 120 run --config "$work/tiny.json" --target "$user" --force --output "$work/force.json" --quiet
[ "$code" -eq 0 ] && [ "$(tree_sum "$user")" = "$before" ]
verdict "5 --force: run ok, pre-existing files byte-for-byte untouched, nothing left"
rd="$(jq_py "$work/force.json" "d[\"environment\"][\"run_dir\"]")"
[[ "$rd" == "$user"/ckptbench-*-[0-9]* ]] && [ ! -e "$rd" ]
verdict "5 --force: the run directory was a fresh ckptbench-<time>-<pid> inside the target"
# With keep, the only new entry is the run directory, and every file is inside it.
cat > "$work/tiny-keep.json" <<'J'
{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "layout": "file-per-shard",
 "backend": "posix", "block_size": "256K", "keep": true}
J
ls -A "$user" | LC_ALL=C sort > "$work/ls-before"
ck 4 120 run --config "$work/tiny-keep.json" --target "$user" --force --output "$work/keep.json" --quiet
new="$(ls -A "$user" | LC_ALL=C sort | comm -13 "$work/ls-before" -)"
[ "$code" -eq 0 ] && [ "$(wc -l <<< "$new")" -eq 1 ] && [[ "$new" =~ ^ckptbench-.*-[0-9]+$ ]] &&
  [ "$(find "$user/$new" -name "*.pt" | wc -l)" -gt 0 ]
verdict "5 --force with keep: exactly one new entry, ckptbench-<time>-<pid>, holding the checkpoint"
[ -n "$new" ] && [ -d "$user/$new" ] && rm -rf "${user:?}/$new"
[ "$(tree_sum "$user")" = "$before" ]
verdict "5 --force with keep: pre-existing files still byte-for-byte untouched"

# ---------------------------------------------------------------------------------------------
section "# 6. fault hook"
FWD=CKPT_FAULT_INJECT CKPT_FAULT_INJECT="point=1,phase=restore,rank=3" \
  ck 4 120 run --config "$work/tiny.json" --target "$work/fault" --output "$work/fault.json"
[ "$code" -eq 1 ] && grep -q "rank 3 ($HOST): injected fault" <<< "$out"
verdict "6 injected restore fault on rank 3: exit 1, names rank 3 and host $HOST"
[ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ] && [ "$(grep -c "injected fault" <<< "$out")" -eq 1 ]
verdict "6 error printed once (not once per rank)"
[ "$(jq_py "$work/fault.json" "d[\"status\"]")" = failed ] &&
  jq_py "$work/fault.json" "d[\"error\"]" | grep -q "rank 3 ($HOST)" &&
  [ "$(jq_py "$work/fault.json" "d[\"points_completed\"]")" = 0 ]
verdict "6 partial report written: status failed, error names rank 3, no point completed"
[ -z "$(find "$work/fault" -mindepth 1 2>/dev/null)" ]
verdict "6 nothing left in the target"
# A failure in repetition 2 must not lose repetition 1 of the same point: the progress document
# written after repetition 1 held it, and the final document must too.
FWD=CKPT_FAULT_INJECT CKPT_FAULT_INJECT="point=1,rep=2,phase=save,rank=1" \
  ck 4 120 run --config "$work/tiny-reps.json" --target "$work/fault2" --output "$work/fault2.json" --quiet
[ "$code" -eq 1 ] && grep -q "rank 1 ($HOST): injected fault" <<< "$out"
verdict "6 fault in repetition 2: exit 1, rank 1 named"
[ "$(jq_py "$work/fault2.json" "d[\"status\"]")" = failed ] &&
  [ "$(jq_py "$work/fault2.json" "len(d[\"points\"]) == 1 and len(d[\"points\"][0][\"repetitions\"]) == 1")" = True ] &&
  [ "$(jq_py "$work/fault2.json" "d[\"points\"][0][\"status\"]")" = failed ] &&
  [ "$(jq_py "$work/fault2.json" "d[\"points_completed\"]")" = 0 ]
verdict "6 fault in repetition 2: final report keeps repetition 1 in the failed point (status failed, 0 points completed)"

# ---------------------------------------------------------------------------------------------
section "# 7. report path not writable"
# An unwritable report path is refused before any I/O (exit 2, path named, nothing created in
# the target). Root: a read-only tmpfs; otherwise a chmod a-w directory.
mkdir -p "$work/rout"
if [ $ROOT -eq 1 ]; then mount_fs tmpfs "$work/rout" ro,size=1m; else chmod a-w "$work/rout"; fi
ck 4 120 run --config "$work/tiny.json" --target "$work/rout-t" --output "$work/rout/r.json" --quiet
[ "$code" -eq 2 ] && grep -q -- "--output '$work/rout/r.json'" <<< "$out" &&
  [ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ] &&
  [ -z "$(find "$work/rout-t" -mindepth 1 2>/dev/null)" ]
verdict "7 unwritable report path: refused before any I/O, exit 2, path named once, nothing created"

# ---------------------------------------------------------------------------------------------
section "# 8. per-point timeout"
if "$BIN" validate "$work/long-timeout.json" >/dev/null 2>&1; then
  t0=$SECONDS
  ck 4 120 run --config "$work/long-timeout.json" --target "$work/to" --output "$work/to.json" --quiet
  took=$((SECONDS - t0))
  [ "$code" -eq 1 ] && [ "$took" -le 60 ] && grep -q "point 1 timed out" <<< "$out" &&
    [ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ]
  verdict "8 timeout_s 3 on a ~30 s point: exit 1 after ${took} s, \"point 1 timed out\" printed once"
  [ "$(jq_py "$work/to.json" "d[\"status\"]")" = failed ] &&
    [ "$(jq_py "$work/to.json" "d[\"timed_out_point\"]")" = 1 ] &&
    [ "$(jq_py "$work/to.json" "d[\"points\"][0][\"status\"] == \"failed\" and len(d[\"points\"][0][\"repetitions\"]) >= 1")" = True ]
  verdict "8 timeout: report failed, timed_out_point 1, the point keeps its finished repetitions"
  [ -z "$(find "$work/to" -mindepth 1 2>/dev/null)" ]
  verdict "8 timeout: the run directory is removed"
else
  skip "8 per-point timeout: this build does not accept \"timeout_s\""
fi

echo "$skips skipped"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ] || exit 1
[ "$passes" -eq 0 ] && exit 77
exit 0
