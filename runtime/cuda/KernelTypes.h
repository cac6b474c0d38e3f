//===- KernelTypes.h - the plain data of the CUDA kernels -------*- C++ -*-===//
//
// The shapes and parameters that the kernels' launchers (Kernels.h,
// AdamW.h), their launch configurations (LaunchConfig.h) and their CPU
// references (Reference.h) share. Plain C++: no CUDA header.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_KERNELTYPES_H
#define TITAN_RUNTIME_CUDA_KERNELTYPES_H

#include "core/AdamW.h"
#include "core/ComputeBackend.h"
#include "core/Status.h"

#include <cstdint>
#include <string>

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

/// titanrt_attention (Forward) or titanrt_attention_grad (Backward).
enum class AttentionPass { Forward, Backward };

/// Which attention kernels a call runs.
enum class AttentionKernels {
  /// cuDNN's fused attention where the build has it (TITAN_HAVE_CUDNN),
  /// the library loads and it has a plan for the call (bf16, head
  /// dimensions that are multiples of 8 up to 128, 16-byte aligned
  /// operands); titan's kernels (Titan) otherwise, each shape cuDNN cannot
  /// take noted once on stderr.
  Auto,
  /// titan's kernels: tensor cores where attentionUsesTensorCores(dtype,
  /// headDim) holds and the operands are 16-byte aligned, CUDA cores
  /// otherwise (bitwise deterministic; cuDNN's backward is not).
  Titan,
  /// cuDNN's fused attention for every call, an error where it has no
  /// plan for one (what the kernel check and the benchmark time).
  Cudnn,
  /// CUDA cores for every dtype: the baseline titan-cuda-bench times the
  /// tensor-core kernels against, which titan-cuda-kernel-check checks too
  /// and a rank runs under TITAN_CUDA_ATTENTION=cuda_cores.
  CudaCores,
};

/// The kernels TITAN_CUDA_ATTENTION names: "" or "auto", "cudnn", "titan"
/// or "cuda_cores"; anything else fails with the choices.
Status parseAttentionKernels(const std::string &name,
                             AttentionKernels &kernels);

// AdamW's plain data is the runtime's (core/AdamW.h), shared with the CPU.
using rt::AdamWHyperparameters;
using rt::adamWScalars;
using rt::AdamWScalars;
using rt::checkAdamWHyperparameters;

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_KERNELTYPES_H
