#!/usr/bin/python3
"""Compare ckptbench reports point by point.

    scripts/compare.py A.json B.json [C.json ...] [--match auto|config|params] [--json]

A is the baseline. Points are matched on their resolved config minus run-specific keys (the same
I/O pattern), or, with --match params, on the swept parameters; --match auto (default) tries the
config first and falls back to params for points left over. For each matched point and phase
(save, restore) the table shows each report's median bandwidth with its min..max over
repetitions, the ratio B/A of the medians, and a flag when the ranges do not overlap:
  '+'  B is faster beyond the repetitions' spread (B's min above A's max)
  '-'  B is slower beyond the spread (B's max below A's min)
With a single repetition the range is a single value, so every difference is flagged.

Exit status: 0 when the comparison was printed (also when nothing matched), 2 on an unreadable
file, a document that is not a ckptbench report, or reports of different schema_version.
Standard library only.
"""

import argparse
import json
import os
import sys

from ckptreport import PHASES, RUN_SPECIFIC_KEYS, num
from ckptreport import ReportError as Fail
from ckptreport import load_report, phase_bandwidth as bandwidth


def load(path):
    return load_report(path, require_schema=True)


def config_key(point):
    cfg = point.get("config")
    if not isinstance(cfg, dict):
        return None
    return json.dumps({k: v for k, v in cfg.items() if k not in RUN_SPECIFIC_KEYS},
                      sort_keys=True)


def params_key(point):
    p = point.get("params")
    if not isinstance(p, dict):
        return None
    return json.dumps(p, sort_keys=True)


def point_label(point):
    p = point.get("params")
    if isinstance(p, dict) and p:
        return " ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                        for k, v in p.items())
    cfg = point.get("config") or {}
    bits = [str(cfg.get(k)) for k in ("backend", "layout") if cfg.get(k) is not None]
    if num(cfg.get("block_size")):
        bits.append(f"bs={int(cfg['block_size'])}")
    if cfg.get("queue_depth") is not None:
        bits.append(f"qd={cfg['queue_depth']}")
    return " ".join(bits) or f"point {point.get('index', '?')}"


def usable_points(doc):
    return [p for p in doc["points"] if isinstance(p, dict)]


def match(base_pts, other_pts, mode):
    """For each base point, the matching point of the other report (or None), and how."""
    out = [None] * len(base_pts)
    how = [None] * len(base_pts)
    used = set()
    passes = {"config": [config_key], "params": [params_key],
              "auto": [config_key, params_key]}[mode]
    for keyfn in passes:
        index = {}
        for j, q in enumerate(other_pts):
            if j in used:
                continue
            k = keyfn(q)
            if k is not None:
                index.setdefault(k, []).append(j)
        for i, p in enumerate(base_pts):
            if out[i] is not None:
                continue
            k = keyfn(p)
            cands = index.get(k) if k is not None else None
            if keyfn is params_key and k == "{}":
                cands = None  # an unswept run matches only by config
            if cands:
                j = cands.pop(0)
                used.add(j)
                out[i] = other_pts[j]
                how[i] = "config" if keyfn is config_key else "params"
    return out, how, [q for j, q in enumerate(other_pts) if j not in used]


def flag(a, b):
    if a is None or b is None:
        return ""
    if b[0] > a[2]:
        return "+"
    if b[2] < a[0]:
        return "-"
    return ""


def fmt_bw(t):
    if t is None:
        return "-"
    return f"{t[1]:.3f} ({t[0]:.3f}..{t[2]:.3f})"


