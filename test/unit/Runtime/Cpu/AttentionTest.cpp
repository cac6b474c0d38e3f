//===- AttentionTest.cpp - Tests of the blocked attention kernels ---------===//
//
// cpu::attention and cpu::attentionGrad against a naive double-precision
// reference that materializes the [seq, seq] probabilities: MHA and GQA,
// causal or not, sequences shorter than one block and not a multiple of the
// blocks, several head sizes and scales. Every case also runs on 1, 2 and 3
// threads with the kernels of every target the CPU runs (x86-64-v3, -v4):
// all results must be bitwise equal.
//
//===----------------------------------------------------------------------===//

#include "core/LowPrecision.h"
#include "cpu/AttentionKernels.h"
#include "cpu/CpuKernels.h"

#include "TestUtil.h"

#include <cstring>
#include <limits>

using namespace titan::rt;
using namespace titan::rt::cpu;
using namespace titan::rt::cpu::test;

namespace {

/// One attention call.
struct AttentionCase {
  int64_t batch, qHeads, kvHeads, seq, headDim;
  bool causal;
  double scale;

  /// Elements of q, out, grad, dq.
  int64_t qSize() const { return batch * qHeads * seq * headDim; }
  /// Elements of k, v, dk, dv.
  int64_t kvSize() const { return batch * kvHeads * seq * headDim; }
};

/// The case as a test name: b2_h4_kv4_s7_d16_causal_scale0.250000.
std::string caseName(const AttentionCase &c) {
  return "b" + std::to_string(c.batch) + "_h" + std::to_string(c.qHeads) +
         "_kv" + std::to_string(c.kvHeads) + "_s" + std::to_string(c.seq) +
         "_d" + std::to_string(c.headDim) + (c.causal ? "_causal" : "") +
         "_scale" + std::to_string(c.scale);
}

/// Prints a case in gtest's messages.
void PrintTo(const AttentionCase &c, std::ostream *os) { *os << caseName(c); }

/// The reference's results: out, each query row's log-sum-exp, and the
/// cotangents.
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

/// Attention and its backward in double, one head at a time with the full
/// probability matrix, as titanrt.h defines them: P = softmax(scale q k^T
/// (+ causal mask)), out = P v, lse = log(sum(exp(scale q k^T))) over the
/// visible keys; dP = dO v^T, dS = P * (dP - rowsum(P * dP)), dq = scale dS
/// k, dk = scale dS^T q, dv = P^T dO (dk, dv summed over the q heads of a
/// KV head).
Reference referenceAttention(const AttentionCase &c,
                             const std::vector<float> &q,
                             const std::vector<float> &k,
                             const std::vector<float> &v,
                             const std::vector<float> &dOut) {
  int64_t s = c.seq, d = c.headDim, group = c.qHeads / c.kvHeads;
  Reference ref{std::vector<double>(c.qSize()),
                std::vector<double>(c.batch * c.qHeads * s),
                std::vector<double>(c.qSize()), std::vector<double>(c.kvSize()),
                std::vector<double>(c.kvSize())};
  std::vector<double> p(s * s), dS(s * s);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.qHeads; ++h) {
      int64_t qBase = (b * c.qHeads + h) * s * d;
      int64_t kvBase = (b * c.kvHeads + h / group) * s * d;
      for (int64_t i = 0; i < s; ++i) {
        int64_t visible = c.causal ? i + 1 : s;
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < visible; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += double(q[qBase + i * d + e]) * k[kvBase + j * d + e];
          p[i * s + j] = c.scale * dot;
          max = std::max(max, p[i * s + j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < visible; ++j)
          sum += p[i * s + j] = std::exp(p[i * s + j] - max);
        ref.lse[(b * c.qHeads + h) * s + i] = max + std::log(sum);
        for (int64_t j = 0; j < s; ++j)
          p[i * s + j] = j < visible ? p[i * s + j] / sum : 0.0;
        double rowDot = 0;
        for (int64_t j = 0; j < s; ++j) {
          double dp = 0;
          for (int64_t e = 0; e < d; ++e)
            dp += double(dOut[qBase + i * d + e]) * v[kvBase + j * d + e];
          dS[i * s + j] = dp;
          rowDot += p[i * s + j] * dp;
        }
        for (int64_t j = 0; j < s; ++j)
          dS[i * s + j] = p[i * s + j] * (dS[i * s + j] - rowDot);
      }
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < s; ++j)
          for (int64_t e = 0; e < d; ++e) {
            ref.out[qBase + i * d + e] += p[i * s + j] * v[kvBase + j * d + e];
            ref.dq[qBase + i * d + e] +=
                c.scale * dS[i * s + j] * k[kvBase + j * d + e];
            ref.dk[kvBase + j * d + e] +=
                c.scale * dS[i * s + j] * q[qBase + i * d + e];
            ref.dv[kvBase + j * d + e] +=
                p[i * s + j] * dOut[qBase + i * d + e];
          }
    }
  return ref;
}

