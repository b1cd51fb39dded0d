#!/usr/bin/env python3
"""Reading ckptbench reports, shared by scripts/plot.py and scripts/compare.py; CSV export.

    scripts/ckptreport.py csv REPORT.json [-o FILE]

writes one CSV row per point and phase (columns: CSV_COLUMNS, defined in docs/metrics.md,
section "CSV"; the same columns as `ckptbench run --csv FILE`).

Defensive on purpose: a report may be partial (a failed or interrupted run), or from an older
schema; missing values (absent or null) come back as None rather than raising. A file that is not
a sound report is refused with one ReportError naming the file and what is wrong (the scripts
print it as one line and exit 2): not a regular file (a FIFO, directory, device or socket is
refused before it is opened: scripts/ckptinput.py, the binary's rules for the files it reads),
larger than MAX_REPORT_BYTES (checked before reading), not UTF-8, not JSON, nested more than
MAX_DEPTH levels, a string that is not valid Unicode (a lone surrogate such as \\ud800), or a
field the scripts use with the wrong type, e.g. "points[3].config is a list, want an object"
(REPORT_FIELDS; paths count list items from 0). -o FILE is checked before the report is read
(not a directory, a writable place) and written through a temporary file renamed into place.
Standard library only (and scripts/ckptinput.py next to this file).
"""

import argparse
import csv
import gc
import importlib.util
import json
import math
import os
import re
import statistics
import subprocess
import sys

# ckptinput.py lives beside this file (scripts/); found also when this module is imported from
# elsewhere with only its own directory on the path.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
from ckptinput import PathError, check_output_file, read_input, write_atomic  # noqa: E402

PHASES = ("save", "restore")


def backend_sections(doc):
    """The config sections named after a backend in a report: the backends the binary that wrote it
    knew (environment.backends, one entry per registered backend, built or not) and, for reports
    without that list, the backends its points name."""
    names = set()
    known = get(doc, "environment", "backends")
    if isinstance(known, dict):
        names.update(k for k in known if isinstance(k, str))
    for p in doc.get("points") or [] if isinstance(doc, dict) else []:
        b = get(p, "config", "backend") if isinstance(p, dict) else None
        if isinstance(b, str):
            names.add(b)
    return frozenset(names)


# Keys of a config that describe the run rather than a point's I/O pattern.
RUN_SPECIFIC_KEYS = ("target", "name", "comment", "repetitions", "verify", "keep", "strict",
                     "timeout_s", "stall_timeout_s", "free_space_check", "sweep", "exclude",
                     "limits", "target_fs")
# The Python whose modules Debian's python3-* packages install.
SYSTEM_PYTHON = "/usr/bin/python3"
# Limits on the files read (reports and --reference outputs). A larger file is refused before it
# is read; a deeper document after parsing (ckptbench writes about 10 levels; Python's json parser
# itself gives up near 1,000 levels with a RecursionError, which is caught). Numbers the scripts
# use must lie in 0..MAX_NUMBER (the report's int64 range; keeps sums and plot axes finite).
# ckptbench itself reads reports up to 1 GiB (kMaxReportBytes); a parsed report takes several
# times its size in Python's memory, so these scripts stop at 256 MiB.
MAX_REPORT_BYTES = 256 * 2**20
MAX_DEPTH = 64
MAX_NUMBER = 2.0 ** 63


class ReportError(Exception):
    """A file that is not a usable report, the message naming it. other_tool: the file may
    still be another tool's JSON output (it is not JSON, or JSON without a report's shape)."""

    def __init__(self, msg, other_tool=False):
        super().__init__(msg)
        self.other_tool = other_tool


def short(s, width=40):
    """s cut to width characters (an ellipsis marks the cut)."""
    return s if len(s) <= width else s[:width - 1] + "…"


# ---------------------------------------------------------------- interpreter and modules

