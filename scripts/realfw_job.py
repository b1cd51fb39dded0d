"""The job scripts/realfw.py runs in.

MPI's state once started (MPI, COMM, RANK, SIZE: read them as realfw_job.RANK, init_mpi sets
them; before it, RANK is the launcher's), this host, rank 0's progress lines, the abort that ends
the whole job, the collective check of bad input, the two kinds of error, and the small helpers
the other parts share (utc_now, cpu_list, GiB).
"""

import datetime
import os
import socket
import sys


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
GiB = float(1 << 30)


class InputError(Exception):
    """Bad input found before any I/O: exit 2."""


class RunError(Exception):
    """An error during the run (I/O, framework, verification): abort the job, exit 1."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
