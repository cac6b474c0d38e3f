//===- ReferenceAttention.cpp - CPU reference of the attention kernels ----===//

#include "cuda/LaunchConfig.h"
#include "cuda/Reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace titan::rt::cuda;

namespace ref = titan::rt::cuda::reference;

namespace {

double dot(const double *a, const double *b, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += a[i] * b[i];
  return sum;
}

/// The offset of a row of a [batch, heads, seq, headDim] tensor.
int64_t rowOffset(const AttentionShape &s, int64_t b, int64_t heads, int64_t h,
                  int64_t row) {
  return ((b * heads + h) * s.seq + row) * s.headDim;
}

} // namespace

void ref::attentionForward(const AttentionShape &s, const double *q,
                           const double *k, const double *v, double *out,
                           double *lse) {
  const int64_t group = s.qHeads / s.kvHeads, d = s.headDim;
  std::vector<double> accumulator(d), scores(kAttentionTile);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h) {
      const int64_t kvHead = h / group;
      for (int64_t i = 0; i < s.seq; ++i) {
        const double *query = q + rowOffset(s, b, s.qHeads, h, i);
        const int64_t keys = s.causal ? i + 1 : s.seq;
        double max = -INFINITY, sum = 0;
        std::fill(accumulator.begin(), accumulator.end(), 0.0);
        for (int64_t start = 0; start < keys; start += kAttentionTile) {
          const int64_t end = std::min(keys, start + kAttentionTile);
          double tileMax = -INFINITY;
          for (int64_t j = start; j < end; ++j) {
            scores[j - start] =
                s.scale *
                dot(query, k + rowOffset(s, b, s.kvHeads, kvHead, j), d);
            tileMax = std::max(tileMax, scores[j - start]);
          }
          const double newMax = std::max(max, tileMax);
          const double correction = std::exp(max - newMax); // 0 at first
          sum *= correction;
          for (double &value : accumulator)
            value *= correction;
          for (int64_t j = start; j < end; ++j) {
            const double p = std::exp(scores[j - start] - newMax);
            const double *value = v + rowOffset(s, b, s.kvHeads, kvHead, j);
            sum += p;
            for (int64_t x = 0; x < d; ++x)
              accumulator[x] += p * value[x];
          }
          max = newMax;
        }
        double *target = out + rowOffset(s, b, s.qHeads, h, i);
        for (int64_t x = 0; x < d; ++x)
          target[x] = accumulator[x] / sum;
        lse[(b * s.qHeads + h) * s.seq + i] = max + std::log(sum);
      }
    }
}

void ref::attentionBackward(const AttentionShape &s, const double *q,
                            const double *k, const double *v, const double *out,
                            const double *dout, const double *lse, double *dq,
                            double *dk, double *dv) {
  const int64_t group = s.qHeads / s.kvHeads, d = s.headDim;
  std::fill_n(dq, s.batch * s.qHeads * s.seq * d, 0.0);
  std::fill_n(dk, s.batch * s.kvHeads * s.seq * d, 0.0);
  std::fill_n(dv, s.batch * s.kvHeads * s.seq * d, 0.0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h) {
      const int64_t kvHead = h / group;
      for (int64_t i = 0; i < s.seq; ++i) {
        const int64_t qRow = rowOffset(s, b, s.qHeads, h, i);
        const double delta = dot(dout + qRow, out + qRow, d);
        const double rowLse = lse[(b * s.qHeads + h) * s.seq + i];
        const int64_t keys = s.causal ? i + 1 : s.seq;
        for (int64_t j = 0; j < keys; ++j) {
          const int64_t kvRow = rowOffset(s, b, s.kvHeads, kvHead, j);
          const double p =
              std::exp(s.scale * dot(q + qRow, k + kvRow, d) - rowLse);
          const double ds = p * (dot(dout + qRow, v + kvRow, d) - delta);
          for (int64_t x = 0; x < d; ++x) {
            dq[qRow + x] += s.scale * ds * k[kvRow + x];
            dk[kvRow + x] += s.scale * ds * q[qRow + x];
            dv[kvRow + x] += p * dout[qRow + x];
          }
        }
      }
    }
}