def ratio(a, b):
    if a is None or b is None or a[1] == 0:
        return None
    return b[1] / a[1]


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Compare ckptbench reports point by point: median save/restore bandwidth "
        "side by side, ratios against the first report, flags beyond the repetitions' spread.")
    ap.add_argument("reports", nargs="+", metavar="REPORT.json",
                    help="two or more reports; the first is the baseline A")
    ap.add_argument("--match", choices=("auto", "config", "params"), default="auto",
                    help="match points on the resolved config minus run-specific keys, on the "
                    "swept params, or config then params (default: auto)")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    a = ap.parse_args(argv)
    if len(a.reports) < 2:
        print("compare.py: error: give at least two reports (A.json B.json ...)", file=sys.stderr)
        return 2
    try:
        docs = [load(p) for p in a.reports]
    except Fail as e:
        print(f"compare.py: error: {e}", file=sys.stderr)
        return 2
    v0 = docs[0].get("schema_version")
    for path, d in zip(a.reports[1:], docs[1:]):
        if d.get("schema_version") != v0:
            print(f"compare.py: error: {path} has schema_version {d.get('schema_version')!r} but "
                  f"{a.reports[0]} has {v0!r}; reports of different schema versions cannot be "
                  "compared (re-run one of them with the same ckptbench version)",
                  file=sys.stderr)
            return 2

    names = [os.path.basename(p) for p in a.reports]
    letters = [chr(ord("A") + i) if i < 26 else f"R{i}" for i in range(len(a.reports))]
    base = usable_points(docs[0])
    matches, hows, leftovers = [], [], []
    for d in docs[1:]:
        m, h, left = match(base, usable_points(d), a.match)
        matches.append(m)
        hows.append(h)
        leftovers.append(left)

    rows = []
    for i, p in enumerate(base):
        if all(m[i] is None for m in matches):
            continue
        row = {"point": point_label(p), "index": p.get("index", i + 1), "phases": {}}
        for phase in PHASES:
            a_bw = bandwidth(p, phase)
            cols = [{"report": letters[0], "bandwidth_GiBps": a_bw}]
            for k, m in enumerate(matches):
                q = m[i]
                b_bw = bandwidth(q, phase) if q is not None else None
                cols.append({"report": letters[k + 1], "bandwidth_GiBps": b_bw,
                             "ratio": ratio(a_bw, b_bw), "flag": flag(a_bw, b_bw),
                             "matched_on": hows[k][i]})
            row["phases"][phase] = cols
        rows.append(row)

    if a.json:
        def tj(t):
            return None if t is None else {"min": t[0], "median": t[1], "max": t[2]}
        out = {"reports": dict(zip(letters, a.reports)), "schema_version": v0, "points": []}
        for r in rows:
            pr = {"point": r["point"], "index": r["index"]}
            for phase, cols in r["phases"].items():
                pr[phase] = [dict(c, bandwidth_GiBps=tj(c["bandwidth_GiBps"])) for c in cols]
            out["points"].append(pr)
        out["unmatched"] = {letters[k + 1]: [point_label(q) for q in left]
                            for k, left in enumerate(leftovers)}
        out["unmatched"][letters[0]] = [point_label(p) for i, p in enumerate(base)
                                        if all(m[i] is None for m in matches)]
        print(json.dumps(out, indent=2))
        return 0

    for L, n in zip(letters, names):
        print(f"{L}: {n}")
    print("bandwidth in GiB/s: median (min..max over repetitions); ratio = X/A of the medians; "
          "'+'/'-' = faster/slower beyond the repetitions' spread")
    if not rows:
        print("no matching points (try --match params)")
    for r in rows:
        how = {c.get("matched_on") for cols in r["phases"].values() for c in cols[1:]} - {None}
        note = "  (matched on params: the configs differ)" if "params" in how else ""
        print(f"\n[{r['index']}] {r['point']}{note}")
        head = f"  {'phase':<8}" + "".join(f"{L + ' GiB/s':>26}" for L in letters) + "".join(
            f"{L + '/A':>10}" for L in letters[1:])
        print(head)
        for phase, cols in r["phases"].items():
            line = f"  {phase:<8}" + "".join(f"{fmt_bw(c['bandwidth_GiBps']):>26}" for c in cols)
            for c in cols[1:]:
                rt = c["ratio"]
                cell = "-" if rt is None else f"{rt:.3f}{c['flag'] or ' '}"
                line += f"{cell:>10}"
            print(line)
    for k, left in enumerate(leftovers):
        if left:
            print(f"\n{letters[k + 1]} points with no match in A: "
                  + "; ".join(point_label(q) for q in left))
    unmatched_a = [point_label(p) for i, p in enumerate(base) if all(m[i] is None for m in matches)]
    if unmatched_a:
        print("\nA points with no match: " + "; ".join(unmatched_a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
