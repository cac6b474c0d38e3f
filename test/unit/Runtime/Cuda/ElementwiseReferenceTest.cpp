//===- ElementwiseReferenceTest.cpp - references of the row kernels -------===//
//
// The CPU references of RMSNorm, RoPE, SwiGLU and softmax
// (runtime/cuda/Reference.cpp), which titan-cuda-kernel-check compares the
// GPU kernels with: hand-computed values, and backward passes against
// finite differences of their forward passes.
//
//===----------------------------------------------------------------------===//

#include "cuda/Reference.h"

#include "TestUtil.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace titan::rt::cuda;
using namespace titan::rt::cuda::test;

namespace ref = titan::rt::cuda::reference;

namespace {

TEST(CudaReferenceTest, RmsNormHandValues) {
  // Row [3, 4]: mean square 12.5; row [1, -1]: 1.
  std::vector<double> x = {3, 4, 1, -1}, weight = {1, 2}, y(4);
  ref::rmsNormForward(x.data(), weight.data(), y.data(), 2, 2, 0.0);
  const double r = 1 / std::sqrt(12.5);
  EXPECT_NEAR(y[0], 3 * r, 1e-15);
  EXPECT_NEAR(y[1], 8 * r, 1e-15);
  EXPECT_DOUBLE_EQ(y[2], 1);
  EXPECT_DOUBLE_EQ(y[3], -2);
}

TEST(CudaReferenceTest, RmsNormBackwardMatchesFiniteDifferences) {
  const int64_t rows = 3, cols = 7;
  const double eps = 1e-5;
  std::vector<double> x = randomValues(rows * cols, 1);
  std::vector<double> weight = randomValues(cols, 2, 2.0);
  std::vector<double> dy = randomValues(rows * cols, 3);
  std::vector<double> dx(x.size()), dweight(cols), y(x.size());
  ref::rmsNormBackward(x.data(), weight.data(), dy.data(), dx.data(),
                       dweight.data(), rows, cols, eps);
  auto loss = [&] {
    ref::rmsNormForward(x.data(), weight.data(), y.data(), rows, cols, eps);
    return dot(y, dy);
  };
  EXPECT_LT(relativeError(dx, numericGradient(x, loss)), 1e-7);
  EXPECT_LT(relativeError(dweight, numericGradient(weight, loss)), 1e-7);
}

TEST(CudaReferenceTest, RopeRotatesThePairsOfEachStyle) {
  // head_dim 4, one position with angles a (pair 0) and b (pair 1).
  const double a = 0.3, b = -1.1;
  std::vector<double> cos = {std::cos(a), std::cos(b)};
  std::vector<double> sin = {std::sin(a), std::sin(b)};
  std::vector<double> x = {1, 2, 3, 4}, out(4);
  // Interleaved: pairs (x0, x1), (x2, x3).
  ref::rope(x.data(), cos.data(), sin.data(), out.data(), 1, 1, 1, 4,
            RopeStyle::Interleaved, false);
  EXPECT_NEAR(out[0], 1 * std::cos(a) - 2 * std::sin(a), 1e-15);
  EXPECT_NEAR(out[1], 1 * std::sin(a) + 2 * std::cos(a), 1e-15);
  EXPECT_NEAR(out[2], 3 * std::cos(b) - 4 * std::sin(b), 1e-15);
  EXPECT_NEAR(out[3], 3 * std::sin(b) + 4 * std::cos(b), 1e-15);
  // Half: pairs (x0, x2), (x1, x3).
  ref::rope(x.data(), cos.data(), sin.data(), out.data(), 1, 1, 1, 4,
            RopeStyle::Half, false);
  EXPECT_NEAR(out[0], 1 * std::cos(a) - 3 * std::sin(a), 1e-15);
  EXPECT_NEAR(out[2], 1 * std::sin(a) + 3 * std::cos(a), 1e-15);
  EXPECT_NEAR(out[1], 2 * std::cos(b) - 4 * std::sin(b), 1e-15);
  EXPECT_NEAR(out[3], 2 * std::sin(b) + 4 * std::cos(b), 1e-15);
}

TEST(CudaReferenceTest, RopeBackwardIsTheAdjointAndTheInverse) {
  const int64_t batch = 2, seq = 5, heads = 3, headDim = 8, half = 4;
  std::vector<double> angles = randomValues(seq * half, 4, 3.0);
  std::vector<double> cos(angles.size()), sin(angles.size());
  for (size_t i = 0; i < angles.size(); ++i) {
    cos[i] = std::cos(angles[i]);
    sin[i] = std::sin(angles[i]);
  }
  const int64_t count = batch * seq * heads * headDim;
  std::vector<double> x = randomValues(count, 5), g = randomValues(count, 6);
  for (RopeStyle style : {RopeStyle::Interleaved, RopeStyle::Half}) {
    std::vector<double> forward(count), backward(count), roundTrip(count);
    ref::rope(x.data(), cos.data(), sin.data(), forward.data(), batch, seq,
              heads, headDim, style, false);
    ref::rope(g.data(), cos.data(), sin.data(), backward.data(), batch, seq,
              heads, headDim, style, true);
    // <rope(x), g> = <x, rope^T(g)>: the backward is the cotangent map.
    EXPECT_NEAR(dot(forward, g), dot(x, backward), 1e-12);
    ref::rope(forward.data(), cos.data(), sin.data(), roundTrip.data(), batch,
              seq, heads, headDim, style, true);
    EXPECT_LT(relativeError(roundTrip, x), 1e-14);
  }
}

TEST(CudaReferenceTest, SwiGluHandValueAndFusedLayoutGradients) {
  std::vector<double> gate = {0.0, 2.0}, up = {5.0, 3.0}, out(2);
  ref::swiGluForward(gate.data(), up.data(), out.data(), 1, 2, 2);
  EXPECT_EQ(out[0], 0.0); // silu(0) = 0
  EXPECT_NEAR(out[1], 2.0 / (1 + std::exp(-2.0)) * 3.0, 1e-15);

  // One [rows, 2 cols] buffer: gate in the first half of each row, up in
  // the second (a fused x [w1; w3] GEMM).
  const int64_t rows = 3, cols = 4, stride = 2 * cols;
  std::vector<double> fused = randomValues(rows * stride, 7, 3.0);
  std::vector<double> dout = randomValues(rows * cols, 8);
  std::vector<double> grads(fused.size(), -7.0), result(rows * cols);
  ref::swiGluBackward(fused.data(), fused.data() + cols, dout.data(),
                      grads.data(), grads.data() + cols, rows, cols, stride);
  auto loss = [&] {
    ref::swiGluForward(fused.data(), fused.data() + cols, result.data(), rows,
                       cols, stride);
    return dot(result, dout);
  };
  EXPECT_LT(relativeError(grads, numericGradient(fused, loss)), 1e-7);
}

TEST(CudaReferenceTest, SoftmaxHandValuesAndGradient) {
  std::vector<double> x = {0, std::log(3.0), -INFINITY, 0}, y(4);
  ref::softmaxForward(x.data(), y.data(), 2, 2);
  EXPECT_NEAR(y[0], 0.25, 1e-15);
  EXPECT_NEAR(y[1], 0.75, 1e-15);
  EXPECT_EQ(y[2], 0.0); // a masked element
  EXPECT_EQ(y[3], 1.0);

  const int64_t rows = 4, cols = 9;
  std::vector<double> logits = randomValues(rows * cols, 9, 4.0);
  std::vector<double> dy = randomValues(rows * cols, 10);
  std::vector<double> probabilities(logits.size()), dx(logits.size());
  ref::softmaxForward(logits.data(), probabilities.data(), rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      sum += probabilities[r * cols + c];
    EXPECT_NEAR(sum, 1.0, 1e-15);
  }
  ref::softmaxBackward(probabilities.data(), dy.data(), dx.data(), rows, cols);
  std::vector<double> y2(logits.size());
  auto loss = [&] {
    ref::softmaxForward(logits.data(), y2.data(), rows, cols);
    return dot(y2, dy);
  };
  EXPECT_LT(relativeError(dx, numericGradient(logits, loss)), 1e-7);
}

} // namespace
