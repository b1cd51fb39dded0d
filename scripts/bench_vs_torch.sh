#!/usr/bin/env bash
# Real PyTorch against ckptbench's replay of it: the same checkpoint saved and restored by the real
# framework (scripts/realfw.py) and by `ckptbench run`, in interleaved pairs, per case.
#
#   scripts/bench_vs_torch.sh [--pairs N] [--reps N] [--cases LIST] [--config FILE]
#                             [--set KEY=VALUE ...] [--ranks N] [--target DIR] [--out DIR]
#                             [--json FILE] [--keep]
#   --pairs N      pairs (real + replay) per case; default 5
#   --reps N       save + restore cycles in each run (realfw.py --repetitions, ckptbench
#                  repetitions); default 1. With N >= 2 a run's phase time is the median over its
#                  repetitions 2..N, the steady state of a job that saves again and again: the
#                  first save of a process pays one-time costs of the machine (on the VM of
#                  docs/PERFORMANCE.md, the kernel's first touch of the pages it gives the page
#                  cache: 6-8x the later saves, on both sides). The first repetition's times are
#                  kept in pairs.tsv and the --json summary
#   --cases LIST   comma-separated, any order: torch-save, torch-save-fsync, dcp-item, dcp-rank,
#                  megatron-dist; default torch-save,torch-save-fsync
#   --config FILE  the ckptbench config both sides run (one point); default
#                  configs/realfw-llama-small.json
#   --set KEY=VALUE  passed to both sides (ckptbench run --set, realfw.py --set, i.e. its plan);
#                  repeatable, applied after the case's own settings; --set cache=METHOD also
#                  sets realfw.py --cache
#   --ranks N      MPI ranks of both sides; default 4
#   --target DIR   where the checkpoints are written: a fresh directory bench_vs_torch.XXXXXX is
#                  made inside DIR and removed at the end; default inside $TMPDIR, else /tmp
#                  (/var/tmp when that is tmpfs: the files must reach a disk)
#   --out DIR      the per-run reports (<case>-p<NN>-real|replay.json, their logs, pairs.tsv);
#                  default a fresh directory in $TMPDIR or /tmp, kept
#   --json FILE    also write a summary: every pair's times and ratio, the per-case statistics,
#                  the commands, commit and settings
#   --keep         keep the target directory and the checkpoints in it (both tools keep their
#                  files: one checkpoint per run, mind the space)
#   -h, --help     this text
#   env: CKPT_BINARY (default build/ckptbench), CKPT_PYTHON (the Python with torch and mpi4py for
#        realfw.py; default /usr/bin/python3, else python3, whichever imports both),
#        MPIEXEC_FLAGS="" (extra mpiexec arguments for both sides)
#
# Cases (real: scripts/realfw.py ... | replay: ckptbench run --config FILE ...):
#   torch-save        --framework torch-save                   | (the config as it is)
#   torch-save-fsync  --framework torch-save --fsync           | --set sync=file
#   dcp-item          --framework dcp --dcp-file-mode item     | --set preset=torch-dcp
#                                                                --set layout=torch-dcp
#                                                                --set dcp.replicas=lowest-rank
#                                                                --set dcp.single_file_per_rank=false
#   dcp-rank          --framework dcp --dcp-file-mode rank     | the same with ...=true
#   megatron-dist     --framework megatron-dist                | --set preset=megatron-dist
#                                                                --set layout=megatron-dist
# A case's --set settings go to both sides (realfw.py gives them to `ckptbench plan`, which
# decides the tensors each rank saves), so both handle the same checkpoint; the summary checks
# that both plans have the same payload. dcp.replicas=lowest-rank: torch 1.13's DCP saves the
# replicated tensors from the coordinator. megatron-dist: Megatron's spread of the replicated
# tensors over the data-parallel ranks is the layout's, so realfw.py's plan gives each rank the
# items the replay's rank writes.
#
# A pair is one run of each side, each a whole save + cache step + restore on fresh files;
# odd pairs run the real side first, even pairs the replay first, so that drift over the run
# (page cache, file system, another job) falls on both. Before every run: sync and drop the page
# cache (echo 3 > /proc/sys/vm/drop_caches; needs root), so that every save starts with no dirty
# pages left by the run before. Between their save and restore both tools drop the caches
# themselves (cache drop-caches: ckptbench's "cache", realfw.py --cache). Without root neither
# is possible: the script then only syncs, both tools use cache fadvise, and the header says the
# numbers include page cache effects.
#
# What is compared: per case, phase (save, restore) and pair, the ratio replay / real of the
# phase times, each the report's points[0].repetitions[0].<phase>.elapsed_s (with --reps N >= 2:
# the median of repetitions[1..N-1]) (the slowest rank's
# time from the barrier to the end of its phase; realfw.py measures the framework's calls,
# ckptbench its open/io/sync/close). Printed per case and phase: the median ratio, its min-max
# range, each pair's ratio, the median times of both sides, and whether the median ratio lies
# within 0.8-1.25 ("within") or not ("OUTSIDE"). scripts/compare.py REAL.json REPLAY.json shows
# one pair in detail (where the replay's time goes).
#
# Exit status: 0 when every run succeeded (whatever the ratios: this is a measurement), 1 when a
# run failed (its output is shown), 2 on a bad option or a missing tool.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

