#!/usr/bin/env bash
# Installs the Debian 12 packages ckptbench needs, only those that are missing.
# Usage: scripts/setup.sh [--with-plots] [--with-cluster]
#   (default)       build, tests and scripts/compare.py, scripts/ckptreport.py (standard library);
#                   bindfs for the FUSE cases of tests/cli/test_hostile.sh
#   --with-plots    also python3-matplotlib for scripts/plot.py (it pulls in python3-numpy);
#                   without it the plot test (tests/cli/test_plot_compare.sh) is skipped
#   --with-cluster  also Slurm and MUNGE (scripts/slurm/local-cluster.sh, a one-node Slurm), for
#                   the integration suites (scripts/test.sh --integration); the tests that use
#                   them install what is missing themselves when run as root
set -euo pipefail

with_plots=0
with_cluster=0
for a in "$@"; do
  case "$a" in
    --with-plots) with_plots=1 ;;
    --with-cluster) with_cluster=1 ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "setup: error: unknown argument '$a' (usage: $0 [--with-plots] [--with-cluster])" >&2; exit 2 ;;
  esac
done

# python3-jsonschema: tests/cli/test_schema.sh validates reports against docs/report.schema.json.
# universal-ctags: scripts/check_layers.py (ctest house.layers) reads function lengths with it.
pkgs=(build-essential cmake pkg-config git
      libopenmpi-dev openmpi-bin
      liburing-dev libcurl4-openssl-dev
      libhdf5-openmpi-dev hdf5-tools
      libcli11-dev nlohmann-json3-dev libgtest-dev zlib1g-dev
      fio python3 python3-jsonschema universal-ctags bindfs)
if [ $with_plots -eq 1 ]; then
  pkgs+=(python3-matplotlib)
fi
if [ $with_cluster -eq 1 ]; then
  pkgs+=(slurmctld slurmd slurm-client munge radosgw python3-boto3)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing missing packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "setup: error: need root or sudo to install: ${missing[*]}" >&2
  echo "setup: ask your administrator, or install them and re-run" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
