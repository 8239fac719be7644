#!/bin/bash
# A live node switched from cri-dockerd to dockershim and back with `dockershim migrate`,
# in the VM of scripts/vm.sh (Debian 12, systemd, cgroup v2, Docker 20.10), checked the
# way an operator would judge it:
#   scripts/vm-live-switch.sh CRI_DOCKERD CRI_DOCKERD_UNITS_DIR KUBELET CRICTL    on the host, as root
# NOT RUN IN CI: it needs cri-dockerd (a v0.4.x build), its packaged systemd units
# (packaging/systemd/cri-docker.{service,socket} of its tree), a kubelet and crictl, which
# this project does not build or ship; they stay where they are, shared with the guest.
# The shim: `cmake --install` of the build directory ($BUILD, default ./build).
#
# In the guest:
#   - cri-dockerd installed as its install guide says (the binary in /usr/local/bin, the
#     packaged units in /etc/systemd/system with ExecStart pointed there, a drop-in from
#     `systemctl edit` giving Debian's CNI plugin directory), the socket enabled;
#   - a standalone kubelet (static pods, no API server) on cri-dockerd's socket, its
#     ports 10250 (anonymous, read only what it serves) for /pods and /metrics/probes;
#   - a CNI bridge with host-local IPAM and portmap; images imported offline (our pause as
#     cri-dockerd's default sandbox image, Debian's busybox-static);
#   - static pods: web (busybox httpd, HTTP readiness probe every 2 s, exec
#     liveness probe), hostport (httpd behind hostPort 18081), ticker (a numbered line a
#     second), crasher (exits after 3 s, restarted by the kubelet).
# Then `dockershim migrate from-cri-dockerd`, the checks, a pod started under dockershim
# (late, hostPort 18082), `dockershim migrate to-cri-dockerd`, the checks again, the pods
# removed (by cri-dockerd) and what is left looked for.
# Across each switch a sampler reads the kubelet's /pods every 0.5 s (readiness, pod IPs,
# container IDs and restart counts as the kubelet sees them); the checks compare with
# the state before. Prints PASS/FAIL per check and the figures; exits non-zero when one
# fails. The guest's logs and samples are copied to $LIVE_SWITCH_DIR/logs (default
# /var/tmp/dockershim-live-switch).
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
W=${LIVE_SWITCH_DIR:-/var/tmp/dockershim-live-switch}
BUILD=${BUILD:-build}
BUSYBOX_IMAGE=localhost/live-switch/busybox:1
# cri-dockerd's default --pod-infra-container-image (and dockershim's): no flag needed.
PAUSE_IMAGE=registry.k8s.io/pause:3.10

log() { echo "vm-live-switch: $*" >&2; }
die() { echo "vm-live-switch: error: $*" >&2; exit 1; }

# ---- the host's side --------------------------------------------------------------------------

make_images() { # the root file systems, as $W/share/{pause,busybox}.tar
  local s=$W/share r=$W/roots f
  mkdir -p "$s" "$r"
  command -v gcc >/dev/null || die "gcc missing (apt-get install gcc libc6-dev)"
  rm -rf "$r/pause" && mkdir -p "$r/pause"
  gcc -std=c11 -Wall -Wextra -Werror -static -Os -s -o "$r/pause/pause" "$ROOT/tools/pause/pause.c"
  tar --numeric-owner --owner=0 --group=0 -C "$r/pause" -cf "$s/pause.tar" .
  [[ -x /bin/busybox ]] || die "/bin/busybox missing (apt-get install busybox-static)"
  rm -rf "$r/busybox" && mkdir -p "$r/busybox"/{bin,etc,tmp}
  install -m 0755 /bin/busybox "$r/busybox/bin/busybox"
  for f in $(/bin/busybox --list); do [[ -e $r/busybox/bin/$f ]] || ln -s busybox "$r/busybox/bin/$f"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$r/busybox/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/busybox/etc/group"
  tar --numeric-owner --owner=0 --group=0 -C "$r/busybox" -cf "$s/busybox.tar" .
}