die2() { echo "bench_vs_torch: $*" >&2; exit 2; }
is_posint() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
quoted() { local q; q="$(printf '%q ' "$@")"; printf '%s' "${q% }"; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

# A case's settings for both sides (case_sets) and realfw.py's options (real_opts).
case_sets() {
  case "$1" in
    torch-save) ;;
    torch-save-fsync) echo sync=file ;;
    dcp-item) printf '%s\n' preset=torch-dcp layout=torch-dcp dcp.replicas=lowest-rank \
      dcp.single_file_per_rank=false ;;
    dcp-rank) printf '%s\n' preset=torch-dcp layout=torch-dcp dcp.replicas=lowest-rank \
      dcp.single_file_per_rank=true ;;
    megatron-dist) printf '%s\n' preset=megatron-dist layout=megatron-dist ;;
  esac
}
real_opts() {
  case "$1" in
    torch-save) printf '%s\n' --framework torch-save ;;
    torch-save-fsync) printf '%s\n' --framework torch-save --fsync ;;
    dcp-item) printf '%s\n' --framework dcp --dcp-file-mode item ;;
    dcp-rank) printf '%s\n' --framework dcp --dcp-file-mode rank ;;
    megatron-dist) printf '%s\n' --framework megatron-dist ;;
  esac
}
all_cases=(torch-save torch-save-fsync dcp-item dcp-rank megatron-dist)
bin="${CKPT_BINARY:-$CKPT_ROOT/build/ckptbench}"
pairs=5
reps=1
cases_sel="torch-save,torch-save-fsync"
config="$CKPT_ROOT/configs/realfw-llama-small.json"
sets=()
ranks=4
target=""
out=""
json_out=""
keep=0
read -r -a mpi_flags <<< "${MPIEXEC_FLAGS:-}"

# --opt=value is --opt value.
argv=()
for a in "$@"; do
  case "$a" in --*=*) argv+=("${a%%=*}" "${a#*=}") ;; *) argv+=("$a") ;; esac
