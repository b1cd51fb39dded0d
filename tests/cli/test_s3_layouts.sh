#!/usr/bin/env bash
# The s3 backend against a real S3 server (Ceph's RADOS Gateway), every layout:
#  1. `ckptbench backends` lists s3 ok;
#  2. every layout (file-per-tensor, file-per-shard, aggregated-rank, aggregated-rank with two
#     writers per object, aggregated-node, shared-file) saves, restores and verifies through the
#     gateway on 1 and 4 ranks, making exactly the requests `plan` counts (a 4-rank shared object
#     is one multipart upload from 4 writers); afterwards the run's prefix holds no object and no
#     unfinished upload; the secret key is in none of the outputs.
# The gateway: the ctest fixture's (tests/cli/s3_gateway.sh) or the test's own (tests/cli/s3lib.sh).
# Skips (77) only when the gateway cannot run here (packages, root), printing why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/s3lib.sh" s3-layouts

echo "# 1. backends"
if "$BIN" backends | grep -qE '^s3 +ok'; then ok "ckptbench backends: s3 ok"
else bad "ckptbench backends: $("$BIN" backends | grep '^s3')"; fi

echo "# 2. every layout, 1 and 4 ranks, through the gateway"
# (aggregated-rank:2 = ranks_per_file 2: two objects, each one upload of two writers)
for variant in file-per-tensor file-per-shard aggregated-rank aggregated-rank:2 aggregated-node shared-file; do
  layout="${variant%%:*}"
  extra=(); [[ "$variant" == *:* ]] && extra=(--set ranks_per_file="${variant#*:}")
  for n in 1 4; do
    name="l-${variant/:/-rpf}-$n"
    run "$name" "$n" "$CKPT_S3_ENDPOINT" --set layout="$layout" "${extra[@]}" --quiet
    # What `plan` said the point would ask of the store is what it asked, request for request.
    cmp_req="$(jq_py "$work/$name.json" "(lambda p, r: all(r[ph]['requests'].get(k, {}).get('count', 0) == v for ph in ('save', 'restore') for k, v in p['requests'][ph].items()))(d['points'][0]['plan'], d['points'][0]['repetitions'][0])")"
    [ "$cmp_req" = True ] || bad "$variant on $n rank(s): the plan's requests are not the run's: $(jq_py "$work/$name.json" "d['points'][0]['plan'].get('requests'), {ph: {k: v['count'] for k, v in d['points'][0]['repetitions'][0][ph].get('requests', {}).items()} for ph in ('save', 'restore')}")"
    got="$(jq_py "$work/$name.json" "d['status'], d['points'][0]['repetitions'][0]['restore']['bytes'], d['points'][0]['repetitions'][0]['save']['bytes'], d['points'][0]['repetitions'][0]['restore'].get('verify_inline')")"
    left="$(s3ls "$name/")"
    if [ $code -eq 0 ] && [[ "$got" == "ok "* ]] && [ "$(echo "$got" | cut -d' ' -f2)" = "$(echo "$got" | cut -d' ' -f3)" ] &&
      [[ "$got" == *True ]] && [ "$left" = "objects 0 uploads 0" ]; then
      ok "$variant on $n rank(s): saved, restored, verified, requests as planned ($got); afterwards $left"
    else bad "$variant on $n rank(s): exit $code, report '$got', left '$left': $(tail -n 3 <<< "$out")"; fi
  done
done
# The shared object of 4 writers was one multipart upload with parts from every writer: one
# create and one complete over all ranks, and every rank uploaded parts.
parts="$(jq_py "$work/l-shared-file-4.json" "(lambda s: (s['requests']['create_upload']['count'], s['requests']['complete']['count'], s['requests']['part']['count'], s['counters']['max_in_flight']['min']))(d['points'][0]['repetitions'][0]['save'])")"
if [[ "$parts" =~ ^\(1,\ 1,\ ([0-9]+),\ ([0-9]+)\)$ ]] && [ "${BASH_REMATCH[1]}" -ge 4 ] && [ "${BASH_REMATCH[2]}" -ge 1 ]; then
  ok "4-rank shared object: one upload created and completed, parts from every rank (create, complete, parts, min in flight: $parts)"
else bad "4-rank shared object: (create, complete, parts, min in flight) $parts"; fi


no_secret_leaked 30
summary s3-layouts
