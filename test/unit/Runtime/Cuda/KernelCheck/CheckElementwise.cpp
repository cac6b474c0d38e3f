//===- CheckElementwise.cpp - RMSNorm, RoPE, SwiGLU, softmax on the GPU ---===//

#include "KernelCheck.h"

#include "cuda/Kernels.h"
#include "cuda/LaunchConfig.h"
#include "cuda/Reference.h"

#include <cmath>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::check;

namespace ref = titan::rt::cuda::reference;

namespace {

std::string shapeName(std::initializer_list<int64_t> extents) {
  std::string name;
  for (int64_t extent : extents)
    name += (name.empty() ? "" : "x") + std::to_string(extent);
  return name;
}

void checkRmsNorm(Checker &checker, Context &context, int32_t dtype,
                  int32_t weightDtype, int64_t rows, int64_t cols,
                  uint32_t seed) {
  const double eps = 1e-5;
  const std::string suffix = "." + nameOf(dtype) + ".w" + nameOf(weightDtype) +
                             "." + shapeName({rows, cols});
  std::vector<double> x = randomValues(rows * cols, seed, dtype, 3.0);
  std::vector<double> weight = randomValues(cols, seed + 1, weightDtype, 2.0);
  std::vector<double> dy = randomValues(rows * cols, seed + 2, dtype);
  DeviceTensor dX, dWeight, dDy, dY, dDx, dDweight, workspace;
  const std::string forward = "rms_norm_forward" + suffix;
  if (!checker.expectOk(forward, dX.upload(dtype, x)) ||
      !checker.expectOk(forward, dWeight.upload(weightDtype, weight)) ||
      !checker.expectOk(forward, dDy.upload(dtype, dy)) ||
      !checker.expectOk(forward, dY.allocate(dtype, rows * cols)) ||
      !checker.expectOk(forward, dDx.allocate(dtype, rows * cols)) ||
      !checker.expectOk(forward, dDweight.allocate(weightDtype, cols)) ||
      !checker.expectOk(
          forward,
          workspace.allocate(TITANRT_F32,
                             rmsNormBackwardWorkspaceBytes(rows, cols) / 4)))
    return;
  cudaStream_t stream = context.stream.get();
  std::vector<double> actual, expected(static_cast<size_t>(rows * cols));
  if (checker.expectOk(forward, rmsNormForward(stream, dtype, weightDtype,
                                               dX.get(), dWeight.get(),
                                               dY.get(), rows, cols, eps)) &&
      checker.expectOk(forward, dY.download(actual))) {
    ref::rmsNormForward(x.data(), weight.data(), expected.data(), rows, cols,
                        eps);
    checker.compare(forward, actual, expected, toleranceFor(dtype));
  }

  const std::string backward = "rms_norm_backward" + suffix;
  std::vector<double> dx, dweight, dweightAgain;
  auto run = [&] {
    return rmsNormBackward(stream, dtype, weightDtype, dX.get(), dWeight.get(),
                           dDy.get(), /*addend=*/nullptr, dDx.get(),
                           dDweight.get(), workspace.get(), rows, cols, eps);
  };
  if (!checker.expectOk(backward, run()) ||
      !checker.expectOk(backward, dDx.download(dx)) ||
      !checker.expectOk(backward, dDweight.download(dweight)) ||
      !checker.expectOk(backward, run()) ||
      !checker.expectOk(backward, dDweight.download(dweightAgain)))
    return;
  std::vector<double> expectedDx(x.size()),
      expectedDweight(static_cast<size_t>(cols));
  ref::rmsNormBackward(x.data(), weight.data(), dy.data(), expectedDx.data(),
                       expectedDweight.data(), rows, cols, eps);
  checker.compare(backward + ".dx", dx, expectedDx, toleranceFor(dtype));
  checker.compare(backward + ".dweight", dweight, expectedDweight,
                  toleranceFor(weightDtype));
  checker.expectIdentical(backward + ".dweight.deterministic", dweight,
                          dweightAgain);

  // With an addend (the residual stream's cotangent), of its own and in dx
  // (computed in place): dx + addend, rounded once.
  std::vector<double> addend = randomValues(rows * cols, seed + 3, dtype);
  std::vector<double> expectedSum = expectedDx;
  for (size_t i = 0; i < expectedSum.size(); ++i)
    expectedSum[i] += addend[i];
  DeviceTensor dAddend;
  for (bool inPlace : {false, true}) {
    const std::string name =
        backward + (inPlace ? ".addend_in_place" : ".addend");
    std::vector<double> sum;
    if (!checker.expectOk(name, dAddend.upload(dtype, addend)) ||
        (inPlace && !checker.expectOk(name, dDx.upload(dtype, addend))) ||
        !checker.expectOk(
            name, rmsNormBackward(
                      stream, dtype, weightDtype, dX.get(), dWeight.get(),
                      dDy.get(), inPlace ? dDx.get() : dAddend.get(), dDx.get(),
                      dDweight.get(), workspace.get(), rows, cols, eps)) ||
        !checker.expectOk(name, dDx.download(sum)))
      continue;
    checker.compare(name, sum, expectedSum, toleranceFor(dtype));
  }
}

void checkRope(Checker &checker, Context &context, int32_t dtype,
               int32_t tableDtype, int64_t batch, int64_t seq, int64_t heads,
               int64_t headDim, RopeStyle style, uint32_t seed) {
  const int64_t half = headDim / 2, count = batch * seq * heads * headDim;
  std::vector<double> cos(static_cast<size_t>(seq * half)), sin(cos.size());
  for (int64_t s = 0; s < seq; ++s)
    for (int64_t j = 0; j < half; ++j) {
      double angle = double(s) * std::pow(10000.0, -2.0 * j / headDim);
      cos[static_cast<size_t>(s * half + j)] = std::cos(angle);
      sin[static_cast<size_t>(s * half + j)] = std::sin(angle);
    }
  // What the GPU sees: the tables rounded to their dtype.
  DeviceTensor dCos, dSin, dX, dOut;
  std::vector<double> x = randomValues(count, seed, dtype);
  const std::string suffix =
      std::string(style == RopeStyle::Interleaved ? ".interleaved" : ".half") +
      "." + nameOf(dtype) + ".tables_" + nameOf(tableDtype) + "." +
      shapeName({batch, seq, heads, headDim});
  if (!checker.expectOk("rope" + suffix, dCos.upload(tableDtype, cos)) ||
      !checker.expectOk("rope" + suffix, dSin.upload(tableDtype, sin)) ||
      !checker.expectOk("rope" + suffix, dX.upload(dtype, x)) ||
      !checker.expectOk("rope" + suffix, dOut.allocate(dtype, count)) ||
      !checker.expectOk("rope" + suffix, dCos.download(cos)) ||
      !checker.expectOk("rope" + suffix, dSin.download(sin)))
    return;
  for (bool backward : {false, true}) {
    const std::string name =
        (backward ? "rope_backward" : "rope_forward") + suffix;
    Status status =
        backward ? ropeBackward(context.stream.get(), dtype, tableDtype,
                                dX.get(), dCos.get(), dSin.get(), dOut.get(),
                                batch, seq, heads, headDim, style)
                 : ropeForward(context.stream.get(), dtype, tableDtype,
                               dX.get(), dCos.get(), dSin.get(), dOut.get(),
                               batch, seq, heads, headDim, style);
    std::vector<double> actual, expected(static_cast<size_t>(count));
    if (!checker.expectOk(name, status) ||
        !checker.expectOk(name, dOut.download(actual)))
      continue;
    ref::rope(x.data(), cos.data(), sin.data(), expected.data(), batch, seq,
              heads, headDim, style, backward);
    checker.compare(name, actual, expected, toleranceFor(dtype));
  }
}

void checkSwiGlu(Checker &checker, Context &context, int32_t dtype,
                 int64_t rows, int64_t cols, int64_t stride, uint32_t seed) {
  const std::string suffix = "." + nameOf(dtype) + "." +
                             shapeName({rows, cols}) + ".stride" +
                             std::to_string(stride);
  // gate and up interleave by rows when stride = 2 cols (one fused buffer).
  const int64_t span = rows * stride;
  const bool fused = stride >= 2 * cols;
  std::vector<double> inputs =
      randomValues(fused ? span : 2 * span, seed, dtype, 4.0);
  std::vector<double> dout = randomValues(rows * cols, seed + 1, dtype);
  DeviceTensor dInputs, dDout, dOut, dGrads;
  const std::string name = "swiglu" + suffix;
  if (!checker.expectOk(name, dInputs.upload(dtype, inputs)) ||
      !checker.expectOk(name, dDout.upload(dtype, dout)) ||
      !checker.expectOk(name, dOut.allocate(dtype, rows * cols)) ||
      !checker.expectOk(
          name, dGrads.upload(dtype, std::vector<double>(inputs.size(), 0.0))))
    return;
  const int64_t upOffset = fused ? cols : span;
  const size_t bytes = dtypeSize(dtype);
  const char *base = dInputs.as<char>();
  char *grads = dGrads.as<char>();
  cudaStream_t stream = context.stream.get();
  std::vector<double> out, gradsActual;
  if (checker.expectOk("swiglu_forward" + suffix,
                       swiGluForward(stream, dtype, base,
                                     base + upOffset * bytes, dOut.get(), rows,
                                     cols, stride)) &&
      checker.expectOk("swiglu_forward" + suffix, dOut.download(out))) {
    std::vector<double> expected(static_cast<size_t>(rows * cols));
    ref::swiGluForward(inputs.data(), inputs.data() + upOffset, expected.data(),
                       rows, cols, stride);
    checker.compare("swiglu_forward" + suffix, out, expected,
                    toleranceFor(dtype));
  }
  if (checker.expectOk("swiglu_backward" + suffix,
                       swiGluBackward(stream, dtype, base,
                                      base + upOffset * bytes, dDout.get(),
                                      grads, grads + upOffset * bytes, rows,
                                      cols, stride)) &&
      checker.expectOk("swiglu_backward" + suffix,
                       dGrads.download(gradsActual))) {
    std::vector<double> expected(inputs.size(), 0.0);
    ref::swiGluBackward(inputs.data(), inputs.data() + upOffset, dout.data(),
                        expected.data(), expected.data() + upOffset, rows, cols,
                        stride);
    checker.compare("swiglu_backward" + suffix, gradsActual, expected,
                    toleranceFor(dtype));
  }
}

void checkSoftmax(Checker &checker, Context &context, int32_t dtype,
                  int64_t rows, int64_t cols, uint32_t seed) {
  const std::string suffix =
      "." + nameOf(dtype) + "." + shapeName({rows, cols});
  std::vector<double> x = randomValues(rows * cols, seed, dtype, 8.0);
  std::vector<double> dy = randomValues(rows * cols, seed + 1, dtype);
  DeviceTensor dX, dY, dDy, dDx;
  const std::string forward = "softmax_forward" + suffix;
  const std::string backward = "softmax_backward" + suffix;
  if (!checker.expectOk(forward, dX.upload(dtype, x)) ||
      !checker.expectOk(forward, dDy.upload(dtype, dy)) ||
      !checker.expectOk(forward, dY.allocate(dtype, rows * cols)) ||
      !checker.expectOk(forward, dDx.allocate(dtype, rows * cols)))
    return;
  cudaStream_t stream = context.stream.get();
  std::vector<double> y, dx, expected(x.size());
  if (!checker.expectOk(forward, softmaxForward(stream, dtype, dX.get(),
                                                dY.get(), rows, cols)) ||
      !checker.expectOk(forward, dY.download(y)))
    return;
  ref::softmaxForward(x.data(), expected.data(), rows, cols);
  checker.compare(forward, y, expected, toleranceFor(dtype));
  // The backward from the GPU's probabilities (what it reads).
  if (!checker.expectOk(backward,
                        softmaxBackward(stream, dtype, dY.get(), dDy.get(),
                                        dDx.get(), rows, cols)) ||
      !checker.expectOk(backward, dDx.download(dx)))
    return;
  ref::softmaxBackward(y.data(), dy.data(), expected.data(), rows, cols);
  checker.compare(backward, dx, expected, toleranceFor(dtype));
}

} // namespace

