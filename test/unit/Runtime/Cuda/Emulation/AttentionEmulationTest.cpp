//===- AttentionEmulationTest.cpp - which attention kernels run -----------===//
//
// The CUDA source of the attention kernels (runtime/cuda/Attention*.cu),
// compiled by the host compiler under EmulatedCuda.h: KernelCheckEmulation-
// Test checks their numbers (titan-cuda-kernel-check's attention family);
// this test checks which kernels each call launches: tensor cores for bf16
// with a head dim the mma's k divides, CUDA cores for f32, for other head
// dims, for operands that are not 16-byte aligned, and when the caller
// asks for them (AttentionKernels::CudaCores).
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

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace titan::rt;
using namespace titan::rt::cuda;

template <typename F> void *kernel(F *function) {
  return reinterpret_cast<void *>(function);
}

/// The kernels a forward and a backward of one row of `headDim` launch, on
/// zeroed operands starting `offset` bytes into 16-byte aligned memory.
std::vector<void *> launchedKernels(int32_t dtype, int64_t headDim,
                                    AttentionKernels kernels,
                                    size_t offset = 0) {
  const AttentionShape shape{1, 2, 1, 1, headDim, true, 0.125};
  // 2 query heads' and 1 KV head's rows of headDim f32 at most, each
  // operand in its own 16-byte aligned buffer.
  std::vector<float4> q(headDim + 1), k(headDim + 1), v(headDim + 1),
      out(headDim + 1), dout(headDim + 1), dq(headDim + 1), dk(headDim + 1),
      dv(headDim + 1);
  auto at = [&](std::vector<float4> &buffer) {
    return reinterpret_cast<char *>(buffer.data()) + offset;
  };
  float lse[2] = {}, workspace[2] = {};
  emulated::launchedKernels.clear();
  EXPECT_TRUE(attentionForward(nullptr, dtype, shape, at(q), at(k), at(v),
                               at(out), lse, kernels)
                  .ok());
  EXPECT_TRUE(attentionBackward(nullptr, dtype, shape, at(q), at(k), at(v),
                                at(out), at(dout), lse, at(dq), at(dk), at(dv),
                                workspace, kernels)
                  .ok());
  return emulated::launchedKernels;
}

template <typename T> std::vector<void *> cudaCoreKernels() {
  return {kernel(attentionForwardKernel<T>), kernel(attentionDeltaKernel<T>),
          kernel(attentionBackwardKvKernel<T>),
          kernel(attentionBackwardQKernel<T>)};
}

TEST(CudaAttentionEmulationTest, TensorCoresForBf16WithHeadDimsOf16) {
  const std::vector<void *> tensorCores = {kernel(attentionForwardMmaKernel),
                                           kernel(attentionDeltaKernel<bf16>),
                                           kernel(attentionBackwardKvMmaKernel),
                                           kernel(attentionBackwardQMmaKernel)};
  for (int64_t headDim : {16, 32, 64, 128})
    EXPECT_EQ(launchedKernels(TITANRT_BF16, headDim, AttentionKernels::Titan),
              tensorCores)
        << headDim;
}

TEST(CudaAttentionEmulationTest, CudaCoresOtherwise) {
  for (int64_t headDim : {4, 36, 64})
    EXPECT_EQ(launchedKernels(TITANRT_F32, headDim, AttentionKernels::Titan),
              cudaCoreKernels<float>())
        << headDim;
  for (int64_t headDim : {4, 36, 72})
    EXPECT_EQ(launchedKernels(TITANRT_BF16, headDim, AttentionKernels::Titan),
              cudaCoreKernels<bf16>())
        << headDim;
  // Operands 2 bytes off 16-byte alignment: no vector loads.
  EXPECT_EQ(launchedKernels(TITANRT_BF16, 64, AttentionKernels::Titan, 2),
            cudaCoreKernels<bf16>());
  EXPECT_EQ(launchedKernels(TITANRT_BF16, 64, AttentionKernels::CudaCores),
            cudaCoreKernels<bf16>());
}

} // namespace