done
set -- ${argv[@]+"${argv[@]}"}
value() {  # OPTION ARGS...: the option's value, or exit 2 naming the option
  [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || die2 "option $1 needs a value (see --help)"
  printf '%s' "$2"
}
while (($#)); do
  case "$1" in
    --pairs) pairs="$(value "$@")" || exit 2
      is_posint "$pairs" || die2 "--pairs $pairs: allowed a positive integer (pairs per case)"
      shift 2 ;;
    --reps) reps="$(value "$@")" || exit 2
      is_posint "$reps" || die2 "--reps $reps: allowed a positive integer (repetitions per run)"
      shift 2 ;;
    --cases) cases_sel="$(value "$@")" || exit 2; shift 2 ;;
    --config) config="$(value "$@")" || exit 2
      [[ -f "$config" && -r "$config" ]] || die2 "--config $config: not a readable file"
      config="$(cd "$(dirname "$config")" && pwd)/$(basename "$config")"
      shift 2 ;;
    --set) s="$(value "$@")" || exit 2
      [[ "$s" == ?*=* ]] || die2 "--set $s: not KEY=VALUE (e.g. --set model.scale=0.25)"
      sets+=("$s"); shift 2 ;;
    --ranks) ranks="$(value "$@")" || exit 2
      is_posint "$ranks" || die2 "--ranks $ranks: allowed a positive integer (MPI ranks)"
      shift 2 ;;
    --target) target="$(value "$@")" || exit 2
      [[ ! -e "$target" || -d "$target" ]] || die2 "--target $target: exists and is not a directory"
      shift 2 ;;
    --out) out="$(value "$@")" || exit 2
      [[ ! -e "$out" || -d "$out" ]] || die2 "--out $out: exists and is not a directory"
      shift 2 ;;
    --json) json_out="$(value "$@")" || exit 2
      [[ ! -d "$json_out" ]] || die2 "--json $json_out: is a directory (give a file name)"
      shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) die2 "unknown option $1 (see --help)" ;;
    *) die2 "unexpected argument '$1' (options only; see --help)" ;;
  esac
done

cases=()
IFS=',' read -r -a sel <<< "$cases_sel"
for c in "${sel[@]}"; do
  c="${c// /}"
  [[ -n "$c" ]] || continue
  case " ${all_cases[*]} " in
    *" $c "*) ;;
    *) die2 "--cases: unknown case '$c'; allowed (comma-separated): $(IFS=,; echo "${all_cases[*]}")" ;;
  esac
  case " ${cases[*]:-} " in *" $c "*) die2 "--cases: case '$c' given twice" ;; esac
  cases+=("$c")
