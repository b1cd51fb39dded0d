#!/usr/bin/env bash
# Real PyTorch beside the replay (ctest label realfw): scripts/realfw.py saves and restores a small
# Llama-shaped state with torch.save/torch.load (python3-torch, Debian's 1.13.1), ckptbench replays
# the same config with the torch-save preset, both under strace; scripts/strace_io.py then checks
# file names, count and sizes (equal up to the pickle's estimate), write and read request counts
# and size histograms within 10%, the fsyncs and renames, the commit order (DCP's .metadata
# renamed into place after every other file, read first by every rank), and the byte totals.
# Cases: torch.save without fsync (what frameworks do) and with an fsync per file (realfw
# --fsync, replay sync=file); DCP with one file per item and with one file per rank; Megatron-LM's
# torch_dist format (realfw --framework megatron-dist: rank 0's common.pt, DCP with two files per
# rank in iter_0000001/, metadata.json and the tracker after DCP's .metadata; the replay's preset
# and layout megatron-dist), where common.pt's size is an estimate on both sides (only its
# presence is compared). Installs python3-torch, python3-mpi4py and strace with apt-get when missing and
# root; exit 77 only when they cannot be installed, saying why. docs/layouts.md, "torch.save
# framing"; scripts/realfw.py.
# Before that, without torch or mpi4py: realfw.py refuses the targets ckptbench refuses (/etc, a
# path through a link to /, a link to /etc, the home directory itself, procfs) with exit 2 and a
# message naming --target and what is allowed, before anything starts, writing nothing. After
# the four cases, one run without --cache: the default is fadvise (the node's page cache is not
# dropped: no open of /proc/sys/vm/drop_caches in the trace), and the clean-up leaves the target
# as it was (a file that was there kept, no run directory left).
. "$(dirname "$0")/lib.sh"
need_binary
make_workdir realfw
CFG="$SRC/configs/realfw-llama-small.json"

# ---- the target (scripts/ckptinput.py check_target, as src/fs/lock.cpp check_target): refused in
# the options, before mpi4py (MPI) and torch are imported, so this part needs neither.
mkdir -p "$work/own" "$work/home"
ln -s / "$work/lroot"
ln -s /etc "$work/etc-link"
# refuse_target CASE TARGET REGEX [VAR=VALUE...]: exit 2, the message, no report, no traceback.
refuse_target() {
  local case="$1" t="$2" want="$3" code out
  shift 3
  out="$(env "$@" timeout 60 /usr/bin/python3 "$SRC/scripts/realfw.py" --framework torch-save \
    --binary "$BIN" -c "$CFG" --set model.scale=0.001 --target "$t" -o "$work/t.json" 2>&1)"; code=$?
  if [ "$code" -eq 2 ] && grep -qF -- "realfw.py: error: --target '$t'" <<< "$out" &&
     grep -qE -- "$want" <<< "$out" && grep -qF "Allowed, as by ckptbench: a directory of your own" <<< "$out" &&
     [ ! -e "$work/t.json" ] && ! grep -q Traceback <<< "$out"; then
    ok "realfw.py --target $case: exit 2 before anything starts"
  else
    bad "realfw.py --target $case: exit $code: $(tail -3 <<< "$out")"
  fi
}
refuse_target /etc /etc "refusing a system directory"
refuse_target "through a link to /" "$work/lroot/usr" "goes through the symbolic link '$work/lroot' -> '/'"
refuse_target "a link to /etc" "$work/etc-link" "goes through the symbolic link '$work/etc-link' -> '/etc'"
refuse_target "the home directory" "$work/home" "refusing your home directory itself" HOME="$work/home"
refuse_target "on procfs" /proc/sys/ckpt-realfw "is on proc \(/proc/sys\), a kernel pseudo file system"
left="$(ls -d /etc/realfw-* /usr/realfw-* /proc/sys/ckpt-realfw "$work"/home/* 2> /dev/null)"
[ -z "$left" ] && ok "realfw.py wrote nothing in the refused targets" || bad "realfw.py left: $left"

