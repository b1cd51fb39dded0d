#!/usr/bin/env bash
# Docs that are tested (issue 17, item 1): every fenced block of README.md and docs/*.md is
# extracted with its file and line and run by tests/cli/docs_examples.py: configs through
# `ckptbench validate` (fragments wrapped as {"model": "tiny", ...}), commands as written from a
# scratch copy of the repository root (`ckptbench run` with --dry-run, absolute target/output
# paths moved into the scratch directory, mpiexec with ctest's flags), the report scripts on a
# small real report made here once. JSON that is not a config, usage synopses and sample output
# are recognised by a mark or a ```text label and listed as skipped; commands needing a cluster,
# root or the network are skipped by a printed allowlist. Documents run two at a time (--jobs 2:
# each has its own scratch directory; the log stays in document order). A broken example fails with
# "doc:line: command: exit N: message".
#   tests/cli/docs_examples.py --list      shows every block and how it is treated
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
PY="$(python_with json)" || { echo "skip: no python3"; exit 77; }
MPL="$(python_with matplotlib)" || MPL=""
make_workdir docs

# A small real report (tiny scale, 3 repetitions so compare.py can judge) for the report scripts.
mkdir -p "$work/target"
if ! out="$(timeout 120 "${MPI_BASE[@]}" -n 2 "$BIN" run --config "$SRC/configs/quickstart.json" \
    --set model.scale=1/16384 --quiet --target "$work/target" --output "$work/report.json" 2>&1)" ||
   [ ! -s "$work/report.json" ]; then
  bad "could not make the report the script examples read: $out"
  summary docs; exit 1
fi
ok "made a small real report for the report-script examples"

mkdir "$work/docs"
# The examples' log is printed after their FAIL lines: a CI log that keeps only the start of a
# failed test's output still shows what failed.
if timeout 900 "$PY" "$SRC/tests/cli/docs_examples.py" --source "$SRC" --binary "$BIN" \
    --work "$work/docs" --report "$work/report.json" --mpiexec "${CKPT_MPIEXEC:-mpiexec}" \
    --mpiexec-flags="${CKPT_MPIEXEC_FLAGS:---oversubscribe}" --mpl-python="$MPL" --timeout 90 --jobs 2 \
    > "$work/examples.log" 2>&1; then
  cat "$work/examples.log"
  ok "every example in README.md and docs/*.md runs as written"
else
  grep -A3 '^FAIL ' "$work/examples.log" || tail -20 "$work/examples.log"
  echo "---- the whole log of the examples:"
  cat "$work/examples.log"
  bad "doc examples failed (the lines marked FAIL, first above)"
fi
summary docs
