"""The reports as the figures of scripts/plot.py see them.

Report: a loaded report's label, its backends' option sections and its points that can be
plotted (status ok, a save or restore bandwidth). Point: one sweep point, its config flattened to
the keys figures group by ("parallelism.tp", a swept backend option, "report"), the phases'
bandwidth (min, median, max) and the keys its backend names its own way (plotstyle's
backend_terms and backend_words: an s3 point's part size and requests in flight). Then which
keys vary between points, grouping on them, and a label per point. The reading itself (checks,
lookups, per-repetition values) is scripts/ckptreport.py's.
"""

import json
import os

from ckptreport import PHASES, RUN_SPECIFIC_KEYS, backend_sections, get, num, phase_bandwidth
from plotstyle import backend_terms, backend_words, clean, label_of


def flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    out[prefix[:-1]] = tuple(obj) if isinstance(obj, list) else obj
    return out


def phase_summary(point, phase):
    """{'min','median','max'} of a phase's bandwidth (GiB/s) over repetitions, or None."""
    b = phase_bandwidth(point, phase)
    return None if b is None else dict(zip(("min", "median", "max"), b))


class Point:
    """One sweep point of one report, with the values plots group by."""

    def __init__(self, report, raw, index):
        self.report = report
        self.raw = raw
        self.index = raw.get("index", index)
        cfg = raw.get("config") if isinstance(raw.get("config"), dict) else {}
        sections = report.backend_sections
        flat = flatten({k: v for k, v in cfg.items()
                        if k not in RUN_SPECIFIC_KEYS and k not in sections})
        # Backend options only where swept (else they would vary together with 'backend').
        params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
        for k, v in params.items():
            if k.split(".")[0] in sections:
                flat[k] = get(cfg, *k.split("."), default=v)
        flat["report"] = report.label
        self.keys = flat
        self.summary = {ph: phase_summary(raw, ph) for ph in PHASES}
        # Labels and axis titles only; figures group by keys.
        self.terms = backend_terms(raw)
        self.words = backend_words(raw)

    def value(self, key):
        return self.keys.get(key)


class Report:
    def __init__(self, path, doc):
        self.path = path
        self.doc = doc
        name = get(doc, "config", "name")
        self.name = name if isinstance(name, str) and name else ""
        self.label = clean(self.name or os.path.splitext(os.path.basename(path))[0], 40)
        self.backend_sections = backend_sections(doc)
        self.points = []
        self.skipped = 0
        for i, p in enumerate(doc.get("points") or []):
            if not isinstance(p, dict) or get(p, "status", default="ok") != "ok":
                self.skipped += 1
                continue
            pt = Point(self, p, i + 1)
            if pt.summary["save"] or pt.summary["restore"]:
                self.points.append(pt)
            else:
                self.skipped += 1


def distinct_labels(reports):
    """Equal labels (e.g. the same config run twice) made distinct with the file's name."""
    seen = {}
    for r in reports:
        seen[r.label] = seen.get(r.label, 0) + 1
    if any(n > 1 for n in seen.values()):
        for r in reports:
            if seen[r.label] > 1:
                r.label = f"{r.label} ({clean(os.path.basename(r.path), 30)})"
                for p in r.points:
                    p.keys["report"] = r.label


def varying_keys(points, exclude=()):
    """Keys whose value differs between points, in a stable, readable order."""
    order = ["report", "backend", "layout", "direct", "queue_depth", "block_size", "sync", "cache",
             "parallelism.tp", "parallelism.pp", "parallelism.dp", "parallelism.zero_stage",
             "stripe_count", "stripe_size"]
    allk = set()
    for p in points:
        allk.update(p.keys)
    out = []
    for k in order + sorted(allk - set(order)):
        if k in exclude or k not in allk:
            continue
        vals = {json.dumps(p.value(k), sort_keys=True, default=str) for p in points}
        if len(vals) > 1:
            out.append(k)
    return out


def sort_key(v):
    n = num(v)
    return (0, n, "") if n is not None else (1, 0.0, str(v))


def group_by(points, keys):
    groups = {}
    for p in points:
        g = tuple(json.dumps(p.value(k), sort_keys=True, default=str) for k in keys)
        groups.setdefault(g, []).append(p)
    return sorted(groups.values(), key=lambda ps: [sort_key(ps[0].value(k)) for k in keys])


def point_labels(points):
    """{id(point): label}: the keys that vary between the points, else "#index backend,
    layout"."""
    keys = varying_keys(points)
    return {id(p): f"#{p.index} " + label_of(p, ["backend", "layout"]) if not keys
            else label_of(p, keys) for p in points}