pkgs=()
/usr/bin/python3 -c "import torch" 2> /dev/null || pkgs+=(python3-torch)
/usr/bin/python3 -c "import mpi4py" 2> /dev/null || pkgs+=(python3-mpi4py)
command -v strace > /dev/null || pkgs+=(strace)
if [ ${#pkgs[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "skip: ${pkgs[*]} missing and not root to install them"; exit 77; }
  command -v apt-get > /dev/null || { echo "skip: ${pkgs[*]} missing and there is no apt-get"; exit 77; }
  echo "installing ${pkgs[*]} (Debian packages; about a minute for python3-torch)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq --no-install-recommends "${pkgs[@]}" ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${pkgs[@]}"; }; } \
    > /dev/null 2>&1 || { echo "skip: apt-get install ${pkgs[*]} failed"; exit 77; }
  /usr/bin/python3 -c "import torch, mpi4py" ||
    { echo "skip: installed, but /usr/bin/python3 cannot import torch and mpi4py"; exit 77; }
fi
PY=/usr/bin/python3
echo "torch $($PY -c 'import torch; print(torch.__version__)')"

SETS=(--set model.scale=0.05)
# The drop-caches step needs root; elsewhere both sides use fadvise.
[ -w /proc/sys/vm/drop_caches ] || SETS+=(--set cache=fadvise)
cache_opt=(--cache drop-caches)
[ -w /proc/sys/vm/drop_caches ] || cache_opt=(--cache fadvise)
TRACE=(strace -f -y -qq -e trace=%file,%desc)
# Extra options of strace_io.py compare for the next case (--estimated, --after-commit).
compare_opts=()

# case NAME FRAMEWORK FSYNCS REALFW_ARGS -- REPLAY_ARGS
case_run() {
  local name="$1" framework="$2" fsyncs="$3"
  shift 3
  local real_args=() replay_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do real_args+=("$1"); shift; done
  shift
  replay_args=("$@")
  local d="$work/$name"
  mkdir -p "$d/real" "$d/replay"
  if ! "${TRACE[@]}" -o "$d/real.trace" "${MPI[@]}" "$PY" "$SRC/scripts/realfw.py" \
    --framework "$framework" --binary "$BIN" -c "$CFG" "${SETS[@]}" "${cache_opt[@]}" \
    "${real_args[@]}" --target "$d/real" -o "$d/real.json" --keep --quiet > "$d/real.log" 2>&1; then
    bad "$name: realfw.py failed: $(tail -5 "$d/real.log")"
    return
  fi
  if ! "${TRACE[@]}" -o "$d/replay.trace" "${MPI[@]}" "$BIN" run -c "$CFG" "${SETS[@]}" \
    --set keep=true "${replay_args[@]}" -t "$d/replay" -o "$d/replay.json" -q > "$d/replay.log" 2>&1; then
    bad "$name: ckptbench run failed: $(tail -5 "$d/replay.log")"
    return
  fi
  local rdir pdir
  rdir="$(echo "$d"/real/realfw-*/point-001/rep-01)"
  pdir="$(echo "$d"/replay/ckptbench-*/point-001/rep-01)"
  [ -d "$rdir" ] && [ -d "$pdir" ] || { bad "$name: no point directory ($rdir, $pdir)"; return; }
  local out
  if out="$("$PY" "$SRC/scripts/strace_io.py" compare "$d/real.trace" "$rdir" \
    "$d/replay.trace" "$pdir" --tolerance 0.10 --size-slack 4096 --expect-fsync "$fsyncs" \
    ${compare_opts[@]+"${compare_opts[@]}"} 2>&1)"; then
    ok "$name: the replay's requests match the real framework's"
  else
    bad "$name: the replay's requests differ from the real framework's"
  fi
  echo "$out" | sed 's/^/      /'
  # The same tensor bytes on both sides, and the reports say what ran.
  local real_bytes replay_bytes
  real_bytes="$(jq_py "$d/real.json" 'd["points"][0]["repetitions"][0]["save"]["bytes"]')"
  replay_bytes="$(jq_py "$d/replay.json" 'd["points"][0]["plan"]["payload_bytes"]')"
  if [ -n "$real_bytes" ] && [ "$real_bytes" = "$replay_bytes" ]; then
    ok "$name: tensor bytes equal ($real_bytes)"
  else
    bad "$name: tensor bytes: real '$real_bytes', replay '$replay_bytes'"
  fi
  local fw
  fw="$(jq_py "$d/real.json" 'd["framework"]["name"] + " " + d["framework"]["version"]')"
  case "$fw" in "torch.save 1."* | "torch.save 2."* | "torch.distributed.checkpoint "[12].*)
    ok "$name: realfw report names $fw" ;;
    *) bad "$name: realfw report's framework: '$fw'" ;; esac
  if "$PY" -c 'import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
