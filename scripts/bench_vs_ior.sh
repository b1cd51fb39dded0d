#!/usr/bin/env bash
# ckptbench vs IOR on NP ranks (issue 18, item 4): the same I/O pattern through both tools.
#
#   IOR=/path/to/ior scripts/bench_vs_ior.sh [TARGET_DIR]     (TARGET_DIR on the file system to
#                                                             measure; default /var/tmp/ckpt-vs-ior)
#   env: IOR (required: IOR's binary; how to build it: docs/PERFORMANCE.md, "ckptbench vs IOR"),
#        CKPT_BINARY (default build/ckptbench), PAIRS=7, NP=4, MIB_PER_RANK=512,
#        ROWS="posix-fpp posix-fpp-odirect mpiio-indep mpiio-coll hdf5" (any subset, any order),
#        MPIEXEC_FLAGS="" (extra mpiexec arguments for both tools, e.g. "--mca io romio321"),
#        SETTLE_S=auto (seconds to wait before each tool's run; auto: 10 where the VM hands free
#        memory back to its host, else 0; see "Memory" below),
#        IOR_HUGE_BUFFERS=0 (1: IOR's transfer buffers in huge pages, as ckptbench's, see below),
#        OUT=results/bench_vs_ior-<time>.tsv, KEEP_LOGS=0 (1: keep the run directory, for debugging)
#
# Rows (IOR options | ckptbench config), all with 1 MiB transfers, one transfer in flight per rank,
# MIB_PER_RANK MiB per rank, fsync at the end of the write, caches dropped before the read:
#   posix-fpp          -a POSIX -F                | layout aggregated-rank, backend posix
#   posix-fpp-odirect  -a POSIX -F --posix.odirect| the same with "direct": true
#   mpiio-indep        -a MPIIO  (one shared file)| layout shared-file, backend mpiio, independent
#   mpiio-coll         -a MPIIO -c                | the same with "mpiio": {"mode": "collective"}
#   hdf5               -a HDF5 --hdf5.noFill      | layout shared-file, backend hdf5, independent
#                      --hdf5.setAlignment=1m     |   ("align": "1M": H5Pset_alignment(1M, 1M))
# IOR: -b <MIB_PER_RANK>m -t 1m -s 1 -e (fsync/MPI_File_sync/H5Fflush at the end of the write).
#
# Same bytes at the same offsets. ckptbench's model is one safetensors tensor of NP x
# MIB_PER_RANK MiB (uint8; a sparse file in the run directory, only its header is read) split
# by ZeRO-3 over NP data-parallel ranks with no optimizer state: rank r holds exactly one
# contiguous fragment of MIB_PER_RANK MiB (checked in every report: plan.rank_payload_bytes).
#   - file per process: rank r's file holds its fragment at [0, M) (IOR: testfile.0000000r,
#     [0, M)), written and read as M/1 MiB sequential 1 MiB transfers by both; ckptbench adds
#     its index extent behind the data: 8 KiB at offset M (4 KiB header + 64 B per extent,
#     padded to the 4 KiB "align"), one more transfer.
#   - MPI-IO shared file: rank r's fragment at [r*M, (r+1)*M) in both tools (IOR: block r of
#     segment 0); ckptbench's 8 KiB index sits at NP*M, written by rank 0 (in collective mode
#     the other ranks join that call with a zero-length transfer). Both tools' transfers are the
#     same 1 MiB pieces at the same offsets.
#   - HDF5 shared file: HDF5 places the data. IOR makes one dataset of NP*M bytes (rank r's
#     hyperslab at r*M inside it), ckptbench one dataset per rank (/rank_0000r/weights/...)
#     of M bytes; both align objects >= 1 MiB to 1 MiB and write no fill values, so each
#     rank's data starts on a 1 MiB boundary behind HDF5's metadata in both files and every
#     transfer is 1 MiB at a 1 MiB-aligned offset. ckptbench writes no index in HDF5.
# The TSV records the bytes each tool moved and the size of the files it left (file_bytes).
#
# What is compared. IOR's number is its bandwidth of the -w or -r run (bwMeanMIB of
# -O summaryFormat=JSON, read with scripts/ckptreport.py; one repetition): aggregate bytes /
# (latest close end - earliest open start) over the ranks, starts aligned by a barrier; the
# write covers create (O_TRUNC), the transfers, the fsync (-e) and close. ckptbench's is the
# report's bandwidth_GiBps of the save / restore phase: bytes / the slowest rank's time from the
# barrier to the end of its close, covering open (create), io, sync ("sync": "file": fsync, or
# MPI_File_sync / H5Fflush, before the close) and close. (IOR's POSIX backend issues lseek +
# write/read per transfer, ckptbench pwrite/pread; MPI-IO and HDF5 go through the same Open MPI
# io component in both, MPIEXEC_FLAGS choosing it for both.) Neither preallocates ("preallocate":
# false; IOR's POSIX backend never does), neither verifies. Between write and read the caches
# are dropped (sync; echo 3 > /proc/sys/vm/drop_caches): by ckptbench itself ("cache":
# "drop-caches") and by this script between IOR's write run and its read run (-k keeps the
# file). This empties the whole machine's page cache, so it needs root.
#
# Memory. ckptbench's transfer buffers are one 2 MiB-aligned MADV_HUGEPAGE pool; IOR's are
# malloc'd, i.e. 4 KiB pages. With O_DIRECT that can decide more than either tool's code (on the
# development VM IOR's reads ran about 1.25x faster from huge-page buffers, with the same device
# requests; PERFORMANCE.md, "ckptbench vs IOR" and "io_uring vs fio"). IOR_HUGE_BUFFERS=1 compiles a small LD_PRELOAD library (cc needed) that serves IOR's
# allocations of >= 1 MiB from 2 MiB-aligned MADV_HUGEPAGE mappings, so that both tools' buffers
# are alike; the header line says which was used. Buffered rows copy through the page cache, so
# there the page cache's memory matters instead: in a VM whose balloon device reports free pages
# to the host (virtio-balloon free page reporting, e.g. Firecracker), the first touch of memory
# freed a few seconds earlier faults on the host and is several times slower than reusing memory
# freed just before (measured: 0.4 against 4-7 GiB/s; an IOR write of 4 x 512 MiB at 0.6 GiB/s
# 15 s after the previous files were deleted, 1.2-1.7 GiB/s right after). Which of the two a
# write gets then depends on how long each tool takes to start, and the pairs scatter over 2x
# and more. SETTLE_S waits before each tool's run (after the previous files are deleted) so that
# both write into memory already handed back (steadier, slower writes); auto picks 10 s when a
# virtio-balloon device offers free page reporting (feature bit 5), else 0. The reads start right
# after a drop either way (ckptbench's within milliseconds, IOR's after a start-up of about 1 s).
#
# Each row runs PAIRS alternating pairs (odd pairs IOR first, even pairs ckptbench first); a pair
# is IOR write + drop + IOR read, and one ckptbench run (save + drop + restore), on fresh files.
# At the end, per row and op: pairs, the median ratio ckptbench/IOR, the range of the ratios and
# a percentile bootstrap 95% interval of the median ratio (10,000 resamples of the pairs, fixed
# seed). Target: median >= 0.95 in every row, write and read.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

