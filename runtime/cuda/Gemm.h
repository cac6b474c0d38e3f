//===- Gemm.h - GEMMs through cuBLASLt --------------------------*- C++ -*-===//
//
// titanrt_matmul's GEMMs on the GPU: bf16 or f32 operands, f32
// accumulation (CUBLAS_COMPUTE_32F), C in the operands' type or f32,
// transposes, strided batches and a shared B, and cuBLASLt's epilogues
// (bias, ReLU, GELU). The row-major problem is mapped onto cuBLASLt's
// column-major one by planGemm (GemmPlan.h); the algorithm cuBLASLt's
// heuristic picks is cached per shape, types and alignment, so a step's
// repeated shapes query it once.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_GEMM_H
#define TITAN_RUNTIME_CUDA_GEMM_H

#include "core/Status.h"
#include "cuda/Device.h"
#include "cuda/GemmPlan.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <vector>

namespace titan::rt::cuda {

/// One GEMM: D = epilogue(alpha * op(A) op(B) + beta * C + bias), where D
/// is `c` and C is `addend` when set (D's layout; it may be `c`), else `c`.
struct GemmArgs {
  /// The type of A and B: TITANRT_F32 or TITANRT_BF16.
  int32_t dtype = TITANRT_F32;
  /// The type of C (and the bias): -1 for `dtype`; TITANRT_F32 with bf16
  /// operands accumulates into f32 (gradients of f32 master weights).
  int32_t outputDtype = -1;
  const void *a = nullptr;
  const void *b = nullptr;
  void *c = nullptr;
  const void *addend = nullptr;
  GemmProblem problem;
  GemmEpilogue epilogue = GemmEpilogue::None;
  /// n elements of the output type, for the Bias epilogues.
  const void *bias = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;
  /// f32 operands through TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
  /// instead of full f32.
  bool allowTf32 = false;
};

/// A cuBLASLt handle, its workspace and the algorithms chosen so far. Not
/// thread-safe: one per rank (and device).
class GemmEngine {
public:
  /// The workspace NVIDIA recommends for Hopper GEMMs.
  static constexpr int64_t kDefaultWorkspaceBytes = 32 << 20;

  ~GemmEngine();
  GemmEngine(const GemmEngine &) = delete;
  GemmEngine &operator=(const GemmEngine &) = delete;

  /// Creates the handle and allocates `workspaceBytes` on the current
  /// device.
  static Status create(std::unique_ptr<GemmEngine> &engine,
                       int64_t workspaceBytes = kDefaultWorkspaceBytes);

  /// Queues `args` on `stream`. Arguments are checked first (a Status
  /// names the bad one); an empty problem does nothing; k = 0 writes zeros
  /// (beta = 0) or C (beta = 1) to D (other k = 0 GEMMs, with another beta
  /// or an epilogue, are unsupported).
  Status run(cudaStream_t stream, const GemmArgs &args);

  /// titanrt_matmul (titanrt.h) on `stream`: F32 or BF16; an addend is C
  /// with beta = 1.
  Status matmul(cudaStream_t stream, int32_t dtype, const void *a,
                const void *b, const void *addend, void *c, int64_t batch,
                int64_t m, int64_t n, int64_t k, bool transposeA,
                bool transposeB, bool bShared);

  /// The number of distinct GEMMs whose algorithm has been chosen.
  size_t getNumCachedAlgorithms() const { return algorithms.size(); }

private:
  GemmEngine() = default;

  /// Runs `plan` with pointers A' = `first`, B' = `second`, C = `input`
  /// and D = `output`.
  Status runPlan(cudaStream_t stream, const GemmArgs &args,
                 const GemmPlan &plan, const void *first, const void *second,
                 const void *input, void *output);

  cublasLtHandle_t handle = nullptr;
  DeviceBuffer workspace;
  /// The algorithm of each GEMM (its shape, types, epilogue, alignments).
  std::map<std::vector<int64_t>, cublasLtMatmulAlgo_t> algorithms;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_GEMM_H
