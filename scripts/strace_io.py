#!/usr/bin/env python3
"""strace_io.py - what a checkpoint's processes asked of the file system, from `strace -f -y`.

Summarises the file I/O under one directory (the checkpoint's point directory) of a traced run -
the real framework (scripts/realfw.py) or ckptbench's replay - and compares two of them:

  strace -f -y -e trace=%file,%desc -o TRACE COMMAND...
  scripts/strace_io.py summary TRACE DIR             # JSON: files, requests, histograms, syncs
  scripts/strace_io.py compare REAL DIR_REAL REPLAY DIR_REPLAY [--tolerance 0.10]
                                [--size-slack BYTES] [--expect-fsync N] [--expect-rename]
                                [--estimated FILE ...] [--after-commit FILE ...]

`compare` checks what tests/cli/test_realfw.sh asserts and prints one line per check:
  - the same file names (relative to each directory) and the same count;
  - each file's size equal up to --size-slack bytes (the framework's framing estimate), except
    the --estimated files (e.g. Megatron's common.pt: the replay writes an estimated size, the
    real runner a stand-in state): those are only checked to exist on both sides (the names
    check), their sizes printed, and left out of the bytes-written check;
  - write and read request counts within the tolerance, and their size histograms (floor(log2)
    buckets) within it: half the sum of |a_k - b_k| over the larger count;
  - the bytes written equal up to the slack summed over files, the bytes read within tolerance;
  - the same files fsynced and renamed; a renamed file (DCP's .metadata.tmp) written after every
    other file's last write, on both sides - except the --after-commit files, which must be
    written after it on both sides (Megatron's metadata.json and tracker, written once DCP's
    save has returned);
  - the same set of files the reading processes read first (DCP: .metadata, on every rank).
It exits 1 if a check fails. Only the standard library is used.
"""

import argparse
import json
import math
import os
import re
import sys
from collections import Counter

WRITES = {"write", "writev", "pwrite64", "pwritev", "pwritev2"}
READS = {"read", "readv", "pread64", "preadv", "preadv2"}
SYNCS = {"fsync", "fdatasync"}

# 1234 writev(3</a/b/c>, ...) = 1143   (strace -f -y; a "<... resumed>" line is joined first)
LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)")
FD = re.compile(r"^-?\d+<([^>]*)>")


