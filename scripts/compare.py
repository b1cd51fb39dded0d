#!/usr/bin/env python3
"""Compare ckptbench reports point by point.

    scripts/compare.py A.json B.json [C.json ...] [--match auto|config|params] [--json]

A is the baseline. Points are matched on their resolved config minus run-specific keys (the same
I/O pattern), or, with --match params, on the swept parameters; --match auto (default) tries the
config first and falls back to params for points left over, then, for reports of `ckptbench
characterize` (points with `probe`), to the probe's settings (backend, direct, block size, queue
depth, layout, region alignment, striping) and ranks: two characterizations size their probes
differently, so their configs differ. For each matched point and phase
(save, restore) the table shows each report's median bandwidth with its min..max and the number
of repetitions n, the ratio X/A of the medians, and whether X differs from A by a statistical
test: Welch's t-test (two-sided, unequal variances) on the per-repetition bandwidths, threshold
p < 0.05 (ALPHA). '+' after a ratio: faster, '-': slower, at that threshold.

A point is labelled by its swept params (else its backend, layout, bs= and qd=), a setting its
backend names its own way in the backend's words (scripts/plotstyle.py's backend_words: an s3
point "s3 (ckpt@127.0.0.1:7480) part=8M inflight=8"). When a matched point and A's both have
requests by kind (an object store's `requests`), each phase also lists every kind's request
count and p50 latency in ms (medians over the repetitions) per report and the ratio X/A of the
p50 where both have the kind (above 1: X's requests of that kind take longer), and the retries
and throttled answers (summed over ranks and repetitions) where not 0.

The test needs at least MIN_REPS = 3 repetitions on each side: it estimates each side's spread
from its own repetitions, and 2 values give an estimate too unstable to judge (1 gives none).
With fewer the verdict is "not enough repetitions to judge" and nothing is flagged. At p < 0.05
about 1 in 20 comparisons of identical setups is flagged by chance; the text output says how
many to expect when it tested several. Repetitions of one run share the machine's state, so a
difference that matters should hold on a re-run.

Real against replay. Given one report of scripts/realfw.py (tool.name "ckptbench-realfw": the
real PyTorch save/restore) and one ckptbench report (the replay of the same config), in either
order, compare.py shows the two side by side instead:

    scripts/compare.py REAL.json REPLAY.json [--json]      (or REPLAY.json REAL.json)

Points are paired on their plan (the same payload bytes, files and file bytes; a lone point on
each side is paired whatever its plan, with a note). For each phase (save, restore): the real and
the replay time (the phase's elapsed_s, i.e. the slowest rank, median over the repetitions), the
ratio replay/real (above 1: the replay takes longer), and where the replay's time goes: each of
its steps (steps.<name>.mean, the mean over ranks, median over the repetitions), open_s, io_s,
sync_s and close_s summed as storage, then the modelled framework work (cpu_s, source_s) and any
other step the report has; those a report lacks are left out. The real side's steps (io_s, and
sync_s with realfw.py --fsync or DCP) follow. On both sides `rest` is the ranks' mean time less
all their steps: waits at the framework's collectives, and on the real side what realfw.py does
not split (DCP's planning). --match does not apply here.

Exit status: 0 when the comparison was printed (also when nothing matched), 2 on an unreadable
file, a path that is not a regular file (a FIFO, a directory, a device: refused before it is
opened, as ckptbench refuses it; scripts/ckptinput.py), a document that is not a ckptbench
report, reports of different schema_version, or a report that fails scripts/ckptreport.py's
checks (larger than 256 MiB, not UTF-8, nested more than 64 levels, a field used here with the
wrong type or a number out of range): one line on stderr naming the file and what is wrong,
e.g. "compare.py: error: B.json: points[3].config is a list, want an object" (list items counted
from 0).
The comparison goes to stdout (no output file). Standard library only (and scripts/ckptreport.py,
scripts/ckptinput.py and scripts/plotstyle.py next to this script).
"""

import argparse
import json
import math
import os
import statistics
import sys

