#!/usr/bin/env bash
# A real parallel file system in the loop: a one-node CephFS (scripts/ceph/local-ceph.sh: Debian's
# Ceph, mon + mgr + OSD + MDS, mounted with ceph-fuse) as the target.
#  1. a stripe sweep (stripe_count 1/4 x stripe_size 1M/4M, strict): every point's layout read
#     back from the files equals the request; characterize's stripe stage applies all of its
#     stripe units (16M with 16M objects);
#  2. every backend saves and verifies on it (posix buffered and O_DIRECT, io_uring, MPI-IO
#     independent and collective, HDF5);
#  3. file-per-tensor against aggregated-rank, on CephFS and on ext4: the many-file layout's
#     metadata rate is bounded by the metadata server on CephFS (far below ext4's), and the
#     aggregated layout does not pay it;
#  4. an unmounted CephFS target is refused (target_fs), nothing lands on the disk underneath.
# Skips (77) only when the Ceph daemons cannot start here, printing why.
. "$(dirname "$0")/lib.sh"
need_binary
py="$(python_with json)" || { echo "skip: no python3"; exit 77; }
make_workdir cephfs
ceph="$SRC/scripts/ceph/local-ceph.sh"
export CKPT_CEPH_PORT="$(free_ports 1)"
cli_on_exit() { "$ceph" stop --dir "$work/ceph" > /dev/null 2>&1 || true; }

out="$("$ceph" start --dir "$work/ceph" 2>&1)"; code=$?
if [ $code -eq 77 ]; then echo "skip: $out"; exit 77; fi
[ $code -eq 0 ] || { echo "FAIL local-ceph.sh start: exit $code: $out"; exit 1; }
echo "$out"
eval "$("$ceph" env --dir "$work/ceph")"
mnt="$CKPT_CEPH_MOUNT"
mountpoint -q "$mnt" || { echo "FAIL $mnt is not a mount point after start"; exit 1; }

# run NAME CONFIG_JSON [RANKS] [EXTRA...]: a run on CephFS (target_fs cephfs); sets code, out.
run() {
  local name="$1" cfg="$2" n="${3:-4}"
  shift 3
  echo "$cfg" > "$work/$name.config.json"
  out="$(timeout 600 "${MPI_BASE[@]}" -n "$n" "$BIN" run --config "$work/$name.config.json" \
        --output "$work/$name.json" --quiet "$@" 2>&1)"; code=$?
}
check() {  # check NAME PYTHON: evaluates PYTHON over the report d; prints the problems found
  "$py" - "$work/$1.json" "$2" << 'PY'
import json, sys
d = json.load(open(sys.argv[1]))
problems = []
exec(sys.argv[2])
if problems: print("; ".join(problems))
sys.exit(1 if problems else 0)
PY
}

echo "# 1. stripe sweep on CephFS: requested = obtained for every point"
run stripes '{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "repetitions": 1,
  "layout": "aggregated-rank", "backend": "posix", "cache": "fadvise", "strict": true,
  "target_fs": "cephfs", "sweep": {"stripe_count": [1, 4], "stripe_size": ["1M", "4M"]}}' 4 \
  --target "$mnt/stripes"
