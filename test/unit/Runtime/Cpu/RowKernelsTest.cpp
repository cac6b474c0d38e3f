//===- RowKernelsTest.cpp - Tests of the CPU's RMSNorm and cross-entropy --===//

#include "core/ComputeBackend.h"
#include "core/LowPrecision.h"
#include "cpu/CpuKernels.h"

#include "titan/Runtime/titanrt.h"

#include "TestUtil.h"

#include <limits>

using namespace titan::rt;
using namespace titan::rt::cpu;
using namespace titan::rt::cpu::test;

namespace {

/// RMSNorm's forward and backward in double.
struct RmsNormReference {
  std::vector<double> y, dx, dweight;
};

RmsNormReference referenceRmsNorm(const std::vector<double> &x,
                                  const std::vector<double> &weight,
                                  const std::vector<double> &dy, int64_t rows,
                                  int64_t cols, double eps) {
  RmsNormReference result{std::vector<double>(rows * cols),
                          std::vector<double>(rows * cols),
                          std::vector<double>(cols, 0.0)};
  for (int64_t r = 0; r < rows; ++r) {
    const double *xs = &x[r * cols], *gs = &dy[r * cols];
    double squares = 0, dot = 0;
    for (int64_t c = 0; c < cols; ++c) {
      squares += xs[c] * xs[c];
      dot += gs[c] * weight[c] * xs[c];
    }
    double scale = 1.0 / std::sqrt(squares / cols + eps);
    for (int64_t c = 0; c < cols; ++c) {
      result.y[r * cols + c] = xs[c] * scale * weight[c];
      result.dx[r * cols + c] =
          scale * (gs[c] * weight[c] - xs[c] * scale * scale * dot / cols);
      result.dweight[c] += gs[c] * xs[c] * scale;
    }
  }
  return result;
}

/// Doubles of float values.
std::vector<double> toDouble(const std::vector<float> &values) {
  return std::vector<double>(values.begin(), values.end());
}

/// bf16 copies of float values, and those values rounded.
std::vector<uint16_t> toBf16(std::vector<float> &values) {
  std::vector<uint16_t> stored(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    stored[i] = floatToBf16(values[i]);
    values[i] = bf16ToFloat(stored[i]);
  }
  return stored;
}

/// Floats of bf16 values.
std::vector<float> fromBf16(const std::vector<uint16_t> &stored) {
  std::vector<float> values(stored.size());
  for (size_t i = 0; i < stored.size(); ++i)
    values[i] = bf16ToFloat(stored[i]);
  return values;
}

// More rows than titanrt.h's partials (300 > 256): rows 256.. add to the
// first partials again.
constexpr int64_t kRows = 300, kCols = 37;
constexpr double kEps = 1e-5;

TEST(RowKernelsTest, RmsNormF32MatchesDoubleAndThreads) {
  std::vector<float> x = randomValues<float>(kRows * kCols, 1, 2.0);
  std::vector<float> weight = randomValues<float>(kCols, 2);
  std::vector<float> dy = randomValues<float>(kRows * kCols, 3);
  RmsNormReference expected = referenceRmsNorm(
      toDouble(x), toDouble(weight), toDouble(dy), kRows, kCols, kEps);
  std::vector<float> workspace(
      titanrt_rms_norm_grad_workspace_bytes(kRows, kCols) / sizeof(float));
  ASSERT_EQ(workspace.size(), size_t(256 * kCols));
  std::vector<float> firstY, firstDx, firstDw;
  for (int numThreads : threadCounts()) {
    std::vector<float> y(kRows * kCols), dx(kRows * kCols), dw(kCols);
    Status status =
        rmsNorm(pool(numThreads), TITANRT_F32, TITANRT_F32, x.data(),
                weight.data(), y.data(), kRows, kCols, kEps);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    status =
        rmsNormGrad(pool(numThreads), TITANRT_F32, TITANRT_F32, x.data(),
                    weight.data(), dy.data(), /*addend=*/nullptr, dx.data(),
                    dw.data(), workspace.data(), kRows, kCols, kEps);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    EXPECT_LE(relativeError(y, expected.y), 1e-6);
    EXPECT_LE(relativeError(dx, expected.dx), 1e-6);
    EXPECT_LE(relativeError(dw, expected.dweight), 1e-6);
    if (firstY.empty()) {
      firstY = y;
      firstDx = dx;
      firstDw = dw;
    }
    EXPECT_EQ(y, firstY) << numThreads << " threads";
    EXPECT_EQ(dx, firstDx) << numThreads << " threads";
    EXPECT_EQ(dw, firstDw) << numThreads << " threads";
  }
}

TEST(RowKernelsTest, RmsNormBf16DataF32Weight) {
  std::vector<float> x = randomValues<float>(kRows * kCols, 4, 2.0);
  std::vector<float> weight = randomValues<float>(kCols, 5);
  std::vector<float> dy = randomValues<float>(kRows * kCols, 6);
  std::vector<uint16_t> xStored = toBf16(x), dyStored = toBf16(dy);
  RmsNormReference expected = referenceRmsNorm(
      toDouble(x), toDouble(weight), toDouble(dy), kRows, kCols, kEps);
  std::vector<uint16_t> y(kRows * kCols), dx(kRows * kCols);
  std::vector<float> dw(kCols), workspace(256 * kCols);
  ASSERT_TRUE(rmsNorm(pool(2), TITANRT_BF16, TITANRT_F32, xStored.data(),
                      weight.data(), y.data(), kRows, kCols, kEps)
                  .ok());
  ASSERT_TRUE(rmsNormGrad(pool(2), TITANRT_BF16, TITANRT_F32, xStored.data(),
                          weight.data(), dyStored.data(), /*addend=*/nullptr,
                          dx.data(), dw.data(), workspace.data(), kRows, kCols,
                          kEps)
                  .ok());
  // Computed in float32 from the bf16 inputs, rounded once to bf16.
  EXPECT_LE(relativeError(fromBf16(y), expected.y), 1.0 / 256);
  EXPECT_LE(relativeError(fromBf16(dx), expected.dx), 1.0 / 256);
  EXPECT_LE(relativeError(dw, expected.dweight), 1e-5);
}

TEST(RowKernelsTest, RmsNormGradAddsTheAddend) {
  // The residual stream's cotangent added to dx: from a buffer of its own,
  // and in place (dx holds it on entry); the weight gradient is unchanged.
  std::vector<float> x = randomValues<float>(kRows * kCols, 7, 2.0);
  std::vector<float> weight = randomValues<float>(kCols, 8);
  std::vector<float> dy = randomValues<float>(kRows * kCols, 9);
  std::vector<float> addend = randomValues<float>(kRows * kCols, 10);
  RmsNormReference expected = referenceRmsNorm(
      toDouble(x), toDouble(weight), toDouble(dy), kRows, kCols, kEps);
  for (size_t i = 0; i < expected.dx.size(); ++i)
    expected.dx[i] += addend[i];
  std::vector<float> workspace(256 * kCols), dw(kCols);
  for (bool inPlace : {false, true}) {
    SCOPED_TRACE(inPlace ? "in place" : "separate");
    std::vector<float> dx = inPlace ? addend : std::vector<float>(x.size());
    Status status =
        rmsNormGrad(pool(2), TITANRT_F32, TITANRT_F32, x.data(), weight.data(),
                    dy.data(), inPlace ? dx.data() : addend.data(), dx.data(),
                    dw.data(), workspace.data(), kRows, kCols, kEps);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    EXPECT_LE(relativeError(dx, expected.dx), 1e-6);
    EXPECT_LE(relativeError(dw, expected.dweight), 1e-6);
  }
  // An addend that shares some but not all of dx's bytes.
  Status overlap = rmsNormGrad(pool(1), TITANRT_F32, TITANRT_F32, x.data(),
                               weight.data(), dy.data(), x.data() + 1, x.data(),
                               dw.data(), workspace.data(), kRows, kCols, kEps);
  EXPECT_EQ(overlap.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(overlap.getMessage(),
            "rms_norm_grad: the addend overlaps the output without being it");
}

TEST(RowKernelsTest, RmsNormRefusesOtherDtypes) {
  std::vector<double> x(4), weight(2), y(4);
  Status status = rmsNorm(pool(1), TITANRT_F64, TITANRT_F64, x.data(),
                          weight.data(), y.data(), 2, 2, kEps);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(), "rms_norm: dtype f64 is neither f32 nor bf16");
}

/// Cross-entropy's mean loss and cotangent in double.
struct LossReference {
  double loss;
  std::vector<double> dlogits;
};

LossReference referenceLoss(const std::vector<double> &logits,
                            const std::vector<int64_t> &labels, int64_t vocab,
                            int64_t ignoreIndex, double gradLoss) {
  int64_t rows = labels.size();
  std::vector<double> lse(rows);
  double total = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < vocab; ++c)
      max = std::max(max, logits[r * vocab + c]);
    for (int64_t c = 0; c < vocab; ++c)
      sum += std::exp(logits[r * vocab + c] - max);
    lse[r] = max + std::log(sum);
    if (labels[r] == ignoreIndex)
      continue;
    total += lse[r] - logits[r * vocab + labels[r]];
    ++count;
  }
  LossReference result{count ? total / count : NAN,
                       std::vector<double>(rows * vocab, 0.0)};
  for (int64_t r = 0; r < rows && count; ++r) {
    if (labels[r] == ignoreIndex)
      continue;
    for (int64_t c = 0; c < vocab; ++c)
      result.dlogits[r * vocab + c] =
          gradLoss *
          (std::exp(logits[r * vocab + c] - lse[r]) - (c == labels[r])) / count;
  }
  return result;
}

