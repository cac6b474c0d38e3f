//===- GemmPlan.h - row-major GEMMs as cuBLASLt sees them -------*- C++ -*-===//
//
// titanrt_matmul computes row-major C[i] = op(A[i]) op(B[i]); cuBLASLt
// computes column-major products. A row-major m x n matrix is, in the same
// memory, the column-major n x m matrix of its transpose, so C^T = op(B)^T
// op(A)^T is computed instead: cuBLASLt's first operand is titan's B, its
// second titan's A, and its product is n x m. planGemm makes that choice (the
// layouts, operations, leading dimensions and batch strides) as plain data,
// so that it is checked on the CPU (test/unit/Runtime/Cuda/GemmPlanTest.cpp
// runs plans through a column-major reference GEMM) without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_GEMMPLAN_H
#define TITAN_RUNTIME_CUDA_GEMMPLAN_H

#include "core/Status.h"

#include <cstdint>

namespace titan::rt::cuda {

/// What is applied to the product before it is stored (cuBLASLt's
/// epilogues): a bias per column of titan's C (length n), then ReLU or
/// GELU (the tanh approximation, as cuBLASLt computes it).
enum class GemmEpilogue { None, Bias, Relu, ReluBias, Gelu, GeluBias };

/// Whether `epilogue` reads a bias vector.
bool hasBias(GemmEpilogue epilogue);

/// A GEMM with titanrt_matmul's semantics: C[i] = op(A[i]) op(B[i]) for
/// i < batch, A[i] m x k (k x m when transposed), B[i] k x n (n x k when
/// transposed), C[i] m x n, all row-major and contiguous; with `bShared`
/// every batch entry reads the one B.
struct GemmProblem {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool transposeA = false;
  bool transposeB = false;
  bool bShared = false;
};

/// A column-major matrix as cuBLASLt's layout describes it (before its
/// operation is applied), in elements.
struct MatrixLayout {
  int64_t rows = 0;
  int64_t cols = 0;
  /// The leading dimension: elements between consecutive columns.
  int64_t ld = 0;
  /// Elements between consecutive batch entries (0: one matrix for all).
  int64_t batchStride = 0;
};

/// The column-major GEMM D = op(A') op(B') that computes a GemmProblem:
/// A' is the memory of titan's B, B' the memory of titan's A, D the memory
/// of titan's C.
struct GemmPlan {
  /// The operations applied to A' and B' (CUBLAS_OP_T when set).
  bool transposeA = false;
  bool transposeB = false;
  /// The column-major product's extents: D is m x n, the inner dim k.
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  /// Batch entries cuBLASLt runs (1 when the batch was folded).
  int64_t batch = 1;
  MatrixLayout a;
  MatrixLayout b;
  MatrixLayout d;
  /// A shared B with an untransposed A is one GEMM over batch * m rows of
  /// titan's A and C (contiguous row-major entries stack).
  bool foldedBatch = false;
};

/// Fails (naming `op`) unless `problem` has non-negative extents, at most
/// 2^31 - 1 batch entries (cuBLASLt's batch count) and element counts that
/// fit int64.
Status checkGemmProblem(const char *op, const GemmProblem &problem);

/// The column-major plan of `problem` (checked by checkGemmProblem).
GemmPlan planGemm(const GemmProblem &problem);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_GEMMPLAN_H
