"""The real frameworks scripts/realfw.py runs, one runner each.

torch-save (TorchSave): torch.save/torch.load of a dict per plan file. dcp (Dcp):
torch.distributed.checkpoint (torch.distributed._shard.checkpoint in 1.13) over gloo.
megatron-dist (MegatronDist): Megatron-LM's torch_dist format around the same DCP save and load
(rank 0's common.pt, DCP's files in iter_0000001/ with two bins per rank, metadata.json and
latest_checkpointed_iteration.txt). Here too: importing torch and DCP (with the import-time fix
torch 1.13's DCP needs under Python 3.11), the tensors a rank holds (deterministic data, bitwise
comparison, a ShardedTensor per tensor for DCP) and the timed phases, their steps split as the
report names them (io_s, sync_s).
"""

import json
import os
import platform
import queue
import socket
import sys
import threading
import time
import zlib

import realfw_job as job
from realfw_inventory import DTYPES, item_key, my_items
from realfw_job import RunError
from realfw_timing import timed, timed_call

torch = None  # imported by import_framework() once the options are known to be good

# The frameworks that run DCP (a gloo process group, the import fix).
DCP_FRAMEWORKS = ("dcp", "megatron-dist")


def uses_dcp(args):
    return args.framework in DCP_FRAMEWORKS


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
    if uses_dcp(args):
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


def _item_size(item):
    """The bytes of a tensor WriteItem (its chunk), as torch 2.x's filesystem._item_size."""
    n = 1
    for s in item.tensor_data.chunk.sizes:
        n *= s
    return n * torch._utils._element_size(item.tensor_data.properties.dtype)


def split_by_size_and_type(bins, items):
    """torch 2.x's filesystem._split_by_size_and_type: byte items round robin, tensor items by
    decreasing size (a stable sort), each into the bin with the fewest bytes (ties: the lowest)."""
    from torch.distributed._shard.checkpoint.planner import WriteItemType
    if bins == 1:
        return [list(items)]
    bytes_w = [wi for wi in items if wi.type == WriteItemType.BYTE_IO]
    tensor_w = [wi for wi in items if wi.type != WriteItemType.BYTE_IO]
    buckets = [[] for _ in range(bins)]
    sizes = [0] * bins
    tensor_w.sort(key=_item_size, reverse=True)
    for i, wi in enumerate(bytes_w):
        buckets[i % bins].append(wi)
    for wi in tensor_w:
        b = min(range(bins), key=lambda k: sizes[k])
        buckets[b].append(wi)
        sizes[b] += _item_size(wi)
    return buckets


def dcp_writer(ckpt_dir, single_file_per_rank, thread_count):
    """DCP's FileSystemWriter (sync_files=True). thread_count > 1 (Megatron's
    TorchDistSaveShardedStrategy uses 2) is torch 2.x's writer option, which 1.13 lacks: then a
    subclass whose write_data does what 2.x's does - one file per bin (split_by_size_and_type)
    with one file per rank, one per item otherwise, __<rank>_<n>.distcp, written from a queue by
    thread_count threads (the caller's and thread_count - 1 more) - each file through 1.13's own
    _write_files_from_queue (open, _write_item per item, fsync, close)."""
    import torch.distributed._shard.checkpoint as dcp
    if thread_count == 1:
        return dcp.FileSystemWriter(ckpt_dir, single_file_per_rank=single_file_per_rank,
                                    sync_files=True)
    from torch.futures import Future
    dcp_fs = sys.modules[dcp.FileSystemWriter.__module__]

    class ThreadedFileSystemWriter(dcp.FileSystemWriter):
        def write_data(self, plan, planner):
            prefix = plan.storage_data.prefix
            groups = (split_by_size_and_type(thread_count, plan.items)
                      if self.single_file_per_rank else [[it] for it in plan.items])
            files = queue.Queue()
            for n, group in enumerate(groups):
                name = f"{prefix}{n}{dcp_fs.DEFAULT_SUFIX}"
                files.put((self.path / name, name, group))
            results, errors = [], []

            def worker():
                try:
                    while True:
                        try:
                            entry = files.get_nowait()
                        except queue.Empty:
                            return
                        results.extend(dcp_fs._write_files_from_queue(
                            [entry], planner, self.sync_files))
                except BaseException as e:  # the caller raises it
                    errors.append(e)
            threads = [threading.Thread(target=worker) for _ in range(1, thread_count)]
            for t in threads:
                t.start()
            worker()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
            fut = Future()
            fut.set_result(results)
            return fut

    return ThreadedFileSystemWriter(ckpt_dir, single_file_per_rank=single_file_per_rank,
                                    sync_files=True)


