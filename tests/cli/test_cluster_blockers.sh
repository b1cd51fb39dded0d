#!/usr/bin/env bash
# Issue 25, what bites a cluster user on the first day: a rank-shift restore on 2 ranks (2
# emulated nodes) ends on every backend; `cache: auto` as an unprivileged user with several
# emulated nodes; links and directories planted in the run directory mid-run are never written
# through; ranks launched with different configs or targets (MPMD) are refused before any file
# exists; SIGUSR1/SIGUSR2/SIGHUP stop a run like SIGTERM; `ulimit -f` gives a clear error, not
# SIGXFSZ. Every run is under `timeout`, so a hang fails its case instead of the suite.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
make_workdir blockers
command -v python3 > /dev/null || { echo "skip: python3 reads the reports"; exit 77; }
export OMPI_MCA_rmaps_base_oversubscribe=1
bgpid=""
cli_on_exit() { [ -n "$bgpid" ] && kill -9 "$bgpid" 2> /dev/null; }

# ck NP LIMIT ARGS...: `ckptbench ARGS` on NP ranks under a timeout; sets out and code.
ck() {
  local np="$1" lim="$2"
  shift 2
  out="$(timeout -k 10 "$lim" "${MPI_BASE[@]}" -n "$np" "$BIN" "$@" 2>&1)"
  code=$?
}
# verdict NAME: ok when the command just before succeeded.
verdict() { if [ $? -eq 0 ]; then ok "$1"; else bad "$1: exit $code: $(tail -c 1200 <<< "$out")"; fi; }
empty_dir() { [ -z "$(find "$1" -mindepth 1 2> /dev/null | head -1)" ]; }

# ---------------------------------------------------------------------------------------------
echo "# 1. rank-shift restore on 2 ranks, 2 emulated nodes, every backend (was a deadlock)"
# Llama 2 7B with 4 of its 32 layers: tensors of full (scaled) size, files of several 1 MiB
# blocks (transfers far above the eager limit), 8x less to write and verify.
for b in posix io_uring mpiio hdf5; do
  skip_unbuilt "$b" "1 $b" && continue
  cat > "$work/shift-$b.json" << J
{"model": {"name": "llama2-7b", "scale": 0.0005, "layers": 4}, "parallelism": {"tp": 1, "dp": "auto"},
 "backend": "$b", "layout": "aggregated-rank", "block_size": "1M", "direct": false,
 "cache": "rank-shift", "ranks_per_node": 1, "repetitions": 1, "verify": true}
J
  ck 2 120 run -c "$work/shift-$b.json" --target "$work/t-shift-$b" -o "$work/shift-$b.out.json" --quiet
  [ "$code" -eq 0 ] &&
    [ "$(jq_py "$work/shift-$b.out.json" "d['points'][0]['repetitions'][0]['cache']['method']")" = rank-shift ] &&
    [ "$(jq_py "$work/shift-$b.out.json" "d['points'][0]['repetitions'][0]['bytes_verified'] > 0")" = True ]
  verdict "1 $b: rank-shift restore ends ok (exit 0), every byte verified"
done

# ---------------------------------------------------------------------------------------------
echo "# 2. cache auto as an unprivileged user, 2 ranks on 2 emulated nodes, buffered I/O"
cat > "$work/auto.json" << 'J'
{"model": "tiny", "parallelism": {"tp": 1, "dp": "auto"}, "direct": false, "cache": "auto",
 "ranks_per_node": 1, "repetitions": 1}
J
if [ "$(id -u)" -ne 0 ]; then
  ck 2 120 run -c "$work/auto.json" --target "$work/t-auto" -o "$work/auto.out.json" --quiet
  ran=1
