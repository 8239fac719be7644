#!/bin/bash
# Builds (RelWithDebInfo) and runs the benchmarks, tests/bench/*_bench.cc: each prints
# Google Benchmark's table, then latency percentiles and shim/raw ratios with their
# targets. Figures, not pass/fail: the exit status is non-zero only when a benchmark
# cannot run (no dockerd, no test images, a crash).
#
#   sudo scripts/bench.sh [benchmark flags...]      e.g. --benchmark_min_time=0.05
#
# Environment:
#   BUILD=build        build directory (the one scripts/test.sh uses, same flags)
#   BENCHES="transport_bench images_bench sandbox_bench streaming_bench stats_bench logs_bench"   which, in order
#   RUNS=1             run each benchmark this many times (compare medians by eye)
#   SKIP_ENV=1         do not run scripts/test-env.sh (dockerd + test images ready)
#   SKIP_BUILD=1       use the binaries already in $BUILD
#   DSBENCH_CYCLES=5   pod create/remove cycles in sandbox_bench
#   streaming_bench:   DSBENCH_FORWARD_MIB=1024 (per port-forward run), DSBENCH_EXEC_MIB=256
#                      (per exec stdout run), DSBENCH_ROUNDS=40 (exec round trips),
#                      DSBENCH_IDLE_SESSIONS=200 (of each kind, for memory per session)
#   logs_bench:        DSBENCH_LOG_MIB=256 (per throughput run), DSBENCH_LATENCY_LINES=500 (10 ms apart)
#
# scripts/test.sh (BENCH=1) runs the same binaries briefly, from its own build.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ $EUID -eq 0 ]] || { echo "bench.sh: run as root (sudo $0): sandbox_bench creates network namespaces and pods" >&2; exit 1; }
BUILD=${BUILD:-build}
BENCHES=${BENCHES:-"transport_bench images_bench sandbox_bench streaming_bench stats_bench logs_bench"}
RUNS=${RUNS:-1}

step() { echo; echo "==> $*"; }

# sandbox_bench, streaming_bench, stats_bench and logs_bench remove their containers and temp dirs themselves,
# also after a failure; this catches a run killed by a signal (sandbox_bench's network
# namespace dies with it). One of each at a time: runs share the k8s_POD_bench-* names.
cleanup() {
  rm -rf "${TMPDIR:-/tmp}"/dsbench.?????? "${TMPDIR:-/tmp}"/dsbench-transport.??????
  command -v docker >/dev/null || return 0
  local ids=()
  mapfile -t ids < <(docker ps -aq --filter 'name=^/k8s_POD_bench-' --filter 'name=^/k8s_sctr_bench-stream_' 2>/dev/null || true; docker ps -aq --filter 'name=_dsbench-stats_' 2>/dev/null || true; docker ps -aq --filter 'name=^/dsbench-logs-' 2>/dev/null || true)
  ((${#ids[@]} == 0)) || docker rm -f "${ids[@]}" >/dev/null 2>&1 || true
}
trap cleanup EXIT

if [[ ${SKIP_ENV:-0} != 1 ]]; then
  step "test environment (scripts/test-env.sh)"
  scripts/test-env.sh
fi
# shellcheck source=/dev/null
[[ -f /var/tmp/dockershim-test/env.sh ]] && source /var/tmp/dockershim-test/env.sh

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  step "build ($BUILD, RelWithDebInfo)"
  # Same configuration as scripts/test.sh, so the two share one build directory.
  if [[ -f $BUILD/CMakeCache.txt ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD/CMakeCache.txt"; then
    rm -rf "$BUILD"
  fi
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDOCKERSHIM_WERROR=ON >/dev/null
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j2 --target $BENCHES
fi

failed=()
for b in $BENCHES; do
  bin=$BUILD/tests/bench/$b
  [[ -x $bin ]] || { echo "bench.sh: $bin is missing" >&2; failed+=("$b"); continue; }
  for ((run = 1; run <= RUNS; run++)); do
    step "$b (run $run/$RUNS) $*"
    "$bin" "$@" || failed+=("$b#$run")
  done
done

echo
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); docker $(docker version -f '{{.Server.Version}}' 2>/dev/null || echo '?')"
if ((${#failed[@]})); then
  echo "bench.sh: could not run: ${failed[*]}" >&2
  exit 1
fi
