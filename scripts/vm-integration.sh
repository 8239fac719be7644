#!/bin/bash
# The integration tests on a cgroup v2 node with systemd: runs INSIDE the VM of
# scripts/vm.sh, as scripts/test.sh does:
#   scripts/vm.sh run --mount E:E -- scripts/vm-integration.sh [ENGINES]
# (E: the host's unpacked engines, /var/tmp/dockershim-test/engines/<n>/root, so that the
# guest needs no archive). ENGINES: "20 28" by default: the guest's own Docker 20.10
# (docker.service) and 28.5 beside it, both on the systemd cgroup driver. The test
# binaries are the host's build (./build, or $BUILD), run from the shared work tree.
# DOCKERSHIM_VM_TESTS: a ctest -R regex of the tests to run (all integration tests when
# empty); scripts/test.sh picks the ones that touch cgroups, systemd and the node.
# A guest that is not what it must be (cgroup v1, no systemd, Docker on cgroupfs) fails
# the stage: these tests never pass by skipping.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build}
ENGINES=${*:-20 28}

die() { echo "vm-integration: error: $*" >&2; exit 1; }

[[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] || die "/sys/fs/cgroup is not cgroup v2 (run it in scripts/vm.sh)"
[[ $(cat /proc/1/comm) == systemd ]] || die "PID 1 is $(cat /proc/1/comm), not systemd"
[[ -x $BUILD/tests/integration/integration_tests ]] || die "$BUILD/tests/integration/integration_tests is not built"
echo "vm-integration: kernel $(uname -r), cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

# The guest's engines on the systemd driver (the newer ones get it from docker-engines.sh).
export DOCKERSHIM_ENGINES_CGROUP_DRIVER=systemd
DOCKERSHIM_TEST_ENGINES=$ENGINES scripts/test-env.sh
# Tests that need cgroup v2 fail here instead of skipping.
export DOCKERSHIM_TEST_CGROUP=v2

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
  if ! ctest --test-dir "$BUILD" --output-on-failure -L integration --timeout 900 \
      ${DOCKERSHIM_VM_TESTS:+-R "$DOCKERSHIM_VM_TESTS"} --no-tests=error; then
    failed+=("$engine")
  fi
  echo "vm-integration: Docker $engine took $((SECONDS - start)) s"
done
if ((${#failed[@]})); then
  echo "vm-integration: FAILED on Docker ${failed[*]}" >&2
  exit 1
fi
echo "vm-integration: all passed on Docker $ENGINES"