def dcp_save_phase(sd, ckpt_dir, single_file_per_rank, thread_count=1, before=None, after=None):
    """save_state_dict, split (for the report's steps; the calls made are DCP's own): io = its
    _write_item calls (each item torch.save'd into the file stream: pickling, CRC-32, writes;
    filesystem.py in 1.13), sync = its os.fsync calls (each data file, the coordinator's
    .metadata.tmp); with several writer threads both are summed over the threads. The rest of
    the phase is DCP's planning, its collectives (waits for the other ranks included) and the
    coordinator's pickling of Metadata. before/after: the framework's own files around DCP's
    (Megatron's common.pt; metadata.json and the tracker), timed in the phase, as io."""
    import torch.distributed._shard.checkpoint as dcp
    dcp_fs = sys.modules[dcp.FileSystemWriter.__module__]  # where the writer looks them up
    split = hasattr(dcp_fs, "_write_item") and getattr(dcp_fs, "os", None) is os

    def run():
        acc = {"io": 0.0, "sync": 0.0}
        if before:
            timed_call(before, acc, "io")()
        if split:
            write_item = dcp_fs._write_item
            dcp_fs._write_item = timed_call(write_item, acc, "io")
            dcp_fs.os = _TimedOs(acc)
        try:
            writer = dcp_writer(ckpt_dir, single_file_per_rank, thread_count)
            dcp.save_state_dict(sd, writer)
        finally:
            if split:
                dcp_fs._write_item, dcp_fs.os = write_item, os
        if after:
            timed_call(after, acc, "io")()
        return acc
    rec = timed(run)
    if not split:  # another DCP than 1.13's: the whole call, as before
        rec["io"] = rec["time"]
    return rec


def dcp_load_phase(target_sd, ckpt_dir, before=None):
    """load_state_dict, split: io = the reader's read_metadata and read_data calls (.metadata
    unpickled; each item torch.load'ed from its file view and copied into the state dict). The
    rest is DCP's load planning and its collectives (waits included). before: the framework's
    own reads ahead of DCP's (Megatron's tracker, metadata.json, common.pt), timed as io."""
    import torch.distributed._shard.checkpoint as dcp

    def run():
        acc = {"io": 0.0, "sync": 0.0}
        if before:
            timed_call(before, acc, "io")()
        reader = dcp.FileSystemReader(ckpt_dir)
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
    or per rank, sync_files=True), load_state_dict() with FileSystemReader, over gloo. A
    framework built on DCP (MegatronDist) changes the class attributes and the hooks: where DCP's
    directory is, how many writer threads, and its own files around DCP's."""

    subdir = ""  # DCP's directory, relative to the point directory
    thread_count = 1  # FileSystemWriter's bins/threads (1.13 has one)

    def __init__(self, args, point):
        self.single_file = args.dcp_file_mode == "rank"
        self.syncs_files = True  # sync_files=True: DCP fsyncs every file it writes
        self.work = my_items(point, "dcp")  # [items] this rank writes

    def sync_ops(self, files):
        return None

    def items(self):
        return self.work

    # Hooks: the framework's own files (rank 0's, beside DCP's), its save steps before and after
    # DCP's save and its reads before DCP's load (None: plain DCP).
    def side_files(self, pointdir):
        return []

    def save_hooks(self, pointdir):
        return None, None

    def load_hook(self, pointdir):
        return None

    def save(self, pointdir, tensors):
        ckpt_dir = os.path.join(pointdir, self.subdir)
        os.makedirs(ckpt_dir, exist_ok=True)  # before the timed phase
        sd = {k: sharded(t) for k, t in tensors.items()}
        before, after = self.save_hooks(pointdir)
        rec = dcp_save_phase(sd, ckpt_dir, self.single_file, self.thread_count, before, after)
        del sd
        job.COMM.Barrier()  # .metadata is renamed into place by the coordinator before it returns
        prefix = f"__{job.RANK}_"
        mine = [n for n in os.listdir(ckpt_dir) if n.startswith(prefix) and n.endswith(".distcp")]
        mine.sort(key=lambda n: int(n[len(prefix):-len(".distcp")]))
        written = [os.path.join(ckpt_dir, n) for n in mine]
        meta = os.path.join(ckpt_dir, ".metadata")
        side = self.side_files(pointdir) if job.RANK == 0 else []
        if job.RANK == 0:
            written += [meta] + side
        # Every rank reads .metadata; rank 0's cache step covers the framework's own files.
        read_paths = [p for p in written if p != meta and p not in side] + [meta] + side
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
        rec = dcp_load_phase(target, os.path.join(pointdir, self.subdir),
                             self.load_hook(pointdir))
        return rec, target

    def verify(self, pointdir, tensors, written, target):
        ckpt_dir = os.path.join(pointdir, self.subdir)
        verified = 0
        for k, t in tensors.items():
            shards = target[k].local_shards()
            got = shards[0].tensor if len(shards) == 1 else None
            if got is None or not same_tensor(t, got):
                raise RunError(f"verification: {dcp_file_of(ckpt_dir, k)}: key '{k}': "
                               f"restored {describe_tensor(got)} differs from the saved "
                               f"{describe_tensor(t)}")
            verified += t.numel() * t.element_size()
        return verified


