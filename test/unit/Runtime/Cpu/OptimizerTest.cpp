//===- OptimizerTest.cpp - Tests of the CPU's AdamW -----------------------===//

#include "core/ComputeBackend.h"
#include "core/LowPrecision.h"
#include "cpu/CpuKernels.h"

#include "titan/Runtime/titanrt.h"

#include "TestUtil.h"

#include <cmath>

using namespace titan::rt;
using namespace titan::rt::cpu;
using namespace titan::rt::cpu::test;

namespace {

/// More elements than one parallel range holds.
constexpr int64_t kNumel = 40000;

/// One parameter's tensors and step.
struct AdamWCase {
  std::vector<float> param = randomValues<float>(kNumel, 1);
  std::vector<float> grad = randomValues<float>(kNumel, 2, 0.1);
  std::vector<float> expAvg = randomValues<float>(kNumel, 3, 0.01);
  std::vector<float> expAvgSq = randomValues<float>(kNumel, 4, 1e-4);
  float lr = 3e-3f, step = 5, gradScale = 0.7f;

  AdamWCase() {
    for (float &value : expAvgSq)
      value = std::abs(value);
  }

  /// The tensors, updated in place.
  titanrt_adamw_tensor tensor() {
    titanrt_adamw_tensor t = {};
    t.param = t.param_out = param.data();
    t.grad = grad.data();
    t.exp_avg = t.exp_avg_out = expAvg.data();
    t.exp_avg_sq = t.exp_avg_sq_out = expAvgSq.data();
    t.numel = kNumel;
    t.grad_dtype = TITANRT_F32;
    return t;
  }

