#!/bin/bash
# The integration tests on a cgroup v2 node with systemd (scripts/vm.sh), as
# scripts/test.sh runs them:
#   scripts/vm-integration.sh [ENGINES]          on the host, as root
# ENGINES: "20 28c" by default: the guest's own Docker 20.10 (docker.service) and 28.5
# with the containerd image store beside it (scripts/docker-engines.sh; "28" is 28.5 on
# overlay2), all on the systemd cgroup driver. "29" is a Docker 29 built by hand
# (docs/docker-29.md), only with DOCKERSHIM_ENGINE_29_DIR naming its binaries' directory,
# which is shared with the guest; it runs on 28.5's unpacked containerd 2.1 and shims.
# On the host it prepares what the guest can reuse instead of redoing it under emulation —
# the newer engines unpacked (scripts/docker-engines.sh fetch), the test images saved from
# the host's engine, the registries' storage that already holds them (so run
# scripts/test-env.sh first) — boots the VM with those shared at the same paths, and runs
# itself there with --guest.
# The test binaries are the host's build (./build, or $BUILD), run from the shared work tree.
# DOCKERSHIM_VM_TESTS: a ctest -R regex of the tests to run (all integration tests when
# empty); scripts/test.sh picks the ones that touch cgroups, systemd and the node.
# DOCKERSHIM_VM_TESTS_EXCLUDE: a ctest -E regex of tests left out there.
# DOCKERSHIM_VM_TEST_TIMEOUT: ctest's bound on each test, in seconds (900).
# The guest's engine logs are copied to $W/vm-share/logs/<engine>-dockerd.log on the host
# after the run (DOCKERSHIM_ENGINES_DEBUG="29" has them at debug level).
# A guest that is not what it must be (cgroup v1, no systemd, Docker on cgroupfs) fails
# the stage: these tests never pass by skipping.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build}
W=/var/tmp/dockershim-test
guest=0
if [[ ${1:-} == --guest ]]; then guest=1; shift; fi
ENGINES=${*:-20 28c}

die() { echo "vm-integration: error: $*" >&2; exit 1; }

