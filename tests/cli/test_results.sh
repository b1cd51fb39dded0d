#!/usr/bin/env bash
# The sample results in results/ (issue 17 item 7) stay true to the current report format: every
# JSON file under results/ is a finished ckptbench report (status ok) that validates against
# docs/report.schema.json, and results/README.md names each one. A copy with a required field
# removed must fail the same validation (so this test can fail). Needs no binary. Exit 77 = skipped.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SCHEMA="$SRC/docs/report.schema.json"
PY="$(python_with jsonschema)" ||
  { echo "skip: no python3 with the jsonschema module (apt install python3-jsonschema)"; exit 77; }
make_workdir results
# The shipped sample outputs: the files git tracks under results/ (a report the user's own runs
# put there, such as scripts/demo.sh's results/demo-*.json, is not sample output); outside a git
# checkout, every JSON file there.
if git -C "$SRC" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(cd "$SRC" && git ls-files -- 'results/*.json' 'results/**/*.json' | sort -u)
else
  mapfile -t files < <(cd "$SRC" && find results -name '*.json' | sort)
fi
if [ ${#files[@]} -eq 0 ]; then bad "no JSON report under results/"; summary; exit 1; fi

# check FILE...: one line per file, "ok FILE" or "bad FILE: why".
check() {
  "$PY" - "$SCHEMA" "$@" <<'PYEOF'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
v = cls(schema)
for path in sys.argv[2:]:
    try:
        d = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"bad {path}: not JSON: {e}")
        continue
    errs = sorted(v.iter_errors(d), key=lambda e: list(e.absolute_path))
    if errs:
        e = errs[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        print(f"bad {path}: {len(errs)} schema error(s), first at {where}: {e.message[:200]}")
    elif d.get("status") != "ok":
        print(f"bad {path}: status {d.get('status')!r}, error {str(d.get('error'))[:200]!r}")
    else:
        print(f"ok {path}")
PYEOF
}

while read -r verdict path rest; do
  if [ "$verdict" = ok ]; then ok "$path validates against the schema, status ok"; else bad "$path ${rest}"; fi
done < <(cd "$SRC" && check "${files[@]}")

for f in "${files[@]}"; do
  grep -q "$(basename "$f")" "$SRC/results/README.md" && ok "results/README.md names $(basename "$f")" ||
    bad "results/README.md does not name $(basename "$f") (say what it shows or remove it)"
done

# A report with a required field removed must be refused.
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d.pop("environment"); json.dump(d, open(sys.argv[2], "w"))' \
  "$SRC/${files[0]}" "$work/broken.json"
if check "$work/broken.json" | grep -q "^bad .*'environment' is a required property"; then
  ok "a report without 'environment' is refused"
else
  bad "a report without 'environment' passed the validation: $(check "$work/broken.json")"
fi
summary
