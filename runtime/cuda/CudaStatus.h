//===- CudaStatus.h - CUDA and cuBLASLt errors as Statuses ------*- C++ -*-===//
//
// Every CUDA runtime and cuBLASLt call of the backend goes through
// checkCuda / checkCublas: a failure becomes a Status whose message names
// the call, what it was doing, the library's own name and text for the
// error, and the fix where there is one (out of memory, no device or
// driver, a kernel image missing for the GPU, an unsupported GEMM). The
// NCCL communicators' CUDA calls use checkCuda too, with the operation in
// front (comm/nccl/NcclStatus.h: checkCudaAt).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_CUDASTATUS_H
#define TITAN_RUNTIME_CUDA_CUDASTATUS_H

#include "core/Status.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

namespace titan::rt::cuda {

/// Success, or an error naming `call` (e.g. "cudaMalloc") and `what` it was
/// for (e.g. "the arena, 12.0 GiB"; may be empty), with the error's name,
/// text and the fix. Out of memory is TITANRT_ERROR_INVALID_ARGUMENT (the
/// program does not fit), a missing device or driver
/// TITANRT_ERROR_UNSUPPORTED, anything else TITANRT_ERROR_INTERNAL.
Status checkCuda(cudaError_t error, const char *call,
                 const std::string &what = "");

/// The same for a cuBLASLt status: CUBLAS_STATUS_NOT_SUPPORTED and
/// CUBLAS_STATUS_INVALID_VALUE are TITANRT_ERROR_UNSUPPORTED (no algorithm
/// for this shape, type or alignment), CUBLAS_STATUS_ALLOC_FAILED an
/// invalid argument (memory), others TITANRT_ERROR_INTERNAL.
Status checkCublas(cublasStatus_t status, const char *call,
                   const std::string &what = "");

/// The error of the last kernel launch (cudaGetLastError) as a Status
/// naming `kernel`: an invalid configuration, a missing sm_90 image or
/// too much shared memory.
Status checkLaunch(const char *kernel);

/// `bytes` as "12.0 GiB", "3.5 MiB", "512 B".
std::string formatDeviceBytes(int64_t bytes);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_CUDASTATUS_H
