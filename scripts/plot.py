#!/usr/bin/python3
"""Draw figures from one or more ckptbench reports.

    scripts/plot.py REPORT.json [REPORT.json ...] --out DIR [--format png,svg]

Figures (each skipped, with a one-line note, when the reports hold no data for it):
  bandwidth_vs_block_size   median save/restore bandwidth vs transfer size, one line per
                            backend (and per any other key that varies), min..max as error bars
  heatmap_qd_block_size     queue depth x block size, median bandwidth in each cell
  layouts                   layouts side by side (bars: median, whiskers: min..max)
  stripes                   Lustre stripe_count/stripe_size settings side by side
  rank_times                per-rank phase time of every repetition (stragglers)
  latency                   transfer latency percentiles (p50 .. max) per point

Several reports are pooled: a point's series label then includes the report's name
(config.name, else the file name). Python 3 and matplotlib only (Debian: python3-matplotlib).
"""

import argparse
import json
import os
import sys
import textwrap

from ckptreport import PHASES, RUN_SPECIFIC_KEYS, ReportError, get, load_report, num, \
    phase_bandwidth

BACKEND_SECTIONS = ("posix", "io_uring", "mpiio", "hdf5")
# Short names for legend labels.
SHORT = {"queue_depth": "QD", "block_size": "bs", "parallelism.tp": "TP", "parallelism.pp": "PP",
         "parallelism.dp": "DP", "parallelism.zero_stage": "ZeRO", "stripe_count": "stripes",
         "stripe_size": "stripe", "chunk_size": "chunk", "ranks_per_file": "ranks/file"}
SIZE_KEYS = ("block_size", "stripe_size", "chunk_size", "align")


# ---------------------------------------------------------------- reading reports

def flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    out[prefix[:-1]] = tuple(obj) if isinstance(obj, list) else obj
    return out


def fmt_bytes(n):
    n = num(n)
    if n is None:
        return "?"
    n = int(n)
    if n == 0:
        return "0"
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= (1 << shift):
            return f"{n / (1 << shift):.3g}{unit}"
    return str(n)


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
        flat = flatten({k: v for k, v in cfg.items()
                        if k not in RUN_SPECIFIC_KEYS and k not in BACKEND_SECTIONS})
        # Backend options only where swept (else they would vary together with 'backend').
        params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
        for k, v in params.items():
            if k.split(".")[0] in BACKEND_SECTIONS:
                flat[k] = get(cfg, *k.split("."), default=v)
        flat["report"] = report.label
        self.keys = flat
        self.summary = {ph: phase_summary(raw, ph) for ph in PHASES}

    def value(self, key):
        return self.keys.get(key)


class Report:
    def __init__(self, path, doc):
        self.path = path
        self.doc = doc
        name = get(doc, "config", "name")
        self.name = name if isinstance(name, str) and name else ""
        self.label = self.name or os.path.splitext(os.path.basename(path))[0]
        c = get(doc, "config", "comment")
        self.comment = c if isinstance(c, str) else ""
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


def fmt_value(key, v):
    if v is None:
        return "-"
    if key.split(".")[-1] in SIZE_KEYS and num(v) is not None:
        return fmt_bytes(v)
    if key == "direct" and isinstance(v, bool):
        return "O_DIRECT" if v else "buffered"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def label_of(point, keys):
    parts = []
    for k in keys:
        v = point.value(k)
        if k in ("report", "backend", "layout", "direct", "model.name"):
            parts.append(fmt_value(k, v))
        else:
            parts.append(f"{SHORT.get(k, k.split('.')[-1])}={fmt_value(k, v)}")
    return ", ".join(parts) if parts else "all points"


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


# ---------------------------------------------------------------- figures

