"""The figures of scripts/plot.py drawn from a characterization (`ckptbench characterize`).

A report of characterize carries a `characterization` object (docs/metrics.md,
"characterization"): each figure here is a function figure(plot, reports) -> bool (plot: the
plotstyle.Canvas, reports: the plotdata.Report objects) that draws its findings, or notes why
not and returns False when no report has the finding. Intervals are the report's 95 % intervals
of the mean. characterization() draws them all; one that meets an object not shaped as the
schema says is skipped with a note.
A characterization of an object store (its `store`: {"backend": "s3", "options"}) is drawn in
the store's words (plotstyle.BACKEND_TERMS): a probe's block_size is the multipart part size,
its queue_depth the requests in flight per rank, and O_DIRECT does not apply ("s3, 8 in
flight", "part size (s3 multipart upload; ...)", "requests in flight per rank (s3; ...)"); a
file system's as before ("posix, O_DIRECT, QD 8", "block size (bytes per transfer, ...)").
"""

import re

from ckptreport import PHASES, get, num, rep_values
from plotstyle import BACKEND_TERMS, clean, fmt_bytes, fmt_value, shown

# The config key each curve sweeps, and what an object store's axis adds to its words
# (BACKEND_TERMS') for it: (after the store's name, after the log2 note).
CURVE_KEYS = {"transfer_size": ("block_size", " multipart upload", "; K = KiB, M = MiB"),
              "queue_depth": ("queue_depth", "", "")}


def config_bytes(v):
    """A size as a config gives it (a byte count, or "64K", "4M", "1G") in bytes, else None."""
    if num(v) is not None:
        return num(v)
    m = re.fullmatch(r"([0-9]+)([KMG]?)", v) if isinstance(v, str) else None
    return float(int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]) if m else None


def characterizations(reports):
    """[(report, characterization object)] of the reports that have one."""
    return [(r, r.doc["characterization"]) for r in reports
            if isinstance(r.doc.get("characterization"), dict)]


def char_prefix(chars, report):
    """The report's label and ': ' when several characterizations are drawn together."""
    return f"{report.label}: " if len(chars) > 1 else ""


def store_of(ch):
    """The object store a characterization measured (its `store.backend`, e.g. "s3"), else None
    (a file system)."""
    b = get(ch, "store", "backend")
    return clean(b, 20) if isinstance(b, str) and b else None


def store_path(backend, block_size=None, queue_depth=None):
    """A data path on an object store in its words, the settings not None: "s3, 10M parts, 16 in
    flight" (no O_DIRECT or buffered: neither applies)."""
    return ", ".join(x for x in (
        clean(backend if backend is not None else "?", 20),
        f"{fmt_value('block_size', block_size)} parts" if block_size is not None else None,
        f"{fmt_value('queue_depth', queue_depth)} in flight" if queue_depth is not None else None)
        if x)


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


def shown_lines(s, width=40):
    """shown() of each line of s (tick labels of two lines)."""
    return "\n".join(shown(line, width) for line in str(s).split("\n"))


def ci(stats):
    """(mean, error below, error above) of a stats object ({n, mean, sd, half_width, low,
    high}); the errors are 0 without an interval (fewer than 2 samples); None without a
    mean."""
    m = num(get(stats, "mean"))
    if m is None:
        return None
    lo, hi = num(get(stats, "low")), num(get(stats, "high"))
    return (m, m - lo if lo is not None else 0.0, hi - m if hi is not None else 0.0)


def curve_series(plot, reports, name, finding):
    """[(report, finding object, [(x, save ci, restore ci)] by x, store or None)] of the reports
    with the finding's curve; one that says why it has none is noted."""
    series = []
    for r, ch in characterizations(reports):
        f = get(ch, "findings", finding)
        if "findings" not in ch:
            # Written while the search ran: the stage's probes so far, no knee or best yet.
            xkey, other = (("queue_depth", "block_size") if finding == "queue_depth"
                           else ("block_size", "queue_depth"))
            rows = [dict(e, x=config_bytes(e.get(xkey))) for e in
                    probe_entries(ch, finding) if e.get("members") == "all"]
            if rows:
                f = {"backend": rows[0].get("backend"), "direct": rows[0].get("direct"),
                     other: rows[0].get(other), "curve": rows, "partial": True}
        if not isinstance(f, dict):
            continue
        if not isinstance(f.get("curve"), list):
            if isinstance(f.get("status"), str):
                plot.note(f"{name}: {r.path}: {clean(f['status'])}: "
                          f"{clean(f.get('reason', ''), 200)}")
            continue
        rows = []
        for e in f["curve"]:
            x = num(get(e, "x"))
            s, rr = ci(get(e, "save_GiBps")), ci(get(e, "restore_GiBps"))
            if x is not None and x > 0 and s and rr:
                rows.append((x, s, rr))
        if rows:
            series.append((r, f, sorted(rows, key=lambda t: t[0]), store_of(ch)))
    return series


