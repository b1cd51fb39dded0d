#!/usr/bin/env bash
# Several MPI hosts on one machine (issue 18 item 2): scripts/multihost/mpiexec.sh starts each
# host's Open MPI daemon in a UTS namespace of its own (rsh-agent.sh), optionally with a per-host
# FUSE view of the target (bindfs: a page cache per host, like a parallel-file-system client per
# node). Real runs on 2 hosts x 2 ranks check: (a) the report names 2 hosts and MPI's node
# detection sees 2 real nodes; (b) aggregated-node writes one file per real node and verifies;
# (c) rank-shift with per-host caches leaves the restore's files uncached (resident_fraction < 0.1)
# and verifies, while (c') the same mounts keep a host's own files cached (the measurement is not
# blind on FUSE); (d) per_node bandwidth has an entry per host and a consistent imbalance;
# (e) rank-shift on the shared page cache reports the files resident (> 0.5). Also: what Open MPI
# passes the agent, the clear failure when not root, and nothing left behind (mounts, daemons).
# Skips (77) only when namespaces or FUSE cannot work here (not root, no unshare, no /dev/fuse,
# no Open MPI 4), printing why. Installs bindfs with apt-get when missing and root.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
PY="$(python_with json)" || { echo "skip: no python3"; exit 77; }
MH="$SRC/scripts/multihost/mpiexec.sh"
AGENT="$SRC/scripts/multihost/rsh-agent.sh"
export CKPT_MULTIHOST_MPIEXEC="${CKPT_MPIEXEC:-mpiexec}"
unset CKPT_MULTIHOST_LOG CKPT_MULTIHOST_CACHE_DIRS CKPT_MULTIHOST_HOST CKPT_MULTIHOST_PREFIX CKPT_MULTIHOST_BIND

[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (UTS and mount namespaces, FUSE mounts)"; exit 77; }
if ! command -v bindfs > /dev/null; then
  command -v apt-get > /dev/null || { echo "skip: bindfs is not installed and there is no apt-get"; exit 77; }
  echo "installing bindfs (Debian package bindfs; scripts/setup.sh --with-cluster installs it too)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -qq --no-install-recommends bindfs ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends bindfs; }; } > /dev/null 2>&1 ||
    { echo "skip: apt-get install bindfs failed"; exit 77; }
fi

make_workdir multihost
# Whatever a failed or timed-out run left: FUSE daemons serving our directories, ranks writing
# into them (each by its PID, only processes whose command line names this test's directory).
cli_on_exit() {
  local p
  for p in $(pgrep -f -- "bindfs .*$work") $(rank_pids "$work"); do kill "$p" 2> /dev/null; done
}

out="$("$MH" --check 2>&1)"; code=$?
if [ $code -eq 77 ]; then echo "skip: $out"; exit 77; fi
if [ $code -eq 0 ] && grep -q "ok: 2 hosts" <<< "$out"; then ok "mpiexec.sh --check: $out"; else
  bad "mpiexec.sh --check: exit $code: $out"; summary multihost; exit 1
fi
# Per-host caches need FUSE too; without it only their cases are skipped.
fuse=1
out="$("$MH" --cache-dir "$work/probe" --check 2>&1)"; code=$?
if [ $code -eq 0 ] && grep -q "its own FUSE view" <<< "$out"; then ok "mpiexec.sh --cache-dir DIR --check: $out"
elif [ $code -eq 77 ]; then fuse=0; echo "skip (c), (c') and the docs example: $out"
else bad "mpiexec.sh --cache-dir DIR --check: exit $code: $out"; fuse=0
fi

# Llama-2-7B training state at 1/1024 (88 MiB), TP2 x DP2, buffered I/O (rank-shift is the
# cache-defeat method under test, not O_DIRECT), 2 repetitions, verified.
cat > "$work/cfg.json" << 'J'
{"model": {"name": "llama2-7b", "scale": "1/1024"},
 "parallelism": {"tp": 2, "pp": 1, "dp": "auto", "zero_stage": 1},
 "layout": "file-per-shard", "backend": "posix", "block_size": "128K", "direct": false,
 "sync": "end", "repetitions": 2, "verify": true}
J

# run NAME [MPIEXEC.SH OPTIONS] -- [RUN OPTIONS]: 2 hosts x 2 ranks, target $work/NAME; sets out,
# code and doc ($work/NAME.json).
run() {
  local name="$1" mh=() t0=$SECONDS
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do mh+=("$1"); shift; done
  shift
  mkdir -p "$work/$name"
  doc="$work/$name.json"
  out="$(timeout 120 "$MH" "${mh[@]}" 2 2 -- "$BIN" run --config "$work/cfg.json" \
        --target "$work/$name" --output "$doc" --quiet "$@" 2>&1)"
  code=$?
  echo "     ($name: exit $code after $((SECONDS - t0)) s)"
}
# check DOC PYTHON-ASSERTIONS: runs the assertions (d = the report, p = its point, reps = its
# repetitions, env = environment); prints "ok" (with ": INFO" when they set info) or what failed.
check() {
  "$PY" - "$1" "$2" << 'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    env = d["environment"]; p = d["points"][0]; reps = p["repetitions"]
    info = ""
    exec(sys.argv[2])
    print("ok" + (": " + info if info else ""))
except AssertionError as e:
    print(f"assertion failed: {e}")
except Exception as e:
    print(f"{type(e).__name__}: {e}")
PY
}
# expect NAME DOC PYTHON: ok/bad with NAME, showing what failed.
expect() {
  local r
  r="$(check "$2" "$3")"
  case "$r" in ok*) ok "$1${r#ok}" ;; *) bad "$1: $r" ;; esac
}

