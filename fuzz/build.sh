#!/usr/bin/env bash
# Builds the libFuzzer target for the safetensors header parser and runs it.
#   fuzz/build.sh [seconds=60] [extra libFuzzer flags...]
# Needs clang++ (14 tested) and its runtime (Debian: apt-get install libclang-rt-14-dev).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-60}"
shift || true
out="${CKPT_FUZZ_DIR:-$root/build-fuzz}"
cxx="${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}"
mkdir -p "$out/corpus"

# The parser and what it links against: dtype helpers (model.cpp) and their dependencies.
srcs=(src/safetensors.cpp src/model.cpp src/dlio.cpp src/jsonread.cpp src/units.cpp src/error.cpp)
(cd "$root" && "$cxx" -std=c++20 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude fuzz/fuzz_safetensors.cpp "${srcs[@]}" -o "$out/fuzz_safetensors")

# Seed corpus (length prefix + JSON + data bytes): valid headers, then near misses the parser
# must refuse (gap, overlap, uncovered tail, sub-byte tensor of a fractional byte count).
seed() {  # name json data_bytes
  python3 - "$out/corpus/$1" "$2" "$3" <<'PY'
import struct, sys
path, text, n = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
open(path, "wb").write(struct.pack("<Q", len(text)) + text + b"\0" * n)
PY
}
seed valid1 '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"format":"pt"}}' 16
seed valid2 '{"model.layers.0.mlp.up_proj.weight":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},"lm_head.weight":{"dtype":"F8_E4M3","shape":[3],"data_offsets":[8,11]}}' 11
seed empty '{}' 0
seed subbyte '{"a":{"dtype":"F4","shape":[4,4],"data_offsets":[0,8]},"b":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[8,11]},"c":{"dtype":"F6_E3M2","shape":[2,2],"data_offsets":[11,14]}}' 14
seed unordered '{"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}' 8
seed gap '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}' 12
seed overlap '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}' 12
seed tail '{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}' 8
seed oddbits '{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}' 2

ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
  "$out/fuzz_safetensors" -max_total_time="$secs" -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 "$@" "$out/corpus"
