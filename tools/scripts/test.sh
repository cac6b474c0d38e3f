#!/usr/bin/env bash
# Builds titan and runs its whole test suite: lit regression tests (passes,
# dialect, tools, end-to-end) and GoogleTest unit tests. Prints lit's and
# CTest's summaries and one closing line "titan: N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TITAN_BUILD_DIR:-$root/build}
export TITAN_BUILD_DIR=$build

"$root/tools/scripts/build.sh" || { echo "titan: build failed"; exit 1; }

results=$build/test-results
mkdir -p "$results"
rm -f "$results"/*.xml

echo "== lit =="
/usr/lib/llvm-22/bin/lit -s -j"$(nproc)" --xunit-xml-output "$results/lit.xml" \
  "$build/test"
lit_status=$?

echo "== unit tests (gtest via CTest) =="
ctest --test-dir "$build" -j"$(nproc)" --output-on-failure \
  --output-junit "$results/ctest.xml"
ctest_status=$?

/usr/bin/python3 "$root/tools/scripts/summarize_tests.py" "$results"/*.xml
if ((lit_status != 0 || ctest_status != 0)); then
  exit 1
fi
