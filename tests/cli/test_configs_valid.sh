#!/usr/bin/env bash
# Every config under configs/ passes `ckptbench validate`, and docs/config.md cannot drift from
# the validator: the keys the validator accepts are read from its own "unknown key" error
# (`unknown key 'x' (allowed[ in 'S']: a, b, c)`), for the top level, parallelism, model and each
# backend section; each must be documented in docs/config.md as `key` (top level) or `S.key`;
# and every key documented in a table row there must be one the validator accepts.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
DOC="$SRC/docs/config.md"
make_workdir configs /tmp

# 1. Every shipped config validates and says what it shows (in a build without hdf5 or io_uring,
# a config using them is refused as "not built", exit 2: skipped).
n=0
while IFS= read -r f; do
  n=$((n+1))
  rel="${f#"$SRC"/}"
  if out="$("$BIN" validate "$f" 2>&1)"; then ok "validate $rel"
  elif [ $? -eq 2 ] && grep -q "cannot be used: not built (configure with" <<< "$out"; then
    echo "skip validate $rel: $out"
  else bad "validate $rel: $out"; fi
  if grep -q '"comment"[[:space:]]*:[[:space:]]*"[^"]' "$f"; then :; else bad "$rel has no \"comment\""; fi
done < <(find "$SRC/configs" -name '*.json' | sort)
[ "$n" -ge 10 ] || bad "expected the example configs under configs/, found $n"

# 2. The validator's accepted keys, section by section, from its own error message.
# probe SECTION JSON: runs validate on JSON (which holds one undocumented key) and prints the
# allowed keys one per line; fails the test if the key is not rejected with exit 2.
probe() {
  local sec="$1" json="$2" out code
  echo "$json" > "$work/probe.json"
  out="$("$BIN" validate "$work/probe.json" 2>&1)"; code=$?
  if [ "$code" -ne 2 ] || ! grep -q "unknown key '[^']*zz_undocumented_key'" <<< "$out"; then
    bad "section '$sec': an undocumented key was not rejected (exit $code): $out" >&2
    return 1
  fi
  sed -n "s/.*unknown key '[^']*' (allowed[^:]*: \(.*\))\$/\1/p" <<< "$out" | tr ',' '\n' |
    sed 's/^ *//; s/ *$//' | sed '/^$/d'
}
declare -A SECTIONS=(
  [top]='{"model": "tiny", "zz_undocumented_key": 1}'
  [parallelism]='{"model": "tiny", "parallelism": {"zz_undocumented_key": 1}}'
  [restore]='{"model": "tiny", "restore": {"zz_undocumented_key": 1}}'
  [model]='{"model": {"name": "tiny", "zz_undocumented_key": 1}}'
  [posix]='{"model": "tiny", "backend": "posix", "posix": {"zz_undocumented_key": 1}}'
  [io_uring]='{"model": "tiny", "backend": "io_uring", "io_uring": {"zz_undocumented_key": 1}}'
  [mpiio]='{"model": "tiny", "backend": "mpiio", "mpiio": {"zz_undocumented_key": 1}}'
  [hdf5]='{"model": "tiny", "backend": "hdf5", "hdf5": {"zz_undocumented_key": 1}}'
  [hdf5.metadata_cache]='{"model": "tiny", "backend": "hdf5", "hdf5": {"metadata_cache": {"zz_undocumented_key": 1}}}'
)
: > "$work/accepted"
for sec in top parallelism restore model posix io_uring mpiio hdf5 hdf5.metadata_cache; do
  # A backend this build leaves out has no option table: its section is not checked (nor its
  # keys in docs/config.md, step 4).
  if [ "$sec" != top ] && [ "$sec" != parallelism ] && [ "$sec" != restore ] &&
    [ "$sec" != model ] &&
    skip_unbuilt "${sec%%.*}" "section '$sec'"; then
    unset "SECTIONS[$sec]"
    continue
  fi
  keys="$(probe "$sec" "${SECTIONS[$sec]}")" || continue
  ok "section '$sec' rejects an unknown key and lists $(grep -c . <<< "$keys") allowed key(s)"
  for k in $keys; do
    if [ "$sec" = top ]; then full="$k"; else full="$sec.$k"; fi
    echo "$full" >> "$work/accepted"
  done
done
[ "$(grep -c . "$work/accepted")" -ge 30 ] || bad "too few accepted keys parsed from the validator"

# 3. Each accepted key is documented (as `key` in docs/config.md).
if [ ! -f "$DOC" ]; then
  bad "docs/config.md is missing"
else
  missing=""
  while IFS= read -r k; do
    grep -qF "\`$k\`" "$DOC" || missing="$missing $k"
  done < "$work/accepted"
  if [ -z "$missing" ]; then ok "every key the validator accepts is documented in docs/config.md"
  else bad "keys accepted by the validator but not documented in docs/config.md:$missing"; fi

  # 4. And the reverse: a key documented in the first cell of a reference table row of a checked
  # section must be one the validator accepts (no stale or misspelt keys in the docs).
  stale=""
  while IFS= read -r k; do
    case "$k" in
      *.*) sec="${k%.*}" ;;
      *) sec=top ;;
    esac
    [ -n "${SECTIONS[$sec]+x}" ] || continue  # sections the validator check does not cover
    grep -qxF "$k" "$work/accepted" || stale="$stale $k"
  done < <(sed -n 's/^| *`\([a-z_0-9.]*\)`.*/\1/p' "$DOC" | sort -u)
  if [ -z "$stale" ]; then ok "every key in docs/config.md's tables is accepted by the validator"
  else bad "docs/config.md documents keys the validator rejects:$stale"; fi
fi

summary configs/docs