done
((${#cases[@]} > 0)) || die2 "--cases is empty; allowed (comma-separated): $(IFS=,; echo "${all_cases[*]}")"
[[ -f "$config" && -r "$config" ]] || die2 "--config $config: not a readable file"

# A --set cache=METHOD goes to realfw.py's --cache too; else drop-caches where permitted.
cache=""
for s in ${sets[@]+"${sets[@]}"}; do
  if [[ "$s" == cache=* ]]; then cache="${s#cache=}"; fi
done
case "$cache" in
  "" | drop-caches | fadvise | none) ;;
  *) die2 "--set cache=$cache: this script allows drop-caches, fadvise or none (realfw.py's --cache)" ;;
esac
# Tools.
[[ -x "$bin" ]] || die2 "CKPT_BINARY=$bin: not found or not executable (build first or set CKPT_BINARY)"
command -v mpiexec > /dev/null || die2 "mpiexec not found (Open MPI)"
command -v python3 > /dev/null || die2 "python3 is needed for the JSON"
py=""
for c in "${CKPT_PYTHON:-}" /usr/bin/python3 python3; do
  if [[ -z "$c" ]] || ! command -v "$c" > /dev/null; then continue; fi
  if "$c" -c 'import torch, mpi4py' 2> /dev/null; then py="$(command -v "$c")"; break; fi
done
[[ -n "$py" ]] || die2 "no Python that imports torch and mpi4py (tried ${CKPT_PYTHON:+CKPT_PYTHON=$CKPT_PYTHON, }" \
  "/usr/bin/python3, python3): apt-get install python3-torch python3-mpi4py, or set CKPT_PYTHON"
torch_version="$("$py" -c 'import torch; print(torch.__version__)' 2> /dev/null)"
# The config and settings of every case, checked before any run: ckptbench plan takes them, and
# they give one point (realfw.py runs no sweep).
plan_err="$(mktemp)"
for c in "${cases[@]}"; do
  plan_args=(plan --json --world "$ranks" --config "$config")
  while read -r s; do if [[ -n "$s" ]]; then plan_args+=(--set "$s"); fi; done < <(case_sets "$c")
  for s in ${sets[@]+"${sets[@]}"}; do plan_args+=(--set "$s"); done
  if ! plan_out="$("$bin" "${plan_args[@]}" 2> "$plan_err")"; then
    msg="$(tail -n 3 "$plan_err")"; rm -f "$plan_err"
    die2 "case $c: ckptbench plan refuses --config $config with these settings" \
      "(${plan_args[*]:6}): $msg"
  fi
  n_points="$(python3 -c 'import json, sys; print(len(json.load(sys.stdin)["points"]))' <<< "$plan_out" 2> /dev/null || echo "?")"
  [[ "$n_points" == 1 ]] || { rm -f "$plan_err"; die2 "case $c: --config $config gives $n_points points; realfw.py runs one (no sweep)"; }
done
rm -f "$plan_err"

can_drop=0
if [[ "$(id -u)" -eq 0 ]] && sync && (echo 3 > /proc/sys/vm/drop_caches) 2> /dev/null; then can_drop=1; fi
if [[ -z "$cache" ]]; then cache=$([[ $can_drop == 1 ]] && echo drop-caches || echo fadvise); fi
if [[ "$cache" == drop-caches && $can_drop == 0 ]]; then
  die2 "--set cache=drop-caches: cannot write /proc/sys/vm/drop_caches here (needs root)"
fi

# Directories.
tmp_base="${TMPDIR:-/tmp}"
fs_type() { df -PT "$1" 2> /dev/null | awk 'NR==2{print $2}'; }
notes=()
if [[ -z "$target" ]]; then
  target="$tmp_base"
  case "$(fs_type "$target")" in
    tmpfs | ramfs) notes+=("$target is $(fs_type "$target"), using /var/tmp for the checkpoints"); target=/var/tmp ;;
  esac
fi
mkdir -p "$target" || die2 "--target $target: cannot create it"
case "$(fs_type "$target")" in
  tmpfs | ramfs) notes+=("the target $target is $(fs_type "$target"): the files live in memory") ;;
esac
work="$(mktemp -d "$target/bench_vs_torch.XXXXXX")" || die2 "--target $target: cannot create a directory in it"
if [[ -z "$out" ]]; then
  out="$(mktemp -d "$tmp_base/bench_vs_torch-reports.XXXXXX")"
else
  mkdir -p "$out" || die2 "--out $out: cannot create it"
fi
out="$(cd "$out" && pwd)"
if [[ -n "$json_out" ]]; then
  mkdir -p "$(dirname "$json_out")" || die2 "--json $json_out: cannot create its directory"
fi
cleanup() {
  if [[ "$keep" == 1 ]]; then
    echo "bench_vs_torch: kept the target directory $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# The commit of the tree (and of the binary, which may be older).
commit="$(git -C "$CKPT_ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown)"
if [[ "$commit" != unknown ]] && ! git -C "$CKPT_ROOT" diff --quiet HEAD -- 2> /dev/null; then
  commit+="-dirty"
fi
bin_version="$("$bin" --version 2> /dev/null | head -1)"
bin_commit="$(sed -n 's/.*(\(.*\)).*/\1/p' <<< "$bin_version")"
if [[ -n "$bin_commit" && "$commit" != unknown && "${bin_commit%-dirty}" != "${commit%-dirty}" ]]; then
  notes+=("the binary was built from $bin_commit, the tree is at $commit")
fi

