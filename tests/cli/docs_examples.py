#!/usr/bin/env python3
"""Runs the examples of README.md and docs/*.md (issue 17, "docs that are tested").

Every fenced code block is extracted with its file and line and then:

  ```json      a config (an object) goes through `ckptbench validate`; a fragment
               (`"sweep": {...}, "exclude": [...]`) is wrapped as {"model": "tiny", ...} first.
               JSON that is not a config (a report or DLIO excerpt) must be marked, see below;
               a JSON block that neither validates nor is marked fails.
  ```sh, ```bash, ```shell
               every command (continuation lines, pipes and here-documents joined) runs as
               written from a scratch copy of the repository root (build -> the build
               directory; copies of configs/, scripts/, results/), one scratch directory per
               document, so files an earlier line creates (my.json) exist for later lines.
               Rewrites, all printed when a command fails:
                 - `ckptbench run` gets --dry-run (points and bytes, no I/O);
                 - absolute paths under /var/tmp, /tmp, /lustre, /scratch, /gpfs, /mnt, /dev/shm
                   are moved under the scratch directory (targets, outputs, mkdir -p);
                 - mpiexec/mpirun become $CKPT_MPIEXEC with $CKPT_MPIEXEC_FLAGS (minus -n N);
                   placement options for real clusters (--map-by, --hostfile, --host, -H,
                   --npernode, --bind-to) are dropped;
                 - a report scripts/{plot,compare,ckptreport}.py is given that does not exist
                   (REPORT.json, results/before.json, ...) is a copy of a small real report the
                   caller made (--report), and the test says so.
               Commands that need hardware, services or privileges that a CI machine lacks
               (Slurm, Lustre, sudo/apt-get, the build, the fuzzers, the benchmark campaigns)
               are skipped by the printed allowlist SKIP below.
  In a build without a backend (-DCKPT_WITH_HDF5=OFF, -DCKPT_WITH_IO_URING=OFF) a config or a
  command that ckptbench refuses with "cannot be used: not built" (exit 2) is listed as skipped.
  ```console   `$ ` lines are commands, the other lines their output; the output of
               `$ cat FILE` is written to FILE first (a config shown that way is validated).
  ```text, ```output
               sample output or diagrams: not run (listed as skipped).
  ``` (no language)
               run as commands when a line starts with a command this script knows (build/...,
               scripts/..., mpiexec, ...), otherwise treated as text (listed as skipped).

A block is marked by an HTML comment on the nearest non-blank line before its fence:

  <!-- docs-test: not-a-config: REASON -->   JSON that is not a config (must still be JSON)
  <!-- docs-test: synopsis -->              usage line: run with the optional [...] parts removed
  <!-- docs-test: text -->                  not a command, not a config
  <!-- docs-test: skip: REASON -->           not run, for REASON

Blocks of documents that this test must not edit can be marked in MARKS below instead, keyed by
(document, first line of the block).

Prints one line per example ("ok", "skip", "FAIL doc:line: command: exit N: message") and a
summary; exits 1 when an example failed, 0 otherwise.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Where a command starts: the beginning, or after ; & | (, with VAR=value assignments before it.
CMD = r"(^|[;&|(]\s*)([A-Za-z_]\w*=\S*\s+)*"

# Commands not run, with the reason printed for each one skipped (matched against the command's
# words, comments dropped).
SKIP = [
    (r"\b(srun|sbatch|salloc|scancel|squeue)\b", "needs a Slurm cluster"),
    (r"\b(lfs|lctl)\b", "needs a Lustre file system"),
    (CMD + r"(module|spack|ml)\s", "cluster software stack (environment modules / Spack)"),
    (r"\bceph\b", "needs a Ceph cluster"),
    (CMD + r"(sudo|apt-get|apt|dnf|yum|pip3?)\s", "installs packages (root and network)"),
    (r"scripts/setup\.sh", "installs packages with apt-get"),
    (CMD + r"(cmake|ctest|make)\b", "builds or runs the test suite (this test runs inside it)"),
    (r"scripts/(demo|test)\.sh", "builds and runs the demo or the whole test suite (minutes; this test runs inside it)"),
    (r"scripts/build_minimal\.sh", "builds ckptbench once more (minutes; scripts/ci_extra.sh runs it in CI)"),
    (r"scripts/make_results\.sh", "regenerates results/ (long benchmark runs)"),
    (r"scripts/(bench_[\w-]+|ci_extra)\.sh", "benchmark or CI campaign (fio and ckptbench on GiB files, fuzzers)"),
    (CMD + r"fio\s", "fio on large files"),
    (r"fuzz/build\.sh|\bfuzz_\w+", "libFuzzer build or run (clang; scripts/ci_extra.sh runs it in CI)"),
    (CMD + r"scripts/slurm/", "launches on the cluster hosts of a hostfile or batch system"),
    (r"^cd\s+\S+\s*$", "changes to the repository root; the examples already run from a copy of it"),
    (r"\bgit\s+(clone|pull|fetch)\b", "needs the network"),
]

# Marks for blocks of documents this test may not edit: {(doc, first line): (kind, reason)}.
MARKS = {}

# How ckptbench refuses a backend this build leaves out (src/plan/config.cpp): such an example is
# skipped, not failed, in a build configured with -DCKPT_WITH_HDF5=OFF or -DCKPT_WITH_IO_URING=OFF.
NOT_BUILT = re.compile(r"cannot be used: not built \(configure with [^)]*\)")

# First words that make an unlabelled block a command block.
COMMAND_WORDS = re.compile(
    r"^(\$\s+)?([A-Z_][A-Z0-9_]*=\S*\s+)*"
    r"(build/|scripts/|fuzz/|\./|(mpiexec|mpirun|srun|sbatch|cd|mkdir|cp|python3?|cmake|ctest|sudo|apt-get|"
    r"export|ulimit)\s)")

ABS_PATHS = re.compile(r"(?<![\w.$/~-])(/(?:var/tmp|tmp|lustre|scratch|gpfs|mnt|dev/shm))(?=/|\s|$|[\"'])")
LAUNCHER = re.compile(r"(^|[\s;&|(])(mpiexec|mpirun)(?=\s)")
CLUSTER_OPTS = re.compile(r"\s(--map-by|--bind-to|--hostfile|-hostfile|--machinefile|--host|-H|--npernode|-npernode)\s+\S+")
PATH_OPTS = re.compile(r"\s(--target|-t|--output|-o|--csv|--dlio-summary)(?:\s+|=)(\"[^\"]*\"|'[^']*'|[^\s;&|]+)")
CKPT_RUN = re.compile(r"(\bckptbench\s+run)(?=\s|$)")
SCRIPTS = re.compile(r"scripts/(plot|compare|ckptreport)\.py\b")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*([\w-]+)\s*(?::\s*(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+.-]*)\s*(.*)$")


class Block:
    def __init__(self, doc, line, lang, lines, mark):
        self.doc, self.line, self.lang, self.lines, self.mark = doc, line, lang, lines, mark

    def first(self):
        return next((t.strip() for _, t in self.lines if t.strip()), "")


def extract(path, doc):
    """Fenced blocks of one Markdown file: Block(doc, fence line, lang, [(line, text)], mark)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().split("\n")
    blocks, i = [], 0
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start, body = i + 1, []
        i += 1
        while i < len(text):
            c = re.match(r"^\s*(`{3,}|~{3,})\s*$", text[i])
            if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                break
            line = text[i]
            if indent and line.startswith(indent):
                line = line[len(indent):]
            body.append((i + 1, line))
            i += 1
        i += 1
        mark = None
        j = start - 2
        while j >= 0 and not text[j].strip():
            j -= 1
        if j >= 0:
            mm = MARKER.match(text[j])
            if mm:
                mark = (mm.group(1), mm.group(2) or "")
        b = Block(doc, start, lang, body, mark)
        if mark is None and (doc, b.first()) in MARKS:
            b.mark = MARKS[(doc, b.first())]
        blocks.append(b)
    return blocks


