"""The real frameworks scripts/realfw.py runs, one runner each.

torch-save (TorchSave): torch.save/torch.load of a dict per plan file. dcp (Dcp):
torch.distributed.checkpoint (torch.distributed._shard.checkpoint in 1.13) over gloo. Here too:
importing torch and DCP (with the import-time fix torch 1.13's DCP needs under Python 3.11), the
tensors a rank holds (deterministic data, bitwise comparison, a ShardedTensor per tensor for
DCP) and the timed phases, their steps split as the report names them (io_s, sync_s).
"""

import os
import platform
import socket
import sys
import time
import zlib

import realfw_job as job
from realfw_inventory import DTYPES, item_key, my_items
from realfw_job import RunError
from realfw_timing import timed, timed_call

torch = None  # imported by import_framework() once the options are known to be good


# ----------------------------------------------------------------------------------------------
# The framework import (DCP needs a fix under Python 3.11) and DCP's process group

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


def init_process_group(hosts_distinct):
    """gloo over TCP; rank 0 picks a free port and broadcasts it (rank/world from MPI)."""
    import torch.distributed as dist
    addr = None
    port = None
    if job.RANK == 0:
        addr = "127.0.0.1" if hosts_distinct == 1 else job.HOST
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1" if hosts_distinct == 1 else "", 0))
        port = s.getsockname()[1]
        s.close()
    addr, port = job.COMM.bcast((addr, port), root=0)
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}", rank=job.RANK,
                            world_size=job.SIZE)


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
                       placement=f"rank:{job.RANK}/cpu")
    props = TensorProperties(dtype=tensor.dtype, layout=torch.strided, requires_grad=False,
                             memory_format=torch.contiguous_format, pin_memory=False)
    gmd = ShardedTensorMetadata(shards_metadata=[md], size=torch.Size([tensor.numel()]),
                                tensor_properties=props)
    return ShardedTensor._init_from_local_shards_and_global_metadata([Shard(tensor, md)], gmd)


# ----------------------------------------------------------------------------------------------
# The timed phases. Each returns this rank's record: time (s), io (s), sync (s).

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


class _TimedOs:
    """The os module as DCP's filesystem module sees it while a save is timed: os.fsync timed
    into acc["sync"], everything else os's own."""

    def __init__(self, acc):
        self.fsync = timed_call(os.fsync, acc, "sync")

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
            dcp_fs._write_item = timed_call(write_item, acc, "io")
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
        reader.read_metadata = timed_call(reader.read_metadata, acc, "io")
        reader.read_data = timed_call(reader.read_data, acc, "io")
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


# ----------------------------------------------------------------------------------------------
# The runners: one per framework, the same steps. save -> (record, the files this rank wrote,
# the files it will read); restore -> (record, what was restored); verify -> bytes checked.

class TorchSave:
    """Every rank torch.save()s a dict of its tensors to each file the plan gives it (with
    --fsync: reopen O_RDONLY, fsync, close after each) and torch.load()s them back."""

    def __init__(self, args, point):
        self.fsync = bool(args.fsync)
        self.syncs_files = self.fsync  # whether the save fsyncs every file in the timed phase
        self.work = my_items(point, "torch-save")  # [(relative path, [items])]

    def sync_ops(self, files):
        return files if self.fsync else None

    def items(self):
        return [it for _, its in self.work for it in its]

    def save(self, pointdir, tensors):
        jobs = []
        for rel, items in self.work:
            path = os.path.join(pointdir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)  # before the timed phase
            jobs.append((path, {it["name"]: tensors[item_key(it)] for it in items}))
        rec = torch_save_phase(jobs, self.fsync)
        written = [p for p, _ in jobs]
        return rec, written, written

    def file_count_warning(self, rep, pointdir, save_recs):
        return None

    def restore(self, pointdir, tensors, written):
        loaded = {}
        return torch_load_phase(written, loaded), loaded

    def verify(self, pointdir, tensors, written, loaded):
        verified = 0
        for (rel, items), path in zip(self.work, written):
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
        return verified


class Dcp:
    """torch.distributed.checkpoint: save_state_dict() with FileSystemWriter (one file per item
    or per rank, sync_files=True), load_state_dict() with FileSystemReader, over gloo."""

    def __init__(self, args, point):
        self.mode = args.dcp_file_mode
        self.syncs_files = True  # sync_files=True: DCP fsyncs every file it writes
        self.work = my_items(point, "dcp")  # [items] this rank writes

    def sync_ops(self, files):
        return None

    def items(self):
        return self.work

    def save(self, pointdir, tensors):
        sd = {k: sharded(t) for k, t in tensors.items()}
        rec = dcp_save_phase(sd, pointdir, self.mode)
        del sd
        job.COMM.Barrier()  # .metadata is renamed into place by the coordinator before it returns
        prefix = f"__{job.RANK}_"
        mine = [n for n in os.listdir(pointdir) if n.startswith(prefix) and n.endswith(".distcp")]
        mine.sort(key=lambda n: int(n[len(prefix):-len(".distcp")]))
        written = [os.path.join(pointdir, n) for n in mine]
        meta = os.path.join(pointdir, ".metadata")
        if job.RANK == 0:
            written.append(meta)
        read_paths = [p for p in written if p != meta] + [meta]  # every rank reads .metadata
        return rec, written, read_paths

    def file_count_warning(self, rep, pointdir, save_recs):
        """Rank 0: a warning when the directory holds other files than the ranks wrote."""
        found = sum(len(fs) for _, _, fs in os.walk(pointdir))
        total = sum(r["files"] for r in save_recs)
        if found != total:
            return (f"repetition {rep}: {found} files in the checkpoint directory, {total} "
                    "attributed to ranks (__<rank>_<n>.distcp, .metadata)")
        return None

    def restore(self, pointdir, tensors, written):
        target = {k: sharded(torch.zeros_like(t)) for k, t in tensors.items()}
        return dcp_load_phase(target, pointdir), target

    def verify(self, pointdir, tensors, written, target):
        verified = 0
        for k, t in tensors.items():
            shards = target[k].local_shards()
            got = shards[0].tensor if len(shards) == 1 else None
            if got is None or not same_tensor(t, got):
                raise RunError(f"verification: {dcp_file_of(pointdir, k)}: key '{k}': restored "
                               f"{describe_tensor(got)} differs from the saved {describe_tensor(t)}")
            verified += t.numel() * t.element_size()
        return verified


def make_runner(args, point):
    return TorchSave(args, point) if args.framework == "torch-save" else Dcp(args, point)


def framework_info(args, workaround):
    """The report's `framework` object: what ran, and how."""
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
    return framework