  /// The step's scalars (clipping with `scaled`).
  AdamWCall call(bool scaled) {
    AdamWCall c;
    c.lr = &lr;
    c.step = &step;
    c.gradScale = scaled ? &gradScale : nullptr;
    return c;
  }
};

TEST(OptimizerTest, AdamWMatchesTorchFormulaInPlaceAndOnAnyThreads) {
  AdamWCase reference;
  // torch.optim.AdamW in double, from the same state, t = step + 1.
  const double t = 6, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1;
  std::vector<double> param, m, v;
  for (int64_t i = 0; i < kNumel; ++i) {
    double g = double(reference.grad[i]) * double(reference.gradScale);
    double mi = beta1 * reference.expAvg[i] + (1 - beta1) * g;
    double vi = beta2 * reference.expAvgSq[i] + (1 - beta2) * g * g;
    double p = reference.param[i] * (1 - reference.lr * wd);
    p -= reference.lr / (1 - std::pow(beta1, t)) * mi /
         (std::sqrt(vi) / std::sqrt(1 - std::pow(beta2, t)) + eps);
    param.push_back(p);
    m.push_back(mi);
    v.push_back(vi);
  }
  std::vector<float> first;
  for (int threads : threadCounts()) {
    AdamWCase updated;
    ASSERT_TRUE(
        adamW(pool(threads), {updated.tensor()}, updated.call(true)).ok());
    EXPECT_LT(relativeError(updated.param, param), 1e-6);
    EXPECT_LT(relativeError(updated.expAvg, m), 1e-6);
    EXPECT_LT(relativeError(updated.expAvgSq, v), 1e-6);
    if (first.empty())
      first = updated.param;
    EXPECT_EQ(updated.param, first) << threads << " threads";
  }
  // Into other buffers: the same values, the inputs untouched; with a
  // bf16 copy of the parameter, exactly its rounding.
  AdamWCase in, out;
  std::vector<uint16_t> copy(kNumel);
  titanrt_adamw_tensor into = in.tensor();
  into.param_out = out.param.data();
  into.exp_avg_out = out.expAvg.data();
  into.exp_avg_sq_out = out.expAvgSq.data();
  into.param_copy_out = copy.data();
  ASSERT_TRUE(adamW(pool(2), {into}, in.call(true)).ok());
  EXPECT_EQ(out.param, first);
  EXPECT_EQ(in.param, AdamWCase().param);
  for (int64_t i = 0; i < kNumel; ++i)
    ASSERT_EQ(copy[i], floatToBf16(first[i])) << i;
}

TEST(OptimizerTest, AdamWBf16GradientsAreTheirValues) {
  AdamWCase widened, narrow;
  std::vector<uint16_t> stored(kNumel);
  for (int64_t i = 0; i < kNumel; ++i) {
    stored[i] = floatToBf16(widened.grad[i]);
    widened.grad[i] = bf16ToFloat(stored[i]);
  }
  ASSERT_TRUE(adamW(pool(2), {widened.tensor()}, widened.call(false)).ok());
  titanrt_adamw_tensor t = narrow.tensor();
  t.grad_dtype = TITANRT_BF16;
  t.grad = stored.data();
  ASSERT_TRUE(adamW(pool(2), {t}, narrow.call(false)).ok());
  EXPECT_EQ(narrow.param, widened.param);
  EXPECT_EQ(narrow.expAvgSq, widened.expAvgSq);
}

TEST(OptimizerTest, AdamWBf16ParametersRoundTheFloatUpdateOnce) {
  // Pure bf16 training: the parameter and both moments are bf16, computed
  // as the f32 update of their values (torch's fused AdamW), each result
  // rounded once to nearest even; bf16 and f32 gradients.
  AdamWCase widened;
  auto narrow = [](std::vector<float> &values) {
    std::vector<uint16_t> stored(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      stored[i] = floatToBf16(values[i]);
      values[i] = bf16ToFloat(stored[i]);
    }
    return stored;
  };
  std::vector<uint16_t> param = narrow(widened.param),
                        grad = narrow(widened.grad),
                        expAvg = narrow(widened.expAvg),
                        expAvgSq = narrow(widened.expAvgSq);
  ASSERT_TRUE(adamW(pool(2), {widened.tensor()}, widened.call(true)).ok());
  for (int32_t gradDtype : {TITANRT_BF16, TITANRT_F32}) {
    std::vector<uint16_t> p = param, m = expAvg, v = expAvgSq;
    std::vector<float> gradValues = widened.grad;
    titanrt_adamw_tensor t = {};
    t.param = t.param_out = p.data();
    t.grad = gradDtype == TITANRT_BF16 ? static_cast<const void *>(grad.data())
                                       : gradValues.data();
    t.exp_avg = t.exp_avg_out = m.data();
    t.exp_avg_sq = t.exp_avg_sq_out = v.data();
    t.numel = kNumel;
    t.grad_dtype = gradDtype;
    t.param_dtype = TITANRT_BF16;
    ASSERT_TRUE(adamW(pool(3), {t}, widened.call(true)).ok());
    int64_t moved = 0;
    for (int64_t i = 0; i < kNumel; ++i) {
      ASSERT_EQ(p[i], floatToBf16(widened.param[i])) << i;
      ASSERT_EQ(m[i], floatToBf16(widened.expAvg[i])) << i;
      ASSERT_EQ(v[i], floatToBf16(widened.expAvgSq[i])) << i;
      moved += p[i] != param[i];
    }
    // The update moves most elements by more than a bf16 rounding.
    EXPECT_GT(moved, kNumel / 2);
  }
}

TEST(OptimizerTest, AdamWNamesWhatIsWrongBeforeWriting) {
  AdamWCase bad;
  const std::vector<float> before = bad.param;
  titanrt_adamw_tensor t = bad.tensor();
  t.grad_dtype = TITANRT_F64;
  Status status = adamW(pool(1), {t}, bad.call(false));
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(
      status.getMessage(),
      "titanrt_fused_adamw (tensor 0): grad_dtype 1 (the gradient must be f32 "
      "or bf16)");
  t = bad.tensor();
  t.param_dtype = TITANRT_F16;
  status = adamW(pool(1), {t}, bad.call(false));
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(),
            "titanrt_fused_adamw (tensor 0): param_dtype 3 (the parameter "
            "must be f32 or bf16)");
  std::vector<uint16_t> copy(kNumel);
  t.param_dtype = TITANRT_BF16;
  t.param_copy_out = copy.data();
  EXPECT_EQ(adamW(pool(1), {t}, bad.call(false)).getMessage(),
            "titanrt_fused_adamw (tensor 0): a bf16 parameter has no narrower "
            "copy (param_copy_out must be null)");
  t = bad.tensor();
  AdamWCall c = bad.call(false);
  bad.lr = -1;
  status = adamW(pool(1), {t}, c);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(status.getMessage(),
            "titanrt_fused_adamw: lr = -1.000000 must be >= 0");
  bad.lr = 1e-3f;
  c.beta2 = 1.0;
  EXPECT_EQ(adamW(pool(1), {t}, c).getMessage(),
            "titanrt_fused_adamw: betas (0.900000, 1.000000) must be in [0, "
            "1)");
  t = bad.tensor();
  t.exp_avg = nullptr;
  EXPECT_EQ(adamW(pool(1), {t}, bad.call(false)).getCode(),
            TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bad.param, before);
}

