#!/bin/bash
# A one-node cluster made by kubeadm on the shim, in the VM of scripts/vm.sh (Debian 12,
# systemd, cgroup v2, Docker 20.10 on the systemd driver), checked end to end:
#   scripts/vm-kubeadm.sh [--deb PACKAGE.deb] K8S_BIN_DIR          on the host, as root
# NOT RUN IN CI: it needs Kubernetes binaries, which this project does not build or ship.
# K8S_BIN_DIR holds one release's kubelet, kubeadm, kubectl, kube-apiserver,
# kube-controller-manager, kube-scheduler and kube-proxy (static builds); they stay there,
# shared with the guest, never copied into the tree. The shim: the .deb when given
# (scripts/package-test.sh builds one), else `cmake --install` of the build directory
# ($BUILD, default ./build, with shim/dockershim built).
#
# On the host (cached in $KUBEADM_VM_DIR, default /var/tmp/dockershim-kubeadm): a root
# file system per image, made offline from binaries, for `docker import` in the guest:
#   kube-apiserver, kube-controller-manager, kube-scheduler: the binary alone (static);
#   kube-proxy: the binary with iptables (nft and legacy) and the libraries and xtables
#     extensions it loads, from the host's Debian packages;
#   etcd: Debian's etcd-server (sid, 3.5.x: Debian has no 3.6) via apt-get download with a
#     private apt state, with its C library. kubeadm's manifest is written for etcd 3.6
#     (--feature-gates=InitialCorruptCheck=true, --watch-progress-notify-interval):
#     a kubeadm JSON patch puts 3.5's names of those two flags in their place;
#   pause: tools/pause/pause.c, static; the workload: Debian's busybox-static.
# CoreDNS cannot be built offline: the addon/coredns phase is skipped.
#
# In the guest: a dummy interface with an address and a default route (kubeadm and the
# kubelet take the node IP from the default route; the VM has only loopback); the shim
# with /run/cri-dockerd.sock as a second path (examples/kubeadm/cri-dockerd-path.conf);
# the kubelet units of examples/kubeadm; a CNI bridge; then kubeadm preflight through
# cri-dockerd's path, kubeadm's socket detection, kubeadm init through the shim's own
# socket, the checks, kubeadm reset and what it left. Prints PASS/FAIL per check with
# the time it took; exits non-zero when one fails. The guest's logs (kubeadm output,
# journals) are copied to $KUBEADM_VM_DIR/logs. VM_MEMORY defaults to 6G here.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
W=${KUBEADM_VM_DIR:-/var/tmp/dockershim-kubeadm}
BUILD=${BUILD:-build}
BINARIES=(kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
ETCD_SUITE=sid
ETCD_PREFIX=3.5.
WORKLOAD_IMAGE=localhost/kubeadm-vm/busybox:1

log() { echo "vm-kubeadm: $*" >&2; }
die() { echo "vm-kubeadm: error: $*" >&2; exit 1; }

# ---- the host's side --------------------------------------------------------------------------

base_root() { # dir: what every image has besides its binaries
  local r=$1
  rm -rf "$r"
  mkdir -p "$r"/{etc,tmp,usr/local/bin,var/run,proc,sys,dev}
  chmod 1777 "$r/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
  echo "hosts: files dns" >"$r/etc/nsswitch.conf"
}

with_libraries() { # root file...: copies each file to its path in root, with the shared libraries it loads
  local r=$1 f lib
  shift
  for f in "$@"; do
    mkdir -p "$r$(dirname "$f")" && cp -L "$f" "$r$f"
    # ldd fails on a static binary: then there is nothing to add.
    for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do
      [[ -e $r$lib ]] || { mkdir -p "$r$(dirname "$lib")" && cp -L "$lib" "$r$lib"; }
    done
  done
}

pack() { # dir tarball
  tar --numeric-owner --owner=0 --group=0 -C "$1" -cf "$2.new" . && mv "$2.new" "$2"
}

etcd_binary() { # prints the path of Debian's etcd, fetched once into $W/etcd
  local apt=$W/apt version
  if [[ ! -x $W/etcd/root/usr/bin/etcd ]]; then
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$W/etcd/debs"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $ETCD_SUITE main" >"$apt/sources.list"
    log "apt-get update ($ETCD_SUITE) into $apt, for etcd-server"
    apt-get "${opts[@]}" update -qq >&2 || die "apt-get update of $ETCD_SUITE failed"
    version=$(apt-cache "${opts[@]}" madison etcd-server |
      awk -F' *\\| *' -v p="$ETCD_PREFIX" 'index($2, p) == 1 { print $2; exit }')
    [[ -n $version ]] || die "Debian $ETCD_SUITE has no etcd-server $ETCD_PREFIX*"
    (cd "$W/etcd/debs" && rm -f ./*.deb && apt-get "${opts[@]}" download -qq "etcd-server=$version" >&2) ||
      die "apt-get download etcd-server=$version failed"
    rm -rf "$W/etcd/root" && mkdir -p "$W/etcd/root"
    dpkg-deb -x "$W"/etcd/debs/etcd-server_*.deb "$W/etcd/root"
  fi
  echo "$W/etcd/root/usr/bin/etcd"
}

make_images() { # bindir: the root file systems, as $W/share/<name>.tar
  local bin=$1 s=$W/share r=$W/roots n f
  mkdir -p "$s" "$r"
  for n in kube-apiserver kube-controller-manager kube-scheduler; do
    base_root "$r/$n"
    install -m 0755 "$bin/$n" "$r/$n/usr/local/bin/$n"
    pack "$r/$n" "$s/$n.tar"
  done

  # kube-proxy programs Services with iptables-restore (nft backend by default, as the
  # node's own iptables); the xtables extensions are loaded at run time.
  local xt=/usr/lib/x86_64-linux-gnu/xtables
  [[ -x /usr/sbin/xtables-nft-multi && -x /usr/sbin/xtables-legacy-multi && -d $xt ]] ||
    die "the host's iptables is missing (apt-get install iptables)"
  base_root "$r/kube-proxy"
  install -m 0755 "$bin/kube-proxy" "$r/kube-proxy/usr/local/bin/kube-proxy"
  with_libraries "$r/kube-proxy" /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi "$xt"/*.so
  for f in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -s xtables-nft-multi "$r/kube-proxy/usr/sbin/$f"
    ln -s xtables-nft-multi "$r/kube-proxy/usr/sbin/${f/tables/tables-nft}"
    ln -s xtables-legacy-multi "$r/kube-proxy/usr/sbin/${f/tables/tables-legacy}"
  done
  pack "$r/kube-proxy" "$s/kube-proxy.tar"

  f=$(etcd_binary)
  base_root "$r/etcd"
  mkdir -p "$r/etcd/var/lib/etcd"
  with_libraries "$r/etcd" "$f"
  mv "$r/etcd$f" "$r/etcd/usr/local/bin/etcd"
  "$f" --version | awk '/etcd Version/ { print $3 }' >"$s/etcd.version"
  pack "$r/etcd" "$s/etcd.tar"

  command -v gcc >/dev/null || die "gcc missing (apt-get install gcc libc6-dev)"
  rm -rf "$r/pause" && mkdir -p "$r/pause"
  gcc -std=c11 -Wall -Wextra -Werror -static -Os -s -o "$r/pause/pause" "$ROOT/tools/pause/pause.c"
  pack "$r/pause" "$s/pause.tar"

  [[ -x /bin/busybox ]] || die "/bin/busybox missing (apt-get install busybox-static)"
  base_root "$r/busybox"
  mkdir -p "$r/busybox/bin"
  install -m 0755 /bin/busybox "$r/busybox/bin/busybox"
  for f in $(/bin/busybox --list); do [[ -e $r/busybox/bin/$f ]] || ln -s busybox "$r/busybox/bin/$f"; done
  pack "$r/busybox" "$s/busybox.tar"
}

host() {
  local deb="" bin
  while (($#)); do
    case $1 in
      --deb) deb=${2:?--deb PACKAGE.deb}; shift 2 ;;
      --guest) break ;;
      -*) die "unknown option $1" ;;
      *) break ;;
    esac
  done
  bin=${1:?usage: scripts/vm-kubeadm.sh [--deb PACKAGE.deb] K8S_BIN_DIR}
  bin=$(cd "$bin" && pwd)
  local b
  for b in "${BINARIES[@]}"; do [[ -x $bin/$b ]] || die "$bin/$b is missing"; done
  local shim_args=()
  if [[ -n $deb ]]; then
    [[ -f $deb ]] || die "$deb: no such package"
    deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
    shim_args=(--deb "$deb")
  else
    [[ -x $BUILD/shim/dockershim ]] || die "$BUILD/shim/dockershim is not built (cmake --build $BUILD --target dockershim)"
    shim_args=(--build "$(cd "$BUILD" && pwd)")
  fi
  local start=$SECONDS
  log "making the images' root file systems in $W/share"
  make_images "$bin"
  log "images ready in $((SECONDS - start)) s"
  rm -rf "$W/logs" && mkdir -p "$W/logs"
  local mounts=(--mount "$bin:$bin" --mount "$W/share:$W/share" --mount "$W/logs:$W/logs")
  [[ -n $deb ]] && mounts+=(--mount "$(dirname "$deb"):$(dirname "$deb")")
  # The build directory is in the work tree (shared) unless BUILD points elsewhere.
  [[ -z $deb && $(cd "$BUILD" && pwd) != "$ROOT"/* ]] && mounts+=(--mount "$(cd "$BUILD" && pwd):$(cd "$BUILD" && pwd)")
  VM_MEMORY=${VM_MEMORY:-6G} exec scripts/vm.sh run "${mounts[@]}" -- \
    scripts/vm-kubeadm.sh --guest "${shim_args[@]}" --bin "$bin" --share "$W/share" --logs "$W/logs"
}

# ---- the guest's side -------------------------------------------------------------------------

NODE_IP=10.200.0.10
GATEWAY=10.200.0.1
OWN_SOCKET=unix:///run/dockershim.sock
CRI_DOCKERD_SOCKET=unix:///var/run/cri-dockerd.sock
KUBECONFIG=/etc/kubernetes/admin.conf
export KUBECONFIG

results=()
failed=0
t0=$SECONDS
mark=$SECONDS
# check NAME COMMAND...: PASS/FAIL with the seconds since the previous check's end;
# passed is 1 or 0 afterwards (check itself returns 0: the guest runs under set -e).
passed=1
check() {
  local what=$1 line
  shift
  if "$@"; then
    line=$(printf 'PASS  %-72s %4ds' "$what" $((SECONDS - mark)))
    passed=1
  else
    line=$(printf 'FAIL  %-72s %4ds' "$what" $((SECONDS - mark)))
    failed=1 passed=0
  fi
  echo "$line"
  results+=("$line")
  mark=$SECONDS
}
# timed SECONDS_VAR COMMAND...: runs COMMAND, stores its duration in SECONDS_VAR.
timed() {
  local -n _seconds=$1
  shift
  local s=$SECONDS rc=0
  "$@" || rc=$?
  _seconds=$((SECONDS - s))
  return $rc
}
# Every 5 s: kubectl is a large Go program, each start costs an emulated guest seconds.
wait_for() { # timeout command...: true once the command succeeds
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 5
  done
}

# kubeadm_logged LOG ARGS...: kubeadm ARGS, its output in LOG. kubeadm gives its first CRI
# call (Version, dial included) 2 s, which an emulated guest on a busy host can miss before
# kubeadm does anything: there, and for that error alone, up to 3 tries, each one said.
kubeadm_logged() {
  local log=$1 try=1 tries=1 rc
  shift
  [[ $(systemd-detect-virt) == qemu ]] && tries=3
  while :; do
    rc=0
    kubeadm "$@" >"$log" 2>&1 || rc=$?
    ((try < tries)) && grep -q 'validate CRI v1 runtime API.*DeadlineExceeded' "$log" || return $rc
    echo "    kubeadm's 2 s for its first CRI call passed (emulated guest): try $((++try))"
  done
}

# (check runs its command as an if condition, where bash ignores set -e: the functions
# below chain their steps.)
setup_network() {
  modprobe dummy && ip link add kubeadm0 type dummy && ip addr add "$NODE_IP/24" dev kubeadm0 &&
    ip link set kubeadm0 up && ip route add default via "$GATEWAY" dev kubeadm0 || return 1
  # The kubelet reads the host's resolv.conf for every pod; the VM has none.
  [[ -s /etc/resolv.conf ]] || echo "nameserver $GATEWAY" >/etc/resolv.conf
}

install_shim() { # --deb PATH | --build DIR
  install -D -m 0644 "$ROOT/examples/kubeadm/cri-dockerd-path.conf" \
    /etc/systemd/system/dockershim.socket.d/cri-dockerd-path.conf || return 1
  if [[ $1 == --deb ]]; then
    DEBIAN_FRONTEND=noninteractive dpkg -i "$2" || return 1
  else
    cmake --install "$2" >/dev/null && systemctl daemon-reload &&
      systemctl enable dockershim.socket dockershim.service || return 1
  fi
  # kubeadm's pause image (kubeadm config images list), so that preflight finds the
  # runtime's sandbox image (Status verbose: sandboxImage) to be the one it expects.
  echo "pod-infra-container-image = \"$PAUSE_IMAGE\"" >>/etc/dockershim/config.toml &&
    install -D -m 0644 "$ROOT/examples/cni/10-dockershim-bridge.conflist" /etc/cni/net.d/10-dockershim-bridge.conflist ||
    return 1
  systemctl stop dockershim.service dockershim.socket 2>/dev/null
  # The service too: the connection that would start it is kubeadm's first CRI call, whose
  # 2 s a slow guest can spend starting the shim (DeadlineExceeded).
  systemctl daemon-reload && systemctl start dockershim.socket dockershim.service
}

install_kubernetes() { # bindir
  local b
  for b in kubelet kubeadm kubectl; do install -m 0755 "$1/$b" "/usr/bin/$b" || return 1; done
  install -m 0644 "$ROOT/examples/kubeadm/kubelet.service" /etc/systemd/system/kubelet.service &&
    install -D -m 0644 "$ROOT/examples/kubeadm/10-kubeadm.conf" /etc/systemd/system/kubelet.service.d/10-kubeadm.conf &&
    systemctl daemon-reload && systemctl enable kubelet.service
}

import_images() { # share: imports each image kubeadm lists (but CoreDNS), the workload's
  local image name
  for image in $(kubeadm config images list --config "$CONFIG" 2>/dev/null); do
    name=${image##*/}
    name=${name%%:*}
    case $name in
      coredns) continue ;;
      pause) docker import --change 'ENTRYPOINT ["/pause"]' "$1/pause.tar" "$image" >/dev/null ;;
      *) docker import --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin' \
           "$1/$name.tar" "$image" >/dev/null ;;
    esac || return 1
  done
  docker import --change 'ENV PATH=/bin' "$1/busybox.tar" "$WORKLOAD_IMAGE" >/dev/null
}

