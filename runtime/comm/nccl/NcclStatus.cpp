//===- NcclStatus.cpp - NCCL and CUDA failures as titan Statuses ----------===//

#include "comm/nccl/NcclStatus.h"

#include "cuda/CudaStatus.h"

#include <algorithm>
#include <thread>

namespace titan::rt {

namespace {

/// What a failure with `result` usually means, to end its message.
const char *getNcclHint(ncclResult_t result) {
  switch (result) {
  case ncclUnhandledCudaError:
    return "a CUDA call inside NCCL failed (a device fault, or a kernel "
           "before it failed)";
  case ncclSystemError:
    return "a system call inside NCCL failed, often the network or shared "
           "memory (NCCL_DEBUG=WARN prints which)";
  case ncclInternalError:
    return "NCCL hit an internal error (NCCL_DEBUG=WARN prints its log)";
  case ncclInvalidArgument:
    return "NCCL refused an argument (a host pointer, or memory of another "
           "device?)";
  case ncclInvalidUsage:
    return "NCCL was called in a way it does not allow";
  case ncclRemoteError:
    return "a peer of the group exited or its network failed: that rank's "
           "own error says why";
  default:
    return "NCCL_DEBUG=WARN prints NCCL's log";
  }
}

} // namespace

std::string getNcclResultName(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "ncclSuccess";
  case ncclUnhandledCudaError:
    return "ncclUnhandledCudaError";
  case ncclSystemError:
    return "ncclSystemError";
  case ncclInternalError:
    return "ncclInternalError";
  case ncclInvalidArgument:
    return "ncclInvalidArgument";
  case ncclInvalidUsage:
    return "ncclInvalidUsage";
  case ncclRemoteError:
    return "ncclRemoteError";
  case ncclInProgress:
    return "ncclInProgress";
  default:
    return "ncclResult_t " + std::to_string(static_cast<int>(result));
  }
}

titanrt_status getNcclStatusCode(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return TITANRT_OK;
  case ncclInvalidArgument:
  case ncclInvalidUsage:
    return TITANRT_ERROR_INVALID_ARGUMENT;
  case ncclInternalError:
    return TITANRT_ERROR_INTERNAL;
  default:
    return TITANRT_ERROR_COMMUNICATION;
  }
}

std::string formatNcclError(const std::string &where, ncclResult_t result,
                            const std::string &errorString,
                            const std::string &lastError) {
  std::string message =
      where + ": NCCL failed with " + getNcclResultName(result);
  if (!errorString.empty())
    message += " (" + errorString + ")";
  if (!lastError.empty())
    message += ": " + lastError;
  return message + "; " + getNcclHint(result);
}

Status makeNcclError(const std::string &where, ncclResult_t result,
                     ncclComm_t comm) {
  const char *errorString = ncclGetErrorString(result);
  const char *lastError = ncclGetLastError(comm);
  return Status(getNcclStatusCode(result),
                formatNcclError(where, result, errorString ? errorString : "",
                                lastError ? lastError : ""));
}

Status checkCudaAt(const std::string &where, const char *call,
                   cudaError_t error) {
  Status status = cuda::checkCuda(error, call);
  if (status.ok())
    return status;
  return Status(status.getCode(), where + ": " + status.getMessage());
}

std::string formatNcclTimeout(const std::string &where,
                              std::chrono::milliseconds timeout,
                              const std::string &consequence,
                              const std::string &explanation) {
  return where + ": not done after " + formatDuration(timeout) + "; " +
         consequence + explanation;
}

void pauseAndBackOff(std::chrono::microseconds &pause) {
  std::this_thread::sleep_for(pause);
  pause = std::min<std::chrono::microseconds>(pause * 2, kLastPause);
}

ncclResult_t getNcclAsyncState(ncclComm_t comm) {
  ncclResult_t state = ncclSuccess;
  ncclResult_t queried = ncclCommGetAsyncError(comm, &state);
  return queried != ncclSuccess ? queried : state;
}

ncclResult_t waitWhileInProgress(ncclComm_t comm, Clock::time_point deadline) {
  std::chrono::microseconds pause = kFirstPause;
  while (true) {
    ncclResult_t state = getNcclAsyncState(comm);
    if (state != ncclInProgress || Clock::now() >= deadline)
      return state;
    pauseAndBackOff(pause);
  }
}

Status closeNcclComm(ncclComm_t comm, const std::string &where,
                     Clock::time_point deadline) {
  ncclResult_t result = ncclCommFinalize(comm);
  if (result == ncclSuccess || result == ncclInProgress)
    result = waitWhileInProgress(comm, deadline);
  if (result == ncclSuccess) {
    result = ncclCommDestroy(comm);
    return result == ncclSuccess ? Status::success()
                                 : makeNcclError(where, result, nullptr);
  }
  Status status = result == ncclInProgress
                      ? Status::communication(
                            where + ": NCCL's communicator did not finish its "
                                    "work in time; this rank aborted it")
                      : makeNcclError(where, result, comm);
  ncclCommAbort(comm);
  return status;
}

} // namespace titan::rt
