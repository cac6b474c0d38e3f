#!/usr/bin/env bash
# Benchmark: titan-tune ac on torchtitan's Llama 3 8B, 70B and 405B
# configurations (models/llama3/train_configs: their parallel degrees, local
# batch and seq 8192) for H100 SXM nodes of 8: every activation-
# checkpointing policy's memory per rank (the exact memory plan), predicted
# step time and MFU (docs/cost-model.md), and the time titan-tune takes.
# Shape-only exports (models/export.py: no weights).
#   8B:   FSDP 8             =   8 ranks, local batch 1
#   70B:  FSDP 8 x TP 8      =  64 ranks, local batch 8
#   405B: FSDP 64 x TP 8     = 512 ranks, local batch 2
# The configs train in bf16 as torchtitan's do (mixed_precision_param =
# "bfloat16": float32 masters and optimizer state, bf16 gathered parameters
# and activations); MFU is of the bf16 peak.
#   usage: tools/bench/ac-llama3.sh [BUILD_DIR] [FLAVORS...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
shift || true
flavors=("${@:-8B 70B 405B}")
. "$root/tools/bench/llama3-configs.sh"
llama3_work titan-bench-ac
for flavor in ${flavors[@]}; do
  llama3_model "$flavor"
  echo "== Llama 3 $flavor, $config, $ranks ranks, h100-sxm"
  start=$(date +%s.%N)
  "$build/bin/titan-tune" ac "$work/$flavor/model.pt" \
    --config "$root/models/llama3/train_configs/$config" \
    --world-size "$ranks" --set hardware.device=h100-sxm \
    --work "$work/$flavor/tune" 2> "$work/$flavor/tune.log" || true
  end=$(date +%s.%N)
  echo "titan-tune: $(echo "$end - $start" | bc) s"
  rm -rf "$work/$flavor"
done
