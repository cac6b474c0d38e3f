//===- NcclStatusTest.cpp - NCCL and CUDA failures as titan Statuses ------===//

#include "comm/nccl/NcclStatus.h"

#include "cuda/CudaStatus.h"

#include "gtest/gtest.h"

using namespace titan::rt;

namespace {

const std::string kWhere = "all_reduce over mesh axes (tp) [ranks 2, 3]";

TEST(NcclStatus, ResultNamesAndStatusCodes) {
  EXPECT_EQ(getNcclResultName(ncclRemoteError), "ncclRemoteError");
  EXPECT_EQ(getNcclResultName(ncclInProgress), "ncclInProgress");
  EXPECT_EQ(getNcclResultName(static_cast<ncclResult_t>(42)),
            "ncclResult_t 42");
  EXPECT_EQ(getNcclStatusCode(ncclSuccess), TITANRT_OK);
  EXPECT_EQ(getNcclStatusCode(ncclInvalidArgument),
            TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(getNcclStatusCode(ncclInvalidUsage),
            TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(getNcclStatusCode(ncclInternalError), TITANRT_ERROR_INTERNAL);
  EXPECT_EQ(getNcclStatusCode(ncclRemoteError), TITANRT_ERROR_COMMUNICATION);
  EXPECT_EQ(getNcclStatusCode(ncclSystemError), TITANRT_ERROR_COMMUNICATION);
  EXPECT_EQ(getNcclStatusCode(ncclUnhandledCudaError),
            TITANRT_ERROR_COMMUNICATION);
}

TEST(NcclStatus, MessagesNameTheOperationTheResultAndNcclsTexts) {
  EXPECT_EQ(formatNcclError(kWhere, ncclRemoteError,
                            "remote process exited or there was a network "
                            "error",
                            "socket closed by peer 10.0.0.2"),
            kWhere +
                ": NCCL failed with ncclRemoteError (remote process exited "
                "or there was a network error): socket closed by peer "
                "10.0.0.2; a peer of the group exited or its network failed: "
                "that rank's own error says why");
  // NCCL's texts are left out when it has none.
  EXPECT_EQ(formatNcclError("splitting", ncclSystemError, "", ""),
            "splitting: NCCL failed with ncclSystemError; a system call "
            "inside NCCL failed, often the network or shared memory "
            "(NCCL_DEBUG=WARN prints which)");
}

TEST(NcclStatus, StatusesCarryNcclsOwnErrorString) {
  // ncclGetErrorString and ncclGetLastError need no device.
  Status status = makeNcclError(kWhere, ncclInvalidArgument, nullptr);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  const std::string expected = kWhere +
                               ": NCCL failed with "
                               "ncclInvalidArgument (" +
                               ncclGetErrorString(ncclInvalidArgument) + ")";
  EXPECT_EQ(status.getMessage().rfind(expected, 0), 0u) << status.getMessage();
  EXPECT_NE(status.getMessage().find("; NCCL refused an argument"),
            std::string::npos);
}

TEST(NcclStatus, CudaFailuresAreTheCudaBackendsStatusesForTheOperation) {
  // cudaGetErrorName and cudaGetErrorString need no device.
  EXPECT_TRUE(checkCudaAt(kWhere, "cudaMalloc", cudaSuccess).ok());
  const std::string send = "send over mesh axes (pp) [ranks 0, 1]";
  Status oom = checkCudaAt(send, "cudaMallocAsync", cudaErrorMemoryAllocation);
  // One conversion: the code, the text and the fix are cuda::checkCuda's.
  Status plain = cuda::checkCuda(cudaErrorMemoryAllocation, "cudaMallocAsync");
  EXPECT_EQ(oom.getCode(), plain.getCode());
  EXPECT_EQ(oom.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(oom.getMessage(), send + ": " + plain.getMessage());
  EXPECT_EQ(
      oom.getMessage().rfind(send + ": cudaMallocAsync failed: " +
                                 cudaGetErrorString(cudaErrorMemoryAllocation) +
                                 " (cudaErrorMemoryAllocation); the "
                                 "rank needs more GPU memory",
                             0),
      0u)
      << oom.getMessage();
  Status device = checkCudaAt("selecting CUDA device 9", "cudaSetDevice",
                              cudaErrorInvalidDevice);
  EXPECT_EQ(device.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(device.getMessage().rfind(
                "selecting CUDA device 9: cudaSetDevice failed: ", 0),
            0u)
      << device.getMessage();
  EXPECT_NE(device.getMessage().find("LOCAL_RANK"), std::string::npos);
  Status fault = checkCudaAt(kWhere, "cudaEventQuery", cudaErrorLaunchFailure);
  EXPECT_EQ(fault.getCode(), TITANRT_ERROR_INTERNAL);
  EXPECT_NE(fault.getMessage().find("compute-sanitizer"), std::string::npos);
}

TEST(NcclStatus, Timeouts) {
  EXPECT_EQ(formatNcclTimeout(kWhere, std::chrono::seconds(300),
                              "this rank aborted the communicator",
                              "; at all_reduce #57 of the group, rank 3 did "
                              "not arrive"),
            kWhere + ": not done after 300 s; this rank aborted the "
                     "communicator; at all_reduce #57 of the group, rank 3 "
                     "did not arrive");
  EXPECT_EQ(formatNcclTimeout("joining the NCCL world communicator of 8 ranks",
                              std::chrono::milliseconds(1500),
                              "this rank aborted it",
                              " (are all ranks running?)"),
            "joining the NCCL world communicator of 8 ranks: not done after "
            "1.5 s; this rank aborted it (are all ranks running?)");
}

} // namespace
