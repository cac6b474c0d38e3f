//===- KernelCheckEmulationTest.cpp - the GPU check on CPU threads --------===//
//
// titan-cuda-kernel-check's element-wise, loss and attention families
// (RMSNorm, RoPE, SwiGLU, softmax, cross-entropy, embedding, the fused
// AdamW; attention on tensor cores and CUDA cores: the same shapes,
// references and tolerances, the bitwise reproducibility checks included)
// with the kernels emulated (EmulatedKernels.cpp, AttentionEmulationTest.cpp)
// and the CUDA runtime on host memory (EmulatedCudart.cpp). The GEMMs
// (cuBLASLt) and the backend's ABI calls need a GPU. Each family runs
// twice: asynchronous copies landing as late as the hardware may (a
// missing wait reads stale tiles) with the warps advancing together, and
// copies landing as early with each warp running ahead to its next block
// barrier (a missing barrier lets one warp overwrite what another still
// reads).
//
//===----------------------------------------------------------------------===//

#include "EmulatedCuda.h"

#include "../KernelCheck/KernelCheck.h"

#include <gtest/gtest.h>

namespace {

using namespace titan::rt::cuda;
using namespace titan::rt::cuda::check;

/// Runs one family; every comparison it prints must pass.
void runFamily(void (*family)(Checker &, Context &)) {
  Checker checker;
  Context context;
  ASSERT_TRUE(Stream::create(context.stream).ok());
  family(checker, context);
  EXPECT_GT(checker.getChecks(), 0);
  EXPECT_EQ(checker.getFailures(), 0);
}

TEST(CudaKernelCheckEmulationTest, Elementwise) { runFamily(checkElementwise); }

TEST(CudaKernelCheckEmulationTest, Loss) { runFamily(checkLoss); }

TEST(CudaKernelCheckEmulationTest, Attention) { runFamily(checkAttention); }

/// Runs `family` with copies landing when started and warps apart.
void runFamilyWithWarpsApart(void (*family)(Checker &, Context &)) {
  titan::emulation::ScheduleScope scope(titan::emulation::kWarpsApart);
  runFamily(family);
}

TEST(CudaKernelCheckEmulationTest, ElementwiseWithWarpsApart) {
  runFamilyWithWarpsApart(checkElementwise);
}

TEST(CudaKernelCheckEmulationTest, LossWithWarpsApart) {
  runFamilyWithWarpsApart(checkLoss);
}

TEST(CudaKernelCheckEmulationTest, AttentionWithWarpsApart) {
  runFamilyWithWarpsApart(checkAttention);
}

} // namespace