/// Tolerances relative to the largest element of the reference. The
/// kernels round in f32: scores (|s| up to ~10 here) to a few ulps, exp2 to
/// 1 ulp, sums over up to 130 keys or queries. Measured over these cases:
/// at most 1.9e-6 for out and 1.7e-6 for dq, dk, dv; the bound leaves a
/// margin of 5x.
constexpr double kTolerance = 1e-5;

/// The inputs of a case.
struct Inputs {
  /// Values in [-1, 1] from fixed seeds.
  explicit Inputs(const AttentionCase &c)
      : q(randomValues<float>(c.qSize(), 11)),
        k(randomValues<float>(c.kvSize(), 12)),
        v(randomValues<float>(c.kvSize(), 13)),
        dOut(randomValues<float>(c.qSize(), 14)) {}
  std::vector<float> q, k, v, dOut;
};

/// The results of a case: out, the log-sum-exp, and the cotangents.
struct Results {
  /// Results of NaN, so that an element the kernels miss shows.
  explicit Results(const AttentionCase &c)
      : out(c.qSize(), kNaN), lse(c.batch * c.qHeads * c.seq, kNaN),
        dq(c.qSize(), kNaN), dk(c.kvSize(), kNaN), dv(c.kvSize(), kNaN),
        workspace(c.batch * c.qHeads * c.seq, kNaN) {}
  /// The initial value of every element.
  static constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out, lse, dq, dk, dv, workspace;
};

/// Runs a case through cpu::attention and cpu::attentionGrad.
Results runPublic(const AttentionCase &c, const Inputs &in, int numThreads) {
  Results r(c);
  Status forward =
      attention(pool(numThreads), TITANRT_F32, in.q.data(), in.k.data(),
                in.v.data(), r.out.data(), r.lse.data(), c.batch, c.qHeads,
                c.kvHeads, c.seq, c.headDim, c.causal, c.scale);
  EXPECT_TRUE(forward.ok()) << forward.getMessage();
  Status backward = attentionGrad(
      pool(numThreads), TITANRT_F32, in.q.data(), in.k.data(), in.v.data(),
      r.out.data(), r.lse.data(), in.dOut.data(), r.dq.data(), r.dk.data(),
      r.dv.data(), r.workspace.data(), c.batch, c.qHeads, c.kvHeads, c.seq,
      c.headDim, c.causal, c.scale);
  EXPECT_TRUE(backward.ok()) << backward.getMessage();
  return r;
}

/// Runs a case through the kernels of one target.
Results runKernels(const AttentionKernels &kernels, const AttentionCase &c,
                   const Inputs &in, int numThreads) {
  Results r(c);
  AttentionShape shape{c.batch,   c.qHeads, c.kvHeads,     c.seq,
                       c.headDim, c.causal, float(c.scale)};
  kernels.forward(pool(numThreads), shape, in.q.data(), in.k.data(),
                  in.v.data(), r.out.data(), r.lse.data());
  kernels.backward(pool(numThreads), shape, in.q.data(), in.k.data(),
                   in.v.data(), r.out.data(), r.lse.data(), in.dOut.data(),
                   r.dq.data(), r.dk.data(), r.dv.data(), r.workspace.data());
  return r;
}

