//===- KernelModulesTest.cpp - launching compiled kernels, without a GPU --===//
//
// The stream and the error recording of the entry points the compiler's
// host code calls (cuda/KernelModules.h). A failure is recorded once per
// thread, the first one wins, and taking it clears it. Without a GPU,
// loading an image fails; with one, loading these bytes fails too (they
// are no fatbin): either way the error names the call and the kernel.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelModules.h"

#include "gtest/gtest.h"

#include <string>
#include <thread>

namespace {

TEST(KernelModulesTest, TheStreamIsPerThread) {
  int marker = 0;
  titanrt_cuda_set_stream(&marker);
  EXPECT_EQ(titanrt_cuda_stream(), &marker);
  std::thread([] { EXPECT_EQ(titanrt_cuda_stream(), nullptr); }).join();
  titanrt_cuda_set_stream(nullptr);
  EXPECT_EQ(titanrt_cuda_stream(), nullptr);
}

TEST(KernelModulesTest, TheFirstErrorIsRecordedUntilTaken) {
  EXPECT_EQ(titanrt_cuda_take_launch_error(), nullptr);
  static char image[] = "not a fatbin";
  void *module = mgpuModuleLoad(image, sizeof(image));
  void *function = mgpuModuleGetFunction(module, "kernel_exp_kernel");
  EXPECT_EQ(function, nullptr);
  // The launch of the missing kernel fails too, but the cause stays.
  mgpuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr,
                   0);
  const char *error = titanrt_cuda_take_launch_error();
  ASSERT_NE(error, nullptr);
  std::string message = error;
  // The CUDA runtime may load the image lazily: then the load succeeds and
  // looking up the kernel is the call that fails.
  EXPECT_TRUE(message.find("cudaLibraryLoadData") != std::string::npos ||
              message.find("cudaLibraryGetKernel") != std::string::npos)
      << message;
  EXPECT_NE(message.find("kernel_exp_kernel"), std::string::npos) << message;
  EXPECT_EQ(titanrt_cuda_take_launch_error(), nullptr);
  mgpuModuleUnload(module);
}

TEST(KernelModulesTest, ALaunchWithoutKernelIsAnError) {
  mgpuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr, 0);
  const char *error = titanrt_cuda_take_launch_error();
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("mgpuLaunchKernel"), std::string::npos);
  // Errors are per thread.
  std::thread([] {
    mgpuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr,
                     0);
  }).join();
  EXPECT_EQ(titanrt_cuda_take_launch_error(), nullptr);
}

} // namespace
