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
              over a gloo process group;
  megatron-dist  Megatron-LM's torch_dist format, DCP underneath as Megatron drives it: rank 0
              torch.save()s the common state to iter_0000001/common.pt, every rank
              save_state_dict()s into iter_0000001/ (FileSystemWriter with thread_count 2: two
              files per rank), rank 0 writes metadata.json and latest_checkpointed_iteration.txt;
              the load reads those three on every rank, then load_state_dict().

Usage (launched like ckptbench, one process per rank; /usr/bin/python3 is the Python that has
torch and mpi4py):

  mpiexec -n 4 /usr/bin/python3 scripts/realfw.py --framework torch-save \\
      --set layout=aggregated-rank --set model.scale=0.002 --target /tmp/rfw -o /tmp/rfw/ts.json
  mpiexec -n 4 /usr/bin/python3 scripts/realfw.py --framework dcp --dcp-file-mode rank \\
      --set layout=torch-dcp --set model.scale=0.002 --target /tmp/rfw -o /tmp/rfw/dcp.json
  mpiexec -n 4 /usr/bin/python3 scripts/realfw.py --framework megatron-dist \\
      --set preset=megatron-dist --set layout=megatron-dist --set model.scale=0.002 \\
      --target /tmp/rfw -o /tmp/rfw/mdist.json

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