try:
    from ckptreport import PHASES, RUN_SPECIFIC_KEYS, get, num, phase_reps, rep_values
    from ckptreport import ReportError as Fail
    from ckptreport import load_report, phase_bandwidth as bandwidth
    from plotstyle import backend_words, clean, request_kinds
except ImportError:
    print("compare.py: error: needs ckptreport.py, ckptinput.py and plotstyle.py from the same "
          "directory (scripts/); run scripts/compare.py from the ckptbench source tree",
          file=sys.stderr)
    sys.exit(2)

TEST_NAME = "Welch's t-test"
ALPHA = 0.05
MIN_REPS = 3


def load(path):
    return load_report(path, require_schema=True)


def config_key(point):
    cfg = point.get("config")
    if not isinstance(cfg, dict):
        return None
    return json.dumps({k: v for k, v in cfg.items() if k not in RUN_SPECIFIC_KEYS},
                      sort_keys=True)


# The keys a probe of `ckptbench characterize` sets (its data path, layout, striping): two
# characterizations size their probes differently (model.scale), so their configs never match.
PROBE_KEYS = ("backend", "direct", "block_size", "queue_depth", "layout", "region_align",
              "stripe_count", "stripe_size")


def probe_key(point):
    """A characterize probe's settings and members (points with `probe` only): --match auto
    pairs probes of two characterizations on it when their configs differ."""
    pr, cfg = point.get("probe"), point.get("config")
    if not isinstance(pr, dict) or not isinstance(cfg, dict):
        return None
    return json.dumps({"members": pr.get("members"), "validate": pr.get("stage") == "validate",
                       "small": pr.get("small") is True, "reference": pr.get("reference") is True,
                       "settings": {k: cfg.get(k) for k in PROBE_KEYS}}, sort_keys=True)


def params_key(point):
    p = point.get("params")
    if not isinstance(p, dict):
        return None
    return json.dumps(p, sort_keys=True)


def point_label(point):
    """The swept params ("block_size=8M"), else the backend, layout, bs=, qd= (and a probe's
    stage); a key the point's backend names its own way in its words ("part=8M")."""
    words = backend_words(point)
    p = point.get("params")
    if isinstance(p, dict) and p:
        return " ".join(words.get(k) or f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                        for k, v in p.items())
    cfg = point.get("config") or {}
    bits = [words.get(k) or str(cfg.get(k)) for k in ("backend", "layout")
            if cfg.get(k) is not None]
    # A probe of `ckptbench characterize`: its stage and ranks, and O_DIRECT (probes differ in it).
    probe = point.get("probe") if isinstance(point.get("probe"), dict) else None
    if probe and isinstance(cfg.get("direct"), bool):
        bits.append("O_DIRECT" if cfg["direct"] else "buffered")
    if num(cfg.get("block_size")):
        bits.append(words.get("block_size") or f"bs={int(cfg['block_size'])}")
    if cfg.get("queue_depth") is not None:
        bits.append(words.get("queue_depth") or f"qd={cfg['queue_depth']}")
    if probe:
        for k, short in (("region_align", "region_align"), ("stripe_count", "stripes"),
                         ("stripe_size", "stripe")):
            v = cfg.get(k)
            if (v is not None and cfg.get("layout") == "shared-file" if k == "region_align"
                    else v not in (None, 0)):
                bits.append(f"{short}={v}")
        who = probe.get("members")
        bits = [f"{probe.get('stage', '?')}:"] + bits + (
            [f"({who}, {probe.get('ranks', '?')} ranks)"] if who not in (None, "all") else []) + (
            ["(small probe)"] if probe.get("small") is True else [])
    return " ".join(bits) or f"point {point.get('index', '?')}"


def usable_points(doc):
    return [p for p in doc["points"] if isinstance(p, dict)]


def match(base_pts, other_pts, mode):
    """For each base point, the matching point of the other report (or None), and how."""
    out = [None] * len(base_pts)
    how = [None] * len(base_pts)
    used = set()
    passes = {"config": [config_key], "params": [params_key],
              "auto": [config_key, params_key, probe_key]}[mode]
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
                how[i] = {config_key: "config", params_key: "params", probe_key: "probe"}[keyfn]
    return out, how, [q for j, q in enumerate(other_pts) if j not in used]


