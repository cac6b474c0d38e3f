#!/usr/bin/env bash
# Benchmark: titan-compile of the Llama 3 405B training step (126 layers,
# shape-only export, seq 8192, local batch 1) for FSDP 64 x TP 8 = 512 ranks,
# from TorchScript to the rank executable: wall time, peak memory, the
# executable's size, and the time of each phase and pass (--mlir-timing).
#   usage: tools/bench/compile-405b.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
work=$(mktemp -d /tmp/titan-bench-405b.XXXXXX)
/usr/bin/python3 "$root/models/export.py" --model llama3 --flavor 405B \
  --out "$work/model" > /dev/null
/usr/bin/time -f "%e %M" -o "$work/time" "$build/bin/titan-compile" \
  "$work/model/model.pt" \
  --config "$root/models/llama3/train_configs/llama3_405b.toml" \
  --set training.local_batch_size=1 \
  --set parallelism.data_parallel_shard_degree=64 \
  --plan-report "$work/report.txt" --mlir-timing --mlir-timing-display=list \
  -o "$work/out" 2> "$work/timing.txt"
read -r seconds kbytes < "$work/time"
# The phases, then the ten slowest passes.
sed -n '/Total Execution Time/,$p' "$work/timing.txt" | head -16
echo
echo "wall ${seconds} s, peak RSS $((kbytes / 1024)) MiB," \
  "bin/train $(($(stat -c %s "$work/out/bin/train") / 1048576)) MiB"
grep -E "arena|persistent|peak" "$work/report.txt" | head -6
rm -rf "$work"
