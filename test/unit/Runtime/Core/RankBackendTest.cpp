//===- RankBackendTest.cpp - libtitanrt.so's rank backend -----------------===//
//
// The CPU runtime makes the CPU backend and the step memory asked for, and
// refuses a program compiled for CUDA with the executable to run instead.
//
//===----------------------------------------------------------------------===//

#include "core/RankBackend.h"

#include <gtest/gtest.h>

#include <string>

using namespace titan::rt;

namespace {

TEST(RankBackendTest, CpuProgramsGetTheCpuBackend) {
  ProgramDescription program;
  RankBackendOptions options;
  options.threads = 2;
  RankBackend backend;
  ASSERT_TRUE(createRankBackend(program, options, backend).ok());
  EXPECT_STREQ(backend.compute->getName(), "cpu");
  ASSERT_NE(backend.memory, nullptr);
  options.stepMemory = "gpu";
  RankBackend unknown;
  Status status = createRankBackend(program, options, unknown);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(status.getMessage().find("TITAN_STEP_MEMORY"), std::string::npos)
      << status.getMessage();
}

TEST(RankBackendTest, CudaProgramsAreRefused) {
  ProgramDescription program;
  program.backend = "cuda";
  RankBackend backend;
  Status status = createRankBackend(program, RankBackendOptions(), backend);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(),
            "this program was compiled for the cuda backend, but this runtime "
            "(libtitanrt.so) is the cpu backend's: run the executable "
            "titan-compile --backend=cuda built (it links libtitanrt_cuda.so)");
  EXPECT_EQ(backend.compute, nullptr);
}

} // namespace
