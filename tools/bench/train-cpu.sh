#!/usr/bin/env bash
# Benchmark: training speed of titan's CPU executables against PyTorch 1.13
# eager on the same model, batches, optimizer and thread count, in one run.
#
#   1 rank:  Llama 3 debugmodel (dim 256, 6 layers, 16 heads, vocab 2048),
#            seq 2048, batch 1, fp32, 2 threads; titan's achieved GFLOP/s
#            next to OpenBLAS sgemm's rate on the model's GEMM shapes.
#   2 ranks: the same model, global batch 2 (one sequence per rank), 1 thread
#            per rank: titan FSDP 2 and DP 2 against PyTorch's
#            DistributedDataParallel over Gloo (all started by titan-run).
#
# Every figure is the median step time over the steps after the first.
# FLOPs are torchtitan's model FLOPs per token, 6 * (parameters - embedding)
# + 12 * layers * heads * head_dim * seq (attention counted unmasked).
#   usage: tools/bench/train-cpu.sh [BUILD_DIR] [STEPS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
steps=${2:-8}
bin=$build/bin
python=/usr/bin/python3
work=$(mktemp -d /tmp/titan-bench-train.XXXXXX)
config=$root/models/llama3/train_configs/debugmodel.toml
seq=2048

"$python" "$root/models/export.py" --model llama3 --flavor debugmodel \
  --out "$work/model" > /dev/null
"$python" "$root/tools/scripts/corpus_batches.py" "$root/models/data/corpus.txt" \
  "$work/data1" --steps "$steps" --batch 1 --seq "$seq"
"$python" "$root/tools/scripts/corpus_batches.py" "$root/models/data/corpus.txt" \
  "$work/data2" --steps "$steps" --batch 2 --seq "$seq"
flops_per_token=$("$python" - "$root" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1] + "/models")
from export import FAMILIES, flavor_args
args = flavor_args("llama3", "debugmodel", "complex")
model = FAMILIES["llama3"].module(args)
params = sum(p.numel() for p in model.parameters())
embedding = model.tok_embeddings.weight.numel()
print(6 * (params - embedding) + 12 * args.n_layers * args.n_heads * (args.dim // args.n_heads) * 2048)
EOF
)

# The median step seconds of a titan run's metrics file.
median_titan() {
  "$python" -c "
import json, statistics, sys
s = [json.loads(l)['seconds'] for l in open(sys.argv[1])][1:]
print(f'{statistics.median(s):.6f}')" "$1"
}
# The median step seconds a baseline run printed.
median_torch() { sed -n 's/^\(\[rank 0\] \)\{0,1\}median_step_seconds \([^ ]*\).*/\2/p' "$1"; }
row() { # name seconds tokens_per_step_per_rank baseline_seconds
  "$python" -c "
import sys
name, s, tokens, base, fpt = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
ratio = f'{float(base) / s:.2f}x' if base != '-' else ''
print(f'{name:<34} {s * 1e3:9.1f} ms {tokens / s:10.1f} {tokens * fpt / s * 1e-9:10.2f}   {ratio}')
" "$@" "$flops_per_token"
}

compile() { # out-dir --set ...
  local out=$1
  shift
  "$bin/titan-compile" "$work/model/model.pt" --config "$config" \
    --set training.seq_len=$seq --set training.local_batch_size=1 "$@" \
    -o "$work/$out" > /dev/null
}
compile one --set parallelism.data_parallel_shard_degree=1
compile fsdp2 --set parallelism.data_parallel_shard_degree=2
compile dp2 --set parallelism.data_parallel_shard_degree=1 \
  --set parallelism.data_parallel_replicate_degree=2

echo "== 1 rank, 2 threads =="
"$work/one/bin/train" --data "$work/data1" --steps "$steps" --threads 2 \
  --metrics "$work/one.jsonl" \
  --job.dump_folder "$work/one-run" > "$work/one.log"
"$python" "$root/tools/bench/torch_train_baseline.py" llama3 debugmodel \
  "$work/data1" --steps "$steps" --threads 2 > "$work/torch1.log"
echo "== 2 ranks, 1 thread each =="
"$bin/titan-run" "$work/fsdp2" --nproc-per-node 2 -- --data "$work/data2" \
  --steps "$steps" --threads 1 --metrics "$work/fsdp2.jsonl" \
  --job.dump_folder "$work/fsdp2-run" > "$work/fsdp2.log"
"$bin/titan-run" "$work/dp2" --nproc-per-node 2 -- --data "$work/data2" \
  --steps "$steps" --threads 1 --metrics "$work/dp2.jsonl" \
  --job.dump_folder "$work/dp2-run" > "$work/dp2.log"
# torch.distributed.run of Debian's PyTorch 1.13 fails on Python 3.11;
# titan-run starts the ranks as torchrun does (PyTorch joins its store).
"$bin/titan-run" "$python" --nproc-per-node 2 -- \
  "$root/tools/bench/torch_train_baseline.py" llama3 debugmodel \
  "$work/data2" --steps "$steps" --threads 1 > "$work/ddp2.log" 2>&1

echo
echo "OpenBLAS sgemm on the model's GEMM shapes (titan-bench-cpu-kernels):"
# OpenBLAS's worker threads spin ~0.1 s after its threaded call and would
# take the pool's cores in the next one: a short spin keeps the two fair.
OPENBLAS_THREAD_TIMEOUT=4 "$bin/titan-bench-cpu-kernels" --pool-threads 2 --reps 3 |
  sed -n '/^sgemm/,/^$/p'
echo "model FLOPs per token: $flops_per_token"
echo
printf "%-34s %12s %10s %10s   %s\n" run "step" "tokens/s" "GFLOP/s" "vs PyTorch"
torch1=$(median_torch "$work/torch1.log")
ddp2=$(median_torch "$work/ddp2.log")
row "1 rank: PyTorch 1.13 eager" "$torch1" $seq -
row "1 rank: titan" "$(median_titan "$work/one.jsonl")" $seq "$torch1"
row "2 ranks: PyTorch 1.13 DDP (Gloo)" "$ddp2" $seq -
row "2 ranks: titan DP 2" "$(median_titan "$work/dp2.jsonl")" $seq "$ddp2"
row "2 ranks: titan FSDP 2" "$(median_titan "$work/fsdp2.jsonl")" $seq "$ddp2"
echo
echo "loss after $steps steps: titan $(tail -1 "$work/one.jsonl" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["loss"])'), PyTorch $(grep "^step $steps " "$work/torch1.log" | sed 's/.*loss \([^ ]*\).*/\1/') (different initializations)"
rm -rf "$work"