# ---- (a), (d), (e): rank-shift on the shared page cache (no per-host mounts). The agent logs the
# arguments Open MPI passes it.
CKPT_MULTIHOST_LOG="$work/agent.log" run shared -- --set cache=rank-shift
if [ $code -eq 0 ]; then ok "2 hosts x 2 ranks, shared page cache: exit 0"; else bad "shared: exit $code: $(tail -c 1500 <<< "$out")"; fi
# The command is `orted ...`, or with a prefix (mpiexec called by its absolute path) a shell line
# that sets PATH and runs /usr/bin/orted.
if [ "$(wc -l < "$work/agent.log" 2> /dev/null)" -eq 2 ] && grep -q '^.* on [^:]*: \[ckpt-node1\] \[[^]]*orted\] ' "$work/agent.log" \
   && grep -q '\[ckpt-node2\] \[[^]]*orted\] .*\[orte_hnp_uri\]' "$work/agent.log"; then
  ok "Open MPI called the agent twice as 'AGENT HOST orted ...' (ckpt-node1, ckpt-node2)"
else
  bad "agent calls: $(cut -c1-300 "$work/agent.log" 2> /dev/null)"
fi
expect "(a) environment: hosts ckpt-node1 and ckpt-node2, nodes 2, 2 ranks on each" "$work/shared.json" '
assert env["hosts"] == ["ckpt-node1", "ckpt-node2"], env["hosts"]
assert env["nodes"] == 2, env["nodes"]
assert env["ranks_per_node"] == {"ckpt-node1": 2, "ckpt-node2": 2}, env["ranks_per_node"]'
expect "(a) node detection (MPI_COMM_TYPE_SHARED): plan.nodes 2, not emulated; cache rank-shift" "$work/shared.json" '
assert p["plan"]["nodes"] == 2 and p["plan"]["nodes_emulated"] is False, (p["plan"]["nodes"], p["plan"]["nodes_emulated"])
assert p["settings"]["cache"] == "rank-shift", p["settings"]["cache"]
assert not any("single real node" in w for w in p["warnings"]), p["warnings"]'
# per_node entries carry the node index and its host; the ranks per entry must match
# ranks_per_node of that host, and slowest_host names the slowest entry.
expect "(d) per_node save and restore: 2 entries (one per host), imbalance = max/min, slowest = min" "$work/shared.json" '
assert len(reps) == 2
for r in reps:
    for ph in ("save", "restore"):
        pn = r[ph]["per_node"]
        assert pn["nodes"] == 2 and len(pn["per_node"]) == 2, (ph, pn)
        assert [e["node"] for e in pn["per_node"]] == [0, 1], pn["per_node"]
        assert [e["host"] for e in pn["per_node"]] == env["hosts"], pn["per_node"]
        assert [e["ranks"] for e in pn["per_node"]] == [env["ranks_per_node"][e["host"]] for e in pn["per_node"]], pn["per_node"]
        assert abs(sum(e["bytes"] for e in pn["per_node"]) - r[ph]["bytes"]) < 1, (sum(e["bytes"] for e in pn["per_node"]), r[ph]["bytes"])
        bw = [e["bandwidth_GiBps"] for e in pn["per_node"]]
        assert min(bw) > 0, bw
        assert abs(pn["node_imbalance"] - max(bw) / min(bw)) < 1e-9 and pn["node_imbalance"] >= 1, (pn["node_imbalance"], bw)
        assert pn["slowest_node"] == bw.index(min(bw)), (pn["slowest_node"], bw)
        assert pn["slowest_host"] == pn["per_node"][pn["slowest_node"]]["host"], pn
        assert abs(pn["bandwidth_GiBps"]["min"] - min(bw)) < 1e-12 and abs(pn["bandwidth_GiBps"]["max"] - max(bw)) < 1e-12
        info += "%s%d %s GiB/s x%.2f; " % (ph, r["repetition"], "/".join("%.2f" % x for x in bw), pn["node_imbalance"])
