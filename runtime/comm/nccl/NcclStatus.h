//===- NcclStatus.h - NCCL and CUDA failures as titan Statuses --*- C++ -*-===//
//
// Every NCCL or CUDA failure becomes a Status whose message names the
// operation and the communicator ("all_reduce over mesh axes (tp) [ranks 2,
// 3]"), NCCL's result ("ncclRemoteError"), NCCL's own texts for it
// (ncclGetErrorString, ncclGetLastError) and what it usually means; a CUDA
// failure is the CUDA backend's Status (cuda/CudaStatus.h) with the
// operation in front. The formatting is pure, so it is tested without a
// GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_NCCL_NCCLSTATUS_H
#define TITAN_RUNTIME_COMM_NCCL_NCCLSTATUS_H

#include "comm/Socket.h"
#include "comm/nccl/NcclVersion.h"
#include "core/Status.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <string>

namespace titan::rt {

/// "ncclRemoteError": the enumerator of `result`, or "ncclResult_t 42" for
/// a code this header does not name.
std::string getNcclResultName(ncclResult_t result);

/// The titanrt_status of an NCCL failure: TITANRT_ERROR_INVALID_ARGUMENT
/// for ncclInvalidArgument and ncclInvalidUsage, TITANRT_ERROR_INTERNAL for
/// ncclInternalError, TITANRT_ERROR_COMMUNICATION for the others.
titanrt_status getNcclStatusCode(ncclResult_t result);

/// "<where>: NCCL failed with <name> (<errorString>): <lastError>; <what
/// it usually means>". `errorString` is ncclGetErrorString's text,
/// `lastError` ncclGetLastError's (either may be empty, and is then left
/// out).
std::string formatNcclError(const std::string &where, ncclResult_t result,
                            const std::string &errorString,
                            const std::string &lastError);

/// The Status of NCCL's `result` for `where`, with NCCL's texts for it and
/// `comm` (which may be null).
Status makeNcclError(const std::string &where, ncclResult_t result,
                     ncclComm_t comm);

/// Success for cudaSuccess, else the CUDA backend's Status of `error` from
/// `call` (cuda::checkCuda: its code, CUDA's name and text for the error,
/// and the fix) with "<where>: " in front.
Status checkCudaAt(const std::string &where, const char *call,
                   cudaError_t error);

/// "<where>: not done after <timeout>; <consequence><explanation>": an
/// NCCL operation that did not complete in time, after which `consequence`
/// happened ("this rank aborted the communicator"); `explanation` (empty,
/// or starting with "; " or " (") says why or what to check.
std::string formatNcclTimeout(const std::string &where,
                              std::chrono::milliseconds timeout,
                              const std::string &consequence,
                              const std::string &explanation);

/// The first and the longest pause between two polls of NCCL's or CUDA's
/// state.
inline constexpr std::chrono::microseconds kFirstPause{100};
inline constexpr std::chrono::microseconds kLastPause{1000};

/// Sleeps `pause`, then doubles it up to kLastPause: the polling of a
/// state that the device or NCCL's threads change.
void pauseAndBackOff(std::chrono::microseconds &pause);

/// The state of `comm` (ncclCommGetAsyncError): ncclSuccess, ncclInProgress
/// while a nonblocking call is still at work, or the error of an
/// asynchronous failure (a peer that closed its connections, a network
/// failure); a failure of the query itself is returned the same way.
ncclResult_t getNcclAsyncState(ncclComm_t comm);

/// Waits while the state of `comm` (getNcclAsyncState) is ncclInProgress
/// (a nonblocking communicator still initializing, splitting or enqueuing),
/// at most until `deadline` (pauseAndBackOff between polls). Returns the
/// state it reached: ncclSuccess, an error, or ncclInProgress at the
/// deadline.
ncclResult_t waitWhileInProgress(ncclComm_t comm, Clock::time_point deadline);

/// Releases `comm` once its enqueued work is done: ncclCommFinalize, a wait
/// while it is in progress (until `deadline`), ncclCommDestroy; aborts it
/// (ncclCommAbort) instead when that fails or takes longer. Returns NCCL's
/// failure, if any, for `where`.
Status closeNcclComm(ncclComm_t comm, const std::string &where,
                     Clock::time_point deadline);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_NCCL_NCCLSTATUS_H
