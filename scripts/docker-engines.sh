#!/bin/bash
# The newer Docker Engines of the test environment, beside Debian 12's 20.10:
#   26  = Debian 13 (trixie) docker.io 26.1.x with containerd 1.7.x  (Engine API 1.45)
#   28  = Debian sid         docker.io 28.5.x with containerd 2.1.x  (Engine API 1.51)
#   28c = the same 28.5 binaries with the containerd image store ("features":
#         {"containerd-snapshotter": true}: images in containerd's content store and
#         overlayfs snapshotter, as Docker 29 keeps them by default)
#   29  = a Docker 29 built by hand outside the repository (docs/docker-29.md), only when
#         DOCKERSHIM_ENGINE_29_DIR names the directory holding its dockerd-29,
#         docker-proxy-29 and runc (>= 1.2); it runs on engine 28's containerd 2.1 and
#         keeps Docker 29's default, the containerd image store. Never fetched or built here.
# Their .debs come from Debian's archive through apt-get download with a private apt state
# (its own sources list, lists and cache under $E/apt): the system's sources, pins and
# installed packages stay Debian 12's, so nothing else is ever upgraded. They are unpacked
# with dpkg-deb into $E/<n>/root (28c and 29 use $E/28/root), never installed. Their runc
# is not fetched: trixie's needs glibc 2.38 (Debian 12 has 2.36), and Debian 12's runc
# 1.1.5 works with 26 and 28 (not with 29: it puts a time namespace in every spec).
# Each daemon has its own socket, --data-root, --exec-root, --pidfile, config file,
# bridge (dseng<n>, created here: --bridge=none would delete the 20.10 daemon's docker0;
# not dsbr<n>, the integration tests' CNI bridges, which they delete when done) and
# containerd (dockerd starts its own, under <exec-root>/containerd, its root under
# <data-root>/containerd), and runs without iptables rules so that it leaves the 20.10
# daemon's chains alone.
#
#   scripts/docker-engines.sh start [26 28 28c]   fetch, unpack and start (idempotent)
#   scripts/docker-engines.sh stop [26 28 28c]
#   scripts/docker-engines.sh restart [26 28 28c]  stop, then start (the outage tests use stop/start)
#   scripts/docker-engines.sh fetch [26 28 28c]    fetch and unpack only (for scripts/vm.sh's guest)
#   scripts/docker-engines.sh endpoint N      prints unix://... of engine N
#   scripts/docker-engines.sh root N          prints the directory engine N is unpacked in
#   scripts/docker-engines.sh containerd N    prints the pid of engine N's containerd
# Run as root.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

E=${DOCKERSHIM_ENGINES_DIR:-/var/tmp/dockershim-test/engines}
ARCHIVE=http://deb.debian.org/debian
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# Runtime handlers for the RuntimeClass tests; runc-alt is a second name for the engine's runc.
runtimes_json() { # n
  printf '{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}, "runc-alt": {"path": "%s"}}' \
    "$(runc_of "$1")"
}
# Engines started with "experimental": true (Docker's checkpoint API, for CheckpointContainer
# with CRIU), e.g. DOCKERSHIM_ENGINES_EXPERIMENTAL=26; none by default.
EXPERIMENTAL=" ${DOCKERSHIM_ENGINES_EXPERIMENTAL:-} "
# Engines whose dockerd (and the containerd it starts) log at debug level, each API call
# and signal with its time, e.g. DOCKERSHIM_ENGINES_DEBUG="28c 29"; none by default.
DEBUG=" ${DOCKERSHIM_ENGINES_DEBUG:-} "
# The cgroup driver the engines use (Docker's own default when unset: cgroupfs on cgroup
# v1; systemd on cgroup v2 under systemd). scripts/vm-integration.sh sets systemd.
CGROUP_DRIVER=${DOCKERSHIM_ENGINES_CGROUP_DRIVER:-}
# Where a hand-built Docker 29 is (docs/docker-29.md); engine 29 exists only with it.
ENGINE_29_DIR=${DOCKERSHIM_ENGINE_29_DIR:-}

log() { echo "docker-engines: $*"; }
die() { echo "docker-engines: error: $*" >&2; exit 1; }