class Plotter:
    def __init__(self, reports, out, formats):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        self.plt = plt
        self.reports = reports
        self.points = [p for r in reports for p in r.points]
        self.out = out
        self.formats = formats
        self.written = []
        names = [r.label for r in reports]
        self.title = " vs ".join(names) if len(names) <= 3 else f"{len(names)} reports"
        self.comment = reports[0].comment if len(reports) == 1 else ""

    def note(self, msg):
        print(f"plot.py: {msg}")

    def finish(self, fig, name, what):
        sup = f"{self.title}: {what}"
        if self.comment:
            lines = textwrap.wrap(self.comment, 110)
            if len(lines) > 3:
                lines = lines[:3]
                lines[2] += " ..."
            sup += "\n" + "\n".join(lines)
        fig.suptitle(sup, fontsize=9 if self.comment else 11)
        fig.tight_layout()
        for fmt in self.formats:
            path = os.path.join(self.out, f"{name}.{fmt}")
            fig.savefig(path, dpi=110)
            self.written.append(path)
        self.plt.close(fig)

    def series_keys(self, exclude):
        return varying_keys(self.points, exclude=exclude)

    def bandwidth_vs_block_size(self):
        name = "bandwidth_vs_block_size"
        sizes = {p.value("block_size") for p in self.points}
        if len(sizes) < 2:
            self.note(f"skipped {name}: the points do not vary block_size")
            return
        keys = self.series_keys(exclude=("block_size",))
        # Backend first: "bandwidth vs block size per backend".
        if "backend" in keys:
            keys.remove("backend")
            keys.insert(0, "backend")
        fig, axes = self.plt.subplots(1, 2, figsize=(12, 4.8), sharey=False)
        for ax, phase in zip(axes, PHASES):
            for grp in group_by(self.points, keys):
                pts = sorted((p for p in grp if p.summary[phase]),
                             key=lambda p: num(p.value("block_size")) or 0)
                if not pts:
                    continue
                x = [num(p.value("block_size")) for p in pts]
                y = [p.summary[phase]["median"] for p in pts]
                lo = [p.summary[phase]["median"] - p.summary[phase]["min"] for p in pts]
                hi = [p.summary[phase]["max"] - p.summary[phase]["median"] for p in pts]
                ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3,
                            label=label_of(pts[0], keys))
            ax.set_xscale("log", base=2)
            xs = sorted(num(s) for s in sizes if num(s) is not None)
            ax.set_xticks(xs)
            ax.set_xticklabels([fmt_bytes(s) for s in xs])
            ax.set_xlabel("block size (bytes per transfer)")
            ax.set_ylabel(f"{phase} bandwidth (GiB/s)")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{phase}: median over repetitions, bars = min..max")
            ax.grid(True, alpha=0.3)
            if keys:
                ax.legend(fontsize=7)
        self.finish(fig, name, "bandwidth vs block size")

    def heatmap(self):
        name = "heatmap_qd_block_size"
        bss = sorted({num(p.value("block_size")) for p in self.points} - {None})
        qds = sorted({num(p.value("queue_depth")) for p in self.points} - {None})
        if len(bss) < 2 or len(qds) < 2:
            self.note(f"skipped {name}: the points do not vary both queue_depth and block_size")
            return
        keys = self.series_keys(exclude=("block_size", "queue_depth"))
        groups = group_by(self.points, keys)
        if len(groups) > 6:
            self.note(f"{name}: {len(groups)} combinations of other keys; drawing the first 6")
            groups = groups[:6]
        fig, axes = self.plt.subplots(len(groups), 2, figsize=(11, 3.8 * len(groups) + 0.6),
                                      squeeze=False)
        # One colour scale per phase across panels, from 0, so panels compare by colour.
        vmax = {ph: max([p.summary[ph]["median"] for g in groups for p in g if p.summary[ph]]
                        or [1.0]) for ph in PHASES}
        for row, grp in enumerate(groups):
            for col, phase in enumerate(PHASES):
                ax = axes[row][col]
                grid = [[float("nan")] * len(bss) for _ in qds]
                for p in grp:
                    s = p.summary[phase]
                    b, q = num(p.value("block_size")), num(p.value("queue_depth"))
                    if s and b in bss and q in qds:
                        grid[qds.index(q)][bss.index(b)] = s["median"]
                im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis", vmin=0,
                               vmax=vmax[phase])
                ax.set_xticks(range(len(bss)))
                ax.set_xticklabels([fmt_bytes(b) for b in bss])
                ax.set_yticks(range(len(qds)))
                ax.set_yticklabels([str(int(q)) for q in qds])
                ax.set_xlabel("block size (bytes per transfer)")
                ax.set_ylabel("queue depth (transfers in flight)")
                top = vmax[phase]
                for i, r in enumerate(grid):
                    for j, v in enumerate(r):
                        if v == v:
                            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                                    color="black" if v > 0.6 * top else "white")
                cb = fig.colorbar(im, ax=ax)
                cb.set_label(f"{phase} median bandwidth (GiB/s)")
                sub = label_of(grp[0], keys) if keys else ""
                ax.set_title(f"{phase}" + (f" — {sub}" if sub else ""), fontsize=9)
        self.finish(fig, name, "queue depth x block size")

    def categories(self, name, cat_key_fn, cat_label, what, exclude):
        cats = {}
        for p in self.points:
            c = cat_key_fn(p)
            cats.setdefault(c, []).append(p)
        if len(cats) < 2:
            return False
        keys = self.series_keys(exclude=exclude)
        groups = group_by(self.points, keys)
        if len(groups) > 8:
            self.note(f"{name}: {len(groups)} series; drawing the first 8")
            groups = groups[:8]
        # Numbers in order; names (layouts) in the order the reports list them.
        cat_list = list(cats)
        if all(num(c) is not None for c in cat_list):
            cat_list.sort(key=num)
        fig, axes = self.plt.subplots(1, 2, figsize=(max(10, 1.6 * len(cat_list) * 2 + 3), 4.8))
        width = 0.8 / max(1, len(groups))
        for ax, phase in zip(axes, PHASES):
            for gi, grp in enumerate(groups):
                xs, ys, lo, hi = [], [], [], []
                for ci, c in enumerate(cat_list):
                    sel = [p for p in grp if cat_key_fn(p) == c and p.summary[phase]]
                    if not sel:
                        continue
                    s = sel[0].summary[phase]
                    xs.append(ci - 0.4 + width * (gi + 0.5))
                    ys.append(s["median"])
                    lo.append(s["median"] - s["min"])
                    hi.append(s["max"] - s["median"])
                if xs:
                    ax.bar(xs, ys, width=width * 0.95, yerr=[lo, hi], capsize=3,
                           label=label_of(grp[0], keys))
            ax.set_xticks(range(len(cat_list)))
            ax.set_xticklabels([cat_label(c) for c in cat_list], rotation=15, ha="right",
                               fontsize=8)
            ax.set_ylabel(f"{phase} bandwidth (GiB/s)")
            ax.set_title(f"{phase}: median, whiskers = min..max", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
            if keys:
                ax.legend(fontsize=7)
        self.finish(fig, name, what)
        return True

    def layouts(self):
        name = "layouts"
        if not self.categories(name, lambda p: p.value("layout"), str, "layouts side by side",
                               exclude=("layout",)):
            self.note(f"skipped {name}: the points do not vary layout")

    def stripes(self):
        name = "stripes"

        def key(p):
            return f"{p.value('stripe_count')}|{p.value('stripe_size')}"

        def label(c):
            cnt, size = c.split("|")
            cnt = "default" if cnt in ("0", "None") else ("all OSTs" if cnt == "-1" else cnt)
            size = "default" if size in ("0", "None") else fmt_bytes(int(size))
            return f"count {cnt}, size {size}"

        if not self.categories(name, key, label, "Lustre stripe settings side by side",
                               exclude=("stripe_count", "stripe_size")):
            self.note(f"skipped {name}: the points do not vary stripe_count/stripe_size")

    def point_labels(self):
        keys = varying_keys(self.points)
        return {id(p): (f"#{p.index} " if not keys else "") + label_of(p, keys)
                for p in self.points}

    def rank_times(self):
        name = "rank_times"
        labels = self.point_labels()
        rows = []
        for p in self.points:
            per_phase = {}
            for phase in PHASES:
                reps = []
                for r in get(p.raw, "repetitions", default=[]) or []:
                    t = get(r, phase, "rank_times_s")
                    if isinstance(t, list):
                        vals = [num(v) for v in t]
                        reps.append([v for v in vals if v is not None])
                if any(reps):
                    per_phase[phase] = reps
            if per_phase:
                rows.append((p, per_phase))
        if not rows:
            self.note(f"skipped {name}: no per-rank times (rank_times_s) in the reports")
            return
        if len(rows) > 24:
            self.note(f"{name}: {len(rows)} points; drawing the first 24")
            rows = rows[:24]
        fig, axes = self.plt.subplots(2, 1, figsize=(max(8, 0.7 * len(rows) + 3), 8.5))
        markers = "os^Dv<>p"
        for ax, phase in zip(axes, PHASES):
            data, ratios = [], []
            for i, (p, pp) in enumerate(rows):
                reps = pp.get(phase, [])
                alltimes = [v for rep in reps for v in rep]
                data.append(alltimes if alltimes else [float("nan")])
                for ri, rep in enumerate(reps):
                    n = len(rep)
                    xs = [i + 1 + (0.25 * (j / max(1, n - 1) - 0.5) if n > 1 else 0)
                          for j in range(n)]
                    ax.scatter(xs, rep, s=12, marker=markers[ri % len(markers)], alpha=0.7,
                               color=f"C{ri % 10}",
                               label=f"repetition {ri + 1}" if i == 0 else None)
                sr = [num(get(r, phase, "straggler_ratio"))
                      for r in get(p.raw, "repetitions", default=[]) or []]
                sr = [v for v in sr if v is not None]
                ratios.append(max(sr) if sr else None)
            ax.boxplot(data, widths=0.5, showfliers=False)
            top = max((v for d in data for v in d if v == v), default=0)
            for i, r in enumerate(ratios):
                if r is not None:
                    ax.text(i + 1, top * 1.04, f"{r:.2f}x", ha="center", fontsize=7)
            ax.set_ylim(0, top * 1.12 if top > 0 else 1)
            ax.set_xticks(range(1, len(rows) + 1))
            ax.set_xticklabels([labels[id(p)] for p, _ in rows], rotation=30, ha="right",
                               fontsize=7)
            ax.set_ylabel(f"{phase} time per rank (s)")
            ax.set_title(f"{phase}: each dot is one rank in one repetition; "
                         "numbers = worst straggler ratio (max/mean rank time)", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7, loc="lower right")
        self.finish(fig, name, "per-rank time distribution (stragglers)")

    def latency(self):
        name = "latency"
        pcts = [("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99"), ("p999_us", "p99.9"),
                ("max_us", "max")]
        labels = self.point_labels()
        have = False
        fig, axes = self.plt.subplots(1, 2, figsize=(12, 5))
        for ax, phase in zip(axes, PHASES):
            drawn = 0
            for p in self.points:
                reps = get(p.raw, "repetitions", default=[]) or []
                # The repetition with the median bandwidth stands for the point (percentiles of
                # different repetitions cannot be averaged).
                cand = [(num(get(r, phase, "bandwidth_GiBps")), r) for r in reps
                        if isinstance(get(r, phase, "latency"), dict)]
                cand = [(b, r) for b, r in cand if b is not None]
                if not cand:
                    continue
                cand.sort(key=lambda t: t[0])
                rep = cand[(len(cand) - 1) // 2][1]
                lat = get(rep, phase, "latency")
                ys = [num(lat.get(k)) for k, _ in pcts]
                if all(v is None or v <= 0 for v in ys) or not num(lat.get("count")):
                    continue
                if drawn >= 20:
                    continue
                xs = [i for i, v in enumerate(ys) if v is not None and v > 0]
                ax.plot(xs, [ys[i] for i in xs], marker="os^D"[drawn // 10 % 4],
                        linestyle=("-", "--", ":", "-.")[drawn // 10 % 4], color=f"C{drawn % 10}",
                        label=labels[id(p)])
                drawn += 1
                have = True
            ax.set_xticks(range(len(pcts)))
            ax.set_xticklabels([n for _, n in pcts])
            ax.set_yscale("log")
            ax.set_xlabel("percentile of transfer latency (all ranks, merged histogram)")
            ax.set_ylabel(f"{phase} latency per transfer (µs)")
            ax.set_title(f"{phase}: median-bandwidth repetition of each point", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            if drawn:
                ax.legend(fontsize=6)
        if len(self.points) > 20:
            self.note(f"{name}: {len(self.points)} points; drew the first 20 per phase")
        if not have:
            self.plt.close(fig)
            self.note(f"skipped {name}: no latency percentiles in the reports")
            return
        self.finish(fig, name, "latency percentiles")

    def all(self):
        for f in (self.bandwidth_vs_block_size, self.heatmap, self.layouts, self.stripes,
                  self.rank_times, self.latency):
            f()


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Draw figures (PNG/SVG) from ckptbench JSON reports.",
        epilog="Figures a report has no data for are skipped with a one-line note.")
    ap.add_argument("reports", nargs="+", metavar="REPORT.json")
    ap.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    ap.add_argument("--format", default="png,svg",
                    help="comma-separated list of png, svg, pdf (default: png,svg)")
    a = ap.parse_args(argv)
    formats = [f.strip().lower() for f in a.format.split(",") if f.strip()]
    bad = [f for f in formats if f not in ("png", "svg", "pdf")]
    if bad or not formats:
        print(f"plot.py: error: --format: unknown format {','.join(bad) or '(empty)'} "
              "(allowed: png, svg, pdf)", file=sys.stderr)
        return 2
    reports = []
    try:
        for path in a.reports:
            reports.append(Report(path, load_report(path)))
    except ReportError as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        return 2
    # Disambiguate equal labels (e.g. the same config run twice).
    seen = {}
    for r in reports:
        seen[r.label] = seen.get(r.label, 0) + 1
    if any(n > 1 for n in seen.values()):
        for r in reports:
            if seen[r.label] > 1:
                r.label = f"{r.label} ({os.path.basename(r.path)})"
                for p in r.points:
                    p.keys["report"] = r.label
    for r in reports:
        if r.skipped:
            print(f"plot.py: {r.path}: {r.skipped} point(s) not plotted (status not ok, or no "
                  "measurements)")
        if get(r.doc, "status") not in (None, "ok"):
            print(f"plot.py: {r.path}: the run's status is {get(r.doc, 'status')!r}: "
                  f"{get(r.doc, 'error', default='')}")
    if not any(r.points for r in reports):
        print("plot.py: error: the reports have no completed points to plot", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("plot.py: error: matplotlib is missing; install Debian's python3-matplotlib and run "
              "this script with /usr/bin/python3", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    pl = Plotter(reports, a.out, formats)
    pl.all()
    for path in pl.written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
