#!/bin/bash
# The Debian package on a systemd node: runs INSIDE the VM of scripts/vm.sh, as
# scripts/package-test.sh --vm does:
#   scripts/vm.sh run --mount D:D -- scripts/vm-package-test.sh D/dockershim_<version>_<arch>.deb [BUILD]
# Installs the .deb with dpkg -i on the running systemd (the package enables and starts
# its units), checks them, then runs SystemdNodeTest (tests/integration/systemd_node_test.cc)
# from the host's build (./build, or BUILD) against the installed service: socket
# activation, Type=notify readiness, the watchdog, --runtime-cgroups on cgroup v2 and the
# systemd cgroup driver in RuntimeConfig. The guest's own Docker 20.10 (systemd driver);
# no test registries are needed. Exits non-zero when anything fails.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" DEBIAN_FRONTEND=noninteractive
cd "$(dirname "${BASH_SOURCE[0]}")/.."
deb=${1:?usage: scripts/vm-package-test.sh PACKAGE.deb [BUILD]}
BUILD=${2:-build}
tests=$BUILD/tests/integration/integration_tests

die() { echo "vm-package-test: error: $*" >&2; exit 1; }
[[ -f $deb ]] || die "$deb: no such package (in the guest: share its directory with vm.sh run --mount)"
[[ -x $tests ]] || die "$tests is not built"
[[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] || die "/sys/fs/cgroup is not cgroup v2 (run it in scripts/vm.sh)"
[[ $(cat /proc/1/comm) == systemd ]] || die "PID 1 is $(cat /proc/1/comm), not systemd"
systemctl is-active --quiet docker.service || die "docker.service is not running"
driver=$(docker info -f '{{.ServerVersion}} {{.CgroupDriver}} {{.CgroupVersion}}')
[[ $driver == *" systemd 2" ]] || die "Docker $driver: want the systemd driver on cgroup v2"

start=$SECONDS
results=()
failed=0
check() { # description command...
  local what=$1
  shift
  if "$@"; then
    results+=("ok      $what")
  else
    results+=("FAILED  $what")
    failed=1
  fi
}
is() { [[ $(systemctl "$1" "$2") == "$3" ]]; }  # is-enabled|is-active unit expected

echo "==> dpkg -i $(basename "$deb") (Docker $driver)"
check "dpkg -i" dpkg -i "$deb"
check "dockershim --version" /usr/bin/dockershim --version
check "dockershim.socket enabled" is is-enabled dockershim.socket enabled
check "dockershim.service enabled" is is-enabled dockershim.service enabled
check "dockershim.socket active (listening on /run/dockershim.sock)" is is-active dockershim.socket active
check "/run/dockershim.sock is a socket" test -S /run/dockershim.sock
systemctl --no-pager status dockershim.socket dockershim.service || true

echo
echo "==> SystemdNodeTest against the installed service"
out=$(mktemp)
count=$("$tests" --gtest_filter='SystemdNodeTest.*' --gtest_list_tests | grep -c '^  ')
rc=0
DOCKERSHIM_TEST_SYSTEMD_NODE=1 DOCKERSHIM_TEST_CGROUP=v2 \
  "$tests" --gtest_filter='SystemdNodeTest.*' 2>&1 | tee "$out" || rc=${PIPESTATUS[0]}
check "SystemdNodeTest: $count tests passed, none skipped" \
  bash -c "(($rc == 0)) && grep -q '^\[  PASSED  \] $count test' '$out' && ! grep -q '^\[  SKIPPED \]' '$out'"
grep '^\[ figures  \]' "$out" | sed 's/^/    /' >"$out.figures" || true

echo
echo "==> the end of dockershim's journal"
journalctl -u dockershim.service -u dockershim.socket --no-pager -o short-monotonic | tail -n 25

echo
echo "vm-package-test: summary ($((SECONDS - start)) s in the guest)"
printf '  %s\n' "${results[@]}"
cat "$out.figures"
rm -f "$out" "$out.figures"
if ((failed)); then
  echo "vm-package-test: FAILED" >&2
  exit 1
fi
echo "vm-package-test: the package works on this systemd node"