# ---------------------------------------------------------------- statistics

def _betacf(a, b, x):
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for aa in (m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """Regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
                     + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def welch(xs, ys):
    """Welch's t-test of the means of xs and ys (unequal variances), two-sided: (t, df, p).
    Both need 2 or more values. Without any spread on either side, p is 0 when the means
    differ and 1 when they are equal."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    vx, vy = statistics.variance(xs) / len(xs), statistics.variance(ys) / len(ys)
    if vx + vy == 0.0:
        return (math.copysign(math.inf, my - mx) if my != mx else 0.0, math.nan,
                0.0 if my != mx else 1.0)
    t = (my - mx) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(xs) - 1) + vy ** 2 / (len(ys) - 1))
    return t, df, betainc(df / 2.0, 0.5, df / (df + t * t))


def judge(xs, ys):
    """The verdict on ys against the baseline xs (per-repetition bandwidths)."""
    v = {"name": TEST_NAME, "alpha": ALPHA, "n": [len(xs), len(ys)], "p": None, "t": None,
         "df": None, "verdict": "not enough repetitions", "flag": ""}
    if len(xs) < MIN_REPS or len(ys) < MIN_REPS:
        return v
    t, df, p = welch(xs, ys)
    v.update(p=p, t=t if math.isfinite(t) else None, df=df if math.isfinite(df) else None)
    if p < ALPHA:
        faster = statistics.fmean(ys) > statistics.fmean(xs)
        v.update(verdict="faster" if faster else "slower", flag="+" if faster else "-")
    else:
        v["verdict"] = "no difference shown"
    return v


def fmt_p(p):
    """p with 3 significant digits, more where rounding would cross the threshold."""
    for digits in (3, 6, 12):
        s = f"{p:.{digits}g}"
        if (float(s) < ALPHA) == (p < ALPHA):
            return s
    return repr(p)


def verdict_text(v):
    na, nb = v["n"]
    if v["p"] is None:
        return f"not enough repetitions to judge (n={na} vs n={nb}; need >= {MIN_REPS} each)"
    if v["flag"]:
        return f"significantly {v['verdict']} (p={fmt_p(v['p'])} < {ALPHA:g}, n={na} vs n={nb})"
    return f"no significant difference (p={fmt_p(v['p'])} >= {ALPHA:g}, n={na} vs n={nb})"


# ---------------------------------------------------------------- output

def fmt_bw(t, n):
    if t is None:
        return "-"
    return f"{t[1]:.3f} ({t[0]:.3f}..{t[2]:.3f}) n={n}"


def ratio(a, b):
    if a is None or b is None or a[1] == 0:
        return None
    return b[1] / a[1]


def no_match_hint(mode):
    """Why nothing matched, suggesting only a --match mode that could match more than mode."""
    if mode == "config":
        return ("no matching points: no point has the same resolved config as a point of A "
                "(--match auto also matches on the swept params)")
    if mode == "params":
        return ("no matching points: no point has the same swept params as a point of A "
                "(--match auto also matches on the resolved config)")
    return ("no matching points: no point has the same resolved config or the same swept "
            "params as a point of A")


# ---------------------------------------------------------------- real against replay

REALFW_TOOL = "ckptbench-realfw"
# The replay's steps in print order: storage (summed), then the modelled framework work.
STORAGE_STEPS = ("open_s", "io_s", "sync_s", "close_s")
FRAMEWORK_STEPS = ("cpu_s", "source_s")
# Plan keys that say two points are the same checkpoint (realfw.py copies ckptbench's plan).
PLAN_KEYS = ("payload_bytes", "files", "file_bytes")


def tool_name(doc):
    t = doc.get("tool")
    return t.get("name") if isinstance(t, dict) else None


def is_realfw(doc):
    return tool_name(doc) == REALFW_TOOL


def plan_key(point):
    plan = point.get("plan")
    if not isinstance(plan, dict) or any(num(plan.get(k)) is None for k in PLAN_KEYS):
        return None
    return tuple(num(plan[k]) for k in PLAN_KEYS)


