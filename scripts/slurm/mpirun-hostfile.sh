#!/usr/bin/env bash
# ckptbench across nodes with mpirun and a hostfile (no Slurm, or inside an allocation whose
# srun does not fit your MPI). Open MPI and MPICH/Intel MPI (Hydra) are recognised.
#
#   CKPT_HOSTFILE=my-hosts CKPT_TARGET=/lustre/scratch/$USER/ckpt \
#     CKPT_CONFIG=configs/sweep-stripes.json scripts/slurm/mpirun-hostfile.sh
#
# Environment:
#   CKPT_TARGET      directory on the shared file system to measure                   (required)
#   CKPT_HOSTFILE    hostfile, Open MPI form "host slots=N" (see hostfile.example)    (required)
#   CKPT_PPN         ranks per node                       (the first host's slots, else 1)
#   CKPT_NP          total ranks                                 (sum of slots in the file)
#   CKPT_CONFIG      config file; empty = the embedded default config                    ("")
#   CKPT_BIN         ckptbench binary                               (<repo>/build/ckptbench)
#   CKPT_OUTPUT      report path                   (<repo>/results/ckptbench-<UTC time>.json)
#   CKPT_MPIRUN      the mpirun program                                             (mpirun)
#   CKPT_BIND        bind ranks to: core | socket | none                                (core)
#   CKPT_MPI_ARGS    extra mpirun arguments, word-split (e.g. "--mca btl ^openib")        ("")
#   CKPT_RUN_ARGS    extra `ckptbench run` arguments, word-split (e.g. "--force")         ("")
#   CKPT_DRY         1 = print the command instead of running it                           (0)
# Variables named CKPT_* (e.g. CKPT_LFS) and OMPI_* / UCX_* / FI_* are forwarded to the ranks.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() { echo "mpirun-hostfile.sh: error: $*" >&2; exit 2; }
[ -n "${CKPT_TARGET:-}" ] || die "set CKPT_TARGET to a directory on the shared file system"
[ -n "${CKPT_HOSTFILE:-}" ] || die "set CKPT_HOSTFILE (see scripts/slurm/hostfile.example)"
[ -f "$CKPT_HOSTFILE" ] || die "hostfile '$CKPT_HOSTFILE' not found"
CKPT_BIN="${CKPT_BIN:-$root/build/ckptbench}"
CKPT_CONFIG="${CKPT_CONFIG:-}"
CKPT_OUTPUT="${CKPT_OUTPUT:-$root/results/ckptbench-$(date -u +%Y%m%dT%H%M%SZ).json}"
CKPT_MPIRUN="${CKPT_MPIRUN:-mpirun}"
CKPT_BIND="${CKPT_BIND:-core}"
CKPT_MPI_ARGS="${CKPT_MPI_ARGS:-}"
CKPT_RUN_ARGS="${CKPT_RUN_ARGS:-}"
CKPT_DRY="${CKPT_DRY:-0}"
[ -x "$CKPT_BIN" ] || die "ckptbench binary '$CKPT_BIN' not found (build it, or set CKPT_BIN)"
[ -z "$CKPT_CONFIG" ] || [ -f "$CKPT_CONFIG" ] || die "config '$CKPT_CONFIG' not found"

# Hosts and slots from the Open MPI form ("host slots=N", "host" alone = 1 slot).
hosts_slots="$(awk '!/^[[:space:]]*(#|$)/ {
  n = 1; for (i = 2; i <= NF; i++) if ($i ~ /^slots=/) { sub(/^slots=/, "", $i); n = $i }
  print $1, n }' "$CKPT_HOSTFILE")"
[ -n "$hosts_slots" ] || die "no hosts in '$CKPT_HOSTFILE'"
nhosts="$(wc -l <<<"$hosts_slots")"
CKPT_PPN="${CKPT_PPN:-$(head -n 1 <<<"$hosts_slots" | awk '{print $2}')}"
CKPT_NP="${CKPT_NP:-$(awk '{s += $2} END {print s}' <<<"$hosts_slots")}"

# Environment forwarded to the ranks.
fwd=()
while IFS= read -r name; do fwd+=("$name"); done < <(compgen -e | grep -E '^(CKPT_|OMPI_|UCX_|FI_)' || true)

version="$("$CKPT_MPIRUN" --version 2>&1 | head -n 2 || true)"
cmd=("$CKPT_MPIRUN")
if grep -qi 'open mpi\|open-mpi\|openrte' <<<"$version"; then
  cmd+=(--hostfile "$CKPT_HOSTFILE" -np "$CKPT_NP" --map-by "ppr:$CKPT_PPN:node" --bind-to "$CKPT_BIND")
  [ "$(id -u)" -ne 0 ] || cmd+=(--allow-run-as-root)
  for v in "${fwd[@]}"; do cmd+=(-x "$v"); done
elif grep -qi 'hydra\|mpich\|intel' <<<"$version"; then
  hydra_hosts="$(mktemp)"
  trap 'rm -f "$hydra_hosts"' EXIT
  awk '{print $1 ":" $2}' <<<"$hosts_slots" >"$hydra_hosts"
  cmd+=(-f "$hydra_hosts" -np "$CKPT_NP" -ppn "$CKPT_PPN" -bind-to "$CKPT_BIND")
  if [ "${#fwd[@]}" -gt 0 ]; then cmd+=(-genvlist "$(IFS=,; echo "${fwd[*]}")"); fi
else
  die "'$CKPT_MPIRUN --version' is neither Open MPI nor Hydra (MPICH/Intel MPI): $version"
fi
# shellcheck disable=SC2206  # word splitting of the extra arguments is intended
cmd+=($CKPT_MPI_ARGS)

run_args=(run --target "$CKPT_TARGET" --output "$CKPT_OUTPUT")
[ -z "$CKPT_CONFIG" ] || run_args+=(--config "$CKPT_CONFIG")
# shellcheck disable=SC2206
run_args+=($CKPT_RUN_ARGS)

echo "== $CKPT_NP ranks on $nhosts host(s), $CKPT_PPN per node; target $CKPT_TARGET"
echo "== ${cmd[*]} $CKPT_BIN ${run_args[*]}"
[ "$CKPT_DRY" = 1 ] && exit 0
mkdir -p "$CKPT_TARGET" "$(dirname "$CKPT_OUTPUT")"
[ -z "$CKPT_CONFIG" ] || "$CKPT_BIN" validate "$CKPT_CONFIG"
"${cmd[@]}" "$CKPT_BIN" "${run_args[@]}"
