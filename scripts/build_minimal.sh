#!/usr/bin/env bash
# The minimal build (issue 17, item 6, "Builds beyond Debian"): configures and builds ckptbench
# without HDF5, io_uring and the tests (-DCKPT_WITH_HDF5=OFF -DCKPT_WITH_IO_URING=OFF
# -DCKPT_BUILD_TESTS=OFF, warnings as errors), then checks the binary:
#   - `ckptbench backends` (and --json) lists each backend left out as "not built (configure with
#     -DCKPT_WITH_...=ON)", usable false, and each backend built as not "not built";
#   - a tiny posix job on 2 ranks ends with status ok, the report naming the backends not built;
#   - a config naming a backend left out (directly, through --set, through the datastates preset
#     for io_uring) is refused by validate, plan and run with exit 2 and that reason, before any
#     file exists.
# Needs what the minimal build needs: CMake >= 3.25, a C++20 compiler, MPI, CLI11, nlohmann_json.
# docs/cluster.md ("Building beyond Debian"); scripts/ci_extra.sh runs it.
#   scripts/build_minimal.sh [--dir DIR] [-- CMAKE_ARGS...]
#     --dir DIR    build there and keep it (default: a temporary directory, removed at the end)
#     CMAKE_ARGS   more configure arguments, after the three options (so they may turn one back
#                  on), e.g.  -- -DCMAKE_PREFIX_PATH=/opt/deps -DCKPT_WITH_IO_URING=ON
set -euo pipefail
source "$(dirname "$0")/common.sh"
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="${2:?--dir needs a directory}"; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--dir DIR] [-- CMAKE_ARGS...]" >&2; exit 2 ;;
  esac
done
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ckpt-minimal.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
[ -n "$dir" ] || dir="$tmp/build"

fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }

echo "build_minimal: configuring in $dir"
# Unoptimised, without debug information and without precompiled headers: the fastest build,
# and every source file must include what it uses (the other builds precompile common headers).
cmake -S "$CKPT_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
  -DCKPT_WERROR=ON -DCKPT_PCH=OFF -DCKPT_WITH_HDF5=OFF -DCKPT_WITH_IO_URING=OFF -DCKPT_BUILD_TESTS=OFF "$@" |
  grep -E '^-- (ckptbench|Found MPI:)' || true
[ -f "$dir/CMakeCache.txt" ] || { echo "build_minimal: configure failed" >&2; exit 1; }
cmake --build "$dir" -j "$(jobs_n)" > "$tmp/build.log" 2>&1 ||
  { tail -n 60 "$tmp/build.log"; echo "build_minimal: build failed" >&2; exit 1; }
bin="$dir/ckptbench"
[ -x "$bin" ] && ok "built $bin" || { bad "no binary at $bin"; exit 1; }
if grep -q '^CKPT_BUILD_TESTS:BOOL=OFF' "$dir/CMakeCache.txt"; then
  [ ! -e "$dir/tests" ] && ok "no tests configured (CKPT_BUILD_TESTS=OFF)" ||
    bad "tests configured although CKPT_BUILD_TESTS=OFF"
fi

# backend name -> its option, and whether this build has it (from the cache).
declare -A OPTION=([hdf5]=CKPT_WITH_HDF5 [io_uring]=CKPT_WITH_IO_URING)
built() { grep -q "^${OPTION[$1]}:BOOL=ON" "$dir/CMakeCache.txt"; }

# 1. `backends` and `backends --json`.
list="$("$bin" backends 2>&1)" || bad "ckptbench backends: exit $?: $list"
echo "$list"
json="$("$bin" backends --json 2>&1)" || bad "ckptbench backends --json: exit $?"
left_out=()
for b in hdf5 io_uring; do
  why="not built (configure with -D${OPTION[$b]}=ON)"
  st="$(python3 -c 'import json, sys
d = {x["name"]: x for x in json.loads(sys.argv[1])}[sys.argv[2]]
print(d["status"] if d["usable"] is False or d["status"] == "ok" else "usable but " + d["status"])' \
    "$json" "$b" 2>&1)" || st="(not in backends --json: $st)"
  if built "$b"; then
    [ "$st" != "$why" ] && ok "$b is built (status: $st)" || bad "$b: built, but listed as $st"
  else
    left_out+=("$b")
    if [ "$st" = "$why" ] && grep -Eq "^$b +no .* — $(sed 's/[().]/\\&/g' <<< "$why")\$" <<< "$list"; then
      ok "backends: $b $why (usable false)"
    else
      bad "backends: $b should say '$why', says: $st / $(grep "^$b " <<< "$list")"
    fi
  fi