TEST(OptimizerTest, FusedAdamWUpdatesEachTensorAsAlone) {
  // Two tensors in one call (f32 and bf16 gradients, the second with a
  // copy) give what each gives alone.
  AdamWCase first, second, firstAlone, secondAlone;
  std::vector<uint16_t> stored(kNumel), copy(kNumel), copyAlone(kNumel);
  for (int64_t i = 0; i < kNumel; ++i)
    stored[i] = floatToBf16(second.grad[i]);
  auto bf16Tensor = [&](AdamWCase &tensor, std::vector<uint16_t> &out) {
    titanrt_adamw_tensor t = tensor.tensor();
    t.grad_dtype = TITANRT_BF16;
    t.grad = stored.data();
    t.param_copy_out = out.data();
    return t;
  };
  const AdamWCall call = first.call(true);
  ASSERT_TRUE(
      adamW(pool(2), {first.tensor(), bf16Tensor(second, copy)}, call).ok());
  ASSERT_TRUE(adamW(pool(2), {firstAlone.tensor()}, call).ok());
  ASSERT_TRUE(adamW(pool(2), {bf16Tensor(secondAlone, copyAlone)}, call).ok());
  EXPECT_EQ(first.param, firstAlone.param);
  EXPECT_EQ(first.expAvgSq, firstAlone.expAvgSq);
  EXPECT_EQ(second.param, secondAlone.param);
  EXPECT_EQ(second.expAvg, secondAlone.expAvg);
  EXPECT_EQ(copy, copyAlone);
  EXPECT_NE(second.param, AdamWCase().param);

  // A bad second tensor: named, and nothing written, the first included.
  AdamWCase good, bad;
  titanrt_adamw_tensor broken = bad.tensor();
  broken.numel = -1;
  Status status = adamW(pool(1), {good.tensor(), broken}, good.call(true));
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(status.getMessage().rfind("titanrt_fused_adamw (tensor 1): ", 0),
            0u)
      << status.getMessage();
  EXPECT_EQ(good.param, AdamWCase().param);
  EXPECT_TRUE(adamW(pool(1), {}, call).ok());
}

TEST(OptimizerTest, SquaredNormSumsEveryTensorOnAnyThreads) {
  // An f32 and a bf16 tensor of more than one chunk, an empty one.
  std::vector<float> a = randomValues<float>(kNumel, 7);
  std::vector<float> widened = randomValues<float>(3 * kNumel, 8);
  std::vector<uint16_t> b(widened.size());
  double expected = 0;
  for (float value : a)
    expected += double(value) * double(value);
  for (size_t i = 0; i < b.size(); ++i) {
    b[i] = floatToBf16(widened[i]);
    expected += double(bf16ToFloat(b[i])) * double(bf16ToFloat(b[i]));
  }
  const std::vector<titanrt_norm_tensor> tensors = {
      {a.data(), kNumel, TITANRT_F32},
      {nullptr, 0, TITANRT_F32},
      {b.data(), int64_t(b.size()), TITANRT_BF16}};
  std::vector<float> results;
  for (int threads : threadCounts()) {
    float out = -1;
    ASSERT_TRUE(squaredNorm(pool(threads), tensors, &out).ok());
    results.push_back(out);
  }
  EXPECT_NEAR(results.front(), expected, 1e-6 * expected);
  for (float result : results)
    EXPECT_EQ(result, results.front());

  float out = -1;
  Status status = squaredNorm(pool(1), {{a.data(), kNumel, TITANRT_F64}}, &out);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(),
            "titanrt_squared_norm: tensor 0 dtype 1 (f32 or bf16)");
  EXPECT_EQ(out, -1);
}

} // namespace
