#!/usr/bin/python3
"""realfw.py - the real-framework runner of ckptbench.

ckptbench *emulates* the I/O of an LLM checkpoint.  This runner takes the same checkpoint
(one ckptbench config, one point) and saves and restores it with the REAL PyTorch framework,
so the emulation can be compared with what PyTorch actually does:

  torch-save  every rank torch.save()s a dict of its tensors to each file the plan gives it
              (the DeepSpeed/Megatron style: one file per process and shard) and torch.load()s
              them back;
  dcp         torch.distributed.checkpoint (torch.distributed._shard.checkpoint in 1.13):
              save_state_dict() with FileSystemWriter, load_state_dict() with FileSystemReader,
              over a gloo process group.

Usage (launched like ckptbench, one process per rank; /usr/bin/python3 is the Python that has
torch and mpi4py):

  mpiexec -n 4 /usr/bin/python3 scripts/realfw.py --framework torch-save \\
      --set layout=aggregated-rank --set model.scale=0.002 --target /tmp/rfw -o /tmp/rfw/ts.json
  mpiexec -n 4 /usr/bin/python3 scripts/realfw.py --framework dcp --dcp-file-mode rank \\
      --set layout=torch-dcp --set model.scale=0.002 --target /tmp/rfw -o /tmp/rfw/dcp.json

How it works:
  1. Rank 0 runs `ckptbench plan --json --items --world N [--config F] [--set K=V ...]` (without
     the launcher's OMPI_/PMIX_/PRTE_ variables, so the binary does not think it is an MPI rank)
     and broadcasts the result: every file of the point with the tensors in it (name, dtype,
     bytes, writing rank).  A sweep (several points) is refused.
  2. Every rank allocates and fills its tensors in host memory (deterministic, non-constant
     data), as a training process holds its state, before anything is timed.
  3. Per repetition, in a fresh directory RUN_DIR/point-001/rep-NN: the timed save (barrier, then
     each rank's time.perf_counter() around the framework's calls), the untimed cache step
     (fadvise, drop-caches or none) and page-cache residency sample, the timed restore, then the
     untimed verification of every restored tensor (bitwise, and the key sets), then (without
     --keep) the clean-up: each rank unlinks the files it wrote, rank 0 removes the directories
     the run made once they are empty (rmdir; a file realfw.py did not write is never removed,
     and a directory holding one is left with a warning in the report).
  4. Rank 0 writes a report in ckptbench's layout (docs/report.schema.json, tool.name
     "ckptbench-realfw", a `framework` object) and prints one line per phase.

Options: --framework torch-save|dcp; --dcp-file-mode item|rank (dcp: FileSystemWriter
single_file_per_rank False/True, default item); --fsync (torch-save: reopen O_RDONLY, fsync,
close after each torch.save, timed as step sync_s; DCP always runs with sync_files=True);
--config FILE and --set KEY=VALUE (to ckptbench plan); --binary PATH (default $CKPT_BINARY, else
build/ckptbench of this repo); --target DIR (required); -o REPORT (default
results/realfw-<framework>-<UTC time>.json); --repetitions R; --cache fadvise|drop-caches|none
(default fadvise: each rank fsyncs and posix_fadvise(POSIX_FADV_DONTNEED)s the files it will read,
as ckptbench's cache "fadvise"; drop-caches, which drops the page cache of the whole node - every
job's - only when given, as ckptbench does only with cache "drop-caches"; the config's "cache"
is not read: give --cache as the replay's config has it); --keep (keep the files; default delete
them); --quiet.  `realfw.py --help` lists them all.

The target is refused (exit 2, before MPI, torch or any I/O starts) where ckptbench refuses it
(scripts/ckptinput.py check_target, src/fs/lock.cpp check_target): a system directory (/, /bin,
/boot, /dev, /etc, /lib, /lib64, /proc, /root, /run, /sbin, /sys, /usr, /var, /home, /opt, /srv,
/tmp, /var/tmp, /mnt, /media), also when symbolic links lead there, the home directory itself, a
symbolic link, a path that is not a directory, a kernel pseudo file system (proc, sysfs, cgroup,
...). Use a directory of your own below one, e.g. /var/tmp/rfw. -o REPORT is checked with the other
inputs (not a directory, a writable place) and written through a temporary file renamed into place.

What the framework writes: torch-save writes exactly the plan's files of each rank (writers ==
[rank]; a shared file is refused; files without tensors, such as DeepSpeed's `latest`, are not
written).  DCP writes its own files whatever the plan's layout: __<rank>_<n>.distcp (one per
tensor in item mode, one per rank in rank mode) and .metadata (rank 0, via .metadata.tmp and a
rename).  Each rank's DCP state dict holds its tensors keyed v<vrank>/<name>, each wrapped as a
ShardedTensor with one local shard: DCP 1.13's default planner saves plain tensors on the
coordinator only (the other ranks' keys would be missing from .metadata).  Importing DCP under
Python 3.11 needs an import-time fix of torch 1.13 (see install_dcp_import_fix); the report's
framework.workaround says so when it was applied.

Report fields measured here (the names mean what they mean in ckptbench, docs/metrics.md):
  bytes            tensor payload bytes saved/restored, summed over ranks
  file_bytes       on-disk size of the files the framework wrote (os.stat after the save)
  files            number of those files (DCP's .metadata included)
  elapsed_s        max over ranks of the per-rank phase time; bandwidth_GiBps = bytes/2^30/elapsed_s
  rank_time_s, rank_times_s, rank_bytes, straggler_ratio (max/mean over ranks that moved bytes)
  steps.io_s       torch-save: the torch.save/torch.load calls; dcp save: DCP's _write_item calls
                   (each item torch.save'd into its file: pickling, CRC-32, writes); dcp restore:
                   the FileSystemReader's read_metadata and read_data calls (.metadata unpickled,
                   each item torch.load'ed and copied into the state dict).  The rest of a DCP
                   phase (rank_time_s less the steps) is DCP's planning and collectives, waits
                   for the other ranks included, and the coordinator's pickling of Metadata
  steps.sync_s     torch-save --fsync: the open(O_RDONLY)+fsync+close after each torch.save;
                   dcp save: DCP's os.fsync calls (each data file, the coordinator's .metadata.tmp)
  rank_files       files each rank wrote (save)
  cache            method, and resident_fraction of the files each rank will read (mmap+mincore
                   of up to 256 files per rank, after the cache step, as ckptbench samples it)
  proc_io          deltas of the ranks' /proc/self/io over the phase, summed (whole process:
                   MPI and gloo socket traffic is counted too; write_bytes is charged when pages
                   are dirtied, so it does not show that data reached the device)
ckptbench's ops, iops, latency, metadata_ops and open_s/close_s are not measured (the
framework opens, writes and closes inside its own calls) and are therefore absent.

Exit codes: 0 success; 2 bad input (options, config, plan, target), found before any I/O;
1 (MPI_Abort) an error during the run, printed with the rank that saw it.
Only torch, mpi4py, the standard library and scripts/ckptinput.py (beside this file) are used.
"""

