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
  [hdf5.metadata_cache]='{"model": "tiny", "backend": "hdf5", "hdf5": {"metadata_cache": {"zz_undocumented_key": 1}}}'
)
# One section per backend the binary registers (`ckptbench backends --json`): a new backend's
# section is checked without editing this test.
BACKENDS="$("$BIN" backends --json | python3 -c 'import json,sys; print(" ".join(b["name"] for b in json.load(sys.stdin)))')"
[ -n "$BACKENDS" ] || bad "ckptbench backends --json listed no backend"
for b in $BACKENDS; do
  SECTIONS[$b]="{\"model\": \"tiny\", \"backend\": \"$b\", \"$b\": {\"zz_undocumented_key\": 1}}"
done
: > "$work/accepted"
for sec in top parallelism restore model $BACKENDS hdf5.metadata_cache; do
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

  # 5. Each top-level key's "type, default" cell agrees with the key table (`ckptbench keys
  # --json`, cli/keys.cpp): the same kind (size, integer, bool, ...), every allowed value and
  # the default, each in backticks (a string with or without its quotes).
  "$BIN" keys --json > "$work/keys.json" || bad "ckptbench keys --json failed"
  if out="$(python3 - "$work/keys.json" "$DOC" <<'PY'
import json, re, sys
keys = json.load(open(sys.argv[1]))
cells = {}
for line in open(sys.argv[2]):
    # Cells split at the pipes that are not escaped (`a` \| `b` stays in one cell).
    parts = re.split(r"(?<!\\)\|", line.rstrip("\n"))
    m = re.match(r"^ *`([a-z_0-9]+)` *$", parts[1]) if len(parts) > 3 and parts[0] == "" else None
    if m and m.group(1) not in cells:
        cells[m.group(1)] = parts[2].strip()
def ticked(v):
    t = v if isinstance(v, str) else json.dumps(v)
    return [f"`{t}`", f'`"{t}"`']
bad = []
for k in keys:
    cell = cells.get(k["name"])
    if cell is None:
        bad.append(f"{k['name']}: no row in the reference tables")
        continue
    kind = k["type"].split()[0] if k["type"] and k["type"][0] != "`" else None
    if kind and not cell.startswith(kind):
        bad.append(f"{k['name']}: the cell starts {cell[:20]!r}, the table says {kind!r}")
    for a in k["allowed"]:
        if not any(t in cell for t in ticked(a)):
            bad.append(f"{k['name']}: allowed value {a!r} not in the cell")
    if k["default"] is not None and not any(t in cell for t in ticked(k["default"])):
        bad.append(f"{k['name']}: default {k['default']!r} not in the cell {cell[:60]!r}")
print("\n".join(bad))
print(f"{len(keys)} keys checked", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
)"; then ok "docs/config.md's type and default cells agree with the key table"
  else bad "docs/config.md disagrees with \`ckptbench keys --json\`: $out"; fi
fi

summary configs/docs