def join_resumed(lines):
    """strace -f splits a call interrupted by another process's into '<unfinished ...>' and
    '<... NAME resumed>': put them back together per pid."""
    pending = {}
    for ln in lines:
        m = re.match(r"^(\d+)\s+(.*) <unfinished \.\.\.>$", ln)
        if m:
            pending[m.group(1)] = m.group(2)
            continue
        m = re.match(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$", ln)
        if m and m.group(1) in pending:
            yield f"{m.group(1)} {pending.pop(m.group(1))}{m.group(2)}"
            continue
        yield ln


def summary(trace, root):
    root = os.path.realpath(root).rstrip("/") + "/"
    files = {}
    events = []  # (pid, kind, relpath) for fsync/rename, in trace order
    writes, reads = [], []
    wbytes = rbytes = 0
    order = []  # (pid, "w"|"r", relpath) of every transfer, in trace order
    with open(trace, errors="replace") as fh:
        for ln in join_resumed(fh.read().splitlines()):
            m = LINE.match(ln)
            if not m:
                continue
            pid, call, args, ret = m.groups()
            if call == "rename" or call == "renameat" or call == "renameat2":
                paths = re.findall(r'"([^"]*)"', args)
                if call != "rename":
                    # renameat(dirfd</dir>, "name", dirfd</dir>, "name"): names relative to the
                    # directories strace -y shows.
                    pairs = re.findall(r'(?:\d+|AT_FDCWD)(?:<([^>]*)>)?,\s*"([^"]*)"', args)
                    paths = [n if n.startswith("/") or not d else os.path.join(d, n)
                             for d, n in pairs]
                if len(paths) == 2 and ret == "0" and any(p.startswith(root) for p in paths):
                    a, b = (os.path.relpath(p, root) if p.startswith(root) else p for p in paths)
                    events.append((pid, "rename", f"{a}->{b}"))
                continue
            fm = FD.match(args)
            if not fm or not fm.group(1).startswith(root):
                continue
            rel = fm.group(1)[len(root):]
            n = int(ret) if ret != "?" else -1
            if call in (WRITES | READS) and n > 0:
                order.append((pid, "w" if call in WRITES else "r", rel))
            if call in WRITES and n > 0:
                writes.append(n)
                wbytes += n
                files.setdefault(rel, {"written": 0, "read": 0})["written"] += n
            elif call in READS and n > 0:
                reads.append(n)
                rbytes += n
                files.setdefault(rel, {"written": 0, "read": 0})["read"] += n
            elif call in SYNCS and n == 0:
                events.append((pid, "fsync", rel))
    sizes = {}
    for rel in files:
        p = os.path.join(root, rel)
        if os.path.isfile(p):
            sizes[rel] = os.path.getsize(p)
    # Files that exist under root (written before the trace or renamed into place) count too.
    for d, _, fs in os.walk(root):
        for f in fs:
            rel = os.path.relpath(os.path.join(d, f), root)
            sizes.setdefault(rel, os.path.getsize(os.path.join(d, f)))

    def hist(v):
        h = {}
        for n in v:
            k = f"2^{int(math.log2(n))}"
            h[k] = h.get(k, 0) + 1
        return dict(sorted(h.items(), key=lambda kv: int(kv[0][2:])))

    # The order that matters for a commit record: was each renamed file written after every
    # other file's last write, and which file does each reading process read first.
    last_write = {}
    first_write = {}
    for i, (_, kind, rel) in enumerate(order):
        if kind == "w":
            last_write[rel] = i
            first_write.setdefault(rel, i)
    commit_last = {}
    after_commit = {}  # renamed file -> the other files with a write after its first write
    for e in events:
        if e[1] == "rename":
            a = e[2].split("->")[0]
            others = [i for rel, i in last_write.items() if rel != a]
            commit_last[a] = a in first_write and all(i < first_write[a] for i in others)
            after_commit[a] = (sorted(rel for rel, i in last_write.items()
                                      if rel != a and i > first_write[a])
                               if a in first_write else None)
    first_read = {}
    for pid, kind, rel in order:
        if kind == "r":
            first_read.setdefault(pid, rel)

    return {
        "dir": root,
        "commit_last": commit_last,
        "after_commit": after_commit,
        "first_reads": sorted(set(first_read.values())),
        "files": len(sizes),
        "sizes": dict(sorted(sizes.items())),
        "writes": len(writes), "write_bytes": wbytes, "write_histogram": hist(writes),
        "file_write_bytes": {rel: v["written"] for rel, v in sorted(files.items())},
        "reads": len(reads), "read_bytes": rbytes, "read_histogram": hist(reads),
        "syncs": [e[2] for e in events if e[1] == "fsync"],
        "renames": [e[2] for e in events if e[1] == "rename"],
    }


def hist_distance(a, b):
    keys = set(a) | set(b)
    diff = sum(abs(a.get(k, 0) - b.get(k, 0)) for k in keys)
    return diff / 2 / max(1, sum(a.values()), sum(b.values()))


def compare(real, replay, tol, slack, expect_fsync, expect_rename, estimated=(),
            after_commit=()):
    ok = True
    estimated = set(estimated)

    def check(cond, what):
        nonlocal ok
        print(("ok    " if cond else "FAIL  ") + what)
        ok &= bool(cond)

    rn, pn = set(real["sizes"]), set(replay["sizes"])
    check(rn == pn, f"file names: {len(rn)} real, {len(pn)} replay"
          + ("" if rn == pn else f"; only real: {sorted(rn - pn)[:5]}, only replay: {sorted(pn - rn)[:5]}"))
    worst = max((abs(real["sizes"][f] - replay["sizes"][f]) for f in (rn & pn) - estimated),
                default=0)
    check(worst <= slack, f"file sizes: largest difference {worst} bytes (allowed {slack})"
          + (f", estimated files left out" if estimated else ""))
    if estimated:
        sizes = ", ".join(f"{f} {real['sizes'].get(f, '-')} real, {replay['sizes'].get(f, '-')} "
                          "replay" for f in sorted(estimated))
        check(estimated <= rn & pn, f"estimated files present on both sides ({sizes})")
    for kind in ("write", "read"):
        a, b = real[kind + "s"], replay[kind + "s"]
        rel = abs(a - b) / max(1, a)
        check(rel <= tol, f"{kind} requests: {a} real, {b} replay ({rel:.1%} apart, allowed {tol:.0%})")
        d = hist_distance(real[kind + "_histogram"], replay[kind + "_histogram"])
        check(d <= tol, f"{kind} size histograms {d:.1%} apart (allowed {tol:.0%}): real "
              f"{real[kind + '_histogram']}, replay {replay[kind + '_histogram']}")
    wa, wb = real["write_bytes"], replay["write_bytes"]
    if estimated:  # the estimated files' bytes are not the real ones by design
        wa -= sum(real["file_write_bytes"].get(f, 0) for f in estimated)
        wb -= sum(replay["file_write_bytes"].get(f, 0) for f in estimated)
    check(abs(wa - wb) <= slack * max(1, len(rn - estimated)),
          f"bytes written: {wa} real, {wb} replay"
          + (" (estimated files left out)" if estimated else ""))
    ra, rb = real["read_bytes"], replay["read_bytes"]
    check(abs(ra - rb) <= tol * max(1, ra), f"bytes read: {ra} real, {rb} replay")
    sa, sb = sorted(real["syncs"]), sorted(replay["syncs"])
    only_real = sorted((Counter(sa) - Counter(sb)).elements())
    only_replay = sorted((Counter(sb) - Counter(sa)).elements())
    check(sa == sb, f"fsyncs: {len(sa)} real, {len(sb)} replay"
          + ("" if sa == sb else f" (only real: {only_real[:6]}, only replay: {only_replay[:6]})"))
    if expect_fsync is not None:
        check(len(sa) == expect_fsync, f"fsyncs: {len(sa)} real, expected {expect_fsync}")
    check(sorted(real["renames"]) == sorted(replay["renames"]),
          f"renames: real {real['renames']}, replay {replay['renames']}")
    if (real["renames"] or replay["renames"]) and not after_commit:
        check(real["commit_last"] == replay["commit_last"] and all(real["commit_last"].values()),
              f"renamed files written after every other file: real {real['commit_last']}, "
              f"replay {replay['commit_last']}")
    elif real["renames"] or replay["renames"]:
        want = sorted(after_commit)
        check(real["after_commit"] == replay["after_commit"]
              and all(v == want for v in real["after_commit"].values()),
              f"renamed files written after every other file but {want}, which follow: real "
              f"{real['after_commit']}, replay {replay['after_commit']}")
    check(real["first_reads"] == replay["first_reads"],
          f"first file each process reads: real {real['first_reads'][:6]}, "
          f"replay {replay['first_reads'][:6]}")
    if expect_rename:
        check(len(real["renames"]) > 0, "the real framework renamed a file into place")
    return ok


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary")
    s.add_argument("trace")
    s.add_argument("dir")
    c = sub.add_parser("compare")
    c.add_argument("real_trace")
    c.add_argument("real_dir")
    c.add_argument("replay_trace")
    c.add_argument("replay_dir")
    c.add_argument("--tolerance", type=float, default=0.10)
    c.add_argument("--size-slack", type=int, default=4096)
    c.add_argument("--expect-fsync", type=int)
    c.add_argument("--expect-rename", action="store_true")
    c.add_argument("--estimated", action="append", default=[], metavar="FILE",
                   help="a file (relative to the directories) whose size is an estimate: only "
                        "its presence is compared (repeatable)")
    c.add_argument("--after-commit", action="append", default=[], metavar="FILE",
                   help="a file written after the renamed commit record on both sides "
                        "(repeatable)")
    c.add_argument("--json", help="write both summaries to this file")
    a = ap.parse_args(argv)
    if a.cmd == "summary":
        json.dump(summary(a.trace, a.dir), sys.stdout, indent=1)
        print()
        return 0
    real = summary(a.real_trace, a.real_dir)
    replay = summary(a.replay_trace, a.replay_dir)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"real": real, "replay": replay}, fh, indent=1)
    return 0 if compare(real, replay, a.tolerance, a.size_slack, a.expect_fsync,
                        a.expect_rename, a.estimated, a.after_commit) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
