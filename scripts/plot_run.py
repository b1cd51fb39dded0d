"""The figures of scripts/plot.py drawn from a run's points (any ckptbench report).

Each figure is a function figure(plot, points) -> bool: plot is the plotstyle.Canvas, points the
plotdata.Point objects of every report; it returns False after a one-line note when the points
hold no data for it, else draws, writes the figure's files and returns True. draw() draws them
all in order.
"""

import statistics

from ckptreport import PHASES, get, num
from plotdata import group_by, point_labels, varying_keys
from plotstyle import axis_title, fmt_bytes, label_of, request_kinds, shown

# Lines per panel before bandwidth_vs_block_size splits into rows of panels, rows at most.
MAX_SERIES = 6
MAX_FACETS = 12
# Bars per category before layouts/stripes become a heatmap.
MAX_BAR_SERIES = 8
# Points drawn as latency lines (more: a heatmap), as vertical rank-time boxes (more: horizontal).
MAX_LATENCY_LINES = 15
MAX_VERTICAL_BOXES = 16
# requests: request kinds drawn per phase (bars per point), at most.
MAX_REQUEST_KINDS = 12
# rank_times: up to MAX_LEGEND_REPS repetitions, each repetition's dots have a marker and colour
# of their own and a legend entry; more are coloured by repetition number in REP_BANDS bands (a
# colour bar). Above RASTER_DOTS dots they are drawn as an image in SVG and PDF (a vector element
# per dot makes files of tens of MB).
MARKERS = "os^Dv<>p"
MAX_LEGEND_REPS = 12
REP_BANDS = 10
RASTER_DOTS = 20000


def draw(plot, points):
    """Every run figure, in order; bandwidth_points only when none of the four before it
    applies, so that every report gets a bandwidth figure."""
    drawn = [bandwidth_vs_block_size(plot, points), heatmap(plot, points),
             layouts(plot, points), stripes(plot, points)]
    if not any(drawn):
        bandwidth_points(plot, points)
    phase_steps(plot, points)
    rank_times(plot, points)
    latency(plot, points)
    requests(plot, points)
    lifecycle(plot, points)


def fmt_us(v):
    """A latency in µs for a heatmap cell: 394, 1.2k, 39k."""
    if v >= 9999.5:
        return f"{v / 1000:.0f}k"
    if v >= 999.5:
        return f"{v / 1000:.1f}k"
    return f"{v:.0f}" if v >= 9.95 else f"{v:.1f}"