Options: --framework torch-save|dcp|megatron-dist; --dcp-file-mode item|rank (dcp:
FileSystemWriter single_file_per_rank False/True, default item; megatron-dist: rank only,
Megatron's); --fsync (torch-save: reopen O_RDONLY, fsync, close after each torch.save, timed as
step sync_s; DCP always runs with sync_files=True);
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
Python 3.11 needs an import-time fix of torch 1.13 (see realfw_runners.install_dcp_import_fix); the report's
framework.workaround says so when it was applied. megatron-dist writes the same DCP files inside
iter_0000001/ (__<rank>_0.distcp and __<rank>_1.distcp: each rank's items split into two bins,
largest first into the emptier, as torch 2.x's FileSystemWriter does with thread_count 2, which
1.13's lacks and realfw_runners.dcp_writer adds), its state dict the plan's items of each rank
(the megatron-dist layout spreads the replicated tensors over the data-parallel ranks, so each
key is on one rank), and rank 0's common.pt (a few small Python objects: not the size of a real
Megatron common state), metadata.json and latest_checkpointed_iteration.txt, none fsynced.

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
Only torch, mpi4py, the standard library and scripts/ckptinput.py are used. The parts, beside
this file (scripts/): realfw_job.py (MPI's state, errors, abort), realfw_inventory.py (the plan:
files, tensors, writers), realfw_runners.py (the frameworks: torch-save, dcp, megatron-dist), realfw_timing.py
(the timed frame, the cache step, residency), realfw_report.py (phases, environment, report).
"""

import argparse
import os
import sys

try:  # beside this file (scripts/): the binary's rules for targets and outputs, and the parts
    from ckptinput import PathError, check_output_file, check_target, make_dirs, remove_dirs
    import realfw_job as job
    import realfw_runners as runners
    from realfw_inventory import check_plan, item_key, run_plan, tool_version
    from realfw_job import GiB, InputError, RunError, abort, collective_input_check, say, \
        utc_now
    from realfw_report import environment, repetition_record, say_repetition, write_report
    from realfw_timing import cache_step, drop_caches_ok, residency
except ImportError as _e:
    sys.stderr.write(f"realfw: error: needs ckptinput.py and realfw_*.py from the same directory "
                     f"(scripts/) ({_e}); run scripts/realfw.py from the ckptbench source tree\n")
    sys.exit(2)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------------------------------------
# Options

class Parser(argparse.ArgumentParser):
    """argparse that prints (usage, help, errors) on rank 0 only; every rank exits the same way."""

    def _print_message(self, message, file=None):
        if job.RANK == 0:
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
    p.add_argument("--framework", required=True, choices=["torch-save", "dcp", "megatron-dist"],
                   help="torch-save: torch.save/torch.load per plan file; dcp: "
                        "torch.distributed.checkpoint save_state_dict/load_state_dict; "
                        "megatron-dist: Megatron-LM's torch_dist format (DCP in iter_0000001/ "
                        "with two files per rank, common.pt, metadata.json, the tracker)")
    p.add_argument("--dcp-file-mode", choices=["item", "rank"], default=None,
                   help="dcp: FileSystemWriter single_file_per_rank=False (item: one file per "
                        "tensor, the 1.13 code default) or True (rank); default item. "
                        "megatron-dist: rank (Megatron's), the only one allowed")
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
    if args.framework != "torch-save" and args.fsync:
        p.error("argument --fsync: only with --framework torch-save "
                "(DCP's FileSystemWriter fsyncs every file itself, sync_files=True)")
    if args.framework == "dcp" and args.dcp_file_mode is None:
        args.dcp_file_mode = "item"
    if args.framework == "megatron-dist":
        if args.dcp_file_mode == "item":
            p.error("argument --dcp-file-mode: megatron-dist writes one file per rank and bin "
                    "(Megatron's FileSystemWriter, single_file_per_rank=True): rank only")
        args.dcp_file_mode = "rank"
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
# Setup (rank 0 decides, everyone learns; exit 2 on bad input before any I/O)

def setup(args):
    """Rank 0: plan, checks, run directory. Returns the shared setup dict on every rank."""
    result, made = None, []
    if job.RANK == 0:
        try:
            point, cmd = run_plan(args)
            warnings = check_plan(point, args.framework, job.SIZE)
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
    result = job.COMM.bcast(result, root=0)
    if "error" in result:
        if job.RANK == 0:
            sys.stderr.write(f"realfw: error: {result['error']}\n")
        sys.exit(2)
    return result


# ----------------------------------------------------------------------------------------------
# One repetition

def repetition(args, rep, st, tensors, runner, node_comm):
    """Save, cache step, restore, verify, clean up. Returns the repetition record (rank 0)."""
    pointdir = os.path.join(st["run_dir"], "point-001", f"rep-{rep:02d}")
    os.makedirs(pointdir, exist_ok=True)
    payload = sum(t.numel() * t.element_size() for t in tensors.values())

    # --- save -----------------------------------------------------------------------------
    rec, written, read_paths = runner.save(pointdir, tensors)
    rec["bytes"] = payload
    rec["files"] = len(written)
    rec["file_bytes"] = sum(os.stat(p).st_size for p in written)
    save_recs = job.COMM.gather(rec, root=0)
    if job.RANK == 0:
        warning = runner.file_count_warning(rep, pointdir, save_recs)
        if warning:
            st["warnings"].append(warning)

    # --- cache step and residency (untimed) -------------------------------------------------
    cache_step(st["cache"], read_paths, node_comm)
    res = residency(read_paths)
    sample = job.COMM.gather(res, root=0)

    # --- restore ----------------------------------------------------------------------------
    rrec, restored = runner.restore(pointdir, tensors, written)
    rrec["bytes"] = payload

    # --- verify (untimed) -------------------------------------------------------------------
    rrec["verified"] = runner.verify(pointdir, tensors, written, restored)
    del restored
    restore_recs = job.COMM.gather(rrec, root=0)

    # --- clean up (untimed): only what this run made ------------------------------------------
    job.COMM.Barrier()
    if not args.keep:
        for p in written:  # this rank's files (rank 0 in DCP: .metadata too)
            os.unlink(p)
        job.COMM.Barrier()
        if job.RANK == 0:
            note_left(st, remove_empty_tree(pointdir))
    if job.RANK != 0:
        return None
    return repetition_record(rep, save_recs, restore_recs, sample, st["cache"], runner)


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


# ----------------------------------------------------------------------------------------------
# Main

def main(argv):
    args = parse_args(argv)  # every option checked (the target too) before MPI and torch start
    job.init_mpi()

    # The framework first: a missing torch/DCP is bad input, found before anything is created.
    err = None
    try:
        workaround = runners.import_framework(args)
    except Exception as e:  # ImportError, or the ValueError the fix did not cure
        err, workaround = f"cannot import the framework ({args.framework}): " \
                          f"{type(e).__name__}: {e}", None
    collective_input_check(err)

    st = setup(args)
    point = st["point"]
    node_comm = job.COMM.Split_type(job.MPI.COMM_TYPE_SHARED, key=job.RANK)
    env = environment(args, st["run_dir"], runners.torch)
    nodes = job.COMM.bcast(env["nodes"] if job.RANK == 0 else None, root=0)
    framework = runners.framework_info(args, workaround)

    say(f"realfw: {framework['name']} {runners.torch.__version__}, {job.SIZE} ranks, layout "
        f"{point.get('layout')}, {point['payload_bytes'] / GiB:.3f} GiB payload, cache "
        f"{st['cache']}, run dir {st['run_dir']}", args)

    try:
        if runners.uses_dcp(args):
            runners.init_process_group(nodes)
        # The training state, in host memory before anything is timed.
        runner = runners.make_runner(args, point)
        tensors = {item_key(it): runners.make_tensor(it) for it in runner.items()}
        job.COMM.Barrier()

        reps = []
        for rep in range(1, args.repetitions + 1):
            r = repetition(args, rep, st, tensors, runner, node_comm)
            if job.RANK == 0:
                reps.append(r)
                say_repetition(args, rep, r)
    except Exception as e:  # any failure on this rank ends the whole job
        abort(str(e) if isinstance(e, RunError) else f"{type(e).__name__}: {e}")

    job.COMM.Barrier()
    if runners.uses_dcp(args):
        import torch.distributed as dist
        dist.destroy_process_group()
    if not args.keep and job.RANK == 0:
        left = remove_empty_tree(st["run_dir"])
        note_left(st, left)
        if not left:
            remove_dirs(st["target_made"])  # the target, when this run made it
    if job.RANK != 0:
        return 0
    return write_report(args, st, env, framework, point, reps,
                        os.path.relpath(os.path.abspath(__file__), REPO))


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except SystemExit:
        raise
    except BaseException as e:  # anything unexpected outside the guarded phases
        abort(f"{type(e).__name__}: {e}")
    sys.exit(code)