def plan_text(point):
    k = plan_key(point)
    if k is None:
        return "no plan"
    return f"payload {int(k[0])} B, {int(k[1])} files, {int(k[2])} file bytes"


def median_or_none(vals):
    return statistics.median(vals) if vals else None


def step_names(point, phase):
    """The steps (name ending in _s with a mean over ranks) of any repetition of the phase."""
    names = set()
    for r in phase_reps(point, phase):
        steps = r.get("steps")
        if isinstance(steps, dict):
            names.update(k for k, v in steps.items()
                         if isinstance(v, dict) and num(v.get("mean")) is not None)
    return names


def ordered_steps(names, first):
    return [s for s in first if s in names] + sorted(n for n in names if n not in first)


def step_sum(rep, names):
    """The sum of the steps' means over ranks in one repetition's phase; None if one lacks it."""
    vals = [num(get(rep, "steps", n, "mean")) for n in names]
    return None if any(v is None for v in vals) else sum(vals)


def phase_split(point, phase, first, storage=False):
    """{step: median over repetitions of its mean over ranks}, in the order first, then any
    other step, then rest_s (the ranks' mean time less all their steps, median over
    repetitions); with storage, storage_s first (the sum of the storage steps per repetition,
    median over repetitions) when the report has any of them."""
    names = step_names(point, phase)
    out = {n: median_or_none(rep_values(point, phase, "steps", n, "mean"))
           for n in ordered_steps(names, first)}
    if not names:
        return {}
    rank = median_or_none(rep_values(point, phase, "rank_time_s", "mean"))
    if rank is not None:
        out = dict({"rank_mean_s": rank}, **out)
    # The rank time in no step: waits at the framework's collectives (both sides), and on the
    # real side what the runner does not split (DCP's planning; docs in scripts/realfw.py).
    rest = []
    for r in phase_reps(point, phase):
        rt, steps = num(get(r, "rank_time_s", "mean")), step_sum(r, names)
        if rt is not None and steps is not None:
            rest.append(rt - steps)
    if rest:
        out["rest_s"] = median_or_none(rest)
    if storage and names & set(STORAGE_STEPS):
        sums = [step_sum(r, [n for n in STORAGE_STEPS if n in names])
                for r in phase_reps(point, phase)]
        out = dict({"storage_s": median_or_none([v for v in sums if v is not None])}, **out)
        if "rank_mean_s" in out:  # the rank time first
            out = dict({"rank_mean_s": out.pop("rank_mean_s")}, **out)
    return out


def pair_points(real_pts, replay_pts):
    """[(real point, replay point, how)] and the points left over on each side."""
    pairs, used = [], set()
    left_real = []
    for p in real_pts:
        k = plan_key(p)
        cands = [j for j, q in enumerate(replay_pts) if j not in used and k is not None
                 and plan_key(q) == k]
        same_index = [j for j in cands if replay_pts[j].get("index") == p.get("index")]
        if cands:
            j = (same_index or cands)[0]
            used.add(j)
            pairs.append((p, replay_pts[j], "plan"))
        else:
            left_real.append(p)
    if len(real_pts) == 1 and len(replay_pts) == 1 and left_real:
        p, q = real_pts[0], replay_pts[0]
        pairs.append((p, q, f"the only point on each side; the plans differ (real: "
                            f"{plan_text(p)}; replay: {plan_text(q)})"))
        used.add(0)
        left_real = []
    return pairs, left_real, [q for j, q in enumerate(replay_pts) if j not in used]


def fmt_s(v):
    if v is None:
        return "-"
    return f"{0.0 if abs(v) < 5e-5 else v:.4f}"  # no "-0.0000" from a difference of sums


def short_step(name):
    if name == "rank_mean_s":
        return "rank mean"
    return name[:-2] if name.endswith("_s") else name


def report_desc(doc):
    tool = doc.get("tool") if isinstance(doc.get("tool"), dict) else {}
    bits = [str(tool.get(k)) for k in ("name", "version") if tool.get(k) is not None]
    if tool.get("git"):
        bits.append(f"({tool['git']})")
    fw = doc.get("framework")
    if isinstance(fw, dict) and fw.get("name"):
        extra = f"{fw['name']} {fw.get('version', '')}".strip()
        if fw.get("file_mode"):
            extra += f", file mode {fw['file_mode']}"
        if "fsync" in fw:
            extra += ", fsync per file" if fw["fsync"] else ", no fsync"
        bits.append(f"[{extra}]")
    return " ".join(bits) or "unknown tool"