# build_cmd CASE SIDE DIR REPORT: fills the array cmd.
build_cmd() {
  local c="$1" side="$2" dir="$3" report="$4" s all_sets=()
  mapfile -t all_sets < <(case_sets "$c")
  all_sets+=(${sets[@]+"${sets[@]}"})
  cmd=("${MPIEXEC[@]}" ${mpi_flags[@]+"${mpi_flags[@]}"} -n "$ranks")
  if [[ "$side" == real ]]; then
    mapfile -t opts < <(real_opts "$c")
    cmd+=("$py" "$CKPT_ROOT/scripts/realfw.py" "${opts[@]}" --binary "$bin" --config "$config")
    for s in ${all_sets[@]+"${all_sets[@]}"}; do cmd+=(--set "$s"); done
    cmd+=(--cache "$cache" --repetitions "$reps" --target "$dir" -o "$report" --quiet)
    if [[ "$keep" == 1 ]]; then cmd+=(--keep); fi
  else
    cmd+=("$bin" run --config "$config" --set "cache=$cache" --set "repetitions=$reps")
    if [[ "$keep" == 1 ]]; then cmd+=(--set keep=true); fi
    for s in ${all_sets[@]+"${all_sets[@]}"}; do cmd+=(--set "$s"); done
    cmd+=(--target "$dir" -o "$report" --quiet)
  fi
}

tsv="$out/pairs.tsv"
printf 'case\tpair\tfirst\tside\tphase\telapsed_s\tbytes\tfiles\tpayload_bytes\tresident_fraction\treport\tcommand\tfirst_rep_s\n' > "$tsv"

# run_side CASE PAIR FIRST SIDE
run_side() {
  local c="$1" p="$2" first="$3" side="$4" name dir report log rc
  name="$c-p$(printf '%02d' "$p")-$side"
  dir="$work/$name"
  report="$out/$name.json"
  log="$out/$name.log"
  rm -f "$report"
  mkdir -p "$dir"
  build_cmd "$c" "$side" "$dir" "$report"
  if ((p == 1)); then echo "  $c, pair 1, $side: $(quoted "${cmd[@]}")"; fi
  sync
  if [[ $can_drop == 1 ]]; then echo 3 > /proc/sys/vm/drop_caches; fi
  rc=0
  "${cmd[@]}" > "$log" 2>&1 || rc=$?
  if ((rc != 0)) || [[ ! -s "$report" ]]; then
    echo "bench_vs_torch: case $c, pair $p: the $side run failed (exit $rc$([[ $rc == 0 ]] && echo ", no report"))" >&2
    echo "  command: $(quoted "${cmd[@]}")" >&2
    echo "  its output ($log), last 30 lines:" >&2
    tail -n 30 "$log" | sed 's/^/    /' >&2
    exit 1
  fi
  python3 - "$report" "$c" "$p" "$first" "$side" "$(quoted "${cmd[@]}")" "$reps" >> "$tsv" <<'PY' ||
import json, statistics, sys
path, case, pair, first, side, command, nreps = sys.argv[1:8]
nreps = int(nreps)
def fail(msg):
    sys.exit(f"bench_vs_torch: case {case}, pair {pair}, {side}: {path}: {msg}")
try:
    doc = json.load(open(path))
    point = doc["points"][0]
    reps = point["repetitions"]
    rep = reps[0]
    if len(reps) != nreps:
        raise ValueError(f"{len(reps)} repetitions, not {nreps}")
except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
    fail(f"not a usable report ({type(e).__name__}: {e})")
tool = (doc.get("tool") or {}).get("name")
want = "ckptbench-realfw" if side == "real" else "ckptbench"
if tool != want:
    fail(f"tool.name is {tool!r}, not {want!r}")
if doc.get("status", "ok") != "ok" or point.get("status", "ok") != "ok":
    fail(f"status {doc.get('status')!r} / point status {point.get('status')!r}: {point.get('error')}")
payload = (point.get("plan") or {}).get("payload_bytes", "")
res = (rep.get("cache") or {}).get("resident_fraction", "")
for ph in ("save", "restore"):
    x = rep.get(ph) or {}
    ts = [(r.get(ph) or {}).get("elapsed_s") for r in reps]
    if not all(isinstance(t, (int, float)) for t in ts):
        fail(f"no {ph}.elapsed_s in every points[0].repetitions[]")
    t = ts[0] if nreps == 1 else statistics.median(ts[1:])
    print(f"{case}\t{pair}\t{first}\t{side}\t{ph}\t{t!r}\t{x.get('bytes', '')}\t"
          f"{x.get('files', '')}\t{payload}\t{res if ph == 'restore' else ''}\t{path}\t{command}\t"
          f"{ts[0]!r}")
if isinstance(res, (int, float)) and res > 0.01:
    print(f"bench_vs_torch: WARNING: case {case} pair {pair} {side}: {res:.0%} of the files were "
          "in the page cache before the restore", file=sys.stderr)
PY
    exit 1
  if [[ "$keep" != 1 ]]; then rm -rf "$dir"; fi
}

