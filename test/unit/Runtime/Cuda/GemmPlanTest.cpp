//===- GemmPlanTest.cpp - titan's GEMMs as cuBLASLt sees them -------------===//
//
// planGemm (runtime/cuda/GemmPlan.h) on the CPU: its layouts for the usual
// cases, and every plan run through a column-major GEMM that reads the
// layouts, operations and batch strides as cuBLASLt does, which must give
// titanrt_matmul's row-major product.
//
//===----------------------------------------------------------------------===//

#include "cuda/GemmPlan.h"
#include "cuda/Reference.h"

#include "TestUtil.h"

#include "gtest/gtest.h"

#include <climits>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::test;

namespace {

/// Element (r, c) of a stored column-major matrix.
double at(const double *matrix, const MatrixLayout &layout, int64_t r,
          int64_t c) {
  EXPECT_LT(r, layout.rows);
  EXPECT_LT(c, layout.cols);
  return matrix[r + c * layout.ld];
}

/// What cuBLASLt computes for `plan`: D = op(A') op(B') per batch entry,
/// column-major, after checking that the layouts fit the extents.
void runColumnMajor(const GemmPlan &plan, const double *first,
                    const double *second, double *d) {
  // op(A') is m x k and op(B') k x n.
  EXPECT_EQ(plan.transposeA ? plan.a.cols : plan.a.rows, plan.m);
  EXPECT_EQ(plan.transposeA ? plan.a.rows : plan.a.cols, plan.k);
  EXPECT_EQ(plan.transposeB ? plan.b.cols : plan.b.rows, plan.k);
  EXPECT_EQ(plan.transposeB ? plan.b.rows : plan.b.cols, plan.n);
  EXPECT_EQ(plan.d.rows, plan.m);
  EXPECT_EQ(plan.d.cols, plan.n);
  for (const MatrixLayout *layout : {&plan.a, &plan.b, &plan.d})
    EXPECT_GE(layout->ld, std::max<int64_t>(layout->rows, 1));
  for (int64_t e = 0; e < plan.batch; ++e) {
    const double *a = first + e * plan.a.batchStride;
    const double *b = second + e * plan.b.batchStride;
    double *entry = d + e * plan.d.batchStride;
    for (int64_t i = 0; i < plan.m; ++i)
      for (int64_t j = 0; j < plan.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < plan.k; ++l)
          sum += (plan.transposeA ? at(a, plan.a, l, i) : at(a, plan.a, i, l)) *
                 (plan.transposeB ? at(b, plan.b, j, l) : at(b, plan.b, l, j));
        entry[i + j * plan.d.ld] = sum;
      }
  }
}

TEST(CudaGemmPlanTest, EveryCaseComputesTheRowMajorProduct) {
  uint32_t seed = 1;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{5, 7, 3},
                         {1, 4, 6},
                         {8, 1, 2},
                         {3, 3, 1}})
    for (int64_t batch : {1, 3})
      for (bool transposeA : {false, true})
        for (bool transposeB : {false, true})
          for (bool bShared : {false, true}) {
            GemmProblem problem{batch,      m,          n,      k,
                                transposeA, transposeB, bShared};
            SCOPED_TRACE(testing::Message()
                         << "m=" << m << " n=" << n << " k=" << k
                         << " batch=" << batch << " tA=" << transposeA
                         << " tB=" << transposeB << " shared=" << bShared);
            ASSERT_TRUE(checkGemmProblem("t", problem).ok());
            std::vector<double> a = randomValues(batch * m * k, seed++);
            std::vector<double> b =
                randomValues((bShared ? 1 : batch) * k * n, seed++);
            std::vector<double> expected(static_cast<size_t>(batch * m * n));
            reference::gemm(problem, GemmEpilogue::None, a.data(), b.data(),
                            nullptr, expected.data(), 1.0, 0.0);
            GemmPlan plan = planGemm(problem);
            std::vector<double> actual(expected.size(), NAN);
            // cuBLASLt's first operand is titan's B, its second titan's A.
            runColumnMajor(plan, b.data(), a.data(), actual.data());
            EXPECT_LT(relativeError(actual, expected), 1e-14);
          }
}

TEST(CudaGemmPlanTest, UntransposedLayoutsSwapTheOperands) {
  // C [m, n] = A [m, k] B [k, n] is C^T [n, m] = B^T A^T column-major.
  GemmPlan plan = planGemm({1, 4, 6, 5, false, false, false});
  EXPECT_FALSE(plan.transposeA);
  EXPECT_FALSE(plan.transposeB);
  EXPECT_EQ(plan.m, 6);
  EXPECT_EQ(plan.n, 4);
  EXPECT_EQ(plan.k, 5);
  EXPECT_EQ(plan.a.rows, 6); // B row-major [5, 6] is column-major [6, 5]
  EXPECT_EQ(plan.a.cols, 5);
  EXPECT_EQ(plan.a.ld, 6);
  EXPECT_EQ(plan.b.rows, 5); // A row-major [4, 5] is column-major [5, 4]
  EXPECT_EQ(plan.b.cols, 4);
  EXPECT_EQ(plan.b.ld, 5);
  EXPECT_EQ(plan.d.rows, 6);
  EXPECT_EQ(plan.d.cols, 4);
  EXPECT_EQ(plan.d.ld, 6);
}