# The kubeadm configuration: $1 is the CRI endpoint (none: kubeadm looks for one). The
# node IP comes from the default route.
write_config() { # cri-socket file
  cat >"$2" <<EOF
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  ${1:+criSocket: $1}
  imagePullPolicy: IfNotPresent
patches:
  directory: $PATCHES
skipPhases:
  - addon/coredns
# kubeadm's defaults (4 min for the kubelet and the control plane) are short for a guest
# under emulation (TCG, when KVM cannot run it).
timeouts:
  kubeletHealthCheck: 10m
  controlPlaneComponentHealthCheck: 20m
  kubernetesAPICall: 20m
  etcdAPICall: 5m
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $K8S_VERSION
networking:
  podSubnet: 10.88.0.0/16
$(leader_election_args)
etcd:
  local:
    imageTag: $ETCD_VERSION-debian
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
EOF
}

# Under emulation on a busy host etcd answers late, the controller-manager and the scheduler
# miss their leases' renewal (10 s), exit and crash-loop: no DaemonSet or Deployment pod is
# made for minutes. Leases 6 times as long there (one node: no other leader to wait for).
leader_election_args() {
  [[ $(systemd-detect-virt) == qemu ]] || return 0
  local c
  for c in controllerManager scheduler; do
    echo "$c:"
    echo "  extraArgs:"
    echo "  - {name: leader-elect-lease-duration, value: 90s}"
    echo "  - {name: leader-elect-renew-deadline, value: 60s}"
    echo "  - {name: leader-elect-retry-period, value: 12s}"
  done
}