elif command -v setpriv > /dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups \
  test -x "$BIN" 2> /dev/null; then
  chmod 755 "$work"
  mkdir -p "$work/nobody" && chown 65534:65534 "$work/nobody"
  out="$(cd "$work/nobody" && timeout -k 10 120 setpriv --reuid=65534 --regid=65534 --clear-groups \
    env HOME="$work/nobody" "${MPI_BASE[@]}" -n 2 "$BIN" run -c "$work/auto.json" \
    --target "$work/nobody/t" -o "$work/nobody/auto.out.json" --quiet 2>&1)"
  code=$?
  cp "$work/nobody/auto.out.json" "$work/auto.out.json" 2> /dev/null
  ran=1
else
  echo "skip 2: cannot run the binary as an unprivileged user here (setpriv, path permissions)"
  ran=0
fi
if [ "$ran" = 1 ]; then
  # Not root: drop-caches is out; emulated nodes share one page cache, so rank-shift would not
  # defeat it: auto resolves to fadvise (rank-shift is chosen only on several real nodes).
  [ "$code" -eq 0 ] && [ "$(jq_py "$work/auto.out.json" "d['status']")" = ok ] &&
    [ "$(jq_py "$work/auto.out.json" "d['points'][0]['settings']['cache']")" = fadvise ]
  verdict "2 cache auto, unprivileged, 2 emulated nodes: fadvise chosen, run ends ok"
fi

# ---------------------------------------------------------------------------------------------
echo "# 3. entries planted in the run directory mid-run are never written through"
echo precious > "$work/victim"
mkdir -p "$work/foreign"
cat > "$work/long1.json" << 'J'
{"model": "tiny", "parallelism": {"tp": 1}, "direct": false, "cache": "none", "repetitions": 30}
J
# plant KIND: starts a 30-repetition run on 1 rank, plants a link in a repetition directory the
# run has not reached yet (rep-20 or rep-25: about 20 tiny repetitions, seconds, after the first
# file appears), waits for the run; sets out, code.
plant() {
  local kind="$1" t="$work/t-plant-$1" r="" f="" i
  mkdir -p "$t"
  (timeout -k 10 120 "${MPI_BASE[@]}" -n 1 "$BIN" run -c "$work/long1.json" --target "$t" \
    -o "$work/plant-$kind.json" --quiet > "$work/plant-$kind.out" 2>&1
  echo $? > "$work/plant-$kind.rc") &
  bgpid=$!
  for i in $(seq 400); do
    r="$(ls -d "$t"/ckptbench-* 2> /dev/null)" && f="$(cd "$r" 2> /dev/null &&
      find . -type f -path './point-001/rep-0*' 2> /dev/null | head -1)" && [ -n "$f" ] && break
    sleep 0.02
  done
  if [ "$kind" = file ]; then
    f="${f#./point-001/rep-0?/}"
    mkdir -p "$r/point-001/rep-20/$(dirname "$f")" && ln -s "$work/victim" "$r/point-001/rep-20/$f"
  else
    ln -s "$work/foreign" "$r/point-001/rep-25"
  fi
  wait "$bgpid"
  bgpid=""
  out="$(cat "$work/plant-$kind.out")"
  code="$(cat "$work/plant-$kind.rc")"
}
plant file
[ "$(cat "$work/victim")" = precious ] && [ "$code" -eq 1 ] && grep -q "rep-20" <<< "$out" &&
  grep -q "something other than this run" <<< "$out"
verdict "3 a link to a file planted in rep-20: not followed, the outside file unchanged, exit 1 naming the path"
plant dir
empty_dir "$work/foreign" && [ "$code" -eq 1 ] && grep -q "rep-25" <<< "$out"
verdict "3 rep-25 planted as a link to another directory: nothing written there, exit 1 naming it"
[ "$(jq_py "$work/plant-dir.json" "d['status']")" = failed ]
verdict "3 the report says failed"

