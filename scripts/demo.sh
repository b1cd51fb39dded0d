#!/usr/bin/env bash
# One command: install what is missing, build, and run the embedded default job on 4 ranks
# into a fresh temporary directory; prints the summary table and writes results/demo-*.json.
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$CKPT_ROOT/scripts/setup.sh"
# The build scripts/test.sh makes (one directory, one configuration): the binary only here, so a
# later scripts/test.sh builds just the tests.
CKPT_BUILD_TARGET=ckptbench configure_build "$CKPT_ROOT/build" "${CKPT_TEST_BUILD_ARGS[@]}"
# A disk-backed scratch directory (not tmpfs): CKPT_DEMO_DIR, else /var/tmp.
base="${CKPT_DEMO_DIR:-/var/tmp}"
target="$(mktemp -d "$base/ckptbench-demo.XXXXXX")"
trap 'rm -rf "$target"' EXIT
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out="$CKPT_ROOT/results/demo-$stamp.json"
echo "demo: 4 ranks, embedded default config, target $target"
"${MPIEXEC[@]}" -n 4 "$CKPT_ROOT/build/ckptbench" run --target "$target" --output "$out" "$@"
