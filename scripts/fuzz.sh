#!/bin/bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cc) with clang, ASan and UBSan, and
# runs each for a bounded time, from its seeds in tests/fuzz/corpus/<target>/ when it has
# some (a few real documents, so that JSON decoders get past the first brace). Fails on
# any crash, leak, or sanitizer report; the crashing input is left in
# $BUILD/crash-<target>-*.
#
#   scripts/fuzz.sh                 FUZZ_SECONDS=15 each, FUZZ_JOBS=$(nproc) at a time
#                                   (CI: 13 targets on 2 CPUs, about 105 s)
#   FUZZ_SECONDS=300 scripts/fuzz.sh   a longer run by hand
#   BUILD_ONLY=1 scripts/fuzz.sh       builds the targets, runs nothing
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-15}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDOCKERSHIM_FUZZ=ON \
  "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j2 --target fuzzers
[[ ${BUILD_ONLY:-0} == 1 ]] && exit 0

# One target per CPU at a time (FUZZ_JOBS): each is one process on one core.
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
fuzz_one() {  # target; its output in $BUILD/<target>.log, its exit status in $BUILD/<target>.status
  local target=$1 name corpus status=0
  name=$(basename "$target")
  corpus=$(mktemp -d "/tmp/$name.XXXXXX")
  if [[ -d tests/fuzz/corpus/$name ]]; then cp tests/fuzz/corpus/"$name"/* "$corpus"/; fi
  "$target" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 -artifact_prefix="$BUILD/crash-$name-" \
    "$corpus" 2>"$BUILD/$name.log" || status=$?
  rm -rf "$corpus"
  echo "$status" >"$BUILD/$name.status"
}
names=()
for target in "$BUILD"/tests/fuzz/*_fuzz; do
  while (($(jobs -rp | wc -l) >= FUZZ_JOBS)); do wait -n || true; done
  name=$(basename "$target")
  rm -f "$BUILD/$name.status"
  fuzz_one "$target" &
  names+=("$name")
done
wait
failed=()
for name in "${names[@]}"; do
  echo "--- $name (${FUZZ_SECONDS}s)"
  if [[ $(cat "$BUILD/$name.status" 2>/dev/null) != 0 ]]; then
    tail -n 40 "$BUILD/$name.log" >&2
    failed+=("$name")
  else
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|cov:' "$BUILD/$name.log" | tail -n 3
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: every target ran ${FUZZ_SECONDS}s without a finding"