import argparse
import ctypes
import datetime
import json
import mmap
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import zlib

try:  # beside this file (scripts/): the binary's rules for targets and outputs
    from ckptinput import PathError, check_output_file, check_target, make_dirs, remove_dirs, \
        write_atomic
except ImportError as _e:
    sys.stderr.write(f"realfw: error: needs ckptinput.py from the same directory (scripts/) "
                     f"({_e}); run scripts/realfw.py from the ckptbench source tree\n")
    sys.exit(2)


def launcher_rank():
    """This process's rank as the launcher gives it before MPI starts (Open MPI, PMIx, MPICH's
    Hydra, Slurm), else 0: the options are checked, and refused on rank 0 only, before mpi4py
    (MPI_Init) and torch are imported."""
    for var in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"):
        v = os.environ.get(var, "")
        if v.isdigit():
            return int(v)
    return 0


MPI = None  # mpi4py's MPI, COMM_WORLD and its rank and size: set by init_mpi()
COMM = None
RANK = launcher_rank()
SIZE = None
HOST = socket.gethostname()
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GiB = float(1 << 30)

# ckptbench dtype spelling -> (torch dtype name, element size); anything else is saved as a
# uint8 tensor of the item's bytes.
DTYPES = {"bf16": ("bfloat16", 2), "f32": ("float32", 4), "f16": ("float16", 2)}

torch = None  # imported by import_framework() once the options are known to be good


class InputError(Exception):
    """Bad input found before any I/O: exit 2."""


class RunError(Exception):
    """An error during the run (I/O, framework, verification): abort the job, exit 1."""


# ----------------------------------------------------------------------------------------------
# Small helpers

def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def say(msg, args=None):
    """Rank 0 prints a progress/summary line unless --quiet."""
    if RANK == 0 and not (args and args.quiet):
        print(msg, flush=True)


def init_mpi():
    """Imports mpi4py (which starts MPI) once the options are known to be good."""
    global MPI, COMM, RANK, SIZE
    try:
        from mpi4py import MPI as _mpi
    except ImportError as e:
        sys.stderr.write(f"realfw: error: cannot import mpi4py with {sys.executable} ({e}); run "
                         "the Python that has torch and mpi4py (e.g. /usr/bin/python3)\n")
        sys.exit(2)
    MPI, COMM = _mpi, _mpi.COMM_WORLD
    RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def abort(msg, code=1):
    """One clear line naming this rank, then end the whole job rather than let others hang."""
    sys.stderr.write(f"realfw: rank {RANK} ({HOST}): error: {msg}\n")
    sys.stderr.flush()
    if COMM is None:  # before MPI started: this process alone
        sys.exit(code)
    COMM.Abort(code)


def collective_input_check(error):
    """Every rank passes its input error (or None); if any has one, rank 0 prints the first
    and every rank exits 2. Used only before any I/O."""
    errors = COMM.allgather(error)
    bad = [(r, e) for r, e in enumerate(errors) if e]
    if bad:
        if RANK == 0:
            r, e = bad[0]
            where = "" if r == 0 else f" (rank {r})"
            sys.stderr.write(f"realfw: error{where}: {e}\n")
            sys.stderr.flush()
        sys.exit(2)


def mmm(values):
    """{min, mean, max} of a list of numbers."""
    return {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}


