#!/usr/bin/env bash
# Reliability, third round (item 5): input files that are not regular files. A FIFO named as the
# config, as the safetensors model, inside a shards directory, as the index, as the config.json
# beside the model or as --from's report or manifest; /dev/zero, a directory, a socket and a
# (sparse) file over the 16 MiB cap as the config. Each is refused by validate, plan and a 2-rank
# run with exit 2 and one message naming the path and what it is, before anything is read (a FIFO
# open never blocks) or created (no run directory, no report). Every command runs under
# `timeout 20`, so a hang (a blocking open or read) fails the case instead of the suite; the
# /dev/zero cases also run under `ulimit -v`, so a reader without a limit fails instead of
# exhausting the memory.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_binary
make_workdir inputs
export OMPI_MCA_rmaps_base_oversubscribe=1
RUN2=("${MPI_BASE[@]}" -n 2 "$BIN" run)
vlimit=""

# refused NAME PATTERN CMD...: exit 2 within 20 s (with the address space limited to $vlimit KiB
# when set), one "ckptbench: error" line matching the
# extended regex PATTERN, nothing created or removed under $work (no target, run directory or
# report).
refused() {
  local name="$1" want="$2"; shift 2
  local before after out code n
  before="$(find "$work" | sort)"
  out="$( ([ -z "$vlimit" ] || ulimit -v "$vlimit"; timeout -k 5 20 "$@") 2>&1 < /dev/null)"; code=$?
  after="$(find "$work" | sort)"
  n="$(grep -c "ckptbench: error" <<< "$out")"
  if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    bad "$name: no answer within 20 s (exit $code): $(head -c 300 <<< "$out")"
  elif [ "$code" -ne 2 ]; then
    bad "$name: exit $code (want 2): $(head -c 300 <<< "$out")"
  elif ! grep -qE -- "$want" <<< "$out"; then
    bad "$name: message lacks /$want/: $(head -c 400 <<< "$out")"
  elif [ "$n" -ne 1 ]; then
    bad "$name: $n error lines (want 1): $(head -c 400 <<< "$out")"
  elif [ "$before" != "$after" ]; then
    bad "$name: files created or removed: $(diff <(echo "$before") <(echo "$after") | head -5)"
  else
    ok "$name"
  fi
}
# every NAME PATTERN CONFIG: refused by validate, plan and a 2-rank run with that --config.
every() {
  refused "$1: validate" "$2" "$BIN" validate --config "$3"
  refused "$1: plan" "$2" "$BIN" plan --config "$3"
  refused "$1: run on 2 ranks" "$2" "${RUN2[@]}" --config "$3" --target "$work/target" \
    --output "$work/report.json" --quiet
}
# A regular-expression-safe path (the work directory has dots in its name).
re() { sed 's/[][\.*^$(){}+?|]/\\&/g' <<< "$1"; }