known() { # n: dies unless engine n can be run here
  case $1 in
    26 | 28 | 28c) ;;
    29)
      [[ -n $ENGINE_29_DIR ]] ||
        die "engine 29 needs DOCKERSHIM_ENGINE_29_DIR: the directory with dockerd-29, docker-proxy-29 and runc >= 1.2 (docs/docker-29.md)"
      local f
      for f in dockerd-29 docker-proxy-29 runc; do
        [[ -x $ENGINE_29_DIR/$f ]] || die "DOCKERSHIM_ENGINE_29_DIR=$ENGINE_29_DIR has no executable $f"
      done
      ;;
    *) die "unknown engine $1 (26, 28, 28c, or 29 with DOCKERSHIM_ENGINE_29_DIR)" ;;
  esac
}
# The Debian package tree an engine runs from: 28c is 28's binaries, 29 uses 28's containerd.
unpacked() { case $1 in 28c | 29) echo 28 ;; *) echo "$1" ;; esac; }
suite() { case $1 in 26) echo trixie ;; 28) echo sid ;; esac; }
# The version prefixes the tests are written for: a suite that moved on is an error, not
# a silent change of the engine under test.
docker_version() { case $1 in 26) echo 26.1. ;; 28 | 28c) echo 28.5. ;; 29) echo 29. ;; esac; }
containerd_version() { case $1 in 26) echo 1.7. ;; 28) echo 2.1. ;; esac; }
# Whether the engine keeps images in containerd (the image store the tests expect of it).
containerd_store() { [[ $1 == 28c || $1 == 29 ]]; }
subnet_octet() { case $1 in 28c) echo 128 ;; *) echo "$1" ;; esac; } # dseng26 is 172.31.26.1/24
endpoint() { echo "unix://$E/$1/docker.sock"; }
# The runc an engine runs containers with: Debian 12's, or the one beside Docker 29.
runc_of() { if [[ $1 == 29 ]]; then echo "$E/29/bin/runc"; else echo /usr/sbin/runc; fi; }

APT_OPTS=(-o "Dir::Etc::SourceList=$E/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$E/apt/lists" -o "Dir::Cache=$E/apt/cache" -o APT::Sandbox::User=root)

apt_update() {
  [[ -n ${APT_UPDATED:-} ]] && return
  mkdir -p "$E/apt/lists/partial" "$E/apt/cache/archives/partial"
  printf 'deb [signed-by=%s] %s %s main\n' "$KEYRING" "$ARCHIVE" trixie "$KEYRING" "$ARCHIVE" sid >"$E/apt/sources.list"
  log "apt-get update (trixie, sid) into $E/apt"
  apt-get "${APT_OPTS[@]}" update -qq || die "apt-get update of trixie/sid failed"
  APT_UPDATED=1
}

# the newest version of package $1 in suite $2 that starts with $3
pick_version() {
  apt-cache "${APT_OPTS[@]}" madison "$1" | awk -F' *\\| *' -v s=" $2/" -v p="$3" \
    'index($3, s) && index($2, p) == 1 { print $2; exit }'
}

fetch() { # n: unpacks docker.io and containerd into $E/<unpacked n>/root
  local n s dv cv dir
  n=$(unpacked "$1")
  s=$(suite "$n") dir=$E/$n
  [[ -x $dir/root/usr/sbin/dockerd && -x $dir/root/usr/bin/containerd ]] && return
  apt_update
  dv=$(pick_version docker.io "$s" "$(docker_version "$n")")
  cv=$(pick_version containerd "$s" "$(containerd_version "$n")")
  [[ -n $dv ]] || die "$s has no docker.io $(docker_version "$n")x any more"
  [[ -n $cv ]] || die "$s has no containerd $(containerd_version "$n")x any more"
  mkdir -p "$dir/debs"
  log "fetching docker.io $dv and containerd $cv from $s"
  (cd "$dir/debs" && apt-get "${APT_OPTS[@]}" download -qq "docker.io=$dv" "containerd=$cv") ||
    die "apt-get download from $s failed"
  rm -rf "$dir/root.new"
  mkdir -p "$dir/root.new"
  for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dir/root.new"; done
  rm -rf "$dir/root"
  mv "$dir/root.new" "$dir/root"
}

# Docker 29's binaries under the names dockerd looks for on its PATH (docker-proxy, runc).
link_29() {
  mkdir -p "$E/29/bin"
  ln -sfn "$ENGINE_29_DIR/dockerd-29" "$E/29/bin/dockerd"
  ln -sfn "$ENGINE_29_DIR/docker-proxy-29" "$E/29/bin/docker-proxy"
  ln -sfn "$ENGINE_29_DIR/runc" "$E/29/bin/runc"
  local v
  v=$("$E/29/bin/dockerd" --version) || die "$ENGINE_29_DIR/dockerd-29 does not run"
  [[ $v == "Docker version 29."* ]] || die "$ENGINE_29_DIR/dockerd-29 is not Docker 29: $v"
  v=$("$E/29/bin/runc" --version | sed -n 's/^runc version //p')
  [[ $v =~ ^1\.([2-9]|[1-9][0-9])\. ]] || die "Docker 29 needs runc >= 1.2; $ENGINE_29_DIR/runc is ${v:-unknown}"
}