# Megatron-LM's torch_dist format (megatron/core/dist_checkpointing and training/checkpointing.py):
# the directory of iteration 1, the files beside DCP's, and what they hold here.
MEGATRON_ITER = "iter_0000001"
MEGATRON_TRACKER = "latest_checkpointed_iteration.txt"
# metadata.json: dist_checkpointing's CheckpointingConfig, json.dump'ed (save_config).
MEGATRON_CONFIG = {"sharded_backend": "torch_dist", "sharded_backend_version": 1,
                   "common_backend": "torch", "common_backend_version": 1}
# common.pt: the state that is not sharded (Megatron's args, iteration, scheduler, ...), a few
# small Python objects here: its size is not the real one's (nor the replay's estimate).
MEGATRON_COMMON = {"checkpoint_version": 3.0, "iteration": 1,
                   "num_floating_point_operations_so_far": 0,
                   "opt_param_scheduler": {"max_lr": 3.0e-4, "min_lr": 3.0e-5, "num_steps": 1,
                                           "warmup_steps": 0, "decay_steps": 1000,
                                           "decay_style": "cosine"},
                   "args": {"framework": "realfw.py megatron-dist", "iteration": 1}}


class MegatronDist(Dcp):
    """Megatron-LM's torch_dist checkpoint, DCP underneath, as Megatron saves and loads it with
    PyTorch's FileSystemWriter/Reader (TorchDistSaveShardedStrategy, thread_count 2, one file per
    rank and bin). Save: rank 0 torch.save()s the common state to iter_0000001/common.pt
    (dist_checkpointing.save's save_common); every rank save_state_dict()s its tensors (the plan's
    items of this rank: Megatron's fully parallel save spreads the replicated tensors over the
    data-parallel ranks, so each key is on one rank) into iter_0000001/__<rank>_{0,1}.distcp,
    fsync per file, rank 0's .metadata as DCP's commit record; then rank 0 json.dump()s
    metadata.json (save_config), a barrier, rank 0 writes latest_checkpointed_iteration.txt, a
    barrier (checkpointing.py). None of Megatron's own three files is fsynced. Load, every rank:
    the tracker (read_metadata), metadata.json (maybe_load_config), torch.load of common.pt
    (load_common), then load_state_dict() into the preallocated tensors."""

    subdir = MEGATRON_ITER
    thread_count = 2

    def __init__(self, args, point):
        super().__init__(args, point)
        self.loaded = None  # what the restore read from Megatron's own files

    def side_files(self, pointdir):
        it = os.path.join(pointdir, MEGATRON_ITER)
        return [os.path.join(it, "common.pt"), os.path.join(it, "metadata.json"),
                os.path.join(pointdir, MEGATRON_TRACKER)]

    def save_hooks(self, pointdir):
        import torch.distributed as dist
        common, config, tracker = self.side_files(pointdir)

        def before():
            if job.RANK == 0:
                torch.save(MEGATRON_COMMON, common)

        def after():
            if job.RANK == 0:
                with open(config, "w") as f:
                    json.dump(MEGATRON_CONFIG, f)
            dist.barrier()
            if job.RANK == 0:
                with open(tracker, "w") as f:
                    f.write(str(MEGATRON_COMMON["iteration"]))
            dist.barrier()
        return before, after

    def load_hook(self, pointdir):
        common, config, tracker = self.side_files(pointdir)

        def before():
            with open(tracker) as f:
                iteration = f.read().strip()
            with open(config) as f:
                cfg = json.load(f)
            self.loaded = {"iteration": iteration, "config": cfg,
                           "common": torch.load(common, map_location="cpu")}
        return before

    def verify(self, pointdir, tensors, written, target):
        common, config, tracker = self.side_files(pointdir)
        got, self.loaded = self.loaded, None
        for path, have, want in ((tracker, got["iteration"], str(MEGATRON_COMMON["iteration"])),
                                 (config, got["config"], MEGATRON_CONFIG),
                                 (common, got["common"], MEGATRON_COMMON)):
            if have != want:
                raise RunError(f"verification: {path}: read {have!r}, saved {want!r}")
        return super().verify(pointdir, tensors, written, target)