die2() { echo "bench_vs_ior: $*" >&2; exit 2; }
is_posint() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }

bin="${CKPT_BINARY:-$CKPT_ROOT/build/ckptbench}"
target="${1:-/var/tmp/ckpt-vs-ior}"
pairs="${PAIRS:-7}"
np="${NP:-4}"
mib="${MIB_PER_RANK:-512}"
rows_sel="${ROWS:-posix-fpp posix-fpp-odirect mpiio-indep mpiio-coll hdf5}"
keep_logs="${KEEP_LOGS:-0}"
settle="${SETTLE_S:-auto}"
settle_why="set by SETTLE_S"
ior_huge="${IOR_HUGE_BUFFERS:-0}"
read -r -a mpi_flags <<< "${MPIEXEC_FLAGS:-}"
out="${OUT:-$CKPT_ROOT/results/bench_vs_ior-$(date -u +%Y%m%dT%H%M%SZ).tsv}"
all_rows=(posix-fpp posix-fpp-odirect mpiio-indep mpiio-coll hdf5)

[[ -n "${IOR:-}" ]] || die2 "IOR is not set: IOR=/path/to/ior (build it as docs/PERFORMANCE.md," \
  "section \"ckptbench vs IOR\", says)"
[[ -f "$IOR" && -x "$IOR" ]] || die2 "IOR=$IOR: not an executable file"
[[ -x "$bin" ]] || die2 "CKPT_BINARY=$bin: not found or not executable (build first or set CKPT_BINARY)"
is_posint "$pairs" || die2 "PAIRS=$pairs: allowed a positive integer (pairs per row)"
is_posint "$np" || die2 "NP=$np: allowed a positive integer (MPI ranks)"
is_posint "$mib" || die2 "MIB_PER_RANK=$mib: allowed a positive integer (MiB written per rank," \
  "a whole number of 1 MiB transfers)"
