//===- LossReferenceTest.cpp - references of the loss kernels -------------===//
//
// The cross-entropy in its vocabulary-parallel steps equals the naive
// log-softmax loss, sharded or not, and its backward the finite
// differences; the embedding gradient a hand-computed scatter-add; one
// AdamW step a hand computation (and the scalars the kernel receives).
//
//===----------------------------------------------------------------------===//

#include "cuda/Reference.h"

#include "TestUtil.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::test;

namespace ref = titan::rt::cuda::reference;

namespace {

/// The whole loss through partials and finish on unsharded logits.
double crossEntropy(const std::vector<double> &logits,
                    const std::vector<int64_t> &labels, int64_t vocab,
                    std::vector<double> *lse = nullptr,
                    double *count = nullptr) {
  const int64_t rows = int64_t(labels.size());
  CrossEntropyShape shape{rows, vocab, 0, -100, TITANRT_I64};
  std::vector<double> max(rows), sum(rows), target(rows), rowLse(rows);
  ref::crossEntropyPartials(shape, logits.data(), labels.data(), max.data(),
                            sum.data(), target.data());
  double loss, validCount;
  ref::crossEntropyFinish(shape, max.data(), sum.data(), target.data(),
                          labels.data(), loss, rowLse.data(), validCount);
  if (lse)
    *lse = rowLse;
  if (count)
    *count = validCount;
  return loss;
}

TEST(CudaReferenceTest, CrossEntropyMatchesLogSoftmax) {
  const int64_t rows = 5, vocab = 16;
  std::vector<double> logits = randomValues(rows * vocab, 31, 5.0);
  std::vector<int64_t> labels = {3, -100, 15, 0, 7};
  double expected = 0;
  for (int64_t r : {0, 2, 3, 4}) {
    double sum = 0;
    for (int64_t c = 0; c < vocab; ++c)
      sum += std::exp(logits[r * vocab + c]);
    expected += std::log(sum) - logits[r * vocab + labels[r]];
  }
  double count;
  EXPECT_NEAR(crossEntropy(logits, labels, vocab, nullptr, &count),
              expected / 4, 1e-13);
  EXPECT_EQ(count, 4);
  // Every label ignored: NaN, as PyTorch.
  EXPECT_TRUE(
      std::isnan(crossEntropy(logits, {-100, -100, -100, -100, -100}, vocab)));
}

TEST(CudaReferenceTest, VocabParallelCrossEntropyEqualsUnsharded) {
  const int64_t rows = 6, vocab = 16;
  std::vector<double> logits = randomValues(rows * vocab, 32, 6.0);
  std::vector<int64_t> labels = {3, 15, -100, 5, 11, 10};
  std::vector<double> lse;
  const double loss = crossEntropy(logits, labels, vocab, &lse);

  // Three tensor-parallel ranks with uneven shards of the vocabulary.
  const std::vector<std::pair<int64_t, int64_t>> shards = {
      {0, 5}, {5, 6}, {11, 5}};
  std::vector<std::vector<double>> max, sum, target, local;
  for (auto [start, size] : shards) {
    std::vector<double> columns(static_cast<size_t>(rows * size));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < size; ++c)
        columns[static_cast<size_t>(r * size + c)] =
            logits[static_cast<size_t>(r * vocab + start + c)];
    CrossEntropyShape shape{rows, size, start, -100, TITANRT_I64};
    max.emplace_back(rows);
    sum.emplace_back(rows);
    target.emplace_back(rows);
    ref::crossEntropyPartials(shape, columns.data(), labels.data(),
                              max.back().data(), sum.back().data(),
                              target.back().data());
    local.push_back(std::move(columns));
  }
  // All-reduce MAX, rescale, all-reduce SUM (of the sums and targets).
  std::vector<double> globalMax(rows, -INFINITY), globalSum(rows, 0),
      globalTarget(rows, 0);
  for (size_t rank = 0; rank < shards.size(); ++rank)
    for (int64_t r = 0; r < rows; ++r)
      globalMax[r] = std::max(globalMax[r], max[rank][r]);
  for (size_t rank = 0; rank < shards.size(); ++rank) {
    ref::crossEntropyRescale(max[rank].data(), globalMax.data(),
                             sum[rank].data(), rows);
    for (int64_t r = 0; r < rows; ++r) {
      globalSum[r] += sum[rank][r];
      globalTarget[r] += target[rank][r];
    }
  }
  CrossEntropyShape whole{rows, vocab, 0, -100, TITANRT_I64};
  std::vector<double> shardedLse(rows);
  double shardedLoss, count;
  ref::crossEntropyFinish(whole, globalMax.data(), globalSum.data(),
                          globalTarget.data(), labels.data(), shardedLoss,
                          shardedLse.data(), count);
  EXPECT_NEAR(shardedLoss, loss, 1e-13);
  EXPECT_LT(relativeError(shardedLse, lse), 1e-14);

  // Each rank's backward is its columns of the unsharded one.
  std::vector<double> dlogits(logits.size());
  ref::crossEntropyBackward(whole, logits.data(), labels.data(), lse.data(),
                            1.0, count, dlogits.data());
  for (size_t rank = 0; rank < shards.size(); ++rank) {
    auto [start, size] = shards[rank];
    CrossEntropyShape shape{rows, size, start, -100, TITANRT_I64};
    std::vector<double> dlocal(static_cast<size_t>(rows * size)),
        expected(dlocal.size());
    ref::crossEntropyBackward(shape, local[rank].data(), labels.data(),
                              shardedLse.data(), 1.0, count, dlocal.data());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < size; ++c)
        expected[static_cast<size_t>(r * size + c)] =
            dlogits[static_cast<size_t>(r * vocab + start + c)];
    EXPECT_LT(relativeError(dlocal, expected), 1e-14);
  }
}

