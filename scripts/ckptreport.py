"""Reading ckptbench reports, shared by scripts/plot.py and scripts/compare.py.

Defensive on purpose: a report may be partial (a failed or interrupted run), or from an older
schema; missing values come back as None rather than raising. Standard library only.
"""

import json
import statistics

PHASES = ("save", "restore")
# Keys of a config that describe the run rather than a point's I/O pattern.
RUN_SPECIFIC_KEYS = ("target", "name", "comment", "repetitions", "verify", "keep", "strict",
                     "timeout_s", "sweep", "exclude")


class ReportError(Exception):
    pass


def load_report(path, require_schema=False):
    """The report at path as a dict; ReportError naming the file when it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise ReportError(f"{path}: cannot read ({e.strerror or e})") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), list):
        raise ReportError(f"{path}: not a ckptbench report (no 'points' list)")
    if require_schema and "schema_version" not in doc:
        raise ReportError(f"{path}: no 'schema_version' (not a ckptbench report?)")
    return doc


def get(obj, *path, default=None):
    """obj[path[0]][path[1]]... through dicts and lists, or default where a step is missing."""
    cur = obj
    for k in path:
        if isinstance(cur, dict) and k in cur:
            cur = cur[k]
        elif isinstance(cur, list) and isinstance(k, int) and -len(cur) <= k < len(cur):
            cur = cur[k]
        else:
            return default
    return cur


def num(v):
    """A finite number as float, else None (booleans are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if v == v and abs(v) != float("inf") else None


def phase_bandwidth(point, phase):
    """(min, median, max) of a phase's bandwidth in GiB/s over the point's repetitions, or None.

    Uses the report's summary when present, else the repetitions themselves (partial reports)."""
    s = get(point, "summary", phase, "bandwidth_GiBps")
    if isinstance(s, dict) and num(s.get("median")) is not None:
        med = num(s["median"])
        lo, hi = num(s.get("min")), num(s.get("max"))
        return (med if lo is None else lo, med, med if hi is None else hi)
    vals = [num(get(r, phase, "bandwidth_GiBps")) for r in get(point, "repetitions", default=[])
            or []]
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return (min(vals), statistics.median(vals), max(vals))