constexpr int64_t kLossRows = 70, kVocab = 301;

/// Labels in [0, kVocab), every fifth row `ignoreIndex`.
std::vector<int64_t> makeLabels(int64_t ignoreIndex) {
  std::vector<int64_t> labels(kLossRows);
  for (int64_t r = 0; r < kLossRows; ++r)
    labels[r] = r % 5 == 4 ? ignoreIndex : (r * 37) % kVocab;
  return labels;
}

TEST(RowKernelsTest, CrossEntropyF32MatchesDoubleAndThreads) {
  std::vector<float> logits = randomValues<float>(kLossRows * kVocab, 7, 8.0);
  std::vector<int64_t> labels = makeLabels(-100);
  float gradLoss = 0.75f;
  LossReference expected =
      referenceLoss(toDouble(logits), labels, kVocab, -100, gradLoss);
  std::vector<float> workspace(
      titanrt_cross_entropy_workspace_bytes(kLossRows) / sizeof(float));
  LossShape shape{kLossRows, kVocab, -100, TITANRT_I64};
  float firstLoss = 0;
  std::vector<float> firstGrad;
  for (int numThreads : threadCounts()) {
    float loss = 0;
    std::vector<float> dlogits(kLossRows * kVocab);
    Status status =
        crossEntropy(pool(numThreads), TITANRT_F32, shape, logits.data(),
                     labels.data(), &loss, workspace.data());
    ASSERT_TRUE(status.ok()) << status.getMessage();
    status = crossEntropyGrad(pool(numThreads), TITANRT_F32, shape,
                              logits.data(), labels.data(), &gradLoss,
                              dlogits.data(), workspace.data());
    ASSERT_TRUE(status.ok()) << status.getMessage();
    EXPECT_NEAR(loss, expected.loss, 1e-6 * expected.loss);
    EXPECT_LE(relativeError(dlogits, expected.dlogits), 1e-5);
    if (firstGrad.empty()) {
      firstLoss = loss;
      firstGrad = dlogits;
    }
    EXPECT_EQ(loss, firstLoss) << numThreads << " threads";
    EXPECT_EQ(dlogits, firstGrad) << numThreads << " threads";
  }
  // Ignored rows have a zero cotangent.
  for (int64_t c = 0; c < kVocab; ++c)
    EXPECT_EQ(firstGrad[4 * kVocab + c], 0.0f);
}

