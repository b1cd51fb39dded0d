#!/usr/bin/env bash
# The S3 gateway the s3 tests share (ctest fixture s3gw, tests/CMakeLists.txt): Ceph's RADOS
# Gateway beside a one-node cluster (scripts/ceph/local-rgw.sh) in DIR, with its user and bucket.
#   tests/cli/s3_gateway.sh start DIR   starts it; writes DIR/env (the variables a test evals:
#                                        endpoint, bucket, credentials, ports); exit 77 when it
#                                        cannot run here, the reason in DIR/skip
#   tests/cli/s3_gateway.sh stop DIR    stops it and removes DIR
# The tests (tests/cli/s3lib.sh) use the gateway of CKPT_S3_FIXTURE=DIR when it names one, else
# start their own.
set -u
cmd="${1:-}" dir="${2:-}"
[ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$src/tests/cli/lib.sh"
case "$cmd" in
  start)
    "$src/scripts/ceph/local-ceph.sh" stop --dir "$dir/ceph" > /dev/null 2>&1 || true
    rm -rf "$dir"
    mkdir -p "$dir"
    # A port taken between the choice and the daemon's start: another choice, a few times.
    for attempt in 1 2 3; do
      export CKPT_CEPH_PORT="$(free_ports 3)"
      export CKPT_RGW_PORT=$((CKPT_CEPH_PORT + 1))
      out="$("$src/scripts/ceph/local-rgw.sh" start --dir "$dir/ceph" 2>&1)"; code=$?
      grep -q "is in use" <<< "$out" || break
      echo "attempt $attempt: $out"
      "$src/scripts/ceph/local-ceph.sh" stop --dir "$dir/ceph" > /dev/null 2>&1 || true
      rm -rf "$dir/ceph"
    done
    echo "$out"
    if [ $code -eq 77 ]; then echo "$out" > "$dir/skip"; exit 77; fi
    [ $code -eq 0 ] || { echo "FAIL local-rgw.sh start: exit $code"; exit 1; }
    { "$src/scripts/ceph/local-rgw.sh" env --dir "$dir/ceph"
      echo "export CKPT_CEPH_PORT=$CKPT_CEPH_PORT CKPT_RGW_PORT=$CKPT_RGW_PORT"; } > "$dir/env.tmp" &&
      mv "$dir/env.tmp" "$dir/env"
    ;;
  stop)
    "$src/scripts/ceph/local-ceph.sh" stop --dir "$dir/ceph" > /dev/null 2>&1
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