def real_vs_replay(paths, docs, want_json):
    """The real framework (realfw.py) against the replay (ckptbench), point by point."""
    ri = 0 if is_realfw(docs[0]) else 1
    real, replay = docs[ri], docs[1 - ri]
    real_path, replay_path = paths[ri], paths[1 - ri]
    pairs, left_real, left_replay = pair_points(usable_points(real), usable_points(replay))
    rows = []
    for p, q, how in pairs:
        row = {"point": point_label(q), "real_index": p.get("index"),
               "replay_index": q.get("index"), "matched_on": how, "phases": {}}
        for phase in PHASES:
            rt = median_or_none(rep_values(p, phase, "elapsed_s"))
            qt = median_or_none(rep_values(q, phase, "elapsed_s"))
            row["phases"][phase] = {
                "real_s": rt, "replay_s": qt,
                "ratio": qt / rt if rt and qt is not None else None,
                "n_real": len(rep_values(p, phase, "elapsed_s")),
                "n_replay": len(rep_values(q, phase, "elapsed_s")),
                "replay_steps": phase_split(q, phase, STORAGE_STEPS + FRAMEWORK_STEPS, True),
                "real_steps": phase_split(p, phase, ("io_s", "sync_s")),
            }
        rows.append(row)

    if want_json:
        out = {"mode": "real-vs-replay", "reports": {"real": real_path, "replay": replay_path},
               "schema_version": real.get("schema_version"),
               "time": "elapsed_s of the phase (slowest rank), median over repetitions",
               "steps": "steps.<name>.mean (mean over ranks), median over repetitions; "
                        "storage_s = open_s + io_s + sync_s + close_s; rank_mean_s = "
                        "rank_time_s.mean; rest_s = rank_time_s.mean less every step's mean",
               "points": [dict({k: v for k, v in r.items() if k != "phases"}, **r["phases"])
                          for r in rows],
               "unmatched": {"real": [point_label(p) for p in left_real],
                             "replay": [point_label(q) for q in left_replay]}}
        print(json.dumps(out, indent=2))
        return 0

    print(f"real:   {os.path.basename(real_path)}: {report_desc(real)}")
    print(f"replay: {os.path.basename(replay_path)}: {report_desc(replay)}")
    print("times in s: the phase's elapsed_s (slowest rank), median over n repetitions; "
          "ratio = replay/real (above 1: the replay takes longer)")
    print("split: each step's mean over ranks, median over the repetitions; rank mean = the "
          "ranks' mean phase time; replay storage = open + io + sync + close, cpu/source = "
          "modelled framework work; rest = rank mean less the steps (waits at the framework's "
          "collectives; real DCP: its planning too); '-': not in the report")
    if not rows:
        print("no matching points: no replay point has the plan (payload, files, file bytes) of "
              "a real point")
    for r in rows:
        note = "" if r["matched_on"] == "plan" else f"  (paired as {r['matched_on']})"
        print(f"\n[{r['replay_index']}] {r['point']}{note}")
        print(f"  {'phase':<8}{'real s':>10}{'replay s':>10}{'replay/real':>13}{'n real/replay':>15}")
        for phase, c in r["phases"].items():
            rt = "-" if c["ratio"] is None else f"{c['ratio']:.3f}"
            print(f"  {phase:<8}{fmt_s(c['real_s']):>10}{fmt_s(c['replay_s']):>10}{rt:>13}"
                  f"{str(c['n_real']) + '/' + str(c['n_replay']):>15}")
        for side, key in (("replay", "replay_steps"), ("real", "real_steps")):
            names = []
            for c in r["phases"].values():
                names += [n for n in c[key] if n not in names]
            if not names:
                print(f"  {side} split: no steps in the report")
                continue
            print(f"  {side} split, s:")
            print(f"  {'phase':<8}" + "".join(f"{short_step(n):>10}" for n in names))
            for phase, c in r["phases"].items():
                print(f"  {phase:<8}" + "".join(f"{fmt_s(c[key].get(n)):>10}" for n in names))
    if left_real:
        print("\nreal points with no match: " + "; ".join(point_label(p) for p in left_real))
    if left_replay:
        print("\nreplay points with no match: " + "; ".join(point_label(q) for q in left_replay))
    return 0