def curve_label(f, store):
    """A curve's data path (the settings it holds fixed): "posix, O_DIRECT, QD 8", or on an
    object store "s3, 8 in flight"."""
    if store is not None:
        return store_path(f.get("backend", "?"),
                          f["block_size"] if f.get("block_size") is not None else None,
                          f["queue_depth"] if num(f.get("queue_depth")) is not None else None)
    return ", ".join(str(v) for v in (
        clean(f.get("backend", "?"), 20),
        "O_DIRECT" if f.get("direct") is True else "buffered",
        f"bs {fmt_value('block_size', f['block_size'])}" if "block_size" in f else None,
        f"QD {f['queue_depth']}" if num(f.get("queue_depth")) is not None else None)
        if v is not None)


def curve_words(finding, x_label, what, stores):
    """(x axis title, figure title) of a curve: a file system's x_label and what; an object
    store's words alone when every curve is a store's ("part size (s3 multipart upload; log2
    axis; K = KiB, M = MiB)", "characterization: bandwidth vs part size (s3)"), added after
    x_label when file systems share the axis ("... / part size (s3 multipart upload)")."""
    named = sorted({s for s in stores if s is not None})
    if not named:
        return x_label, what
    key, after_name, after_log = CURVE_KEYS[finding]
    words = BACKEND_TERMS[key][2]
    own = f"{words} ({', '.join(named)}{after_name}"
    if None in stores:
        return f"{x_label} / {own})", what
    return (f"{own}; log2 axis{after_log})",
            f"characterization: bandwidth vs {words} ({', '.join(named)})")


def char_curve(plot, reports, name, finding, x_label, x_fmt, knee_key, best_key, knee_text, what):
    """A finding's curve (transfer size, queue depth): mean save and restore GiB/s with their
    95 % intervals against x (log2 axis), the knee and the best marked; an object store's in
    its words (curve_label, curve_words)."""
    series = curve_series(plot, reports, name, finding)
    if not series:
        plot.note(f"skipped {name}: no characterization report has a {finding} curve")
        return False
    x_label, what = curve_words(finding, x_label, what, [t[3] for t in series])
    xs = sorted({x for _, _, rows, _ in series for x, _, _ in rows})
    fig, axes = plot.figure(1, 2, (13, 5.2), sharex=True)
    for k, (r, f, rows, store) in enumerate(series):
        colour = f"C{k % 10}"
        path = curve_label(f, store)
        pre = shown(char_prefix(series, r))
        if f.get("partial"):
            path += " (so far: the search had not ended)"
        label = shown(char_prefix(series, r) + path)
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
    plot.finish(fig, name, what)
    return True


def characterization_transfer_size(plot, reports):
    return char_curve(
        plot, reports,
        "characterization_transfer_size", "transfer_size",
        "block size (bytes per transfer, log2 axis; K = KiB, M = MiB)", fmt_bytes,
        "smallest_within_5pct_bytes", "best_bytes", "smallest within 5 % of the best save",
        "characterization: bandwidth vs transfer size")


def characterization_queue_depth(plot, reports):
    return char_curve(
        plot, reports,
        "characterization_queue_depth", "queue_depth",
        "queue depth (transfers in flight per rank, log2 axis)", lambda v: f"{v:g}",
        "knee", "best", "smallest within 5 % of the best save",
        "characterization: bandwidth vs queue depth")


def char_bars(ax, cats, bars):
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


