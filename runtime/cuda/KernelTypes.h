//===- KernelTypes.h - the plain data of the CUDA kernels -------*- C++ -*-===//
//
// The shapes and parameters that the kernels' launchers (Kernels.h,
// AdamW.h), their launch configurations (LaunchConfig.h) and their CPU
// references (Reference.h) share. Plain C++: no CUDA header.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_KERNELTYPES_H
#define TITAN_RUNTIME_CUDA_KERNELTYPES_H

#include "core/ComputeBackend.h"
#include "core/Status.h"

#include <cmath>
#include <cstdint>
#include <string>

#ifdef __CUDACC__
#define TITAN_HOST_DEVICE __host__ __device__
#else
#define TITAN_HOST_DEVICE
#endif

namespace titan::rt::cuda {

/// Which elements of a head rotate together (titan.rope's `style`).
enum class RopeStyle {
  /// Pairs (2j, 2j + 1): torchtitan's complex form.
  Interleaved,
  /// Pairs (j, j + headDim / 2): Hugging Face's rotate-half form.
  Half,
};

/// The shape of an attention call: the runtime's (core/ComputeBackend.h).
using titan::rt::AttentionShape;

/// The labels and which part of the vocabulary a rank holds.
struct CrossEntropyShape {
  int64_t rows = 0;
  /// The columns of this rank's logits.
  int64_t localVocab = 0;
  /// The global id of this rank's first column (0 unsharded).
  int64_t vocabStart = 0;
  int64_t ignoreIndex = -100;
  int32_t labelsDtype = TITANRT_I64;
};

/// Which attention kernels a call runs.
enum class AttentionKernels {
  /// Tensor cores where attentionUsesTensorCores(dtype, headDim) holds and
  /// the operands are 16-byte aligned, CUDA cores otherwise.
  Auto,
  /// CUDA cores for every dtype: the baseline titan-cuda-bench times the
  /// tensor-core kernels against, which titan-cuda-kernel-check checks too
  /// and a rank runs under TITAN_CUDA_ATTENTION=cuda_cores.
  CudaCores,
};

/// The kernels TITAN_CUDA_ATTENTION names: "" or "auto", or "cuda_cores";
/// anything else fails with the choices.
Status parseAttentionKernels(const std::string &name,
                             AttentionKernels &kernels);

/// torch.optim.AdamW's hyperparameters (torchtitan's defaults) and the
/// step.
struct AdamWHyperparameters {
  double lr = 8e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weightDecay = 0.1;
  /// The steps done before this one (titan's `step` input): the bias
  /// corrections use t = step + 1.
  int64_t step = 0;
};

/// What the kernel multiplies and adds, computed on the host in double and
/// rounded to f32 once (as the compiled program computes them in f64 and
/// broadcasts them in f32).
struct AdamWScalars {
  /// 1 - lr * weight_decay.
  float decay;
  float beta1;
  float oneMinusBeta1;
  float beta2;
  float oneMinusBeta2;
  /// lr / (1 - beta1^t).
  float stepSize;
  /// sqrt(1 - beta2^t).
  float correction2Sqrt;
  float eps;
};

/// The scalars of one step (pure; unit-tested on the CPU), computed as
/// titan.adamw's expansion computes them: beta^t as exp(t * log(beta)).
/// The host's for FusedAdamW, a block's first thread's for titanrt_adamw.
TITAN_HOST_DEVICE inline AdamWScalars
adamWScalars(const AdamWHyperparameters &hyper) {
  const double t = double(hyper.step) + 1.0;
  AdamWScalars s;
  s.decay = float(1.0 - hyper.lr * hyper.weightDecay);
  s.beta1 = float(hyper.beta1);
  s.oneMinusBeta1 = float(1.0 - hyper.beta1);
  s.beta2 = float(hyper.beta2);
  s.oneMinusBeta2 = float(1.0 - hyper.beta2);
  s.stepSize = float(hyper.lr / (1.0 - ::exp(t * ::log(hyper.beta1))));
  s.correction2Sqrt = float(::sqrt(1.0 - ::exp(t * ::log(hyper.beta2))));
  s.eps = float(hyper.eps);
  return s;
}

/// Fails unless the hyperparameters are usable: lr >= 0, betas in [0, 1),
/// eps > 0, weight decay >= 0, step >= 0.
Status checkAdamWHyperparameters(const AdamWHyperparameters &hyper);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_KERNELTYPES_H
