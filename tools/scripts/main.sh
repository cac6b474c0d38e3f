#!/usr/bin/env bash
# titan's main job at this stage of the project:
#   1. install missing packages and build everything;
#   2. verify and print the bundled Llama 3 block written in the titan dialect
#      (models/llama3/llama3_block.mlir, annotated for FSDP 2 x TP 2), and run
#      it in the reference interpreter against PyTorch's TransformerBlock;
#   3. export the Llama 3 debugmodel from PyTorch to TorchScript, import it
#      with titan-compile, run its forward with titan-eval, and compare the
#      logits with PyTorch's;
#   4. compile its training step for FSDP 2 x TP 2 (4 ranks), print the plan
#      report, run the 4 ranks in the interpreter and show that the loss and
#      the updated parameters equal the single-device step's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TITAN_BUILD_DIR:-$root/build}
export TITAN_BUILD_DIR=$build
bin=$build/bin
python=/usr/bin/python3
work=${TITAN_WORK_DIR:-$(mktemp -d /tmp/titan-main.XXXXXX)}
mkdir -p "$work"

echo "== build =="
"$root/tools/scripts/build.sh"

echo
echo "== titan-opt models/llama3/llama3_block.mlir (verified) =="
"$bin/titan-opt" "$root/models/llama3/llama3_block.mlir"

echo
echo "== the block in the reference interpreter vs PyTorch's TransformerBlock =="
"$python" "$root/models/llama3/block_oracle.py" "$work/block"
"$bin/titan-eval" "$root/models/llama3/llama3_block.mlir" --entry=llama3_block \
  --inputs="$work/block" --outputs="$work/block/out"
"$python" "$root/test/Import/Inputs/compare_npy.py" \
  "$work/block/out/h_out.npy" "$work/block/expected/h_out.npy"

echo
echo "== Llama 3 debugmodel: PyTorch -> TorchScript -> titan -> interpreter =="
"$python" "$root/models/export.py" --model llama3 --flavor debugmodel \
  --out "$work/debugmodel"
shape=$("$python" -c "import numpy, sys; print('x'.join(map(str, numpy.load(sys.argv[1]).shape)))" \
  "$work/debugmodel/tokens.npy")
"$bin/titan-compile" "$work/debugmodel/model.pt" --input-shape "tokens=${shape}xi64" \
  --summary --export-weights "$work/debugmodel/inputs" -o "$work/debugmodel/forward.mlir"
cp "$work/debugmodel/tokens.npy" "$work/debugmodel/inputs/"
"$bin/titan-eval" "$work/debugmodel/forward.mlir" --entry=forward \
  --inputs="$work/debugmodel/inputs" --outputs="$work/debugmodel/outputs"
echo -n "logits vs PyTorch 1.13: "
"$python" "$root/test/Import/Inputs/compare_npy.py" \
  "$work/debugmodel/outputs/logits.npy" "$work/debugmodel/logits.npy"

echo
echo "== Llama 3 debugmodel training step, FSDP 2 x TP 2 on 4 simulated ranks =="
config=$root/models/llama3/train_configs/debugmodel.toml
common=(--config "$config" --set training.seq_len=128 --set optimizer.eps=1e-6)
"$bin/titan-compile" "$work/debugmodel/model.pt" "${common[@]}" \
  --set training.local_batch_size=2 --set parallelism.tensor_parallel_degree=2 \
  --emit=spmd --world-size 4 --plan-report - \
  --export-weights "$work/fsdp2xtp2/state" -o "$work/fsdp2xtp2/spmd.mlir"
"$bin/titan-compile" "$work/debugmodel/model.pt" "${common[@]}" \
  --set training.local_batch_size=4 --emit=train-step -o "$work/fsdp2xtp2/single.mlir"
"$python" "$root/test/Spmd/Inputs/make_batch.py" "$work/fsdp2xtp2/state" 4 128 2048
"$bin/titan-eval" "$work/fsdp2xtp2/single.mlir" --entry=train_step \
  --inputs="$work/fsdp2xtp2/state" --outputs="$work/fsdp2xtp2/one-device"
"$bin/titan-eval" "$work/fsdp2xtp2/spmd.mlir" --entry=train_step --ranks=4 \
  --inputs="$work/fsdp2xtp2/state" --outputs="$work/fsdp2xtp2/four-ranks"
echo
echo "4 ranks vs one device, after one step (loss, parameters, AdamW moments):"
"$python" "$root/test/Spmd/Inputs/compare_outputs.py" \
  "$work/fsdp2xtp2/four-ranks" "$work/fsdp2xtp2/one-device"
echo
echo "files: $work"
