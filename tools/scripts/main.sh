#!/usr/bin/env bash
# titan's main job:
#   1. install missing packages and build everything;
#   2. export the Llama 3 debugmodel from PyTorch to TorchScript, import it
#      with titan-compile and check its logits against PyTorch's;
#   3. compile its training step for FSDP 2 x TP 2 into a rank executable
#      and print the plan report (mesh, placements, collectives, memory);
#   4. train it on 4 CPU rank processes (titan-run, Gloo over loopback) as
#      a torchtitan job: the data loader packs the bundled corpus
#      (models/data/corpus.txt) into windows, the job stops after 10 of its
#      20 steps with a checkpoint and a second run resumes it; the falling
#      loss with tokens/s and MFU, and the memory each rank allocated next
#      to the plan's;
#   5. load the checkpoint the 4 ranks saved at step 20 into the PyTorch
#      model with PyTorch 1.13 and evaluate it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TITAN_BUILD_DIR:-$root/build}
export TITAN_BUILD_DIR=$build
bin=$build/bin
python=/usr/bin/python3
work=${TITAN_WORK_DIR:-$(mktemp -d /tmp/titan-main.XXXXXX)}
mkdir -p "$work"
rm -rf "$work/job"
config=$root/models/llama3/train_configs/debugmodel.toml

echo "== build =="
"$root/tools/scripts/build.sh"

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
echo "== compile the training step for FSDP 2 x TP 2 (4 ranks) =="
"$bin/titan-compile" "$work/debugmodel/model.pt" --config "$config" \
  --set training.seq_len=128 --set training.local_batch_size=4 \
  --set training.steps=20 --set training.dataset_path="$root/models/data/corpus.txt" \
  --set checkpoint.enable=true --set checkpoint.interval=10 \
  --set job.dump_folder="$work/job" \
  --set parallelism.data_parallel_shard_degree=2 \
  --set parallelism.tensor_parallel_degree=2 \
  --plan-report "$work/plan-report.txt" -o "$work/fsdp2xtp2"
cat "$work/plan-report.txt"
echo
ls -l "$work/fsdp2xtp2" "$work/fsdp2xtp2/bin"

echo
echo "== train on 4 CPU ranks (titan-run): 10 steps, then resume to 20 =="
"$bin/titan-run" "$work/fsdp2xtp2" --nproc-per-node 4 -- --steps 10 \
  --checkpoint-format torch1.13
echo "-- the job again: it resumes from its newest checkpoint --"
"$bin/titan-run" "$work/fsdp2xtp2" --nproc-per-node 4 -- \
  --checkpoint-format torch1.13
echo "metrics: $work/job/metrics.jsonl, $work/job/metrics.svg"

echo
echo "== PyTorch reads the checkpoint the ranks saved =="
"$python" "$root/tools/scripts/corpus_batches.py" "$root/models/data/corpus.txt" \
  "$work/data" --steps 1 --batch 8 --seq 128
"$python" "$root/tools/scripts/torch_reads_checkpoint.py" \
  "$work/debugmodel/model.pt" "$work/job/checkpoint/step-20" "$work/data"
echo
echo "files: $work"
