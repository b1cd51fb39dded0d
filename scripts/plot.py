#!/usr/bin/env python3
"""Draw figures from one or more ckptbench reports.

    scripts/plot.py REPORT.json [REPORT.json ...] --out DIR [--format png,svg]
                    [--reference FIO_OR_IOR.json ...]

Figures (each skipped, with a one-line note, when the reports hold no data for it):
  bandwidth_vs_block_size   median save/restore bandwidth vs transfer size, one line per
                            backend (and per any other key that varies), min..max as error
                            bars; with more than 6 lines per panel, one row of panels per
                            value of the leading keys (small multiples)
  heatmap_qd_block_size     queue depth x block size, median bandwidth in each cell
  layouts                   layouts side by side (bars: median, whiskers: min..max; a heatmap
                            instead of bars when more than 8 series would share the panel)
  stripes                   Lustre stripe_count/stripe_size settings side by side (likewise)
  bandwidth_points          median bandwidth of every point (drawn only when none of the three
                            figures above applies, so that every report gets a bandwidth figure)
  phase_steps               per point and phase, the mean over ranks of open/create, transfer,
                            sync and close time, stacked (metadata-bound layouts: long open
                            and close segments)
  rank_times                per-rank phase time of every repetition (stragglers); a legend
                            entry per repetition up to MAX_LEGEND_REPS, more coloured by
                            repetition number (a colour bar)
  latency                   transfer latency percentiles (p50 .. max) per point: lines up to 15
                            points, a heatmap (point x percentile) from 16 points on
  lifecycle                 per point, what a checkpoint blocks training and when it is durable

A report of `ckptbench characterize` (one with a `characterization` object, docs/metrics.md)
also gets, from its findings (means with their 95 % intervals as error bars):
  characterization_transfer_size  save/restore GiB/s vs block size (log2 axis), the knee
                            (smallest block size within 5 % of the best save) and the best marked
  characterization_queue_depth    the same vs queue depth
  characterization_backends       every backend buffered and with O_DIRECT, side by side
  characterization_ceilings       one rank, one node, all ranks; beside them a shared file with
                            regions on 1 MiB boundaries against packed ones (the misalignment
                            penalty, packed/aligned)
  characterization_validation     the recommended config: predicted against measured save and
                            restore time (measured: median, whiskers min..max), and the
                            predicted times of every candidate layout
The report characterize rewrites while it searches (status "running", no findings yet) gets
the transfer-size, queue-depth and backend figures of the probes so far (no knee or best).

--reference FILE (repeatable) draws the bandwidth of a fio JSON output (fio
--output-format=json: jobs[].write/read.bw_bytes) or an IOR JSON output (ior -O
summaryFormat=JSON: summary[].bwMeanMIB per operation) as a labelled line ("fio write 1.23
GiB/s") on the bandwidth figures: writes on the save panels, reads on the restore panels.

Inputs that are not ckptbench reports (not a regular file - a FIFO, a directory, a device,
refused without being read, as ckptbench refuses them (scripts/ckptinput.py) -, unreadable, not
JSON, another tool's JSON, or a report that fails scripts/ckptreport.py's checks: over 256 MiB,
nested over 64 levels, a field of the wrong type) are skipped with a warning naming the file and
what is wrong; the exit status is 2 only when no input is a report (with a single input: one
line on stderr, "plot.py: error: ..."). A --reference file is read the same way.
--out DIR is checked before any report is read: a path that exists and is not a directory, one
below a file, in a directory this user cannot write or on a kernel pseudo file system (/proc)
exits 2 with one line naming --out and why. Each figure is written to a temporary file renamed
into place: a failure (a full disk) exits 2 naming the file and leaves no half-written figure,
nor the --out directory when it made it and wrote nothing.
Text drawn from the reports (labels, legends, titles) is cut to LABEL_WIDTH characters.
Several reports are pooled: a point's series label then includes the report's name
(config.name, else the file name). Python 3 and matplotlib (Debian: python3-matplotlib, or
scripts/setup.sh --with-plots); when the python3 running it lacks matplotlib and
/usr/bin/python3 has it, the script re-runs itself with /usr/bin/python3.
"""

import argparse
import json
import os
import re
import statistics
import sys

try:
    from ckptinput import PathError, check_output_dir, make_dirs, remove_dirs, write_atomic
    from ckptreport import PHASES, RUN_SPECIFIC_KEYS, ReportError, backend_sections, get, \
        load_reference, load_report, num, phase_bandwidth, rep_values, require_module, short
except ImportError:
    print("plot.py: error: needs ckptreport.py and ckptinput.py from the same directory "
          "(scripts/); run scripts/plot.py from the ckptbench source tree", file=sys.stderr)
    sys.exit(2)

# Lines per panel before bandwidth_vs_block_size splits into rows of panels, rows at most.
MAX_SERIES = 6
MAX_FACETS = 12
# Bars per category before layouts/stripes become a heatmap.
MAX_BAR_SERIES = 8
# Points drawn as latency lines (more: a heatmap), as vertical rank-time boxes (more: horizontal).
MAX_LATENCY_LINES = 15
MAX_VERTICAL_BOXES = 16
# Rows of the tall figures (rank_times, latency heatmap, bandwidth_points).
MAX_ROWS = 80
# rank_times: up to MAX_LEGEND_REPS repetitions, each repetition's dots have a marker and colour
# of their own and a legend entry; more are coloured by repetition number in REP_BANDS bands (a
# colour bar). Above RASTER_DOTS dots they are drawn as an image in SVG and PDF (a vector element
# per dot makes files of tens of MB).
MARKERS = "os^Dv<>p"
MAX_LEGEND_REPS = 12
REP_BANDS = 10
RASTER_DOTS = 20000
# Short names for legend labels.
SHORT = {"queue_depth": "QD", "block_size": "bs", "parallelism.tp": "TP", "parallelism.pp": "PP",
         "parallelism.dp": "DP", "parallelism.zero_stage": "ZeRO", "stripe_count": "stripes",
         "stripe_size": "stripe", "chunk_size": "chunk", "ranks_per_file": "ranks/file"}
SIZE_KEYS = ("block_size", "stripe_size", "chunk_size", "align")
# Characters of a label, legend entry or tick label drawn from a report (longer text is cut, an
# ellipsis marking the cut: a 100,000-character value would overflow matplotlib's rasteriser).
LABEL_WIDTH = 80


# ---------------------------------------------------------------- reading reports

def flatten(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    out[prefix[:-1]] = tuple(obj) if isinstance(obj, list) else obj
    return out


def clean(s, width=LABEL_WIDTH):
    """Text from a report on one line (control characters as spaces), cut to width characters."""
    return short("".join(c if c.isprintable() else " " for c in str(s)), width)


def shown(s, width=LABEL_WIDTH):
    """clean(s) as matplotlib draws it: '$' escaped, else "$...$" would be parsed as mathtext
    (which can fail). Applied once, where the text is handed to matplotlib."""
    return clean(s, width).replace("$", r"\$")


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


def config_bytes(v):
    """A size as a config gives it (a byte count, or "64K", "4M", "1G") in bytes, else None."""
    if num(v) is not None:
        return num(v)
    m = re.fullmatch(r"([0-9]+)([KMG]?)", v) if isinstance(v, str) else None
    return float(int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]) if m else None


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
            parts.append(short(fmt_value(k, v)))
        else:
            parts.append(f"{short(SHORT.get(k, k.split('.')[-1]), 30)}={short(fmt_value(k, v))}")
    return shown(", ".join(parts)) if parts else "all points"


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