# A valid one-tensor safetensors file: 8-byte header length, JSON header, 16 bytes of data.
st_file() {
  "$PY3" - "$1" "$2" <<'PY'
import json, struct, sys
h = json.dumps({sys.argv[2]: {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(16))
PY
}
st_config() { printf '{"model": {"safetensors": "%s"}, "repetitions": 1}\n' "$2" > "$work/$1.json"; echo "$work/$1.json"; }

# 0. The regular counterparts are accepted (so the refusals below are about the file type).
mkdir -p "$work/one" "$work/shards"
st_file "$work/one/model.safetensors" "model.layers.0.w"
st_file "$work/shards/a.safetensors" "model.layers.0.w"
st_file "$work/shards/b.safetensors" "model.layers.1.w"
good="$work/good.json"; echo '{"model": "tiny", "repetitions": 1}' > "$good"
for c in "$good" "$(st_config st-one "$work/one/model.safetensors")" "$(st_config st-dir "$work/shards")"; do
  out="$(timeout -k 5 20 "$BIN" validate "$c" 2>&1)" && ok "regular input accepted: ${c##*/}" || bad "regular input ${c##*/}: $out"
done

# 1. A FIFO as the config file.
mkfifo "$work/fifo.json"
every "FIFO as --config" "config file '$(re "$work/fifo.json")' is a FIFO" "$work/fifo.json"
refused "FIFO as validate's FILE" "config file '$(re "$work/fifo.json")' is a FIFO" "$BIN" validate "$work/fifo.json"

# 2. A FIFO as the safetensors model file.
mkdir -p "$work/pipe"; mkfifo "$work/pipe/model.safetensors"
every "FIFO as model.safetensors" "safetensors file '$(re "$work/pipe/model.safetensors")' is a FIFO" \
  "$(st_config st-fifo "$work/pipe/model.safetensors")"

# 3. A FIFO among the shards of a model directory (after a valid shard, in name order).
mkdir -p "$work/shards2"; cp "$work/shards/a.safetensors" "$work/shards2/"
mkfifo "$work/shards2/b.safetensors"
every "FIFO in a shards directory" "safetensors shard '$(re "$work/shards2/b.safetensors")' is a FIFO" \
  "$(st_config st-fifo-dir "$work/shards2")"

# 4. A FIFO as the safetensors index, as a shard the index names, and as the config.json beside a
# valid model (read for the head counts).
mkdir -p "$work/idx"; mkfifo "$work/idx/model.safetensors.index.json"
refused "FIFO as the safetensors index: validate" "safetensors index '$(re "$work/idx/model.safetensors.index.json")' is a FIFO" \
  "$BIN" validate "$(st_config st-idx "$work/idx/model.safetensors.index.json")"
mkdir -p "$work/idx2"; mkfifo "$work/idx2/s.safetensors"
echo '{"weight_map": {"model.layers.0.w": "s.safetensors"}}' > "$work/idx2/model.safetensors.index.json"
refused "FIFO as a shard the index names: validate" "safetensors shard '$(re "$work/idx2/s.safetensors")' is a FIFO" \
  "$BIN" validate "$(st_config st-idx2 "$work/idx2/model.safetensors.index.json")"
mkdir -p "$work/hf"; cp "$work/one/model.safetensors" "$work/hf/"; mkfifo "$work/hf/config.json"
every "FIFO as config.json beside the model" "'$(re "$work/hf/config.json")' \(read beside .*\) is a FIFO" \
  "$(st_config st-hf "$work/hf/model.safetensors")"

# 5. /dev/zero as the config: refused at once, not read until the memory runs out. A reader
# without a limit would fill the memory before the timeout: the address space is limited to 1 GiB
# (when a valid 2-rank run works under that limit; an ASan build does not).
if ( ulimit -v 1048576; timeout -k 5 60 "${RUN2[@]}" --config "$good" --dry-run ) > /dev/null 2>&1; then
  vlimit=1048576 vok=1
else
  echo "note: /dev/zero cases without an address-space limit (a run fails under ulimit -v 1048576)"
fi
every "/dev/zero as --config" "config file '/dev/zero' is a character device, not a regular file: give a JSON file" /dev/zero
vlimit=""

# 6. A directory as the config.
mkdir -p "$work/cfgdir"
every "directory as --config" "config file '$(re "$work/cfgdir")' is a directory, not a regular file" "$work/cfgdir"

# 7. A socket as the config (bound by python3; the socket file stays after it exits).
if "$PY3" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$work/sock.json" 2> /dev/null; then
  every "socket as --config" "config file '$(re "$work/sock.json")' is a socket" "$work/sock.json"
else
  echo "skip socket as --config: cannot bind an AF_UNIX socket in $work"
fi

# 8. A config file over the 16 MiB cap (sparse: no 17 MiB written): refused naming the cap.
truncate -s 17M "$work/big.json"
every "config over the cap" "config file '$(re "$work/big.json")' is 17825792 bytes, larger than the 16 MiB limit for a config file" "$work/big.json"

# 9. --from a FIFO (as the report), and a run directory whose manifest.json is a FIFO.
mkfifo "$work/report-fifo.json"
refused "--from a FIFO" "--from '$(re "$work/report-fifo.json")' is a FIFO" \
  "${RUN2[@]}" --phases restore --from "$work/report-fifo.json" --output "$work/report.json" --quiet
mkdir -p "$work/saved"; mkfifo "$work/saved/ckptbench-manifest.json"
refused "--from a run directory whose manifest is a FIFO" "'$(re "$work/saved/ckptbench-manifest.json")' is a FIFO" \
  "${RUN2[@]}" --phases restore --from "$work/saved" --output "$work/report.json" --quiet

# 10. The shell's <(...) is a pipe: refused as such by validate (a run's ranks do not inherit it).
refused "validate <(...)" "config file '/dev/fd/[0-9]+' is a FIFO" "$BIN" validate --config <(cat "$good")

# 11. Content of a binary file: a NUL byte (the JSON parser would stop there and ignore the rest)
# and bytes that are not UTF-8 (quoted as \xNN in the message, not written raw to the terminal).
printf '{"model": "tiny"}\0{"repetitions": 2}\n' > "$work/nul.json"
refused "NUL byte in the config" "config file '$(re "$work/nul.json")': not valid JSON: a NUL byte at offset 17" \
  "$BIN" validate "$work/nul.json"
printf '{"model": "tiny", "comment": "caf\xe9"}\n' > "$work/latin1.json"
refused "config not UTF-8: message printable" "ill-formed UTF-8 byte; last read: '\"caf\\\\xe9" \
  "$BIN" validate "$work/latin1.json"
"$PY3" - "$work/latin1.safetensors" <<'PY'
import struct, sys
h = b'{"w\xe9": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}'
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(8))
PY
refused "safetensors header not UTF-8: message printable" "safetensors header is not valid JSON .*last read: '\"w\\\\xe9" \
  "$BIN" validate "$(st_config st-latin1 "$work/latin1.safetensors")"

# 12. Plans no machine can hold (item 2): refused by validate, plan and a run from counts alone,
# in well under a second and within 1 GiB of address space (when a run works under that limit;
# an ASan build does not), naming the limit's key.
vlimit="${vok:+1048576}"
cat > "$work/emulate.json" <<'EOF'
{"model": "tiny", "parallelism": {"tp": 1, "dp": "auto", "emulate_world": 100000000}}
EOF
every "emulate_world 10^8" "parallelism.emulate_world: 100000000 ranks is more than limits.max_virtual_ranks = 262144" \
  "$work/emulate.json"
cat > "$work/chunk4k.json" <<'EOF'
{"model": "llama3.1-405b", "parallelism": {"tp": 8, "pp": 16, "dp": "auto", "emulate_world": 1024},
 "chunk_size": "4K"}
EOF
every "chunk_size 4K on llama3.1-405b" "the plan would make up to [0-9]{10} files, more than limits.max_files = 2000000" \
  "$work/chunk4k.json"
refused "plan --world 10^7" "--world: 10000000 ranks is more than limits.max_virtual_ranks" \
  "$BIN" plan --config "$good" --world 10000000
cat > "$work/shared.json" <<'EOF'
{"model": "tiny", "parallelism": {"tp": 1, "dp": "auto", "zero_stage": 1, "emulate_world": 200000},
 "layout": "shared-file",
 "limits": {"max_plan_memory": "64M"}}
EOF
every "plan memory over limits.max_plan_memory" "the plan would need about [0-9.]+ MiB of memory in every rank .*more than limits.max_plan_memory = 64.00 MiB" \
  "$work/shared.json"
refused "extents over limits.max_extents (--set)" "file extents, more than limits.max_extents = 100 " \
  "$BIN" plan --config "$good" --world 4 --set limits.max_extents=100
refused "restore world over the limit" "restore.parallelism \(its world\): 300000 ranks is more than limits.max_virtual_ranks" \
  "$BIN" validate --config "$good" --set direct=false \
  --set 'restore.parallelism={"tp":1,"dp":"auto","emulate_world":300000}'
refused "limits.max_files 0" "'limits.max_files'" "$BIN" validate --config "$good" --set limits.max_files=0
refused "limits: unknown key" "limits.*max_file\b" "$BIN" validate --config "$good" --set limits.max_file=5
vlimit=""
# A raised limit lets the same plan through.
if o="$("$BIN" validate --config "$work/emulate.json" --set parallelism.emulate_world=300000 \
      --set limits.max_virtual_ranks=300000 2>&1)"; then
  ok "a raised limits.max_virtual_ranks accepts 300000 ranks"
else
  bad "raised limits.max_virtual_ranks: $o"
fi

# 13. A tensor name of 300 bytes (longer than NAME_MAX): validate and a file-per-tensor run on 2
# ranks both accept it, the file name cut to 200 bytes and a hash (each name fits NAME_MAX), so no
# run refuses what validate accepted.
st_file "$work/long.safetensors" "$(printf 'w%.0s' $(seq 300))"
lc="$(st_config st-long "$work/long.safetensors")"
mkdir -p "$work/t-long"
if out="$("$BIN" validate "$lc" --set layout=file-per-tensor --set direct=false 2>&1)" \
   && out="$(timeout 60 "${RUN2[@]}" --config "$lc" --set layout=file-per-tensor --set direct=false \
      --target "$work/t-long" --output "$work/long-r.json" --quiet 2>&1)" \
   && [ -z "$(ls -A "$work/t-long")" ] \
   && longest="$("$BIN" plan --config "$lc" --set layout=file-per-tensor --world 2 --files --json \
      | "$PY3" -c 'import json,sys; print(max(len(c) for f in json.load(sys.stdin)["points"][0]["file_list"] for c in f["path"].split("/")))')" \
   && [ "$longest" -le 255 ]; then
  ok "a 300-byte tensor name: validate and a 2-rank file-per-tensor run accept it (longest name $longest bytes)"
else
  bad "a 300-byte tensor name: $(tail -n 2 <<< "$out")"
fi

summary