# ---------------------------------------------------------------- requests by kind

COUNTERS = ("retries", "throttled")


def whole(v):
    """A count as an integer where it is one (medians and sums of counts come as floats; up to
    2^53, where floats hold every integer); None for none, or for a sum beyond a float's
    range."""
    if v is None or not math.isfinite(v):
        return None
    return int(v) if v == int(v) and abs(v) <= 2 ** 53 else v


def phase_requests(point, phase):
    """{kind: {"count", "p50_ms"}} of the phase's requests by kind (an object store's
    `requests`), each the median over the repetitions that have it (a negative value is left
    out; a kind without either, too); {} when it has none."""
    kinds = set()
    for r in phase_reps(point, phase):
        if isinstance(r.get("requests"), dict):
            kinds.update(k for k, v in r["requests"].items() if isinstance(v, dict))

    def median(kind, field):
        return median_or_none([v for v in rep_values(point, phase, "requests", kind, field)
                               if v >= 0])
    out = {k: {"count": whole(median(k, "count")), "p50_ms": median(k, "p50_ms")}
           for k in request_kinds(kinds)}
    return {k: v for k, v in out.items() if v["count"] is not None or v["p50_ms"] is not None}


def add_requests(cols, points, phase):
    """When A's point (points[0]) and a match (points[1:], None where none) have requests by
    kind in the phase: each such report's column (cols, A's first) gets them, its retries and
    throttled answers (counters summed over ranks and repetitions) and, for a match,
    requests_p50_ratio: X/A of each kind's p50 where both have the kind."""
    reqs = [phase_requests(q, phase) if q is not None else {} for q in points]
    if not reqs[0] or not any(reqs[1:]):
        return
    a = reqs[0]
    for k, (c, q, req) in enumerate(zip(cols, points, reqs)):
        if not req:
            continue
        c["requests"] = req
        c.update({n: whole(sum(rep_values(q, phase, "counters", n, "sum"))) for n in COUNTERS})
        if k:
            c["requests_p50_ratio"] = {
                kind: v["p50_ms"] / a[kind]["p50_ms"] for kind, v in req.items()
                if kind in a and v["p50_ms"] is not None and a[kind]["p50_ms"]
                and math.isfinite(v["p50_ms"] / a[kind]["p50_ms"])}


def fmt_num(v, spec):
    """v formatted by spec (from 1e9 on: 4 significant digits), an integer (a whole count) as it
    is; "-" for None."""
    if v is None:
        return "-"
    if isinstance(v, int):
        return str(v)
    return f"{v:{spec}}" if abs(v) < 1e9 else f"{v:.4g}"


def print_requests(row, letters):
    """A point's requests by kind, when add_requests gave it any: per phase and kind each
    report's count and p50 (ms), the p50 ratios to A; then the retries and throttled answers
    that are not 0."""
    phases = {ph: cols for ph, cols in row["phases"].items() if "requests" in cols[0]}
    if not phases:
        return
    have = [L for L in letters if any("requests" in c for cols in phases.values() for c in cols
                                      if c["report"] == L)]
    print("  requests by kind: count and p50 latency in ms (medians over the repetitions); "
          "X/A = ratio of the p50s (above 1: slower requests)")
    print(f"  {'phase':<8}{'kind':<16}" + "".join(f"{L + ' n':>9}{L + ' p50 ms':>12}" for L in have)
          + "".join(f"{L + '/A p50':>10}" for L in have[1:]))
    for phase, cols in phases.items():
        by = {c["report"]: c for c in cols}
        for kind in request_kinds({kd for c in cols for kd in c.get("requests", {})}):
            line = f"  {phase:<8}{clean(kind, 15):<16}"
            for L in have:
                v = by[L].get("requests", {}).get(kind, {})
                line += f"{fmt_num(v.get('count'), '.1f'):>9}{fmt_num(v.get('p50_ms'), '.3f'):>12}"
            for L in have[1:]:
                line += f"{fmt_num(by[L].get('requests_p50_ratio', {}).get(kind), '.3f'):>10}"
            print(line)
        said = [f"{n}: " + ", ".join(f"{c['report']} {fmt_num(c[n], '.1f')}"
                                     for c in cols if c.get(n))
                for n in COUNTERS if any(c.get(n) for c in cols)]
        if said:
            print(f"  {phase:<8}{'; '.join(said)} (summed over ranks and repetitions)")


