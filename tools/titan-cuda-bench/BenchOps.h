//===- BenchOps.h - the operations titan-cuda-bench times -------*- C++ -*-===//
//
// The GEMMs and kernels of a Llama 3 training step at the shapes of a
// ~1B-parameter proxy model, in bf16 (f32 for the optimizer's state), one
// family per function. Each allocates its buffers, times every operation
// of the family through the Harness, and frees them; a failure is reported
// (FAILED) and the next operation runs.
//
// The operation names are shared with tools/bench/gpu_torch_baseline.py,
// which times PyTorch's forms of the same operations on the same shapes.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_TITAN_CUDA_BENCH_BENCHOPS_H
#define TITAN_TOOLS_TITAN_CUDA_BENCH_BENCHOPS_H

#include "BenchHarness.h"

#include <cstdint>
#include <string>

namespace titan::rt::cuda::bench {

/// The proxy model: Llama 3.2 1B's vocabulary and FFN ratio with 16 heads
/// of 128 and grouped-query attention (2 query heads per KV head).
struct ModelShape {
  int64_t dim = 2048;
  int64_t heads = 16;
  int64_t kvHeads = 8;
  int64_t headDim = 128;
  int64_t ffn = 8192;
  int64_t vocab = 128256;
  /// Transformer blocks (for the optimizer's parameter list only).
  int64_t layers = 16;
  double normEps = 1e-5;
};

/// The tokens of one step: batch x seq.
struct BatchShape {
  int64_t batch = 1;
  int64_t seq = 2048;

  int64_t getTokens() const { return batch * seq; }
  /// "b4s4096".
  std::string getName() const;
};

/// bf16 GEMMs of the block's and the output's linear layers (fused QKV,
/// attention output, fused w1/w3, w2, the LM head), each as forward (y = x
/// W^T), input gradient (dx = dy W) and weight gradient (dW = dy^T x, f32
/// output): "gemm.<layer>.fwd|dx|dw".
void benchGemms(Harness &harness, const ModelShape &model,
                const BatchShape &shape);

/// RMSNorm, RoPE (q, interleaved pairs), SwiGLU and softmax (over attention
/// scores [batch * heads * seq, seq]), forward and backward:
/// "rmsnorm.fwd", ..., "softmax.bwd".
void benchElementwise(Harness &harness, const ModelShape &model,
                      const BatchShape &shape);

/// Causal flash attention with GQA, forward and backward: "attention.fwd",
/// "attention.bwd".
void benchAttention(Harness &harness, const ModelShape &model,
                    const BatchShape &shape);

/// Cross-entropy over the vocabulary (forward: partials and finish;
/// backward), the embedding lookup and its gradient:
/// "cross_entropy.fwd|bwd", "embedding.fwd|bwd".
void benchLossAndEmbedding(Harness &harness, const ModelShape &model,
                           const BatchShape &shape);

/// One fused AdamW step over all the model's parameters (f32 parameters and
/// moments, lr and step on the device), as executables run it
/// (titanrt_fused_adamw), with f32 and with bf16 gradients:
/// "adamw.grad_f32", "adamw.grad_bf16" (shape "model"); and clipping's
/// squared norm of the same gradients (titanrt_squared_norm):
/// "squared_norm.grad_f32", "squared_norm.grad_bf16".
void benchAdamW(Harness &harness, const ModelShape &model);

} // namespace titan::rt::cuda::bench

#endif // TITAN_TOOLS_TITAN_CUDA_BENCH_BENCHOPS_H
