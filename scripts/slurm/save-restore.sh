#!/usr/bin/env bash
# ckptbench: save in one Slurm job and restore in a second one, which starts only after the
# first ended successfully (sbatch --dependency=afterok), on the nodes and rank count you give
# it - the honest cold restore of a restarted training job (as IOR's `-w -k`, then `-r`).
#
#   CKPT_TARGET=/lustre/scratch/$USER/ckpt CKPT_CONFIG=configs/quickstart.json \
#     scripts/slurm/save-restore.sh -N 4 --ntasks-per-node=8 -- -N 2 --ntasks-per-node=8
#
# Arguments before `--` are the save job's sbatch options, after it the restore job's (none: the
# save job's). Options of this script, first: --wait (wait for the restore job and exit with its
# exit code), --dry-run (print the two sbatch commands, submit nothing).
#
# Both jobs run scripts/slurm/run.sbatch, with all its CKPT_* settings (see its header); this
# script sets CKPT_PHASES and the two reports:
#   save     CKPT_PHASES=save,    CKPT_OUTPUT=results/ckptbench-save-<stamp>.json
#   restore  CKPT_PHASES=restore, CKPT_FROM=<the save report>, CKPT_OUTPUT=results/ckptbench-restore-<stamp>.json
# The restore job finds the saved run directory in the save report (environment.run_dir), uses
# the save job's config unless CKPT_CONFIG is set, verifies every byte, and never deletes the
# saved files: remove the run directory when done. If the save job fails, Slurm cancels the
# restore job (--kill-on-invalid-dep=yes). To restore on nodes the save did not use, give the
# restore job -x/--exclude or --nodelist after `--`.
set -euo pipefail

die() { echo "save-restore.sh: error: $*" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
wait_flag=()
dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --wait) wait_flag=(--wait); shift ;;
    --dry-run) dry=1; shift ;;
    *) break ;;
  esac
done
save_args=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do save_args+=("$1"); shift; done
[ $# -eq 0 ] || shift
restore_args=("$@")
[ ${#restore_args[@]} -gt 0 ] || restore_args=("${save_args[@]}")

[ -n "${CKPT_TARGET:-}" ] || die "set CKPT_TARGET to a directory on the file system to measure"
[ -z "${CKPT_PHASES:-}" ] || die "CKPT_PHASES is set by this script (save, then restore); unset it"
[ -z "${CKPT_FROM:-}${CKPT_READ_DIR:-}" ] || die "CKPT_FROM / CKPT_READ_DIR: this script restores what its save job wrote; unset them"

stamp="$(date -u +%Y%m%dT%H%M%SZ)-$$"
results="${CKPT_RESULTS:-$PWD/results}"
save_report="$results/ckptbench-save-$stamp.json"
restore_report="$results/ckptbench-restore-$stamp.json"
save_cmd=(sbatch --parsable --job-name=ckptbench-save "${save_args[@]}" "$here/run.sbatch")
# restore_cmd DEPENDENCY: the restore job's sbatch command.
restore_cmd() {
  echo sbatch --parsable "${wait_flag[@]}" --job-name=ckptbench-restore "--dependency=$1" \
    --kill-on-invalid-dep=yes "${restore_args[@]}" "$here/run.sbatch"
}
if [ "$dry" = 1 ]; then
  echo "CKPT_PHASES=save CKPT_OUTPUT=$save_report ${save_cmd[*]}"
  echo "CKPT_PHASES=restore CKPT_FROM=$save_report CKPT_OUTPUT=$restore_report (CKPT_TARGET unset)" \
    "$(restore_cmd "afterok:<save job>")"
  exit 0
fi
command -v sbatch > /dev/null || die "sbatch not found: run this on a Slurm cluster's login node"
mkdir -p "$results"
save_job="$(CKPT_PHASES=save CKPT_OUTPUT="$save_report" "${save_cmd[@]}")"
save_job="${save_job%%;*}"
echo "save job $save_job: report $save_report"
# The restore job is submitted now and held by Slurm until the save job ended with exit 0.
rc=0
[ ${#wait_flag[@]} -eq 0 ] || echo "restore job after it: report $restore_report (waiting)"
restore_job="$(env -u CKPT_TARGET CKPT_PHASES=restore CKPT_FROM="$save_report" \
  CKPT_OUTPUT="$restore_report" sbatch --parsable "${wait_flag[@]}" --job-name=ckptbench-restore \
  "--dependency=afterok:$save_job" --kill-on-invalid-dep=yes "${restore_args[@]}" \
  "$here/run.sbatch")" || rc=$?
restore_job="${restore_job%%;*}"
if [ ${#wait_flag[@]} -eq 0 ]; then
  echo "restore job $restore_job after it (afterok): report $restore_report"
else
  echo "restore job $restore_job ended: exit $rc; report $restore_report"
fi
exit "$rc"