msg="$(check stripes "
pts = d['points']
if len(pts) != 4: problems.append(f'{len(pts)} points')
if d['environment']['file_system']['type'] != 'cephfs': problems.append('file system ' + d['environment']['file_system']['type'])
for p in pts:
    s, want = p['striping'], p['config']  # resolved: sizes in bytes
    got = s.get('obtained', {})
    if s.get('status') != 'applied' or got.get('status') != 'ok': problems.append(f\"{p['params']}: {s.get('status')} / {got.get('status')}\"); continue
    files = got['files']
    if not files or any(f.get('stripe_count') != want['stripe_count'] or f.get('stripe_size') != want['stripe_size'] for f in files):
        problems.append(f\"{p['params']}: obtained {files[:2]}\")
    if any('differs from the request' in w for w in p.get('warnings', [])): problems.append(f\"{p['params']}: mismatch warning\")
if not problems: print('; '.join(f\"{p['config']['stripe_count']} x {p['config']['stripe_size'] >> 20}M: {p['striping']['obtained']['files_sampled']} files\" for p in pts), file=sys.stderr)
" 2>&1)"; rc=$?
if [ $code -eq 0 ] && [ $rc -eq 0 ]; then ok "stripe sweep: every point applied through ceph.dir.layout and read back equal ($msg)"
else bad "stripe sweep: exit $code: $msg: $(tail -n 3 <<< "$out")"; fi

echo "# 1b. characterize's stripe stage on CephFS: 16M stripe units come with 16M objects"
# CephFS refuses a stripe unit that does not divide the object size (4 MiB by default), so the
# stage's 16 MiB probe must set object_size too; every probe applies and reads its layout back.
out="$(timeout 300 "${MPI_BASE[@]}" -n 4 "$BIN" characterize --target "$mnt/char" --budget 0.5 \
      --stages stripes --probe-size 4M --min-reps 2 --max-reps 2 -o "$work/char.json" 2>&1)"; code=$?
msg="$(check char "
probes = [p for p in d['characterization']['probes'] if p['stage'] == 'stripes']
sizes = sorted({p['settings']['stripe_size'] for p in probes})
if sizes != ['16M', '1M', '4M']: problems.append(f'stripe sizes {sizes}')
for p in probes:
    s = p['settings']
    if p['status'] != 'ok': problems.append(f\"{s['stripe_size']} x {s['stripe_count']}: {p['status']} {p.get('reason', '')}\")
    want = '16M' if s['stripe_size'] == '16M' else None
    if s.get('object_size') != want: problems.append(f\"{s['stripe_size']}: object_size {s.get('object_size')}\")
for pt in d['points']:
    got = pt.get('striping', {}).get('obtained', {})
    if pt.get('striping', {}).get('status') == 'applied' and got.get('status') != 'ok': problems.append(f'point {pt[\"index\"]}: layout read back {got.get(\"status\")}')
")"; rc=$?
if [ $code -eq 0 ] && [ $rc -eq 0 ]; then ok "characterize stripes: 1M, 4M and 16M stripe units all applied on CephFS, 16M with 16M objects"
else bad "characterize stripes: exit $code: $msg: $(tail -n 3 <<< "$out")"; fi

echo "# 2. every backend saves and verifies on CephFS"
for case in "posix false" "posix true" "io_uring false" "mpiio false independent" "mpiio false collective" "hdf5 false"; do
  read -r backend direct mode <<< "$case"
  skip_unbuilt "$backend" "$case" && continue
  extra=""
  [ -z "$mode" ] || extra=", \"mpiio\": {\"mode\": \"$mode\"}"
  layout=file-per-shard
  [ "$backend" = mpiio ] && layout=shared-file
  run "b-$backend-$direct-$mode" "{\"model\": \"tiny\", \"parallelism\": {\"tp\": 2, \"dp\": \"auto\"},
    \"repetitions\": 1, \"layout\": \"$layout\", \"backend\": \"$backend\", \"direct\": $direct,
    \"cache\": \"fadvise\", \"verify\": true, \"target_fs\": \"cephfs\", \"stripe_count\": 2,
    \"stripe_size\": \"1M\", \"object_size\": \"8M\"$extra}" 4 --target "$mnt/backends"
  msg="$(check "b-$backend-$direct-$mode" "
r = d['points'][0]['repetitions'][0]
if d['status'] != 'ok': problems.append('status ' + d['status'])
if not r['verified'] or r['bytes_verified'] <= 0: problems.append('not verified')
if r['save']['bytes'] <= 0 or r['restore']['bytes'] != r['save']['bytes']: problems.append('bytes')
got = d['points'][0]['striping'].get('obtained', {}).get('summary', {})
if got.get('object_size') != {str(8 << 20): got.get('object_size', {}).get(str(8 << 20), -1)} or not got.get('object_size'): problems.append(f'object_size obtained {got}')
" 2>&1)"; rc=$?
  if [ $code -eq 0 ] && [ $rc -eq 0 ]; then ok "$case: saved and verified on CephFS (layout 2 x 1M, objects of 8M, read back)"
  else bad "$case: exit $code: $msg: $(tail -n 3 <<< "$out")"; fi
done

echo "# 3. file-per-tensor vs aggregated-rank: the metadata server as the bottleneck"
meta='{"model": {"name": "llama2-7b", "scale": "1/4096"}, "parallelism": {"tp": 2, "dp": "auto"},
  "repetitions": 1, "backend": "posix", "cache": "fadvise", "sweep": {"layout": ["file-per-tensor", "aggregated-rank"]}}'
run meta-ceph "${meta%\}}, \"target_fs\": \"cephfs\"}" 4 --target "$mnt/meta"
c1=$code
run meta-ext4 "$meta" 4 --target "$work/meta-ext4"
c2=$code
"$py" - "$work/meta-ceph.json" "$work/meta-ext4.json" > "$work/meta.txt" 2>&1 << 'PY'
import json, sys
rows = {}
for path in sys.argv[1:]:
    d = json.load(open(path))
    fs = d["environment"]["file_system"]["type"]
    for p in d["points"]:
        s = p["repetitions"][0]["save"]
        st = {k[:-2]: v["mean"] for k, v in s["steps"].items()}
        rows[(fs, p["params"]["layout"])] = dict(files=s["files"], t=s["elapsed_s"],
                                                 rate=s["metadata_ops_per_s"], **st)
for (fs, layout), v in sorted(rows.items()):
    print(f"{fs:7} {layout:16} files {v['files']:5}  save {v['t']:.3f} s  metadata {v['rate']:6.0f} op/s"
          f"  mean rank: open {v['open']:.3f} s, write {v['io']:.3f} s, sync {v['sync']:.3f} s, close {v['close']:.3f} s")
cf, ca = rows[("cephfs", "file-per-tensor")], rows[("cephfs", "aggregated-rank")]
ef, ea = rows[("ext4", "file-per-tensor")], rows[("ext4", "aggregated-rank")]
# What each extra file costs the save: the layouts move the same bytes.
per_file = lambda f, a: (f["t"] - a["t"]) / (f["files"] - a["files"])
pc, pe = per_file(cf, ca), per_file(ef, ea)
meta_share = (cf["open"] + cf["close"] + cf["sync"]) / (cf["open"] + cf["close"] + cf["sync"] + cf["io"])
print(f"cost per extra file: CephFS {pc * 1e3:.2f} ms, ext4 {pe * 1e3:.2f} ms; "
      f"CephFS file-per-tensor: open+sync+close {meta_share:.0%} of a rank's step time")
problems = []
if not pc > 2 * pe: problems.append("a file does not cost CephFS clearly more than ext4")
if not meta_share > 0.6: problems.append("open, sync and close are not most of the file-per-tensor save on CephFS")
if not cf["rate"] < ef["rate"] / 2: problems.append("CephFS's metadata rate is not well below ext4's")
print("; ".join(problems) if problems else "ok")
sys.exit(1 if problems else 0)
PY
rc=$?
cat "$work/meta.txt"
if [ $c1 -eq 0 ] && [ $c2 -eq 0 ] && [ $rc -eq 0 ]; then ok "file-per-tensor is bound by the metadata server on CephFS ($(tail -n 2 "$work/meta.txt" | head -n 1))"
else bad "metadata comparison: exits $c1 $c2: $(tail -n 1 "$work/meta.txt")"; fi

echo "# 4. an unmounted CephFS target is refused before anything is created"
"$ceph" stop --dir "$work/ceph" > /dev/null 2>&1
mkdir -p "$mnt"
before="$(find "$mnt" | wc -l)"
run unmounted '{"model": "tiny", "parallelism": {"tp": 2, "dp": "auto"}, "target_fs": "cephfs"}' 2 --target "$mnt"
if [ $code -eq 2 ] && grep -q "'target_fs' is \"cephfs\", but the target" <<< "$out" && [ "$(find "$mnt" | wc -l)" = "$before" ]; then
  ok "unmounted: exit 2, names target_fs, nothing written under $mnt"
else bad "unmounted: exit $code: $out"; fi

summary "cephfs"