def bandwidth_vs_block_size(plot, points):
    name = "bandwidth_vs_block_size"
    sizes = sorted({num(p.value("block_size")) for p in points} - {None})
    if len(sizes) < 2:
        plot.note(f"skipped {name}: the points do not vary block_size")
        return False
    keys = varying_keys(points, exclude=("block_size",))
    # Backend first: "bandwidth vs block size per backend".
    if "backend" in keys:
        keys.remove("backend")
        keys.insert(0, "backend")
    # Small multiples: the leading keys become rows of panels until a panel has at most
    # MAX_SERIES lines.
    facet_keys = []
    while keys and max(len(group_by(f, keys))
                       for f in group_by(points, facet_keys)) > MAX_SERIES:
        facet_keys.append(keys.pop(0))
    facets = group_by(points, facet_keys)
    if len(facets) > MAX_FACETS:
        plot.note(f"{name}: {len(facets)} rows of panels; drawing the first {MAX_FACETS}")
        facets = facets[:MAX_FACETS]
    fig, axes = plot.figure(len(facets), 2, (13, 3.4 * len(facets) + 1.0), sharex=True,
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
                ax.set_xlabel(axis_title("block size", "bytes per transfer; K = KiB, M = MiB",
                                         "block_size", points))
            ax.set_ylabel(f"{phase} bandwidth (GiB/s)")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{facet}{phase}, median; bars = min..max", fontsize=9)
            ax.grid(True, alpha=0.3)
            plot.draw_refs(ax, phase)
        if keys:
            axes[row][1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plot.finish(fig, name, "bandwidth vs block size")
    return True


def heatmap(plot, points):
    name = "heatmap_qd_block_size"
    bss = sorted({num(p.value("block_size")) for p in points} - {None})
    qds = sorted({num(p.value("queue_depth")) for p in points} - {None})
    if len(bss) < 2 or len(qds) < 2:
        plot.note(f"skipped {name}: the points do not vary both queue_depth and block_size")
        return False
    keys = varying_keys(points, exclude=("block_size", "queue_depth"))
    groups = group_by(points, keys)
    if len(groups) > 6:
        plot.note(f"{name}: {len(groups)} combinations of other keys; drawing the first 6")
        groups = groups[:6]
    fig, axes = plot.figure(len(groups), 2, (12, 3.8 * len(groups) + 0.8))
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
            cb = plot.heat(fig, ax, grid, [fmt_bytes(b) for b in bss],
                           [str(int(q)) for q in qds], 0.0, vmax[phase],
                           f"{phase} median bandwidth (GiB/s)", lambda v: f"{v:.2f}",
                           origin="lower")
            plot.heat_refs(cb, phase, vmax[phase])
            ax.set_xlabel(axis_title("block size", "bytes per transfer; K = KiB, M = MiB",
                                     "block_size", grp))
            ax.set_ylabel(axis_title("queue depth", "transfers in flight per rank",
                                     "queue_depth", grp))
            sub = label_of(grp[0], keys) if keys else ""
            ax.set_title(f"{phase}" + (f": {sub}" if sub else ""), fontsize=9)
    plot.finish(fig, name, "queue depth x block size")
    return True


def categories(plot, points, name, cat_key_fn, cat_label, axis_label, what, exclude):
    cats = {}
    for p in points:
        cats.setdefault(cat_key_fn(p), []).append(p)
    if len(cats) < 2:
        return False
    keys = varying_keys(points, exclude=exclude)
    groups = group_by(points, keys)
    # Numbers in order; names (layouts) in the order the reports list them.
    cat_list = list(cats)
    if all(num(c) is not None for c in cat_list):
        cat_list.sort(key=num)
    if len(groups) > MAX_BAR_SERIES:
        return category_heatmap(plot, name, cat_key_fn, cat_label, axis_label, what, keys,
                                groups, cat_list)
    fig, axes = plot.figure(1, 2, (max(11, 1.6 * len(cat_list) * 2 + 4), 5.2))
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
        plot.draw_refs(ax, phase)
    if keys:
        axes[0][1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plot.finish(fig, name, what)
    return True


def category_heatmap(plot, name, cat_key_fn, cat_label, axis_label, what, keys, groups,
                     cat_list):
    """categories() with too many series for bars: series x category, median in each
    cell."""
    groups = plot.cap_rows(name, groups, "series")
    rows = [label_of(g[0], keys) for g in groups]
    fig, axes = plot.figure(1, 2, (max(12, 2.2 * len(cat_list) + 6),
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
        cb = plot.heat(fig, ax, grid, [cat_label(c) for c in cat_list], rows, 0.0, vmax,
                       f"{phase} median bandwidth (GiB/s)", lambda v: f"{v:.2f}")
        plot.heat_refs(cb, phase, vmax)
        ax.set_xlabel(axis_label)
        ax.set_title(f"{phase}: median over repetitions", fontsize=9)
    plot.finish(fig, name, what)
    return True


def layouts(plot, points):
    name = "layouts"
    if categories(plot, points, name, lambda p: p.value("layout"), lambda c: shown(c, 40),
                  "layout", "layouts side by side", exclude=("layout",)):
        return True
    plot.note(f"skipped {name}: the points do not vary layout")
    return False


def stripes(plot, points):
    name = "stripes"

    def key(p):
        return f"{p.value('stripe_count')}|{p.value('stripe_size')}"

    def label(c):
        cnt, size = c.split("|")
        cnt = "default" if cnt in ("0", "None") else ("all OSTs" if cnt == "-1" else shown(cnt))
        size = "default" if size in ("0", "None") else fmt_bytes(float(size))
        return f"count {cnt}, size {size}"

    if categories(plot, points, name, key, label, "Lustre stripe count and stripe size (bytes)",
                  "Lustre stripe settings side by side", exclude=("stripe_count", "stripe_size")):
        return True
    plot.note(f"skipped {name}: the points do not vary stripe_count/stripe_size")
    return False


def bandwidth_points(plot, points):
    """Every point's median bandwidth: the bandwidth figure of reports that none of
    bandwidth_vs_block_size, layouts and stripes applies to."""
    name = "bandwidth_points"
    labels = point_labels(points)
    pts = points
    pts = plot.cap_rows(name, pts, "points")
    fig, axes = plot.figure(1, 2, (13, 0.32 * len(pts) + 2.6), sharey=True)
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
        plot.draw_refs(ax, phase, axis="x")
    axes[0][0].set_yticks(range(len(pts)))
    axes[0][0].set_yticklabels([labels[id(p)] for p in pts],
                               fontsize=7 if len(pts) > 20 else 8)
    axes[0][0].set_ylabel("point")
    axes[0][0].invert_yaxis()
    plot.finish(fig, name, "bandwidth per point")
    return True


def rank_times(plot, points):
    name = "rank_times"
    labels = point_labels(points)
    rows = []
    for p in points:
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
        plot.note(f"skipped {name}: no per-rank times (rank_times_s) in the reports")
        return False
    rows = plot.cap_rows(name, rows, "points")
    # Many points: one row per point (horizontal boxes), the phases side by side.
    horizontal = len(rows) > MAX_VERTICAL_BOXES
    if horizontal:
        fig, grid = plot.figure(1, 2, (14, 0.34 * len(rows) + 2.8), sharey=True)
        axes = list(grid[0])
    else:
        fig, grid = plot.figure(2, 1, (max(8, 0.7 * len(rows) + 3), 9))
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
        legend = rank_dots(plot, fig, ax, dots, named, horizontal)
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
    plot.finish(fig, name, "per-rank time distribution (stragglers)")
    return True


def rank_dots(plot, fig, ax, dots, named, horizontal):
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
        cmap = plot.plt.get_cmap("viridis", REP_BANDS)
        norm = plot.norms[False](vmin=1, vmax=max(nreps, 2))
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


def median_rep(point, phase, field):
    """The point's phase (a repetition's dict) of the repetition with the median bandwidth among
    those whose phase holds the object field, or None. It stands for the point where values of
    different repetitions cannot be averaged (percentiles of merged histograms)."""
    reps = get(point.raw, "repetitions", default=[]) or []
    cand = [(num(get(r, phase, "bandwidth_GiBps")), get(r, phase)) for r in reps
            if isinstance(get(r, phase, field), dict)]
    cand = sorted(((b, r) for b, r in cand if b is not None), key=lambda t: t[0])
    return cand[(len(cand) - 1) // 2][1] if cand else None


def latency(plot, points):
    name = "latency"
    pcts = [("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99"), ("p999_us", "p99.9"),
            ("max_us", "max")]
    labels = point_labels(points)
    # Per phase and point: the percentiles of the repetition with the median bandwidth.
    lat = {ph: {} for ph in PHASES}
    for phase in PHASES:
        for p in points:
            got = get(median_rep(p, phase, "latency"), "latency")
            if got is None:
                continue
            ys = [num(got.get(k)) for k, _ in pcts]
            ys = [v if v is not None and v > 0 else None for v in ys]
            if any(v is not None for v in ys) and num(got.get("count")):
                lat[phase][id(p)] = ys
    pts = [p for p in points if any(id(p) in lat[ph] for ph in PHASES)]
    if not pts:
        plot.note(f"skipped {name}: no latency percentiles in the reports")
        return False
    if len(pts) > MAX_LATENCY_LINES:
        return latency_heatmap(plot, name, pts, lat, pcts, labels)
    fig, axes = plot.figure(1, 2, (13, 5.2))
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
    plot.finish(fig, name, "latency percentiles")
    return True


def latency_heatmap(plot, name, pts, lat, pcts, labels):
    """latency() for many points: point x percentile, log colour scale shared by the
    phases, the value (µs) in each cell."""
    pts = plot.cap_rows(name, pts, "points")
    vals = [v for ph in PHASES for p in pts for v in lat[ph].get(id(p), []) if v]
    fig, axes = plot.figure(1, 2, (13, 0.32 * len(pts) + 2.6), sharey=True)
    for ax, phase in zip(axes[0], PHASES):
        grid = [[v if v is not None else float("nan")
                 for v in lat[phase].get(id(p), [None] * len(pcts))] for p in pts]
        plot.heat(fig, ax, grid, [n for _, n in pcts], [labels[id(p)] for p in pts],
                  min(vals), max(vals), f"{phase} latency per transfer (µs, log scale)",
                  fmt_us, log=True)
        ax.set_xlabel("percentile of transfer latency (all ranks, merged histogram)")
        ax.set_title(f"{phase}: median-bandwidth repetition of each point", fontsize=9)
    axes[0][0].set_ylabel("point")
    plot.finish(fig, name, "latency percentiles (µs)")
    return True


def request_rows(points):
    """[(point, {phase: {kind: (count, p50_ms, p99_ms)}}, {phase: (retries, throttled)})] of
    the points whose phases have `requests` (an object store's requests by kind), each phase's
    from its median-bandwidth repetition; the counters summed over ranks."""
    rows = []
    for p in points:
        kinds, counters = {}, {}
        for phase in PHASES:
            got = median_rep(p, phase, "requests")
            if got is None:
                continue
            by_kind = {}
            for kind, v in got["requests"].items():
                c, p50, p99 = (num(get(v, k)) for k in ("count", "p50_ms", "p99_ms"))
                if p50 is not None and p50 > 0:
                    by_kind[kind] = (c, p50, p99 if p99 is not None and p99 >= p50 else p50)
            if by_kind:
                kinds[phase] = by_kind
                counters[phase] = tuple(num(get(got, "counters", k, "sum")) or 0
                                        for k in ("retries", "throttled"))
        if kinds:
            rows.append((p, kinds, counters))
    return rows


def requests(plot, points):
    """An object store's requests (points whose phases have `requests`): per point and phase,
    each request kind's p50 latency as a bar, a whisker up to its p99 and its count beside it
    (the median-bandwidth repetition); retries and throttled answers named where not 0."""
    name = "requests"
    rows = request_rows(points)
    if not rows:
        plot.note(f"skipped {name}: no requests by kind (an object store's requests) in the "
                  "reports")
        return False
    rows = plot.cap_rows(name, rows, "points")
    labels = point_labels(points)
    phases = [ph for ph in PHASES if any(ph in k for _, k, _ in rows)]
    kinds = {ph: request_kinds({kd for _, k, _ in rows for kd in k.get(ph, {})}) for ph in phases}
    for ph in phases:
        if len(kinds[ph]) > MAX_REQUEST_KINDS:
            plot.note(f"{name}: {len(kinds[ph])} request kinds in {ph}; drawing the first "
                      f"{MAX_REQUEST_KINDS}")
            kinds[ph] = kinds[ph][:MAX_REQUEST_KINDS]
    colour = {kd: f"C{i % 10}" for i, kd in enumerate(
        request_kinds({kd for ph in phases for kd in kinds[ph]}))}
    most = max(len(kinds[ph]) for ph in phases)
    fig, axes = plot.figure(1, len(phases), (6.5 * len(phases) + 3,
                                             len(rows) * (0.28 * most + 0.4) + 2.2))
    for j, ph in enumerate(phases):
        ax = axes[0][j]
        height = 0.8 / len(kinds[ph])
        for ki, kind in enumerate(kinds[ph]):
            got = [(i, k[ph][kind]) for i, (_, k, _) in enumerate(rows) if kind in k.get(ph, {})]
            ys = [i - 0.4 + height * (ki + 0.5) for i, _ in got]
            p50 = [v[1] for _, v in got]
            ax.barh(ys, p50, xerr=[[0] * len(got), [v[2] - v[1] for _, v in got]],
                    height=height * 0.9, capsize=2, color=colour[kind], label=shown(kind, 30))
            for y, (_, (count, _, p99)) in zip(ys, got):
                if count is not None:
                    ax.text(p99 * 1.1, y, f"n={count:.6g}", va="center", fontsize=6)
        for i, (_, _, counters) in enumerate(rows):
            retries, throttled = counters.get(ph, (0, 0))
            if retries or throttled:
                ax.text(0.99, i + 0.45, f"retries {retries:.6g}, throttled {throttled:.6g}",
                        transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                        fontsize=7, color="C3")
        ax.set_xscale("log")
        lo, hi = ax.get_xlim()
        ax.set_xlim(lo, hi * 3)  # room for the counts
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([labels[id(p)] for p, _, _ in rows] if j == 0 else [], fontsize=8)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlabel(f"{ph} latency per request (ms, log scale)")
        ax.set_title(f"{ph}: bar = p50, whisker = p99, n = requests of the kind (all ranks);\n"
                     "the median-bandwidth repetition", fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="request",
                  title_fontsize=7)
    axes[0][0].set_ylabel("point")
    plot.finish(fig, name, "requests by kind: latency and count")
    return True


def lifecycle(plot, points):
    """What checkpoints cost training (reports with `lifecycle`): per point, the per-checkpoint
    blocked_s (what training waits for) beside durable_s (until the bytes are synced), each
    the max over ranks, median over all checkpoints of all repetitions, whiskers min..max."""
    name = "lifecycle"
    labels = point_labels(points)
    rows = []
    for p in points:
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
        plot.note(f"skipped {name}: no lifecycle (checkpoints, save_mode, compute_s) in the reports")
        return False
    rows = plot.cap_rows(name, rows, "points")
    fig, axes = plot.figure(1, 1, (10, 0.5 * len(rows) + 2.4))
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
    plot.finish(fig, name, "what a checkpoint blocks training, and when it is durable")
    return True


def phase_steps(plot, points):
    """Where each phase's time goes, per point: the mean over ranks of open (create), I/O,
    sync and close time, median over repetitions, stacked. Metadata-bound layouts show as
    long open and close segments."""
    name = "phase_steps"
    steps = (("open_s", "open / create", "C3"), ("io_s", "transfer", "C0"),
             ("sync_s", "sync", "C2"), ("close_s", "close", "C1"))
    labels = point_labels(points)
    rows = []
    for p in points:
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
        plot.note(f"skipped {name}: no per-step phase times in the reports")
        return False
    rows = plot.cap_rows(name, rows, "points")
    phases = [ph for ph in PHASES if any(ph in pp for _, pp in rows)]
    fig, axes = plot.figure(1, len(phases), (6 * len(phases), 0.45 * len(rows) + 2.4))
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
    plot.finish(fig, name, "where each phase's time goes: open/create, transfer, sync, close")
    return True