def characterization_backends(plot, reports):
    """Stage backend: every backend buffered and with O_DIRECT, mean save and restore GiB/s
    with their 95 % intervals; a probe that did not run says why. An object store's backend
    has one bar (no O_DIRECT, no page cache): alone, labelled as a store; beside a file
    system's, in its buffered place, the O_DIRECT one saying it does not apply."""
    name = "characterization_backends"
    chars = characterizations(reports)
    cats, vals, paths, stores, store_cats = [], {}, set(), set(), set()
    for r, ch in chars:
        pts = get(ch, "findings", "backend", "points")
        if "findings" not in ch:
            pts = probe_entries(ch, "backend")  # the search had not ended
        if not isinstance(pts, list):
            continue
        store = store_of(ch)
        for e in pts:
            if not isinstance(e, dict) or not isinstance(e.get("backend"), str):
                continue
            cat = char_prefix(chars, r) + clean(e["backend"], 30)
            if store is not None:
                cat += " (object store)"
                stores.add(store)
                store_cats.add(cat)
            if cat not in cats:
                cats.append(cat)
            d = "direct" if e.get("direct") is True and store is None else "buffered"
            paths.add((fmt_value("block_size", e.get("block_size")), str(e.get("queue_depth")))
                      + ((store,) if store is not None else ()))
            for phase in PHASES:
                got = ci(get(e, f"{phase}_GiBps"))
                why = ": ".join(str(x) for x in (e.get("status") or "no data",
                                                 e.get("reason")) if x)
                vals[(cat, d, phase)] = got if got else clean(why, 60)
                if store is not None:
                    vals[(cat, "direct", phase)] = "O_DIRECT: not applicable (object store)"
    if not cats:
        plot.note(f"skipped {name}: no characterization report has backend probes")
        return False
    only_stores = store_cats == set(cats)
    fig, axes = plot.figure(1, 2, (max(11, 2.2 * len(cats) + 5), 5.2))
    path = paths.copy().pop() if len(paths) == 1 else None
    if path is None:
        setting = ("part/transfer size, requests in flight/QD as in the reports" if stores
                   else "transfer size and queue depth as in the report")
    elif len(path) == 3:  # an object store's
        setting = f"{path[0]} parts, {path[1]} in flight per rank"
    else:
        setting = f"{path[0]} transfers, queue depth {path[1]}"
    for col, phase in enumerate(PHASES):
        ax = axes[0][col]
        char_bars(ax, [shown(c, 40) for c in cats], [
            ("object store requests", "C0", None, [vals.get((c, "buffered", phase)) for c in cats])
        ] if only_stores else [
            ("buffered", "C0", None, [vals.get((c, "buffered", phase)) for c in cats]),
            ("O_DIRECT", "C1", "//", [vals.get((c, "direct", phase)) for c in cats])])
        ax.set_xlabel("backend")
        ax.set_ylabel(f"{phase} bandwidth (GiB/s)")
        ax.set_title(f"{phase}: mean, bars = 95 % interval ({shown(setting, 60)})", fontsize=9)
    axes[0][1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plot.finish(fig, name, f"characterization: backend ({', '.join(sorted(stores))}, an object "
                "store)" if only_stores else "characterization: backend x O_DIRECT")
    return True


def characterization_ceilings(plot, reports):
    """The ceilings at the chosen data path (one rank, one node, all ranks) and, beside
    them, the shared file with regions aligned to 1 MiB against packed regions (the
    misalignment penalty), each mean save and restore GiB/s with 95 % intervals."""
    name = "characterization_ceilings"
    chars = characterizations(reports)
    stores = {store_of(ch) for _, ch in chars if isinstance(get(ch, "findings", "ceilings"), dict)}
    cats, ceil = [], {}
    mis_cats, mis, ratios = [], {}, {}
    for r, ch in chars:
        pre = char_prefix(chars, r)
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
                got = {ph: ci(get(c[key], f"{ph}_GiBps")) for ph in PHASES}
                if any(got.values()):
                    cats.append(cat)
                    ceil[cat] = got
        m = get(ch, "findings", "misalignment")
        if isinstance(m, dict):
            for phase in PHASES:
                cat = f"{pre}{phase}"
                got = {k: ci(get(m, k, f"{phase}_GiBps")) for k in ("aligned", "packed")}
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
        plot.note(f"skipped {name}: no characterization report has ceilings or the "
                  "misalignment finding")
        return False
    panels = [p for p in (("ceilings", cats), ("misalignment", mis_cats)) if p[1]]
    fig, axes = plot.figure(1, len(panels), (6.5 * len(panels) + 1, 5.4))
    for col, (kind, pcats) in enumerate(panels):
        ax = axes[0][col]
        if kind == "ceilings":
            char_bars(ax, [shown_lines(c) for c in pcats], [
                ("save", "C0", None, [ceil[c]["save"] for c in pcats]),
                ("restore", "C1", None, [ceil[c]["restore"] for c in pcats])])
            each = ("one object" if stores and None not in stores else
                    "one file or object" if len(stores) > 1 else "one file")
            ax.set_xlabel(f"who wrote and read at once (the chosen data path, {each} per rank)")
            ax.set_title("ceilings: mean, bars = 95 % interval", fontsize=9)
        else:
            top = char_bars(ax, [shown_lines(c) for c in pcats], [
                ("regions on 1 MiB boundaries", "C2", None, [mis[c]["aligned"] for c in pcats]),
                ("packed regions", "C3", "//", [mis[c]["packed"] for c in pcats])])
            ax.set_ylim(0, top * 1.3)
            ax.set_xlabel("phase (one shared file, the chosen data path)")
            ax.set_title("misalignment penalty: mean, bars = 95 % interval; ratio < 1 is "
                         "the penalty", fontsize=9)
        ax.set_ylabel("bandwidth (GiB/s)")
        ax.legend(fontsize=8, loc="upper left")
    plot.finish(fig, name, "characterization: ceilings" if not mis_cats and None not in stores
                else "characterization: ceilings and misaligned regions")
    return True


def characterization_validation(plot, reports):
    """The recommended config's check run: predicted against measured save and restore time
    (measured: median over the repetitions, whiskers min..max), and beside it the predicted
    times of every candidate layout."""
    name = "characterization_validation"
    rows = []
    for r, ch in characterizations(reports):
        rec = get(ch, "recommendation")
        v = get(rec, "validation")
        if not isinstance(v, dict):
            why = get(rec, "error") or ("the check run was not made (--no-validate)"
                                        if isinstance(rec, dict) else
                                        get(ch, "model_missing") or "no recommendation")
            plot.note(f"{name}: {r.path}: no check run: {clean(why, 200)}")
            continue
        if v.get("status") != "ok":
            plot.note(f"{name}: {r.path}: the check run failed: "
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
            rows.append((r, rec, v, vals, get(ch, "candidates"), store_of(ch)))
    if not rows:
        plot.note(f"skipped {name}: no characterization report has a check run of its "
                  "recommendation")
        return False
    fig, axes = plot.figure(len(rows), 2, (13, 4.8 * len(rows) + 0.6))
    for row, (r, rec, v, vals, cands, store) in enumerate(rows):
        pre = char_prefix(rows, r)
        ax = axes[row][0]
        phases = [ph for ph in PHASES if ph in vals]
        ticks = []
        for ph in phases:
            ratio, within = vals[ph][2], vals[ph][3]
            verdict = {True: " (within 15 %)", False: " (outside 15 %)"}.get(within, "")
            ticks.append(ph if ratio is None else
                         f"{ph}\nmeasured/predicted x{ratio:.2f}{verdict}")
        top = char_bars(ax, ticks, [
            ("predicted", "lightgray", "//", [(vals[ph][0], 0.0, 0.0) for ph in phases]),
            ("measured (median; whiskers min..max)", "C0", None,
             [vals[ph][1] for ph in phases])])
        ax.set_ylim(0, top * 1.3)
        ax.set_ylabel("time (s)")
        cfg = get(rec, "config") if isinstance(get(rec, "config"), dict) else {}
        if store is None:
            path = ", ".join(x for x in (
                clean(rec.get("layout", "?"), 30), clean(cfg.get("backend", "?"), 20),
                "O_DIRECT" if cfg.get("direct") is True else "buffered",
                fmt_value("block_size", cfg.get("block_size")),
                f"QD {cfg.get('queue_depth')}") if x)
        else:  # an object store: part size and requests in flight, no O_DIRECT
            path = clean(rec.get("layout", "?"), 30) + ", " + store_path(
                cfg.get("backend", "?"), cfg.get("block_size"), cfg.get("queue_depth"))
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
    plot.finish(fig, name, "characterization: predicted vs measured")
    return True


def characterization(plot, reports):
    """The characterization figures of the reports that have a `characterization` object;
    a finding that is not the shape the report schema gives is skipped with a note."""
    for r in reports:
        if "characterization" in r.doc and not isinstance(r.doc["characterization"], dict):
            plot.note(f"{r.path}: characterization is not an object; no characterization "
                      "figures from it")
    if not characterizations(reports):
        return
    for fig in (characterization_transfer_size, characterization_queue_depth,
                characterization_backends, characterization_ceilings,
                characterization_validation):
        try:
            fig(plot, reports)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            plot.plt.close("all")
            plot.note(f"skipped {fig.__name__}: the characterization object is not as "
                      f"docs/metrics.md describes it ({type(e).__name__}: {clean(e, 160)})")