done

# 2. A tiny posix job on 2 ranks.
cat > "$tmp/posix.json" << 'J'
{"model": "tiny", "parallelism": {"tp": 1, "dp": "auto"}, "backend": "posix",
 "layout": "file-per-shard", "block_size": "64K", "cache": "fadvise", "repetitions": 1,
 "verify": true, "comment": "scripts/build_minimal.sh: a tiny posix job"}
J
mkdir "$tmp/target"
if out="$(timeout -k 10 300 "${MPIEXEC[@]}" -n 2 "$bin" run -c "$tmp/posix.json" \
    --target "$tmp/target" -o "$tmp/report.json" --quiet 2>&1)"; then
  chk="$(python3 - "$tmp/report.json" "${left_out[@]}" << 'P' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "ok", d["status"]
p = d["points"][0]
assert p["status"] == "ok" and p["config"]["backend"] == "posix", (p["status"], p["config"]["backend"])
assert p["repetitions"][0]["bytes_verified"] > 0
env = d["environment"]
for b in sys.argv[2:]:
    assert env["backends"][b].startswith("not built"), (b, env["backends"][b])
print("good")
P
)"
  [ "$chk" = good ] && ok "posix job on 2 ranks: report status ok, every byte verified" ||
    bad "posix job: report: $chk"
else
  bad "posix job on 2 ranks: exit $?: $(tail -n 5 <<< "$out")"
fi

# 3. Configs naming a backend left out: exit 2 with the reason, before any I/O.
# refused WHAT WANT CMD...: CMD must exit 2 and print WANT.
refused() {
  local what="$1" want="$2" out code=0
  shift 2
  out="$("$@" 2>&1)" || code=$?
  if [ "$code" -eq 2 ] && grep -qF -- "$want" <<< "$out"; then
    ok "$what: exit 2, $(grep -m1 -F -- "$want" <<< "$out" | cut -c1-150)"
  else
    bad "$what: want exit 2 and '$want', got exit $code: $(tail -n 3 <<< "$out")"
  fi
}
for b in "${left_out[@]}"; do
  why="'backend': \"$b\" cannot be used: not built (configure with -D${OPTION[$b]}=ON)"
  printf '{"model": "tiny", "backend": "%s", "repetitions": 1}\n' "$b" > "$tmp/$b.json"
  refused "validate backend $b" "$why" "$bin" validate "$tmp/$b.json"
  refused "plan backend $b" "$why" "$bin" plan -c "$tmp/$b.json"
  refused "validate --set backend=$b" "$why" "$bin" validate "$tmp/posix.json" --set "backend=$b"
  printf '{"model": "tiny", "sweep": {"backend": ["posix", "%s"]}}\n' "$b" > "$tmp/sweep-$b.json"
  refused "validate sweep over posix and $b" "$why" "$bin" validate "$tmp/sweep-$b.json"
  refused "run backend $b on 2 ranks" "$why" timeout -k 10 120 "${MPIEXEC[@]}" -n 2 "$bin" run \
    -c "$tmp/$b.json" --target "$tmp/t-$b" -o "$tmp/r-$b.json" --quiet
  [ ! -e "$tmp/t-$b" ] && [ ! -e "$tmp/r-$b.json" ] && ok "run backend $b: no target, no report" ||
    bad "run backend $b: something was written: $(ls -d "$tmp/t-$b" "$tmp/r-$b.json" 2> /dev/null)"
done
if ! built io_uring; then
  echo '{"model": "tiny", "preset": "datastates"}' > "$tmp/datastates.json"
  refused "validate preset datastates (io_uring)" \
    "'backend': \"io_uring\" (set by preset \"datastates\") cannot be used: not built" \
    "$bin" validate "$tmp/datastates.json"
fi

if [ "$fails" -eq 0 ]; then
  echo "build_minimal: ok (${left_out[*]:-no backend} left out)"
else
  echo "build_minimal: $fails check(s) failed"
  exit 1
fi