answers() { DOCKER_HOST=$(endpoint "$1") docker version -f '{{.Server.Version}}' 2>/dev/null; }

start() { # n
  local n=$1 dir=$E/$1 br=dseng$1 v tree
  if v=$(answers "$n"); then
    log "docker $v answers on $(endpoint "$n")"
    return
  fi
  fetch "$n"
  tree=$E/$(unpacked "$n")/root
  # containerd, its shims, docker-init and docker-proxy come from the unpacked tree, runc
  # from Debian 12; Docker 29's own dockerd, docker-proxy and runc come first.
  local path="$tree/usr/bin:$tree/usr/sbin:$PATH" dockerd=$tree/usr/sbin/dockerd
  if [[ $n == 29 ]]; then link_29; path="$E/29/bin:$path" dockerd=$E/29/bin/dockerd; fi
  if ! ip link show "$br" >/dev/null 2>&1; then
    ip link add "$br" type bridge
    ip addr add "172.31.$(subnet_octet "$n").1/24" dev "$br"
  fi
  ip link set "$br" up
  # dockerd uses a containerd it finds there instead of starting its own, and the tests
  # of this engine run on that one's version and runc: Docker 29 cannot (runc 1.1 fails
  # its containers); the others can, and are told.
  if [[ -S /run/containerd/containerd.sock ]]; then
    [[ $n != 29 ]] ||
      die "a containerd listens on /run/containerd/containerd.sock: docker 29 would use it and its runc instead of its own (move it to another --address)"
    log "note: a containerd listens on /run/containerd/containerd.sock: docker $n runs on it, not on its own"
  fi
  mkdir -p "$dir"
  local options
  options=$(runtimes_json "$n")
  if [[ $n == 28c ]]; then options+=', "features": {"containerd-snapshotter": true}'; fi
  if [[ $EXPERIMENTAL == *" $n "* ]]; then options+=', "experimental": true'; fi
  if [[ $DEBUG == *" $n "* ]]; then options+=', "debug": true'; fi
  if [[ -n $CGROUP_DRIVER ]]; then options+=", \"exec-opts\": [\"native.cgroupdriver=$CGROUP_DRIVER\"]"; fi
  echo "$options}" >"$dir/daemon.json"
  rm -f "$dir/docker.pid" "$dir/docker.sock"
  log "starting docker $n (log: $dir/dockerd.log)"
  PATH=$path setsid "$dockerd" \
    --config-file "$dir/daemon.json" -H "$(endpoint "$n")" --data-root "$dir/data" --exec-root "$dir/exec" \
    --pidfile "$dir/docker.pid" --bridge "$br" --iptables=false --ip6tables=false \
    >>"$dir/dockerd.log" 2>&1 </dev/null &
  local deadline=$((SECONDS + 60))
  until v=$(answers "$n"); do
    if ((SECONDS >= deadline)); then
      tail -n 30 "$dir/dockerd.log" >&2 || true
      die "docker $n did not answer within 60s"
    fi
    sleep 0.5
  done
  [[ $v == "$(docker_version "$n")"* ]] || die "docker $n is $v, not $(docker_version "$n")x"
  # The image store is what the tests of that engine are about: a daemon that came up
  # with the other one (a data root made before, a feature renamed) is an error.
  local status
  status=$(DOCKER_HOST=$(endpoint "$n") docker info -f '{{.Driver}} {{json .DriverStatus}}')
  if containerd_store "$n"; then
    [[ $status == *io.containerd.snapshotter.v1* ]] || die "docker $n does not keep images in containerd: $status"
  else
    [[ $status != *io.containerd.snapshotter.v1* ]] || die "docker $n keeps images in containerd: $status"
  fi
  log "docker $v up on $(endpoint "$n") (storage: $status)"
}

stop() { # n
  local pidfile=$E/$1/docker.pid
  [[ -s $pidfile ]] || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  die "docker $1 (pid $pid) did not stop"
}

[[ $EUID -eq 0 ]] || die "run as root"
cmd=${1:-}
shift || true
case $cmd in
  start | stop | fetch)
    (($#)) || set -- 26 28 28c
    for n in "$@"; do known "$n"; "$cmd" "$n"; done
    ;;
  restart)
    (($#)) || set -- 26 28 28c
    for n in "$@"; do known "$n"; stop "$n"; start "$n"; done
    ;;
  endpoint) endpoint "${1:?engine}" ;;
  root) known "${1:?engine}"; echo "$E/$(unpacked "$1")/root" ;;
  containerd)
    known "${1:?engine}"
    cat "$E/$1/exec/containerd/containerd.pid" 2>/dev/null || die "docker $1 runs no containerd of its own"
    ;;
  *) die "usage: $0 start|stop|restart|fetch [26 28 28c] | endpoint N | root N | containerd N" ;;
esac
