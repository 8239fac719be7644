#!/usr/bin/env bash
# A walk through CRI on Docker: starts dockershim with --log-level=trace on its own
# socket and root directory, then pulls, runs a pod, creates, starts, execs into, reads
# the logs and stats of a container, stops and removes it all with crictl, printing
# after each step the Docker Engine and CNI calls the shim made for it (its trace).
#
#   sudo examples/walkthrough.sh [path/to/dockershim]
#
# Needs root, Docker, crictl and the CNI plugins bridge, host-local and loopback.
# Settings (environment): DOCKER_ENDPOINT (unix:///var/run/docker.sock), IMAGE
# (busybox:latest), PAUSE_IMAGE (registry.k8s.io/pause:3.10), CNI_BIN_DIR
# (/opt/cni/bin,/usr/lib/cni), WORK (a new temp dir, removed at the end), and
# KEEP_WORK=1 to keep it (the shim's whole log is $WORK/shim.log).
set -euo pipefail

SHIM=${1:-${DOCKERSHIM:-build/shim/dockershim}}
DOCKER_ENDPOINT=${DOCKER_ENDPOINT:-unix:///var/run/docker.sock}
IMAGE=${IMAGE:-busybox:latest}
PAUSE_IMAGE=${PAUSE_IMAGE:-registry.k8s.io/pause:3.10}
CNI_BIN_DIR=${CNI_BIN_DIR:-/opt/cni/bin,/usr/lib/cni}
WORK=${WORK:-$(mktemp -d /tmp/dockershim-walkthrough.XXXXXX)}
BRIDGE=dswalk0  # a bridge and subnet of the walk-through's own
SUBNET=10.99.254.0/24

[ -x "$SHIM" ] || { echo "no dockershim at $SHIM (build it, or pass its path)" >&2; exit 2; }
command -v crictl >/dev/null || { echo "crictl is not installed (see README: Using crictl)" >&2; exit 2; }

SOCK=$WORK/dockershim.sock
LOG=$WORK/shim.log
mkdir -p "$WORK/net.d" "$WORK/logs"
cat > "$WORK/net.d/10-walkthrough.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "walkthrough", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET"}]], "dataDir": "$WORK/ipam"}},
  {"type": "loopback"}]}
JSON
UID_=walkthrough-$$
cat > "$WORK/pod.json" <<JSON
{"metadata": {"name": "walk", "namespace": "default", "uid": "$UID_", "attempt": 0},
 "hostname": "walk", "log_directory": "$WORK/logs", "linux": {}}
JSON
cat > "$WORK/container.json" <<JSON
{"metadata": {"name": "hello"}, "image": {"image": "$IMAGE"},
 "command": ["sh", "-c", "echo hello from the walk-through; exec sleep 3600"],
 "log_path": "hello/0.log", "linux": {}}
JSON

crictl_() { crictl --runtime-endpoint "unix://$SOCK" --image-endpoint "unix://$SOCK" --timeout 120s "$@"; }

SHIM_PID=
POD=
cleanup() {
  set +e
  if [ -n "$POD" ]; then crictl_ stopp "$POD" >/dev/null 2>&1; crictl_ rmp "$POD" >/dev/null 2>&1; fi
  if [ -n "$SHIM_PID" ]; then kill -TERM "$SHIM_PID" 2>/dev/null; wait "$SHIM_PID" 2>/dev/null; fi
  ip link del "$BRIDGE" 2>/dev/null
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

"$SHIM" --container-runtime-endpoint "unix://$SOCK" --root-directory "$WORK/root" \
  --docker-endpoint "$DOCKER_ENDPOINT" --pod-infra-container-image "$PAUSE_IMAGE" \
  --network-plugin cni --cni-bin-dir "$CNI_BIN_DIR" --cni-conf-dir "$WORK/net.d" \
  --cni-cache-dir "$WORK/cni-cache" --log-level trace 2>"$LOG" &
SHIM_PID=$!
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { echo "dockershim did not start:" >&2; cat "$LOG" >&2; exit 1; }

# The trace blocks the shim logged since byte $1 of its log: each "trace:" line and
# the indented lines under it (one per Docker or CNI call).
show_trace() {
  tail -c +"$(( $1 + 1 ))" "$LOG" | awk '
    / trace: / { sub(/^[^]]*\] /, ""); print "    | " $0; inside = 1; next }
    inside && /^  / { print "    | " $0; next }
    { inside = 0 }'
}

# step "what it shows" crictl-args...: runs crictl, prints its output and the trace.
step() {
  local title=$1; shift
  local before; before=$(stat -c %s "$LOG")
  printf '\n=== %s\n$ crictl %s\n' "$title" "$*"
  local out; out=$(crictl_ "$@" 2>&1) || { echo "$out"; echo "step failed" >&2; exit 1; }
  # crictl stats clears the screen first: its escape codes are dropped.
  [ -n "$out" ] && printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*[A-Za-z]//g'
  sleep 0.2  # the log line of the last call is written as the call returns
  echo "  what the shim did:"
  show_trace "$before"
  LAST=$out
}

step "PullImage: Docker pulls, the shim inspects the result" pull "$IMAGE"
step "RunPodSandbox: pause container, CNI ADD, checkpoint" runp "$WORK/pod.json"
POD=$LAST
step "CreateContainer: a container in the pod's namespaces, an empty CRI log file" \
  create "$POD" "$WORK/container.json" "$WORK/pod.json"
CTR=$LAST
step "StartContainer: start, then the log copier follows Docker's log stream" start "$CTR"
step "Exec: the shim answers with a streaming URL; crictl connects there (SPDY)" exec "$CTR" echo hi from exec
step "ExecSync: exec create/start/inspect in one call" exec -s "$CTR" hostname
sleep 1
step "Logs: crictl reads the CRI log file the shim wrote (ContainerStatus gives its path)" logs "$CTR"
step "ContainerStats: from cgroup files, no Docker stats call" stats "$CTR"
step "StopContainer" stop "$CTR"
step "RemoveContainer" rm "$CTR"
step "StopPodSandbox: CNI DEL, pause container stopped" stopp "$POD"
step "RemovePodSandbox: pause container and checkpoint removed" rmp "$POD"
POD=
echo
echo "done; the shim's whole log is $LOG (set KEEP_WORK=1 to keep it)"
