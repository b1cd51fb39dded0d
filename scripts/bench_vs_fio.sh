#!/usr/bin/env bash
# ckptbench vs fio on one rank and one file (issue 5, "Benchmark (the bar)").
#
# For each row (backend, queue depth, fixed buffers) runs PAIRS alternating pairs: fio write +
# fio read of one SIZE_GIB file, and one `ckptbench run` (save + restore of one file of the same
# size, one rank); odd pairs start with fio, even pairs with ckptbench. All direct I/O, bs 1M,
# preallocated files (fio lays out/fallocates its file before timing; ckptbench fallocates at
# create, inside its timed open step), fresh files every pair, no fsync on either side (fio's
# default; ckptbench sync "none"). Prints each pair's ratio ckptbench/fio and the median per row.
#   ckpt GiB/s  = the report's bandwidth_GiBps: bytes / whole phase (open+fallocate, I/O, close)
#   ckpt io-only = bytes / the phase's io step (what fio's runtime covers)
# Rows: io_uring vs fio ioengine=io_uring (fixedbufs when we use fixed buffers), posix vs fio
# ioengine=psync. Target: median ratio >= 0.95 in every row.
#
#   scripts/bench_vs_fio.sh [TARGET_DIR]          (TARGET_DIR on the file system to measure)
#   env: CKPT_BINARY (default build/ckptbench), PAIRS=5, QDS="1 16 64", FIXED="0 1",
#        SIZE_GIB=2, POSIX=1 (0 skips the posix/psync rows), OUT=results/bench_vs_fio-<time>.tsv,
#        FIO_IOMEM=auto|shmhuge|malloc (see below)
#
# Buffer memory decides the result on some machines, so both tools get the same kind: ckptbench's
# pool is one 2 MiB-aligned region with MADV_HUGEPAGE (settings.buffer_huge_pages in the report;
# settings.buffer_huge_page_bytes says how much the kernel really backed, and the script warns
# when that is less than the pool).
# A 1 MiB buffer of scattered 4 KiB pages can exceed the device's max_segments (254 on virtio-blk)
# and be split into two requests; a huge-page buffer never is. fio's default buffers are malloc'd
# and only huge when THP is "always". FIO_IOMEM=auto (default) therefore gives fio SysV huge pages
# (--iomem=shmhuge) when hugetlb pages are free or can be reserved (root; the old
# vm.nr_hugepages is restored on exit), else falls back to malloc and says that the comparison
# then favours ckptbench.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

bin="${CKPT_BINARY:-$CKPT_ROOT/build/ckptbench}"
target="${1:-/var/tmp/ckpt-bench-vs-fio}"
pairs="${PAIRS:-5}"
qds="${QDS:-1 16 64}"
fixed_list="${FIXED:-0 1}"
size_gib="${SIZE_GIB:-2}"
do_posix="${POSIX:-1}"
out="${OUT:-$CKPT_ROOT/results/bench_vs_fio-$(date -u +%Y%m%dT%H%M%SZ).tsv}"

[[ -x "$bin" ]] || { echo "bench_vs_fio: $bin not found (build first or set CKPT_BINARY)" >&2; exit 2; }
command -v fio >/dev/null || { echo "bench_vs_fio: fio is not installed (apt-get install fio)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench_vs_fio: python3 is needed for the JSON" >&2; exit 2; }
[[ "$pairs" -ge 1 ]] || { echo "bench_vs_fio: PAIRS must be >= 1" >&2; exit 2; }
mkdir -p "$target" "$(dirname "$out")"
work="$(mktemp -d "$target/run-XXXXXX")"
hp_restore=""
cleanup() {
  rm -rf "$work"
  if [[ -n "$hp_restore" ]]; then echo "$hp_restore" > /proc/sys/vm/nr_hugepages || true; fi
}
trap cleanup EXIT