def require_module(script, module, install, switch=True):
    """Returns when this Python can import module. Otherwise re-runs the script under
    SYSTEM_PYTHON when that one can (switch; once, the environment variable CKPT_PYTHON_SWITCHED
    stops a second switch), else prints how to get the module (install: the command) and
    exits 2."""
    if importlib.util.find_spec(module) is not None:
        return
    here = sys.executable or "python3"
    if (switch and os.environ.get("CKPT_PYTHON_SWITCHED") != "1"
            and os.access(SYSTEM_PYTHON, os.X_OK) and sys.argv and sys.argv[0]):
        probe = subprocess.run([SYSTEM_PYTHON, "-c", f"import {module}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if probe.returncode == 0:
            print(f"{script}: {here} cannot import {module}; re-running with {SYSTEM_PYTHON}",
                  file=sys.stderr)
            sys.stdout.flush()
            env = dict(os.environ, CKPT_PYTHON_SWITCHED="1")
            os.execve(SYSTEM_PYTHON, [SYSTEM_PYTHON, sys.argv[0]] + sys.argv[1:], env)
    print(f"{script}: error: needs {module}, which {here} cannot import: {install} and run "
          f"scripts/{script} or {SYSTEM_PYTHON} scripts/{script}; in a virtualenv: "
          f"pip install {module}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- reading reports

def _read_text(path, errors="strict"):
    """The file's text (UTF-8); ReportError naming the file when it is not a regular file (a
    FIFO, a directory, a device, a socket: refused before it is opened, never read), cannot be
    read, is larger than MAX_REPORT_BYTES or (errors="strict") is not UTF-8. ckptinput.py's
    read_input: the binary's rules for a file it reads."""
    try:
        data = read_input(path, MAX_REPORT_BYTES)
    except PathError as e:
        raise ReportError(str(e)) from None
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as e:
        raise ReportError(f"{path}: not valid JSON (not UTF-8: byte 0x{data[e.start]:02x} at "
                          f"offset {e.start})", other_tool=True) from None


# A lone UTF-16 surrogate: json accepts "\ud800", but it cannot be printed or drawn.
_SURROGATE = re.compile("[\ud800-\udfff]")
# How one gets into a parsed document: strict UTF-8 refuses encoded surrogates, so only as the
# escape \uD800..\uDFFF in the JSON text (a pair of them, one character, included).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _jpath(keys):
    """A JSON path such as points[3].config.layout (list items counted from 0), kept short."""
    out = ""
    for k in keys:
        if isinstance(k, int):
            out += f"[{k}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,39}", k):
            out += ("." if out else "") + k
        else:
            out += "[" + json.dumps(short(k, 40)) + "]"
    if len(out) > 160:
        out = out[:90] + "…" + out[-60:]
    return out or "the document"


def _check_tree(doc, path, text=None):
    """ReportError when doc nests more than MAX_DEPTH levels or holds a string (or key) with a
    lone surrogate. Iterative: a deep document cannot exhaust Python's stack here. With text
    (the JSON doc was parsed from) free of surrogate escapes, only the depth is measured, level
    by level over the containers alone; the walk over every value (_check_values) then runs only
    to name the place of an error."""
    if text is not None and not _SURROGATE_ESCAPE.search(text):
        level, depth = [doc], 1
        while level:
            if depth > MAX_DEPTH:
                break  # _check_values names the place
            nxt = []
            for v in level:
                nxt += [x for x in (v.values() if type(v) is dict else v)
                        if type(x) is dict or type(x) is list]
            level, depth = nxt, depth + 1
        else:
            return
    _check_values(doc, path)


def _check_values(doc, path):
    """_check_tree over every value: the first container deeper than MAX_DEPTH or string with a
    lone surrogate, depth first, raises ReportError naming its JSON path."""
    stack = [(doc, 1, None, None)]  # (value, depth, parent entry, key in the parent)

    def where(entry, key=None):
        keys = [] if key is None else [key]
        while entry is not None and entry[2] is not None:
            keys.append(entry[3])
            entry = entry[2]
        return _jpath(reversed(keys))

    while stack:
        entry = stack.pop()
        v, depth = entry[0], entry[1]
        if depth > MAX_DEPTH:
            raise ReportError(f"{path}: nested more than {MAX_DEPTH} levels deep (at "
                              f"{where(entry)})")
        items = v.items() if isinstance(v, dict) else enumerate(v)
        for k, x in items:
            if isinstance(k, str) and _SURROGATE.search(k):
                raise ReportError(f"{path}: {where(entry, k)}: the key is not valid Unicode (a "
                                  "lone surrogate)")
            if isinstance(x, str):
                if _SURROGATE.search(x):
                    raise ReportError(f"{path}: {where(entry, k)} is a string that is not valid "
                                      "Unicode (a lone surrogate)")
            elif isinstance(x, (dict, list)):
                stack.append((x, depth + 1, entry, k))


def _parse(path, text):
    """text as JSON, checked by _check_tree; ReportError naming the file when it is not JSON.
    The cyclic garbage collector is off while the parser builds the document (millions of
    objects, no cycles possible: the collections it would run find nothing)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ReportError(f"{path}: nested too deeply to parse (a report may nest at most "
                          f"{MAX_DEPTH} levels)") from None
    except MemoryError:
        raise ReportError(f"{path}: too large to parse in this machine's memory") from None
    except ValueError as e:
        raise ReportError(f"{path}: not valid JSON ({e})", other_tool=True) from e
    finally:
        if collecting:
            gc.enable()
    if isinstance(doc, (dict, list)):
        _check_tree(doc, path, text)
    return doc


def load_report(path, require_schema=False):
    """The report at path as a dict, checked against REPORT_FIELDS; ReportError naming the file
    (and the JSON path of a bad field) when it is not a sound report."""
    doc = _parse(path, _read_text(path))
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: not a ckptbench report: the document is "
                          f"{_kind(doc)}, want an object", other_tool=True)
    if "points" not in doc:
        raise ReportError(f"{path}: not a ckptbench report (no 'points' list)", other_tool=True)
    if not isinstance(doc["points"], list):
        raise ReportError(f"{path}: not a ckptbench report: points is {_kind(doc['points'])}, "
                          "want a list", other_tool=True)
    if require_schema and "schema_version" not in doc:
        raise ReportError(f"{path}: no 'schema_version' (not a ckptbench report?)")
    check_fields(doc, REPORT_FIELDS, path)
    return doc


# ---------------------------------------------------------------- checking reports

# The fields that plot.py, compare.py and the CSV read, with their types: "number" (finite,
# 0..MAX_NUMBER), "signed" (finite, -MAX_NUMBER..MAX_NUMBER), "string", "boolean", "any"; a dict
# is an object ("*": every other key), [spec] a list of spec, a tuple either of its specs, and
# "<=" in a dict keys whose numbers must not decrease. A field may be absent or null (missing);
# a list item must be there. Fields not listed are not looked at.
_MMM = {"min": "number", "mean": "number", "max": "number"}
_PHASE = {"bytes": "number", "files": "number", "elapsed_s": "number",
          "bandwidth_GiBps": "number", "iops": "number", "metadata_ops_per_s": "number",
          "straggler_ratio": "number", "rank_time_s": _MMM, "rank_times_s": ["number"],
          "steps": {"*": _MMM},
          "latency": {k: "number" for k in ("count", "p50_us", "p90_us", "p99_us", "p999_us",
                                            "max_us")}}
_SUMMARY = {"bandwidth_GiBps": {"min": "number", "median": "number", "max": "number",
                                "<=": ("min", "median", "max")}}
_MODEL = ("string", {"name": "string"})
_POINT = {
    "index": "number", "status": "string", "params": {"*": "any"},
    "config": {"model": _MODEL, "layout": "string", "backend": "string", "direct": "boolean",
               "block_size": "number", "queue_depth": "number", "stripe_count": "signed",
               "stripe_size": "number"},
    "plan": {"payload_bytes": "number", "files": "number", "file_bytes": "number"},
    "repetitions": [{"save": _PHASE, "restore": _PHASE,
                     "lifecycle": {"checkpoints": [{"blocked_s": _MMM, "durable_s": _MMM}]}}],
    "summary": {"save": _SUMMARY, "restore": _SUMMARY},
}
REPORT_FIELDS = {
    "schema_version": "number", "status": "string", "error": "string",
    "tool": {"name": "string", "version": "string", "git": "string"},
    "framework": {"name": "string", "version": "string", "file_mode": "string",
                  "fsync": "boolean"},
    "config": {"name": "string", "model": _MODEL},
    "environment": {"ranks": "number"},
    "points": [_POINT],
}
_SCALARS = ("number", "signed", "string", "boolean", "any")


def _kind(v):
    """What v is, for a message: 'a list', 'a string ("fast")', '-1', 'NaN'."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        try:
            f = float(v)
        except OverflowError:
            return "a number beyond 1e308"
        if math.isnan(f):
            return "NaN"
        return f"{v}" if isinstance(v, int) and abs(v) < 1e15 else f"{f:.6g}"
    if isinstance(v, str):
        return f"a string ({json.dumps(short(v, 20))})"
    return "an object" if isinstance(v, dict) else "a list"


def _want(spec):
    if isinstance(spec, tuple):
        return " or ".join(_want(s) for s in spec)
    if isinstance(spec, dict):
        return "an object"
    if isinstance(spec, list):
        return "a list"
    return {"number": "a number from 0 to 2^63", "signed": "a number from -2^63 to 2^63",
            "string": "a string", "boolean": "true or false"}[spec]


def _fits(v, spec):
    """Whether v has spec's type (for containers: is one; their content is checked apart)."""
    if isinstance(spec, tuple):
        return any(_fits(v, s) for s in spec)
    if isinstance(spec, dict):
        return isinstance(v, dict)
    if isinstance(spec, list):
        return isinstance(v, list)
    if spec == "any":
        return True
    if spec == "string":
        return isinstance(v, str)
    if spec == "boolean":
        return isinstance(v, bool)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        f = float(v)
    except OverflowError:
        return False
    return (0.0 if spec == "number" else -MAX_NUMBER) <= f <= MAX_NUMBER  # False for NaN


def _fits_scalar(v, spec):
    """_fits for a scalar spec, with a short way for the floats that fill a report."""
    if type(v) is float and (spec == "number" or spec == "signed"):
        return (0.0 if spec == "number" else -MAX_NUMBER) <= v <= MAX_NUMBER  # False for NaN
    return spec == "any" or _fits(v, spec)


def check_fields(v, spec, path, where=()):
    """ReportError naming path and the JSON path of the first value in v that does not fit
    spec (see REPORT_FIELDS). Recursion follows spec, which is a few levels deep. A report holds
    millions of values: _check_list and _check_dict check the scalars and objects that fit in
    their own loops, and come back here for the message of one that does not."""
    if not _fits(v, spec):
        raise ReportError(f"{path}: {_jpath(where)} is {_kind(v)}, want {_want(spec)}")
    if isinstance(spec, tuple):
        spec = next(s for s in spec if _fits(v, s))
    if isinstance(spec, list):
        _check_list(v, spec[0], path, where)
    elif isinstance(spec, dict):
        _check_dict(v, spec, path, where)


def _check_list(v, sub, path, where):
    """check_fields of the list v, its items of spec sub."""
    if isinstance(sub, str):  # one of _SCALARS: a null item is missing, allowed
        number = sub == "number"
        for i, x in enumerate(v):
            if x is None or (number and type(x) is float and 0.0 <= x <= MAX_NUMBER):
                continue
            if not _fits_scalar(x, sub):
                check_fields(x, sub, path, where + (i,))
        return
    for i, x in enumerate(v):
        if x is None:
            raise ReportError(f"{path}: {_jpath(where + (i,))} is null, want {_want(sub)}")
        if type(x) is dict and type(sub) is dict:
            _check_dict(x, sub, path, where + (i,))
        else:
            check_fields(x, sub, path, where + (i,))


def _check_dict(v, spec, path, where):
    """check_fields of the object v against the dict spec."""
    star = spec.get("*")
    for k, x in v.items():
        sub = spec.get(k, star)
        if x is None or sub is None or k == "<=":
            continue
        t = type(sub)
        if t is str:
            if not (sub == "number" and type(x) is float and 0.0 <= x <= MAX_NUMBER) \
                    and not _fits_scalar(x, sub):
                check_fields(x, sub, path, where + (k,))
        elif t is dict and type(x) is dict:
            _check_dict(x, sub, path, where + (k,))
        else:
            check_fields(x, sub, path, where + (k,))
    order = [(k, v[k]) for k in spec.get("<=", ()) if v.get(k) is not None]
    for (k1, x1), (k2, x2) in zip(order, order[1:]):
        if x1 > x2:
            raise ReportError(f"{path}: {_jpath(where)}: {k1} {_kind(x1)} is above {k2} "
                              f"{_kind(x2)}, want {' <= '.join(spec['<='])}")


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
    try:
        v = float(v)
    except OverflowError:  # an integer beyond a float's range
        return None
    return v if math.isfinite(v) else None


def phase_reps(point, phase):
    """The point's repetitions that hold the phase, as that phase's dicts, in order."""
    reps = get(point, "repetitions", default=[])
    if not isinstance(reps, list):
        return []
    return [r[phase] for r in reps if isinstance(r, dict) and isinstance(r.get(phase), dict)]


def rep_values(point, phase, *path):
    """The numeric value at path of every repetition of the phase (repetitions lacking it are
    left out): e.g. rep_values(p, "save", "bandwidth_GiBps")."""
    vals = [num(get(r, *path)) for r in phase_reps(point, phase)]
    return [v for v in vals if v is not None]


def phase_bandwidth(point, phase):
    """(min, median, max) of a phase's bandwidth in GiB/s over the point's repetitions, or None.

    Uses the report's summary when present, else the repetitions themselves (partial reports)."""
    s = get(point, "summary", phase, "bandwidth_GiBps")
    if isinstance(s, dict) and num(s.get("median")) is not None:
        med = num(s["median"])
        lo, hi = num(s.get("min")), num(s.get("max"))
        return (med if lo is None else lo, med, med if hi is None else hi)
    vals = rep_values(point, phase, "bandwidth_GiBps")
    if not vals:
        return None
    return (min(vals), statistics.median(vals), max(vals))


def model_name(point, doc=None):
    """The model's name from the point's resolved config (else the report's): config.model is
    a zoo name (string) or an object with 'name'."""
    for cfg in (get(point, "config"), get(doc, "config")):
        m = get(cfg, "model")
        if isinstance(m, str) and m:
            return m
        if isinstance(get(m, "name"), str) and m["name"]:
            return m["name"]
    return None


# ---------------------------------------------------------------- reference tools (fio, IOR)

def _json_in_tool_output(text):
    """The first JSON object in a tool's output: fio and IOR may print notes before it."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    dec = json.JSONDecoder()
    start = text.find("{")
    for _ in range(100):
        if start < 0:
            break
        try:
            return dec.raw_decode(text, start)[0]
        except ValueError:
            start = text.find("{", start + 1)
    return None


def _fio_lines(doc):
    """fio --output-format=json: jobs[] with read/write {bw_bytes (B/s), io_bytes, runtime (ms)}.
    Jobs of one group (groupid) run together: their aggregate is the sum of io_bytes over the
    longest runtime, as fio's "Run status group" line; a lone job gives its bw_bytes."""
    groups = {}
    for job in doc["jobs"]:
        if isinstance(job, dict):
            # json.dumps: any JSON value as a key (a list is not hashable).
            groups.setdefault(json.dumps(job.get("groupid", 0)), []).append(job)
    out = []
    for gid, jobs in groups.items():
        for direction, phase in (("write", "save"), ("read", "restore")):
            sides = [get(j, direction) for j in jobs if isinstance(get(j, direction), dict)]
            if len(sides) == 1:
                bps = num(sides[0].get("bw_bytes"))
                if bps is None and num(sides[0].get("bw")) is not None:
                    bps = num(sides[0]["bw"]) * 1024  # KiB/s
            else:
                total = sum(num(s.get("io_bytes")) or 0 for s in sides)
                longest = max([num(s.get("runtime")) or 0 for s in sides] or [0])
                bps = total / (longest / 1000) if longest > 0 else None
            if not bps or not 0 < bps <= MAX_NUMBER:
                continue
            name = jobs[0].get("jobname")
            suffix = f" ({short(name)})" if len(groups) > 1 and isinstance(name, str) else ""
            out.append({"tool": "fio", "phase": phase, "GiBps": bps / 2**30,
                        "label": f"fio {direction} {bps / 2**30:.2f} GiB/s{suffix}"})
    return out


def _ior_lines(doc):
    """ior -O summaryFormat=JSON: summary[] with operation write/read, bwMeanMIB and bwMaxMIB
    (MiB/s over the test's repetitions; hpc/ior src/ior-output.c). The mean is drawn."""
    entries = [e for e in doc["summary"] if isinstance(e, dict)]
    out = []
    for e in entries:
        op = e.get("operation")
        phase = {"write": "save", "read": "restore"}.get(op) if isinstance(op, str) else None
        mib, what = num(e.get("bwMeanMIB")), "mean"
        if mib is None:
            mib, what = num(e.get("bwMaxMIB")), "max"
        if phase is None or not mib or not 0 < mib <= MAX_NUMBER:
            continue
        tid = e.get("TestID")
        tid = tid if isinstance(tid, str) else json.dumps(tid)
        test = f", test {short(tid, 20)}" if len(entries) > 2 and "TestID" in e else ""
        out.append({"tool": "IOR", "phase": phase, "GiBps": mib / 1024,
                    "label": f"IOR {op} {mib / 1024:.2f} GiB/s ({what}{test})"})
    return out


def load_reference(path):
    """Reference bandwidths from a fio JSON output (fio --output-format=json) or an IOR JSON
    output (ior -O summaryFormat=JSON): a list of {tool, phase ('save' for writes, 'restore'
    for reads), GiBps, label}. ReportError naming the file when it is neither or holds none."""
    text = _read_text(path, errors="replace")
    try:
        doc = _json_in_tool_output(text)
    except RecursionError:
        raise ReportError(f"{path}: nested too deeply to parse (at most {MAX_DEPTH} levels "
                          "are read)") from None
    if isinstance(doc, (dict, list)):
        _check_tree(doc, path, text)
    if isinstance(doc, dict) and isinstance(doc.get("jobs"), list):
        lines = _fio_lines(doc)
    elif isinstance(doc, dict) and isinstance(doc.get("summary"), list):
        lines = _ior_lines(doc)
    else:
        raise ReportError(f"{path}: not a fio JSON output (jobs[]) nor an IOR JSON output "
                          "(summary[])")
    if not lines:
        raise ReportError(f"{path}: no write or read bandwidth in it")
    return lines


# ---------------------------------------------------------------- CSV

CSV_COLUMNS = ("point", "phase", "status", "params", "model", "world", "layout", "backend",
               "direct", "block_size", "queue_depth", "repetitions", "bytes", "files",
               "bw_GiBps_min", "bw_GiBps_median", "bw_GiBps_max", "bw_GiBps_mean",
               "bw_GiBps_stddev", "elapsed_s_median", "iops_median", "meta_ops_per_s_median",
               "lat_p50_us_median", "lat_p99_us_median", "straggler_ratio_median")


def _integer(v):
    """v as an int when it is a whole number, else None."""
    n = num(v)
    return int(n) if n is not None and n == int(n) else None


def _median(vals):
    return statistics.median(vals) if vals else None


def _mean_stddev(vals):
    """Mean and sample standard deviation (n - 1; None below 2 values), summed left to right
    in the textbook two-pass way, so that ckptbench's own --csv (C++) gives the same digits."""
    if not vals:
        return None, None
    total = 0.0
    for v in vals:
        total += v
    mean = total / len(vals)
    if len(vals) < 2:
        return mean, None
    ss = 0.0
    for v in vals:
        ss += (v - mean) * (v - mean)
    return mean, math.sqrt(ss / (len(vals) - 1))


def _param_value(v):
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, int, float)) or v is None:
        return csv_cell(v)
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def csv_cell(v):
    """A value as written in the CSV: empty when missing, true/false, integers as such, floats
    with Python's shortest round-trip form (str)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(v) if math.isfinite(v) else ""
    return str(v)


def csv_rows(doc):
    """One dict per point and phase (keys: CSV_COLUMNS), in report order, save before restore."""
    world = _integer(get(doc, "environment", "ranks"))
    rows = []
    for i, p in enumerate(doc.get("points") or []):
        if not isinstance(p, dict):
            continue
        cfg = p.get("config") if isinstance(p.get("config"), dict) else {}
        params = p.get("params") if isinstance(p.get("params"), dict) else {}
        direct = cfg.get("direct")
        for phase in PHASES:
            reps = phase_reps(p, phase)
            bw = rep_values(p, phase, "bandwidth_GiBps")
            mean, stddev = _mean_stddev(bw)
            first = reps[0] if reps else {}
            rows.append({
                "point": _integer(p.get("index")) or i + 1,
                "phase": phase,
                "status": p.get("status") if isinstance(p.get("status"), str) else None,
                "params": ";".join(f"{k}={_param_value(v)}" for k, v in params.items()),
                "model": model_name(p, doc),
                "world": world,
                "layout": cfg.get("layout") if isinstance(cfg.get("layout"), str) else None,
                "backend": cfg.get("backend") if isinstance(cfg.get("backend"), str) else None,
                "direct": direct if isinstance(direct, bool) else None,
                "block_size": _integer(cfg.get("block_size")),
                "queue_depth": _integer(cfg.get("queue_depth")),
                "repetitions": len(reps),
                "bytes": _integer(first.get("bytes")),
                "files": _integer(first.get("files")),
                "bw_GiBps_min": min(bw) if bw else None,
                "bw_GiBps_median": _median(bw),
                "bw_GiBps_max": max(bw) if bw else None,
                "bw_GiBps_mean": mean,
                "bw_GiBps_stddev": stddev,
                "elapsed_s_median": _median(rep_values(p, phase, "elapsed_s")),
                "iops_median": _median(rep_values(p, phase, "iops")),
                "meta_ops_per_s_median": _median(rep_values(p, phase, "metadata_ops_per_s")),
                "lat_p50_us_median": _median(rep_values(p, phase, "latency", "p50_us")),
                "lat_p99_us_median": _median(rep_values(p, phase, "latency", "p99_us")),
                "straggler_ratio_median": _median(rep_values(p, phase, "straggler_ratio")),
            })
    return rows


def write_csv(doc, out):
    """Writes the report doc as CSV to the text stream out (opened with newline=""): header
    row, then csv_rows(doc); the csv module's defaults (RFC 4180 quoting, lines end in CRLF)."""
    w = csv.writer(out)
    w.writerow(CSV_COLUMNS)
    for row in csv_rows(doc):
        w.writerow([csv_cell(row[c]) for c in CSV_COLUMNS])


# ---------------------------------------------------------------- command line

def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="ckptreport.py",
        description="Tools over ckptbench JSON reports (the reading shared by plot.py and "
        "compare.py).")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser("csv", help="one CSV row per point and phase (columns: docs/metrics.md, "
                       "section CSV)",
                       description="Write one CSV row per point and phase; the columns are "
                       + ",".join(CSV_COLUMNS) + " (docs/metrics.md, section CSV).")
    c.add_argument("report", metavar="REPORT.json")
    c.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    a = ap.parse_args(argv)
    try:
        if a.output:  # before the report is read: a path that cannot be written ends here
            check_output_file(a.output, "-o")
        doc = load_report(a.report, require_schema=True)
        if a.output:  # through a temporary file: a failure leaves nothing half-written
            write_atomic(a.output, lambda f: write_csv(doc, f), "-o", encoding="utf-8",
                         newline="")
    except (ReportError, PathError) as e:
        print(f"ckptreport.py: error: {e}", file=sys.stderr)
        return 2
    if not a.output:
        write_csv(doc, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
