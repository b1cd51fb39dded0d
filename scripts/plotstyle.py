"""The look the figures of scripts/plot.py share.

Text drawn from a report (cut to LABEL_WIDTH characters, "$" escaped), sizes and config values
as labels ("64K", "O_DIRECT", "QD=4"; a setting a backend names its own way in its words:
"part=8M", "inflight=8", also for scripts/compare.py), and Canvas: matplotlib set up once, a
figure's grid of axes, its title and its files (written through a temporary file renamed into
place), heatmaps with a value in each cell, and the fio/IOR reference bandwidths as labelled
lines. Standard library only until a Canvas is made (compare.py imports this file).
"""

import os

from ckptinput import write_atomic
from ckptreport import get, num, short

# Rows of the tall figures (rank_times, latency heatmap, bandwidth_points).
MAX_ROWS = 80
# Short names for legend labels.
SHORT = {"queue_depth": "QD", "block_size": "bs", "parallelism.tp": "TP", "parallelism.pp": "PP",
         "parallelism.dp": "DP", "parallelism.zero_stage": "ZeRO", "stripe_count": "stripes",
         "stripe_size": "stripe", "chunk_size": "chunk", "ranks_per_file": "ranks/file"}
SIZE_KEYS = ("block_size", "stripe_size", "chunk_size", "align")
# Characters of a label, legend entry or tick label drawn from a report (longer text is cut, an
# ellipsis marking the cut: a 100,000-character value would overflow matplotlib's rasteriser).
LABEL_WIDTH = 80
# Config keys a backend means something else by, found by the setting its report names in
# settings.backend (the s3 backend: block_size is the multipart part size, queue_depth the
# requests in flight per rank; docs/backend-s3.md): {config key: (settings.backend key, label,
# axis words)}. A point whose backend reports none of them keeps "bs=", "QD=".
BACKEND_TERMS = {"block_size": ("part_size_bytes", "part", "part size"),
                 "queue_depth": ("requests_in_flight", "inflight", "requests in flight per rank")}
# The request kinds of a phase's `requests` in the order docs/metrics.md lists them (a kind not
# listed follows, by name).
REQUEST_KINDS = ("put", "create_upload", "part", "complete", "abort", "get", "head", "list",
                 "delete")


# ---------------------------------------------------------------- text

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
    """A point's values of keys as a legend entry ("posix, O_DIRECT, QD=4"; "s3
    (ckpt@127.0.0.1:7480), part=8M": a key in point.words is written as its backend says it);
    point: anything with value(key) and words (plotdata.Point)."""
    parts = []
    for k in keys:
        v = point.value(k)
        if k in point.words:
            parts.append(short(point.words[k]))
        elif k in ("report", "backend", "layout", "direct", "model.name"):
            parts.append(short(fmt_value(k, v)))
        else:
            parts.append(f"{short(SHORT.get(k, k.split('.')[-1]), 30)}={short(fmt_value(k, v))}")
    return shown(", ".join(parts)) if parts else "all points"


# ---------------------------------------------------------------- a backend's own words

def backend_terms(raw):
    """{config key: (label, axis words, value)} for the keys the raw point's backend means
    otherwise (BACKEND_TERMS whose setting its settings.backend reports)."""
    s = get(raw, "settings", "backend")
    if not isinstance(s, dict):
        return {}
    return {k: (label, words, s[key]) for k, (key, label, words) in BACKEND_TERMS.items()
            if num(s.get(key)) is not None}


def backend_words(raw):
    """{config key: label text} for what the raw point's backend says its own way: the settings
    of backend_terms ("part=8M", "inflight=8"); the backend with the bucket and endpoint its
    settings.backend names ("s3 (ckpt@127.0.0.1:7480)"); cache and direct where its repetitions
    say no cache applies (cache.method "not applicable": "no cache (object store)", never a
    cache state). Empty for a file backend."""
    out = {k: f"{label}={fmt_value(k, v)}" for k, (label, _, v) in backend_terms(raw).items()}
    s = get(raw, "settings", "backend")
    s = s if isinstance(s, dict) else {}
    bucket, endpoint, name = s.get("bucket"), s.get("endpoint"), get(raw, "config", "backend")
    store = isinstance(bucket, str) and bucket != ""
    if store and isinstance(name, str):
        host = endpoint.split("://", 1)[-1].rstrip("/") if isinstance(endpoint, str) else ""
        where = clean(bucket, 30) + (f"@{clean(host, 40)}" if host else "")
        out["backend"] = f"{clean(name, 30)} ({where})"
    reps = get(raw, "repetitions", default=[])
    if isinstance(reps, list) and any(get(r, "cache", "method") == "not applicable"
                                      for r in reps):
        out["cache"] = out["direct"] = "no cache (object store)" if store else "no cache"
    return out


def axis_title(what, unit, key, points):
    """An axis title "what (unit)" for config key, followed by what the points' backends that
    mean another thing by key call it: "block size (bytes per transfer) / part size (s3)";
    points: plotdata.Point (terms, value)."""
    own = {}
    for p in points:
        t = p.terms.get(key)
        if t:
            own.setdefault(t[1], set()).add(clean(p.value("backend") or "?", 20))
    return f"{what} ({unit})" + "".join(f" / {w} ({', '.join(sorted(b))})"
                                        for w, b in sorted(own.items()))


def request_kinds(names):
    """Request kinds in REQUEST_KINDS' order, any other after them by name."""
    known = [k for k in REQUEST_KINDS if k in names]
    return known + sorted(str(k) for k in names if k not in REQUEST_KINDS)


# ---------------------------------------------------------------- the canvas

class Canvas:
    """Where the figures are drawn and written: matplotlib (Agg), the reference lines (refs:
    ckptreport.load_reference's), the --out directory, the formats, the files written so far
    and the title every figure starts with."""

    def __init__(self, title, refs, out, formats):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm, Normalize
        self.plt = plt
        self.norms = {True: LogNorm, False: Normalize}
        self.title = title
        self.refs = refs
        self.out = out
        self.formats = formats
        self.written = []

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
