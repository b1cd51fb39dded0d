#!/usr/bin/env bash
# Regenerates results/: real runs on this machine on 4 ranks, their figures and the machine.
#   results/<name>.json              one report per run below (configs/ and configs/paper/)
#   results/figures/<name>/*.png|svg scripts/plot.py on each report
#   results/machine.txt              what the machine was (CPU, memory, disk, file system, load)
# Every run uses `--set model.scale=SCALE` (default 1/64: 1.4 GiB of Llama-2-7B training state
# per checkpoint, so that a save takes about a second rather than being fixed costs) and
# `--repetitions N` as listed below; both are recorded in each report's `overrides`.
# Usage: scripts/make_results.sh        (builds build/ in Release unless CKPT_BINARY is set)
# Env:   CKPT_BINARY=path/to/ckptbench  use this binary instead of building
#        CKPT_RESULTS_TARGET=DIR        scratch directory on the disk to measure (default /var/tmp)
#        CKPT_RANKS=N                   ranks (default 4)
#        CKPT_RESULTS_SCALE=S           model.scale of every run (default 1/64)
#        CKPT_RESULTS_ONLY="a b"        only these runs (names below); the other files stay, and
#                                       results/machine.txt gets their machine record appended
# Takes about 20 minutes on a 2-core VM. If io_uring does not work here, the io_uring configs run
# with the posix backend instead and results/machine.txt says so.
set -euo pipefail
source "$(dirname "$0")/common.sh"
if [ -n "${CKPT_BINARY:-}" ]; then
  BIN="$CKPT_BINARY"
else
  "$CKPT_ROOT/scripts/setup.sh" --with-plots
  configure_build "$CKPT_ROOT/build" -DCMAKE_BUILD_TYPE=Release
  BIN="$CKPT_ROOT/build/ckptbench"
fi
PY=/usr/bin/python3
"$PY" -c 'import matplotlib' 2>/dev/null || PY=python3
RANKS="${CKPT_RANKS:-4}"
SCALE="${CKPT_RESULTS_SCALE:-1/64}"
ONLY="${CKPT_RESULTS_ONLY:-}"
OUT="$CKPT_ROOT/results"
base="${CKPT_RESULTS_TARGET:-/var/tmp}"
scratch="$(mktemp -d "$base/ckptbench-results.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$OUT"

backends="$("$BIN" backends)"
uring_ok=yes
grep -Eq '^io_uring +ok' <<< "$backends" || uring_ok=no

{
  echo "# Machine of the runs in results/ (written by scripts/make_results.sh)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "ckptbench: $("$BIN" --version)"
  echo "ranks: $RANKS (mpiexec --oversubscribe)"
  echo "model.scale: $SCALE"
  echo "kernel: $(uname -srm)"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo; echo "## CPU"; lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|Hypervisor)' || true
  echo; echo "## Memory"; free -h | head -2
  echo; echo "## Target file system"; df -hT "$base" | tail -1
  dev="$(df --output=source "$base" | tail -1)"; blk="$(basename "$dev")"
  echo "device: $dev"
  for f in queue/rotational queue/logical_block_size queue/max_sectors_kb queue/scheduler queue/write_cache; do
    [ -r "/sys/block/$blk/$f" ] && echo "$f: $(cat "/sys/block/$blk/$f")"
  done
  echo; echo "## Backends"; echo "$backends"
  [ "$uring_ok" = yes ] || echo "io_uring unavailable: the io_uring configs ran with backend posix"
  echo; echo "## Load before the runs"; uptime
} > "$scratch/machine.txt"
if [ -z "$ONLY" ]; then
  mv "$scratch/machine.txt" "$OUT/machine.txt"
else
  # A subset keeps the machine record of the other runs and adds its own below it.
  { echo; echo "# Later runs of: $ONLY"; sed 1d "$scratch/machine.txt"; } >> "$OUT/machine.txt"
fi

# run NAME CONFIG REPETITIONS: one report into results/NAME.json and its figures.
run() {
  local name="$1" cfg="$2" reps="$3"
  if [ -n "$ONLY" ] && ! grep -qw -- "$name" <<< "$ONLY"; then return 0; fi
  if [ "$uring_ok" = no ] && grep -q '"io_uring"' "$cfg"; then
    "$PY" - "$cfg" "$scratch/$name.cfg.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
if c.get("backend") == "io_uring":
    c["backend"] = "posix"
if "backend" in c.get("sweep", {}):
    c["sweep"]["backend"] = [b for b in c["sweep"]["backend"] if b != "io_uring"]
c.pop("io_uring", None)
c["comment"] = "[io_uring unavailable here: run with posix] " + c.get("comment", "")
json.dump(c, open(sys.argv[2], "w"), indent=2)
EOF
    cfg="$scratch/$name.cfg.json"
  fi
  mkdir -p "$scratch/$name"
  echo "== $name: $cfg on $RANKS ranks, model.scale $SCALE, $reps repetitions ($(uptime | sed 's/.*load/load/'))"
  "${MPIEXEC[@]}" -n "$RANKS" "$BIN" run --config "$cfg" --set "model.scale=\"$SCALE\"" \
    --repetitions "$reps" --target "$scratch/$name" --output "$OUT/$name.json" --quiet
  rm -rf "$scratch/$name" "$OUT/figures/$name"
  "$PY" "$CKPT_ROOT/scripts/plot.py" "$OUT/$name.json" --out "$OUT/figures/$name" > /dev/null
}
# Repetitions: 5 where results/README.md compares two settings point by point (Welch's t-test in
# scripts/compare.py needs at least 3; 5 resolve the differences claimed there at the spread seen
# on this VM), 3 for the wide sweeps whose claims are trends across many cells.
run layouts "$CKPT_ROOT/configs/paper/file-per-tensor-vs-aggregated.json" 5
run posix-vs-io_uring "$CKPT_ROOT/configs/paper/posix-vs-io_uring.json" 5
run odirect-on-off "$CKPT_ROOT/configs/paper/odirect-on-off.json" 5
run backends "$CKPT_ROOT/configs/sweep-backends.json" 5
run sweep-blocksize-qd "$CKPT_ROOT/configs/sweep-blocksize-qd.json" 3
run queue-depth "$CKPT_ROOT/configs/paper/queue-depth-sweep.json" 3
run aggregation-granularity "$CKPT_ROOT/configs/paper/aggregation-granularity.json" 3
# Checkpoint lifecycle: async beside sync saves with compute, cadence with retention, a restore at
# another parallelism, a weights-only restore by reads and by mmap.
run lifecycle-async "$CKPT_ROOT/configs/lifecycle-async.json" 3
run lifecycle-cadence "$CKPT_ROOT/configs/lifecycle-cadence.json" 1
run reshard "$CKPT_ROOT/configs/reshard-tp4pp2-to-tp2.json" 3
run restore-weights-only "$CKPT_ROOT/configs/restore-weights-only.json" 3
echo "== load after the runs: $(uptime)" | tee -a "$OUT/machine.txt"
echo "results written to $OUT (describe them in results/README.md)"
