//===- CudaStatusTest.cpp - errors of the CUDA backend, without a GPU -----===//
//
// CUDA and cuBLASLt errors become Statuses that name the call and the fix;
// the launchers refuse bad arguments before touching the GPU (so these
// tests run on machines without one), and do nothing for empty problems.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaStatus.h"
#include "cuda/Device.h"
#include "cuda/Kernels.h"

#include "gtest/gtest.h"

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

void expectMentions(const Status &status,
                    std::initializer_list<const char *> fragments) {
  for (const char *fragment : fragments)
    EXPECT_NE(status.getMessage().find(fragment), std::string::npos)
        << "'" << fragment << "' not in: " << status.getMessage();
}

TEST(CudaStatusTest, CudaErrorsNameTheCallAndTheFix) {
  EXPECT_TRUE(checkCuda(cudaSuccess, "cudaMalloc").ok());
  Status oom =
      checkCuda(cudaErrorMemoryAllocation, "cudaMalloc", "the arena, 1.0 GiB");
  EXPECT_EQ(oom.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  expectMentions(oom, {"cudaMalloc (the arena, 1.0 GiB) failed: out of memory "
                       "(cudaErrorMemoryAllocation)",
                       "activation checkpointing", "nvidia-smi"});
  Status noDriver = checkCuda(cudaErrorInsufficientDriver, "cudaSetDevice");
  EXPECT_EQ(noDriver.getCode(), TITANRT_ERROR_UNSUPPORTED);
  expectMentions(noDriver,
                 {"cudaSetDevice failed", "nvidia-smi -L", "CPU backend"});
  Status image = checkCuda(cudaErrorNoKernelImageForDevice, "kernel launch",
                           "rms_norm (CUDA)");
  expectMentions(image, {"kernel launch (rms_norm (CUDA))", "sm_90",
                         "CUDA_ARCHITECTURES"});
  // The NCCL communicators report their CUDA failures through this too
  // (comm/nccl/NcclStatus.h: checkCudaAt).
  Status device = checkCuda(cudaErrorInvalidDevice, "cudaSetDevice");
  EXPECT_EQ(device.getCode(), TITANRT_ERROR_UNSUPPORTED);
  expectMentions(
      device, {"cudaSetDevice failed", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES"});
  Status fault = checkCuda(cudaErrorIllegalAddress, "cudaEventQuery");
  EXPECT_EQ(fault.getCode(), TITANRT_ERROR_INTERNAL);
  expectMentions(fault, {"cudaErrorIllegalAddress", "compute-sanitizer"});
  Status other = checkCuda(cudaErrorInvalidValue, "cudaMemcpyAsync");
  EXPECT_EQ(other.getCode(), TITANRT_ERROR_INTERNAL);
  expectMentions(other, {"cudaErrorInvalidValue"});
}

TEST(CudaStatusTest, CublasErrorsNameTheStatus) {
  EXPECT_TRUE(checkCublas(CUBLAS_STATUS_SUCCESS, "cublasLtMatmul").ok());
  Status unsupported =
      checkCublas(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmulAlgoGetHeuristic",
                  "no algorithm for 4x4x4, batch 1");
  EXPECT_EQ(unsupported.getCode(), TITANRT_ERROR_UNSUPPORTED);
  expectMentions(unsupported,
                 {"cublasLtMatmulAlgoGetHeuristic (no algorithm for 4x4x4",
                  "CUBLAS_STATUS_NOT_SUPPORTED", "aligned"});
  EXPECT_EQ(checkCublas(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate").getCode(),
            TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      checkCublas(CUBLAS_STATUS_EXECUTION_FAILED, "cublasLtMatmul").getCode(),
      TITANRT_ERROR_INTERNAL);
}

TEST(CudaStatusTest, FormatsBytes) {
  EXPECT_EQ(formatDeviceBytes(512), "512 B");
  EXPECT_EQ(formatDeviceBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatDeviceBytes(int64_t(12) << 30), "12.0 GiB");
}

TEST(CudaStatusTest, SelectingAMissingGpuFails) {
  // Without a GPU cudaGetDeviceCount fails; with one, GPU 4096 is missing.
  Status status = selectDevice(4096);
  EXPECT_FALSE(status.ok());
  EXPECT_FALSE(status.getMessage().empty());
}

TEST(CudaStatusTest, LaunchersRefuseBadArgumentsBeforeTheGpu) {
  cudaStream_t stream = nullptr;
  float buffer[4] = {};
  Status dtype = rmsNormForward(stream, TITANRT_F64, TITANRT_F32, buffer,
                                buffer, buffer, 1, 4, 1e-5);
  EXPECT_EQ(dtype.getCode(), TITANRT_ERROR_UNSUPPORTED);
  expectMentions(dtype, {"rms_norm (CUDA): dtype f64", "f32, bf16"});
  EXPECT_EQ(rmsNormForward(stream, TITANRT_F32, 99, buffer, buffer, buffer, 1,
                           4, 1e-5)
                .getCode(),
            TITANRT_ERROR_INVALID_ARGUMENT);
  expectMentions(rmsNormForward(stream, TITANRT_F32, TITANRT_F32, buffer,
                                buffer, buffer, -2, 4, 1e-5),
                 {"rows = -2 is negative"});
  expectMentions(rmsNormForward(stream, TITANRT_F32, TITANRT_F32, buffer,
                                buffer, buffer, 1, 4, 0.0),
                 {"eps = 0", "positive"});
  expectMentions(softmaxForward(stream, TITANRT_BF16, nullptr, buffer, 2, 2),
                 {"softmax (CUDA): x is null"});
  expectMentions(ropeForward(stream, TITANRT_F32, TITANRT_F32, buffer, buffer,
                             buffer, buffer, 1, 1, 1, 3,
                             RopeStyle::Interleaved),
                 {"head_dim = 3 is odd"});
  expectMentions(
      swiGluForward(stream, TITANRT_F32, buffer, buffer, buffer, 2, 4, 3),
      {"input_stride = 3 is less than cols = 4"});
  AttentionShape shape{1, 2, 2, 8, 256, true, 0.1};
  EXPECT_EQ(attentionForward(stream, TITANRT_BF16, shape, buffer, buffer,
                             buffer, buffer, buffer)
                .getCode(),
            TITANRT_ERROR_UNSUPPORTED);
  // The log-sum-exp is the backward's input: the forward must write it.
  expectMentions(attentionForward(stream, TITANRT_F32,
                                  {1, 2, 2, 8, 64, true, 0.1}, buffer, buffer,
                                  buffer, buffer, nullptr),
                 {"attention (CUDA): lse is null"});
  CrossEntropyShape loss{2, 8, 0, -100, TITANRT_F32};
  expectMentions(crossEntropyPartials(stream, TITANRT_F32, loss, buffer, buffer,
                                      buffer, buffer, buffer),
                 {"labels dtype f32"});
  expectMentions(embeddingBackward(stream, TITANRT_F32, TITANRT_I64, buffer,
                                   buffer, buffer, buffer, int64_t(1) << 31, 4,
                                   1),
                 {"below 2^31"});
}

TEST(CudaStatusTest, EmptyProblemsLaunchNothing) {
  // No GPU is touched: these succeed on any machine.
  cudaStream_t stream = nullptr;
  EXPECT_TRUE(rmsNormForward(stream, TITANRT_BF16, TITANRT_F32, nullptr,
                             nullptr, nullptr, 0, 4096, 1e-5)
                  .ok());
  EXPECT_TRUE(
      softmaxBackward(stream, TITANRT_F32, nullptr, nullptr, nullptr, 8, 0)
          .ok());
  EXPECT_TRUE(attentionForward(stream, TITANRT_F32,
                               {0, 32, 8, 2048, 128, true, 0.088}, nullptr,
                               nullptr, nullptr, nullptr, nullptr)
                  .ok());
  EXPECT_TRUE(embeddingForward(stream, TITANRT_F32, nullptr, TITANRT_I32,
                               nullptr, nullptr, 0, 100, 16)
                  .ok());
}

} // namespace