load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
t_start=$(date +%s)
echo "bench_vs_torch: commit $commit, $bin_version, torch $torch_version ($py), $ranks ranks," \
     "$pairs pairs per case, $reps repetitions per run$( ((reps > 1)) && echo " (times: median of repetitions 2..$reps)"), cases: $(IFS=,; echo "${cases[*]}")"
echo "  config $config${sets[*]:+, --set ${sets[*]}}"
echo "  target $work ($(fs_type "$work")), cache $cache between save and restore," \
     "$([[ $can_drop == 1 ]] && echo "sync + drop_caches before every run" ||
        echo "only sync before every run (cannot drop the page cache: not root): the numbers include page cache effects")"
echo "  reports $out"
for n in ${notes[@]+"${notes[@]}"}; do echo "  note: $n"; done
echo "commands of the first pair:"
for c in "${cases[@]}"; do
  for ((p = 1; p <= pairs; p++)); do
    echo "  $c: pair $p/$pairs" >&2
    if ((p % 2 == 1)); then
      run_side "$c" "$p" real real
      run_side "$c" "$p" real replay
    else
      run_side "$c" "$p" replay replay
      run_side "$c" "$p" replay real
    fi
  done
done

echo
echo "load average (1/5/15 min) at start: $load_start, at end: $(cut -d' ' -f1-3 /proc/loadavg)" \
  "($(nproc) CPUs); $(( $(date +%s) - t_start )) s"
BVT_COMMIT="$commit" BVT_BINARY="$bin" BVT_BINARY_VERSION="$bin_version" BVT_TORCH="$torch_version" \
BVT_PYTHON="$py" BVT_CONFIG="$config" BVT_RANKS="$ranks" BVT_PAIRS="$pairs" BVT_TARGET="$work" \
BVT_CACHE="$cache" BVT_DROP="$can_drop" BVT_OUT="$out" BVT_REPS="$reps" \
  python3 - "$tsv" "$json_out" ${sets[@]+"${sets[@]}"} <<'PY'
import csv, json, os, statistics, sys

LO, HI = 0.8, 1.25
tsv, json_out, sets = sys.argv[1], sys.argv[2], sys.argv[3:]
E = os.environ
runs = {}
order = []
commands = {}
for r in csv.DictReader(open(tsv), delimiter="\t"):
    key = (r["case"], r["phase"])
    if key not in runs:
        runs[key] = {}
        order.append(key)
    runs[key].setdefault(int(r["pair"]), {})[r["side"]] = r
    if r["pair"] == "1":
        commands.setdefault(r["case"], {})[r["side"]] = r["command"]

print("times: the phase's elapsed_s (slowest rank); ratio = replay / real per pair (above 1: the "
      f"replay takes longer); within = median ratio in {LO}-{HI}")
print("| case | phase | pairs | real s (median) | replay s (median) | median replay/real | range | "
      "ratio per pair | " f"{LO}-{HI} |")