# etcd 3.5 knows kubeadm 1.36's two etcd 3.6 flags by their older names. The command's
# arguments are sorted: "test" makes kubeadm fail, not start etcd wrongly, should the
# order change.
write_patches() {
  mkdir -p "$PATCHES"
  cat >"$PATCHES/etcd+json.yaml" <<'EOF'
- {op: test, path: /spec/containers/0/command/5, value: "--feature-gates=InitialCorruptCheck=true"}
- {op: replace, path: /spec/containers/0/command/5, value: "--experimental-initial-corrupt-check=true"}
- {op: test, path: /spec/containers/0/command/19, value: "--watch-progress-notify-interval=5s"}
- {op: replace, path: /spec/containers/0/command/19, value: "--experimental-watch-progress-notify-interval=5s"}
EOF
  # Under emulation (TCG: no KVM) on a busy host a component can take longer than its
  # probes allow (15 s a probe, the apiserver's liveness 8 failures): the kubelet then
  # restarts a working component again and again. Patient probes there only.
  [[ $(systemd-detect-virt) == qemu ]] || return 0
  local c
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    cat >"$PATCHES/${c}0+strategic.yaml" <<EOF
spec:
  containers:
  - name: $c
    livenessProbe: {timeoutSeconds: 60, failureThreshold: 30}
    startupProbe: {timeoutSeconds: 60, failureThreshold: 60}
EOF
    [[ $c != kube-controller-manager ]] && # the one without a readiness probe
      echo "    readinessProbe: {timeoutSeconds: 60}" >>"$PATCHES/${c}0+strategic.yaml"
  done
  echo "vm-kubeadm: emulated guest ($(systemd-detect-virt)): the control plane's probes made patient"
}