TEST(CudaReferenceTest, CrossEntropyBackwardMatchesFiniteDifferences) {
  const int64_t rows = 4, vocab = 9;
  std::vector<double> logits = randomValues(rows * vocab, 33, 3.0);
  std::vector<int64_t> labels = {8, 0, -100, 4};
  std::vector<double> lse;
  double count;
  crossEntropy(logits, labels, vocab, &lse, &count);
  const double gradLoss = 0.7;
  std::vector<double> dlogits(logits.size());
  ref::crossEntropyBackward({rows, vocab, 0, -100, TITANRT_I64}, logits.data(),
                            labels.data(), lse.data(), gradLoss, count,
                            dlogits.data());
  std::vector<double> numeric = numericGradient(
      logits, [&] { return gradLoss * crossEntropy(logits, labels, vocab); });
  EXPECT_LT(relativeError(dlogits, numeric), 1e-7);
  for (int64_t c = 0; c < vocab; ++c)
    EXPECT_EQ(dlogits[2 * vocab + c], 0.0); // the ignored row
}

TEST(CudaReferenceTest, EmbeddingScatterAddsInPositionOrder) {
  // Ids 2, 0, 2, 5 (out of range), -1 (out of range); vocab 4, dim 2.
  std::vector<int64_t> ids = {2, 0, 2, 5, -1};
  std::vector<double> grad = {1, 2, 10, 20, 100, 200, 7, 7, 9, 9};
  std::vector<double> out(8, -1.0);
  ref::embeddingBackward(ids.data(), grad.data(), out.data(), 5, 4, 2);
  EXPECT_EQ(out, (std::vector<double>{10, 20, 0, 0, 101, 202, 0, 0}));

  std::vector<double> table = {0, 1, 2, 3, 4, 5, 6, 7}, rows(10, -1.0);
  ref::embeddingForward(table.data(), ids.data(), rows.data(), 5, 4, 2);
  EXPECT_EQ(rows, (std::vector<double>{4, 5, 0, 1, 4, 5, 0, 0, 0, 0}));
}

TEST(CudaReferenceTest, AdamWOneStepByHand) {
  // p = 1, g = 0.5, fresh moments, lr 0.1, betas (0.9, 0.999), eps 1e-8,
  // weight decay 0.01, first step (t = 1):
  //   p * (1 - 0.1 * 0.01) = 0.999
  //   m = 0.05, v = 0.00025
  //   step size 0.1 / (1 - 0.9) = 1; sqrt(1 - 0.999) = 0.0316227766...
  //   denom = sqrt(0.00025) / 0.0316227766 + 1e-8 = 0.5 + 1e-8
  //   p = 0.999 - 0.05 / (0.5 + 1e-8) = 0.899000002 (to 1e-9)
  AdamWHyperparameters hyper;
  hyper.lr = 0.1;
  hyper.beta1 = 0.9;
  hyper.beta2 = 0.999;
  hyper.eps = 1e-8;
  hyper.weightDecay = 0.01;
  hyper.step = 0;
  double param = 1, grad = 0.5, m = 0, v = 0;
  ref::adamW(hyper, 1.0, &param, &grad, &m, &v, 1);
  EXPECT_NEAR(m, 0.05, 1e-15);
  EXPECT_NEAR(v, 0.00025, 1e-15);
  EXPECT_NEAR(param, 0.999 - 0.05 / (0.5 + 1e-8), 1e-15);
  EXPECT_NEAR(param, 0.899000002, 1e-9);

  // The scalars the kernel multiplies by.
  AdamWScalars s = adamWScalars(hyper);
  EXPECT_FLOAT_EQ(s.decay, 0.999f);
  EXPECT_FLOAT_EQ(s.stepSize, 1.0f);
  EXPECT_FLOAT_EQ(s.correction2Sqrt, 0.031622776f);
  EXPECT_FLOAT_EQ(s.oneMinusBeta1, 0.1f);
  EXPECT_FLOAT_EQ(s.oneMinusBeta2, 0.001f);

  // The second step continues from the moments with t = 2; a gradient
  // scale of 0.5 on a gradient of 1 is the same step.
  hyper.step = 1;
  double scaled = param, one = 1.0, m2 = m, v2 = v;
  ref::adamW(hyper, 1.0, &param, &grad, &m, &v, 1);
  ref::adamW(hyper, 0.5, &scaled, &one, &m2, &v2, 1);
  EXPECT_EQ(param, scaled);
  const double mExpected = 0.9 * 0.05 + 0.1 * 0.5;
  const double vExpected = 0.999 * 0.00025 + 0.001 * 0.25;
  EXPECT_NEAR(m, mExpected, 1e-15);
  EXPECT_NEAR(v, vExpected, 1e-15);
  EXPECT_FLOAT_EQ(adamWScalars(hyper).stepSize, float(0.1 / (1 - 0.81)));
}

TEST(CudaReferenceTest, AdamWHyperparameterChecks) {
  AdamWHyperparameters good;
  EXPECT_TRUE(checkAdamWHyperparameters(good).ok());
  AdamWHyperparameters hyper = good;
  hyper.beta2 = 1.0;
  EXPECT_EQ(checkAdamWHyperparameters(hyper).getCode(),
            TITANRT_ERROR_INVALID_ARGUMENT);
  hyper = good;
  hyper.eps = 0;
  EXPECT_FALSE(checkAdamWHyperparameters(hyper).ok());
  hyper = good;
  hyper.step = -1;
  EXPECT_NE(checkAdamWHyperparameters(hyper).getMessage().find("step = -1"),
            std::string::npos);
}

} // namespace
