#!/bin/bash
# The two newer Docker Engines of the test environment, beside Debian 12's 20.10:
#   26 = Debian 13 (trixie) docker.io 26.1.x with containerd 1.7.x  (Engine API 1.45)
#   28 = Debian sid         docker.io 28.5.x with containerd 2.1.x  (Engine API 1.51)
# Their .debs come from Debian's archive through apt-get download with a private apt state
# (its own sources list, lists and cache under $E/apt): the system's sources, pins and
# installed packages stay Debian 12's, so nothing else is ever upgraded. They are unpacked
# with dpkg-deb into $E/<n>/root, never installed. Their runc is not fetched: trixie's
# needs glibc 2.38 (Debian 12 has 2.36), and Debian 12's runc 1.1.5 works with both.
# Each daemon has its own socket, --data-root, --exec-root, --pidfile, config file and
# bridge (dseng<n>, created here: --bridge=none would delete the 20.10 daemon's docker0;
# not dsbr<n>, the integration tests' CNI bridges, which they delete when done), and runs
# without iptables rules so that it leaves the 20.10 daemon's chains alone.
#
#   scripts/docker-engines.sh start [26 28]   fetch, unpack and start (idempotent)
#   scripts/docker-engines.sh stop [26 28]
#   scripts/docker-engines.sh restart [26 28]  stop, then start (the outage tests use stop/start)
#   scripts/docker-engines.sh fetch [26 28]    fetch and unpack only (for scripts/vm.sh's guest)
#   scripts/docker-engines.sh endpoint N      prints unix://... of engine N
#   scripts/docker-engines.sh root N          prints the directory engine N is unpacked in
# Run as root.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

E=${DOCKERSHIM_ENGINES_DIR:-/var/tmp/dockershim-test/engines}
ARCHIVE=http://deb.debian.org/debian
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
RUNTIMES_JSON='{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}, "runc-alt": {"path": "/usr/sbin/runc"}}'
# Engines started with "experimental": true (Docker's checkpoint API, for CheckpointContainer
# with CRIU), e.g. DOCKERSHIM_ENGINES_EXPERIMENTAL=26; none by default.
EXPERIMENTAL=" ${DOCKERSHIM_ENGINES_EXPERIMENTAL:-} "
# The cgroup driver the engines use (Docker's own default when unset: cgroupfs on cgroup
# v1; systemd on cgroup v2 under systemd). scripts/vm-integration.sh sets systemd.
CGROUP_DRIVER=${DOCKERSHIM_ENGINES_CGROUP_DRIVER:-}

log() { echo "docker-engines: $*"; }
die() { echo "docker-engines: error: $*" >&2; exit 1; }

suite() { case $1 in 26) echo trixie ;; 28) echo sid ;; *) die "unknown engine $1 (26 or 28)" ;; esac; }
# The version prefixes the tests are written for: a suite that moved on is an error, not
# a silent change of the engine under test.
docker_version() { case $1 in 26) echo 26.1. ;; 28) echo 28.5. ;; esac; }
containerd_version() { case $1 in 26) echo 1.7. ;; 28) echo 2.1. ;; esac; }
subnet_octet() { echo "$1"; } # dseng26 is 172.31.26.1/24
endpoint() { echo "unix://$E/$1/docker.sock"; }

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

fetch() { # n: unpacks docker.io and containerd into $E/n/root
  local n=$1 s dv cv dir=$E/$1
  s=$(suite "$n")
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

answers() { DOCKER_HOST=$(endpoint "$1") docker version -f '{{.Server.Version}}' 2>/dev/null; }

start() { # n
  local n=$1 dir=$E/$1 br=dseng$1 v
  if v=$(answers "$n"); then
    log "docker $v answers on $(endpoint "$n")"
    return
  fi
  fetch "$n"
  if ! ip link show "$br" >/dev/null 2>&1; then
    ip link add "$br" type bridge
    ip addr add "172.31.$(subnet_octet "$n").1/24" dev "$br"
    ip link set "$br" up
  fi
  mkdir -p "$dir"
  local options=$RUNTIMES_JSON
  if [[ $EXPERIMENTAL == *" $n "* ]]; then options+=', "experimental": true'; fi
  if [[ -n $CGROUP_DRIVER ]]; then options+=", \"exec-opts\": [\"native.cgroupdriver=$CGROUP_DRIVER\"]"; fi
  echo "$options}" >"$dir/daemon.json"
  rm -f "$dir/docker.pid" "$dir/docker.sock"
  log "starting docker $n (log: $dir/dockerd.log)"
  # containerd, its shims and docker-proxy come from the unpacked tree, runc from Debian 12
  PATH="$dir/root/usr/bin:$dir/root/usr/sbin:$PATH" setsid "$dir/root/usr/sbin/dockerd" \
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
  log "docker $v up on $(endpoint "$n")"
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
    (($#)) || set -- 26 28
    for n in "$@"; do suite "$n" >/dev/null; "$cmd" "$n"; done
    ;;
  restart)
    (($#)) || set -- 26 28
    for n in "$@"; do suite "$n" >/dev/null; stop "$n"; start "$n"; done
    ;;
  endpoint) endpoint "${1:?engine}" ;;
  root) echo "$E/${1:?engine}/root" ;;
  *) die "usage: $0 start|stop|restart|fetch [26 28] | endpoint N | root N" ;;
esac