# ---------------------------------------------------------------------------------------------
echo "# 4. ranks launched with different configs or targets (MPMD)"
cat > "$work/a.json" << 'J'
{"model": "tiny", "parallelism": {"tp": 1, "dp": "auto"}, "layout": "file-per-shard"}
J
cat > "$work/b.json" << 'J'
{"model": "tiny", "parallelism": {"tp": 1, "dp": "auto"}, "layout": "aggregated-rank"}
J
mpmd() {
  out="$(timeout -k 10 60 "${MPI_BASE[@]}" -n 1 "$BIN" run "$@" 2>&1)"
  code=$?
}
mpmd -c "$work/a.json" --target "$work/t-mpmd" -o "$work/mpmd.json" --quiet : \
  -n 1 "$BIN" run -c "$work/b.json" --target "$work/t-mpmd" -o "$work/mpmd.json" --quiet
[ "$code" -eq 2 ] && grep -q "'layout' is \"file-per-shard\" on rank 0 but \"aggregated-rank\" on rank 1" <<< "$out" &&
  [ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ] && [ ! -e "$work/t-mpmd" ] && [ ! -e "$work/mpmd.json" ]
verdict "4 different layouts on ranks 0 and 1: exit 2 naming the key and ranks, once, nothing created"
mpmd -c "$work/a.json" --target "$work/t-mpmd1" -o "$work/mpmd.json" --quiet : \
  -n 1 "$BIN" run -c "$work/a.json" --target "$work/t-mpmd2" -o "$work/mpmd.json" --quiet
[ "$code" -eq 2 ] && grep -q "'target'" <<< "$out" && [ ! -e "$work/t-mpmd1" ] && [ ! -e "$work/t-mpmd2" ]
verdict "4 different --target on rank 1: exit 2 naming target, nothing created"
cat > "$work/bad.json" << 'J'
{"model": "tiny", "parallelism": {"tp": 1, "dp": "auto"}, "layout": "file-per-chunk"}
J
mpmd -c "$work/a.json" --target "$work/t-mpmd" -o "$work/mpmd.json" --quiet : \
  -n 1 "$BIN" run -c "$work/bad.json" --target "$work/t-mpmd" -o "$work/mpmd.json" --quiet
[ "$code" -eq 2 ] && grep -q "rank 1 (not rank 0): .*layout.*file-per-chunk" <<< "$out" &&
  [ "$(grep -c "ckptbench: error" <<< "$out")" -eq 1 ] && [ ! -e "$work/t-mpmd" ]
verdict "4 a config invalid on rank 1 only: exit 2 naming rank 1 and the key, once, no hang"
mpmd -c "$work/a.json" --target "$work/t-mpmd" -o "$work/mpmd.json" --quiet : \
  -n 1 "$BIN" run -c "$work/missing.json" --target "$work/t-mpmd" -o "$work/mpmd.json" --quiet
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] && [ "$code" -ne 137 ] && grep -q "missing.json" <<< "$out" &&
  [ ! -e "$work/t-mpmd" ]
verdict "4 a config file missing on rank 1 only: the job ends (no hang) naming the file"

# ---------------------------------------------------------------------------------------------
echo "# 5. SIGUSR1, SIGUSR2, SIGHUP (Slurm's --signal, a lost terminal) stop like SIGTERM"
cat > "$work/long.json" << 'J'
{"model": {"name": "llama2-7b", "scale": 0.003}, "parallelism": {"tp": 2, "dp": "auto"},
 "layout": "file-per-shard", "backend": "posix", "block_size": "1M", "cache": "fadvise",
 "repetitions": 30, "verify": true}