def min_median_max(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def cpu_list(cpus):
    """Linux cpu-list text ("0-3,6") of a set of CPU numbers."""
    cpus, out, i = sorted(cpus), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


def read_proc_io():
    """This process's /proc/self/io counters, or None where unreadable."""
    try:
        with open("/proc/self/io") as f:
            return {k.strip(): int(v) for k, v in (line.split(":", 1) for line in f if ":" in line)}
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------------------------
# Options

class Parser(argparse.ArgumentParser):
    """argparse that prints (usage, help, errors) on rank 0 only; every rank exits the same way."""

    def _print_message(self, message, file=None):
        if RANK == 0:
            super()._print_message(message, file)


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer (allowed: 1 or more)")
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not allowed (allowed: 1 or more)")
    return v


def parse_args(argv):
    p = Parser(prog="realfw.py",
               description="Save and restore one ckptbench checkpoint with the real PyTorch "
                           "framework and write a ckptbench-style JSON report.",
               epilog="Run under mpiexec/srun, one process per rank, with the Python that has "
                      "torch and mpi4py (e.g. /usr/bin/python3).")
    p.add_argument("--framework", required=True, choices=["torch-save", "dcp"],
                   help="torch-save: torch.save/torch.load per plan file; dcp: "
                        "torch.distributed.checkpoint save_state_dict/load_state_dict")
    p.add_argument("--dcp-file-mode", choices=["item", "rank"], default=None,
                   help="dcp only: FileSystemWriter single_file_per_rank=False (item: one file per "
                        "tensor, the 1.13 code default) or True (rank); default item")
    p.add_argument("--fsync", action="store_true",
                   help="torch-save only: after each torch.save, open the file O_RDONLY, fsync, "
                        "close (timed in the save, step sync_s). DCP always syncs (sync_files=True)")
    p.add_argument("-c", "--config", metavar="FILE", help="ckptbench config file (one point)")
    p.add_argument("-s", "--set", metavar="KEY=VALUE", action="append", default=[], dest="sets",
                   help="passed to ckptbench as --set KEY=VALUE (repeatable)")
    p.add_argument("--binary", metavar="PATH",
                   help="ckptbench binary (default: $CKPT_BINARY, else build/ckptbench of this repo)")
    p.add_argument("-t", "--target", metavar="DIR", required=True,
                   help="directory to write into; a fresh run directory "
                        "realfw-<framework>-<UTC time> is created inside. Refused, as ckptbench "
                        "refuses it: a system directory (/, /etc, /tmp, /var/tmp, /home, ...; "
                        "also through symbolic links), your home directory itself, a symbolic "
                        "link, a kernel pseudo file system (proc, sysfs, ...)")
    p.add_argument("-o", "--output", metavar="REPORT",
                   help="report path (default: results/realfw-<framework>-<UTC time>.json)")
    p.add_argument("-r", "--repetitions", type=positive_int, default=1, metavar="R",
                   help="save + restore cycles (default 1)")
    p.add_argument("--cache", choices=["drop-caches", "fadvise", "none"], default="fadvise",
                   help="what keeps the page cache out of the restore: fadvise (default: each "
                        "rank fsyncs and posix_fadvise(DONTNEED)s the files it will read), "
                        "drop-caches (the whole node's page cache, as ckptbench's cache "
                        "\"drop-caches\": only when given; needs root), none")
    p.add_argument("--keep", action="store_true", help="keep the checkpoint files (default: delete)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary lines")
    args = p.parse_args(argv)

    if args.framework == "torch-save" and args.dcp_file_mode is not None:
        p.error("argument --dcp-file-mode: only with --framework dcp")
    if args.framework == "dcp" and args.fsync:
        p.error("argument --fsync: only with --framework torch-save "
                "(DCP's FileSystemWriter fsyncs every file itself, sync_files=True)")
    if args.framework == "dcp" and args.dcp_file_mode is None:
        args.dcp_file_mode = "item"
    for s in args.sets:
        if "=" not in s or s.startswith("="):
            p.error(f"argument --set: '{s}' is not KEY=VALUE")
    if args.config is not None:
        if not os.path.isfile(args.config) or not os.access(args.config, os.R_OK):
            p.error(f"argument --config: '{args.config}' is not a readable file")
        args.config = os.path.abspath(args.config)
    if args.binary is None:
        args.binary = os.environ.get("CKPT_BINARY") or os.path.join(REPO, "build", "ckptbench")
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        p.error(f"argument --binary: '{args.binary}' is not an executable file "
                "(build ckptbench, or give --binary / $CKPT_BINARY)")
    args.binary = os.path.abspath(args.binary)
    try:  # before anything is imported or made: the targets ckptbench refuses
        check_target(args.target)
    except PathError as e:
        p.error(str(e))
    args.target = os.path.abspath(args.target)
    return args


# ----------------------------------------------------------------------------------------------
# The plan (rank 0 asks ckptbench; all ranks get it by broadcast)

def clean_env():
    """The environment without the MPI launcher's variables: ckptbench plan runs as a plain
    process, not as a (singleton) rank of this job."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PRTE_"))}


def plan_command(args):
    cmd = [args.binary, "plan", "--json", "--items", "--world", str(SIZE)]
    if args.config:
        cmd += ["--config", args.config]
    for s in args.sets:
        cmd += ["--set", s]
    return cmd


def run_plan(args):
    """Rank 0: the one point of the config, with its file_list and items."""
    cmd = plan_command(args)
    try:
        proc = subprocess.run(cmd, env=clean_env(), capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InputError(f"cannot run {args.binary} plan: {e}")
    if proc.returncode != 0:
        err = proc.stderr.strip() or proc.stdout.strip() or "(no output)"
        raise InputError(f"ckptbench plan failed (exit {proc.returncode}): {err}\n"
                         f"  command: {' '.join(cmd)}")
    try:
        doc = json.loads(proc.stdout)
    except ValueError as e:
        raise InputError(f"ckptbench plan printed no JSON ({e}); command: {' '.join(cmd)}")
    points = doc.get("points") if isinstance(doc, dict) else None
    if not isinstance(points, list) or not points:
        raise InputError("ckptbench plan --json has no points")
    if len(points) > 1:
        raise InputError(
            f"the config is a sweep of {len(points)} points; realfw.py runs one configuration: "
            "fix the swept keys with --set (e.g. --set block_size=1M) or remove \"sweep\"")
    point = points[0]
    if "file_list" not in point:
        raise InputError(f"{args.binary} plan --items gave no file_list (binary too old?)")
    return point, cmd


def tool_version(binary):
    """("0.1.0", "5bfacd2-dirty") from `ckptbench --version` ("ckptbench 0.1.0 (5bfacd2-dirty)")."""
    try:
        out = subprocess.run([binary, "--version"], env=clean_env(), capture_output=True,
                             text=True, timeout=60).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        out = []
    version = out[1] if len(out) > 1 else "unknown"
    git = out[2].strip("()") if len(out) > 2 else ""
    return version, git


def item_key(item):
    """A plan item's identity, v{vrank}/{name}: the key of this rank's tensors and of DCP's state
    dict (global across ranks). torch.save's dict of one file uses the plain name."""
    return f"v{item['vrank']}/{item['name']}"


def check_plan(point, framework, world):
    """Rank 0, before any I/O: the plan must be something the framework can save. Returns the
    warnings it gives; raises InputError naming the file/tensor otherwise."""
    warnings = []
    files = point["file_list"]
    keys, empty = set(), []
    for f in files:
        path, writers, items = f.get("path", ""), f.get("writers", []), f.get("items", [])
        if not path or os.path.isabs(path) or ".." in path.split("/"):
            raise InputError(f"plan file '{path}': not a relative path inside the point directory")
        for it in items:
            esize = DTYPES.get(it["dtype"], (None, 1))[1]
            if it["bytes"] % esize:
                raise InputError(f"plan file '{path}', tensor '{it['name']}': {it['bytes']} bytes "
                                 f"is not a whole number of {it['dtype']} elements")
            if not 0 <= it["rank"] < world:
                raise InputError(f"plan file '{path}', tensor '{it['name']}': rank {it['rank']} "
                                 f"outside the job of {world} ranks")
        if framework == "torch-save":
            if not items:
                empty.append(path)
                continue
            if len(writers) != 1:
                raise InputError(
                    f"plan file '{path}' is written by ranks {writers}: torch.save writes whole "
                    "files, one process each; choose a layout without shared files "
                    "(e.g. aggregated-rank, file-per-shard, torch-dcp)")
            names = set()
            for it in items:
                if it["rank"] != writers[0]:
                    raise InputError(f"plan file '{path}': tensor '{it['name']}' belongs to rank "
                                     f"{it['rank']}, the file to rank {writers[0]}")
                if it["name"] in names:
                    raise InputError(f"plan file '{path}': tensor name '{it['name']}' twice "
                                     "(torch.save's dict needs distinct keys)")
                names.add(it["name"])
        for it in items:
            k = item_key(it)
            if k in keys:
                raise InputError(f"plan file '{path}': tensor '{it['name']}' of virtual rank "
                                 f"{it['vrank']} appears twice in the plan")
            keys.add(k)
    if empty:
        warnings.append(f"{len(empty)} plan file(s) hold no tensor data (index/metadata files of "
                        f"the emulated layout, e.g. '{empty[0]}'); torch.save does not write them")
    if framework == "dcp" and point.get("layout") != "torch-dcp":
        warnings.append(f"plan layout '{point.get('layout')}' is not torch-dcp: DCP saves the "
                        "same tensors in its own files (__<rank>_<n>.distcp + .metadata)")
    idle = sorted(set(range(world)) - {it["rank"] for f in files for it in f.get("items", [])})
    if idle:
        warnings.append(f"rank(s) {cpu_list(idle)} hold no tensors in this plan and save nothing "
                        "(straggler_ratio excludes them)")
    return warnings


# ----------------------------------------------------------------------------------------------
# The framework import (DCP needs a fix under Python 3.11)

# torch 1.13.1, torch/distributed/_shard/sharded_tensor/metadata.py, class ShardedTensorMetadata:
#     tensor_properties: TensorProperties = field(default=TensorProperties())
# Python 3.11's dataclasses refuse any default whose class is unhashable (a plain @dataclass
# with eq=True sets __hash__ = None), so `import torch.distributed._shard.checkpoint` fails with
# "ValueError: mutable default <class '...TensorProperties'> for field tensor_properties is not
# allowed: use default_factory".  The fix below loads that ONE module with that ONE line read as
#     tensor_properties: TensorProperties = field(default_factory=TensorProperties)
# (the form later PyTorch releases ship).  It changes only which TensorProperties object a
# ShardedTensorMetadata built without one gets by default (a fresh one instead of a shared one);
# DCP's planning, pickling and file I/O are untouched, and the file on disk is not modified (the
# module is compiled from the patched text in memory; the stale .pyc is bypassed).
DCP_FIX_MODULE = "torch.distributed._shard.sharded_tensor.metadata"
DCP_FIX_OLD = b"tensor_properties: TensorProperties = field(default=TensorProperties())"
DCP_FIX_NEW = b"tensor_properties: TensorProperties = field(default_factory=TensorProperties)"


def install_dcp_import_fix():
    """Install an import hook for DCP_FIX_MODULE; returns (finder, applied-list)."""
    import importlib.abc
    import importlib.machinery
    applied = []

    class Loader(importlib.machinery.SourceFileLoader):
        def get_code(self, fullname):
            src = self.get_data(self.path)
            if sys.version_info < (3, 11) or src.count(DCP_FIX_OLD) != 1:
                return super().get_code(fullname)  # not the affected source: as shipped
            applied.append(self.path)
            return compile(src.replace(DCP_FIX_OLD, DCP_FIX_NEW), self.path, "exec",
                           dont_inherit=True)

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != DCP_FIX_MODULE:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is None or not (spec.origin or "").endswith(".py"):
                return None
            spec.loader = Loader(fullname, spec.origin)
            return spec

    finder = Finder()
    sys.meta_path.insert(0, finder)
    return finder, applied


def import_framework(args):
    """Import torch (and DCP); returns the workaround description when the fix was applied."""
    global torch
    workaround = None
    if args.framework == "dcp":
        finder, applied = install_dcp_import_fix()
        try:
            import torch as _torch
            import torch.distributed  # noqa: F401
            import torch.distributed._shard.checkpoint  # noqa: F401
            import torch.distributed._shard.sharded_tensor  # noqa: F401
        finally:
            sys.meta_path.remove(finder)
        if applied:
            workaround = (
                f"Python {platform.python_version()} refuses the unhashable dataclass default in "
                f"{applied[0]} (ShardedTensorMetadata.tensor_properties = "
                "field(default=TensorProperties())): importing torch.distributed._shard.checkpoint "
                "raises ValueError 'mutable default ... use default_factory'. realfw.py compiled that "
                "module in memory with the line read as field(default_factory=TensorProperties), as "
                "later PyTorch releases have it; the file on disk and all I/O code are unchanged.")
    else:
        import torch as _torch
    torch = _torch
    return workaround


# ----------------------------------------------------------------------------------------------
# Tensors

def make_tensor(item):
    """A 1-D tensor of the item's dtype and bytes, filled with a deterministic pattern seeded by
    rank, virtual rank and name (random normal floats: no NaN, no constant pages)."""
    name, esize = DTYPES.get(item["dtype"], ("uint8", 1))
    dtype = getattr(torch, name)
    n = item["bytes"] // esize
    g = torch.Generator()
    g.manual_seed(zlib.crc32(f"{item['rank']}/{item['vrank']}/{item['name']}".encode()))
    if dtype == torch.uint8:
        return torch.randint(0, 256, (n,), dtype=torch.uint8, generator=g)
    return torch.randn(n, generator=g, dtype=dtype)


def same_tensor(a, b):
    """Bitwise equality of two 1-D tensors (dtype, length and every byte)."""
    if not isinstance(b, torch.Tensor) or a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == torch.uint8:
        return torch.equal(a, b)
    return torch.equal(a.view(torch.uint8), b.contiguous().view(torch.uint8))


def describe_tensor(t):
    if not isinstance(t, torch.Tensor):
        return type(t).__name__
    return f"{t.dtype} {tuple(t.shape)}"


def sharded(tensor):
    """A ShardedTensor whose only shard is `tensor`, placed on this rank: what DCP 1.13 saves
    from every rank (plain tensors it saves on the coordinator only, see framework.state_dict)."""
    from torch.distributed._shard.metadata import ShardMetadata
    from torch.distributed._shard.sharded_tensor import Shard, ShardedTensor
    from torch.distributed._shard.sharded_tensor.metadata import (ShardedTensorMetadata,
                                                                  TensorProperties)
    md = ShardMetadata(shard_offsets=[0], shard_sizes=[tensor.numel()],
                       placement=f"rank:{RANK}/cpu")
    props = TensorProperties(dtype=tensor.dtype, layout=torch.strided, requires_grad=False,
                             memory_format=torch.contiguous_format, pin_memory=False)
    gmd = ShardedTensorMetadata(shards_metadata=[md], size=torch.Size([tensor.numel()]),
                                tensor_properties=props)
    return ShardedTensor._init_from_local_shards_and_global_metadata([Shard(tensor, md)], gmd)


# ----------------------------------------------------------------------------------------------
# Page cache: defeat and residency

PAGE = mmap.PAGESIZE
_ODD = bytes(i & 1 for i in range(256))
_libc = None


def _libc_handle():
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        _libc = libc
    return _libc


def resident_bytes(path):
    """(bytes of the file in the page cache, file size): mmap + mincore, no page is touched.
    None when the file cannot be examined."""
    size = os.stat(path).st_size
    if size == 0:
        return 0, 0
    libc = _libc_handle()
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return None
        try:
            pages = (size + PAGE - 1) // PAGE
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(addr, size, vec) != 0:
                return None
            raw = bytes(vec)
            resident = raw[:-1].translate(_ODD).count(1) * PAGE
            if raw[-1] & 1:
                resident += size - (pages - 1) * PAGE
            return resident, size
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def residency(paths):
    """Sum of resident_bytes over up to 256 of the files (sampled evenly), or None."""
    if len(paths) > 256:
        paths = [paths[i * len(paths) // 256] for i in range(256)]
    res = tot = 0
    try:
        for p in paths:
            r = resident_bytes(p)
            if r is None:
                return None
            res, tot = res + r[0], tot + r[1]
    except OSError:
        return None
    return res, tot


def drop_caches_ok():
    return os.geteuid() == 0 and os.access("/proc/sys/vm/drop_caches", os.W_OK)


def cache_step(method, read_paths, node_comm):
    """Between save and restore, untimed: keep the page cache out of the restore."""
    if method == "fadvise":
        for p in read_paths:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    COMM.Barrier()
    if method == "drop-caches" and node_comm.Get_rank() == 0:  # one rank per node
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    COMM.Barrier()


# ----------------------------------------------------------------------------------------------
# The timed phases. Each returns this rank's record: time (s), io (s), sync (s), bytes.

def polite_wait():
    """Waits for every rank without spinning: an Ibarrier tested between short sleeps. Open MPI's
    blocking collectives busy-poll; where ranks share cores (4 ranks on this 2-core test machine)
    a rank that finished its timed phase would take CPU from those still in theirs. ckptbench's
    own waits back off the same way (agreement.hpp, Backoff)."""
    req = COMM.Ibarrier()
    delay = 0.0001
    while not req.Test():
        time.sleep(delay)
        delay = min(delay * 2, 0.005)


def timed(fn):
    """Barrier, then this rank's perf_counter() around fn(); /proc/self/io deltas alongside. The
    waits around it are polite (polite_wait), then a plain barrier aligns the start."""
    io0 = read_proc_io()
    polite_wait()
    COMM.Barrier()
    t0 = time.perf_counter()
    rec = fn()
    rec["time"] = time.perf_counter() - t0
    polite_wait()
    io1 = read_proc_io()
    rec["proc_io"] = ({k: max(0, io1[k] - io0[k]) for k in io0 if k in io1}
                      if io0 is not None and io1 is not None else None)
    return rec


def torch_save_phase(jobs, fsync):
    """jobs: [(path, dict)] in plan order. torch.save each; with fsync: reopen, fsync, close."""
    def run():
        io = sync = 0.0
        for path, sd in jobs:
            a = time.perf_counter()
            torch.save(sd, path)
            b = time.perf_counter()
            io += b - a
            if fsync:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                sync += time.perf_counter() - b
        return {"io": io, "sync": sync}
    return timed(run)


def torch_load_phase(paths, out):
    """torch.load each path (map_location cpu) into out[path]."""
    def run():
        for p in paths:
            out[p] = torch.load(p, map_location="cpu")
        return {"io": 0.0, "sync": 0.0}
    rec = timed(run)
    rec["io"] = rec["time"]
    return rec


def _timed_call(fn, acc, key):
    """fn, its time added to acc[key] on every call."""
    def call(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc[key] += time.perf_counter() - t0
    return call


class _TimedOs:
    """The os module as DCP's filesystem module sees it while a save is timed: os.fsync timed
    into acc["sync"], everything else os's own."""

    def __init__(self, acc):
        self.fsync = _timed_call(os.fsync, acc, "sync")

    def __getattr__(self, name):  # only for names not set on the instance
        return getattr(os, name)


def dcp_save_phase(sd, pointdir, mode):
    """save_state_dict, split (for the report's steps; the calls made are DCP's own): io = its
    _write_item calls (each item torch.save'd into the file stream: pickling, CRC-32, writes;
    filesystem.py in 1.13), sync = its os.fsync calls (each data file, the coordinator's
    .metadata.tmp). The rest of the phase is DCP's planning, its collectives (waits for the
    other ranks included) and the coordinator's pickling of Metadata."""
    import torch.distributed._shard.checkpoint as dcp
    dcp_fs = sys.modules[dcp.FileSystemWriter.__module__]  # where the writer looks them up
    split = hasattr(dcp_fs, "_write_item") and getattr(dcp_fs, "os", None) is os

    def run():
        acc = {"io": 0.0, "sync": 0.0}
        if split:
            write_item = dcp_fs._write_item
            dcp_fs._write_item = _timed_call(write_item, acc, "io")
            dcp_fs.os = _TimedOs(acc)
        try:
            writer = dcp.FileSystemWriter(pointdir, single_file_per_rank=(mode == "rank"),
                                          sync_files=True)
            dcp.save_state_dict(sd, writer)
        finally:
            if split:
                dcp_fs._write_item, dcp_fs.os = write_item, os
        return acc
    rec = timed(run)
    if not split:  # another DCP than 1.13's: the whole call, as before
        rec["io"] = rec["time"]
    return rec


def dcp_load_phase(target_sd, pointdir):
    """load_state_dict, split: io = the reader's read_metadata and read_data calls (.metadata
    unpickled; each item torch.load'ed from its file view and copied into the state dict). The
    rest is DCP's load planning and its collectives (waits included)."""
    import torch.distributed._shard.checkpoint as dcp

    def run():
        acc = {"io": 0.0, "sync": 0.0}
        reader = dcp.FileSystemReader(pointdir)
        reader.read_metadata = _timed_call(reader.read_metadata, acc, "io")
        reader.read_data = _timed_call(reader.read_data, acc, "io")
        dcp.load_state_dict(target_sd, reader)
        return acc
    return timed(run)


def dcp_file_of(pointdir, key):
    """For an error message: the .distcp file DCP's .metadata says holds `key`."""
    try:
        import torch.distributed._shard.checkpoint as dcp
        md = dcp.FileSystemReader(pointdir).read_metadata()
        for index, info in (md.storage_data or {}).items():
            if index.fqn == key:
                return os.path.join(pointdir, info.relative_path)
    except Exception:  # the message must not fail; the directory is the best we can say
        pass
    return pointdir


def phase_report(recs, files, file_bytes, rank_files=None, sync_ops=None):
    """Rank 0: one phase in the report's layout from every rank's record."""
    times = [r["time"] for r in recs]
    rbytes = [r["bytes"] for r in recs]
    total = sum(rbytes)
    elapsed = max(times)
    movers = [t for t, b in zip(times, rbytes) if b > 0]
    mean_movers = sum(movers) / len(movers) if movers else 0.0
    ph = {
        "bytes": total,
        "file_bytes": file_bytes,
        "files": files,
        "elapsed_s": elapsed,
        "bandwidth_GiBps": total / GiB / elapsed if elapsed > 0 else 0.0,
        "rank_time_s": mmm(times),
        "rank_times_s": times,
        "rank_bytes": rbytes,
        "steps": {"io_s": mmm([r["io"] for r in recs])},
        "straggler_ratio": max(movers) / mean_movers if movers and mean_movers > 0 else 1.0,
    }
    if any(r["sync"] for r in recs) or sync_ops:
        ph["steps"]["sync_s"] = mmm([r["sync"] for r in recs])
    if sync_ops is not None:
        ph["sync_ops"] = sync_ops
    if rank_files is not None:
        ph["rank_files"] = rank_files
    if all(r["proc_io"] is not None for r in recs):
        ph["proc_io"] = {k: sum(r["proc_io"].get(k, 0) for r in recs) for k in recs[0]["proc_io"]}
    return ph


# ----------------------------------------------------------------------------------------------
# Environment

def file_system(path):
    """Type (from /proc/self/mounts, else stat -f), magic, block size, free and total bytes."""
    fs = {}
    real = os.path.realpath(path)
    try:
        best = ""
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mnt = parts[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
                if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, fs["type"] = mnt, parts[2]
    except OSError:
        pass
    try:
        out = subprocess.run(["stat", "-f", "-c", "%t %T", real], capture_output=True, text=True,
                             timeout=30).stdout.split(None, 1)
        fs["magic"] = int(out[0], 16)
        fs.setdefault("type", out[1].strip())
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        pass
    st = os.statvfs(real)
    fs.update(block_size=st.f_bsize, free_bytes=st.f_bavail * st.f_frsize,
              total_bytes=st.f_blocks * st.f_frsize)
    fs.setdefault("type", "unknown")
    return fs


def environment(args, run_dir):
    """Collective: hosts and CPU affinity from every rank; the rest from rank 0."""
    hosts = COMM.allgather(HOST)
    try:
        aff = cpu_list(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        aff = ""
    affs = COMM.allgather(aff)
    if RANK != 0:
        return None
    distinct = list(dict.fromkeys(hosts))
    env = {
        "hosts": distinct,
        "ranks": SIZE,
        "nodes": len(distinct),
        "ranks_per_node": {h: hosts.count(h) for h in distinct},
        "mpi_library": MPI.Get_library_version().replace("\x00", "").strip(),
        "kernel": f"{platform.system()} {platform.release()} {platform.machine()}",
        "target": args.target,
        "run_dir": run_dir,
        "file_system": file_system(run_dir),
        "python": f"{platform.python_implementation()} {platform.python_version()} "
                  f"({sys.executable})",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "mpi4py": getattr(sys.modules.get("mpi4py"), "__version__", ""),
        "euid": os.geteuid(),
        "cpus_allowed": affs,
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu"] = line.split(":", 1)[1].strip()
                    break
        env["cores_online"] = os.sysconf("SC_NPROCESSORS_ONLN")
        env["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        pass
    return env


# ----------------------------------------------------------------------------------------------
# Setup (rank 0 decides, everyone learns; exit 2 on bad input before any I/O)

def setup(args):
    """Rank 0: plan, checks, run directory. Returns the shared setup dict on every rank."""
    result, made = None, []
    if RANK == 0:
        try:
            point, cmd = run_plan(args)
            warnings = check_plan(point, args.framework, SIZE)
            version, git = tool_version(args.binary)
            cache = args.cache
            if cache == "drop-caches" and not drop_caches_ok():
                raise InputError("argument --cache: drop-caches needs root and a writable "
                                 "/proc/sys/vm/drop_caches (not in most containers); use "
                                 "fadvise or none")
            stamp = utc_now()
            output = args.output or os.path.join(
                "results", f"realfw-{args.framework}-{stamp.replace(':', '-')}.json")
            output = os.path.abspath(output)
            try:  # the report's directories are made when it is written
                check_output_file(output, "--output")
            except PathError as e:
                raise InputError(str(e))
            try:
                made = make_dirs(args.target)  # removed again when refused or, empty, at the end
            except OSError as e:
                raise InputError(f"--target {args.target}: cannot create {e.filename}: "
                                 f"{e.strerror}")
            # Free space: the framework adds a little per tensor (zip/pickle records).
            items = sum(len(f.get("items", [])) for f in point["file_list"])
            need = int(point["payload_bytes"] * 1.02) + 4096 * (items + len(point["file_list"]))
            if args.keep:
                need *= args.repetitions
            st = os.statvfs(args.target)
            if st.f_bavail * st.f_frsize < need:
                raise InputError(f"not enough free space in {args.target}: "
                                 f"{st.f_bavail * st.f_frsize} bytes free, about {need} needed")
            run_dir = os.path.join(args.target, f"realfw-{args.framework}-{stamp.replace(':', '-')}")
            try:
                os.mkdir(run_dir)
            except FileExistsError:
                raise InputError(f"run directory {run_dir} exists already; refusing to reuse it")
            except OSError as e:
                raise InputError(f"cannot create the run directory {run_dir}: {e.strerror}")
            result = {"point": point, "plan_command": cmd, "warnings": warnings,
                      "version": version, "git": git, "cache": cache, "output": output,
                      "run_dir": run_dir, "target_made": made, "started_at": stamp}
        except InputError as e:
            remove_dirs(made)  # refused: leave nothing behind
            result = {"error": str(e)}
    result = COMM.bcast(result, root=0)
    if "error" in result:
        if RANK == 0:
            sys.stderr.write(f"realfw: error: {result['error']}\n")
        sys.exit(2)
    return result


def init_process_group(hosts_distinct):
    """gloo over TCP; rank 0 picks a free port and broadcasts it (rank/world from MPI)."""
    import torch.distributed as dist
    addr = None
    port = None
    if RANK == 0:
        addr = "127.0.0.1" if hosts_distinct == 1 else HOST
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1" if hosts_distinct == 1 else "", 0))
        port = s.getsockname()[1]
        s.close()
    addr, port = COMM.bcast((addr, port), root=0)
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}", rank=RANK,
                            world_size=SIZE)


# ----------------------------------------------------------------------------------------------
# One repetition

def my_items(point, framework):
    """This rank's work. torch-save: [(relative path, [items])] of its files in plan order;
    dcp: [items] of every file, those this rank writes. Items come in state-dict order (vrank,
    then the item's place in that rank's state: `plan --items` lists them in file-offset order,
    which a torch.save archive permutes into its records' key order)."""
    def state_order(items):
        return sorted(items, key=lambda it: (it["vrank"], it["shard"]))
    if framework == "torch-save":
        return [(f["path"], state_order(f["items"])) for f in point["file_list"]
                if f.get("items") and f["writers"] == [RANK]]
    return state_order([it for f in point["file_list"] for it in f.get("items", [])
                        if it["rank"] == RANK])


def repetition(args, rep, st, tensors, work, node_comm):
    """Save, cache step, restore, verify, clean up. Returns the repetition record (rank 0)."""
    fw = args.framework
    pointdir = os.path.join(st["run_dir"], "point-001", f"rep-{rep:02d}")
    os.makedirs(pointdir, exist_ok=True)
    payload = sum(t.numel() * t.element_size() for t in tensors.values())

    # --- save -----------------------------------------------------------------------------
    if fw == "torch-save":
        jobs = []
        for rel, items in work:
            path = os.path.join(pointdir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)  # before the timed phase
            jobs.append((path, {it["name"]: tensors[item_key(it)] for it in items}))
        rec = torch_save_phase(jobs, args.fsync)
        written = [p for p, _ in jobs]
        read_paths = written
    else:
        sd = {k: sharded(t) for k, t in tensors.items()}
        rec = dcp_save_phase(sd, pointdir, args.dcp_file_mode)
        del sd
        COMM.Barrier()  # .metadata is renamed into place by the coordinator before it returns
        prefix = f"__{RANK}_"
        mine = [n for n in os.listdir(pointdir) if n.startswith(prefix) and n.endswith(".distcp")]
        mine.sort(key=lambda n: int(n[len(prefix):-len(".distcp")]))
        written = [os.path.join(pointdir, n) for n in mine]
        meta = os.path.join(pointdir, ".metadata")
        if RANK == 0:
            written.append(meta)
        read_paths = [p for p in written if p != meta] + [meta]  # every rank reads .metadata
    rec["bytes"] = payload
    rec["files"] = len(written)
    rec["file_bytes"] = sum(os.stat(p).st_size for p in written)
    save_recs = COMM.gather(rec, root=0)
    if RANK == 0 and fw == "dcp":
        found = sum(len(fs) for _, _, fs in os.walk(pointdir))
        total = sum(r["files"] for r in save_recs)
        if found != total:
            st["warnings"].append(f"repetition {rep}: {found} files in the checkpoint directory, "
                                  f"{total} attributed to ranks (__<rank>_<n>.distcp, .metadata)")

    # --- cache step and residency (untimed) -------------------------------------------------
    cache_step(st["cache"], read_paths, node_comm)
    res = residency(read_paths)
    sample = COMM.gather(res, root=0)

    # --- restore ----------------------------------------------------------------------------
    if fw == "torch-save":
        loaded = {}
        rrec = torch_load_phase(written, loaded)
    else:
        target = {k: sharded(torch.zeros_like(t)) for k, t in tensors.items()}
        rrec = dcp_load_phase(target, pointdir)
    rrec["bytes"] = payload

    # --- verify (untimed) -------------------------------------------------------------------
    verified = 0
    if fw == "torch-save":
        for (rel, items), path in zip(work, written):
            got = loaded.pop(path)
            if not isinstance(got, dict):
                raise RunError(f"verification: {rel}: torch.load returned "
                               f"{type(got).__name__}, not the saved dict")
            want = [it["name"] for it in items]
            if set(got) != set(want):
                missing = sorted(set(want) - set(got))[:3]
                extra = sorted(set(got) - set(want))[:3]
                raise RunError(f"verification: {rel}: keys differ (missing {missing}, "
                               f"unexpected {extra})")
            for it in items:
                t = tensors[item_key(it)]
                if not same_tensor(t, got[it["name"]]):
                    raise RunError(f"verification: {rel}: key '{it['name']}': restored "
                                   f"{describe_tensor(got[it['name']])} differs from the saved "
                                   f"{describe_tensor(t)}")
                verified += t.numel() * t.element_size()
    else:
        for k, t in tensors.items():
            shards = target[k].local_shards()
            got = shards[0].tensor if len(shards) == 1 else None
            if got is None or not same_tensor(t, got):
                raise RunError(f"verification: {dcp_file_of(pointdir, k)}: key '{k}': restored "
                               f"{describe_tensor(got)} differs from the saved {describe_tensor(t)}")
            verified += t.numel() * t.element_size()
        del target
    rrec["verified"] = verified
    restore_recs = COMM.gather(rrec, root=0)

    # --- clean up (untimed): only what this run made ------------------------------------------
    COMM.Barrier()
    if not args.keep:
        for p in written:  # this rank's files (rank 0 in DCP: .metadata too)
            os.unlink(p)
        COMM.Barrier()
        if RANK == 0:
            note_left(st, remove_empty_tree(pointdir))
    if RANK != 0:
        return None

    # --- rank 0: the record -----------------------------------------------------------------
    files = sum(r["files"] for r in save_recs)
    file_bytes = sum(r["file_bytes"] for r in save_recs)
    rank_files = [r["files"] for r in save_recs]
    sync_ops = files if (fw == "torch-save" and args.fsync) else None
    save = phase_report(save_recs, files, file_bytes, rank_files, sync_ops)
    save["sync"] = "file" if (fw == "dcp" or args.fsync) else "none"
    restore = phase_report(restore_recs, files, file_bytes)
    restore["verify_inline"] = False
    cache = {"method": st["cache"], "bypassed_by_o_direct": False}
    if all(s is not None for s in sample):
        rb, fb = sum(s[0] for s in sample), sum(s[1] for s in sample)
        cache.update(resident_fraction=rb / fb if fb else 0.0, resident_bytes_sampled=rb,
                     file_bytes_sampled=fb)
    return {"repetition": rep, "save": save, "cache": cache, "restore": restore,
            "verified": True, "bytes_verified": sum(r["verified"] for r in restore_recs)}


def remove_empty_tree(top):
    """Removes top and the directories below it, deepest first, each only when empty (rmdir):
    once this run's files are unlinked, nothing is left in the directories it made, and a file
    it did not write is never removed. Returns the directories left (not empty)."""
    left = []
    for d, _, _ in os.walk(top, topdown=False):  # symbolic links are not followed
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass
        except OSError:
            left.append(d)
    return left


def note_left(st, left):
    """Rank 0: a warning in the report for directories the clean-up had to leave."""
    if left:
        st["warnings"].append(f"left {left[-1]} ({len(left)} directories): it holds files "
                              "realfw.py did not write, which it does not remove")


def phase_line(label, rep, reps, ph, extra):
    return (f"realfw: rep {rep}/{reps} {label:<7} {ph['bytes'] / GiB:.3f} GiB in "
            f"{ph['elapsed_s']:.3f} s = {ph['bandwidth_GiBps']:.3f} GiB/s ({extra})")


# ----------------------------------------------------------------------------------------------
# Main

def main(argv):
    args = parse_args(argv)  # every option checked (the target too) before MPI and torch start
    init_mpi()

    # The framework first: a missing torch/DCP is bad input, found before anything is created.
    err = None
    try:
        workaround = import_framework(args)
    except Exception as e:  # ImportError, or the ValueError the fix did not cure
        err, workaround = f"cannot import the framework ({args.framework}): " \
                          f"{type(e).__name__}: {e}", None
    collective_input_check(err)

    st = setup(args)
    point = st["point"]
    node_comm = COMM.Split_type(MPI.COMM_TYPE_SHARED, key=RANK)
    env = environment(args, st["run_dir"])
    nodes = COMM.bcast(env["nodes"] if RANK == 0 else None, root=0)

    fw_name = "torch.save" if args.framework == "torch-save" else "torch.distributed.checkpoint"
    # fsync: whether the save fsyncs every file inside the timed phase (DCP: sync_files=True).
    framework = {"name": fw_name, "library": "torch", "version": torch.__version__,
                 "fsync": bool(args.fsync) or args.framework == "dcp"}
    if args.framework == "torch-save":
        framework["api"] = ("torch.save(dict, path) per plan file; torch.load(path, "
                            "map_location='cpu')")
        if args.fsync:
            framework["api"] += "; after each save: open(path, O_RDONLY), fsync, close"
    else:
        framework.update(
            api="torch.distributed._shard.checkpoint.save_state_dict(sd, FileSystemWriter(dir, "
                f"single_file_per_rank={args.dcp_file_mode == 'rank'}, sync_files=True)); "
                "load_state_dict(sd, FileSystemReader(dir))",
            file_mode=args.dcp_file_mode, sync_files=True, process_group="gloo",
            state_dict="each rank's tensors keyed v<vrank>/<name>, each a ShardedTensor with one "
                       "local shard on its rank: DCP 1.13's default planner writes plain tensors "
                       "on the coordinator (rank 0) only")
        if workaround:
            framework["workaround"] = workaround

    say(f"realfw: {fw_name} {torch.__version__}, {SIZE} ranks, layout {point.get('layout')}, "
        f"{point['payload_bytes'] / GiB:.3f} GiB payload, cache {st['cache']}, "
        f"run dir {st['run_dir']}", args)

    try:
        if args.framework == "dcp":
            init_process_group(nodes)
        # The training state, in host memory before anything is timed.
        work = my_items(point, args.framework)
        items = [it for _, its in work for it in its] if args.framework == "torch-save" else work
        tensors = {item_key(it): make_tensor(it) for it in items}
        COMM.Barrier()

        reps = []
        for rep in range(1, args.repetitions + 1):
            r = repetition(args, rep, st, tensors, work, node_comm)
            if RANK == 0:
                reps.append(r)
                s, c, rs = r["save"], r["cache"], r["restore"]
                sync = {"none": "no sync", "file": "fsync per file"}[s["sync"]]
                say(phase_line("save", rep, args.repetitions, s,
                               f"{s['files']} files, {s['file_bytes'] / GiB:.3f} GiB on disk, "
                               f"{sync}"), args)
                resid = (f", {100 * c['resident_fraction']:.0f}% cached before"
                         if "resident_fraction" in c else "")
                say(phase_line("restore", rep, args.repetitions, rs,
                               f"cache {c['method']}{resid}, verified"), args)
    except Exception as e:  # any failure on this rank ends the whole job
        abort(str(e) if isinstance(e, RunError) else f"{type(e).__name__}: {e}")

    COMM.Barrier()
    if args.framework == "dcp":
        import torch.distributed as dist
        dist.destroy_process_group()
    if not args.keep and RANK == 0:
        left = remove_empty_tree(st["run_dir"])
        note_left(st, left)
        if not left:
            remove_dirs(st["target_made"])  # the target, when this run made it
    if RANK != 0:
        return 0
    return write_report(args, st, env, framework, point, reps)


def write_report(args, st, env, framework, point, reps):
    """Rank 0: the report, through a temporary file renamed into place (never half a report);
    returns the exit status."""
    warnings = list(st["warnings"])
    if args.framework == "torch-save" and not args.fsync:
        warnings.append("save without --fsync: torch.save returns when the data is in the page "
                        "cache, so the save bandwidth is mostly memory bandwidth")
    if st["cache"] == "none":
        warnings.append("cache none: the restore may read from the page cache")
    fr = [r["cache"]["resident_fraction"] for r in reps if "resident_fraction" in r["cache"]]
    if fr and max(fr) >= 0.25:
        warnings.append(f"up to {100 * max(fr):.0f}% of the checkpoint was in the page cache "
                        "before the restore: the restore partly measured memory")
    if env["file_system"].get("type") in ("tmpfs", "ramfs"):
        warnings.append(f"the target is on {env['file_system']['type']}: the files live in memory")
    plan = {k: v for k, v in point.items() if k not in ("file_list", "index", "params")}
    doc = {
        "schema_version": 1,
        "tool": {"name": "ckptbench-realfw", "version": st["version"], "git": st["git"],
                 "runner": os.path.relpath(os.path.abspath(__file__), REPO)},
        "started_at": st["started_at"],
        "finished_at": utc_now(),
        "status": "ok",
        "config": {"file": args.config, "set": args.sets, "world": SIZE,
                   "repetitions": args.repetitions, "cache": st["cache"], "keep": args.keep,
                   "binary": args.binary, "plan_command": st["plan_command"]},
        "framework": framework,
        "environment": env,
        "points": [{
            "index": point.get("index", 1),
            "params": point.get("params", {}),
            "config": {k: point[k] for k in ("layout", "model", "parallelism", "world",
                                             "block_size", "align", "region_align") if k in point},
            "status": "ok",
            "plan": plan,
            "repetitions": reps,
            "summary": {ph: {"bandwidth_GiBps": min_median_max([r[ph]["bandwidth_GiBps"]
                                                                 for r in reps]),
                             "elapsed_s": min_median_max([r[ph]["elapsed_s"] for r in reps]),
                             "repetitions": len(reps)} for ph in ("save", "restore")},
            "warnings": warnings,
        }],
    }
    if args.config is None:
        del doc["config"]["file"]
    for w in warnings:
        sys.stderr.write(f"realfw: warning: {w}\n")

    def dump(f):
        json.dump(doc, f, indent=2)
        f.write("\n")
    try:
        write_atomic(st["output"], dump, "--output")
    except PathError as e:
        sys.stderr.write(f"realfw: error: {e}\n")
        return 1
    say(f"realfw: report {st['output']}", args)
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except SystemExit:
        raise
    except BaseException as e:  # anything unexpected outside the guarded phases
        abort(f"{type(e).__name__}: {e}")
    sys.exit(code)
