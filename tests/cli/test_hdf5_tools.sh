#!/bin/bash
# The HDF5 backend writes valid HDF5: a 4-rank run (TP2 x DP2, ZeRO 0, one shared file, collective
# transfers) through the real binary, then h5dump/h5ls from Debian hdf5-tools read every file and
# find every tensor of each writing rank with its TP-local shape and dtype.
set -euo pipefail
command -v h5ls >/dev/null && command -v h5dump >/dev/null ||
  { echo "skip: h5ls/h5dump not installed (Debian package hdf5-tools)"; exit 77; }
: "${CKPT_BINARY:?}" "${CKPT_MPIEXEC:?}"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_backend hdf5
tmp=$(mktemp -d /tmp/ckpt-h5tools-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 2 layers x 9 tensors + embedding + final norm + lm_head = 21 tensors; hidden 128, TP 2.
cat >"$tmp/c.json" <<'JSON'
{"model": {"name": "custom", "hidden": 128, "layers": 2, "heads": 4, "ffn": 256, "vocab": 512},
 "parallelism": {"tp": 2, "dp": "auto", "zero_stage": 0},
 "backend": "hdf5", "hdf5": {"transfer": "collective", "metadata_cache": {"max_size": "8M"}},
 "layout": "shared-file", "direct": false, "repetitions": 1, "keep": true, "verify": true,
 "cache": "none", "block_size": "64K"}
JSON
# shellcheck disable=SC2086
$CKPT_MPIEXEC $CKPT_MPIEXEC_FLAGS "$CKPT_BINARY" run -c "$tmp/c.json" -t "$tmp/t" -o "$tmp/r.json" -q \
  || fail "run failed"
# The checkpoint files (not the run marker .ckptbench-run, docs/reliability.md).
mapfile -t files < <(find "$tmp/t" -type f ! -name .ckptbench-run)
[ "${#files[@]}" -ge 1 ] || fail "no files written"
for f in "${files[@]}"; do
  h5dump -H "$f" >"$tmp/dump.txt" || fail "h5dump -H cannot read $f"
  h5ls -r "$f" >"$tmp/ls.txt" || fail "h5ls -r cannot read $f"
done
f=${files[0]}
# ZeRO 0: DP rank 0 (vranks 0, 1) writes every state kind; DP rank 1 (vranks 2, 3) writes nothing.
for g in rank_00000 rank_00001; do
  for k in weights master exp_avg exp_avg_sq; do
    n=$(grep -c "^/$g/$k/.* Dataset" "$tmp/ls.txt" || true)
    [ "$n" = 21 ] || fail "$g/$k has $n datasets, expected 21"
  done
done
if grep -q "^/rank_00002" "$tmp/ls.txt"; then fail "DP rank 1 wrote datasets under ZeRO 0"; fi
# Shapes are TP-local: q_proj [h/TP, h] = {64, 128}; the norm is replicated {128}.
grep -q "^/rank_00001/weights/model.layers.1.self_attn.q_proj.weight Dataset {64, 128}$" "$tmp/ls.txt" \
  || fail "q_proj shape"
grep -q "^/rank_00000/exp_avg/model.norm.weight Dataset {128}$" "$tmp/ls.txt" || fail "norm shape"
# bf16 weights are stored as 16-bit unsigned with attribute dtype = "bf16"; fp32 states as F32LE.
h5dump -H -d /rank_00000/weights/model.layers.0.mlp.up_proj.weight "$f" | grep -q "H5T_STD_U16LE" \
  || fail "bf16 weights not stored as H5T_STD_U16LE"
h5dump -a /rank_00000/weights/model.layers.0.mlp.up_proj.weight/dtype "$f" | grep -q '"bf16"' \
  || fail "dtype attribute of bf16 weights"
h5dump -H -d /rank_00000/master/model.layers.0.mlp.up_proj.weight "$f" | grep -q "H5T_IEEE_F32LE" \
  || fail "fp32 master not stored as H5T_IEEE_F32LE"
# The report records the HDF5 settings in force.
grep -q '"library_version"' "$tmp/r.json" || fail "report lacks the HDF5 library version"
grep -q '"metadata_cache"' "$tmp/r.json" || fail "report lacks the metadata cache settings"
echo "ok: ${#files[@]} HDF5 file(s), 168 datasets checked by h5ls/h5dump"
