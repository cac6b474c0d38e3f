#!/usr/bin/env bash
# Builds titan with AddressSanitizer + UndefinedBehaviorSanitizer (gcc, -O1)
# into its own build folder and runs the whole test suite there
# (tools/scripts/test.sh). Exits non-zero if the build fails, a test fails, or
# a sanitizer reports an error in any tool, unit test or rank executable.
#   TITAN_ASAN_BUILD_DIR  build directory (default: <repo>/build-asan)
#   TITAN_JOBS            parallel build jobs (default: number of cores)
# Third-party false positives are suppressed in
# tools/scripts/sanitizer-suppressions/ (each entry says why).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TITAN_ASAN_BUILD_DIR:-$root/build-asan}
suppressions=$root/tools/scripts/sanitizer-suppressions

"$root/tools/scripts/install-deps.sh"
# -fno-sanitize=vptr: LLVM and MLIR are built without RTTI, so the vptr check
# cannot tell their dynamic types. -DNDEBUG as in Release: Debian's LLVM is
# built without assertions and defines its debug-only symbols only then.
sanitize="-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize" \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
    -DCMAKE_EXE_LINKER_FLAGS="$sanitize" \
    -DCMAKE_SHARED_LINKER_FLAGS="$sanitize" >/dev/null
fi

# Rank executables link the instrumented libtitanrt.so, so they are linked
# with the sanitizer runtimes too (titan-compile runs $TITAN_LINKER).
linker=$build/bin/titan-asan-c++
mkdir -p "$build/bin"
printf '#!/bin/sh\nexec c++ %s "$@"\n' "$sanitize" >"$linker"
chmod +x "$linker"
export TITAN_LINKER=$linker

# allow_user_poisoning=0: LLVM's headers poison and unpoison the slabs of
# their bump allocators in instrumented code, which the uninstrumented
# libLLVM and libMLIR then allocate from and write (false use-after-poison
# reports). verify_asan_link_order=0: tests that LD_PRELOAD a fault-injection
# library load it before the sanitizer runtime.
export ASAN_OPTIONS="detect_leaks=1:allow_user_poisoning=0:verify_asan_link_order=0:halt_on_error=1:suppressions=$suppressions/asan.supp"
export LSAN_OPTIONS="suppressions=$suppressions/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$suppressions/ubsan.supp"
# Each tool and script in a process of its own (no fork servers,
# test/Inputs/forked_process.py): the sanitizers see every process from
# its start to its exit.
export TITAN_TEST_FORK=0
TITAN_BUILD_DIR=$build exec "$root/tools/scripts/test.sh"
