#!/usr/bin/env bash
# Benchmark: what LLVM's O2 and O3 pipelines cost on titan's compiled
# kernels. Two models, each compiled for one rank to its memory plan and
# lowered to LLVM IR (titan-lower-to-runtime, mlir-translate); then the
# stock opt -O2 / -O3 and llc (x86-64-v3, as titan-compile) on that IR:
# seconds of each and the kernels' code size.
#   1. the U-Net-style convolution LM of test/TrainStep/conv2d.test (its
#      fused backward kernels hold dozens of small static loops);
#   2. the Llama 3 debugmodel at seq 2048.
#   usage: tools/bench/kernel-opt-level.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
bin=$build/bin
llvm=/usr/lib/llvm-22/bin
work=$(mktemp -d /tmp/titan-bench-opt.XXXXXX)
/usr/bin/python3 "$root/test/TrainStep/Inputs/make_conv2d_lm.py" "$work/conv" \
  > /dev/null
/usr/bin/python3 "$root/models/export.py" --model llama3 --flavor debugmodel \
  --out "$work/llama" > /dev/null

# compare NAME MODEL CONFIG SETTINGS...
compare() {
  local name=$1 model=$2 config=$3
  shift 3
  "$bin/titan-compile" "$model" --config "$config" "$@" \
    --set parallelism.data_parallel_shard_degree=1 --emit=memory-plan \
    -o "$work/$name.mlir"
  "$bin/titan-opt" --titan-lower-to-runtime "$work/$name.mlir" |
    "$llvm/mlir-translate" --mlir-to-llvmir -o "$work/$name.ll"
  for level in O2 O3; do
    /usr/bin/time -f %e -o "$work/opt.time" "$llvm/opt" "-$level" \
      -mtriple=x86_64-pc-linux-gnu -mcpu=x86-64-v3 "$work/$name.ll" \
      -o "$work/$name.$level.bc"
    /usr/bin/time -f %e -o "$work/llc.time" "$llvm/llc" -O3 -mcpu=x86-64-v3 \
      -filetype=obj "$work/$name.$level.bc" -o "$work/$name.$level.o"
    printf '%-10s %s: opt %6.2f s  llc %6.2f s  code %8d bytes\n' "$name" \
      "$level" "$(cat "$work/opt.time")" "$(cat "$work/llc.time")" \
      "$(size -A "$work/$name.$level.o" | awk '$1 == ".text" {print $2}')"
  done
}
compare conv2d "$work/conv/model.pt" "$root/models/gpt2/train_configs/tiny.toml" \
  --set training.local_batch_size=4 --set training.seq_len=32
compare llama3 "$work/llama/model.pt" \
  "$root/models/llama3/train_configs/debugmodel.toml" \
  --set training.local_batch_size=1 --set training.seq_len=2048
rm -rf "$work"