[[ "$keep_logs" == 0 || "$keep_logs" == 1 ]] || die2 "KEEP_LOGS=$keep_logs: allowed 0 or 1"
if [[ "$settle" == auto ]]; then
  settle=0 settle_why="auto: no free page reporting seen"
  for d in /sys/bus/virtio/devices/*; do
    if [[ "$(basename "$(readlink -f "$d/driver" 2>/dev/null)")" == virtio_balloon &&
          "$(cut -c6 "$d/features" 2>/dev/null)" == 1 ]]; then
      settle=10 settle_why="auto: virtio-balloon free page reporting"
    fi
  done
fi
[[ "$settle" =~ ^[0-9]+$ ]] || die2 "SETTLE_S=$settle: allowed auto or a whole number of seconds >= 0"
[[ "$ior_huge" == 0 || "$ior_huge" == 1 ]] || die2 "IOR_HUGE_BUFFERS=$ior_huge: allowed 0 or 1"
if [[ "$ior_huge" == 1 ]]; then
  command -v cc >/dev/null || die2 "IOR_HUGE_BUFFERS=1 needs a C compiler (cc) for its preload library"
fi
rows=()
for r in $rows_sel; do
  case " ${all_rows[*]} " in
    *" $r "*) rows+=("$r") ;;
    *) die2 "ROWS: unknown row '$r'; allowed (any subset): ${all_rows[*]}" ;;
  esac
done
((${#rows[@]} > 0)) || die2 "ROWS is empty; allowed (any subset): ${all_rows[*]}"
command -v python3 >/dev/null || die2 "python3 is needed for the JSON"
command -v mpiexec >/dev/null || die2 "mpiexec not found (Open MPI)"
# Dropping the page cache between IOR's write and read runs (and ckptbench's "drop-caches").
drop_caches() { sync && echo 3 > /proc/sys/vm/drop_caches; }
drop_caches 2>/dev/null || die2 "cannot write /proc/sys/vm/drop_caches: the read phases need" \
  "the page cache dropped; run as root on a machine (not a container) that allows it"

mkdir -p "$target" "$(dirname "$out")"
work="$(mktemp -d "$target/bench_vs_ior-XXXXXX")"
cleanup() {
  if [[ "$keep_logs" == 1 ]]; then
    rm -rf "$work/ior" "$work/ckpt" "$work/model.safetensors"
    echo "bench_vs_ior: logs kept in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

mpirun_() { "${MPIEXEC[@]}" "${mpi_flags[@]}" -n "$np" "$@"; }
ior_env=()
if [[ "$ior_huge" == 1 ]]; then
  # malloc(>= 1 MiB) from a 2 MiB-aligned MADV_HUGEPAGE mapping (IOR's transfer buffers; also any
  # other large allocation of IOR, MPI or HDF5); everything else goes to glibc.
  cat > "$work/hugebuf.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#define HUGE (2ul << 20)
#define SLOTS 256
static struct { char *p, *map; size_t len, maplen; } tab[SLOTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_realloc)(void *, size_t);
static void init(void) {
  if (next_malloc) return;
  next_realloc = dlsym(RTLD_NEXT, "realloc");
  next_free = dlsym(RTLD_NEXT, "free");
  next_malloc = dlsym(RTLD_NEXT, "malloc");
}
static int slot(const void *p) {
  for (int i = 0; i < SLOTS; i++) if (tab[i].p == p) return i;
  return -1;
}
void *malloc(size_t n) {
  init();
  if (n < (1ul << 20)) return next_malloc(n);
  size_t len = (n + HUGE - 1) & ~(HUGE - 1), maplen = len + HUGE;
  char *m = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return next_malloc(n);
  char *a = (char *)(((uintptr_t)m + HUGE - 1) & ~(HUGE - 1));
  madvise(a, len, MADV_HUGEPAGE);
  pthread_mutex_lock(&mu);
  int i = slot(NULL);
  if (i >= 0) { tab[i].p = a; tab[i].map = m; tab[i].len = len; tab[i].maplen = maplen; }
  pthread_mutex_unlock(&mu);
  if (i < 0) { munmap(m, maplen); return next_malloc(n); }
  return a;
}
void free(void *p) {
  init();
  if (!p) return;
  pthread_mutex_lock(&mu);
  int i = slot(p);
  char *m = i >= 0 ? tab[i].map : NULL;
  size_t maplen = i >= 0 ? tab[i].maplen : 0;
  if (i >= 0) tab[i].p = NULL;
  pthread_mutex_unlock(&mu);
  if (i >= 0) munmap(m, maplen); else next_free(p);
}
void *realloc(void *p, size_t n) {
  init();
  pthread_mutex_lock(&mu);
  int i = p ? slot(p) : -1;
  size_t old = i >= 0 ? tab[i].len : 0;
  pthread_mutex_unlock(&mu);
  if (i < 0) return next_realloc(p, n);
  void *q = malloc(n);
  if (q) memcpy(q, p, old < n ? old : n);
  free(p);
  return q;
}
C
  cc -O2 -shared -fPIC -o "$work/hugebuf.so" "$work/hugebuf.c" -ldl ||
    { echo "bench_vs_ior: cannot build the huge-page preload library" >&2; exit 1; }
  ior_env=(-x "LD_PRELOAD=$work/hugebuf.so")
fi
sum_sizes() { find "$1" -type f "${@:2}" -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}'; }

# The model: one uint8 tensor of np x mib MiB (header + sparse data section).
python3 - "$work/model.safetensors" $((np * mib * 1048576)) <<'PY'
import json, struct, sys
n = int(sys.argv[2])
hdr = json.dumps({"checkpoint": {"dtype": "U8", "shape": [n], "data_offsets": [0, n]}}).encode()
hdr += b" " * (-len(hdr) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(hdr)))
    f.write(hdr)
    f.truncate(8 + len(hdr) + n)
PY

ckpt_config() {  # row
  local layout=shared-file backend=posix direct=false align=4K extra=""
  case "$1" in
    posix-fpp) layout=aggregated-rank ;;
    posix-fpp-odirect) layout=aggregated-rank direct=true ;;
    mpiio-indep) backend=mpiio extra=', "mpiio": {"mode": "independent"}' ;;
    mpiio-coll) backend=mpiio extra=', "mpiio": {"mode": "collective"}' ;;
    hdf5) backend=hdf5 align=1M extra=', "hdf5": {"transfer": "independent", "chunk": "contiguous"}' ;;
  esac
  cat <<JSON
{
  "name": "bench-vs-ior $1",
  "comment": "scripts/bench_vs_ior.sh: $np ranks x $mib MiB, one ZeRO-3 fragment per rank",
  "model": {"name": "safetensors", "safetensors": "$work/model.safetensors", "optimizer": "none"},
  "parallelism": {"tp": 1, "pp": 1, "dp": $np, "zero_stage": 3},
  "layout": "$layout",
  "backend": "$backend",
  "block_size": "1M",
  "queue_depth": 1,
  "align": "$align",
  "direct": $direct,
  "sync": "file",
  "preallocate": false,
  "cache": "drop-caches",
  "repetitions": 1,
  "verify": false,
  "keep": true
  $extra
}
JSON
}

ior_args() {  # row
  local a=(-b "${mib}m" -t 1m -s 1 -e -k -O summaryFormat=JSON)
  case "$1" in
    posix-fpp) a+=(-a POSIX -F) ;;
    posix-fpp-odirect) a+=(-a POSIX -F --posix.odirect) ;;
    mpiio-indep) a+=(-a MPIIO) ;;
    mpiio-coll) a+=(-a MPIIO -c) ;;
    hdf5) a+=(-a HDF5 --hdf5.noFill --hdf5.setAlignment=1m) ;;
  esac
  printf '%s\n' "${a[@]}"
}

# TSV: row pair first tool op GiBps s bytes file_bytes open_s xfer_s close_s load1
#   (xfer_s: IOR's wrRdTime, which includes its fsync; ckptbench's io + sync steps, slowest rank;
#   load1: the 1-minute load average after the run)
run_ior() {  # row pair first
  local row="$1" pair="$2" first="$3" op flag args
  mapfile -t args < <(ior_args "$row")
  rm -rf "$work/ior"
  mkdir -p "$work/ior"
  sync
  sleep "$settle"
  for op in write read; do
    flag=$([[ $op == write ]] && echo -w || echo -r)
    if [[ $op == read ]]; then drop_caches; fi
    mpirun_ "${ior_env[@]}" "$IOR" "$flag" "${args[@]}" -o "$work/ior/testfile" > "$work/ior.json" \
      2> "$work/ior.err" || { cat "$work/ior.err" "$work/ior.json" >&2; exit 1; }
    python3 - "$work/ior.json" "$row" "$pair" "$first" "$op" "$(sum_sizes "$work/ior")" \
      "$CKPT_ROOT/scripts" "$(cut -d' ' -f1 /proc/loadavg)" >> "$out" <<'PY'
import sys
sys.path.insert(0, sys.argv[7])
import ckptreport
path, row, pair, first, op, fbytes = sys.argv[1:7]
load = sys.argv[8]
want = {"write": "save", "read": "restore"}[op]
lines = [x for x in ckptreport.load_reference(path) if x["phase"] == want]
if len(lines) != 1:
    sys.exit(f"bench_vs_ior: {path}: expected one IOR {op} result, got {len(lines)}")
doc = ckptreport._json_in_tool_output(open(path).read())
res = doc["tests"][0]["Results"]
res = res[0] if isinstance(res[0], dict) else res[0][0]
summ = [e for e in doc["summary"] if e.get("operation") == op][0]
moved = summ["blockSize"] * summ["segmentCount"] * summ["numTasks"]
print(f"{row}\t{pair}\t{first}\tior\t{op}\t{lines[0]['GiBps']:.4f}\t{res['totalTime']:.4f}\t"
      f"{moved}\t{fbytes}\t{res['openTime']:.4f}\t{res['wrRdTime']:.4f}\t{res['closeTime']:.4f}\t"
      f"{load}")
PY
  done
  rm -rf "$work/ior"
}

run_ckpt() {  # row pair first
  local row="$1" pair="$2" first="$3"
  ckpt_config "$row" > "$work/ckpt.json"
  rm -rf "$work/ckpt"
  sync
  sleep "$settle"
  mpirun_ "$bin" run --config "$work/ckpt.json" --target "$work/ckpt" --quiet \
    -o "$work/ckpt-report.json" > /dev/null 2> "$work/ckpt.err" || { cat "$work/ckpt.err" >&2; exit 1; }
  python3 - "$work/ckpt-report.json" "$row" "$pair" "$first" \
    "$(sum_sizes "$work/ckpt" -name '*.ckpt')" $((mib * 1048576)) "$(cut -d' ' -f1 /proc/loadavg)" \
    >> "$out" <<'PY'
import sys
path, row, pair, first, fbytes, want, load = sys.argv[1:8]
import json
point = json.load(open(path))["points"][0]
rp = point["plan"]["rank_payload_bytes"]
if not (rp["min"] == rp["max"] == int(want)):
    sys.exit(f"bench_vs_ior: {path}: ranks hold {rp['min']}..{rp['max']} bytes, not {want}")
rep = point["repetitions"][0]
res = rep["cache"].get("resident_fraction", 0)
if res > 0.01:
    print(f"bench_vs_ior: WARNING: {row} pair {pair}: {res:.0%} of ckptbench's files were "
          "cached before the restore", file=sys.stderr)
for ph, op in (("save", "write"), ("restore", "read")):
    x = rep[ph]
    st = x["steps"]
    print(f"{row}\t{pair}\t{first}\tckpt\t{op}\t{x['bandwidth_GiBps']:.4f}\t{x['elapsed_s']:.4f}\t"
          f"{x['bytes']}\t{fbytes}\t{st['open_s']['max']:.4f}\t"
          f"{st['io_s']['max'] + st['sync_s']['max']:.4f}\t{st['close_s']['max']:.4f}\t{load}")
PY
  rm -rf "$work/ckpt"
}

printf 'row\tpair\tfirst\ttool\top\tGiBps\ts\tbytes\tfile_bytes\topen_s\txfer_s\tclose_s\tload1\n' \
  > "$out"
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
t_start=$(date +%s)
echo "bench_vs_ior: $("$bin" --version 2>/dev/null | head -1), IOR $IOR," \
     "$np ranks x $mib MiB, 1 MiB transfers, $pairs pairs per row, rows: ${rows[*]}," \
     "target $target ($(df -PT "$target" | awk 'NR==2{print $2}'))," \
     "mpiexec flags: ${MPIEXEC_FLAGS:-none}, ${OMPI_MCA_io:+OMPI_MCA_io=$OMPI_MCA_io, }settle ${settle} s ($settle_why)," \
     "IOR buffers $([[ $ior_huge == 1 ]] && echo "huge pages (preload)" || echo "malloc'd")," \
     "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), output $out" >&2
for row in "${rows[@]}"; do
  for ((p = 1; p <= pairs; p++)); do
    echo "  $row: pair $p/$pairs" >&2
    if ((p % 2 == 1)); then
      run_ior "$row" "$p" ior
      run_ckpt "$row" "$p" ior
    else
      run_ckpt "$row" "$p" ckpt
      run_ior "$row" "$p" ckpt
    fi
  done
done

echo "load average (1/5/15 min) at start: $load_start, at end: $(cut -d' ' -f1-3 /proc/loadavg)" \
  "($(nproc) CPUs); $(( $(date +%s) - t_start )) s"
python3 - "$out" <<'PY'
import csv, random, statistics, sys

B, SEED = 10000, 1
rows, order = {}, []
for r in csv.DictReader(open(sys.argv[1]), delimiter="\t"):
    key = (r["row"], r["op"])
    if key not in rows:
        rows[key] = {}
        order.append(key)
    rows[key].setdefault(int(r["pair"]), {})[r["tool"]] = r


def boot_median(xs):
    rng = random.Random(SEED)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(B))
    return meds[int(0.025 * B)], meds[int(0.975 * B) - 1]


print("| row | op | pairs | median ckptbench/IOR | range | bootstrap 95% CI |")
print("|---|---|---|---|---|---|")
detail, meds = [], []
for key in order:
    ps = [v for _, v in sorted(rows[key].items()) if "ior" in v and "ckpt" in v]
    if not ps:
        continue
    ratios = [float(v["ckpt"]["GiBps"]) / float(v["ior"]["GiBps"]) for v in ps]
    med = statistics.median(ratios)
    lo, hi = boot_median(ratios)
    meds.append(med)
    print(f"| {key[0]} | {key[1]} | {len(ps)} | {'**' if med < 0.95 else ''}{med:.2f}"
          f"{'**' if med < 0.95 else ''} | {min(ratios):.2f}-{max(ratios):.2f} | {lo:.2f}-{hi:.2f} |")
    fb = {t: sorted({v[t]["file_bytes"] for v in ps}) for t in ("ior", "ckpt")}
    detail.append(
        f"| {key[0]} | {key[1]} | {statistics.median(float(v['ior']['GiBps']) for v in ps):.3f} | "
        f"{statistics.median(float(v['ckpt']['GiBps']) for v in ps):.3f} | "
        f"{' '.join(f'{x:.2f}' for x in ratios)} | {ps[0]['ior']['bytes']} / {ps[0]['ckpt']['bytes']} | "
        f"{','.join(fb['ior'])} / {','.join(fb['ckpt'])} |")
print("\n| row | op | IOR GiB/s (median) | ckptbench GiB/s (median) | ratio per pair | "
      "bytes moved IOR / ckptbench | file bytes IOR / ckptbench |")
print("|---|---|---|---|---|---|---|")
print("\n".join(detail))
print(f"\nrow x op with median >= 0.95: {sum(m >= 0.95 for m in meds)}/{len(meds)}; "
      f"raw data: {sys.argv[1]}")
PY
