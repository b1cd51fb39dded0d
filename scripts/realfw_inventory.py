"""What the checkpoint holds and who writes what, for scripts/realfw.py.

Rank 0 asks the ckptbench binary (`ckptbench plan --json --items --world N`, without the MPI
launcher's variables) for the one point of the config: every file with the tensors in it (name,
dtype, bytes, writing rank). check_plan refuses, before any I/O, what the framework cannot save;
my_items gives each rank its part in state-dict order; item_key names a tensor across ranks.
"""

import json
import os
import subprocess

import realfw_job as job
from realfw_job import InputError, cpu_list

# ckptbench dtype spelling -> (torch dtype name, element size); anything else is saved as a
# uint8 tensor of the item's bytes.
DTYPES = {"bf16": ("bfloat16", 2), "f32": ("float32", 4), "f16": ("float16", 2)}


def clean_env():
    """The environment without the MPI launcher's variables: ckptbench plan runs as a plain
    process, not as a (singleton) rank of this job."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PRTE_"))}


def plan_command(args):
    cmd = [args.binary, "plan", "--json", "--items", "--world", str(job.SIZE)]
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
    if framework == "megatron-dist" and point.get("layout") != "megatron-dist":
        warnings.append(f"plan layout '{point.get('layout')}' is not megatron-dist: the runner "
                        "saves the plan's tensors of each rank in Megatron's torch_dist files "
                        "(iter_0000001/: common.pt, __<rank>_<n>.distcp, .metadata, "
                        "metadata.json; latest_checkpointed_iteration.txt)")
    idle = sorted(set(range(world)) - {it["rank"] for f in files for it in f.get("items", [])})
    if idle:
        warnings.append(f"rank(s) {cpu_list(idle)} hold no tensors in this plan and save nothing "
                        "(straggler_ratio excludes them)")
    return warnings


def my_items(point, framework):
    """This rank's work. torch-save: [(relative path, [items])] of its files in plan order;
    dcp (and megatron-dist): [items] of every file, those this rank writes. Items come in state-dict order (vrank,
    then the item's place in that rank's state: `plan --items` lists them in file-offset order,
    which a torch.save archive permutes into its records' key order)."""
    def state_order(items):
        return sorted(items, key=lambda it: (it["vrank"], it["shard"]))
    if framework == "torch-save":
        return [(f["path"], state_order(f["items"])) for f in point["file_list"]
                if f.get("items") and f["writers"] == [job.RANK]]
    return state_order([it for f in point["file_list"] for it in f.get("items", [])
                        if it["rank"] == job.RANK])