for r in sys.argv[2:]: jsonschema.validate(json.load(open(r)), s)' \
    "$SRC/docs/report.schema.json" "$d/real.json" "$d/replay.json" 2> "$d/schema.err"; then
    ok "$name: both reports validate against docs/report.schema.json"
  else
    bad "$name: schema: $(tail -3 "$d/schema.err")"
  fi
  local framing
  framing="$(jq_py "$d/replay.json" 'd["points"][0]["config"]["framing"]')"
  [ "$framing" = "torch-zip" ] && ok "$name: the replay's report records framing torch-zip" ||
    bad "$name: replay framing '$framing'"
}

case_run torch-save torch-save 0 --
case_run torch-save-fsync torch-save 4 --fsync -- --set sync=file
# DCP (torch 1.13's FileSystemWriter): replicated tensors stay with the coordinator, an fsync per
# file, .metadata through .metadata.tmp + fsync + rename after every data file, read first by
# every rank on restore. One file per item (1.13's code default) and one per rank.
DCP=(--set preset=torch-dcp --set layout=torch-dcp --set dcp.replicas=lowest-rank)
items="$("$BIN" plan -c "$CFG" "${SETS[@]}" "${DCP[@]}" --set dcp.single_file_per_rank=false \
  --world 4 --json --files | "$PY" -c 'import json, sys
print(len(json.load(sys.stdin)["points"][0]["file_list"]))')"
case_run dcp-item dcp "$items" --dcp-file-mode item -- "${DCP[@]}" \
  --set dcp.single_file_per_rank=false
case_run dcp-rank dcp 5 --dcp-file-mode rank -- "${DCP[@]}" --set dcp.single_file_per_rank=true
# Megatron-LM torch_dist (megatron/core/dist_checkpointing over DCP, FileSystemWriter with two
# threads): both sides plan with the megatron-dist layout, whose spread of the replicated tensors
# over the data-parallel ranks decides each rank's items. The fsyncs: each .distcp file and
# .metadata.tmp (Megatron writes common.pt, metadata.json and the tracker without one).
# common.pt is an estimate (the replay: the trainer state's estimated bytes; realfw.py: a
# stand-in dict): only its presence is compared. metadata.json and the tracker are written
# after .metadata (after DCP's save returns), on both sides.
MDIST=(--set preset=megatron-dist --set layout=megatron-dist)
mfsyncs="$("$BIN" plan -c "$CFG" "${SETS[@]}" "${MDIST[@]}" --world 4 --json --files | "$PY" -c 'import json, sys
print(1 + sum(f["path"].endswith(".distcp") for f in json.load(sys.stdin)["points"][0]["file_list"]))')"
compare_opts=(--estimated iter_0000001/common.pt --after-commit iter_0000001/metadata.json
  --after-commit latest_checkpointed_iteration.txt)
case_run megatron-dist megatron-dist "$mfsyncs" "${MDIST[@]}" -- "${MDIST[@]}"
compare_opts=()

# ---- no --cache: fadvise, as ckptbench's cache "fadvise"; the node's page cache is dropped only
# with --cache drop-caches. Without --keep the clean-up removes what the run made, nothing else.
d="$work/default-cache"
mkdir -p "$d/real"
echo "a file realfw.py did not write" > "$d/real/precious.txt"
if "${TRACE[@]}" -o "$d/real.trace" "${MPI[@]}" "$PY" "$SRC/scripts/realfw.py" --framework torch-save \
    --binary "$BIN" -c "$CFG" --set model.scale=0.01 --target "$d/real" -o "$d/real.json" --quiet \
    > "$d/real.log" 2>&1; then
  methods="$(jq_py "$d/real.json" 'd["config"]["cache"] + " " + d["points"][0]["repetitions"][0]["cache"]["method"]')"
  if [ "$methods" = "fadvise fadvise" ] && ! grep -q 'drop_caches' "$d/real.trace" &&
     grep -q 'fadvise64' "$d/real.trace"; then
    ok "realfw.py without --cache: fadvise (posix_fadvise per file), /proc/sys/vm/drop_caches never opened"
  else
    bad "realfw.py without --cache: cache '$methods', drop_caches in the trace: $(grep -c drop_caches "$d/real.trace")"
  fi
  if [ "$(cat "$d/real/precious.txt")" = "a file realfw.py did not write" ] &&
     [ "$(ls -A "$d/real")" = precious.txt ]; then
    ok "realfw.py clean-up: the file that was in the target kept, no run directory left"
  else bad "realfw.py clean-up: the target holds: $(ls -A "$d/real")"; fi
else
  bad "realfw.py without --cache failed: $(tail -5 "$d/real.log")"
fi

summary test_realfw
