"""How scripts/realfw.py measures: the frame around the framework's calls and what keeps the page
cache out of the restore.

timed(fn): polite waits for every rank (no busy polling), a barrier, this rank's perf_counter()
around fn, the /proc/self/io deltas alongside; timed_call: a function whose time adds up in a
step (io, sync). Between save and restore, untimed: cache_step (fadvise, drop-caches or none)
and the residency sample (mmap + mincore of the files each rank will read).
"""

import ctypes
import mmap
import os
import time

import realfw_job as job


def read_proc_io():
    """This process's /proc/self/io counters, or None where unreadable."""
    try:
        with open("/proc/self/io") as f:
            return {k.strip(): int(v) for k, v in (line.split(":", 1) for line in f if ":" in line)}
    except (OSError, ValueError):
        return None


def polite_wait():
    """Waits for every rank without spinning: an Ibarrier tested between short sleeps. Open MPI's
    blocking collectives busy-poll; where ranks share cores (4 ranks on this 2-core test machine)
    a rank that finished its timed phase would take CPU from those still in theirs. ckptbench's
    own waits back off the same way (agreement.hpp, Backoff)."""
    req = job.COMM.Ibarrier()
    delay = 0.0001
    while not req.Test():
        time.sleep(delay)
        delay = min(delay * 2, 0.005)


def timed(fn):
    """Barrier, then this rank's perf_counter() around fn(); /proc/self/io deltas alongside. The
    waits around it are polite (polite_wait), then a plain barrier aligns the start."""
    io0 = read_proc_io()
    polite_wait()
    job.COMM.Barrier()
    t0 = time.perf_counter()
    rec = fn()
    rec["time"] = time.perf_counter() - t0
    polite_wait()
    io1 = read_proc_io()
    rec["proc_io"] = ({k: max(0, io1[k] - io0[k]) for k in io0 if k in io1}
                      if io0 is not None and io1 is not None else None)
    return rec


def timed_call(fn, acc, key):
    """fn, its time added to acc[key] on every call."""
    def call(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc[key] += time.perf_counter() - t0
    return call


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
    job.COMM.Barrier()
    if method == "drop-caches" and node_comm.Get_rank() == 0:  # one rank per node
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    job.COMM.Barrier()