# Preflight output of kubeadm that concerns the runtime: the CRI, ContainerRuntimeVersion
# and ImagePull checks' warnings and errors, and the sandbox image warning.
runtime_complaints() { grep -E '\[(WARNING|ERROR) (CRI|ContainerRuntimeVersion|ImagePull)\]|sandbox image' "$1"; }
no_runtime_complaint() { # log
  local lines
  lines=$(runtime_complaints "$1" || true)
  [[ -z $lines ]] || { echo "$lines" | sed 's/^/    /'; return 1; }
}
show_warnings() { grep -E '\[WARNING' "$1" | sed 's/^/    other warning: /' || true; }

preflight_through_cri_dockerd_path() {
  local cfg=/root/kubeadm-cri-dockerd.yaml
  write_config "$CRI_DOCKERD_SOCKET" "$cfg"
  kubeadm_logged "$LOGS/preflight-cri-dockerd-path.log" init phase preflight --config "$cfg"
}

# kubeadm's list of known sockets is containerd's, CRI-O's and cri-dockerd's: with Docker's
# containerd socket there too it must refuse to guess, naming both.
detection_names_both() {
  local out cfg=/root/kubeadm-detect.yaml
  write_config "" "$cfg"
  out=$(kubeadm init phase preflight --config "$cfg" 2>&1 || true)
  echo "$out" >"$LOGS/detection.log"
  grep -q 'found multiple CRI endpoints' <<<"$out" && grep -q "$CRI_DOCKERD_SOCKET" <<<"$out" &&
    grep -q 'unix:///var/run/containerd/containerd.sock' <<<"$out"
}

