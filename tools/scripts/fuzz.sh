#!/usr/bin/env bash
# Builds titan's libFuzzer targets (test/fuzz) with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, and runs each (or each TARGET named, e.g.
# npy) for SECONDS (default 60) from a seed corpus made of the test inputs
# (tools/scripts/fuzz_seeds.py). Prints one line per target, "ran clean" or
# "CRASHED" with its reproducer, and exits non-zero if any target crashed
# (docs/fuzzing.md).
#   TITAN_FUZZ_BUILD_DIR  build directory (default: <repo>/build-fuzz)
#   TITAN_JOBS            parallel build jobs (default: number of cores)
# Usage: tools/scripts/fuzz.sh [SECONDS [TARGET...]]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TITAN_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-60}
targets=(pickle torch-save dcp-metadata npy train-config mlir)
if (($# > 1)); then
  targets=("${@:2}")
fi

"$root/tools/scripts/install-deps.sh"
# -fno-sanitize=vptr: LLVM and MLIR are built without RTTI.
sanitize="-fsanitize=address,undefined -fno-sanitize=vptr"
sanitize+=" -fno-sanitize-recover=all -fno-omit-frame-pointer"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DTITAN_ENABLE_FUZZERS=ON -DTITAN_ENABLE_CUDA=OFF \
    -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize" \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG" \
    -DCMAKE_EXE_LINKER_FLAGS="$sanitize" >/dev/null
fi
ninja -C "$build" -j"${TITAN_JOBS:-$(nproc)}" --quiet titan-fuzzers

seeds=$build/fuzz-seeds
if [[ ! -d "$seeds/mlir" ]]; then
  /usr/bin/python3 "$root/tools/scripts/fuzz_seeds.py" "$root" "$seeds"
fi

# allow_user_poisoning=0: LLVM's headers poison and unpoison the slabs of
# their bump allocators in instrumented code, which the uninstrumented
# libMLIR then allocates from and writes (false use-after-poison reports).
export ASAN_OPTIONS=allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1
crashed=0
summary=()
for target in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$target
  artifacts=$build/fuzz-artifacts/$target
  log=$build/fuzz-logs/$target.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  echo "== titan-fuzz-$target: $seconds s =="
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb also bounds
  # any single allocation, so allocating from unchecked sizes is a crash.
  if "$build/fuzz/titan-fuzz-$target" -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$corpus" "$seeds/$target" \
      >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    summary+=("titan-fuzz-$target: ran clean for $seconds s" \
      "($runs executions, corpus $(ls "$corpus" | wc -l) inputs)")
  else
    crashed=1
    reproducer=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
    summary+=("titan-fuzz-$target: CRASHED, reproducer ${reproducer:-none}" \
      "(log $log)")
  fi
  echo "${summary[-2]} ${summary[-1]}"
done

echo "== summary =="
for ((i = 0; i < ${#summary[@]}; i += 2)); do
  echo "${summary[i]} ${summary[i + 1]}"
done
exit "$crashed"
