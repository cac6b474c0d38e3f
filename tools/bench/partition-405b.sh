#!/usr/bin/env bash
# Benchmark: titan-apply-parallel-plan + titan-propagate-placements +
# titan-spmdize on the Llama 3 405B training step (shape-only export,
# FSDP 8 x TP 8 = 64 ranks, seq 8192, global batch 8 = one sequence per
# data-parallel rank; sequence parallel, and the stationary axes titan-compile's
# pipeline gives propagation), for 32, 63 and 126 layers in one run,
# to show the time is linear in the number of layers. Prints one row per
# layer count: wall seconds and peak RSS of the three passes alone.
#   usage: tools/bench/partition-405b.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
work=$(mktemp -d /tmp/titan-bench.XXXXXX)
config=$root/models/llama3/train_configs/llama3_405b.toml
printf "%-8s %-12s %-12s %s\n" layers "wall (s)" "peak RSS" "ops after spmdize"
for layers in 32 63 126; do
  /usr/bin/python3 "$root/models/export.py" --model llama3 --flavor 405B \
    --n-layers "$layers" --out "$work/l$layers" > /dev/null
  "$build/bin/titan-compile" "$work/l$layers/model.pt" --config "$config" \
    --set training.local_batch_size=8 --emit=train-step -o "$work/l$layers/step.mlir"
  /usr/bin/time -f "%e %M" -o "$work/l$layers/time" "$build/bin/titan-opt" \
    "$work/l$layers/step.mlir" \
    --titan-apply-parallel-plan="world-size=64 tp=8 sequence-parallel=true" \
    --titan-propagate-placements="stationary-param-axes=tp stationary-input-axes=fsdp" \
    --titan-spmdize -o "$work/l$layers/spmd.mlir"
  read -r seconds kbytes < "$work/l$layers/time"
  ops=$(grep -c ' = titan\.' "$work/l$layers/spmd.mlir" || true)
  printf "%-8s %-12s %-12s %s\n" "$layers" "$seconds" "$((kbytes / 1024)) MiB" "$ops"
done
rm -rf "$work"
