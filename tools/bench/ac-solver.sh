#!/usr/bin/env bash
# Benchmark: the time titan-select-recompute's integer programs take on
# torchtitan's Llama 3 70B and 405B configurations (models/llama3/
# train_configs: FSDP 8 x TP 8 = 64 ranks and FSDP 64 x TP 8 = 512 ranks,
# seq 8192) for H100 SXM nodes of 8, under torchtitan's memory_budget mode
# at 0.5 (one solve: per block class its Pareto front, then the counts
# under the budget). Prints the choice the pass writes on @train_step
# (titan.recompute_plan) and the pass's own time. Shape-only exports.
#   usage: tools/bench/ac-solver.sh [BUILD_DIR] [FLAVORS...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
shift || true
flavors=("${@:-70B 405B}")
. "$root/tools/bench/llama3-configs.sh"
llama3_work titan-bench-ac-solver
for flavor in ${flavors[@]}; do
  llama3_model "$flavor"
  echo "== Llama 3 $flavor, $config, $ranks ranks, h100-sxm, memory_budget 0.5"
  "$build/bin/titan-compile" "$work/$flavor/model.pt" \
    --config "$root/models/llama3/train_configs/$config" \
    --world-size "$ranks" --set hardware.device=h100-sxm \
    --set activation_checkpoint.mode=memory_budget \
    --set activation_checkpoint.memory_budget=0.5 \
    --emit=spmd -o "$work/$flavor/spmd.mlir" --mlir-timing 2> "$work/$flavor/timing.txt"
  grep -E "SelectRecomputePass|Total Execution" "$work/$flavor/timing.txt" | sed 's/^ */  /'
  grep -o 'titan.recompute_plan = {[^}]*}' "$work/$flavor/spmd.mlir" | sed 's/^/  /'
  rm -rf "$work/$flavor"
done
