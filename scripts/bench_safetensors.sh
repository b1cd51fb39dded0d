#!/usr/bin/env bash
# How long importing a safetensors header takes as the tensor count grows (issue 15, item 4: one
# million tensors in under 2 s on one core). Writes a file of N tiny F32 tensors ("layers.<i>.w",
# shape [1]) for each N and reports, single-threaded:
#   parse_s   parse_safetensors_header alone (the header already in memory)
#   import_s  import_safetensors: read the header, parse, build the model (tensor inventory)
#   plan_s    `ckptbench plan` of a 1-rank file-per-shard config importing it (whole CLI)
# The first two come from a small program compiled here against build/libckptcore.a.
#   scripts/bench_safetensors.sh [N...]     (default: 10000 100000 1000000)
#   env: CKPT_BINARY (default build/ckptbench), CKPT_BUILD (default build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CKPT_BINARY:-$root/build/ckptbench}"
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(10000 100000 1000000)
work="$(mktemp -d /tmp/ckpt-bench-st.XXXXXX)"
trap 'rm -rf "$work"' EXIT
build="${CKPT_BUILD:-$root/build}"
cat > "$work/parse.cpp" <<'CPP'
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include "ckptbench/plan/safetensors.hpp"
int main(int, char** argv) {
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string b = ss.str();
  using clk = std::chrono::steady_clock;
  auto t0 = clk::now();
  auto v = ckpt::parse_safetensors_header(b, b.size(), "bench");
  auto t1 = clk::now();
  auto m = ckpt::import_safetensors(argv[1]);
  auto t2 = clk::now();
  std::printf("%.2f %.2f\n", std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count());
  return v.size() == m.tensors.size() ? 0 : 1;
}
CPP
g++ -std=c++20 -O2 -I"$root/include" "$work/parse.cpp" -o "$work/parse" "$build/libckptcore.a"
echo "bench_safetensors: $("$bin" --version 2>/dev/null | head -1), $(nproc) cores, $(git -C "$root" rev-parse --short HEAD)"
printf '%10s %12s %10s %10s %10s\n' tensors header_MiB parse_s import_s plan_s
for n in "${counts[@]}"; do
  python3 - "$work/m.safetensors" "$n" <<'PY'
import json, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
parts = ['"layers.%d.w":{"dtype":"F32","shape":[1],"data_offsets":[%d,%d]}' % (i, 4 * i, 4 * i + 4)
         for i in range(n)]
header = ("{" + ",".join(parts) + "}").encode()
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(header)))
    f.write(header)
    f.truncate(8 + len(header) + 4 * n)
PY
  cat > "$work/c.json" <<JSON
{"model": {"name": "safetensors", "safetensors": "$work/m.safetensors"},
 "parallelism": {"tp": 1, "pp": 1, "dp": 1, "zero_stage": 0}, "layout": "file-per-shard"}
JSON
  hdr=$(python3 -c "import os,sys; print('%.1f' % ((os.path.getsize(sys.argv[1]) - 4 * int(sys.argv[2])) / 2**20))" "$work/m.safetensors" "$n")
  read -r parse_s import_s < <("$work/parse" "$work/m.safetensors")
  t0=$(date +%s.%N)
  "$bin" plan --config "$work/c.json" --world 1 > /dev/null
  t1=$(date +%s.%N)
  printf '%10d %12s %10s %10s %10.2f\n' "$n" "$hdr" "$parse_s" "$import_s" "$(echo "$t1 - $t0" | bc -l)"
done