def comparison_rows(base, matches, hows, letters):
    """Per matched point of A: each phase's median bandwidth in every report, the ratio to A and
    the test on the repetitions. Returns (rows, the tests that gave a p-value)."""
    rows = []
    for i, p in enumerate(base):
        if all(m[i] is None for m in matches):
            continue
        row = {"point": point_label(p), "index": p.get("index", i + 1), "phases": {}}
        for phase in PHASES:
            a_vals = rep_values(p, phase, "bandwidth_GiBps")
            a_bw = bandwidth(p, phase)
            cols = [{"report": letters[0], "bandwidth_GiBps": a_bw, "n": len(a_vals)}]
            for k, m in enumerate(matches):
                q = m[i]
                b_vals = rep_values(q, phase, "bandwidth_GiBps") if q is not None else []
                b_bw = bandwidth(q, phase) if q is not None else None
                test = judge(a_vals, b_vals) if a_bw is not None and b_bw is not None else None
                cols.append({"report": letters[k + 1], "bandwidth_GiBps": b_bw, "n": len(b_vals),
                             "ratio": ratio(a_bw, b_bw), "flag": test["flag"] if test else "",
                             "test": test, "matched_on": hows[k][i]})
            add_requests(cols, [p] + [m[i] for m in matches], phase)
            row["phases"][phase] = cols
        rows.append(row)
    tests = [c["test"] for r in rows for cols in r["phases"].values() for c in cols[1:]
             if c.get("test") and c["test"]["p"] is not None]

    return rows, tests


def comparison_json(reports, letters, v0, rows, base, matches, leftovers):
    """The comparison as the --json document."""
    def tj(t):
        return None if t is None else {"min": t[0], "median": t[1], "max": t[2]}
    out = {"reports": dict(zip(letters, reports)), "schema_version": v0,
           "test": {"name": TEST_NAME, "sided": "two", "alpha": ALPHA,
                    "min_repetitions": MIN_REPS, "on": "per-repetition bandwidth_GiBps"},
           "points": []}
    if any("requests" in c for r in rows for cols in r["phases"].values() for c in cols):
        out["requests"] = ("where A's point and a match have requests by kind: requests.<kind>."
                           "count and .p50_ms, medians over the repetitions; requests_p50_ratio."
                           "<kind> = X/A of the p50 (kinds both have); retries, throttled: "
                           "counters summed over ranks and repetitions")
    for r in rows:
        pr = {"point": r["point"], "index": r["index"]}
        for phase, cols in r["phases"].items():
            pr[phase] = [dict(c, bandwidth_GiBps=tj(c["bandwidth_GiBps"])) for c in cols]
        out["points"].append(pr)
    out["unmatched"] = {letters[k + 1]: [point_label(q) for q in left]
                        for k, left in enumerate(leftovers)}
    out["unmatched"][letters[0]] = [point_label(p) for i, p in enumerate(base)
                                    if all(m[i] is None for m in matches)]
    return out


