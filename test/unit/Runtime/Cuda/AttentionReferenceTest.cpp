//===- AttentionReferenceTest.cpp - reference of the attention kernels ----===//
//
// The CPU reference of the flash-style attention (blockwise, online
// softmax, as the GPU kernel computes) against the naive softmax(q k^T *
// scale + mask) v with a full score matrix, and its backward (recomputed
// from the log-sum-exp) against finite differences.
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

/// softmax(q k^T * scale + mask) v with the whole [seq, seq] matrix, and
/// each row's log-sum-exp.
void naiveAttention(const AttentionShape &s, const std::vector<double> &q,
                    const std::vector<double> &k, const std::vector<double> &v,
                    std::vector<double> &out, std::vector<double> &lse) {
  const int64_t d = s.headDim, group = s.qHeads / s.kvHeads;
  out.assign(q.size(), 0.0);
  lse.assign(static_cast<size_t>(s.batch * s.qHeads * s.seq), 0.0);
  std::vector<double> scores(static_cast<size_t>(s.seq * s.seq));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h) {
      const double *qh =
          &q[static_cast<size_t>(((b * s.qHeads + h) * s.seq) * d)];
      const double *kh =
          &k[static_cast<size_t>(((b * s.kvHeads + h / group) * s.seq) * d)];
      const double *vh =
          &v[static_cast<size_t>(((b * s.kvHeads + h / group) * s.seq) * d)];
      double *oh = &out[static_cast<size_t>(((b * s.qHeads + h) * s.seq) * d)];
      for (int64_t i = 0; i < s.seq; ++i) {
        double max = -INFINITY;
        for (int64_t j = 0; j < s.seq; ++j) {
          double score = 0;
          for (int64_t x = 0; x < d; ++x)
            score += qh[i * d + x] * kh[j * d + x];
          score = s.causal && j > i ? -INFINITY : score * s.scale;
          scores[static_cast<size_t>(i * s.seq + j)] = score;
          max = std::max(max, score);
        }
        double sum = 0;
        for (int64_t j = 0; j < s.seq; ++j)
          sum += std::exp(scores[static_cast<size_t>(i * s.seq + j)] - max);
        for (int64_t j = 0; j < s.seq; ++j) {
          double p =
              std::exp(scores[static_cast<size_t>(i * s.seq + j)] - max) / sum;
          for (int64_t x = 0; x < d; ++x)
            oh[i * d + x] += p * vh[j * d + x];
        }
        lse[static_cast<size_t>((b * s.qHeads + h) * s.seq + i)] =
            max + std::log(sum);
      }
    }
}

struct Inputs {
  std::vector<double> q, k, v;
};

Inputs randomInputs(const AttentionShape &s, uint32_t seed) {
  return {randomValues(s.batch * s.qHeads * s.seq * s.headDim, seed, 2.0),
          randomValues(s.batch * s.kvHeads * s.seq * s.headDim, seed + 1, 2.0),
          randomValues(s.batch * s.kvHeads * s.seq * s.headDim, seed + 2)};
}

TEST(CudaReferenceTest, FlashAttentionMatchesNaiveAttention) {
  // Sequences that end inside a key block (100, 130) and span several;
  // GQA and MHA; causal or not.
  for (AttentionShape shape : {AttentionShape{2, 4, 2, 100, 8, true, 0.35},
                               AttentionShape{1, 2, 2, 130, 16, false, 0.25},
                               AttentionShape{1, 3, 1, 64, 4, true, 0.5},
                               AttentionShape{1, 1, 1, 1, 4, true, 1.0}}) {
    SCOPED_TRACE(testing::Message()
                 << "seq " << shape.seq << " causal " << shape.causal);
    Inputs in = randomInputs(shape, 11);
    std::vector<double> out(in.q.size()),
        lse(static_cast<size_t>(shape.batch * shape.qHeads * shape.seq));
    ref::attentionForward(shape, in.q.data(), in.k.data(), in.v.data(),
                          out.data(), lse.data());
    std::vector<double> naiveOut, naiveLse;
    naiveAttention(shape, in.q, in.k, in.v, naiveOut, naiveLse);
    EXPECT_LT(relativeError(out, naiveOut), 1e-13);
    EXPECT_LT(relativeError(lse, naiveLse), 1e-13);
  }
}

TEST(CudaReferenceTest, AttentionBackwardMatchesFiniteDifferences) {
  for (AttentionShape shape : {AttentionShape{1, 2, 1, 67, 4, true, 0.4},
                               AttentionShape{1, 2, 2, 9, 4, false, 0.7}}) {
    SCOPED_TRACE(testing::Message() << "causal " << shape.causal);
    Inputs in = randomInputs(shape, 21);
    std::vector<double> dout = randomValues(int64_t(in.q.size()), 24);
    std::vector<double> out(in.q.size()),
        lse(static_cast<size_t>(shape.batch * shape.qHeads * shape.seq));
    ref::attentionForward(shape, in.q.data(), in.k.data(), in.v.data(),
                          out.data(), lse.data());
    std::vector<double> dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
    ref::attentionBackward(shape, in.q.data(), in.k.data(), in.v.data(),
                           out.data(), dout.data(), lse.data(), dq.data(),
                           dk.data(), dv.data());
    std::vector<double> o(out.size()), l(lse.size());
    auto loss = [&] {
      ref::attentionForward(shape, in.q.data(), in.k.data(), in.v.data(),
                            o.data(), l.data());
      return dot(o, dout);
    };
    EXPECT_LT(relativeError(dq, numericGradient(in.q, loss)), 1e-6);
    EXPECT_LT(relativeError(dk, numericGradient(in.k, loss)), 1e-6);
    EXPECT_LT(relativeError(dv, numericGradient(in.v, loss)), 1e-6);
  }
}

} // namespace
