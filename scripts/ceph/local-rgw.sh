#!/usr/bin/env bash
# A real S3 endpoint on this machine: Ceph's RADOS Gateway (radosgw, Debian's Ceph 16.2) on
# loopback, beside the one-node cluster of scripts/ceph/local-ceph.sh (started here if it is not
# up), with a user and a bucket for the tests and for trying the `s3` backend.
#
#   scripts/ceph/local-rgw.sh start [--dir DIR]   install radosgw if missing, start the cluster
#                                                  if needed, start the gateway, create the user
#                                                  and the bucket
#   scripts/ceph/local-rgw.sh stop  [--dir DIR]   stop the gateway only (the cluster, the user,
#                                                  the bucket and its objects stay; `start` again
#                                                  brings the same endpoint back)
#   scripts/ceph/local-rgw.sh env   [--dir DIR]   prints the exports a client needs:
#                                                  CKPT_S3_ENDPOINT, CKPT_S3_BUCKET,
#                                                  AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE
#
# Then:  eval "$(scripts/ceph/local-rgw.sh env)"
#        ckptbench run --set backend=s3 --set s3.url=s3://$CKPT_S3_BUCKET/trial \
#          --set s3.endpoint=$CKPT_S3_ENDPOINT ...
#
# DIR is local-ceph.sh's (default /tmp/ckpt-ceph, or $CKPT_CEPH_DIR); the gateway keeps its log
# in DIR/log/rgw.a.log and its PID in DIR/run/rgw.a.pid, so `local-ceph.sh stop` stops it with the
# cluster. It listens on 127.0.0.1:$CKPT_RGW_PORT (default 7480), path-style addressing, region
# us-east-1. The user is `ckpt` with random keys made at the first start; they are written only to
# DIR/rgw/credentials (mode 0600, AWS credentials-file format, profile `ckpt`): never printed.
# The bucket is `ckpt` ($CKPT_S3_BUCKET to name another). `start` takes about 10 s on a running
# cluster (its first start creates the gateway's pools), plus installing radosgw (about 20 s).
# Exit status: 0 done, 2 usage, 77 radosgw cannot run here (the reason is printed), 1 anything else.
set -euo pipefail

me="local-rgw"
die() { echo "$me: error: $1" >&2; exit "${2:-1}"; }
cant() { echo "$me: cannot run the gateway here: $*" >&2; exit 77; }

cmd="${1:-}"
[ $# -gt 0 ] && shift
dir="${CKPT_CEPH_DIR:-/tmp/ckpt-ceph}"
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) { [ $# -ge 2 ] && [ -n "$2" ]; } || die "--dir needs a directory" 2; dir="$2"; shift 2 ;;
    *) die "unknown argument '$1' (usage: $0 start|stop|env [--dir DIR])" 2 ;;
  esac
done
case "$cmd" in start | stop | env) ;; *)
  die "command '$cmd': allowed start, stop, env (usage: $0 CMD [--dir DIR])" 2 ;;
esac
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
dir="${dir%/}"
here="$(cd "$(dirname "$0")" && pwd)"
conf="$dir/ceph.conf"
run="$dir/run"
gw="$dir/rgw"
port="${CKPT_RGW_PORT:-7480}"
bucket="${CKPT_S3_BUCKET:-ckpt}"
endpoint="http://127.0.0.1:$port"
pidfile="$run/rgw.a.pid"
creds="$gw/credentials"

running() {
  kill -0 "$1" 2> /dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | cut -d' ' -f1)" != Z ]
}
alive() { [ -s "$1" ] && running "$(cat "$1")"; }

if [ "$cmd" = env ]; then
  [ -s "$creds" ] || die "no gateway set up in $dir (run: $0 start --dir $dir)"
  printf 'export CKPT_S3_ENDPOINT=%q\n' "$endpoint"
  printf 'export CKPT_S3_BUCKET=%q\n' "$bucket"
  printf 'export AWS_SHARED_CREDENTIALS_FILE=%q\n' "$creds"
  printf 'export AWS_PROFILE=ckpt\n'
  exit 0
fi

stop_gw() {
  alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  local pid
  pid="$(cat "$pidfile")"
  kill "$pid" 2> /dev/null || true
  for _ in $(seq 100); do running "$pid" || break; sleep 0.1; done
  if running "$pid"; then
    echo "$me: radosgw (pid $pid) did not stop in 10 s: killed" >&2
    kill -9 "$pid" 2> /dev/null || true
    for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
}

if [ "$cmd" = stop ]; then
  stop_gw
  echo "$me: gateway stopped (the cluster in $dir keeps running)"
  exit 0
fi