TEST(RowKernelsTest, CrossEntropyBf16LogitsI32LabelsInPlace) {
  std::vector<float> logits = randomValues<float>(kLossRows * kVocab, 8, 8.0);
  std::vector<uint16_t> stored = toBf16(logits);
  std::vector<int64_t> labels = makeLabels(7);
  std::vector<int32_t> narrowLabels(labels.begin(), labels.end());
  float gradLoss = 1.0f;
  LossReference expected =
      referenceLoss(toDouble(logits), labels, kVocab, 7, gradLoss);
  std::vector<float> workspace(4 * kLossRows + 2);
  LossShape shape{kLossRows, kVocab, 7, TITANRT_I32};
  float loss = 0;
  ASSERT_TRUE(crossEntropy(pool(2), TITANRT_BF16, shape, stored.data(),
                           narrowLabels.data(), &loss, workspace.data())
                  .ok());
  EXPECT_NEAR(loss, expected.loss, 1e-6 * expected.loss);
  // The cotangent over the logits' own buffer (titanrt.h allows it).
  ASSERT_TRUE(crossEntropyGrad(pool(2), TITANRT_BF16, shape, stored.data(),
                               narrowLabels.data(), &gradLoss, stored.data(),
                               workspace.data())
                  .ok());
  EXPECT_LE(relativeError(fromBf16(stored), expected.dlogits), 1.0 / 128);
}

TEST(RowKernelsTest, CrossEntropyEveryLabelIgnored) {
  // As PyTorch: a NaN loss and a zero cotangent.
  std::vector<float> logits = randomValues<float>(3 * 4, 9);
  std::vector<int64_t> labels = {-100, -100, -100};
  std::vector<float> workspace(4 * 3 + 2), dlogits(3 * 4, 1.0f);
  LossShape shape{3, 4, -100, TITANRT_I64};
  float loss = 0, gradLoss = 1.0f;
  ASSERT_TRUE(crossEntropy(pool(1), TITANRT_F32, shape, logits.data(),
                           labels.data(), &loss, workspace.data())
                  .ok());
  EXPECT_TRUE(std::isnan(loss));
  ASSERT_TRUE(crossEntropyGrad(pool(1), TITANRT_F32, shape, logits.data(),
                               labels.data(), &gradLoss, dlogits.data(),
                               workspace.data())
                  .ok());
  EXPECT_EQ(dlogits, std::vector<float>(3 * 4, 0.0f));
}

TEST(RowKernelsTest, CrossEntropyNamesALabelOutsideTheVocabulary) {
  std::vector<float> logits(2 * 4), workspace(4 * 2 + 2);
  std::vector<int64_t> labels = {1, 4};
  float loss = -1.0f;
  Status status =
      crossEntropy(pool(1), TITANRT_F32, {2, 4, -100, TITANRT_I64},
                   logits.data(), labels.data(), &loss, workspace.data());
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(status.getMessage(),
            "cross_entropy: label 4 of row 1 is outside the vocabulary [0, 4) "
            "and is not ignore_index -100");
  EXPECT_EQ(loss, -1.0f) << "nothing is written";
}

} // namespace