J
# stop_with SIG WHO: a 2-rank run, signalled (the ranks, or mpiexec) after its first repetition.
stop_with() {
  local sig="$1" who="$2" t="$work/t-sig-$1-$2"
  rm -f "$work/sig.json"
  (timeout -k 10 150 "${MPI_BASE[@]}" -n 2 "$BIN" run -c "$work/long.json" --target "$t" \
    -o "$work/sig.json" --quiet > "$work/sig.out" 2>&1
  echo $? > "$work/sig.rc") &
  bgpid=$!
  if ! wait_for "$work/sig.json" 90 "$bgpid"; then
    kill -9 "$bgpid" 2> /dev/null
    wait "$bgpid"
    bgpid=""
    code=-1
    out="no report after 90 s: $(cat "$work/sig.out")"
    return 1
  fi
  if [ "$who" = ranks ]; then
    # shellcheck disable=SC2046
    kill -"$sig" $(rank_pids "$t") 2> /dev/null
  else
    local p
    for p in $(pgrep -f -- "-o $work/sig.json"); do
      case "$(cat /proc/"$p"/comm 2> /dev/null)" in mpiexec | mpirun | orterun | prterun) kill -"$sig" "$p" ;; esac
    done
  fi
  wait "$bgpid"
  bgpid=""
  code="$(cat "$work/sig.rc")"
  out="$(cat "$work/sig.out")"
  empty_dir "$t" && [ "$(jq_py "$work/sig.json" "d['status']")" = failed ] &&
    jq_py "$work/sig.json" "d['error']" | grep -q "interrupted by signal" ||
    { out+=" [left in the target: $(find "$t" -mindepth 1 2> /dev/null | wc -l) entries; report: $(head -c 300 "$work/sig.json" 2> /dev/null)]"; return 1; }
}
for sig in USR1 USR2 HUP; do
  stop_with "$sig" ranks
  left=$?
  [ $left -eq 0 ] && [ "$code" -eq 1 ] && grep -q "interrupted by signal $(kill -l "$sig")" <<< "$out"
  verdict "5 SIG$sig to the ranks: exit 1, signal named, report failed, run directory removed"
done
stop_with USR2 mpiexec
left=$?
[ $left -eq 0 ] && [ "$code" -eq 1 ]
verdict "5 SIGUSR2 to mpiexec (forwarded to the ranks): exit 1, report failed, nothing left"
# SIGTERM / SIGINT (Ctrl-C) to mpiexec: Open MPI passes SIGTERM on and kills the ranks about a
# second later, mid-phase; the watcher thread writes the report and removes the run directory
# in that second (issue 16, item 8).
for sig in TERM INT; do
  stop_with "$sig" mpiexec
  left=$?
  [ $left -eq 0 ] && [ "$code" -ne 0 ] && [ "$code" -ne 124 ] && [ "$code" -ne 137 ]
  verdict "5 SIG$sig to mpiexec mid-phase: exit $code, report failed naming the signal, nothing left"
done

# ---------------------------------------------------------------------------------------------
echo "# 6. ulimit -f: a clear error naming rank, file and the limit, not SIGXFSZ"
for b in posix io_uring; do
  skip_unbuilt "$b" "6 $b" && continue
  for pre in true false; do
    cat > "$work/fsize.json" << J
{"model": {"name": "llama2-7b", "scale": 0.003}, "parallelism": {"tp": 2, "dp": "auto"},
 "layout": "aggregated-rank", "backend": "$b", "block_size": "1M", "preallocate": $pre,
 "repetitions": 1}
J
    out="$(ulimit -f 65536 && timeout -k 10 120 "${MPI_BASE[@]}" -n 2 "$BIN" run -c "$work/fsize.json" \
      --target "$work/t-fsize" -o "$work/fsize.out.json" --quiet 2>&1)"
    code=$?
    want="offset"
    [ "$pre" = true ] && want="fallocate"
    [ "$code" -eq 1 ] && grep -q "file size limit (ulimit -f, RLIMIT_FSIZE) is 67108864 bytes" <<< "$out" &&
      grep -q "rank [01]" <<< "$out" && grep -q "$want" <<< "$out" && empty_dir "$work/t-fsize" &&
      [ "$(jq_py "$work/fsize.out.json" "d['status']")" = failed ]
    verdict "6 $b preallocate=$pre under ulimit -f 64 MiB: exit 1, rank, file, $want and the limit named"
  done
done

summary cluster_blockers
