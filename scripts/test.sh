#!/bin/bash
# THE test command: installs dependencies, prepares Docker + registries + test images,
# builds with CMake/Ninja in ./build (warnings are errors), then runs the unit tests, the
# integration tests (real dockerd, registries on 127.0.0.1, CNI plugins) with ctest once
# per Docker Engine: 20.10 (API 1.41), 28.5 (API 1.51) on its overlay2 graph driver and
# 28.5 with the containerd image store (28c, Docker 29's default store). 26.1 (API 1.45)
# is no longer run by default: every API-gated feature (shim/engine_features.h: runc
# annotations 1.43, rro 1.44, image mounts 1.48, CDI) is off on 20.10 and on on 28.5, and
# 26.1 exercises no value of one that those two do not. DOCKERSHIM_TEST_ENGINES picks
# others: "20" tests only 20.10, "20 26 28 28c" adds 26.1, and 29 is a hand-built Docker
# 29 where DOCKERSHIM_ENGINE_29_DIR points (docs/docker-29.md). Then the cgroup and
# systemd tests again on a cgroup v2 node with systemd in a QEMU VM against Docker 20.10
# and 28.5 with the containerd store (scripts/vm.sh; DOCKERSHIM_VM_ENGINES="" leaves the VM out),
# the unit tests again under ASan and UBSan (scripts/sanitize.sh), and a bounded
# libFuzzer run of every parser (scripts/fuzz.sh).
# Exits non-zero on any failure; ends with the time each step took. BENCH=1 also builds
# and briefly runs the benchmarks (without it they are not built).
# Run as root on Debian 12: sudo ./scripts/test.sh
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ $EUID -eq 0 ]] || { echo "test.sh: run as root (sudo $0)" >&2; exit 1; }
BUILD=build
# What runs in the VM (a ctest -R regex): the tests that touch cgroups, systemd and the
# node's daemons. The whole integration suite runs there as well (DOCKERSHIM_VM_TESTS=""),
# but emulated without KVM it takes 7-20x the host's time; the rest of it does not depend
# on the cgroup version and runs on the host against three engines.
VM_TESTS='^(StatsIntegration|ResourcesIntegration|RuntimeCgroups[A-Za-z]*|SystemdTest)\.'

# Each step's wall time, printed at the end (CI must stay under 60 minutes on 2 cores).
times=()
step_name="" step_start=$SECONDS
step() {
  [[ -n $step_name ]] && times+=("$(printf '%5d s  %s' $((SECONDS - step_start)) "$step_name")")
  step_name=$1 step_start=$SECONDS
  echo; echo "==> $*"
}

step "dependencies (scripts/install-deps.sh)"
scripts/install-deps.sh

# The engines the integration suite runs on (scripts/test-env.sh prepares them).
export DOCKERSHIM_TEST_ENGINES=${DOCKERSHIM_TEST_ENGINES:-20 28 28c}

# The cgroup v2 node's image (scripts/vm.sh) builds beside the rest: mostly downloads.
VM_ENGINES=${DOCKERSHIM_VM_ENGINES-20 28c}
if [[ -n $VM_ENGINES ]]; then
  mkdir -p /var/tmp/dockershim-test
  scripts/vm.sh build >/var/tmp/dockershim-test/vm-build.log 2>&1 &
  vm_build=$!
fi

step "test environment (scripts/test-env.sh)"
scripts/test-env.sh
# shellcheck source=/dev/null
source /var/tmp/dockershim-test/env.sh