info = "node1/node2 GiB/s and imbalance: " + info.rstrip("; ")'
# "any": drop_caches is global, and a test running beside this one (ctest -j) may empty the cache
# before one repetition's restore; a page cache shared by the hosts shows in the others.
expect "(e) rank-shift on one shared page cache: resident_fraction > 0.5 (in some repetition), status ok, verified" "$work/shared.json" '
assert d["status"] == "ok" and p["status"] == "ok", (d["status"], p["status"])
fr = [r["cache"]["resident_fraction"] for r in reps]
assert all(r["cache"]["method"] == "rank-shift" for r in reps)
assert any(f > 0.5 for f in fr), fr
want = p["plan"]["payload_bytes"] + p["plan"]["index_bytes"]
assert all(r["verified"] and r["bytes_verified"] == want for r in reps), ([r["bytes_verified"] for r in reps], want)
info = "resident_fraction %s" % ", ".join("%.3f" % f for f in fr)'
# The tool must say that rank-shift did not keep the files out of the cache here.
if [ "$(check "$work/shared.json" 'assert any("page cache" in w and "nodes share a page cache" in w for w in p["warnings"])')" = ok ]; then
  ok "(e) the point warns that the restore's bytes were still cached (the nodes share a page cache)"
else
  bad "(e) no warning although resident_fraction > 0.5 under rank-shift (warnings: $(jq_py "$work/shared.json" "d['points'][0]['warnings']"))"
fi

# ---- (c): the same with a FUSE view of the target per host: the reader's host never cached the
# other host's files.
if [ $fuse -eq 1 ]; then
  run fuse --cache-dir "$work/fuse" -- --set cache=rank-shift
  if [ $code -eq 0 ]; then ok "2 hosts with per-host FUSE caches: exit 0"; else bad "fuse: exit $code: $(tail -c 1500 <<< "$out")"; fi
  expect "(c) rank-shift with per-host caches: every repetition resident_fraction < 0.1, restore verified, target seen as FUSE" "$work/fuse.json" '
assert d["status"] == "ok" and p["status"] == "ok", (d["status"], p["status"])
assert env["hosts"] == ["ckpt-node1", "ckpt-node2"] and p["plan"]["nodes_emulated"] is False
assert env["file_system"]["type"] == "fuse", env["file_system"]
fr = [r["cache"]["resident_fraction"] for r in reps]
assert all(r["cache"]["method"] == "rank-shift" for r in reps)
assert all(f < 0.1 for f in fr), fr
assert all(r["cache"]["file_bytes_sampled"] > 0 for r in reps)
want = p["plan"]["payload_bytes"] + p["plan"]["index_bytes"]
assert all(r["verified"] and r["bytes_verified"] == want for r in reps), ([r["bytes_verified"] for r in reps], want)
info = "resident_fraction %s" % ", ".join("%.3f" % f for f in fr)'
  # (c') control: with cache "none" each rank restores its own files, which its host's FUSE mount
  # still caches: the residency check does see FUSE page caches, so (c)'s ~0 is not an artefact.
  run fuse-own --cache-dir "$work/fuse-own" -- --set cache=none --repetitions 1
  expect "(c') per-host caches, cache none (own files): resident_fraction > 0.5, status ok" "$work/fuse-own.json" '
assert d["status"] == "ok", d["status"]
fr = [r["cache"]["resident_fraction"] for r in reps]
assert env["file_system"]["type"] == "fuse" and any(f > 0.5 for f in fr), (env["file_system"]["type"], fr)
info = "resident_fraction %s" % ", ".join("%.3f" % f for f in fr)'
fi

# ---- (b): aggregated-node on 2 real nodes (O_DIRECT on the shared target), files kept.
run agg -- --set layout=aggregated-node --set direct=true --set keep=true --repetitions 1
if [ $code -eq 0 ]; then ok "aggregated-node on 2 hosts: exit 0"; else bad "agg: exit $code: $(tail -c 1500 <<< "$out")"; fi
expect "(b) aggregated-node: 2 real nodes, 2 files planned, status ok, every byte verified" "$work/agg.json" '
assert d["status"] == "ok" and p["status"] == "ok", (d["status"], p["status"])
assert p["plan"]["nodes"] == 2 and p["plan"]["nodes_emulated"] is False and p["plan"]["files"] == 2, p["plan"]
r = reps[0]
want = p["plan"]["payload_bytes"] + p["plan"]["index_bytes"]
assert r["verified"] and r["bytes_verified"] == want, (r["bytes_verified"], want)
assert r["save"]["per_node"]["nodes"] == 2'
files="$(cd "$work/agg" 2> /dev/null && find . -type f ! -name .ckptbench-run | sed 's|^\./ckptbench-[^/]*/||' | sort | tr '\n' ' ')"
if [ "$files" = "point-001/rep-01/node_0000.ckpt point-001/rep-01/node_0001.ckpt " ]; then
  ok "(b) one file per node on disk: $files"
