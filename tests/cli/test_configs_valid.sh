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

# 1b. No shipped config (nor the embedded default) warns about its own settings: `plan` prints no
# note (block_size beyond every contiguous run, so it has no effect) unless the config's comment
# says why that warning is expected (names the warning and block_size). dp "auto" configs are
# planned at the 4 ranks they are meant for.
"$BIN" default-config > "$work/default.json" || bad "ckptbench default-config failed"
while IFS= read -r f; do
  rel="${f#"$SRC"/}"
  [ "$f" = "$work/default.json" ] && rel="the default config (ckptbench default-config)"
  out="$("$BIN" plan -c "$f" 2>&1)"; code=$?
  if [ "$code" -ne 0 ] && grep -q "the job size is unknown" <<< "$out"; then
    out="$("$BIN" plan -c "$f" --world 4 2>&1)"; code=$?
  fi
  if [ "$code" -ne 0 ]; then
    if grep -q "cannot be used: not built (configure with" <<< "$out"; then
      echo "skip plan notes of $rel: $out"
    else bad "plan $rel: exit $code: $out"; fi
    continue
  fi
  notes="$(grep -E 'note:|warning|has no effect' <<< "$out")"
  comment="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("comment", ""))' "$f")"
  if [ -z "$notes" ]; then ok "plan $rel: no warning"
  elif grep -q "warning" <<< "$comment" && grep -q "block_size" <<< "$comment"; then
    ok "plan $rel: $(grep -c . <<< "$notes") note(s), expected by its comment"
  else bad "plan $rel warns, and its comment does not say why: $(sort -u <<< "$notes")"; fi
done < <(find "$SRC/configs" -name '*.json' | sort; echo "$work/default.json")

# 1c. The stripe sweep moves transfers at least as large as each point's stripe: block_size is no
# smaller than stripe_size, and the typical transfer (the median's power-of-two bucket of
# plan.transfers.transfer_size_histogram) is no smaller either.
stripes="$SRC/configs/sweep-stripes.json"
if ! out="$("$BIN" plan -c "$stripes" --world 4 --json 2>&1)"; then
  if grep -q "cannot be used: not built (configure with" <<< "$out"; then echo "skip stripe transfers: $out"
  else bad "plan sweep-stripes.json: $out"; fi
elif echo "$out" > "$work/stripes-plan.json" && res="$(python3 - "$work/stripes-plan.json" 2>&1 <<'PY'
import json, sys
units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
def size(v):
    if isinstance(v, int):
        return v
    v = v.strip().upper().replace("IB", "").replace("B", "")
    return int(v[:-1]) * units[v[-1]] if v[-1] in units else int(v)
bad, n = [], 0
for p in json.load(open(sys.argv[1]))["points"]:
    stripe = size(p["params"]["stripe_size"])
    t = p["transfers"]
    hist = sorted((int(k[2:]), c) for k, c in t["transfer_size_histogram"].items())
    seen, median = 0, None
    for k, c in hist:
        seen += c
        if median is None and 2 * seen >= t["transfers"]:
            median = 1 << k
    n += 1
    if p["block_size"] < stripe or median is None or median < stripe:
        bad.append(f"point {p['index']} {p['params']}: block_size {p['block_size']}, "
                   f"typical transfer {median} bytes, stripe_size {stripe}")
print("\n".join(bad) if bad else f"{n} points")
sys.exit(1 if bad or n == 0 else 0)
PY
)"; then ok "sweep-stripes.json: transfers as large as the stripes ($res)"
else bad "sweep-stripes.json: transfers smaller than the stripes: $res"; fi

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
