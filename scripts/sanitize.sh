#!/bin/bash
# Builds the unit test binaries with ASan and UBSan (-DDOCKERSHIM_SANITIZE=ON, clang,
# -O1, line tables only: the leanest build whose reports still name file and line) in
# $BUILD and runs them. Fails on any test failure or sanitizer report (ASan and UBSan
# abort the process; LeakSanitizer fails it at exit).
#
#   scripts/sanitize.sh                        every unit test
#   scripts/sanitize.sh --gtest_filter='Foo*'  passed on to both binaries
#   BUILD_ONLY=1 scripts/sanitize.sh           builds them, runs nothing
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build-asan}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DDOCKERSHIM_WERROR=ON \
  -DDOCKERSHIM_SANITIZE=ON -DCMAKE_CXX_FLAGS_SANITIZE='-O1 -gline-tables-only' -DCMAKE_C_FLAGS_SANITIZE='-O1' \
  "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j2 --target unit_tests streaming_unit_tests
[[ ${BUILD_ONLY:-0} == 1 ]] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for bin in "$BUILD"/tests/unit/unit_tests "$BUILD"/tests/unit/streaming/streaming_unit_tests; do
  name=$(basename "$bin")
  echo "--- $name (ASan, UBSan)"
  if ! "$bin" --gtest_brief=1 "$@" >"$BUILD/$name.log" 2>&1; then
    grep -E -A40 '^(==[0-9]+==ERROR|.*runtime error:|\[  FAILED  \])' "$BUILD/$name.log" | head -n 120 >&2 ||
      tail -n 60 "$BUILD/$name.log" >&2
    failed+=("$name")
  else
    tail -n 3 "$BUILD/$name.log"
  fi
done
if ((${#failed[@]})); then
  echo "sanitize.sh: FAILED: ${failed[*]} (logs in $BUILD/*.log)" >&2
  exit 1
fi
echo "sanitize.sh: the unit tests passed under ASan and UBSan"
