"""What scripts/realfw.py reports: ckptbench's report layout (docs/report.schema.json, tool.name
"ckptbench-realfw", a `framework` object) from every rank's records.

phase_report and repetition_record turn the ranks' records into a phase and a repetition
(bytes, files, elapsed_s as the max over ranks, bandwidth, per-rank times, steps, straggler
ratio, /proc/self/io sums, cache residency); environment gathers the hosts and CPU affinity of
every rank and describes the node, the file system and the Python; write_report writes the
report through a temporary file renamed into place; phase_line is rank 0's line per phase.
"""

import json
import os
import platform
import statistics
import subprocess
import sys

import realfw_job as job
from ckptinput import PathError, write_atomic
from realfw_job import GiB, cpu_list, say, utc_now


def mmm(values):
    """{min, mean, max} of a list of numbers."""
    return {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}


def min_median_max(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


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


def repetition_record(rep, save_recs, restore_recs, sample, cache_method, runner):
    """Rank 0: a repetition in the report's layout from every rank's save and restore records and
    residency sample; runner: the framework's (sync per file, sync_ops)."""
    files = sum(r["files"] for r in save_recs)
    file_bytes = sum(r["file_bytes"] for r in save_recs)
    rank_files = [r["files"] for r in save_recs]
    save = phase_report(save_recs, files, file_bytes, rank_files, runner.sync_ops(files))
    save["sync"] = "file" if runner.syncs_files else "none"
    restore = phase_report(restore_recs, files, file_bytes)
    restore["verify_inline"] = False
    cache = {"method": cache_method, "bypassed_by_o_direct": False}
    if all(s is not None for s in sample):
        rb, fb = sum(s[0] for s in sample), sum(s[1] for s in sample)
        cache.update(resident_fraction=rb / fb if fb else 0.0, resident_bytes_sampled=rb,
                     file_bytes_sampled=fb)
    return {"repetition": rep, "save": save, "cache": cache, "restore": restore,
            "verified": True, "bytes_verified": sum(r["verified"] for r in restore_recs)}


def phase_line(label, rep, reps, ph, extra):
    return (f"realfw: rep {rep}/{reps} {label:<7} {ph['bytes'] / GiB:.3f} GiB in "
            f"{ph['elapsed_s']:.3f} s = {ph['bandwidth_GiBps']:.3f} GiB/s ({extra})")


def say_repetition(args, rep, r):
    """Rank 0: a line per phase of repetition record r (unless --quiet)."""
    s, c, rs = r["save"], r["cache"], r["restore"]
    sync = {"none": "no sync", "file": "fsync per file"}[s["sync"]]
    say(phase_line("save", rep, args.repetitions, s,
                   f"{s['files']} files, {s['file_bytes'] / GiB:.3f} GiB on disk, "
                   f"{sync}"), args)
    resid = (f", {100 * c['resident_fraction']:.0f}% cached before"
             if "resident_fraction" in c else "")
    say(phase_line("restore", rep, args.repetitions, rs,
                   f"cache {c['method']}{resid}, verified"), args)


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


def environment(args, run_dir, torch):
    """Collective: hosts and CPU affinity from every rank; the rest from rank 0."""
    hosts = job.COMM.allgather(job.HOST)
    try:
        aff = cpu_list(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        aff = ""
    affs = job.COMM.allgather(aff)
    if job.RANK != 0:
        return None
    distinct = list(dict.fromkeys(hosts))
    env = {
        "hosts": distinct,
        "ranks": job.SIZE,
        "nodes": len(distinct),
        "ranks_per_node": {h: hosts.count(h) for h in distinct},
        "mpi_library": job.MPI.Get_library_version().replace("\x00", "").strip(),
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


def write_report(args, st, env, framework, point, reps, runner):
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
                 "runner": runner},
        "started_at": st["started_at"],
        "finished_at": utc_now(),
        "status": "ok",
        "config": {"file": args.config, "set": args.sets, "world": job.SIZE,
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
