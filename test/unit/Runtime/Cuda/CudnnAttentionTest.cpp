//===- CudnnAttentionTest.cpp - cuDNN's attention plans without a GPU -----===//
//
// The CUDA backend's attention graphs (runtime/cuda/CudnnAttention.cpp),
// planned for an H200 and an H100 described by their properties (cuDNN's
// JSON form of a device) instead of a device: cuDNN's heuristics must find
// an engine for each graph, and the engine must compile it. Without a GPU
// the CUDA driver is the toolkit's stub, which cannot load the compiled
// kernel, so the plan stops at that last step
// (CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER) after every check of the
// graph passed; on a GPU machine it succeeds. A graph cuDNN has no engine
// for fails earlier, with CUDNN_STATUS_NOT_SUPPORTED or no engine at all.
// Its own executable: the stub driver it loads must not meet other tests.
// Skipped without cuDNN 9.11 (device descriptions) or a driver library.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudnnAttention.h"

#include "gtest/gtest.h"

#include <dlfcn.h>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// An H200 (sm_90, 132 SMs, 60 MiB of L2, 141 GiB) as cuDNN describes a
/// device.
constexpr const char *kH200 =
    R"({"deviceName":"NVIDIA H200","deviceVer":900,"driverVer":13000,)"
    R"("cudaDeviceId":0,"multiProcessorCount":132,"warpSize":32,)"
    R"("maxGridSize":[2147483647,65535,65535],"maxBlockSize":[1024,1024,64],)"
    R"("maxThreadsPerBlock":1024,"maxThreadsPerSM":2048,"maxCtasPerSM":32,)"
    R"("regsPerBlock":65536,"maxRegistersPerSM":65536,)"
    R"("maxSharedMemoryPerBlock":49152,"maxSharedMemoryPerBlockOptin":232448,)"
    R"("reservedSharedMemoryPerBlock":1024,"l2CacheSize":62914560,)"
    R"("totalGlobalMem":150754820096,"smClockRateKHz":1980000,)"
    R"("memClockRateKHz":3201000,"pciDeviceId":0,"isTccDriver":0,)"
    R"("supportCoopLaunch":1})";

/// An H100 SXM: 50 MiB of L2, 80 GiB.
constexpr const char *kH100 =
    R"({"deviceName":"NVIDIA H100 80GB HBM3","deviceVer":900,)"
    R"("driverVer":13000,"cudaDeviceId":0,"multiProcessorCount":132,)"
    R"("warpSize":32,"maxGridSize":[2147483647,65535,65535],)"
    R"("maxBlockSize":[1024,1024,64],"maxThreadsPerBlock":1024,)"
    R"("maxThreadsPerSM":2048,"maxCtasPerSM":32,"regsPerBlock":65536,)"
    R"("maxRegistersPerSM":65536,"maxSharedMemoryPerBlock":49152,)"
    R"("maxSharedMemoryPerBlockOptin":232448,)"
    R"("reservedSharedMemoryPerBlock":1024,"l2CacheSize":52428800,)"
    R"("totalGlobalMem":85520809984,"smClockRateKHz":1980000,)"
    R"("memClockRateKHz":2619000,"pciDeviceId":0,"isTccDriver":0,)"
    R"("supportCoopLaunch":1})";

class CudnnAttentionTest : public ::testing::Test {
protected:
  void SetUp() override {
    Status status = loadCudnn(library);
    if (!status.ok())
      GTEST_SKIP() << status.getMessage();
    if (library->version < 91100)
      GTEST_SKIP() << "cuDNN " << library->version
                   << " cannot plan for a described device (9.11 can)";
    // The machine's driver, or the toolkit's stub (loaded under the
    // driver's name, which cuDNN then finds).
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) &&
        !dlopen(TITAN_CUDA_STUB_DRIVER, RTLD_NOW | RTLD_GLOBAL))
      GTEST_SKIP() << "no CUDA driver library, not even the stub at "
                   << TITAN_CUDA_STUB_DRIVER;
  }

  /// Plans `pass` for `shape` on `device` and expects cuDNN to compile it.
  void expectCompiled(AttentionPass pass, AttentionShape shape,
                      const char *device) {
    shape.scale = 0.125;
    Status status = planAttentionForDevice(*library, pass, shape, device);
    SCOPED_TRACE(
        std::string(pass == AttentionPass::Forward ? "forward" : "backward") +
        " " + std::to_string(shape.batch) + " x " +
        std::to_string(shape.qHeads) + "/" + std::to_string(shape.kvHeads) +
        " x " + std::to_string(shape.seq) + " x " +
        std::to_string(shape.headDim));
    if (status.ok())
      return;
    EXPECT_NE(
        status.getMessage().find("CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER"),
        std::string::npos)
        << status.getMessage();
  }

  const CudnnLibrary *library = nullptr;
};

TEST_F(CudnnAttentionTest, LlamaProxyCompilesForH200) {
  // titan-cuda-bench's proxy: 16 query and 8 KV heads of 128, seq 2048.
  const AttentionShape proxy{1, 16, 8, 2048, 128, true, 0};
  expectCompiled(AttentionPass::Forward, proxy, kH200);
  expectCompiled(AttentionPass::Backward, proxy, kH200);
}

TEST_F(CudnnAttentionTest, OtherShapesCompileForH100) {
  // Multi-head without a mask, multi-query with a ragged last tile.
  for (AttentionShape shape : {AttentionShape{2, 4, 4, 256, 64, false, 0},
                               AttentionShape{2, 4, 1, 100, 64, true, 0}}) {
    expectCompiled(AttentionPass::Forward, shape, kH100);
    expectCompiled(AttentionPass::Backward, shape, kH100);
  }
}

TEST_F(CudnnAttentionTest, HeadDimsCudnnCannotTakeAreRefused) {
  Status status = planAttentionForDevice(*library, AttentionPass::Forward,
                                         {1, 2, 2, 64, 136, true, 0.1}, kH200);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(),
            "cuDNN's fused attention takes head dimensions that are "
            "multiples of 8 up to 128, not 136");
}

TEST_F(CudnnAttentionTest, ADeviceDescriptionMissingAPropertyIsAnError) {
  Status status = planAttentionForDevice(*library, AttentionPass::Forward,
                                         {1, 2, 2, 64, 64, true, 0.1},
                                         R"({"multiProcessorCount":132})");
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INTERNAL);
  EXPECT_NE(status.getMessage().find("the device's properties"),
            std::string::npos)
      << status.getMessage();
}

} // namespace