void check::checkElementwise(Checker &checker, Context &context) {
  uint32_t seed = 1000;
  const std::pair<int32_t, int32_t> normTypes[] = {{TITANRT_F32, TITANRT_F32},
                                                   {TITANRT_BF16, TITANRT_BF16},
                                                   {TITANRT_BF16, TITANRT_F32}};
  for (auto [dtype, weightDtype] : normTypes)
    for (auto [rows, cols] :
         {std::pair<int64_t, int64_t>{37, 4096}, {300, 257}, {5, 16}})
      checkRmsNorm(checker, context, dtype, weightDtype, rows, cols, seed += 3);
  for (auto [dtype, tableDtype] : {std::pair{TITANRT_F32, TITANRT_F32},
                                   std::pair{TITANRT_BF16, TITANRT_F32},
                                   std::pair{TITANRT_BF16, TITANRT_BF16}}) {
    checkRope(checker, context, dtype, tableDtype, 2, 37, 3, 128,
              RopeStyle::Interleaved, seed += 3);
    checkRope(checker, context, dtype, tableDtype, 1, 65, 4, 64,
              RopeStyle::Half, seed += 3);
  }
  for (int32_t dtype : {TITANRT_F32, TITANRT_BF16}) {
    checkSwiGlu(checker, context, dtype, 33, 1000, 1000, seed += 3);
    checkSwiGlu(checker, context, dtype, 17, 96, 192, seed += 3);
    checkSoftmax(checker, context, dtype, 33, 1000, seed += 3);
    checkSoftmax(checker, context, dtype, 4, 50257, seed += 3);
    checkSoftmax(checker, context, dtype, 64, 7, seed += 3);
  }
}
