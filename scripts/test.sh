#!/usr/bin/env bash
# One command: install what is missing, build with warnings as errors, run every test (unit,
# MPI integration on 4 ranks, CLI). Exits non-zero on any failure.
#   scripts/test.sh              normal build in build/ (the one scripts/demo.sh makes)
#   scripts/test.sh --sanitize   ASan + UBSan build in build-asan/
set -euo pipefail
source "$(dirname "$0")/common.sh"
sanitize=0
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    *) echo "usage: $0 [--sanitize]" >&2; exit 2 ;;
  esac
done
"$CKPT_ROOT/scripts/setup.sh" --with-plots --with-cluster
if [ $sanitize -eq 1 ]; then
  dir="$CKPT_ROOT/build-asan"
  configure_build "$dir" -DCMAKE_BUILD_TYPE=Debug -DCKPT_WERROR=ON -DCKPT_SANITIZE=ON
  asan_env
else
  dir="$CKPT_ROOT/build"
  configure_build "$dir" "${CKPT_TEST_BUILD_ARGS[@]}"
fi
cd "$dir"
ctest --output-on-failure -j "$(jobs_n)" --timeout 900