step "build ($BUILD)"
# A build dir configured with another generator cannot be reused with Ninja.
if [[ -f $BUILD/CMakeCache.txt ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD/CMakeCache.txt"; then
  rm -rf "$BUILD"
fi
# Line tables only (-g1): enough for file:line in backtraces, and 10% less compile time.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDOCKERSHIM_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG' -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O2 -g1 -DNDEBUG'
# What the tests run. The benchmarks (about 4 minutes of 2 CPUs) build only with BENCH=1:
# built beside the tests, they slowed the integration and VM stages as much as they took.
cmake --build "$BUILD" -j2 --target dockershim unit_tests streaming_unit_tests integration_tests

failed=()
# Each test step's output is also kept in $logs/<step>.log, so that the end of the run can
# repeat what a failed step said: CI shows only the end of a run's output.
logs=/var/tmp/dockershim-test/steps
rm -rf "$logs" && mkdir -p "$logs"
run() {  # step name, command...
  local name=$1
  shift
  if ! "$@" 2>&1 | tee "$logs/$name.log"; then failed+=("$name"); fi
}

# The sanitizer and fuzzer builds take the CPU that the integration tests leave idle (they
# mostly wait on Docker), at the lowest priority, so that they do not slow the tests down.
(BUILD_ONLY=1 nice -n 19 scripts/sanitize.sh && BUILD_ONLY=1 nice -n 19 scripts/fuzz.sh) >"$logs/prebuild.log" 2>&1 &
prebuild=$!

step "unit tests"
run unit ctest --test-dir "$BUILD" --output-on-failure -L unit -j2 --timeout 300
for engine in $DOCKERSHIM_TEST_ENGINES; do
  DOCKERSHIM_TEST_ENGINE=$engine
  # shellcheck source=/dev/null
  source /var/tmp/dockershim-test/env.sh
  step "integration tests on Docker $(DOCKER_HOST=$DOCKERSHIM_TEST_DOCKER docker version -f '{{.Server.Version}} (API {{.Server.APIVersion}})') at $DOCKERSHIM_TEST_DOCKER"
  # On 26.1, between the two API versions that bracket it, the tests of the shim's own
  # restart recovery, load, relists, log files, process life, metrics and systemd
  # units are left out: they use no engine feature that differs, and take about 40% of
  # the suite's time (CI's 60 minutes).
  exclude=""
  [[ $engine == 26 ]] && exclude='^(RecoveryTest|LoadTest|RelistIntegration|LogFileIntegration|SystemdTest|ObservabilityIntegration)\.|^DaemonTest\.(KillNine|ServesCri|Credentials|Rotation)|^HardeningTest\.(AnOversized|NoCredential)'
  run "integration-docker-$engine" ctest --test-dir "$BUILD" --output-on-failure -L integration --timeout 600 \
    ${exclude:+-E "$exclude"}
done
if [[ -n $VM_ENGINES ]]; then
  step "integration tests on a cgroup v2 node with systemd (scripts/vm.sh), Docker $VM_ENGINES"
  if ! wait "$vm_build"; then
    cat /var/tmp/dockershim-test/vm-build.log
    failed+=(vm-cgroupv2)
  else
    export DOCKERSHIM_VM_TESTS=${DOCKERSHIM_VM_TESTS-$VM_TESTS}
    run vm-cgroupv2 scripts/vm-integration.sh $VM_ENGINES
  fi
fi
step "unit tests under ASan and UBSan (scripts/sanitize.sh)"
# A failed prebuild is built again here, where its errors are reported.
wait "$prebuild" || true
run sanitize scripts/sanitize.sh
step "fuzzing (scripts/fuzz.sh, bounded)"
run fuzz scripts/fuzz.sh

if [[ ${BENCH:-0} == 1 ]]; then
  step "benchmarks (brief)"
  cmake --build "$BUILD" -j2
  shopt -s nullglob
  for b in "$BUILD"/tests/bench/*_bench; do
    [[ -x $b ]] || continue
    echo "--- $b"
    run "$(basename "$b")" "$b" --benchmark_min_time=0.05
  done
fi

step "summary"
for name in "${failed[@]}"; do
  echo
  echo "==> what the failed step $name reported (all of it: $logs/$name.log)"
  excerpt=$(grep -E -B3 -A30 '\[  FAILED  \]|Failed|ERROR|runtime error|Timeout|Segmentation|Abort' "$logs/$name.log" |
    tail -n 120 || true)
  echo "${excerpt:-$(tail -n 40 "$logs/$name.log")}"
done

# Last, where CI's excerpt of the output shows it.
echo
echo "time per step (${SECONDS} s in all):"
printf '%s\n' "${times[@]}"
echo
if ((${#failed[@]})); then
  echo "test.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "test.sh: all tests passed"