/// The kernels of every target this CPU runs, the widest last.
std::vector<const AttentionKernels *> runnableKernels() {
  std::vector<const AttentionKernels *> kernels;
#ifdef __x86_64__
  if (__builtin_cpu_supports("x86-64-v3"))
    kernels.push_back(&attentionKernelsV3);
  if (__builtin_cpu_supports("x86-64-v4"))
    kernels.push_back(&attentionKernelsV4);
#else
  kernels.push_back(&attentionKernelsV3);
#endif
  return kernels;
}

/// Whether two float vectors are bitwise equal.
bool bitwiseEqual(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, MatchesReference) {
  const AttentionCase &c = GetParam();
  Inputs in(c);
  Reference ref = referenceAttention(c, in.q, in.k, in.v, in.dOut);
  Results r = runPublic(c, in, 1);
  EXPECT_LE(relativeError(r.out, ref.out), kTolerance);
  EXPECT_LE(relativeError(r.lse, ref.lse), kTolerance);
  EXPECT_LE(relativeError(r.dq, ref.dq), kTolerance);
  EXPECT_LE(relativeError(r.dk, ref.dk), kTolerance);
  EXPECT_LE(relativeError(r.dv, ref.dv), kTolerance);
}

TEST_P(AttentionTest, BitwiseEqualOnEveryThreadCountAndTarget) {
  const AttentionCase &c = GetParam();
  Inputs in(c);
  Results first = runPublic(c, in, 1);
  for (const AttentionKernels *kernels : runnableKernels())
    for (int numThreads : threadCounts()) {
      SCOPED_TRACE(std::string(kernels->target) + ", " +
                   std::to_string(numThreads) + " threads");
      Results r = runKernels(*kernels, c, in, numThreads);
      EXPECT_TRUE(bitwiseEqual(r.out, first.out));
      EXPECT_TRUE(bitwiseEqual(r.lse, first.lse));
      EXPECT_TRUE(bitwiseEqual(r.dq, first.dq));
      EXPECT_TRUE(bitwiseEqual(r.dk, first.dk));
      EXPECT_TRUE(bitwiseEqual(r.dv, first.dv));
    }
}

/// MHA (2 x 4 heads) and GQA (8 q heads on 2 KV heads), causal or not,
/// over sequences of 1 (one partial block), 7, 33 and 130 (three blocks,
/// the last of 2 rows) and head sizes 16, 64, 128, with the usual scale
/// 1/sqrt(head_dim) and a large custom one (peaked softmax).
std::vector<AttentionCase> attentionCases() {
  std::vector<AttentionCase> cases;
  for (int64_t seq : {1, 7, 33, 130})
    for (int64_t headDim : {16, 64, 128})
      for (bool gqa : {false, true})
        for (bool causal : {false, true}) {
          double scale = 1.0 / std::sqrt(double(headDim));
          if ((seq + headDim / 16) % 2)
            scale = 0.75;
          cases.push_back({gqa ? 1 : 2, gqa ? 8 : 4, gqa ? 2 : 4, seq, headDim,
                           causal, scale});
        }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AttentionTest, ::testing::ValuesIn(attentionCases()),
    [](const ::testing::TestParamInfo<AttentionCase> &info) {
      std::string name = caseName(info.param);
      std::replace(name.begin(), name.end(), '.', 'p');
      return name;
    });

