//===- AttentionEmulationTest.cpp - attention kernels on CPU threads ------===//
//
// The CUDA source of the attention kernels (runtime/cuda/Attention*.cu),
// compiled by the host compiler under EmulatedCuda.h and run on CPU
// threads, against the double-precision reference (runtime/cuda/
// Reference.h) on titan-cuda-kernel-check's shapes and tolerances: the
// tensor-core kernels (bf16, head dims 16, 64, 128) and the CUDA-core ones
// (f32; bf16 with head dims 4 and 36, and forced for the others), and which
// kernels each call launched. On a GPU, kernels.test runs the same comparisons
// on the hardware, and the backend's ABI calls besides.
//
//===----------------------------------------------------------------------===//

#include "EmulatedCuda.h"

namespace {
/// The dynamic shared memory of the block that runs (one at a time); the
/// kernels' `extern __shared__` declarations name it.
alignas(16) float4 sharedMemory[227 * 1024 / sizeof(float4)];
} // namespace

#include "AttentionBackward.cu"
#include "AttentionForward.cu"

#include "../KernelCheck/KernelCheck.h"
#include "cuda/Reference.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace titan::rt;
using namespace titan::rt::cuda;

/// Host "device" memory of element type T.
template <typename T> struct Tensor {
  explicit Tensor(const std::vector<double> &values) : data(values.size()) {
    for (size_t i = 0; i < values.size(); ++i)
      data[i] = T(float(values[i]));
  }
  explicit Tensor(size_t count) : data(count) {}
  std::vector<double> values() const {
    return std::vector<double>(data.begin(), data.end());
  }
  std::vector<T> data;
};

/// Uniform values in [-range, range], exactly representable in T.
template <typename T>
std::vector<double> randomValues(size_t count, uint32_t seed, double range) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> distribution(-range, range);
  std::vector<double> values(count);
  for (double &value : values)
    value = double(float(T(float(distribution(generator)))));
  return values;
}

/// Max |actual - expected| over max |expected| (the kernel check's
/// measure).
double relativeError(const std::vector<double> &actual,
                     const std::vector<double> &expected) {
  double error = 0, scale = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    error = std::max(error, std::abs(actual[i] - expected[i]));
    scale = std::max(scale, std::abs(expected[i]));
  }
  return scale > 0 ? error / scale : error;
}

template <typename T> constexpr int32_t dtypeOf() {
  return std::is_same_v<T, bf16> ? TITANRT_BF16 : TITANRT_F32;
}

template <typename T>
void checkAttention(AttentionShape shape, uint32_t seed,
                    AttentionKernels kernels = AttentionKernels::Auto) {
  shape.scale = 1.0 / std::sqrt(double(shape.headDim));
  const int32_t dtype = dtypeOf<T>();
  const double tolerance = dtype == TITANRT_BF16 ? 1.6e-2 : 1e-4;
  const size_t qCount = shape.batch * shape.qHeads * shape.seq * shape.headDim;
  const size_t kvCount =
      shape.batch * shape.kvHeads * shape.seq * shape.headDim;
  const size_t rows = shape.batch * shape.qHeads * shape.seq;
  const std::vector<double> q = randomValues<T>(qCount, seed, 2.0),
                            k = randomValues<T>(kvCount, seed + 1, 2.0),
                            v = randomValues<T>(kvCount, seed + 2, 1.0),
                            dout = randomValues<T>(qCount, seed + 3, 1.0);
  Tensor<T> dq(qCount), dk(kvCount), dv(kvCount), out(qCount);
  Tensor<T> qTensor(q), kTensor(k), vTensor(v), doutTensor(dout);
  std::vector<float> lse(rows), workspace(rows);

  emulated::launchedKernels.clear();
  ASSERT_TRUE(attentionForward(nullptr, dtype, shape, qTensor.data.data(),
                               kTensor.data.data(), vTensor.data.data(),
                               out.data.data(), lse.data(), kernels)
                  .ok());
  std::vector<double> expectedOut(qCount), expectedLse(rows);
  reference::attentionForward(shape, q.data(), k.data(), v.data(),
                              expectedOut.data(), expectedLse.data());
  const std::vector<double> outValues = out.values();
  const std::vector<double> lseValues(lse.begin(), lse.end());
  EXPECT_LE(relativeError(outValues, expectedOut), tolerance);
  EXPECT_LE(relativeError(lseValues, expectedLse), 1e-4);

  ASSERT_TRUE(attentionBackward(nullptr, dtype, shape, qTensor.data.data(),
                                kTensor.data.data(), vTensor.data.data(),
                                out.data.data(), doutTensor.data.data(),
                                lse.data(), dq.data.data(), dk.data.data(),
                                dv.data.data(), workspace.data(), kernels)
                  .ok());
  std::vector<double> expectedDq(qCount), expectedDk(kvCount),
      expectedDv(kvCount);
  reference::attentionBackward(shape, q.data(), k.data(), v.data(),
                               outValues.data(), dout.data(), lseValues.data(),
                               expectedDq.data(), expectedDk.data(),
                               expectedDv.data());
  EXPECT_LE(relativeError(dq.values(), expectedDq), tolerance);
  EXPECT_LE(relativeError(dk.values(), expectedDk), tolerance);
  EXPECT_LE(relativeError(dv.values(), expectedDv), tolerance);
}

template <typename F> void *kernel(F *function) {
  return reinterpret_cast<void *>(function);
}

TEST(CudaAttentionEmulationTest, TensorCores) {
  uint32_t seed = 7000;
  for (const AttentionShape &shape : check::attentionCheckShapes()) {
    if (!attentionUsesTensorCores(TITANRT_BF16, shape.headDim))
      continue;
    SCOPED_TRACE(shape.headDim);
    checkAttention<bf16>(shape, seed += 4);
    EXPECT_EQ(emulated::launchedKernels,
              (std::vector<void *>{kernel(attentionForwardMmaKernel),
                                   kernel(attentionDeltaKernel<bf16>),
                                   kernel(attentionBackwardKvMmaKernel),
                                   kernel(attentionBackwardQMmaKernel)}));
  }
}

TEST(CudaAttentionEmulationTest, CudaCores) {
  uint32_t seed = 8000;
  for (const AttentionShape &shape : check::attentionCheckShapes()) {
    SCOPED_TRACE(shape.headDim);
    checkAttention<float>(shape, seed += 4);
    EXPECT_EQ(emulated::launchedKernels,
              (std::vector<void *>{kernel(attentionForwardKernel<float>),
                                   kernel(attentionDeltaKernel<float>),
                                   kernel(attentionBackwardKvKernel<float>),
                                   kernel(attentionBackwardQKernel<float>)}));
    // bf16 on CUDA cores: where tensor cores would run, forced.
    const AttentionKernels kernels =
        attentionUsesTensorCores(TITANRT_BF16, shape.headDim)
            ? AttentionKernels::CudaCores
            : AttentionKernels::Auto;
    checkAttention<bf16>(shape, seed += 4, kernels);
    EXPECT_EQ(emulated::launchedKernels,
              (std::vector<void *>{kernel(attentionForwardKernel<bf16>),
                                   kernel(attentionDeltaKernel<bf16>),
                                   kernel(attentionBackwardKvKernel<bf16>),
                                   kernel(attentionBackwardQKernel<bf16>)}));
  }
}

} // namespace