# fio's buffer memory (see the header): shmhuge needs iodepth x 1 MiB of free hugetlb pages.
fio_iomem="${FIO_IOMEM:-auto}"
max_qd=1
for q in $qds; do ((q > max_qd)) && max_qd=$q; done
hp_kib="$(awk '/^Hugepagesize:/{print $2}' /proc/meminfo)"
hp_need=$(( (max_qd * 1024 + ${hp_kib:-2048} - 1) / ${hp_kib:-2048} + 8 ))
hp_free() { awk '/^HugePages_Free:/{print $2}' /proc/meminfo; }
case "$fio_iomem" in
  auto)
    fio_iomem=malloc
    if [[ -n "$hp_kib" && "$(hp_free)" -lt "$hp_need" && -w /proc/sys/vm/nr_hugepages ]]; then
      hp_old="$(cat /proc/sys/vm/nr_hugepages)"
      hp_restore="$hp_old"
      echo $((hp_old + hp_need - $(hp_free))) > /proc/sys/vm/nr_hugepages 2>/dev/null || true
    fi
    if [[ -n "$hp_kib" && "$(hp_free)" -ge "$hp_need" ]]; then fio_iomem=shmhuge; fi
    if [[ "$fio_iomem" == malloc ]]; then
      echo "bench_vs_fio: WARNING: no $hp_need free hugetlb pages for fio (not root?); fio uses" \
           "malloc'd buffers, which THP ($(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null))" \
           "may leave as 4 KiB pages: the comparison can favour ckptbench" >&2
    fi ;;
  shmhuge | malloc) ;;
  *) echo "bench_vs_fio: FIO_IOMEM=$fio_iomem: allowed auto, shmhuge, malloc" >&2; exit 2 ;;
esac

# One file of size_gib GiB on one rank: the DLIO sizing of a custom model is one tensor of
# 2*vocab*hidden (+ a few) fp16 parameters; aggregated-rank puts it in one file (+ a 4 KiB index).
vocab=$((size_gib * (1 << 30) / 256))
ckpt_config() {  # backend qd fixed
  cat <<JSON
{
  "name": "bench-vs-fio",
  "comment": "scripts/bench_vs_fio.sh: one rank, one ${size_gib} GiB file",
  "model": {"name": "custom", "sizing": "dlio", "optimizer": "none", "hidden": 64, "layers": 1,
            "ffn": 1, "heads": 1, "kv_heads": 1, "vocab": $vocab},
  "parallelism": {"tp": 1, "pp": 1, "dp": 1, "zero_stage": 0},
  "layout": "aggregated-rank",
  "backend": "$1",
  "block_size": "1M",
  "queue_depth": $2,
  "direct": true,
  "sync": "none",
  "preallocate": true,
  "cache": "direct",
  "repetitions": 1,
  "verify": false
  $( [[ "$1" == io_uring ]] && echo ", \"io_uring\": {\"fixed_buffers\": $( [[ $3 == 1 ]] && echo true || echo false )}" )
}
JSON
}

# run_ckpt row backend qd fixed pair -> appends "row pair ckpt write|read GiB/s io_only_GiB/s"
run_ckpt() {
  local row="$1" be="$2" qd="$3" fixed="$4" pair="$5"
  ckpt_config "$be" "$qd" "$fixed" > "$work/c.json"
  rm -rf "$work/ckpt"
  "$bin" run --config "$work/c.json" --target "$work/ckpt" --quiet -o "$work/r.json" \
    2> "$work/ckpt.err" >/dev/null || { cat "$work/ckpt.err" >&2; exit 1; }
  python3 - "$work/r.json" "$row" "$pair" >> "$out" <<'PY'
import json, sys
point = json.load(open(sys.argv[1]))["points"][0]
rep = point["repetitions"][0]
st = point.get("settings", {})
huge, pool = st.get("buffer_huge_page_bytes", -1), st.get("buffer_pool_bytes", 0)
if 0 <= huge < pool:
    print(f"bench_vs_fio: WARNING: only {huge} of ckptbench's {pool} buffer bytes are huge pages "
          "(THP off or memory fragmented): its transfers may be split like malloc'd ones",
          file=sys.stderr)
for ph, rw in (("save", "write"), ("restore", "read")):
    x = rep[ph]
    io = x["steps"]["io_s"]["max"]
    print(f"{sys.argv[2]}\t{sys.argv[3]}\tckpt\t{rw}\t{x['bandwidth_GiBps']:.4f}\t"
          f"{x['bytes'] / io / 2**30 if io > 0 else 0:.4f}")
PY
}

