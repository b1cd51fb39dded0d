#!/usr/bin/env bash
# Every C++ source and header of the project is formatted by .clang-format (the engineering
# standard). Checked with the formatter Debian 12 ships (clang-format 14); another major version
# formats some constructs differently, so the check is skipped there rather than failing on the
# formatter's opinion.
set -u
SRC="${CKPT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
CF="${CLANG_FORMAT:-clang-format}"
command -v "$CF" >/dev/null || { echo "skip: $CF is not installed"; exit 77; }
ver="$("$CF" --version | grep -o 'version [0-9]*' | head -1 | cut -d' ' -f2)"
[[ "$ver" == 14 ]] || { echo "skip: $CF is version $ver, the project is formatted with 14"; exit 77; }
[[ -f "$SRC/.clang-format" ]] || { echo "FAIL no .clang-format in $SRC"; exit 1; }

cd "$SRC" || exit 1
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.in')
else
  mapfile -t files < <(find include src tests fuzz -name '*.cpp' -o -name '*.hpp' -o -name '*.h')
fi
[[ ${#files[@]} -gt 20 ]] || { echo "FAIL found only ${#files[@]} C++ files under $SRC"; exit 1; }
# One clang-format per file, as many at once as there are cores; each prints the name of a file
# it would change.
# Of the *.in files only the header templates (*.hpp.in) are C++.
mapfile -t bad < <(printf '%s\n' "${files[@]}" | awk '!/\.in$/ || /\.hpp\.in$/' |
  xargs -P "$(nproc 2> /dev/null || echo 2)" -I{} sh -c '"$0" --dry-run --Werror "$1" > /dev/null 2>&1 || echo "$1"' "$CF" {})
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "FAIL not formatted (run: clang-format -i ${bad[*]}):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "ok   ${#files[@]} C++ files formatted by .clang-format ($CF $ver)"