print("|---|---|---|---|---|---|---|---|---|")
summary = []
payload_notes = []
for case, phase in order:
    ps = [(p, v) for p, v in sorted(runs[(case, phase)].items()) if "real" in v and "replay" in v]
    real = [float(v["real"]["elapsed_s"]) for _, v in ps]
    replay = [float(v["replay"]["elapsed_s"]) for _, v in ps]
    ratios = [b / a if a > 0 else float("inf") for a, b in zip(real, replay)]
    med = statistics.median(ratios)
    within = LO <= med <= HI
    print(f"| {case} | {phase} | {len(ps)} | {statistics.median(real):.3f} | "
          f"{statistics.median(replay):.3f} | {med:.2f} | {min(ratios):.2f}-{max(ratios):.2f} | "
          f"{' '.join(f'{x:.2f}' for x in ratios)} | {'within' if within else 'OUTSIDE'} |")
    if phase == "save":
        pl = {(v["real"]["payload_bytes"], v["replay"]["payload_bytes"]) for _, v in ps}
        if any(a != b for a, b in pl):
            payload_notes.append(f"{case}: the plans' payloads differ (real/replay bytes: "
                                 + ", ".join(f"{a}/{b}" for a, b in sorted(pl)) + ")")
    summary.append({
        "case": case, "phase": phase, "pairs": len(ps),
        "median_ratio": med, "min_ratio": min(ratios), "max_ratio": max(ratios),
        "real_s_median": statistics.median(real), "replay_s_median": statistics.median(replay),
        "within": within,
        "per_pair": [{"pair": p, "first": v["real"]["first"],
                      "real_s": float(v["real"]["elapsed_s"]),
                      "replay_s": float(v["replay"]["elapsed_s"]), "ratio": x,
                      "real_first_rep_s": float(v["real"]["first_rep_s"]),
                      "replay_first_rep_s": float(v["replay"]["first_rep_s"]),
                      "real_report": v["real"]["report"], "replay_report": v["replay"]["report"],
                      "real_bytes": int(v["real"]["bytes"] or 0),
                      "replay_bytes": int(v["replay"]["bytes"] or 0),
                      "real_files": int(v["real"]["files"] or 0),
                      "replay_files": int(v["replay"]["files"] or 0)}
                     for (p, v), x in zip(ps, ratios)],
    })
if E["BVT_REPS"] != "1":
    print("the first repetition of each run (the process's first save and restore), median ratio "
          "replay/real: " + "; ".join(
              f"{s['case']} {s['phase']} " + format(statistics.median(
                  [q["replay_first_rep_s"] / q["real_first_rep_s"] for q in s["per_pair"]
                   if q["real_first_rep_s"] > 0] or [float("nan")]), ".2f") for s in summary))
n_in = sum(s["within"] for s in summary)
print(f"\ncase x phase with the median ratio in {LO}-{HI}: {n_in}/{len(summary)}; raw data: {tsv}")
if summary:
    first = summary[0]["per_pair"][0]
    print(f"one pair in detail (where the replay's time goes): scripts/compare.py "
          f"{first['real_report']} {first['replay_report']}")
for n in payload_notes:
    print(f"WARNING: {n}")
if json_out:
    doc = {"tool": "scripts/bench_vs_torch.sh", "commit": E["BVT_COMMIT"],
           "binary": E["BVT_BINARY"], "binary_version": E["BVT_BINARY_VERSION"],
           "torch": E["BVT_TORCH"], "python": E["BVT_PYTHON"], "config": E["BVT_CONFIG"],
           "set": sets, "ranks": int(E["BVT_RANKS"]), "pairs": int(E["BVT_PAIRS"]),
           "repetitions_per_run": int(E["BVT_REPS"]),
           "run_time": "repetition 1" if E["BVT_REPS"] == "1" else
                       "median of repetitions 2.." + E["BVT_REPS"],
           "target": E["BVT_TARGET"], "cache": E["BVT_CACHE"],
           "drop_caches_before_each_run": E["BVT_DROP"] == "1", "reports": E["BVT_OUT"],
           "band": [LO, HI], "ratio": "replay elapsed_s / real elapsed_s",
           "commands_first_pair": commands, "results": summary}
    with open(json_out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"summary: {json_out}")
PY