def logical_commands(lines):
    """Joins a shell block into commands: [(first line number, command text)]. Comment-only and
    blank lines are dropped; a trailing backslash, |, && or || continues a command; a
    here-document runs to its delimiter."""
    out, cur, cur_line, heredoc = [], [], None, None
    for n, t in lines:
        if heredoc is not None:
            cur.append(t)
            if (t.strip() if heredoc[1] else t) == heredoc[0]:
                heredoc = None
                out.append((cur_line, "\n".join(cur)))
                cur, cur_line = [], None
            continue
        if not cur and (not t.strip() or t.strip().startswith("#")):
            continue
        if not cur:
            cur_line = n
        cur.append(t)
        h = re.search(r"<<(-?)\s*(['\"]?)(\w+)\2", t)
        if h:
            heredoc = (h.group(3), h.group(1) == "-")
            continue
        s = t.rstrip()
        if s.endswith("\\") or s.endswith("|") or s.endswith("&&"):
            continue
        out.append((cur_line, "\n".join(cur)))
        cur, cur_line = [], None
    if cur:
        out.append((cur_line, "\n".join(cur)))
    return out


def one_line(cmd, width=110):
    s = re.sub(r"\\\n\s*", " ", cmd).replace("\n", " ; ")
    s = re.sub(r"\s+", " ", s).strip()
    return s if len(s) <= width else s[: width - 3] + "..."