def make_runner(args, point):
    runner = {"torch-save": TorchSave, "dcp": Dcp, "megatron-dist": MegatronDist}
    return runner[args.framework](args, point)


def framework_info(args, workaround):
    """The report's `framework` object: what ran, and how."""
    fw_name = "torch.save" if args.framework == "torch-save" else "torch.distributed.checkpoint"
    # fsync: whether the save fsyncs every file inside the timed phase (DCP: sync_files=True).
    framework = {"name": fw_name, "library": "torch", "version": torch.__version__,
                 "fsync": bool(args.fsync) or uses_dcp(args)}
    if args.framework == "torch-save":
        framework["api"] = ("torch.save(dict, path) per plan file; torch.load(path, "
                            "map_location='cpu')")
        if args.fsync:
            framework["api"] += "; after each save: open(path, O_RDONLY), fsync, close"
        return framework
    framework.update(
        api="torch.distributed._shard.checkpoint.save_state_dict(sd, FileSystemWriter(dir, "
            f"single_file_per_rank={args.dcp_file_mode == 'rank'}, sync_files=True)); "
            "load_state_dict(sd, FileSystemReader(dir))",
        file_mode=args.dcp_file_mode, sync_files=True, process_group="gloo",
        state_dict="each rank's tensors keyed v<vrank>/<name>, each a ShardedTensor with one "
                   "local shard on its rank: DCP 1.13's default planner writes plain tensors "
                   "on the coordinator (rank 0) only")
    if args.framework == "megatron-dist":
        framework["api"] = (
            "Megatron-LM torch_dist, as megatron/core/dist_checkpointing saves and loads it: "
            f"rank 0 torch.save(common, '{MEGATRON_ITER}/common.pt'); "
            f"save_state_dict(sd, FileSystemWriter('{MEGATRON_ITER}', single_file_per_rank=True, "
            "sync_files=True, thread_count=2)) (thread_count as torch 2.x's writer: two bins "
            "per rank, largest item first into the emptier one, two writer threads); rank 0 "
            f"json.dump(config, '{MEGATRON_ITER}/metadata.json'), barrier, rank 0 writes "
            f"'{MEGATRON_TRACKER}', barrier. Load, every rank: the tracker, metadata.json, "
            "torch.load(common.pt), load_state_dict(sd, FileSystemReader(dir))")
        framework["layout"] = "megatron-dist"
        framework["thread_count"] = MegatronDist.thread_count
    if workaround:
        framework["workaround"] = workaround
    return framework
