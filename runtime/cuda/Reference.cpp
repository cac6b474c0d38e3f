//===- Reference.cpp - CPU references: norms, RoPE, SwiGLU, softmax, GEMM -===//

#include "cuda/Reference.h"

#include <algorithm>
#include <cmath>

using namespace titan::rt::cuda;

namespace ref = titan::rt::cuda::reference;

void ref::rmsNormForward(const double *x, const double *weight, double *y,
                         int64_t rows, int64_t cols, double eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const double *xRow = x + r * cols;
    double sumSquares = 0;
    for (int64_t c = 0; c < cols; ++c)
      sumSquares += xRow[c] * xRow[c];
    double rstd = 1.0 / std::sqrt(sumSquares / double(cols) + eps);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = xRow[c] * rstd * weight[c];
  }
}

void ref::rmsNormBackward(const double *x, const double *weight,
                          const double *dy, double *dx, double *dweight,
                          int64_t rows, int64_t cols, double eps) {
  std::fill_n(dweight, cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double *xRow = x + r * cols, *dyRow = dy + r * cols;
    double sumSquares = 0, sumGradX = 0;
    for (int64_t c = 0; c < cols; ++c) {
      sumSquares += xRow[c] * xRow[c];
      sumGradX += dyRow[c] * weight[c] * xRow[c];
    }
    double rstd = 1.0 / std::sqrt(sumSquares / double(cols) + eps);
    double meanGradX = sumGradX / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      double g = dyRow[c] * weight[c];
      dx[r * cols + c] = rstd * (g - xRow[c] * rstd * rstd * meanGradX);
      dweight[c] += dyRow[c] * xRow[c] * rstd;
    }
  }
}

void ref::rope(const double *x, const double *cos, const double *sin,
               double *out, int64_t batch, int64_t seq, int64_t heads,
               int64_t headDim, RopeStyle style, bool backward) {
  const int64_t half = headDim / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = ((b * seq + s) * heads + h) * headDim;
        for (int64_t j = 0; j < half; ++j) {
          int64_t first = style == RopeStyle::Interleaved ? 2 * j : j;
          int64_t second =
              style == RopeStyle::Interleaved ? 2 * j + 1 : j + half;
          double c = cos[s * half + j];
          double sn = (backward ? -1 : 1) * sin[s * half + j];
          double a = x[base + first], bb = x[base + second];
          out[base + first] = a * c - bb * sn;
          out[base + second] = a * sn + bb * c;
        }
      }
}

namespace {

double sigmoid(double a) { return 1.0 / (1.0 + std::exp(-a)); }

} // namespace

void ref::swiGluForward(const double *gate, const double *up, double *out,
                        int64_t rows, int64_t cols, int64_t inputStride) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double a = gate[r * inputStride + c];
      out[r * cols + c] = a * sigmoid(a) * up[r * inputStride + c];
    }
}

void ref::swiGluBackward(const double *gate, const double *up,
                         const double *dout, double *dgate, double *dup,
                         int64_t rows, int64_t cols, int64_t inputStride) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      int64_t at = r * inputStride + c;
      double a = gate[at], s = sigmoid(a), g = dout[r * cols + c];
      dgate[at] = g * up[at] * s * (1 + a * (1 - s));
      dup[at] = g * a * s;
    }
}

void ref::softmaxForward(const double *x, double *y, int64_t rows,
                         int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const double *xRow = x + r * cols;
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      max = std::max(max, xRow[c]);
    for (int64_t c = 0; c < cols; ++c)
      sum += std::exp(xRow[c] - max);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = std::exp(xRow[c] - max) / sum;
  }
}

void ref::softmaxBackward(const double *y, const double *dy, double *dx,
                          int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c)
      dot += dy[r * cols + c] * y[r * cols + c];
    for (int64_t c = 0; c < cols; ++c)
      dx[r * cols + c] = y[r * cols + c] * (dy[r * cols + c] - dot);
  }
}

double ref::gelu(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

void ref::gemm(const GemmProblem &p, GemmEpilogue epilogue, const double *a,
               const double *b, const double *bias, double *c, double alpha,
               double beta) {
  for (int64_t e = 0; e < p.batch; ++e) {
    const double *aEntry = a + e * p.m * p.k;
    const double *bEntry = b + (p.bShared ? 0 : e * p.k * p.n);
    double *cEntry = c + e * p.m * p.n;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < p.k; ++l)
          sum += (p.transposeA ? aEntry[l * p.m + i] : aEntry[i * p.k + l]) *
                 (p.transposeB ? bEntry[j * p.k + l] : bEntry[l * p.n + j]);
        double value = alpha * sum;
        if (beta != 0)
          value += beta * cEntry[i * p.n + j];
        if (hasBias(epilogue))
          value += bias[j];
        if (epilogue == GemmEpilogue::Relu ||
            epilogue == GemmEpilogue::ReluBias)
          value = std::max(value, 0.0);
        if (epilogue == GemmEpilogue::Gelu ||
            epilogue == GemmEpilogue::GeluBias)
          value = gelu(value);
        cEntry[i * p.n + j] = value;
      }
  }
}
