#!/usr/bin/env bash
# Prepares, on the build machine, the titan training step that
# tools/bench/gpu.sh runs on a GPU machine (docs/cuda-backend.md, "A
# training step on the GPU"). The GPU machine has the CUDA toolkit but not
# MLIR, LLVM or Gloo, so the executable is compiled here and carried there
# with its runtime:
#
#   tools/bench/gpu-bundle.sh [BUILD_DIR]      (default: <checkout>/build)
#
# writes <checkout>/.gpu-bundle/ (git-ignored, about 32 MB):
#   proxy/       titan-compile --backend=cuda of the Llama 3 ~1B proxy
#                (titan-cuda-bench's shapes: dim 2048, 16 blocks, 16 query
#                and 8 KV heads of 128, FFN 8192, vocabulary 128,256;
#                1.53 billion parameters; bf16 compute, f32 master
#                weights and AdamW), batch x sequence $TITAN_GPU_STEP_SHAPE
#                (1x2048), one rank on an H200; proxy/memory: its planned
#                regions (arena, state, inputs) in bytes
#   proxy-compiled/  the same with --runtime-ops=none (RMSNorm, the loss
#                and AdamW as compiled kernels, not titan's hand-written ones)
#   proxy-bf16/  the same in pure bf16 (training.dtype = "bfloat16": bf16
#                parameters and moments, no f32 masters; torchtitan's
#                8xB200 configs)
#   proxy-large/ the proxy at a larger batch, $TITAN_GPU_LARGE_STEP_SHAPE
#                (4x2048; empty: none), with its own data/ and shape (the
#                optimizer's fixed cost per step weighs less there)
#   data/        tokens.npy and labels.npy of that shape (seeded)
#   lib/         libtitanrt_cuda.so (LLVM's Support linked in) and the
#                libraries it needs that the GPU machine lacks (Gloo and
#                Gloo's own); the CUDA runtime and cuBLASLt are the
#                machine's
#   check/       the numerics checks: the llama3 debugmodel (one block,
#                4x64, 5 steps) for CUDA in f32 (debug/, with validation
#                after steps 1 and 5 on val.npy) and in bf16
#                (debug-bf16/), its batch, and the losses the CPU backend
#                computes for the same jobs here (cpu-losses*.txt, the
#                validation losses among them); and
#                GPT-2 tiny (biases, LayerNorm, GELU, tied embeddings: the
#                compiled kernels' column sums; debug-gpt2/, data-gpt2/)
#   shape        batch x sequence
#   bin/         titan-cuda-kernel-check, titan-cuda-bench and
#                CudaBackendTest as built here (they need only the CUDA
#                runtime and cuBLASLt): gpu.sh runs them instead of a build
#
# A device run then carries it: run(command="bash tools/bench/gpu.sh",
# carry=[".gpu-bundle"]).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
shape=${TITAN_GPU_STEP_SHAPE:-1x2048}
large=${TITAN_GPU_LARGE_STEP_SHAPE-4x2048}
python=/usr/bin/python3
bundle=$root/.gpu-bundle
batch=${shape%x*}
seq=${shape#*x}

for tool in titan-compile; do
  [[ -x $build/bin/$tool ]] || {
    echo "gpu-bundle.sh: $build/bin/$tool is missing: build titan first (tools/scripts/build.sh)" >&2
    exit 1
  }
done
[[ -f $build/lib/libtitanrt_cuda.so ]] || {
  echo "gpu-bundle.sh: $build/lib/libtitanrt_cuda.so is missing: it is built where CMake finds the CUDA toolkit" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$bundle"
mkdir -p "$bundle/lib" "$bundle/data"

# The proxy, shape-only (the executable initializes the weights itself).
"$python" "$root/models/export.py" --model llama3 --flavor 8B --shape-only \
  --set dim=2048 --set n_layers=16 --set n_heads=16 --set n_kv_heads=8 \
  --set multiple_of=8192 --out "$work/model"
# Twice: as titan-compile --backend=cuda builds it (RMSNorm, the loss and
# AdamW as titan's hand-written kernels), and with them compiled
# (--runtime-ops=none),
# so that gpu.sh measures which is faster. Then in pure bf16, and at the
# larger batch.
variants=(proxy proxy-compiled proxy-bf16)
[[ -n $large ]] && variants+=(proxy-large)
for variant in "${variants[@]}"; do
  runtime_ops=() dtype=float32
  [[ $variant == proxy-compiled ]] && runtime_ops=(--runtime-ops=none)
  [[ $variant == proxy-bf16 ]] && dtype=bfloat16
  variant_batch=$batch variant_seq=$seq
  if [[ $variant == proxy-large ]]; then
    variant_batch=${large%x*} variant_seq=${large#*x}
  fi
  "$build/bin/titan-compile" "$work/model/model.pt" \
    --config "$root/models/llama3/train_configs/debugmodel.toml" \
    --set training.seq_len="$variant_seq" --set training.local_batch_size="$variant_batch" \
    --set training.steps=13 --set parallelism.data_parallel_shard_degree=1 \
    --set 'training.mixed_precision_param="bfloat16"' \
    --set "training.dtype=\"$dtype\"" \
    --set hardware.device=h200 --backend=cuda "${runtime_ops[@]}" \
    -o "$bundle/$variant"
  grep -a -o -m1 'regions arena=[0-9]* state=[0-9]* inputs=[0-9]*' \
    "$bundle/$variant/bin/train" >"$bundle/$variant/memory"
done
"$python" "$root/test/Spmd/Inputs/make_batch.py" "$bundle/data" "$batch" "$seq" 128256
echo "$shape" >"$bundle/shape"
if [[ -n $large ]]; then
  mkdir -p "$bundle/proxy-large/data"
  "$python" "$root/test/Spmd/Inputs/make_batch.py" "$bundle/proxy-large/data" \
    "${large%x*}" "${large#*x}" 128256
  echo "$large" >"$bundle/proxy-large/shape"
fi

# The numerics checks: the debugmodel (one block) for CUDA, in f32 and in
# bf16 (mixed precision: the compiler's bf16 kernels, vectorized), and the
# losses of the same jobs on this machine's CPU backend, which the GPU's
# must match (gpu.sh, "titan's CUDA executable against the CPU's").
check=$bundle/check
mkdir -p "$check/data"
"$python" "$root/test/Spmd/Inputs/make_batch.py" "$check/data" 4 64 2048
# The f32 check validates too (the validation program's inputs uploaded
# apart, its loss read from the shared arena): on the corpus's bytes.
"$python" -c "import numpy as n, sys; n.save(sys.argv[2], n.frombuffer(open(sys.argv[1], 'rb').read(), n.uint8).astype(n.int64))" \
  "$root/models/data/corpus.txt" "$check/val.npy"
for precision in f32 bf16; do
  suffix= trace=float32
  flags=(--set validation.enable=true
    --set "validation.dataset_path=\"$check/val.npy\""
    --set validation.local_batch_size=4 --set validation.seq_len=64
    --set validation.freq=5 --set validation.steps=2)
  if [[ $precision == bf16 ]]; then
    flags=(--set 'training.mixed_precision_param="bfloat16"')
    suffix=-bf16 trace=bfloat16
  fi
  "$python" "$root/models/export.py" --model llama3 --flavor debugmodel \
    --n-layers 1 --trace-dtype "$trace" \
    --out "$work/debug$suffix" >/dev/null
  for backend in cpu cuda; do
    "$build/bin/titan-compile" "$work/debug$suffix/model.pt" \
      --config "$root/models/llama3/train_configs/debugmodel.toml" \
      --set training.seq_len=64 --set training.local_batch_size=4 \
      --set training.steps=5 --set parallelism.data_parallel_shard_degree=1 \
      "${flags[@]}" --backend=$backend -o "$work/check-$backend$suffix"
  done
  mv "$work/check-cuda$suffix" "$check/debug$suffix"
  "$work/check-cpu$suffix/bin/train" --data "$check/data" \
    --job.dump_folder "$work/check-run$suffix" |
    grep -oE '^(validate )?step [0-9]* \| loss [0-9.]*' \
      >"$check/cpu-losses$suffix.txt"
  # 5 steps, and in f32 2 validations.
  losses=5
  [[ $precision == f32 ]] && losses=7
  [[ $(wc -l <"$check/cpu-losses$suffix.txt") == "$losses" ]] || {
    echo "gpu-bundle.sh: the CPU run of the $precision check printed no $losses losses" >&2
    exit 1
  }
done

# GPT-2 tiny in f32 the same way: what the Llama checks do not reach (bias
# and LayerNorm gradients are the compiled kernels' column sums, GELU, the
# tied embedding's two gradients).
"$python" "$root/models/export.py" --model gpt2 --flavor tiny \
  --out "$work/gpt2" >/dev/null
mkdir -p "$check/data-gpt2"
"$python" "$root/test/Spmd/Inputs/make_batch.py" "$check/data-gpt2" 4 64 512
for backend in cpu cuda; do
  "$build/bin/titan-compile" "$work/gpt2/model.pt" \
    --config "$root/models/gpt2/train_configs/tiny.toml" \
    --set training.seq_len=64 --set training.local_batch_size=4 \
    --set training.steps=5 --set parallelism.data_parallel_shard_degree=1 \
    --backend=$backend -o "$work/check-$backend-gpt2"
done
mv "$work/check-cuda-gpt2" "$check/debug-gpt2"
"$work/check-cpu-gpt2/bin/train" --data "$check/data-gpt2" \
  --job.dump_folder "$work/check-run-gpt2" |
  grep -o 'step [0-9]* | loss [0-9.]*' >"$check/cpu-losses-gpt2.txt"
[[ $(wc -l <"$check/cpu-losses-gpt2.txt") == 5 ]] || {
  echo "gpu-bundle.sh: the CPU run of the GPT-2 check printed no 5 losses" >&2
  exit 1
}

# The CUDA checks and benchmark, built here for sm_90, so that gpu.sh need
# not build them on the GPU machine (it does when they do not load there).
mkdir -p "$bundle/bin"
for tool in bin/titan-cuda-kernel-check bin/titan-cuda-bench unittests/CudaBackendTest; do
  [[ -x $build/$tool ]] && cp "$build/$tool" "$bundle/bin/"
done

# The runtime and what it links that a CUDA image does not have.
cp "$build/lib/libtitanrt_cuda.so" "$bundle/lib/"
ldd "$build/lib/libtitanrt_cuda.so" | awk '$3 ~ /^\// {print $1, $3}' |
  while read -r name path; do
    case $name in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libgcc_s.so* | \
      libstdc++.so* | libcudart.so* | libcublasLt.so* | libcublas.so*) ;;
    *) cp -L "$path" "$bundle/lib/$name" ;;
    esac
  done
echo "gpu-bundle.sh: $(du -sh "$bundle" | cut -f1) in $bundle ($(ls "$bundle/lib" | tr '\n' ' '))"
