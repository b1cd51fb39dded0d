#!/usr/bin/env bash
# Builds a libFuzzer target and runs it on a copy of its checked-in corpus (docs/fuzzing.md).
#   fuzz/build.sh [config|safetensors] [seconds=60] [extra libFuzzer flags...]
#   fuzz/build.sh 30          = fuzz/build.sh safetensors 30 (the original invocation)
#   fuzz/build.sh --build-only [config|safetensors|all]
# Needs clang++ (14 tested) and its runtime (Debian: apt-get install clang-14 libclang-rt-14-dev);
# the config target also needs MPI, and uses parallel HDF5 and liburing when pkg-config finds them
# (fuzz/Makefile: CKPT_WITH_HDF5, CKPT_WITH_IO_URING).
# Environment:
#   CKPT_FUZZ_DIR     objects, binaries, crash artifacts (default build-fuzz/ in the repo)
#   CKPT_FUZZ_CORPUS  working corpus (default $CKPT_FUZZ_DIR/corpus-<target>); the checked-in
#                     seeds of fuzz/corpus/<target>/ are copied into it, never written back
#   CXX_FUZZ          the compiler (default clang++-14, else clang++)
# Exit status: libFuzzer's (0 = no finding in the time given; non-zero = crash, sanitizer
# report, leak, timeout or out of memory, with the input saved as $CKPT_FUZZ_DIR/artifacts/*).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
out="${CKPT_FUZZ_DIR:-$root/build-fuzz}"
jobs="${CKPT_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"

build() {  # target...
  local t targets=()
  for t in "$@"; do targets+=("$out/fuzz_$t"); done
  make --no-print-directory -C "$root" -f fuzz/Makefile -j "$jobs" OUT="$out" "${targets[@]}"
}

if [ "${1:-}" = "--build-only" ]; then
  case "${2:-all}" in
    all) build config safetensors ;;
    config|safetensors) build "$2" ;;
    *) echo "usage: $0 --build-only [config|safetensors|all]" >&2; exit 2 ;;
  esac
  exit 0
fi

target=safetensors
case "${1:-}" in
  config|safetensors) target="$1"; shift ;;
  ''|[0-9]*) ;;
  *) echo "usage: $0 [config|safetensors] [seconds=60] [libFuzzer flags...]" >&2; exit 2 ;;
esac
secs="${1:-60}"
shift || true

build "$target"

corpus="${CKPT_FUZZ_CORPUS:-$out/corpus-$target}"
mkdir -p "$corpus" "$out/artifacts"
for f in "$here/corpus/$target"/*; do
  [ -e "$corpus/${f##*/}" ] || cp "$f" "$corpus/"
done

flags=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
       -artifact_prefix="$out/artifacts/$target-")
case "$target" in
  safetensors) flags+=(-max_len=4096) ;;
  config) flags+=(-max_len=4096 -dict="$here/config.dict") ;;
esac

# The config target reads model.safetensors paths the input names: run it where a relative
# path finds nothing of the repository's.
cd "$out"
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
  "$out/fuzz_$target" "${flags[@]}" "$@" "$corpus"