def fmt_us(v):
    """A latency in µs for a heatmap cell: 394, 1.2k, 39k."""
    if v >= 9999.5:
        return f"{v / 1000:.0f}k"
    if v >= 999.5:
        return f"{v / 1000:.1f}k"
    return f"{v:.0f}" if v >= 9.95 else f"{v:.1f}"


class Plotter:
    def __init__(self, reports, refs, out, formats):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm, Normalize
        self.plt = plt
        self.norms = {True: LogNorm, False: Normalize}
        self.reports = reports
        self.refs = refs
        self.points = [p for r in reports for p in r.points]
        self.out = out
        self.formats = formats
        self.written = []
        names = [r.label for r in reports]
        self.title = " vs ".join(names) if len(names) <= 3 else f"{len(names)} reports"

    def cap_rows(self, name, items, what):
        """The first MAX_ROWS items, noting how many were left out."""
        if len(items) > MAX_ROWS:
            self.note(f"{name}: {len(items)} {what}; drawing the first {MAX_ROWS}")
            return items[:MAX_ROWS]
        return items

    def note(self, msg):
        print(f"plot.py: {msg}")

    def figure(self, rows, cols, size, **kw):
        """A figure with a rows x cols grid of axes (always 2-D) and constrained layout, which
        keeps titles, colour bars and legends outside the axes inside the figure."""
        return self.plt.subplots(rows, cols, figsize=size, squeeze=False,
                                 constrained_layout=True, **kw)

    def finish(self, fig, name, what):
        fig.suptitle(shown(f"{self.title}: {what}", 300), fontsize=11)
        try:
            for fmt in self.formats:
                # Through a temporary file renamed into place: a full disk leaves no half figure.
                path = os.path.join(self.out, f"{name}.{fmt}")
                write_atomic(path, lambda f: fig.savefig(f, format=fmt, dpi=110), "--out",
                             mode="wb")
                self.written.append(path)
        finally:
            self.plt.close(fig)

    def series_keys(self, exclude):
        return varying_keys(self.points, exclude=exclude)

    def point_labels(self):
        keys = varying_keys(self.points)
        return {id(p): f"#{p.index} " + label_of(p, ["backend", "layout"]) if not keys
                else label_of(p, keys) for p in self.points}

    def phase_refs(self, phase):
        return [r for r in self.refs if r["phase"] == phase]

    def draw_refs(self, ax, phase, axis="y"):
        """The phase's reference bandwidths as labelled lines across ax; axis: the axis that
        holds bandwidth (y: horizontal lines, x: vertical lines)."""
        refs = self.phase_refs(phase)
        for i, r in enumerate(refs):
            style = {"color": "black" if r["tool"] == "fio" else "dimgray", "linewidth": 1.2,
                     "linestyle": ("--", ":", "-.")[i % 3], "zorder": 1}
            if axis == "y":
                ax.axhline(r["GiBps"], **style)
                ax.text(0.99, r["GiBps"], shown(r["label"]), transform=ax.get_yaxis_transform(),
                        ha="right", va="bottom", fontsize=7)
            else:
                ax.axvline(r["GiBps"], **style)
                ax.text(r["GiBps"], 0.99, shown(r["label"]), transform=ax.get_xaxis_transform(),
                        ha="right", va="top", rotation=90, fontsize=7)
        if refs:
            top = max(r["GiBps"] for r in refs) * 1.12
            lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
            (ax.set_ylim if axis == "y" else ax.set_xlim)(lo, max(hi, top))

    def heat(self, fig, ax, grid, xlabels, ylabels, vmin, vmax, bar_label, fmt, log=False,
             origin="upper"):
        """grid (rows of values, NaN = no data) as a heatmap with each cell's value written in
        it and a colour bar labelled bar_label."""
        norm = self.norms[log](vmin=vmin, vmax=vmax)
        im = ax.imshow(grid, origin=origin, aspect="auto", cmap="viridis", norm=norm)
        ax.set_xticks(range(len(xlabels)))
        ax.set_xticklabels(xlabels, fontsize=8)
        ax.set_yticks(range(len(ylabels)))
        ax.set_yticklabels(ylabels, fontsize=7 if len(ylabels) > 20 else 8)
        size = 6 if len(ylabels) > 30 or len(xlabels) > 8 else 8
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if v == v:
                    ax.text(j, i, fmt(v), ha="center", va="center", fontsize=size,
                            color="black" if norm(v) > 0.6 else "white")
        cb = fig.colorbar(im, ax=ax)
        cb.set_label(bar_label)
        return cb

    def heat_refs(self, cb, phase, vmax):
        """Reference bandwidths as red lines on a bandwidth colour bar (0..vmax), named in its
        label; the scale stays the data's, so a reference above it is only named."""
        refs = self.phase_refs(phase)
        names = []
        for r in refs:
            if r["GiBps"] <= vmax:
                cb.ax.axhline(r["GiBps"], color="red", linewidth=2)
                names.append(shown(r["label"]))
            else:
                names.append(f"{shown(r['label'])} (above the scale)")
        if refs:
            cb.set_label(cb.ax.get_ylabel() + "\nred line: " + "; ".join(names), fontsize=8)

    def bandwidth_vs_block_size(self):
        name = "bandwidth_vs_block_size"
        sizes = sorted({num(p.value("block_size")) for p in self.points} - {None})
        if len(sizes) < 2:
            self.note(f"skipped {name}: the points do not vary block_size")
            return False
        keys = self.series_keys(exclude=("block_size",))
        # Backend first: "bandwidth vs block size per backend".
        if "backend" in keys:
            keys.remove("backend")
            keys.insert(0, "backend")
        # Small multiples: the leading keys become rows of panels until a panel has at most
        # MAX_SERIES lines.
        facet_keys = []
        while keys and max(len(group_by(f, keys))
                           for f in group_by(self.points, facet_keys)) > MAX_SERIES:
            facet_keys.append(keys.pop(0))
        facets = group_by(self.points, facet_keys)
        if len(facets) > MAX_FACETS:
            self.note(f"{name}: {len(facets)} rows of panels; drawing the first {MAX_FACETS}")
            facets = facets[:MAX_FACETS]
        fig, axes = self.figure(len(facets), 2, (13, 3.4 * len(facets) + 1.0), sharex=True,
                                sharey="col")
        for row, fpts in enumerate(facets):
            facet = label_of(fpts[0], facet_keys) + ": " if facet_keys else ""
            for col, phase in enumerate(PHASES):
                ax = axes[row][col]
                for grp in group_by(fpts, keys):
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
                ax.minorticks_off()
                ax.set_xticks(sizes)
                ax.set_xticklabels([fmt_bytes(s) for s in sizes])
                if row == len(facets) - 1:
                    ax.set_xlabel("block size (bytes per transfer; K = KiB, M = MiB)")
                ax.set_ylabel(f"{phase} bandwidth (GiB/s)")
                ax.set_ylim(bottom=0)
                ax.set_title(f"{facet}{phase}, median; bars = min..max", fontsize=9)
                ax.grid(True, alpha=0.3)
                self.draw_refs(ax, phase)
            if keys:
                axes[row][1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.finish(fig, name, "bandwidth vs block size")
        return True

    def heatmap(self):
        name = "heatmap_qd_block_size"
        bss = sorted({num(p.value("block_size")) for p in self.points} - {None})
        qds = sorted({num(p.value("queue_depth")) for p in self.points} - {None})
        if len(bss) < 2 or len(qds) < 2:
            self.note(f"skipped {name}: the points do not vary both queue_depth and block_size")
            return False
        keys = self.series_keys(exclude=("block_size", "queue_depth"))
        groups = group_by(self.points, keys)
        if len(groups) > 6:
            self.note(f"{name}: {len(groups)} combinations of other keys; drawing the first 6")
            groups = groups[:6]
        fig, axes = self.figure(len(groups), 2, (12, 3.8 * len(groups) + 0.8))
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
                cb = self.heat(fig, ax, grid, [fmt_bytes(b) for b in bss],
                               [str(int(q)) for q in qds], 0.0, vmax[phase],
                               f"{phase} median bandwidth (GiB/s)", lambda v: f"{v:.2f}",
                               origin="lower")
                self.heat_refs(cb, phase, vmax[phase])
                ax.set_xlabel("block size (bytes per transfer; K = KiB, M = MiB)")
                ax.set_ylabel("queue depth (transfers in flight per rank)")
                sub = label_of(grp[0], keys) if keys else ""
                ax.set_title(f"{phase}" + (f": {sub}" if sub else ""), fontsize=9)
        self.finish(fig, name, "queue depth x block size")
        return True

    def categories(self, name, cat_key_fn, cat_label, axis_label, what, exclude):
        cats = {}
        for p in self.points:
            cats.setdefault(cat_key_fn(p), []).append(p)
        if len(cats) < 2:
            return False
        keys = self.series_keys(exclude=exclude)
        groups = group_by(self.points, keys)
        # Numbers in order; names (layouts) in the order the reports list them.
        cat_list = list(cats)
        if all(num(c) is not None for c in cat_list):
            cat_list.sort(key=num)
        if len(groups) > MAX_BAR_SERIES:
            return self.category_heatmap(name, cat_key_fn, cat_label, axis_label, what, keys,
                                         groups, cat_list)
        fig, axes = self.figure(1, 2, (max(11, 1.6 * len(cat_list) * 2 + 4), 5.2))
        width = 0.8 / max(1, len(groups))
        for ax, phase in zip(axes[0], PHASES):
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
            ax.set_xlabel(axis_label)
            ax.set_ylabel(f"{phase} bandwidth (GiB/s)")
            ax.set_title(f"{phase}: median, whiskers = min..max", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
            self.draw_refs(ax, phase)
        if keys:
            axes[0][1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.finish(fig, name, what)
        return True

    def category_heatmap(self, name, cat_key_fn, cat_label, axis_label, what, keys, groups,
                         cat_list):
        """categories() with too many series for bars: series x category, median in each
        cell."""
        groups = self.cap_rows(name, groups, "series")
        rows = [label_of(g[0], keys) for g in groups]
        fig, axes = self.figure(1, 2, (max(12, 2.2 * len(cat_list) + 6),
                                       0.32 * len(groups) + 2.6), sharey=True)
        vmax = max([p.summary[ph]["median"] for g in groups for p in g for ph in PHASES
                    if p.summary[ph]] or [1.0])
        for ax, phase in zip(axes[0], PHASES):
            grid = [[float("nan")] * len(cat_list) for _ in groups]
            for gi, grp in enumerate(groups):
                for ci, c in enumerate(cat_list):
                    sel = [p for p in grp if cat_key_fn(p) == c and p.summary[phase]]
                    if sel:
                        grid[gi][ci] = sel[0].summary[phase]["median"]
            cb = self.heat(fig, ax, grid, [cat_label(c) for c in cat_list], rows, 0.0, vmax,
                           f"{phase} median bandwidth (GiB/s)", lambda v: f"{v:.2f}")
            self.heat_refs(cb, phase, vmax)
            ax.set_xlabel(axis_label)
            ax.set_title(f"{phase}: median over repetitions", fontsize=9)
        self.finish(fig, name, what)
        return True

    def layouts(self):
        name = "layouts"
        if self.categories(name, lambda p: p.value("layout"), lambda c: shown(c, 40), "layout",
                           "layouts side by side", exclude=("layout",)):
            return True
        self.note(f"skipped {name}: the points do not vary layout")
        return False

    def stripes(self):
        name = "stripes"

        def key(p):
            return f"{p.value('stripe_count')}|{p.value('stripe_size')}"

        def label(c):
            cnt, size = c.split("|")
            cnt = "default" if cnt in ("0", "None") else ("all OSTs" if cnt == "-1" else shown(cnt))
            size = "default" if size in ("0", "None") else fmt_bytes(float(size))
            return f"count {cnt}, size {size}"

        if self.categories(name, key, label, "Lustre stripe count and stripe size (bytes)",
                           "Lustre stripe settings side by side",
                           exclude=("stripe_count", "stripe_size")):
            return True
        self.note(f"skipped {name}: the points do not vary stripe_count/stripe_size")
        return False

    def bandwidth_points(self):
        """Every point's median bandwidth: the bandwidth figure of reports that none of
        bandwidth_vs_block_size, layouts and stripes applies to."""
        name = "bandwidth_points"
        labels = self.point_labels()
        pts = self.points
        pts = self.cap_rows(name, pts, "points")
        fig, axes = self.figure(1, 2, (13, 0.32 * len(pts) + 2.6), sharey=True)
        for ax, phase in zip(axes[0], PHASES):
            ys, meds, lo, hi = [], [], [], []
            for i, p in enumerate(pts):
                s = p.summary[phase]
                if s:
                    ys.append(i)
                    meds.append(s["median"])
                    lo.append(s["median"] - s["min"])
                    hi.append(s["max"] - s["median"])
            ax.barh(ys, meds, xerr=[lo, hi], height=0.6, capsize=3, color="C0")
            ax.set_xlim(left=0)
            ax.set_xlabel(f"{phase} bandwidth (GiB/s)")
            ax.set_title(f"{phase}: median, whiskers = min..max", fontsize=9)
            ax.grid(True, axis="x", alpha=0.3)
            self.draw_refs(ax, phase, axis="x")
        axes[0][0].set_yticks(range(len(pts)))
        axes[0][0].set_yticklabels([labels[id(p)] for p in pts],
                                   fontsize=7 if len(pts) > 20 else 8)
        axes[0][0].set_ylabel("point")
        axes[0][0].invert_yaxis()
        self.finish(fig, name, "bandwidth per point")
        return True

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
            return False
        rows = self.cap_rows(name, rows, "points")
        # Many points: one row per point (horizontal boxes), the phases side by side.
        horizontal = len(rows) > MAX_VERTICAL_BOXES
        if horizontal:
            fig, grid = self.figure(1, 2, (14, 0.34 * len(rows) + 2.8), sharey=True)
            axes = list(grid[0])
        else:
            fig, grid = self.figure(2, 1, (max(8, 0.7 * len(rows) + 3), 9))
            axes = [grid[0][0], grid[1][0]]
        for ax, phase in zip(axes, PHASES):
            data, ratios = [], []
            # Every dot: (time, position, repetition); the legend names the first point's.
            dots, named = ([], [], []), []
            for i, (p, pp) in enumerate(rows):
                reps = pp.get(phase, [])
                alltimes = [v for rep in reps for v in rep]
                data.append(alltimes if alltimes else [float("nan")])
                for ri, rep in enumerate(reps):
                    n = len(rep)
                    dots[0].extend(rep)
                    dots[1].extend(i + 1 + (0.25 * (j / max(1, n - 1) - 0.5) if n > 1 else 0)
                                   for j in range(n))
                    dots[2].extend([ri] * n)
                    if i == 0:
                        named.append(ri)
                sr = [num(get(r, phase, "straggler_ratio"))
                      for r in get(p.raw, "repetitions", default=[]) or []]
                sr = [v for v in sr if v is not None]
                ratios.append(max(sr) if sr else None)
            legend = self.rank_dots(fig, ax, dots, named, horizontal)
            ax.boxplot(data, widths=0.5, showfliers=False, vert=not horizontal)
            top = max((v for d in data for v in d if v == v), default=0)
            top = top if top > 0 else 1.0
            for i, r in enumerate(ratios):
                if r is None:
                    continue
                if horizontal:
                    ax.text(top * 1.03, i + 1, f"{r:.2f}x", va="center", fontsize=7)
                else:
                    ax.text(i + 1, top * 1.04, f"{r:.2f}x", ha="center", fontsize=7)
            ticks = range(1, len(rows) + 1)
            names = [labels[id(p)] for p, _ in rows]
            value_label = f"{phase} time per rank (s)"
            if horizontal:
                ax.set_xlim(0, top * 1.15)
                ax.set_yticks(ticks)
                ax.set_yticklabels(names, fontsize=7)
                ax.set_xlabel(value_label)
                ax.grid(True, axis="x", alpha=0.3)
            else:
                ax.set_ylim(0, top * 1.12)
                ax.set_xticks(ticks)
                ax.set_xticklabels(names, rotation=30, ha="right", fontsize=7)
                ax.set_ylabel(value_label)
                ax.set_xlabel("point")
                ax.grid(True, axis="y", alpha=0.3)
            ax.set_title(f"{phase}: a dot per rank and repetition; number = worst straggler "
                         "ratio (max/mean rank time)", fontsize=9)
            if legend:
                ax.legend(fontsize=7, loc="lower right")
        if horizontal:
            axes[0].set_ylabel("point")
            axes[0].set_ylim(len(rows) + 0.5, 0.5)  # first point on top (shared by both)
        self.finish(fig, name, "per-rank time distribution (stragglers)")
        return True

    def rank_dots(self, fig, ax, dots, named, horizontal):
        """rank_times' dots, dots = (times, positions, repetitions from 0): up to MAX_LEGEND_REPS
        repetitions a scatter each (marker and colour of its own, named in the legend when the
        first point has it: returns True), more coloured by repetition (REP_BANDS bands of
        repetitions, a colour bar). A scatter per point and repetition took minutes for
        thousands of repetitions: matplotlib re-scans every collection of the axes at each one
        added. Above RASTER_DOTS dots they are an image in SVG and PDF (not an element per dot)."""
        vals, pos, rep_of = dots
        extra = {"rasterized": True} if len(vals) > RASTER_DOTS else {}
        size = 10 if horizontal else 12
        nreps = max(rep_of + named, default=-1) + 1
        if nreps > MAX_LEGEND_REPS:
            # REP_BANDS colours, a scatter each: one colour per scatter lets matplotlib stamp
            # the marker (a colour per dot draws each dot apart, seconds per 100,000 dots).
            import numpy as np
            from matplotlib.cm import ScalarMappable
            cmap = self.plt.get_cmap("viridis", REP_BANDS)
            norm = self.norms[False](vmin=1, vmax=max(nreps, 2))
            v, y = np.asarray(vals, dtype=float), np.asarray(pos, dtype=float)
            band = np.minimum((norm(np.asarray(rep_of) + 1) * REP_BANDS).astype(int),
                              REP_BANDS - 1)
            for b in range(REP_BANDS):
                sel = band == b
                xy = (v[sel], y[sel]) if horizontal else (y[sel], v[sel])
                ax.scatter(*xy, s=size, color=cmap(b), alpha=0.7, marker="o", **extra)
            bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01)
            bar.set_label("repetition", fontsize=8)
            return False
        by_rep = [([], []) for _ in range(nreps)]
        for v, y, r in zip(vals, pos, rep_of):
            by_rep[r][0].append(v)
            by_rep[r][1].append(y)
        for ri, (v, y) in enumerate(by_rep):
            xy = (v, y) if horizontal else (y, v)
            ax.scatter(*xy, s=size, marker=MARKERS[ri % len(MARKERS)], alpha=0.7,
                       color=f"C{ri % 10}",
                       label=f"repetition {ri + 1}" if ri in named else None, **extra)
        return bool(named)

    def latency(self):
        name = "latency"
        pcts = [("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99"), ("p999_us", "p99.9"),
                ("max_us", "max")]
        labels = self.point_labels()
        # Per phase and point: the percentiles of the repetition with the median bandwidth,
        # which stands for the point (percentiles of different repetitions cannot be averaged).
        lat = {ph: {} for ph in PHASES}
        for phase in PHASES:
            for p in self.points:
                reps = get(p.raw, "repetitions", default=[]) or []
                cand = [(num(get(r, phase, "bandwidth_GiBps")), r) for r in reps
                        if isinstance(get(r, phase, "latency"), dict)]
                cand = sorted(((b, r) for b, r in cand if b is not None), key=lambda t: t[0])
                if not cand:
                    continue
                got = get(cand[(len(cand) - 1) // 2][1], phase, "latency")
                ys = [num(got.get(k)) for k, _ in pcts]
                ys = [v if v is not None and v > 0 else None for v in ys]
                if any(v is not None for v in ys) and num(got.get("count")):
                    lat[phase][id(p)] = ys
        pts = [p for p in self.points if any(id(p) in lat[ph] for ph in PHASES)]
        if not pts:
            self.note(f"skipped {name}: no latency percentiles in the reports")
            return False
        if len(pts) > MAX_LATENCY_LINES:
            return self.latency_heatmap(name, pts, lat, pcts, labels)
        fig, axes = self.figure(1, 2, (13, 5.2))
        for ax, phase in zip(axes[0], PHASES):
            for k, p in enumerate(pts):
                ys = lat[phase].get(id(p))
                if ys is None:
                    continue
                xs = [i for i, v in enumerate(ys) if v is not None]
                ax.plot(xs, [ys[i] for i in xs], marker="os^D"[k // 10 % 4],
                        linestyle=("-", "--", ":", "-.")[k // 10 % 4], color=f"C{k % 10}",
                        label=labels[id(p)])
            ax.set_xticks(range(len(pcts)))
            ax.set_xticklabels([n for _, n in pcts])
            ax.set_yscale("log")
            ax.set_xlabel("percentile of transfer latency (all ranks, merged histogram)")
            ax.set_ylabel(f"{phase} latency per transfer (µs)")
            ax.set_title(f"{phase}: median-bandwidth repetition of each point", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
        axes[0][1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.finish(fig, name, "latency percentiles")
        return True

    def latency_heatmap(self, name, pts, lat, pcts, labels):
        """latency() for many points: point x percentile, log colour scale shared by the
        phases, the value (µs) in each cell."""
        pts = self.cap_rows(name, pts, "points")
        vals = [v for ph in PHASES for p in pts for v in lat[ph].get(id(p), []) if v]
        fig, axes = self.figure(1, 2, (13, 0.32 * len(pts) + 2.6), sharey=True)
        for ax, phase in zip(axes[0], PHASES):
            grid = [[v if v is not None else float("nan")
                     for v in lat[phase].get(id(p), [None] * len(pcts))] for p in pts]
            self.heat(fig, ax, grid, [n for _, n in pcts], [labels[id(p)] for p in pts],
                      min(vals), max(vals), f"{phase} latency per transfer (µs, log scale)",
                      fmt_us, log=True)
            ax.set_xlabel("percentile of transfer latency (all ranks, merged histogram)")
            ax.set_title(f"{phase}: median-bandwidth repetition of each point", fontsize=9)
        axes[0][0].set_ylabel("point")
        self.finish(fig, name, "latency percentiles (µs)")
        return True

    def lifecycle(self):
        """What checkpoints cost training (reports with `lifecycle`): per point, the per-checkpoint
        blocked_s (what training waits for) beside durable_s (until the bytes are synced), each
        the max over ranks, median over all checkpoints of all repetitions, whiskers min..max."""
        name = "lifecycle"
        labels = self.point_labels()
        rows = []
        for p in self.points:
            vals = {"blocked_s": [], "durable_s": []}
            for r in get(p.raw, "repetitions", default=[]) or []:
                for c in get(r, "lifecycle", "checkpoints", default=[]) or []:
                    for k in vals:
                        v = num(get(c, k, "max"))
                        if v is not None:
                            vals[k].append(v)
            if vals["blocked_s"] and vals["durable_s"]:
                rows.append((p, vals))
        if not rows:
            self.note(f"skipped {name}: no lifecycle (checkpoints, save_mode, compute_s) in the reports")
            return False
        rows = self.cap_rows(name, rows, "points")
        fig, axes = self.figure(1, 1, (10, 0.5 * len(rows) + 2.4))
        ax = axes[0][0]
        for k, (key, colour, off) in enumerate((("blocked_s", "C3", -0.2), ("durable_s", "C0", 0.2))):
            ys, meds, lo, hi = [], [], [], []
            for i, (p, vals) in enumerate(rows):
                v = sorted(vals[key])
                m = statistics.median(v)
                ys.append(i + off)
                meds.append(m)
                lo.append(m - v[0])
                hi.append(v[-1] - m)
            ax.barh(ys, meds, xerr=[lo, hi], height=0.38, capsize=3, color=colour,
                    label="blocked (training waits)" if key == "blocked_s" else
                    "durable (bytes synced)")
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([labels[id(p)] for p, _ in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(left=0)
        ax.set_xlabel("seconds per checkpoint (max over ranks; median, whiskers = min..max)")
        ax.set_ylabel("point")
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        self.finish(fig, name, "what a checkpoint blocks training, and when it is durable")
        return True

    def phase_steps(self):
        """Where each phase's time goes, per point: the mean over ranks of open (create), I/O,
        sync and close time, median over repetitions, stacked. Metadata-bound layouts show as
        long open and close segments."""
        name = "phase_steps"
        steps = (("open_s", "open / create", "C3"), ("io_s", "transfer", "C0"),
                 ("sync_s", "sync", "C2"), ("close_s", "close", "C1"))
        labels = self.point_labels()
        rows = []
        for p in self.points:
            per_phase = {}
            for ph in PHASES:
                vals = {k: [] for k, _, _ in steps}
                for r in get(p.raw, "repetitions", default=[]) or []:
                    for k in vals:
                        v = num(get(r, ph, "steps", k, "mean"))
                        if v is not None:
                            vals[k].append(v)
                if all(vals.values()):
                    per_phase[ph] = {k: statistics.median(v) for k, v in vals.items()}
            if per_phase:
                rows.append((p, per_phase))
        if not rows:
            self.note(f"skipped {name}: no per-step phase times in the reports")
            return False
        rows = self.cap_rows(name, rows, "points")
        phases = [ph for ph in PHASES if any(ph in pp for _, pp in rows)]
        fig, axes = self.figure(1, len(phases), (6 * len(phases), 0.45 * len(rows) + 2.4))
        for j, ph in enumerate(phases):
            ax = axes[0][j]
            left = [0.0] * len(rows)
            for key, label, colour in steps:
                w = [pp.get(ph, {}).get(key, 0.0) for _, pp in rows]
                ax.barh(range(len(rows)), w, left=left, height=0.6, color=colour, label=label)
                left = [a + b for a, b in zip(left, w)]
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels([labels[id(p)] for p, _ in rows] if j == 0 else [], fontsize=8)
            ax.invert_yaxis()
            ax.set_xlim(left=0)
            ax.set_title(ph)
            ax.set_xlabel("s, mean over ranks (median of repetitions)", fontsize=8)
            ax.grid(True, axis="x", alpha=0.3)
            if j == 0:
                ax.legend(fontsize=8, loc="best")
        self.finish(fig, name, "where each phase's time goes: open/create, transfer, sync, close")
        return True

    # ------------------------------------------------------------ characterization figures
    # Reports of `ckptbench characterize` carry a `characterization` object (docs/metrics.md,
    # "characterization"): the figures below draw its findings, each skipped with a note when no
    # report has the finding. Intervals are the report's 95 % intervals of the mean.

    def characterizations(self):
        """[(report, characterization object)] of the reports that have one."""
        return [(r, r.doc["characterization"]) for r in self.reports
                if isinstance(r.doc.get("characterization"), dict)]

    def char_prefix(self, chars, report):
        """The report's label and ': ' when several characterizations are drawn together."""
        return f"{report.label}: " if len(chars) > 1 else ""

    @staticmethod
    def probe_entries(ch, stage):
        """The probes of a stage as findings entries (the settings' keys, members, ranks, the
        stats, or status and reason): what a report written while the search still ran (status
        running: no findings yet) has to show."""
        out = []
        for p in get(ch, "probes", default=[]) or []:
            if not isinstance(p, dict) or p.get("stage") != stage or \
                    not isinstance(p.get("settings"), dict):
                continue
            e = dict(p["settings"])
            e.update({k: p[k] for k in ("members", "ranks", "save_GiBps", "restore_GiBps",
                                        "status", "reason") if k in p})
            out.append(e)
        return out

    @staticmethod
    def shown_lines(s, width=40):
        """shown() of each line of s (tick labels of two lines)."""
        return "\n".join(shown(line, width) for line in str(s).split("\n"))

    @staticmethod
    def ci(stats):
        """(mean, error below, error above) of a stats object ({n, mean, sd, half_width, low,
        high}); the errors are 0 without an interval (fewer than 2 samples); None without a
        mean."""
        m = num(get(stats, "mean"))
        if m is None:
            return None
        lo, hi = num(get(stats, "low")), num(get(stats, "high"))
        return (m, m - lo if lo is not None else 0.0, hi - m if hi is not None else 0.0)

    def char_curve(self, name, finding, x_label, x_fmt, knee_key, best_key, knee_text, what):
        """A finding's curve (transfer size, queue depth): mean save and restore GiB/s with their
        95 % intervals against x (log2 axis), the knee and the best marked."""
        chars = self.characterizations()
        series = []
        for r, ch in chars:
            f = get(ch, "findings", finding)
            if "findings" not in ch:
                # Written while the search ran: the stage's probes so far, no knee or best yet.
                xkey, other = (("queue_depth", "block_size") if finding == "queue_depth"
                               else ("block_size", "queue_depth"))
                rows = [dict(e, x=config_bytes(e.get(xkey))) for e in
                        self.probe_entries(ch, finding) if e.get("members") == "all"]
                if rows:
                    f = {"backend": rows[0].get("backend"), "direct": rows[0].get("direct"),
                         other: rows[0].get(other), "curve": rows, "partial": True}
            if not isinstance(f, dict):
                continue
            if not isinstance(f.get("curve"), list):
                if isinstance(f.get("status"), str):
                    self.note(f"{name}: {r.path}: {clean(f['status'])}: "
                              f"{clean(f.get('reason', ''), 200)}")
                continue
            rows = []
            for e in f["curve"]:
                x = num(get(e, "x"))
                s, rr = self.ci(get(e, "save_GiBps")), self.ci(get(e, "restore_GiBps"))
                if x is not None and x > 0 and s and rr:
                    rows.append((x, s, rr))
            if rows:
                series.append((r, f, sorted(rows, key=lambda t: t[0])))
        if not series:
            self.note(f"skipped {name}: no characterization report has a {finding} curve")
            return False
        xs = sorted({x for _, _, rows in series for x, _, _ in rows})
        fig, axes = self.figure(1, 2, (13, 5.2), sharex=True)
        for k, (r, f, rows) in enumerate(series):
            colour = f"C{k % 10}"
            path = ", ".join(str(v) for v in (
                clean(f.get("backend", "?"), 20),
                "O_DIRECT" if f.get("direct") is True else "buffered",
                f"bs {fmt_value('block_size', f['block_size'])}" if "block_size" in f else None,
                f"QD {f['queue_depth']}" if num(f.get("queue_depth")) is not None else None)
                if v is not None)
            pre = shown(self.char_prefix(series, r))
            if f.get("partial"):
                path += " (so far: the search had not ended)"
            label = shown(self.char_prefix(series, r) + path)
            knee, best = num(f.get(knee_key)), num(f.get(best_key))
            tol = num(f.get("tolerance"))
            for col, phase in enumerate(PHASES):
                ax = axes[0][col]
                x = [t[0] for t in rows]
                y = [t[1 + col][0] for t in rows]
                err = [[t[1 + col][1] for t in rows], [t[1 + col][2] for t in rows]]
                ax.errorbar(x, y, yerr=err, marker="o", capsize=3, color=colour, label=label)
                at = {t[0]: t[1 + col][0] for t in rows}
                if best in at:
                    ax.plot([best], [at[best]], marker="*", markersize=16, color=colour,
                            markeredgecolor="black", linestyle="none", zorder=5,
                            label=f"{pre}best {x_fmt(best)} (highest mean save)" if col == 1
                            else None)
                if knee is not None:
                    ax.axvline(knee, color=colour, linestyle="--", linewidth=1.2,
                               label=f"{pre}knee {x_fmt(knee)}: {knee_text}" if col == 1 else None)
                if phase == "save" and best in at and tol is not None:
                    ax.axhline(at[best] * (1 - tol), color=colour, linestyle=":", linewidth=1,
                               label=f"{pre}best mean save - {tol * 100:g} %")
        for col, phase in enumerate(PHASES):
            ax = axes[0][col]
            ax.set_xscale("log", base=2)
            ax.minorticks_off()
            ax.set_xticks(xs)
            ax.set_xticklabels([x_fmt(x) for x in xs], fontsize=8)
            ax.set_xlabel(x_label)
            ax.set_ylabel(f"{phase} bandwidth (GiB/s)")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{phase}: mean over repetitions, bars = 95 % interval", fontsize=9)
            ax.grid(True, alpha=0.3)
        handles, labels = axes[0][1].get_legend_handles_labels()
        for h, lab in zip(*axes[0][0].get_legend_handles_labels()):  # the save panel's own line
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
        axes[0][1].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.finish(fig, name, what)
        return True

    def characterization_transfer_size(self):
        return self.char_curve(
            "characterization_transfer_size", "transfer_size",
            "block size (bytes per transfer, log2 axis; K = KiB, M = MiB)", fmt_bytes,
            "smallest_within_5pct_bytes", "best_bytes", "smallest within 5 % of the best save",
            "characterization: bandwidth vs transfer size")

    def characterization_queue_depth(self):
        return self.char_curve(
            "characterization_queue_depth", "queue_depth",
            "queue depth (transfers in flight per rank, log2 axis)", lambda v: f"{v:g}",
            "knee", "best", "smallest within 5 % of the best save",
            "characterization: bandwidth vs queue depth")

    def char_bars(self, ax, cats, bars, phase_of=None):
        """Grouped bars with 95 % intervals. cats: [tick label]; bars: [(label, colour, hatch,
        [ci tuple or None or a text per category])]; a text is written where its bar would be
        (a probe that was skipped)."""
        width = 0.8 / max(1, len(bars))
        top = max([v[0] + v[2] for _, _, _, vals in bars for v in vals
                   if isinstance(v, tuple)] or [1.0])
        for bi, (label, colour, hatch, vals) in enumerate(bars):
            xs, ys, lo, hi = [], [], [], []
            for ci, v in enumerate(vals):
                x = ci - 0.4 + width * (bi + 0.5)
                if isinstance(v, tuple):
                    xs.append(x)
                    ys.append(v[0])
                    lo.append(v[1])
                    hi.append(v[2])
                elif isinstance(v, str):
                    ax.text(x, top * 0.02, shown(v, 60), rotation=90, ha="center", va="bottom",
                            fontsize=6.5, color="dimgray")
            ax.bar(xs, ys, width=width * 0.95, yerr=[lo, hi], capsize=3, color=colour,
                   hatch=hatch, edgecolor="black" if hatch else None, label=label)
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats, fontsize=8)
        ax.set_xlim(-0.6, len(cats) - 0.4)
        ax.set_ylim(0, top * 1.15)
        ax.grid(True, axis="y", alpha=0.3)
        return top

    def characterization_backends(self):
        """Stage backend: every backend buffered and with O_DIRECT, mean save and restore GiB/s
        with their 95 % intervals; a probe that did not run says why."""
        name = "characterization_backends"
        chars = self.characterizations()
        cats, vals, paths = [], {}, set()
        for r, ch in chars:
            pts = get(ch, "findings", "backend", "points")
            if "findings" not in ch:
                pts = self.probe_entries(ch, "backend")  # the search had not ended
            if not isinstance(pts, list):
                continue
            for e in pts:
                if not isinstance(e, dict) or not isinstance(e.get("backend"), str):
                    continue
                cat = self.char_prefix(chars, r) + clean(e["backend"], 30)
                if cat not in cats:
                    cats.append(cat)
                d = "direct" if e.get("direct") is True else "buffered"
                paths.add((fmt_value("block_size", e.get("block_size")), str(e.get("queue_depth"))))
                for phase in PHASES:
                    got = self.ci(get(e, f"{phase}_GiBps"))
                    why = ": ".join(str(x) for x in (e.get("status") or "no data",
                                                     e.get("reason")) if x)
                    vals[(cat, d, phase)] = got if got else clean(why, 60)
        if not cats:
            self.note(f"skipped {name}: no characterization report has backend probes")
            return False
        fig, axes = self.figure(1, 2, (max(11, 2.2 * len(cats) + 5), 5.2))
        setting = (f"{paths.copy().pop()[0]} transfers, queue depth {paths.copy().pop()[1]}"
                   if len(paths) == 1 else "transfer size and queue depth as in the report")
        for col, phase in enumerate(PHASES):
            ax = axes[0][col]
            self.char_bars(ax, [shown(c, 40) for c in cats], [
                ("buffered", "C0", None, [vals.get((c, "buffered", phase)) for c in cats]),
                ("O_DIRECT", "C1", "//", [vals.get((c, "direct", phase)) for c in cats])])
            ax.set_xlabel("backend")
            ax.set_ylabel(f"{phase} bandwidth (GiB/s)")
            ax.set_title(f"{phase}: mean, bars = 95 % interval ({shown(setting, 60)})", fontsize=9)
        axes[0][1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.finish(fig, name, "characterization: backend x O_DIRECT")
        return True

    def characterization_ceilings(self):
        """The ceilings at the chosen data path (one rank, one node, all ranks) and, beside
        them, the shared file with regions aligned to 1 MiB against packed regions (the
        misalignment penalty), each mean save and restore GiB/s with 95 % intervals."""
        name = "characterization_ceilings"
        chars = self.characterizations()
        cats, ceil = [], {}
        mis_cats, mis, ratios = [], {}, {}
        for r, ch in chars:
            pre = self.char_prefix(chars, r)
            c = get(ch, "findings", "ceilings")
            if isinstance(c, dict):
                one_node = num(c.get("nodes")) == 1
                for key, text in (("per_rank", "one rank"), ("per_node", "one node"),
                                  ("aggregate", "all ranks")):
                    if not isinstance(c.get(key), dict) or (one_node and key == "per_node"):
                        continue
                    n = num(c[key].get("ranks"))
                    label = text + (" = one node" if one_node and key == "aggregate" else "")
                    cat = f"{pre}{label}" + (f"\n({n:g} rank{'s' if n != 1 else ''})" if n else "")
                    got = {ph: self.ci(get(c[key], f"{ph}_GiBps")) for ph in PHASES}
                    if any(got.values()):
                        cats.append(cat)
                        ceil[cat] = got
            m = get(ch, "findings", "misalignment")
            if isinstance(m, dict):
                for phase in PHASES:
                    cat = f"{pre}{phase}"
                    got = {k: self.ci(get(m, k, f"{phase}_GiBps")) for k in ("aligned", "packed")}
                    if any(got.values()):
                        mis_cats.append(cat)
                        mis[cat] = got
                        rt = get(m, f"{phase}_ratio")
                        x, lo, hi = (num(get(rt, k)) for k in ("ratio", "low", "high"))
                        if x is not None:
                            known = lo is not None and hi is not None
                            ratios[cat] = f"x{x:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if known else "")
        for cat in mis_cats:  # the ratio under its phase
            if cat in ratios:
                mis[f"{cat}\npacked/aligned {ratios[cat]}"] = mis.pop(cat)
        mis_cats = [f"{c}\npacked/aligned {ratios[c]}" if c in ratios else c for c in mis_cats]
        if not cats and not mis_cats:
            self.note(f"skipped {name}: no characterization report has ceilings or the "
                      "misalignment finding")
            return False
        panels = [p for p in (("ceilings", cats), ("misalignment", mis_cats)) if p[1]]
        fig, axes = self.figure(1, len(panels), (6.5 * len(panels) + 1, 5.4))
        for col, (kind, pcats) in enumerate(panels):
            ax = axes[0][col]
            if kind == "ceilings":
                self.char_bars(ax, [self.shown_lines(c) for c in pcats], [
                    ("save", "C0", None, [ceil[c]["save"] for c in pcats]),
                    ("restore", "C1", None, [ceil[c]["restore"] for c in pcats])])
                ax.set_xlabel("who wrote and read at once (the chosen data path, one file per "
                              "rank)")
                ax.set_title("ceilings: mean, bars = 95 % interval", fontsize=9)
            else:
                top = self.char_bars(ax, [self.shown_lines(c) for c in pcats], [
                    ("regions on 1 MiB boundaries", "C2", None, [mis[c]["aligned"] for c in pcats]),
                    ("packed regions", "C3", "//", [mis[c]["packed"] for c in pcats])])
                ax.set_ylim(0, top * 1.3)
                ax.set_xlabel("phase (one shared file, the chosen data path)")
                ax.set_title("misalignment penalty: mean, bars = 95 % interval; ratio < 1 is "
                             "the penalty", fontsize=9)
            ax.set_ylabel("bandwidth (GiB/s)")
            ax.legend(fontsize=8, loc="upper left")
        self.finish(fig, name, "characterization: ceilings and misaligned regions")
        return True

    def characterization_validation(self):
        """The recommended config's check run: predicted against measured save and restore time
        (measured: median over the repetitions, whiskers min..max), and beside it the predicted
        times of every candidate layout."""
        name = "characterization_validation"
        rows = []
        for r, ch in self.characterizations():
            rec = get(ch, "recommendation")
            v = get(rec, "validation")
            if not isinstance(v, dict):
                why = get(rec, "error") or ("the check run was not made (--no-validate)"
                                            if isinstance(rec, dict) else
                                            get(ch, "model_missing") or "no recommendation")
                self.note(f"{name}: {r.path}: no check run: {clean(why, 200)}")
                continue
            if v.get("status") != "ok":
                self.note(f"{name}: {r.path}: the check run failed: "
                          f"{clean(v.get('error', ''), 200)}")
                continue
            pt = next((p for p in r.doc.get("points") or [] if isinstance(p, dict)
                       and p.get("index") == v.get("point")), None)
            vals = {}
            for phase in PHASES:
                pred = num(get(v, "predicted", f"{phase}_s"))
                meas = num(get(v, "measured", f"{phase}_s"))
                times = rep_values(pt, phase, "elapsed_s") if pt else []
                if pred is None or meas is None:
                    continue
                lo = meas - min(times) if times else 0.0
                hi = max(times) - meas if times else 0.0
                vals[phase] = (pred, (meas, max(lo, 0.0), max(hi, 0.0)),
                               num(get(v, f"{phase}_ratio")),
                               get(v, f"{phase}_within_15pct"))
            if vals:
                rows.append((r, rec, v, vals, get(ch, "candidates")))
        if not rows:
            self.note(f"skipped {name}: no characterization report has a check run of its "
                      "recommendation")
            return False
        fig, axes = self.figure(len(rows), 2, (13, 4.8 * len(rows) + 0.6))
        for row, (r, rec, v, vals, cands) in enumerate(rows):
            pre = self.char_prefix(rows, r)
            ax = axes[row][0]
            phases = [ph for ph in PHASES if ph in vals]
            ticks = []
            for ph in phases:
                ratio, within = vals[ph][2], vals[ph][3]
                verdict = {True: " (within 15 %)", False: " (outside 15 %)"}.get(within, "")
                ticks.append(ph if ratio is None else
                             f"{ph}\nmeasured/predicted x{ratio:.2f}{verdict}")
            top = self.char_bars(ax, ticks, [
                ("predicted", "lightgray", "//", [(vals[ph][0], 0.0, 0.0) for ph in phases]),
                ("measured (median; whiskers min..max)", "C0", None,
                 [vals[ph][1] for ph in phases])])
            ax.set_ylim(0, top * 1.3)
            ax.set_ylabel("time (s)")
            cfg = get(rec, "config") if isinstance(get(rec, "config"), dict) else {}
            path = ", ".join(x for x in (
                clean(rec.get("layout", "?"), 30), clean(cfg.get("backend", "?"), 20),
                "O_DIRECT" if cfg.get("direct") is True else "buffered",
                fmt_value("block_size", cfg.get("block_size")),
                f"QD {cfg.get('queue_depth')}") if x)
            n, world = num(v.get("repetitions")), num(get(rec, "world"))
            sub = "predicted" + (f" for {world:g} ranks" if world else "") + (
                f", measured on this job ({n:g} repetitions)" if n else ", measured on this job")
            ax.set_title(shown(f"{pre}recommended: {path}", 100) + "\n" + sub, fontsize=9)
            ax.legend(fontsize=8, loc="upper left")
            ax = axes[row][1]
            cl = [c for c in cands or [] if isinstance(c, dict)
                  and num(get(c, "prediction", "save_s")) is not None]
            if not cl:
                ax.axis("off")
                ax.text(0.5, 0.5, "no candidate predictions", ha="center", va="center")
                continue
            labels = [shown(c.get("layout", "?"), 30) + (" (recommended)"
                                                         if c.get("layout") == rec.get("layout")
                                                         else "") for c in cl]
            for k, (phase, colour) in enumerate((("save", "C0"), ("restore", "C1"))):
                ys = [i + (k - 0.5) * 0.38 for i in range(len(cl))]
                ax.barh(ys, [num(get(c, "prediction", f"{phase}_s")) or 0 for c in cl],
                        height=0.36, color=colour, label=f"predicted {phase}")
            ax.set_yticks(range(len(cl)))
            ax.set_yticklabels(labels, fontsize=8)
            ax.invert_yaxis()
            ax.set_xlim(left=0)
            ax.set_xlabel("predicted time (s)")
            ax.set_title(f"{pre}candidate layouts (the shortest predicted save is recommended)",
                         fontsize=9)
            ax.grid(True, axis="x", alpha=0.3)
            ax.legend(fontsize=8, loc="best")
        self.finish(fig, name, "characterization: predicted vs measured")
        return True

    def characterization(self):
        """The characterization figures of the reports that have a `characterization` object;
        a finding that is not the shape the report schema gives is skipped with a note."""
        for r in self.reports:
            if "characterization" in r.doc and not isinstance(r.doc["characterization"], dict):
                self.note(f"{r.path}: characterization is not an object; no characterization "
                          "figures from it")
        if not self.characterizations():
            return
        for fig in (self.characterization_transfer_size, self.characterization_queue_depth,
                    self.characterization_backends, self.characterization_ceilings,
                    self.characterization_validation):
            try:
                fig()
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
                self.plt.close("all")
                self.note(f"skipped {fig.__name__}: the characterization object is not as "
                          f"docs/metrics.md describes it ({type(e).__name__}: {clean(e, 160)})")

    def all(self):
        drawn = [self.bandwidth_vs_block_size(), self.heatmap(), self.layouts(), self.stripes()]
        if not any(drawn):
            self.bandwidth_points()
        self.phase_steps()
        self.rank_times()
        self.latency()
        self.lifecycle()
        self.characterization()


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Draw figures (PNG/SVG) from ckptbench JSON reports.",
        epilog="Figures a report has no data for are skipped with a one-line note. Inputs "
        "that are not ckptbench reports are skipped with a warning.")
    ap.add_argument("reports", nargs="+", metavar="REPORT.json")
    ap.add_argument("--out", required=True, metavar="DIR",
                    help="output directory (made when missing; checked before any report is "
                    "read)")
    ap.add_argument("--format", default="png,svg",
                    help="comma-separated list of png, svg, pdf (default: png,svg)")
    ap.add_argument("--reference", action="append", default=[], metavar="FILE",
                    help="a fio JSON output (fio --output-format=json) or an IOR JSON output "
                    "(ior -O summaryFormat=JSON): its write and read bandwidth become labelled "
                    "lines on the bandwidth figures (repeatable)")
    a = ap.parse_args(argv)
    formats = [f.strip().lower() for f in a.format.split(",") if f.strip()]
    bad = [f for f in formats if f not in ("png", "svg", "pdf")]
    if bad or not formats:
        print(f"plot.py: error: --format: unknown format {','.join(bad) or '(empty)'} "
              "(allowed: png, svg, pdf)", file=sys.stderr)
        return 2
    try:  # before any work: an --out that cannot be a directory of figures ends here
        check_output_dir(a.out, "--out")
    except PathError as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        return 2
    # Re-running under another python only from the command line, not when called as a function.
    require_module("plot.py", "matplotlib",
                   "apt-get install python3-matplotlib (or scripts/setup.sh --with-plots)",
                   switch=argv is None)
    reports, skipped = [], []
    for path in a.reports:
        try:
            reports.append(Report(path, load_report(path, require_schema=True)))
        except ReportError as e:
            hint = ""
            if e.other_tool:  # not a report at all: perhaps a --reference file given here
                try:
                    load_reference(path)
                    hint = " (a fio or IOR output: give it with --reference)"
                except ReportError:
                    pass
            skipped.append(f"{e}{hint}")
    if not reports and len(skipped) == 1:  # one line: what is wrong with the only input
        print(f"plot.py: error: {skipped[0]}; none of the inputs is a ckptbench report",
              file=sys.stderr)
        return 2
    for msg in skipped:
        print(f"plot.py: warning: skipping {msg}", file=sys.stderr)
    if not reports:
        print("plot.py: error: none of the inputs is a ckptbench report", file=sys.stderr)
        return 2
    refs = []
    for path in a.reference:
        try:
            lines = load_reference(path)
        except ReportError as e:
            print(f"plot.py: warning: --reference: skipping {e}", file=sys.stderr)
            continue
        for line in lines:
            print(f"plot.py: reference {line['label']} ({path})")
        refs.extend(lines)
    # Disambiguate equal labels (e.g. the same config run twice).
    seen = {}
    for r in reports:
        seen[r.label] = seen.get(r.label, 0) + 1
    if any(n > 1 for n in seen.values()):
        for r in reports:
            if seen[r.label] > 1:
                r.label = f"{r.label} ({clean(os.path.basename(r.path), 30)})"
                for p in r.points:
                    p.keys["report"] = r.label
    for r in reports:
        if r.skipped:
            print(f"plot.py: {r.path}: {r.skipped} point(s) not plotted (status not ok, or no "
                  "measurements)")
        if get(r.doc, "status") not in (None, "ok"):
            print(f"plot.py: {r.path}: the run's status is {clean(get(r.doc, 'status'))!r}: "
                  f"{clean(get(r.doc, 'error', default='') or '', 300)}")
    if not any(r.points for r in reports):
        print("plot.py: error: the reports have no completed points to plot", file=sys.stderr)
        return 2
    made = []
    try:
        made = make_dirs(a.out)
        pl = Plotter(reports, refs, a.out, formats)
        pl.all()
    except (PathError, OSError) as e:
        if not os.path.isdir(a.out) or not os.listdir(a.out):
            remove_dirs(made)  # nothing written: leave nothing behind
        msg = e if isinstance(e, PathError) else f"--out {a.out}: cannot create it or write " \
            f"in it ({e.strerror or e})"
        print(f"plot.py: error: {msg}", file=sys.stderr)
        return 2
    for path in pl.written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
