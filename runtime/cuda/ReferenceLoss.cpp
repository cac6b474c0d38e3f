//===- ReferenceLoss.cpp - CPU references: loss, embedding, AdamW ---------===//

#include "cuda/Reference.h"

#include <algorithm>
#include <cmath>

using namespace titan::rt::cuda;

namespace ref = titan::rt::cuda::reference;

void ref::crossEntropyPartials(const CrossEntropyShape &s, const double *logits,
                               const int64_t *labels, double *rowMax,
                               double *rowSumExp, double *targetLogit) {
  for (int64_t r = 0; r < s.rows; ++r) {
    const double *row = logits + r * s.localVocab;
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < s.localVocab; ++c)
      max = std::max(max, row[c]);
    for (int64_t c = 0; c < s.localVocab; ++c)
      sum += std::exp(row[c] - max);
    const int64_t local = labels[r] - s.vocabStart;
    rowMax[r] = max;
    rowSumExp[r] = sum;
    targetLogit[r] =
        labels[r] != s.ignoreIndex && local >= 0 && local < s.localVocab
            ? row[local]
            : 0.0;
  }
}

void ref::crossEntropyRescale(const double *rowMax, const double *globalMax,
                              double *rowSumExp, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r)
    rowSumExp[r] = rowMax[r] == -INFINITY
                       ? 0.0
                       : rowSumExp[r] * std::exp(rowMax[r] - globalMax[r]);
}

void ref::crossEntropyFinish(const CrossEntropyShape &s, const double *rowMax,
                             const double *rowSumExp, const double *targetLogit,
                             const int64_t *labels, double &loss, double *lse,
                             double &validCount) {
  double sum = 0;
  validCount = 0;
  for (int64_t r = 0; r < s.rows; ++r) {
    lse[r] = rowMax[r] + std::log(rowSumExp[r]);
    if (labels[r] != s.ignoreIndex) {
      sum += lse[r] - targetLogit[r];
      validCount += 1;
    }
  }
  loss = sum / validCount;
}

void ref::crossEntropyBackward(const CrossEntropyShape &s, const double *logits,
                               const int64_t *labels, const double *lse,
                               double gradLoss, double validCount,
                               double *dlogits) {
  for (int64_t r = 0; r < s.rows; ++r) {
    const bool ignored = labels[r] == s.ignoreIndex;
    const int64_t local = labels[r] - s.vocabStart;
    for (int64_t c = 0; c < s.localVocab; ++c) {
      const int64_t at = r * s.localVocab + c;
      dlogits[at] =
          ignored
              ? 0.0
              : gradLoss / validCount *
                    (std::exp(logits[at] - lse[r]) - (c == local ? 1.0 : 0.0));
    }
  }
}

void ref::embeddingForward(const double *table, const int64_t *ids, double *out,
                           int64_t numIds, int64_t vocab, int64_t dim) {
  for (int64_t i = 0; i < numIds; ++i) {
    const bool valid = ids[i] >= 0 && ids[i] < vocab;
    for (int64_t c = 0; c < dim; ++c)
      out[i * dim + c] = valid ? table[ids[i] * dim + c] : 0.0;
  }
}

void ref::embeddingBackward(const int64_t *ids, const double *grad, double *out,
                            int64_t numIds, int64_t vocab, int64_t dim) {
  std::fill_n(out, vocab * dim, 0.0);
  for (int64_t i = 0; i < numIds; ++i)
    if (ids[i] >= 0 && ids[i] < vocab)
      for (int64_t c = 0; c < dim; ++c)
        out[ids[i] * dim + c] += grad[i * dim + c];
}

void ref::adamW(const AdamWHyperparameters &hyper, double gradScale,
                double *param, const double *grad, double *expAvg,
                double *expAvgSq, int64_t numel) {
  const double t = double(hyper.step) + 1.0;
  const double stepSize = hyper.lr / (1.0 - std::pow(hyper.beta1, t));
  const double correction2Sqrt = std::sqrt(1.0 - std::pow(hyper.beta2, t));
  for (int64_t i = 0; i < numel; ++i) {
    const double g = grad[i] * gradScale;
    param[i] *= 1.0 - hyper.lr * hyper.weightDecay;
    expAvg[i] = hyper.beta1 * expAvg[i] + (1.0 - hyper.beta1) * g;
    expAvgSq[i] = hyper.beta2 * expAvgSq[i] + (1.0 - hyper.beta2) * g * g;
    param[i] -= stepSize * expAvg[i] /
                (std::sqrt(expAvgSq[i]) / correction2Sqrt + hyper.eps);
  }
}
