#!/usr/bin/env python3
"""The house rules of src/ and include/ckptbench/ (docs/design.md, "Layers"), checked:

1. Every source and header is in a layer folder, and includes only its own layer or lower ones
   (LAYERS below, lowest first). An include of a higher layer is an error naming both files.
2. No function longer than --max-lines (120) in src/ or scripts/ (C++, Python and shell
   functions, from universal-ctags' end lines; Debian package universal-ctags).
3. docs/design.md names every source file of src/ (its map).

Exits 1 with one line per breach; 0 with a one-line summary.
  scripts/check_layers.py [--root DIR] [--max-lines N]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

# Lowest first. A layer may include itself and anything before it, never what comes after.
LAYERS = ["base", "mpi", "fs", "plan", "io", "analysis", "run", "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"ckptbench/([^"]+)"', re.M)


def layer_of(rel):
    """The layer of a path below src/ or include/ckptbench/ (its first folder), or None."""
    first = rel.split("/", 1)[0]
    return first if "/" in rel and first in LAYERS else None


def sources(root):
    for top, strip in (("src", "src/"), ("include/ckptbench", "include/ckptbench/")):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".cpp", ".hpp", ".hpp.in")):
                    p = os.path.relpath(os.path.join(d, f), root)
                    yield p, p[len(strip):]


def check_layers(root):
    errors, count = [], 0
    for path, rel in sources(root):
        mine = layer_of(rel)
        if mine is None:
            errors.append(f"{path}: not in a layer folder ({', '.join(LAYERS)})")
            continue
        count += 1
        with open(os.path.join(root, path), encoding="utf-8") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            theirs = layer_of(target)
            line = text.count("\n", 0, m.start()) + 1
            if theirs is None:
                errors.append(f"{path}:{line}: includes ckptbench/{target}, which is in no layer")
            elif LAYERS.index(theirs) > LAYERS.index(mine):
                errors.append(f"{path}:{line}: {mine} includes ckptbench/{target} of the higher "
                              f"layer {theirs} (order, lowest first: {' < '.join(LAYERS)})")
    return errors, count


def ctags_functions(root, dirs):
    """(file, name, start, end) of every function universal-ctags finds with an end line."""
    ctags = shutil.which("ctags")
    if not ctags or "Universal Ctags" not in subprocess.run(
            [ctags, "--version"], capture_output=True, text=True).stdout:
        raise SystemExit("check_layers: universal-ctags is needed (apt-get install universal-ctags)")
    out = subprocess.run(
        [ctags, "-x", "--languages=C++,Python,Sh", "--kinds-C++=f", "--kinds-Python=fm",
         "--kinds-Sh=f", "--fields=+ne", "--_xformat=%F|%n|%{end}|%N", "-R", *dirs],
        cwd=root, capture_output=True, text=True, check=True).stdout
    for row in out.splitlines():
        f, start, end, name = row.split("|", 3)
        if end:
            yield f, name, int(start), int(end)


def check_lengths(root, limit):
    errors, n = [], 0
    for f, name, start, end in ctags_functions(root, ["src", "scripts"]):
        n += 1
        if end - start + 1 > limit:
            errors.append(f"{f}:{start}: {name} is {end - start + 1} lines (at most {limit})")
    return errors, n


def check_map(root):
    with open(os.path.join(root, "docs", "design.md"), encoding="utf-8") as fh:
        design = fh.read()
    errors = []
    for path, rel in sources(root):
        if path.startswith("src/") and path.endswith(".cpp") and rel not in design:
            errors.append(f"{path}: not in docs/design.md's map (name it as {rel})")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--max-lines", type=int, default=120)
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    layer_errors, files = check_layers(root)
    length_errors, functions = check_lengths(root, a.max_lines)
    map_errors = check_map(root)
    errors = layer_errors + length_errors + map_errors
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} breach(es) of the house rules (docs/design.md, \"Layers\")")
        return 1
    print(f"check_layers: {files} files in {len(LAYERS)} layers, no upward include; "
          f"{functions} functions, none over {a.max_lines} lines; every source in docs/design.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