# ------------------------------------------------------------------------------------ start
[ "$(id -u)" -eq 0 ] || cant "needs root (packages, daemons)"
{ [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65535 ]; } ||
  die "CKPT_RGW_PORT '$port': allowed 1024-65535" 2
[[ "$bucket" =~ ^[a-z0-9][a-z0-9.-]{2,62}$ ]] ||
  die "CKPT_S3_BUCKET '$bucket': a bucket name is 3-63 of a-z, 0-9, '.', '-'" 2
missing=()
for p in radosgw curl; do
  dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get > /dev/null || cant "${missing[*]} not installed and there is no apt-get"
  echo "$me: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq "${missing[@]}" ||
    { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; }; } \
    > "${TMPDIR:-/tmp}/local-rgw-apt.log" 2>&1 ||
    cant "apt-get install ${missing[*]} failed (see ${TMPDIR:-/tmp}/local-rgw-apt.log)"
fi
command -v radosgw > /dev/null || cant "radosgw is missing after installing it"
"$here/local-ceph.sh" start --dir "$dir" > /dev/null || exit $?
export CEPH_CONF="$conf"
cephq() { timeout 30 ceph --conf "$conf" --connect-timeout 15 "$@"; }

mkdir -p "$gw"
# The status line `curl -w %{http_code}` gives for GET / (000: no answer).
probe() { curl -s -o /dev/null -m 5 -w '%{http_code}' "$endpoint/" 2> /dev/null || true; }

if ! alive "$pidfile"; then
  if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
    die "port $port on 127.0.0.1 is in use (another gateway? set CKPT_RGW_PORT)"
  fi
  if ! grep -q '^\[client.rgw.a\]' "$conf"; then
    cat >> "$conf" << EOF

# The S3 gateway (scripts/ceph/local-rgw.sh).
[client.rgw.a]
rgw_frontends = beast endpoint=127.0.0.1:$port
rgw_data = $gw/data
log_file = $dir/log/rgw.a.log
pid_file = $run/rgw.a.daemon.pid
admin_socket = $run/rgw.a.asok
rgw_dns_name = 127.0.0.1
EOF
  fi
  mkdir -p "$gw/data"
  [ -s "$dir/keyring/client.rgw.a.keyring" ] ||
    cephq auth get-or-create client.rgw.a mon 'allow rw' osd 'allow rwx' mgr 'allow rw' \
      -o "$dir/keyring/client.rgw.a.keyring" > /dev/null 2>&1 || die "could not make the gateway's key"
  setsid radosgw --conf "$conf" -n client.rgw.a -f < /dev/null > "$dir/log/rgw.a.out" 2>&1 &
  echo $! > "$pidfile"
  code=000
  for _ in $(seq 120); do
    alive "$pidfile" || die "radosgw exited: $(tail -n 5 "$dir/log/rgw.a.out" "$dir/log/rgw.a.log" 2> /dev/null | tr '\n' ' ')"
    code="$(probe)"
    [ "$code" = 200 ] && break
    sleep 0.5
  done
  [ "$code" = 200 ] || { stop_gw; die "the gateway does not answer GET / with 200 in 60 s (last: $code)"; }
fi

# The user, with keys made once and kept in the credentials file only.
if [ ! -s "$creds" ]; then
  rnd() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
  access="$(rnd 10)"
  access="${access^^}"
  secret="$(rnd 20)"
  umask 077
  printf '[ckpt]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$access" "$secret" > "$creds.tmp"
  radosgw-admin --conf "$conf" user rm --uid=ckpt --purge-data > /dev/null 2>&1 || true
  radosgw-admin --conf "$conf" user create --uid=ckpt --display-name=ckpt \
    --access-key="$access" --secret="$secret" > /dev/null 2>&1 || die "radosgw-admin user create failed"
  mv "$creds.tmp" "$creds"
fi
access="$(awk -F' = ' '$1 == "aws_access_key_id" {print $2}' "$creds")"
# The bucket (PUT /BUCKET; 200 made, 409 already ours). The secret goes to curl on its stdin, not
# its command line.
code="$(printf 'user = "%s:%s"\n' "$access" "$(awk -F' = ' '$1 == "aws_secret_access_key" {print $2}' "$creds")" |
  curl -s -o /dev/null -w '%{http_code}' -m 15 -K - --aws-sigv4 "aws:amz:us-east-1:s3" \
    -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -X PUT "$endpoint/$bucket" || true)"
case "$code" in
  200 | 409) ;;
  *) die "could not create bucket '$bucket' (HTTP $code)" ;;
esac
echo "$me: S3 gateway up at $endpoint, bucket $bucket, user ckpt (credentials in $creds, profile ckpt)" \
  "(eval \"\$($0 env --dir $dir)\"; stop with: $0 stop --dir $dir)"