TEST(AttentionBf16Test, RoundsTheFloat32ResultsOnce) {
  // bf16 attention is the float32 kernel on the widened inputs, each result
  // rounded once: bitwise.
  AttentionCase c{2, 4, 2, 37, 16, true, 0.25};
  Inputs wide(c);
  auto toBf16 = [](std::vector<float> &values) {
    std::vector<uint16_t> bits;
    for (float &value : values) {
      bits.push_back(floatToBf16(value));
      value = bf16ToFloat(bits.back());
    }
    return bits;
  };
  std::vector<uint16_t> q = toBf16(wide.q), k = toBf16(wide.k),
                        v = toBf16(wide.v), dOut = toBf16(wide.dOut);
  std::vector<uint16_t> out(c.qSize()), dq(c.qSize()), dk(c.kvSize()),
      dv(c.kvSize());
  std::vector<float> lse(c.batch * c.qHeads * c.seq),
      workspace(c.batch * c.qHeads * c.seq);
  ASSERT_TRUE(attention(pool(2), TITANRT_BF16, q.data(), k.data(), v.data(),
                        out.data(), lse.data(), c.batch, c.qHeads, c.kvHeads,
                        c.seq, c.headDim, c.causal, c.scale)
                  .ok());
  ASSERT_TRUE(attentionGrad(pool(2), TITANRT_BF16, q.data(), k.data(), v.data(),
                            out.data(), lse.data(), dOut.data(), dq.data(),
                            dk.data(), dv.data(), workspace.data(), c.batch,
                            c.qHeads, c.kvHeads, c.seq, c.headDim, c.causal,
                            c.scale)
                  .ok());
  auto rounded = [](const std::vector<float> &values) {
    std::vector<uint16_t> bits;
    for (float value : values)
      bits.push_back(floatToBf16(value));
    return bits;
  };
  // The backward reads the rounded output, as PyTorch's does: the float32
  // kernels on the same inputs.
  Results expected(c);
  AttentionShape shape{c.batch,   c.qHeads, c.kvHeads,     c.seq,
                       c.headDim, c.causal, float(c.scale)};
  std::vector<float> wideOut(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    wideOut[i] = bf16ToFloat(out[i]);
  const AttentionKernels &kernels = *getAttentionKernels();
  kernels.forward(pool(2), shape, wide.q.data(), wide.k.data(), wide.v.data(),
                  expected.out.data(), expected.lse.data());
  kernels.backward(pool(2), shape, wide.q.data(), wide.k.data(), wide.v.data(),
                   wideOut.data(), expected.lse.data(), wide.dOut.data(),
                   expected.dq.data(), expected.dk.data(), expected.dv.data(),
                   expected.workspace.data());
  EXPECT_EQ(out, rounded(expected.out));
  EXPECT_TRUE(bitwiseEqual(lse, expected.lse));
  EXPECT_EQ(dq, rounded(expected.dq));
  EXPECT_EQ(dk, rounded(expected.dk));
  EXPECT_EQ(dv, rounded(expected.dv));
}

TEST(AttentionKernelsTest, RunsTheWidestTarget) {
  std::vector<const AttentionKernels *> kernels = runnableKernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(getAttentionKernels(), kernels.back());
}

TEST(AttentionStabilityTest, LargeScoresStayFinite) {
  // Scores up to +-300: exp without subtracting the maximum overflows f32.
  AttentionCase c{1, 2, 1, 70, 16, true, 20.0};
  Inputs in(c);
  Reference ref = referenceAttention(c, in.q, in.k, in.v, in.dOut);
  Results r = runPublic(c, in, 2);
  // The rounding of scores of ~300 is larger in absolute terms (measured:
  // up to 5.2e-6, in dv): a looser bound, still far from overflow garbage.
  for (double error :
       {relativeError(r.out, ref.out), relativeError(r.dq, ref.dq),
        relativeError(r.dk, ref.dk), relativeError(r.dv, ref.dv)})
    EXPECT_LE(error, 5e-5);
}

TEST(AttentionStabilityTest, NaNPropagates) {
  AttentionCase c{1, 1, 1, 5, 16, false, 0.25};
  Inputs in(c);
  in.k[2 * 16 + 3] = std::numeric_limits<float>::quiet_NaN();
  Results r = runPublic(c, in, 1);
  for (const std::vector<float> *values : {&r.out, &r.dq, &r.dk, &r.dv})
    for (float value : *values)
      EXPECT_TRUE(std::isnan(value));
}

TEST(AttentionGradTest, KvHeadsWithoutQueriesGetZeroGradients) {
  // q_heads = 0: dk and dv are 0, nothing else is read.
  std::vector<float> k(2 * 3 * 4, 1.0f), dk(k.size(), 5.0f), dv(k.size(), 5.0f);
  Status status =
      attentionGrad(pool(2), TITANRT_F32, nullptr, k.data(), k.data(), nullptr,
                    nullptr, nullptr, nullptr, dk.data(), dv.data(), nullptr, 1,
                    0, 2, 3, 4, true, 0.5);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_EQ(dk, std::vector<float>(k.size(), 0.0f));
  EXPECT_EQ(dv, std::vector<float>(k.size(), 0.0f));
}

TEST(AttentionArgumentsTest, Errors) {
  float buffer[64] = {};
  auto forward = [&](int32_t dtype, int64_t qHeads, int64_t kvHeads,
                     int64_t seq, const float *q) {
    return attention(pool(1), dtype, q, buffer, buffer, buffer, buffer, 1,
                     qHeads, kvHeads, seq, 2, false, 1.0);
  };
  Status groups = forward(TITANRT_F32, 6, 4, 2, buffer);
  EXPECT_EQ(groups.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(groups.getMessage(),
            "attention: q_heads = 6 is not a multiple of kv_heads = 4");
  EXPECT_EQ(forward(TITANRT_F32, 2, 0, 2, buffer).getMessage(),
            "attention: q_heads = 2 is not a multiple of kv_heads = 0");
  EXPECT_EQ(forward(TITANRT_F32, 2, 1, -5, buffer).getMessage(),
            "attention: seq = -5 is negative");
  Status null = forward(TITANRT_F32, 2, 1, 3, nullptr);
  EXPECT_EQ(null.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(null.getMessage(), "attention: q is null but holds 12 elements");
  Status f64 = forward(TITANRT_F64, 2, 1, 3, buffer);
  EXPECT_EQ(f64.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(f64.getMessage(),
            "attention: dtype f64 is not supported by the CPU backend (f32, "
            "bf16, f16)");

  EXPECT_EQ(attention(pool(1), TITANRT_F32, buffer, buffer, buffer, buffer,
                      nullptr, 1, 2, 1, 3, 2, false, 1.0)
                .getMessage(),
            "attention: lse is null but holds 6 elements");

  // One query row's values per operand here: 1 x 2 heads x 3 positions.
  auto backward = [&](const float *out, const float *lse, float *dv,
                      float *workspace) {
    return attentionGrad(pool(1), TITANRT_F32, buffer, buffer, buffer, out, lse,
                         buffer, buffer, buffer, dv, workspace, 1, 2, 1, 3, 2,
                         true, 1.0);
  };
  Status workspace = backward(buffer, buffer, buffer, nullptr);
  EXPECT_EQ(workspace.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(workspace.getMessage(),
            "attention_grad: workspace is null but holds 6 elements");
  EXPECT_EQ(backward(buffer, buffer, nullptr, buffer).getMessage(),
            "attention_grad: dv is null but holds 6 elements");
  EXPECT_EQ(backward(nullptr, buffer, buffer, buffer).getMessage(),
            "attention_grad: out is null but holds 12 elements");
  EXPECT_EQ(backward(buffer, nullptr, buffer, buffer).getMessage(),
            "attention_grad: lse is null but holds 6 elements");
  Status integer = attentionGrad(pool(1), TITANRT_I32, buffer, buffer, buffer,
                                 buffer, buffer, buffer, buffer, buffer, buffer,
                                 buffer, 1, 2, 1, 3, 2, true, 1.0);
  EXPECT_EQ(integer.getCode(), TITANRT_ERROR_UNSUPPORTED);
}

} // namespace
