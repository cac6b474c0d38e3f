//===- NcclCommunicatorTest.cpp - the checks before NCCL is called --------===//
//
// Without a GPU: a communicator without an NCCL handle checks its arguments
// as every rank's does, naming the operation and the group, and then
// refuses to run; operations of zero bytes never reach NCCL.
//
//===----------------------------------------------------------------------===//

#include "comm/nccl/NcclCommunicator.h"
#include "comm/CommChecks.h"

#include "gtest/gtest.h"

using namespace titan::rt;

namespace {

class NcclCommunicatorChecks : public ::testing::Test {
protected:
  /// Member 1 of the group of world ranks 2 and 3 over (tp).
  NcclCommunicator communicator{nullptr,
                                0,
                                nullptr,
                                {2, 3},
                                1,
                                describeCommunicator("(tp)", {2, 3}),
                                std::chrono::seconds(1),
                                nullptr,
                                0};
  const std::string group = "over mesh axes (tp) [ranks 2, 3]";
  /// Stands for a device buffer: never dereferenced.
  char buffer[16] = {};
  char other[16] = {};
};

TEST_F(NcclCommunicatorChecks, RankAndSizeComeFromTheGroup) {
  EXPECT_EQ(communicator.getRank(), 1);
  EXPECT_EQ(communicator.getSize(), 2);
  EXPECT_EQ(communicator.getStream(), nullptr);
}

TEST_F(NcclCommunicatorChecks, ReductionsNcclCannotDoAreRefused) {
  Status status =
      communicator.allReduce(TITANRT_BOOL, TITANRT_SUM, buffer, buffer, 4);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(),
            "all_reduce " + group +
                ": reductions of i1 are not supported by NCCL, which has no "
                "boolean type (reduce them as i32)");
  status = communicator.reduceScatter(
      TITANRT_F32, static_cast<titanrt_reduce>(7), buffer, other, 2);
  EXPECT_EQ(status.getMessage(),
            "reduce_scatter " + group +
                ": unknown reduction 7 (expected sum, avg, max or min)");
}

TEST_F(NcclCommunicatorChecks, BadArgumentsAreRefused) {
  EXPECT_EQ(communicator.allGather(buffer, other, -1).getMessage(),
            "all_gather " + group + ": bytes is -1");
  EXPECT_EQ(communicator.broadcast(2, buffer, buffer, 4).getMessage(),
            "broadcast " + group +
                ": root 2 is not a group index (the group has 2 ranks)");
  EXPECT_EQ(communicator.send(1, 0, buffer, 4).getMessage(),
            "send " + group + ": peer 1 is this rank itself");
  EXPECT_EQ(communicator.recv(0, -1, buffer, 4).getMessage(),
            "recv " + group + ": tag -1 is outside [0, 2^32)");
  Status status = communicator.allToAll(buffer, buffer, 8);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(status.getMessage(),
            "all_to_all " + group +
                ": the input and the output are the same buffer (NCCL's "
                "all_to_all needs two)");
}

TEST_F(NcclCommunicatorChecks, NothingOfZeroBytesReachesNccl) {
  EXPECT_TRUE(communicator.allGather(buffer, other, 0).ok());
  EXPECT_TRUE(
      communicator.allReduce(TITANRT_F32, TITANRT_AVG, buffer, buffer, 0).ok());
  EXPECT_TRUE(
      communicator.reduceScatter(TITANRT_BF16, TITANRT_MAX, buffer, other, 0)
          .ok());
  EXPECT_TRUE(communicator.allToAll(buffer, other, 0).ok());
  EXPECT_TRUE(communicator.broadcast(0, buffer, other, 0).ok());
  EXPECT_TRUE(communicator.send(0, 3, buffer, 0).ok());
  EXPECT_TRUE(communicator.recv(0, 3, other, 0).ok());
  // Nothing was issued: nothing to wait for.
  EXPECT_TRUE(communicator.completeSends().ok());
}

TEST_F(NcclCommunicatorChecks, WithoutAnNcclCommunicatorEveryOperationFails) {
  const std::string unusable =
      ": the communicator is unusable after an earlier failure (it has no "
      "NCCL communicator)";
  Status status =
      communicator.allReduce(TITANRT_F32, TITANRT_SUM, buffer, buffer, 4);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_EQ(status.getMessage(), "all_reduce " + group + unusable);
  EXPECT_EQ(communicator.send(0, 0, buffer, 4).getMessage(),
            "send " + group + unusable);
  EXPECT_EQ(communicator.barrier().getMessage(), "barrier " + group + unusable);
  EXPECT_FALSE(communicator.synchronize().ok());
}

} // namespace