node_ready() { [[ $(kubectl get node "$(hostname)" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
static_pods_ready() {
  local c
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    [[ $(kubectl -n kube-system get pod "$c-$(hostname)" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]] || return 1
  done
}
# Each component is a container the shim made: Docker names it k8s_<container>_<pod>_...
on_the_shim() {
  local c
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler; do
    docker ps --filter "name=^k8s_${c}_${c}-$(hostname)_kube-system_" --filter label=io.kubernetes.docker.type=container \
      --format '{{.Names}}' | grep -q . || { echo "    no running container of $c"; return 1; }
  done
}
kube_proxy_ready() { kubectl -n kube-system rollout status daemonset/kube-proxy --timeout=5s; }
service_answers() { curl -sk --max-time 3 https://10.96.0.1/version | grep -q gitVersion; }

deploy() {
  kubectl apply -f - >/dev/null <<EOF || return 1
apiVersion: apps/v1
kind: Deployment
metadata: {name: hello}
spec:
  replicas: 2
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      containers:
      - name: hello
        image: $WORKLOAD_IMAGE
        imagePullPolicy: Never
        command: [sh, -c, 'echo hello from \$(hostname); exec sleep 100000']
EOF
  kubectl rollout status deployment/hello --timeout=600s
}

first_pod() { kubectl get pod -l app=hello -o jsonpath='{.items[0].metadata.name}'; }
exec_works() { local p; p=$(first_pod) && [[ -n $p && $(kubectl exec "$p" -- cat /etc/hostname) == "$p" ]]; }
logs_work() { local p; p=$(first_pod) && [[ -n $p ]] && kubectl logs "$p" | grep -qx "hello from $p"; }
pod_ips_from_cni() { # every pod of the Deployment has an address of the bridge's subnet
  local ips
  ips=$(kubectl get pod -l app=hello -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}')
  [[ $(grep -c '^10\.88\.' <<<"$ips") == 2 ]] || { echo "    pod IPs: $ips"; return 1; }
}

# While kubeadm init runs: what Docker runs, every 60 s (on the guest's disk; save_logs
# copies it to $LOGS with the containers' last lines).
progress() {
  while sleep 60; do
    echo "==== $(date +%T)"
    docker ps -a --format '{{.Names}} {{.Status}}' --filter label=io.kubernetes.docker.type=container
  done >/root/init-progress.txt 2>&1
}
init() {
  progress &
  local watcher=$! rc=0
  kubeadm_logged "$LOGS/init.log" init --config "$CONFIG" || rc=$?
  kill "$watcher"
  return $rc
}

reset_cleanly() {
  kubeadm_logged "$LOGS/reset.log" reset -f --cri-socket "$OWN_SOCKET" || return 1
  ! grep -E 'Failed to remove containers|failed to (stop|remove) running pod' "$LOGS/reset.log"
}
no_container_left() {
  local left
  left=$(docker ps -a --filter label=io.kubernetes.docker.type --format '{{.Names}}')
  [[ -z $left ]] || { echo "$left" | sed 's/^/    left: /'; return 1; }
}
no_pod_network_left() {
  local left
  left=$(
    ls /var/lib/cni/cache/results 2>/dev/null
    find /var/lib/cni/networks/dockershim-bridge -type f ! -name 'last_reserved_ip.*' ! -name lock 2>/dev/null
    ip -o link show type veth
  )
  [[ -z $left ]] || { echo "$left" | sed 's/^/    left: /'; return 1; }
}
no_checkpoint_left() {
  local left
  left=$(find /var/lib/dockershim/sandbox /var/lib/dockershim/creating -mindepth 1 2>/dev/null)
  [[ -z $left ]] || { echo "$left" | sed 's/^/    left: /'; return 1; }
}
shim_still_ready() {
  # kubeadm's own view of the runtime after the reset: the CRI preflight check alone.
  kubeadm_logged "$LOGS/after-reset.log" init phase preflight --config "$CONFIG" --ignore-preflight-errors=all &&
    no_runtime_complaint "$LOGS/after-reset.log"
}

save_logs() {
  local c ids
  cp /root/init-progress.txt "$LOGS/" 2>/dev/null || true
  # After kubeadm reset there is none: the file of the call before the reset stays.
  ids=$(docker ps -aq --filter label=io.kubernetes.docker.type=container 2>/dev/null || true)
  [[ -z $ids ]] || for c in $ids; do
    echo "-- $(docker inspect -f '{{.Name}} {{.State.Status}} exit {{.State.ExitCode}}' "$c")"
    docker logs --tail 20 "$c" 2>&1
  done >"$LOGS/containers.txt" 2>&1
  journalctl -u kubelet --no-pager >"$LOGS/kubelet.journal" 2>&1 || true
  journalctl -u dockershim.service -u dockershim.socket --no-pager >"$LOGS/dockershim.journal" 2>&1 || true
  docker ps -a >"$LOGS/docker-ps.txt" 2>&1 || true
}

guest() {
  local shim=() bin="" share=""
  while (($#)); do
    case $1 in
      --deb | --build) shim=("$1" "$2"); shift 2 ;;
      --bin) bin=$2; shift 2 ;;
      --share) share=$2; shift 2 ;;
      --logs) LOGS=$2; shift 2 ;;
      *) die "guest: unknown argument $1" ;;
    esac
  done
  [[ $(cat /proc/1/comm) == systemd ]] || die "PID 1 is not systemd (run it through scripts/vm.sh)"
  [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] || die "/sys/fs/cgroup is not cgroup v2"
  trap save_logs EXIT
  # The guest's runner (a systemd unit) has no HOME: kubectl would put its cache, .kube/,
  # in the current directory, the shared work tree.
  export HOME=/root
  K8S_VERSION=$("$bin/kubeadm" version -o short)
  ETCD_VERSION=$(cat "$share/etcd.version")
  PAUSE_IMAGE=$("$bin/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | grep /pause:)
  PATCHES=/root/kubeadm-patches
  CONFIG=/root/kubeadm.yaml
  echo "vm-kubeadm: Kubernetes $K8S_VERSION, etcd $ETCD_VERSION (Debian), Docker $(docker version -f '{{.Server.Version}}')," \
    "$(nproc) CPUs, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"

  check "node network: dummy interface $NODE_IP, default route via it" setup_network
  check "shim installed (${shim[0]#--}), socket at /run/dockershim.sock and /run/cri-dockerd.sock" install_shim "${shim[@]}"
  check "kubelet, kubeadm, kubectl and the kubelet units installed" install_kubernetes "$bin"
  write_patches
  write_config "$OWN_SOCKET" "$CONFIG"
  check "images imported: $(kubeadm config images list --config "$CONFIG" 2>/dev/null | grep -v coredns | tr '\n' ' ')" \
    import_images "$share"
  check "/run/cri-dockerd.sock answers (systemd Symlinks=)" test -S /run/cri-dockerd.sock

  check "kubeadm socket detection: refuses to guess between containerd's socket and ours" detection_names_both
  check "preflight through cri-dockerd's path ($CRI_DOCKERD_SOCKET) passes" preflight_through_cri_dockerd_path
  check "  ... with no warning about the runtime (CRI, version, images, sandbox image)" \
    no_runtime_complaint "$LOGS/preflight-cri-dockerd-path.log"
  show_warnings "$LOGS/preflight-cri-dockerd-path.log"

  local init_s=0
  check "kubeadm init --config (criSocket $OWN_SOCKET, addon/coredns skipped)" \
    timed init_s init
  local init_ok=$passed
  check "  ... preflight with no warning about the runtime" no_runtime_complaint "$LOGS/init.log"
  show_warnings "$LOGS/init.log"
  if ((!init_ok)); then
    tail -n 5 "$LOGS/init.log"
    finish "$init_s" 0 0
  fi
  check "node Ready" wait_for 600 node_ready
  check "etcd, kube-apiserver, kube-controller-manager, kube-scheduler Ready" wait_for 600 static_pods_ready
  check "  ... each a container made by the shim (k8s_<name>_<pod>_kube-system_...)" on_the_shim
  check "kube-proxy running (iptables image)" wait_for 600 kube_proxy_ready
  check "  ... the kubernetes Service answers on its ClusterIP from the node" wait_for 60 service_answers
  check "control-plane node untainted" kubectl taint nodes --all node-role.kubernetes.io/control-plane-

  local deploy_s=0
  check "Deployment of 2 pods Ready" timed deploy_s deploy
  ((passed)) || kubectl describe pod -l app=hello >"$LOGS/hello-pods.txt" 2>&1
  check "  ... pod IPs from the CNI bridge (10.88.0.0/16)" pod_ips_from_cni
  check "kubectl exec" exec_works
  check "kubectl logs" logs_work
  kubectl get nodes -o wide >"$LOGS/nodes.txt" 2>&1 || true
  kubectl get pods -A -o wide >"$LOGS/pods.txt" 2>&1 || true
  cat "$LOGS/pods.txt"
  save_logs

  local reset_s=0
  check "kubeadm reset -f --cri-socket $OWN_SOCKET, every pod removed" timed reset_s reset_cleanly
  check "  ... no Kubernetes container left in Docker" no_container_left
  check "  ... no pod network left (CNI cache, host-local addresses, veths)" no_pod_network_left
  check "  ... no checkpoint of the shim left" no_checkpoint_left
  check "the shim still serves (kubeadm's CRI check)" shim_still_ready

  finish "$init_s" "$deploy_s" "$reset_s"
}

finish() { # init_s deploy_s reset_s
  echo
  echo "vm-kubeadm: summary ($((SECONDS - t0)) s in the guest)"
  printf '  %s\n' "${results[@]}"
  echo "  figures: kubeadm init $1 s, Deployment (2 pods) to Ready $2 s, kubeadm reset $3 s"
  if ((failed)); then
    echo "vm-kubeadm: FAILED (logs in $LOGS)" >&2
    exit 1
  fi
  echo "vm-kubeadm: every check passed"
}

[[ $EUID -eq 0 ]] || die "run as root"
if [[ ${1:-} == --guest ]]; then
  shift
  guest "$@"
else
  host "$@"
fi