# run_fio row engine qd fixed pair
run_fio() {
  local row="$1" engine="$2" qd="$3" fixed="$4" pair="$5" rw
  local args=(--filename="$work/fio.bin" --size="${size_gib}g" --bs=1M --iodepth="$qd" --direct=1
              --ioengine="$engine" --iomem="$fio_iomem" --output-format=json)
  if [[ "$engine" == io_uring && "$fixed" == 1 ]]; then args+=(--fixedbufs=1); fi
  rm -f "$work/fio.bin"
  for rw in write read; do
    fio --name="$rw" --rw="$rw" "${args[@]}" > "$work/f.json" 2> "$work/fio.err" ||
      { cat "$work/fio.err" >&2; exit 1; }
    python3 - "$work/f.json" "$row" "$pair" "$rw" >> "$out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0][sys.argv[4]]
bw = j["bw_bytes"] / 2**30
print(f"{sys.argv[2]}\t{sys.argv[3]}\tfio\t{sys.argv[4]}\t{bw:.4f}\t{bw:.4f}")
PY
  done
  rm -f "$work/fio.bin"
}

printf 'row\tpair\ttool\trw\tGiBps\tio_only_GiBps\n' > "$out"
rows=()
for qd in $qds; do
  for fixed in $fixed_list; do rows+=("io_uring:$qd:$fixed"); done
done
if [[ "$do_posix" == 1 ]]; then rows+=("posix:1:0"); fi

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench_vs_fio: $("$bin" --version 2>/dev/null | head -1), $(fio --version), ${size_gib} GiB file," \
     "bs 1M, direct, $pairs pairs per row, target $target ($(df -PT "$target" | awk 'NR==2{print $2}'))," \
     "fio --iomem=$fio_iomem, THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)" >&2
for r in "${rows[@]}"; do
  IFS=: read -r be qd fixed <<< "$r"
  engine=$([[ "$be" == posix ]] && echo psync || echo io_uring)
  row="$be qd$qd"
  [[ "$fixed" == 1 ]] && row+=" fixedbufs"
  for ((p = 1; p <= pairs; p++)); do
    echo "  $row: pair $p/$pairs" >&2
    if ((p % 2 == 1)); then
      run_fio "$row" "$engine" "$qd" "$fixed" "$p"
      run_ckpt "$row" "$be" "$qd" "$fixed" "$p"
    else
      run_ckpt "$row" "$be" "$qd" "$fixed" "$p"
      run_fio "$row" "$engine" "$qd" "$fixed" "$p"
    fi
  done
done

echo "load average (1/5/15 min) at start: $load_start, at end: $(cut -d' ' -f1-3 /proc/loadavg)" \
  "($(nproc) CPUs)"
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = {}
order = []
for r in csv.DictReader(open(sys.argv[1]), delimiter="\t"):
    key = (r["row"], r["rw"])
    if key not in rows:
        rows[key] = {}
        order.append(key)
    rows[key].setdefault(int(r["pair"]), {})[r["tool"]] = (float(r["GiBps"]), float(r["io_only_GiBps"]))
print("| row | fio engine | rw | fio GiB/s (median) | ckptbench GiB/s (median) | ratio per pair | "
      "median ratio | median ratio, io-only | >= 0.95 |")
print("|---|---|---|---|---|---|---|---|---|")
worst = []
for key in order:
    pairs = [v for _, v in sorted(rows[key].items()) if "fio" in v and "ckpt" in v]
    ratios = [v["ckpt"][0] / v["fio"][0] for v in pairs]
    io_ratios = [v["ckpt"][1] / v["fio"][0] for v in pairs]
    med = statistics.median(ratios)
    worst.append(med)
    engine = "psync" if key[0].startswith("posix") else "io_uring" + (" fixedbufs" if "fixedbufs" in key[0] else "")
    print(f"| {key[0]} | {engine} | {key[1]} | {statistics.median(v['fio'][0] for v in pairs):.2f} | "
          f"{statistics.median(v['ckpt'][0] for v in pairs):.2f} | "
          f"{' '.join(f'{x:.2f}' for x in ratios)} | **{med:.2f}** | "
          f"{statistics.median(io_ratios):.2f} | {'yes' if med >= 0.95 else 'NO'} |")
print(f"\nrows meeting the 0.95 target: {sum(m >= 0.95 for m in worst)}/{len(worst)}; raw data: {sys.argv[1]}")
PY
