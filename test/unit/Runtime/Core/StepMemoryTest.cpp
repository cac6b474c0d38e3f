//===- StepMemoryTest.cpp - where the step function's regions live --------===//
//
// The host step memory is the host mirror itself; the copying one has
// regions of its own that see the mirror's bytes only through upload and
// give theirs back only through download, each checked against its region.
//
//===----------------------------------------------------------------------===//

#include "core/StepMemory.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace titan::rt;

namespace {

/// Regions of 64 (arena), 32 (state) and 16 (inputs) bytes.
ProgramDescription smallProgram() {
  ProgramDescription description;
  description.arenaBytes = 64;
  description.stateBytes = 32;
  description.inputBytes = 16;
  return description;
}

TEST(StepMemoryTest, HostStepRunsOnTheMirror) {
  ProgramDescription description = smallProgram();
  Regions mirror;
  ASSERT_TRUE(mirror.allocate(description).ok());
  std::unique_ptr<StepMemory> memory;
  ASSERT_TRUE(createStepMemory("host", memory).ok());
  ASSERT_TRUE(memory->allocate(description, mirror).ok());
  for (Region region : {Region::Arena, Region::State, Region::Inputs})
    EXPECT_EQ(memory->getStepBase(region), mirror.getBase(region));
  EXPECT_TRUE(memory->upload(Region::State, 0, 32).ok());
  EXPECT_TRUE(memory->download(Region::State, 0, 32).ok());
  EXPECT_TRUE(memory->synchronize().ok());
}

TEST(StepMemoryTest, CopyingStepSeesOnlyWhatIsCopied) {
  ProgramDescription description = smallProgram();
  Regions mirror;
  ASSERT_TRUE(mirror.allocate(description).ok());
  std::unique_ptr<StepMemory> memory;
  ASSERT_TRUE(createStepMemory("copying", memory).ok());
  ASSERT_TRUE(memory->allocate(description, mirror).ok());
  uint8_t *hostState = mirror.getBase(Region::State);
  uint8_t *stepState = memory->getStepBase(Region::State);
  ASSERT_NE(stepState, hostState);

  // An upload copies its range of the mirror, nothing else.
  std::memset(hostState, 7, 32);
  ASSERT_TRUE(memory->upload(Region::State, 8, 4).ok());
  EXPECT_EQ(stepState[7], 0);
  EXPECT_EQ(stepState[8], 7);
  EXPECT_EQ(stepState[11], 7);
  EXPECT_EQ(stepState[12], 0);

  // The step's writes reach the mirror only through a download.
  std::memset(stepState, 9, 32);
  EXPECT_EQ(hostState[0], 7);
  ASSERT_TRUE(memory->download(Region::State, 0, 32).ok());
  ASSERT_TRUE(memory->synchronize().ok());
  EXPECT_EQ(hostState[0], 9);
  EXPECT_EQ(hostState[31], 9);
  // Other regions are untouched.
  EXPECT_EQ(mirror.getBase(Region::Arena)[0], 0);
}

TEST(StepMemoryTest, CopiesOutsideTheRegionFail) {
  ProgramDescription description = smallProgram();
  Regions mirror;
  ASSERT_TRUE(mirror.allocate(description).ok());
  CopyingStepMemory memory;
  ASSERT_TRUE(memory.allocate(description, mirror).ok());
  Status upload = memory.upload(Region::State, 24, 16);
  EXPECT_EQ(upload.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(upload.getMessage(),
            "cannot upload 16 bytes at offset 24 of the state (32 bytes)");
  Status download = memory.download(Region::Inputs, -1, 4);
  EXPECT_EQ(download.getMessage(),
            "cannot download 4 bytes at offset -1 of the inputs (16 bytes)");
  EXPECT_TRUE(memory.upload(Region::Inputs, 16, 0).ok());
}

TEST(StepMemoryTest, UnknownKindIsRefused) {
  std::unique_ptr<StepMemory> memory;
  EXPECT_TRUE(createStepMemory("", memory).ok());
  Status status = createStepMemory("gpu", memory);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(status.getMessage().find("TITAN_STEP_MEMORY is 'gpu'"),
            std::string::npos);
}

} // namespace
