//===- Reference.h - CPU references of the CUDA kernels ---------*- C++ -*-===//
//
// Plain C++ in double precision, one function per kernel of Kernels.h,
// AdamW.h and Gemm.h with the same semantics (and, where the algorithm is
// the point, the same algorithm: the attention forward is blockwise with an
// online softmax, the cross-entropy is split into the same steps), so that
// titan-cuda-kernel-check compares every kernel with them on a GPU, and the
// unit tests check them against naive formulas, hand-computed values and
// finite differences on the CPU. Buffers are dense and row-major, as in
// Kernels.h; ids and labels are int64.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_REFERENCE_H
#define TITAN_RUNTIME_CUDA_REFERENCE_H

#include "cuda/GemmPlan.h"
#include "cuda/KernelTypes.h"

#include <cstdint>

namespace titan::rt::cuda::reference {

/// rmsNormForward.
void rmsNormForward(const double *x, const double *weight, double *y,
                    int64_t rows, int64_t cols, double eps);
/// rmsNormBackward (dx and dweight).
void rmsNormBackward(const double *x, const double *weight, const double *dy,
                     double *dx, double *dweight, int64_t rows, int64_t cols,
                     double eps);

/// ropeForward, or ropeBackward with `backward`.
void rope(const double *x, const double *cos, const double *sin, double *out,
          int64_t batch, int64_t seq, int64_t heads, int64_t headDim,
          RopeStyle style, bool backward);

/// swiGluForward.
void swiGluForward(const double *gate, const double *up, double *out,
                   int64_t rows, int64_t cols, int64_t inputStride);
/// swiGluBackward.
void swiGluBackward(const double *gate, const double *up, const double *dout,
                    double *dgate, double *dup, int64_t rows, int64_t cols,
                    int64_t inputStride);

/// softmaxForward.
void softmaxForward(const double *x, double *y, int64_t rows, int64_t cols);
/// softmaxBackward.
void softmaxBackward(const double *y, const double *dy, double *dx,
                     int64_t rows, int64_t cols);

/// attentionForward: per query row, key blocks of kAttentionTile with an
/// online softmax, as the kernel does (test/unit checks it against the
/// naive softmax(q k^T) v).
void attentionForward(const AttentionShape &shape, const double *q,
                      const double *k, const double *v, double *out,
                      double *lse);
/// attentionBackward: the probabilities recomputed from `lse`.
void attentionBackward(const AttentionShape &shape, const double *q,
                       const double *k, const double *v, const double *out,
                       const double *dout, const double *lse, double *dq,
                       double *dk, double *dv);

/// crossEntropyPartials.
void crossEntropyPartials(const CrossEntropyShape &shape, const double *logits,
                          const int64_t *labels, double *rowMax,
                          double *rowSumExp, double *targetLogit);
/// crossEntropyRescale.
void crossEntropyRescale(const double *rowMax, const double *globalMax,
                         double *rowSumExp, int64_t rows);
/// crossEntropyFinish.
void crossEntropyFinish(const CrossEntropyShape &shape, const double *rowMax,
                        const double *rowSumExp, const double *targetLogit,
                        const int64_t *labels, double &loss, double *lse,
                        double &validCount);
/// crossEntropyBackward (gradLoss and validCount as values).
void crossEntropyBackward(const CrossEntropyShape &shape, const double *logits,
                          const int64_t *labels, const double *lse,
                          double gradLoss, double validCount, double *dlogits);

/// embeddingForward.
void embeddingForward(const double *table, const int64_t *ids, double *out,
                      int64_t numIds, int64_t vocab, int64_t dim);
/// embeddingBackward: rows summed in increasing position order.
void embeddingBackward(const int64_t *ids, const double *grad, double *out,
                       int64_t numIds, int64_t vocab, int64_t dim);

/// One AdamW step of one tensor (FusedAdamW::step), gradients multiplied
/// by `gradScale` first.
void adamW(const AdamWHyperparameters &hyper, double gradScale, double *param,
           const double *grad, double *expAvg, double *expAvgSq, int64_t numel);

/// GemmEngine::run: c = epilogue(alpha * op(a) op(b) + beta * c + bias).
void gemm(const GemmProblem &problem, GemmEpilogue epilogue, const double *a,
          const double *b, const double *bias, double *c, double alpha,
          double beta);

/// GELU, the tanh approximation (cuBLASLt's GELU epilogue).
double gelu(double x);

} // namespace titan::rt::cuda::reference

#endif // TITAN_RUNTIME_CUDA_REFERENCE_H