if ((!guest)); then
  [[ -f $W/env.sh && -d $W/images ]] || die "no test environment on the host (run scripts/test-env.sh first)"
  mounts=()
  for engine in $ENGINES; do
    [[ $engine == 20 ]] && continue
    # Refuses 29 without DOCKERSHIM_ENGINE_29_DIR (or with a directory that lacks its binaries).
    scripts/docker-engines.sh fetch "$engine"
    root=$(scripts/docker-engines.sh root "$engine")
    [[ " ${mounts[*]} " == *" $root:$root "* ]] || mounts+=(--mount "$root:$root")  # 28, 28c and 29 share one
    # A hand-built Docker 29: its directory at the same path, which DOCKERSHIM_ENGINE_29_DIR
    # (passed through to the guest) names there too.
    if [[ $engine == 29 ]]; then mounts+=(--mount "$DOCKERSHIM_ENGINE_29_DIR:$DOCKERSHIM_ENGINE_29_DIR"); fi
  done
  mkdir -p "$W/vm-share"
  mapfile -t images < <(DOCKER_HOST=unix:///var/run/docker.sock docker images --format '{{.Repository}}:{{.Tag}}' 'dockershim-test/*')
  ((${#images[@]})) || die "the host's Docker has no dockershim-test/* images (run scripts/test-env.sh first)"
  DOCKER_HOST=unix:///var/run/docker.sock docker save -o "$W/vm-share/images.tar" "${images[@]}"
  for dir in vm-share images registry-5000 registry-5001; do mounts+=(--mount "$W/$dir:$W/$dir"); done
  exec scripts/vm.sh run "${mounts[@]}" -- scripts/vm-integration.sh --guest $ENGINES
fi

[[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] || die "/sys/fs/cgroup is not cgroup v2 (run it in scripts/vm.sh)"
[[ $(cat /proc/1/comm) == systemd ]] || die "PID 1 is $(cat /proc/1/comm), not systemd"
[[ -x $BUILD/tests/integration/integration_tests ]] || die "$BUILD/tests/integration/integration_tests is not built"
echo "vm-integration: kernel $(uname -r), cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

# The guest's engines on the systemd driver (the newer ones get it from docker-engines.sh).
export DOCKERSHIM_ENGINES_CGROUP_DRIVER=systemd
# A dockerd that finds a containerd at /run/containerd/containerd.sock uses it instead of
# starting its own: the newer engines would run on the guest's containerd 1.6 and runc 1.1
# (which fails every Docker 29 container) instead of their own. The guest's containerd,
# 20.10's, moves to another socket for this run (the image keeps the usual one: scripts/vm-kubeadm.sh).
newer=0
for engine in $ENGINES; do [[ $engine == 20 ]] || newer=1; done
if ((newer)) && [[ -S /run/containerd/containerd.sock ]]; then
  sock=/run/containerd-20/containerd.sock
  mkdir -p /etc/systemd/system/containerd.service.d /etc/systemd/system/docker.service.d
  printf '[Service]\nExecStart=\nExecStart=/usr/bin/containerd --address %s\n' "$sock" \
    >/etc/systemd/system/containerd.service.d/address.conf
  # shellcheck disable=SC2016 # $DOCKER_OPTS is systemd's to expand
  printf '[Service]\nExecStart=\nExecStart=/usr/sbin/dockerd -H fd:// --containerd=%s $DOCKER_OPTS\n' "$sock" \
    >/etc/systemd/system/docker.service.d/containerd.conf
  systemctl daemon-reload
  systemctl stop docker.service docker.socket containerd.service
  rm -f /run/containerd/containerd.sock /run/containerd/containerd.sock.ttrpc
  systemctl start containerd.service docker.service
  [[ ! -e /run/containerd/containerd.sock ]] || die "the guest's containerd still listens on /run/containerd/containerd.sock"
fi
# The host's test images, which the shared registries' storage already holds: test-env
# finds them up to date instead of building and pushing them under emulation.
if [[ -f $W/vm-share/images.tar ]]; then docker load -q -i "$W/vm-share/images.tar" >/dev/null; fi
DOCKERSHIM_TEST_ENGINES=$ENGINES scripts/test-env.sh
# Tests that need cgroup v2 fail here instead of skipping.
export DOCKERSHIM_TEST_CGROUP=v2
# A throw-away node: tests may install and switch its systemd units (MigrateNodeTest).
export DOCKERSHIM_TEST_VM=1

failed=()
for engine in $ENGINES; do
  export DOCKERSHIM_TEST_ENGINE=$engine
  # shellcheck source=/dev/null
  source /var/tmp/dockershim-test/env.sh
  info=$(DOCKER_HOST=$DOCKERSHIM_TEST_DOCKER docker info -f '{{.ServerVersion}} {{.CgroupDriver}} {{.CgroupVersion}}')
  read -r version driver cgroup_version <<<"$info"
  [[ $driver == systemd && $cgroup_version == 2 ]] ||
    die "docker $engine runs on the $driver driver, cgroup v$cgroup_version (want systemd, 2)"
  echo
  echo "==> integration tests on Docker $version (systemd driver, cgroup v2) at $DOCKERSHIM_TEST_DOCKER"
  start=$SECONDS
  if ! ctest --test-dir "$BUILD" --output-on-failure -L integration --timeout "${DOCKERSHIM_VM_TEST_TIMEOUT:-900}" \
      ${DOCKERSHIM_VM_TESTS:+-R "$DOCKERSHIM_VM_TESTS"} \
      ${DOCKERSHIM_VM_TESTS_EXCLUDE:+-E "$DOCKERSHIM_VM_TESTS_EXCLUDE"} --no-tests=error; then
    failed+=("$engine")
  fi
  echo "vm-integration: Docker $engine took $((SECONDS - start)) s"
  # The guest's disk goes with it: its engine's log to the host, for what failed.
  mkdir -p "$W/vm-share/logs"
  if [[ $engine == 20 ]]; then
    journalctl -u docker.service -u containerd.service -o short-precise --no-pager >"$W/vm-share/logs/20-dockerd.log" || true
  else
    cp "$W/engines/$engine/dockerd.log" "$W/vm-share/logs/$engine-dockerd.log" || true
  fi
done
if ((${#failed[@]})); then
  echo "vm-integration: FAILED on Docker ${failed[*]}" >&2
  exit 1
fi
echo "vm-integration: all passed on Docker $ENGINES"