TEST(CudaGemmPlanTest, TransposesBecomeOperations) {
  // A^T with A stored [k, m], B^T with B stored [n, k] (a linear layer's
  // weight): both operands transposed back.
  GemmPlan plan = planGemm({1, 4, 6, 5, true, true, false});
  EXPECT_TRUE(plan.transposeA);
  EXPECT_TRUE(plan.transposeB);
  EXPECT_EQ(plan.a.rows, 5); // B stored [6, 5] is column-major [5, 6]
  EXPECT_EQ(plan.a.cols, 6);
  EXPECT_EQ(plan.a.ld, 5);
  EXPECT_EQ(plan.b.rows, 4); // A stored [5, 4] is column-major [4, 5]
  EXPECT_EQ(plan.b.cols, 5);
  EXPECT_EQ(plan.b.ld, 4);
  EXPECT_EQ(plan.d.ld, 6);
}

TEST(CudaGemmPlanTest, BatchedStridesAndSharedWeights) {
  GemmPlan batched = planGemm({8, 4, 6, 5, false, true, false});
  EXPECT_EQ(batched.batch, 8);
  EXPECT_FALSE(batched.foldedBatch);
  EXPECT_EQ(batched.a.batchStride, 5 * 6);
  EXPECT_EQ(batched.b.batchStride, 4 * 5);
  EXPECT_EQ(batched.d.batchStride, 4 * 6);

  // A shared weight under an untransposed A: one GEMM over 8 * 4 rows.
  GemmPlan folded = planGemm({8, 4, 6, 5, false, true, true});
  EXPECT_TRUE(folded.foldedBatch);
  EXPECT_EQ(folded.batch, 1);
  EXPECT_EQ(folded.n, 32);
  EXPECT_EQ(folded.b.cols, 32);
  EXPECT_EQ(folded.d.cols, 32);

  // Under a transposed A the batch stays, the weight's stride is 0.
  GemmPlan shared = planGemm({8, 4, 6, 5, true, false, true});
  EXPECT_FALSE(shared.foldedBatch);
  EXPECT_EQ(shared.batch, 8);
  EXPECT_EQ(shared.a.batchStride, 0);
  EXPECT_EQ(shared.b.batchStride, 4 * 5);
}

TEST(CudaGemmPlanTest, ChecksTheProblem) {
  auto code = [](GemmProblem problem) {
    return checkGemmProblem("matmul (cuBLASLt)", problem).getCode();
  };
  EXPECT_EQ(code({1, 0, 0, 0, false, false, false}), TITANRT_OK);
  EXPECT_EQ(code({1, -1, 2, 2, false, false, false}),
            TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(code({int64_t(INT_MAX) + 1, 1, 1, 1, false, false, false}),
            TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(
      code({2, int64_t(1) << 40, int64_t(1) << 30, 1, false, false, false}),
      TITANRT_ERROR_INVALID_ARGUMENT);
  Status status =
      checkGemmProblem("matmul (cuBLASLt)", {1, 2, 2, -3, false, false, false});
  EXPECT_EQ(status.getMessage(), "matmul (cuBLASLt): k = -3 is negative");
  EXPECT_TRUE(hasBias(GemmEpilogue::GeluBias));
  EXPECT_FALSE(hasBias(GemmEpilogue::Relu));
}

TEST(CudaGemmPlanTest, ReferenceEpilogues) {
  // [1 2] [1 -1; 1 1] = [3 1]; + bias [-4, 1] = [-1 2].
  std::vector<double> a = {1, 2}, b = {1, -1, 1, 1}, bias = {-4, 1};
  std::vector<double> c = {10, 10};
  GemmProblem problem{1, 1, 2, 2, false, false, false};
  reference::gemm(problem, GemmEpilogue::ReluBias, a.data(), b.data(),
                  bias.data(), c.data(), 1.0, 0.0);
  EXPECT_EQ(c, (std::vector<double>{0, 2}));
  c = {10, 10};
  reference::gemm(problem, GemmEpilogue::None, a.data(), b.data(), nullptr,
                  c.data(), 2.0, 0.5);
  EXPECT_EQ(c, (std::vector<double>{11, 7}));
  EXPECT_NEAR(reference::gelu(1.0), 0.8411919906082768, 1e-15);
  EXPECT_EQ(reference::gelu(0.0), 0.0);
}

} // namespace