def strip_optional(cmd):
    """A usage synopsis without its optional parts: '[--format png,svg]' and nested brackets
    removed (brackets inside quotes are kept)."""
    out, depth, quote = [], 0, None
    for i, ch in enumerate(cmd):
        if quote:
            if ch == quote:
                quote = None
            if depth == 0:
                out.append(ch)
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "[" and (i == 0 or cmd[i - 1].isspace() or depth > 0):
            depth += 1
            continue
        elif ch == "]" and depth > 0:
            depth -= 1
            continue
        if depth == 0:
            out.append(ch)
    return re.sub(r"[ \t]+", " ", "".join(out)).strip()


class Runner:
    def __init__(self, args):
        self.a = args
        self.fails, self.oks, self.skips = [], 0, []
        self.lines = None
        flags, skip_next = [], False
        for f in shlex.split(args.mpiexec_flags or ""):
            if skip_next:
                skip_next = False
                continue
            if f in ("-n", "-np", "-c"):
                skip_next = True
                continue
            flags.append(f)
        self.launcher = " ".join(shlex.quote(x) for x in [args.mpiexec] + flags)
        self.env = dict(os.environ)
        self.env.setdefault("USER", "ckpt")
        self.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        self.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        self.env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")

    # ---- reporting: printed at once, or kept in self.lines when documents run side by side
    def say(self, line):
        if self.lines is None:
            print(line, flush=True)
        else:
            self.lines.append(line)

    def ok(self, where, what):
        self.oks += 1
        self.say(f"ok   {where}: {what}")

    def skip(self, where, what, why):
        self.skips.append((where, what, why))
        self.say(f"skip {where}: {what} -- {why}")

    def fail(self, where, what, msg, ran=None):
        self.fails.append(f"{where}: {what}: {msg}")
        self.say(f"FAIL {where}: {what}: {msg}")
        if ran is not None:
            for l in ran.split("\n"):
                self.say(f"       ran: {l}")

    # ---- configs
    def validate(self, where, obj, cwd, what, hint=""):
        fd, path = tempfile.mkstemp(suffix=".json", dir=cwd, prefix=".docs-config-")
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1)
        try:
            p = subprocess.run([self.a.binary, "validate", path], cwd=cwd, env=self.env,
                               capture_output=True, text=True, timeout=self.a.timeout)
            msg = (p.stderr.strip() or p.stdout.strip()).split("\n")[-1]
            if p.returncode == 0:
                self.ok(where, what)
            elif p.returncode == 2 and NOT_BUILT.search(msg):
                self.skip(where, what, f"backend {NOT_BUILT.search(msg).group(0)}")
            else:
                self.fail(where, what, f"ckptbench validate: exit {p.returncode}: {msg}{hint}")
        finally:
            os.unlink(path)

    def json_block(self, b, cwd):
        where = f"{b.doc}:{b.line}"
        text = "\n".join(t for _, t in b.lines)
        kind = b.mark[0] if b.mark else None
        try:
            obj, fragment = json.loads(text), False
        except ValueError:
            try:
                obj, fragment = json.loads("{" + text + "}"), True
            except ValueError as e:
                self.fail(where, "json block", f"not JSON (nor an object's members): {e}")
                return
        if kind == "not-a-config":
            self.skip(where, "json block", f"marked not-a-config: {b.mark[1] or 'no reason given'} (parses as JSON)")
            return
        if kind in ("skip", "text"):
            self.skip(where, "json block", f"marked {kind}: {b.mark[1]}")
            return
        if kind is not None:
            self.fail(where, "json block", f"unknown mark '{kind}'")
            return
        if not isinstance(obj, dict):
            self.fail(where, "json block", "JSON but not an object: mark it <!-- docs-test: not-a-config: why -->")
            return
        if fragment:
            obj = dict({"model": "tiny"}, **obj) if "model" not in obj else obj
            what = "config fragment, validated as {\"model\": \"tiny\", ...}"
        else:
            what = "config"
        self.validate(where, obj, cwd, what,
                      " (if the block is not a config, put <!-- docs-test: not-a-config: WHY --> before it)")

    # ---- commands
    def rewrite(self, cmd, cwd):
        fs = os.path.join(cwd, "fs")
        r = ABS_PATHS.sub(lambda m: fs + m.group(1), cmd)
        if LAUNCHER.search(r):
            r = LAUNCHER.sub(lambda m: m.group(1) + self.launcher, r)
            r = CLUSTER_OPTS.sub("", r)
        if CKPT_RUN.search(r) and "--dry-run" not in r:
            r = CKPT_RUN.sub(r"\1 --dry-run", r)
        return r

    def parents_exist(self, where, show, ran, cwd):
        """--dry-run does not look at the target or the output; a real run refuses a target or an
        output whose parent directory is missing (exit 2). Checked here for local paths (relative,
        /tmp, /var/tmp, /dev/shm); a cluster file system's directories are the user's."""
        fs = os.path.join(cwd, "fs")
        for opt, val in PATH_OPTS.findall(ran):
            val = val.strip("'\"")
            if "$" in val or "`" in val or re.match(r"^[a-z][a-z0-9+.-]*://", val):
                continue  # a variable, a command, or a URL (an object store's s3:// target)
            path = val if os.path.isabs(val) else os.path.join(cwd, val)
            if os.path.isabs(val) and not any(val.startswith(os.path.join(fs, d) + "/") for d in ("tmp", "var/tmp", "dev/shm")):
                continue
            parent = os.path.dirname(os.path.normpath(path))
            if not os.path.isdir(parent):
                def doc_path(p):  # the path as the document wrote it
                    return "/" + os.path.relpath(p, fs) if p.startswith(fs + "/") else os.path.relpath(p, cwd)
                self.fail(where, show, f"{opt} {doc_path(os.path.normpath(path))}: the directory "
                          f"{doc_path(parent)} does not exist at this point of the document; "
                          "a real run exits 2 (create it in the example first)", ran)
                return False
        return True

    def provide_reports(self, where, cmd, cwd):
        """Report arguments of the report scripts that do not exist become copies of --report."""
        try:
            words = shlex.split(cmd, comments=True)
        except ValueError:
            return
        prev = ""
        for w in words:
            if w.endswith(".json") and prev not in ("--reference",) and not w.startswith("-"):
                p = os.path.join(cwd, w)
                if not os.path.exists(p):
                    os.makedirs(os.path.dirname(p) or cwd, exist_ok=True)
                    shutil.copyfile(self.a.report, p)
                    self.say(f"note {where}: {w} does not exist here: a copy of the test's small real report stands in")
            prev = w

    def command(self, where, cmd, cwd):
        show = one_line(cmd)
        try:  # match the skip list against the words of the command, comments dropped
            words = " ".join(shlex.split(cmd, comments=True))
        except ValueError:
            words = cmd
        for pat, why in SKIP:
            if re.search(pat, words, re.M):
                self.skip(where, show, why)
                return
        if re.search(r"scripts/plot\.py", cmd) and not self.a.mpl_python:
            self.skip(where, show, "no python3 with matplotlib here (scripts/setup.sh --with-plots)")
            return
        if SCRIPTS.search(cmd):
            self.provide_reports(where, cmd, cwd)
        ran = self.rewrite(cmd, cwd)
        for d in ("tmp", "var/tmp", "dev/shm"):  # what exists on any machine
            os.makedirs(os.path.join(cwd, "fs", d), exist_ok=True)
        if CKPT_RUN.search(ran) and not self.parents_exist(where, show, ran, cwd):
            return
        t0 = time.monotonic()
        try:
            p = subprocess.Popen(["bash", "-o", "pipefail", "-c", ran], cwd=cwd, env=self.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, text=True, start_new_session=True)
            try:
                out, _ = p.communicate(timeout=self.a.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                self.fail(where, show, f"timed out after {self.a.timeout} s", ran if ran != cmd else None)
                return
        except OSError as e:
            self.fail(where, show, str(e))
            return
        dt = time.monotonic() - t0
        if p.returncode == 2 and NOT_BUILT.search(out):
            self.skip(where, show, f"backend {NOT_BUILT.search(out).group(0)}")
        elif p.returncode != 0:
            lines = [l for l in out.strip().split("\n") if l.strip()]
            errs = [l for l in lines if re.search(r"error|Error|ERROR|No such|not found|usage|Usage", l)]
            msg = " | ".join((errs or lines)[-3:]) if lines else "(no output)"
            self.fail(where, show, f"exit {p.returncode}: {msg}", ran)
        else:
            self.ok(where, f"{show} ({dt:.1f} s)")

    def shell_block(self, b, cwd, synopsis=False):
        for n, cmd in logical_commands(b.lines):
            where = f"{b.doc}:{n}"
            if synopsis:
                short = strip_optional(cmd)
                self.say(f"note {where}: synopsis '{one_line(cmd)}' runs as '{one_line(short)}'")
                cmd = short
            self.command(where, cmd, cwd)

    def console_block(self, b, cwd):
        cmds, cur = [], None
        for n, t in b.lines:
            if t.startswith("$ ") or t == "$":
                cur = [n, [t[2:]], []]
                cmds.append(cur)
            elif cur is not None and cur[1][-1].rstrip().endswith("\\") and not cur[2]:
                cur[1].append(t)
            elif cur is not None:
                cur[2].append(t)
            elif t.strip():
                self.fail(f"{b.doc}:{n}", "console block", "output before the first '$ ' command")
                return
        if not cmds:
            self.fail(f"{b.doc}:{b.line}", "console block", "no '$ ' command line")
            return
        for n, cmd_lines, output in cmds:
            cmd = "\n".join(cmd_lines)
            m = re.match(r"^\s*cat\s+([\w./-]+)\s*$", cmd)
            if m and output:
                path = os.path.join(cwd, m.group(1))
                os.makedirs(os.path.dirname(path) or cwd, exist_ok=True)
                content = "\n".join(output) + "\n"
                with open(path, "w") as f:
                    f.write(content)
                self.say(f"note {b.doc}:{n}: wrote {m.group(1)} from the output shown for '{cmd}'")
                if m.group(1).endswith(".json"):
                    try:
                        obj = json.loads(content)
                    except ValueError as e:
                        self.fail(f"{b.doc}:{n}", f"{m.group(1)} as shown", f"not JSON: {e}")
                        continue
                    self.validate(f"{b.doc}:{n + 1}", obj, cwd, f"config {m.group(1)} as shown")
            self.command(f"{b.doc}:{n}", cmd, cwd)

    def block(self, b, cwd):
        where = f"{b.doc}:{b.line}"
        kind, reason = b.mark if b.mark else (None, "")
        lang = b.lang
        if kind in ("skip", "text"):
            self.skip(where, f"```{lang} block '{one_line(b.first(), 60)}'", f"marked {kind}{': ' + reason if reason else ''}")
            return
        if lang in ("json", "json5", "jsonc"):
            self.json_block(b, cwd)
        elif kind == "not-a-config":
            self.fail(where, f"```{lang} block", "marked not-a-config but not a ```json block")
        elif lang in ("sh", "bash", "shell", "zsh"):
            self.shell_block(b, cwd, synopsis=(kind == "synopsis"))
        elif lang == "console":
            self.console_block(b, cwd)
        elif lang == "" and kind == "synopsis":
            self.shell_block(b, cwd, synopsis=True)
        elif lang == "":
            if any(COMMAND_WORDS.match(t.strip()) for _, t in b.lines):
                self.say(f"note {where}: unlabelled block starts with a command: run as ```sh")
                self.shell_block(b, cwd)
            else:
                self.skip(where, f"unlabelled block '{one_line(b.first(), 60)}'", "no command line in it: sample output or a diagram (label it ```text)")
        elif lang in ("text", "txt", "output", "plain", "plaintext"):
            self.skip(where, f"```{lang} block '{one_line(b.first(), 60)}'", "sample output or a diagram")
        elif kind is not None:
            self.fail(where, f"```{lang} block", f"unknown mark '{kind}'")
        else:
            self.skip(where, f"```{lang} block '{one_line(b.first(), 60)}'", f"language '{lang}' is not run by this test")


def scratch_dir(args, doc):
    """A copy of the repository root for one document: build -> the binary's directory, copies
    of configs/, scripts/, results/."""
    d = os.path.join(args.work, re.sub(r"[^\w.-]", "_", doc))
    os.makedirs(d)
    os.symlink(os.path.dirname(os.path.abspath(args.binary)), os.path.join(d, "build"))
    for sub in ("configs", "scripts", "results"):
        src = os.path.join(args.source, sub)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(d, sub), symlinks=True)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default=os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
    ap.add_argument("--binary", help="the ckptbench binary (build/ in the examples points to its directory)")
    ap.add_argument("--work", help="an empty scratch directory")
    ap.add_argument("--report", help="a small real ckptbench report for the report scripts")
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--mpiexec-flags", default="--oversubscribe")
    ap.add_argument("--mpl-python", default="", help="a python3 with matplotlib; empty: plot.py examples are skipped")
    ap.add_argument("--timeout", type=int, default=90, help="seconds per command")
    ap.add_argument("--jobs", type=int, default=1,
                    help="documents run side by side (each has its own scratch directory); the log stays in document order")
    ap.add_argument("--list", action="store_true", help="list the blocks and how they are treated, run nothing")
    ap.add_argument("docs", nargs="*", help="Markdown files relative to --source (default README.md docs/*.md)")
    a = ap.parse_args()

    docs = a.docs or (["README.md"] + sorted(os.path.relpath(p, a.source) for p in glob.glob(os.path.join(a.source, "docs", "*.md"))))
    blocks = {d: extract(os.path.join(a.source, d), d) for d in docs}
    if a.list:
        for d in docs:
            for b in blocks[d]:
                mark = f" [{b.mark[0]}{': ' + b.mark[1] if b.mark[1] else ''}]" if b.mark else ""
                print(f"{d}:{b.line}: ```{b.lang or '(none)'}{mark} {one_line(b.first(), 70)}")
        return 0
    if not (a.binary and a.work and a.report):
        ap.error("--binary, --work and --report are required unless --list")

    print("commands run from a scratch copy of the repository root per document; `ckptbench run` gets --dry-run;")
    print("absolute /var/tmp, /tmp, /lustre, /scratch, /gpfs, /mnt, /dev/shm paths are moved under it;")
    print(f"mpiexec/mpirun -> {Runner(a).launcher} (cluster placement options dropped); skipped commands:")
    for pat, why in SKIP:
        print(f"     /{pat}/  {why}")
    r = Runner(a)
    t0 = time.monotonic()

    def run_doc(d, runner):
        cwd = scratch_dir(a, d)
        for b in blocks[d]:
            runner.block(b, cwd)
        return runner

    if a.jobs <= 1:
        for d in docs:
            run_doc(d, r)
    else:
        # Documents share nothing (one scratch directory each, absolute paths moved under it), so
        # they run a.jobs at a time, the likely longest first (a guess from their command lines:
        # characterize runs take longest, then plot.py); each document's lines are printed
        # together, in document order.
        def cost(d):
            lines = [t for b in blocks[d] if b.lang in ("sh", "bash", "shell", "zsh", "console", "")
                     for _, t in b.lines]
            return sum(1 + 10 * ("characterize" in t) + 5 * ("plot.py" in t) for t in lines)
        runners = {d: Runner(a) for d in docs}
        for x in runners.values():
            x.lines = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = {d: pool.submit(run_doc, d, runners[d])
                       for d in sorted(docs, key=cost, reverse=True)}
            for d in docs:
                futures[d].result()
                for line in runners[d].lines:
                    print(line, flush=True)
                r.oks += runners[d].oks
                r.skips += runners[d].skips
                r.fails += runners[d].fails
    total = sum(len(v) for v in blocks.values())
    if total < 10:
        r.fail("docs", "extraction", f"only {total} fenced block(s) found in {len(docs)} document(s): is the parser broken?")
    print(f"docs examples: {len(docs)} documents, {total} blocks; {r.oks} ok, {len(r.skips)} skipped, "
          f"{len(r.fails)} failed ({time.monotonic() - t0:.0f} s)")
    if r.fails:
        print("failed:")
        for f in r.fails:
            print(f"  {f}")
    return 1 if r.fails else 0


if __name__ == "__main__":
    sys.exit(main())