host() {
  (($# == 4)) || die "usage: scripts/vm-live-switch.sh CRI_DOCKERD CRI_DOCKERD_UNITS_DIR KUBELET CRICTL"
  local cri=$1 units=$2 kubelet=$3 crictl=$4 f
  for f in "$cri" "$kubelet" "$crictl"; do [[ -x $f ]] || die "$f: not an executable"; done
  for f in cri-docker.service cri-docker.socket; do [[ -f $units/$f ]] || die "$units/$f is missing"; done
  [[ -x $BUILD/shim/dockershim ]] || die "$BUILD/shim/dockershim is not built (cmake --build $BUILD --target dockershim)"
  cri=$(realpath "$cri") units=$(realpath "$units") kubelet=$(realpath "$kubelet") crictl=$(realpath "$crictl")
  make_images
  rm -rf "$W/logs" && mkdir -p "$W/logs"
  # Each directory shared once, at its own path.
  local dirs=() mounts=() d
  mapfile -t dirs < <(printf '%s\n' "$(dirname "$cri")" "$units" "$(dirname "$kubelet")" "$(dirname "$crictl")" \
    "$W/share" "$W/logs" | sort -u)
  for d in "${dirs[@]}"; do [[ $d == "$ROOT" || $d == "$ROOT"/* ]] || mounts+=(--mount "$d:$d"); done
  [[ $(cd "$BUILD" && pwd) == "$ROOT"/* ]] || mounts+=(--mount "$(cd "$BUILD" && pwd):$(cd "$BUILD" && pwd)")
  exec scripts/vm.sh run "${mounts[@]}" -- scripts/vm-live-switch.sh --guest --build "$(cd "$BUILD" && pwd)" \
    --cri-dockerd "$cri" --units "$units" --kubelet "$kubelet" --crictl "$crictl" --share "$W/share" --logs "$W/logs"
}

# ---- the guest's side -------------------------------------------------------------------------

NODE_IP=10.200.0.10
GATEWAY=10.200.0.1
CRI_SOCKET=/run/cri-dockerd.sock
MANIFESTS=/etc/kubernetes/manifests
NAMESPACE=live
KUBELET_URL=https://127.0.0.1:10250

results=()
failed=0
t0=$SECONDS
mark=$SECONDS
# check NAME COMMAND...: PASS/FAIL with the seconds since the previous check's end.
check() {
  local what=$1 line
  shift
  if "$@"; then
    line=$(printf 'PASS  %-76s %4ds' "$what" $((SECONDS - mark)))
  else
    line=$(printf 'FAIL  %-76s %4ds' "$what" $((SECONDS - mark)))
    failed=1
  fi
  echo "$line"
  results+=("$line")
  mark=$SECONDS
}
skip() { # what, and why it is not checked
  local line
  line=$(printf 'SKIP  %s' "$1")
  echo "$line"
  results+=("$line")
  mark=$SECONDS
}
wait_for() { # timeout command...: true once the command succeeds (every second)
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

setup_network() {
  # The kubelet takes the node IP from the default route; the VM has only loopback.
  modprobe dummy && ip link add node0 type dummy && ip addr add "$NODE_IP/24" dev node0 &&
    ip link set node0 up && ip route add default via "$GATEWAY" dev node0 || return 1
  [[ -s /etc/resolv.conf ]] || echo "nameserver $GATEWAY" >/etc/resolv.conf
  install -D -m 0644 "$ROOT/examples/cni/10-dockershim-bridge.conflist" /etc/cni/net.d/10-bridge.conflist
}

import_images() { # share
  docker import --change 'ENTRYPOINT ["/pause"]' "$1/pause.tar" "$PAUSE_IMAGE" >/dev/null &&
    docker import --change 'ENV PATH=/bin' "$1/busybox.tar" "$BUSYBOX_IMAGE" >/dev/null
}

# As cri-dockerd's install guide: the binary in /usr/local/bin, the packaged units in
# /etc/systemd/system with ExecStart pointed there, `systemctl enable --now
# cri-docker.socket`. Its flags in a drop-in as `systemctl edit` writes one: Debian's CNI
# plugins are in /usr/lib/cni, not cri-dockerd's default /opt/cni/bin.
install_cri_dockerd() { # binary units-dir
  install -o root -g root -m 0755 "$1" /usr/local/bin/cri-dockerd &&
    install -m 0644 "$2/cri-docker.service" "$2/cri-docker.socket" /etc/systemd/system/ &&
    sed -i -e 's,/usr/bin/cri-dockerd,/usr/local/bin/cri-dockerd,' /etc/systemd/system/cri-docker.service || return 1
  mkdir -p /etc/systemd/system/cri-docker.service.d
  cat >/etc/systemd/system/cri-docker.service.d/override.conf <<'EOF'
[Service]
ExecStart=
ExecStart=/usr/local/bin/cri-dockerd --container-runtime-endpoint fd:// --network-plugin=cni --cni-bin-dir=/usr/lib/cni
EOF
  systemctl daemon-reload && systemctl enable --now cri-docker.socket && systemctl enable cri-docker.service
}

install_dockershim() { # build-dir: installed, not enabled (the command enables it)
  cmake --install "$1" >/dev/null && systemctl daemon-reload
}

install_kubelet() { # kubelet crictl
  install -m 0755 "$1" /usr/bin/kubelet && install -m 0755 "$2" /usr/bin/crictl || return 1
  printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 30\n' "$CRI_SOCKET" "$CRI_SOCKET" >/etc/crictl.yaml
  mkdir -p "$MANIFESTS" /var/lib/kubelet
  cat >/var/lib/kubelet/config.yaml <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$CRI_SOCKET
staticPodPath: $MANIFESTS
fileCheckFrequency: 5s
cgroupDriver: systemd
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
failSwapOn: false
# A small guest disk: no eviction of the pods under test.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  cat >/etc/systemd/system/kubelet.service <<'EOF'
[Unit]
Description=kubelet (standalone: static pods)
After=docker.service
[Service]
ExecStart=/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml
Restart=always
RestartSec=2
[Install]
WantedBy=multi-user.target
EOF
  systemctl daemon-reload && systemctl enable --now kubelet.service
}

write_pods() {
  local image=$BUSYBOX_IMAGE
  cat >"$MANIFESTS/web.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: $NAMESPACE}
spec:
  containers:
  - name: httpd
    image: $image
    imagePullPolicy: Never
    command: [sh, -c, 'mkdir -p /www && echo ok >/www/index.html && exec httpd -f -p 8080 -h /www']
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {path: /index.html, port: 8080}, periodSeconds: 2, timeoutSeconds: 5}
    livenessProbe: {exec: {command: [cat, /www/index.html]}, periodSeconds: 5, timeoutSeconds: 10}
EOF
  cat >"$MANIFESTS/hostport.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: hostport, namespace: $NAMESPACE}
spec:
  containers:
  - name: httpd
    image: $image
    imagePullPolicy: Never
    command: [sh, -c, 'mkdir -p /www && echo hostport >/www/index.html && exec httpd -f -p 8081 -h /www']
    ports: [{containerPort: 8081, hostPort: 18081}]
    readinessProbe: {tcpSocket: {port: 8081}, periodSeconds: 2, timeoutSeconds: 5}
EOF
  cat >"$MANIFESTS/ticker.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: ticker, namespace: $NAMESPACE}
spec:
  containers:
  - name: ticker
    image: $image
    imagePullPolicy: Never
    command: [sh, -c, 'i=0; while true; do echo "tick \$i"; i=\$((i + 1)); sleep 1; done']
EOF
  cat >"$MANIFESTS/crasher.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: crasher, namespace: $NAMESPACE}
spec:
  containers:
  - name: crasher
    image: $image
    imagePullPolicy: Never
    command: [sh, -c, 'echo "crasher up"; sleep 3; echo "crasher down" >&2; exit 3']
EOF
}

# Started while dockershim serves, so that the way back has a pod cri-dockerd did not start.
write_late_pod() {
  cat >"$MANIFESTS/late.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: late, namespace: $NAMESPACE}
spec:
  containers:
  - name: httpd
    image: $BUSYBOX_IMAGE
    imagePullPolicy: Never
    command: [sh, -c, 'mkdir -p /www && echo late >/www/index.html && exec httpd -f -p 8082 -h /www']
    ports: [{containerPort: 8082, hostPort: 18082}]
    readinessProbe: {tcpSocket: {port: 8082}, periodSeconds: 2, timeoutSeconds: 5}
EOF
}
late_ready() { kubelet_pods | awk '$1 == "late" && $2 == "True" { found = 1 } END { exit !found }'; }
late_host_port_works() { [[ $(curl -sf --max-time 5 "http://$NODE_IP:18082/index.html") == late ]]; }

# The kubelet's pods, one line each: name ready ips containers (name=id:restarts,...).
# Static pods carry the status the kubelet keeps (its /pods).
PODS_PL='
use JSON::PP; local $/; my $j = eval { decode_json(<STDIN>) } or exit 1;
for my $p (@{$j->{items}}) {
  my $s = $p->{status} // {};
  my ($r) = grep { $_->{type} eq "Ready" } @{$s->{conditions} // []};
  my $ips = join(",", map { $_->{ip} } @{$s->{podIPs} // []}) || "-";
  my $cs = join(",", map { my $id = $_->{containerID} // "-"; $id =~ s{^.*://}{}; $id = substr($id, 0, 12);
                           "$_->{name}=$id:$_->{restartCount}" } @{$s->{containerStatuses} // []}) || "-";
  printf "%s %s %s %s\n", $p->{metadata}{name}, ($r ? $r->{status} : "-"), $ips, $cs;
}'
kubelet_pods() { curl -sk --max-time 5 "$KUBELET_URL/pods" | perl -e "$PODS_PL" | sed "s/-$(hostname) / /" | sort; }

# Every 0.5 s until killed: "<ms since epoch> <pod> <ready> <ips> <containers>", or
# "<ms> unanswered" when the kubelet does not answer.
sample() { # file
  local now out
  while :; do
    now=$(date +%s%3N)
    if out=$(kubelet_pods) && [[ -n $out ]]; then
      sed "s/^/$now /" <<<"$out"
    else
      echo "$now unanswered"
    fi
    sleep 0.5
  done >"$1"
}

pods_ready() { # every pod but the crasher Ready, every container running
  local out
  out=$(kubelet_pods) || return 1
  [[ $(grep -c . <<<"$out") == 4 ]] && ! awk '$1 != "crasher" && $2 != "True"' <<<"$out" | grep -q . &&
    [[ $(crictl ps -q --label io.kubernetes.pod.namespace=$NAMESPACE --state running | grep -c .) -ge 3 ]]
}
crasher_restarted() { kubelet_pods | awk '$1 == "crasher" { split($4, a, ":"); exit !(a[2] >= 1) }'; }

# The node as the runtime and the kubelet see it, for comparison across a switch.
cri_state() {
  local p
  for p in $(crictl pods -q --namespace "$NAMESPACE" --state ready); do
    crictl inspectp -o go-template --template '{{.status.metadata.name}} {{.status.network.ip}}{{range .status.network.additionalIps}},{{.ip}}{{end}}' "$p"
    echo
  done | grep . | sed "s/-$(hostname) / /" | sort
}
running_ids() { # the running containers but the crasher's: "<pod>/<container> <id>"
  crictl ps --namespace "$NAMESPACE" --state running -o json | perl -MJSON::PP -e '
    local $/; for my $c (@{decode_json(<STDIN>)->{containers}}) {
      printf "%s/%s %s\n", $c->{labels}{"io.kubernetes.pod.name"}, $c->{metadata}{name}, $c->{id} }' |
    sed "s/-$(hostname)\//\//" | grep -v '^crasher/' | sort
}
snapshot() { # name: $STATE/<name>.{kubelet,cri,ids}
  kubelet_pods | awk '{ print $1, $3 }' >"$STATE/$1.kubelet-ips"
  cri_state >"$STATE/$1.cri-ips"
  running_ids >"$STATE/$1.ids"
}
same_as() { # before after what: the files equal
  if ! diff -u "$STATE/$1.$3" "$STATE/$2.$3"; then return 1; fi
  [[ -s $STATE/$1.$3 ]] || { echo "    $STATE/$1.$3 is empty"; return 1; }
}
ips_match() { # name: the kubelet's and the runtime's IPs agree, every pod has one
  local k c
  k=$(grep -v '^crasher ' "$STATE/$1.kubelet-ips" || true)
  c=$(grep -v '^crasher ' "$STATE/$1.cri-ips" || true)
  [[ $k == "$c" ]] && ! grep -q ' -$\| $' <<<"$k" || { echo "    kubelet: $k"; echo "    runtime: $c"; return 1; }
}

# From the samples of one switch: pods the kubelet saw not Ready, IPs that changed or
# went missing, containers (but the crasher's) that changed or restarted. Prints the
# disturbed pods and the sampling's figures; true when none.
undisturbed() { # samples-file switch-name
  local verdict
  verdict=$(awk -v name="$2" '
    $2 == "unanswered" { gap++; next }
    $2 == "crasher" { cr[$5] = 1; next }
    { n[$2]++
      if ($3 != "True") notready[$2]++
      if (!($2 in ip)) ip[$2] = $4; else if (ip[$2] != $4 || $4 == "-") ipchange[$2] = ip[$2] " -> " $4
      if (!($2 in ids)) ids[$2] = $5; else if (ids[$2] != $5) idchange[$2] = ids[$2] " -> " $5 }
    END {
      for (p in n) {
        if (p in notready) { bad[p] = 1; printf "    %s: not Ready in %d of %d samples\n", p, notready[p], n[p] }
        if (p in ipchange) { bad[p] = 1; printf "    %s: IPs %s\n", p, ipchange[p] }
        if (p in idchange) { bad[p] = 1; printf "    %s: containers %s\n", p, idchange[p] }
        pods++
      }
      for (p in bad) disturbed++
      printf "    %s: %d pods sampled %d times each (kubelet unanswered %d), crasher states seen %d, pods disturbed: %d\n",
        name, pods, n["web"], gap, length(cr), disturbed + 0
      exit disturbed > 0 || pods < 3
    }' "$1") && { echo "$verdict"; return 0; }
  echo "$verdict"
  return 1
}

# Readiness and liveness probes the kubelet ran, by result (its /metrics/probes).
probe_counts() {
  curl -sk --max-time 5 "$KUBELET_URL/metrics/probes" |
    awk -v ns="$NAMESPACE" -v host="$(hostname)" '/^prober_probe_total/ && index($0, "namespace=\"" ns "\"") {
      match($0, /probe_type="[^"]*"/); t = substr($0, RSTART + 12, RLENGTH - 13)
      match($0, /result="[^"]*"/); r = substr($0, RSTART + 8, RLENGTH - 9)
      match($0, /pod="[^"]*"/); p = substr($0, RSTART + 5, RLENGTH - 6); sub("-" host "$", "", p)
      c[p " " t " " r] += $NF }
    END { for (k in c) print k, c[k] }' | sort
}
# The same, asked again for up to 10 s: an emulated guest's kubelet can miss curl's 5 s.
probe_counts_answered() {
  local try out
  for try in 1 2 3 4 5; do
    out=$(probe_counts) && [[ -n $out ]] && { echo "$out"; return 0; }
    echo "    /metrics/probes: no answer (try $try)" >&2
    sleep 2
  done
  return 1
}
no_failed_probe() { # before after: no probe of web or hostport failed between the two
  local f
  [[ -s $STATE/$1.probes && -s $STATE/$2.probes ]] || { echo "    the kubelet's /metrics/probes did not answer"; return 1; }
  f=$(join -a 2 -e 0 -o 0,1.2,2.2 <(awk '{ print $1 "/" $2 "/" $3, $4 }' "$STATE/$1.probes" | sort) \
    <(awk '{ print $1 "/" $2 "/" $3, $4 }' "$STATE/$2.probes" | sort) |
    awk '$1 !~ /\/successful$/ && $3 > $2 { print "    " $1 ": " $3 - $2 " more" }')
  local ran
  ran=$(join <(awk '{ print $1 "/" $2 "/" $3, $4 }' "$STATE/$1.probes" | sort) \
    <(awk '{ print $1 "/" $2 "/" $3, $4 }' "$STATE/$2.probes" | sort) |
    awk '$1 ~ /^web\/Readiness\/successful$/ { print $3 - $2 }')
  echo "    web's readiness probes that passed meanwhile: ${ran:-none}"
  [[ -z $f && ${ran:-0} -gt 0 ]] || { echo "$f"; return 1; }
}

# The ticker's lines as the kubelet would read them (crictl logs: the log path the runtime
# reports): "tick 0" to "tick N", each once, in order, and N recent.
ticker_id() { crictl ps -q --namespace "$NAMESPACE" --name '^ticker$' --state running; }
logs_continuous() {
  local id lines verdict
  id=$(ticker_id) && [[ -n $id ]] || return 1
  lines=$(crictl logs --timestamps "$id" 2>&1)
  verdict=$(awk -v want=0 -v now="$(date +%s)" '
    $2 != "tick" { next }
    $3 != want { printf "line %d is \"%s\", expected tick %d", NR, $0, want; bad = 1; exit 1 }
    { want++; last = $1 }
    END { if (bad) exit 1
          cmd = "date -d " last " +%s"; cmd | getline t; close(cmd)
          printf "tick 0 to tick %d, none missing, none twice; the last one %d s old", want - 1, now - t
          exit !(want > 10 && now - t <= 30) }' <<<"$lines")
  local rc=$?
  echo "    crictl logs: $verdict"
  return $rc
}
log_file_grows() {
  local id path a b
  id=$(ticker_id) && path=$(crictl inspect -o go-template --template '{{.status.logPath}}' "$id") || return 1
  a=$(stat -Lc %s "$path") && sleep 3 && b=$(stat -Lc %s "$path") || return 1
  echo "    $path ($( [[ -L $path ]] && echo "a link to $(readlink "$path")" || echo "a file")): $a -> $b bytes in 3 s"
  ((b > a))
}
web_id() { crictl ps -q --namespace "$NAMESPACE" --name '^httpd$' --label io.kubernetes.pod.name="web-$(hostname)" --state running; }
exec_works() { [[ $(crictl exec "$(web_id)" cat /www/index.html) == ok ]]; }
port_forward_works() {
  local pod pid rc=1
  pod=$(crictl pods -q --namespace "$NAMESPACE" --name "^web-" --state ready) || return 1
  crictl port-forward "$pod" 18080:8080 >"$STATE/port-forward.log" 2>&1 &
  pid=$!
  wait_for 20 curl -sf --max-time 2 http://127.0.0.1:18080/index.html &&
    [[ $(curl -sf --max-time 5 http://127.0.0.1:18080/index.html) == ok ]] && rc=0
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  return $rc
}
host_port_works() { [[ $(curl -sf --max-time 5 "http://$NODE_IP:18081/index.html") == hostport ]]; }
stats_work() { # every long-running container has CPU and memory figures (the crasher comes and goes)
  local ids n
  ids=$(crictl ps -q --namespace "$NAMESPACE" --name '^(httpd|ticker)$' --state running | sort)
  n=$(crictl stats -o json | perl -MJSON::PP -e '
    local $/; my $j = decode_json(<STDIN>); my $n = 0;
    for my $s (@{$j->{stats}}) {
      $n++ if $s->{cpu}{usageCoreNanoSeconds}{value} > 0 && $s->{memory}{workingSetBytes}{value} > 0 }
    print $n') || return 1
  # Pod stats (ListPodSandboxStats) are shown, not required: not every runtime has them.
  local pods
  pods=$(crictl statsp -o json 2>&1 | perl -MJSON::PP -e '
    local $/; my $t = <STDIN>; my $j = eval { decode_json($t) } or do { $t =~ s/\s+/ /g; print "none ($t)"; exit };
    my $n = 0; for my $s (@{$j->{stats}}) { $n++ if $s->{linux}{cpu}{usageCoreNanoSeconds}{value} > 0 } print $n')
  echo "    crictl stats: $n of $(grep -c . <<<"$ids") running containers with CPU and memory; statsp: $pods pods with CPU"
  ((n >= $(grep -c . <<<"$ids") && n >= 3))
}

# One switch: the command timed, the kubelet sampled around it, then the checks.
switch() { # direction name runtime
  local dir=$1 name=$2 runtime=$3 out rc=0 start end
  # (What the kubelet or the runtime did not answer shows as a difference in the checks.)
  probe_counts_answered >"$STATE/$name-before.probes" || true
  snapshot "$name-before" || true
  sample "$STATE/$name.samples" &
  local sampler=$!
  sleep 5
  start=$(date +%s%3N)
  dockershim migrate "$dir" >"$LOGS/migrate-$dir.txt" 2>&1 || rc=$?
  end=$(date +%s%3N)
  sed 's/^/    | /' "$LOGS/migrate-$dir.txt"
  # Long enough for a probe or relist that went wrong to show in the kubelet's status.
  sleep 20
  kill "$sampler"
  wait "$sampler" 2>/dev/null || true
  cp "$STATE/$name.samples" "$LOGS/"
  probe_counts_answered >"$STATE/$name-after.probes" || true
  snapshot "$name-after" || true
  local took
  took=$(sed -n 's/^The switch took \([0-9.]*\) s.*/\1/p' "$LOGS/migrate-$dir.txt")
  figures+=("$dir: the command $(((end - start) / 1000)).$(((end - start) % 1000 / 100)) s, runtime away ${took:-?} s")
  check "dockershim migrate $dir: exit 0, the check over $CRI_SOCKET passed" test "$rc" = 0
  check "  ... $runtime serves $CRI_SOCKET" "served_by_$runtime"
  check "  ... no pod disturbed (kubelet's /pods every 0.5 s: Ready, IPs, container IDs)" \
    undisturbed "$STATE/$name.samples" "$name"
  check "  ... no readiness or liveness probe failed (kubelet's /metrics/probes)" \
    no_failed_probe "$name-before" "$name-after"
  check "  ... same running container IDs (crictl ps)" same_as "$name-before" "$name-after" ids
  check "  ... same pod IPs from the kubelet" same_as "$name-before" "$name-after" kubelet-ips
  check "  ... same pod IPs from the runtime (crictl inspectp)" same_as "$name-before" "$name-after" cri-ips
  check "  ... the kubelet's and the runtime's IPs agree" ips_match "$name-after"
  check "  ... ticker's log continuous (crictl logs)" logs_continuous
  check "  ... ticker's log file grows" log_file_grows
  check "  ... exec (crictl exec)" exec_works
  if [[ $runtime == cri-dockerd ]] && ! command -v socat >/dev/null; then
    skip "  ... port-forward: cri-dockerd runs socat for it, and the VM has none (dockershim needs none)"
  else
    check "  ... port-forward (crictl port-forward, curl)" port_forward_works
  fi
  check "  ... hostPort 18081 answers on the node's address" host_port_works
  check "  ... stats (crictl stats, statsp)" stats_work
  check "  ... the crasher is restarted by the kubelet through $runtime" crasher_restarts_again
}
served_by_dockershim() {
  systemctl is-active -q dockershim.socket dockershim.service && ! systemctl is-active -q cri-docker.service
}
served_by_cri-dockerd() {
  systemctl is-active -q cri-docker.service && ! systemctl is-active -q dockershim.service
}
crasher_restarts() { kubelet_pods | awk '$1 == "crasher" { split($4, a, ":"); print a[2] }'; }
crasher_restarts_above() { (($(crasher_restarts) > $1)); }
# Its restart count goes up (the kubelet's back-off doubles from 10 s up to 5 min).
crasher_restarts_again() { wait_for 320 crasher_restarts_above "$(crasher_restarts)"; }

no_pod_listed() { [[ -z $(kubelet_pods) && -z $(crictl pods -q --namespace "$NAMESPACE") ]]; }
remove_pods() { rm -f "$MANIFESTS"/*.yaml && wait_for 300 no_pod_listed; }
nothing_left() {
  local left
  left=$(
    docker ps -a --filter label=io.kubernetes.docker.type --format '{{.Names}}'
    ls /var/lib/cni/cache/results 2>/dev/null
    find /var/lib/cni/networks/dockershim-bridge -type f ! -name 'last_reserved_ip.*' ! -name lock 2>/dev/null
    ip -o link show type veth
    find /var/lib/dockershim/sandbox /var/lib/cri-dockerd/sandbox -mindepth 1 2>/dev/null
    find /var/log/pods /var/log/containers -mindepth 1 2>/dev/null
    # The bridge's masquerade chain and portmap's chains of each pod, their jumps.
    iptables-save -t nat | grep -E '^-A (CNI-DN-|CNI-HOSTPORT-DNAT|CNI-HOSTPORT-SETMARK .*CNI-DN|POSTROUTING .*CNI-[0-9a-f])' || true
  )
  [[ -z $left ]] || { echo "$left" | sed 's/^/    left: /'; return 1; }
}
# The kubelet removes a gone pod's log directory in its next garbage collection (a minute).
nothing_left_eventually() { wait_for 180 nothing_left || nothing_left; }

save_logs() {
  journalctl -u kubelet --no-pager >"$LOGS/kubelet.journal" 2>&1 || true
  journalctl -u cri-docker.service -u cri-docker.socket --no-pager >"$LOGS/cri-dockerd.journal" 2>&1 || true
  journalctl -u dockershim.service -u dockershim.socket --no-pager >"$LOGS/dockershim.journal" 2>&1 || true
  docker ps -a >"$LOGS/docker-ps.txt" 2>&1 || true
  cp -r "$STATE" "$LOGS/state" 2>/dev/null || true
  cp /etc/dockershim/config.toml "$LOGS/" 2>/dev/null || true
}

guest() {
  local build="" cri="" units="" kubelet="" crictl="" share=""
  while (($#)); do
    case $1 in
      --build) build=$2; shift 2 ;;
      --cri-dockerd) cri=$2; shift 2 ;;
      --units) units=$2; shift 2 ;;
      --kubelet) kubelet=$2; shift 2 ;;
      --crictl) crictl=$2; shift 2 ;;
      --share) share=$2; shift 2 ;;
      --logs) LOGS=$2; shift 2 ;;
      *) die "guest: unknown argument $1" ;;
    esac
  done
  [[ $(cat /proc/1/comm) == systemd ]] || die "PID 1 is not systemd (run it through scripts/vm.sh)"
  [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] || die "/sys/fs/cgroup is not cgroup v2"
  STATE=/root/live-switch
  export LC_ALL=C
  mkdir -p "$STATE"
  trap save_logs EXIT
  figures=()
  echo "vm-live-switch: $("$cri" --version 2>&1), kubelet $("$kubelet" --version | awk '{ print $2 }')," \
    "Docker $(docker version -f '{{.Server.Version}}'), $(nproc) CPUs, $(systemd-detect-virt)"

  check "node network: dummy interface $NODE_IP, default route; CNI bridge with portmap" setup_network
  check "images imported: $PAUSE_IMAGE (tools/pause), $BUSYBOX_IMAGE" import_images "$share"
  check "cri-dockerd installed as its guide says, cri-docker.socket enabled" install_cri_dockerd "$cri" "$units"
  check "dockershim installed (cmake --install), not enabled" install_dockershim "$build"
  check "kubelet (standalone) on unix://$CRI_SOCKET, crictl" install_kubelet "$kubelet" "$crictl"
  write_pods
  check "static pods web, hostport, ticker Ready; crasher crashing" wait_for 900 pods_ready
  check "  ... the crasher was restarted once at least" wait_for 300 crasher_restarted
  check "  ... served by cri-dockerd" served_by_cri-dockerd
  kubelet_pods | sed 's/^/    /' || true
  check "  ... ticker's log continuous (crictl logs)" logs_continuous
  check "  ... exec, hostPort, stats under cri-dockerd" eval 'exec_works && host_port_works && stats_work'

  switch from-cri-dockerd from dockershim
  write_late_pod
  check "pod late (hostPort 18082) started under dockershim: Ready" wait_for 600 late_ready
  check "  ... its hostPort answers" wait_for 60 late_host_port_works
  kubelet_pods | sed 's/^/    /' || true
  switch to-cri-dockerd back cri-dockerd
  check "  ... late's hostPort 18082 answers under cri-dockerd" late_host_port_works
  kubelet_pods | sed 's/^/    /' || true

  check "static pods removed (manifests deleted): the kubelet and the runtime list none" remove_pods
  check "  ... nothing left: containers, CNI cache, host-local IPs, veths, NAT rules, checkpoints of both, pod logs" \
    nothing_left_eventually

  echo
  echo "vm-live-switch: summary ($((SECONDS - t0)) s in the guest)"
  printf '  %s\n' "${results[@]}"
  printf '  figures: %s\n' "${figures[@]}"
  if ((failed)); then
    echo "vm-live-switch: FAILED (logs in $LOGS)" >&2
    exit 1
  fi
  echo "vm-live-switch: every check passed"
}

[[ $EUID -eq 0 ]] || die "run as root"
if [[ ${1:-} == --guest ]]; then
  shift
  guest "$@"
else
  host "$@"
fi
