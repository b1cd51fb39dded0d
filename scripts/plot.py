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
  requests                  an object store's requests (points whose phases have `requests`,
                            backend s3): per point and phase, each request kind's p50 latency
                            (bar), p99 (whisker) and count; retries and throttled answers
                            where not 0
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
A characterization of an object store (`characterization.store`, backend s3) says it in the
store's words: part size for block size, requests in flight per rank for queue depth, one bar of
object-store requests (no O_DIRECT), one object per rank.
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
A point whose backend means something else by block_size or queue_depth (its settings.backend
names part_size_bytes, requests_in_flight: the s3 backend) is labelled in its words, e.g.
"s3 (ckpt@127.0.0.1:7480), part=8M, inflight=8" against a file backend's "posix, bs=8M, QD=8",
a restore without a cache "no cache (object store)"; the block-size and queue-depth axes add
"/ part size (s3)", "/ requests in flight per rank (s3)" when such points are drawn on them.
Several reports are pooled: a point's series label then includes the report's name
(config.name, else the file name). Python 3 and matplotlib (Debian: python3-matplotlib, or
scripts/setup.sh --with-plots); when the python3 running it lacks matplotlib and
/usr/bin/python3 has it, the script re-runs itself with /usr/bin/python3.
The figures are drawn by scripts/plot_run.py (from any report's points) and
scripts/plot_char.py (from a characterization), in the look of scripts/plotstyle.py, from the
points as scripts/plotdata.py holds them; this file is the command line.
"""

import argparse
import os
import sys

try:
    from ckptinput import PathError, check_output_dir, make_dirs, remove_dirs
    from ckptreport import ReportError, get, load_reference, load_report, require_module
    import plot_char
    import plot_run
    from plotdata import Report, distinct_labels
    from plotstyle import Canvas, clean
except ImportError:
    print("plot.py: error: needs ckptreport.py, ckptinput.py, plotdata.py, plotstyle.py, "
          "plot_run.py and plot_char.py from the same directory (scripts/); run scripts/plot.py "
          "from the ckptbench source tree", file=sys.stderr)
    sys.exit(2)


def read_reports(paths):
    """(reports, skipped): the inputs that are reports, and what is wrong with the others."""
    reports, skipped = [], []
    for path in paths:
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
    return reports, skipped


def read_references(paths):
    """The reference lines of the --reference files; one that is not fio's or IOR's output is
    skipped with a warning."""
    refs = []
    for path in paths:
        try:
            lines = load_reference(path)
        except ReportError as e:
            print(f"plot.py: warning: --reference: skipping {e}", file=sys.stderr)
            continue
        for line in lines:
            print(f"plot.py: reference {line['label']} ({path})")
        refs.extend(lines)
    return refs


def draw(reports, refs, out, formats):
    """Every figure the reports have data for, in out; returns the files written."""
    names = [r.label for r in reports]
    plot = Canvas(" vs ".join(names) if len(names) <= 3 else f"{len(names)} reports", refs, out,
                  formats)
    plot_run.draw(plot, [p for r in reports for p in r.points])
    plot_char.characterization(plot, reports)
    return plot.written


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
    reports, skipped = read_reports(a.reports)
    if not reports and len(skipped) == 1:  # one line: what is wrong with the only input
        print(f"plot.py: error: {skipped[0]}; none of the inputs is a ckptbench report",
              file=sys.stderr)
        return 2
    for msg in skipped:
        print(f"plot.py: warning: skipping {msg}", file=sys.stderr)
    if not reports:
        print("plot.py: error: none of the inputs is a ckptbench report", file=sys.stderr)
        return 2
    refs = read_references(a.reference)
    distinct_labels(reports)
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
        written = draw(reports, refs, a.out, formats)
    except (PathError, OSError) as e:
        if not os.path.isdir(a.out) or not os.listdir(a.out):
            remove_dirs(made)  # nothing written: leave nothing behind
        msg = e if isinstance(e, PathError) else f"--out {a.out}: cannot create it or write " \
            f"in it ({e.strerror or e})"
        print(f"plot.py: error: {msg}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