else
  bad "(b) files on disk: '$files'"
fi

# ---- The example of docs/cluster.md ("Several hosts on one machine", the block marked as run
# here), as written: from a scratch copy of the repository root (build -> the binary's
# directory), /var/tmp moved into the work directory. Its two lines must show the shared page
# cache (resident ~1) and the per-host caches (resident 0).
block="$(awk '/docs-test: skip: .*test_multihost.sh runs these steps/ {f = 1; next}
              f && /^```sh/ {g = 1; next}  g && /^```/ {exit}  g' "$SRC/docs/cluster.md")"
if [ $fuse -eq 0 ]; then
  :  # skipped above
elif [ -z "$block" ]; then
  bad "docs/cluster.md: no block marked 'tests/cli/test_multihost.sh runs these steps'"
else
  mkdir -p "$work/doc/root" "$work/doc/var/tmp"
  ln -s "$(dirname "$BIN")" "$work/doc/root/build"
  ln -s "$SRC/scripts" "$work/doc/root/scripts"
  t0=$SECONDS
  o="$(cd "$work/doc/root" && timeout 180 bash -e -c "${block//\/var\/tmp\//$work/doc/var/tmp/}" 2>&1)"; c=$?
  r="$("$PY" -c 'import re, sys
lines = [l for l in sys.argv[1].splitlines() if "resident_fraction [" in l]
fr = [[float(x) for x in re.search(r"resident_fraction \[([^]]*)\]", l).group(1).split(",")] for l in lines]
ok = (len(lines) == 2 and "shared.json" in lines[0] and "per-host.json" in lines[1]
      and all("[\x27ckpt-node1\x27, \x27ckpt-node2\x27] emulated False" in l for l in lines)
      and max(fr[0]) > 0.5 and max(fr[1]) < 0.1)
print("ok" if ok else "wrong")' "$o" 2>&1)"
  if [ $c -eq 0 ] && [ "$r" = ok ]; then
    ok "docs/cluster.md example runs as written ($((SECONDS - t0)) s): $(grep -o 'resident_fraction.*' <<< "$o" | tr '\n' ';')"
  else
    bad "docs/cluster.md example: exit $c, $r: $(tail -c 1500 <<< "$o")"
  fi
fi

# ---- Failing clearly without root (the agent as ssh would: exit 255; --check: 77 and why).
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if ! command -v setpriv > /dev/null || ! "${nobody[@]}" test -x "$AGENT" -a -x "$MH" 2> /dev/null; then
  echo "skip the non-root cases: no setpriv, or uid 65534 cannot run the scripts in $SRC"
else
  o="$(setpriv --reuid=65534 --regid=65534 --clear-groups "$AGENT" ckpt-node1 true 2>&1)"; c=$?
  if [ $c -eq 255 ] && grep -q "needs root" <<< "$o"; then ok "agent as non-root: exit 255, '$o'"; else bad "agent as non-root: exit $c: $o"; fi
  o="$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "$MH" --check 2>&1)"; c=$?
  if [ $c -eq 77 ] && grep -q "needs root" <<< "$o"; then ok "mpiexec.sh --check as non-root: exit 77, '$o'"; else bad "--check as non-root: exit $c: $o"; fi
fi
o="$("$MH" 2 2 build/ckptbench 2>&1)"; c=$?
if [ $c -eq 2 ] && grep -q "usage" <<< "$o"; then ok "mpiexec.sh without '--': exit 2 with the usage"; else bad "no '--': exit $c: $o"; fi

# ---- Nothing left: the FUSE daemons end with their hosts, no mount is visible here, and the run
# directories are the runs' own (removed by ckptbench unless kept).
sleep 0.5
left="$(pgrep -af -- "bindfs .*$work")"
if [ -z "$left" ]; then ok "no FUSE daemon left after the runs"; else bad "left running: $left"; fi
if grep -q " $work" /proc/self/mounts; then bad "a mount under $work is visible here"; else ok "no mount under the work directory here"; fi
for n in shared fuse fuse-own; do
  [ -z "$(find "$work/$n" -name '*.pt' 2> /dev/null)" ] || bad "$n: checkpoint files left"
done
summary multihost