def print_comparison(letters, names, how_match, rows, tests, base, matches, leftovers):
    """The comparison as text: one table per matched point, then what matched nothing."""
    for L, n in zip(letters, names):
        print(f"{L}: {n}")
    print("bandwidth in GiB/s: median (min..max) over n repetitions; ratio = X/A of the medians")
    print(f"test: {TEST_NAME} (two-sided) on the per-repetition bandwidths, threshold "
          f"p < {ALPHA:g}; '+'/'-' after a ratio = faster/slower at that threshold; needs >= "
          f"{MIN_REPS} repetitions on each side (fewer give no usable estimate of the spread)")
    if not rows:
        print(no_match_hint(how_match))
    width = max([len(fmt_bw(c["bandwidth_GiBps"], c["n"])) for r in rows
                 for cols in r["phases"].values() for c in cols] + [12]) + 2
    for r in rows:
        how = {c.get("matched_on") for cols in r["phases"].values() for c in cols[1:]} - {None}
        note = "  (matched on params: the configs differ)" if "params" in how else ""
        if "probe" in how:
            note = "  (matched on the probe's settings: the probe sizes differ)"
        print(f"\n[{r['index']}] {r['point']}{note}")
        head = f"  {'phase':<8}" + "".join(f"{L + ' GiB/s':>{width}}" for L in letters) + "".join(
            f"{L + '/A':>10}" for L in letters[1:])
        print(head)
        for phase, cols in r["phases"].items():
            line = f"  {phase:<8}" + "".join(f"{fmt_bw(c['bandwidth_GiBps'], c['n']):>{width}}"
                                             for c in cols)
            for c in cols[1:]:
                rt = c["ratio"]
                cell = "-" if rt is None else f"{rt:.3f}{c['flag'] or ' '}"
                line += f"{cell:>10}"
            verdicts = [(c["report"], verdict_text(c["test"])) for c in cols[1:] if c["test"]]
            if len(cols) == 2 and verdicts:
                line += "  " + verdicts[0][1]
            elif verdicts:
                line += "  " + "; ".join(f"{L}: {t}" for L, t in verdicts)
            print(line)
        print_requests(r, letters)
    if len(tests) > 1:
        hits = sum(1 for t in tests if t["flag"])
        print(f"\n{hits} of {len(tests)} tested differences have p < {ALPHA:g}; if no setup "
              f"differed, about {len(tests) * ALPHA:.1f} would by chance alone")
    for k, left in enumerate(leftovers):
        if left:
            print(f"\n{letters[k + 1]} points with no match in A: "
                  + "; ".join(point_label(q) for q in left))
    unmatched_a = [point_label(p) for i, p in enumerate(base) if all(m[i] is None for m in matches)]
    if unmatched_a:
        print("\nA points with no match: " + "; ".join(unmatched_a))


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Compare ckptbench reports point by point: median save/restore bandwidth "
        f"side by side, ratios against the first report, and {TEST_NAME} (p < {ALPHA:g}) on "
        f"the repetitions (needs >= {MIN_REPS} repetitions per side).")
    ap.add_argument("reports", nargs="+", metavar="REPORT.json",
                    help="two or more reports; the first is the baseline A. One realfw.py "
                    "report and one ckptbench report (either order): real against replay")
    ap.add_argument("--match", choices=("auto", "config", "params"), default=None,
                    help="match points on the resolved config minus run-specific keys, on the "
                    "swept params, or config then params (default: auto; not used for real "
                    "against replay, which pairs points on their plan)")
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
    if len(docs) == 2 and is_realfw(docs[0]) != is_realfw(docs[1]):
        if a.match is not None:
            print(f"compare.py: note: --match {a.match} is not used for real against replay "
                  "(points are paired on their plan)", file=sys.stderr)
        return real_vs_replay(a.reports, docs, a.json)
    if a.match is None:
        a.match = "auto"

    names = [os.path.basename(p) for p in a.reports]
    letters = [chr(ord("A") + i) if i < 26 else f"R{i}" for i in range(len(a.reports))]
    base = usable_points(docs[0])
    matches, hows, leftovers = [], [], []
    for d in docs[1:]:
        m, h, left = match(base, usable_points(d), a.match)
        matches.append(m)
        hows.append(h)
        leftovers.append(left)

    rows, tests = comparison_rows(base, matches, hows, letters)
    if a.json:
        print(json.dumps(comparison_json(a.reports, letters, v0, rows, base, matches, leftovers),
                         indent=2))
        return 0
    print_comparison(letters, names, a.match, rows, tests, base, matches, leftovers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
