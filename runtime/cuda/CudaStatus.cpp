//===- CudaStatus.cpp - CUDA and cuBLASLt errors as titan Statuses --------===//

#include "cuda/CudaStatus.h"

#include <cstdio>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// What to do about `error`, or "" when there is nothing to suggest.
const char *fixFor(cudaError_t error) {
  switch (error) {
  case cudaErrorMemoryAllocation:
    return "the rank needs more GPU memory than is free: check that no other "
           "process holds the GPU (nvidia-smi), or shrink the per-rank memory "
           "(smaller local batch or sequence, more FSDP or TP ranks, "
           "activation checkpointing; titan-compile --plan-report shows it)";
  case cudaErrorNoDevice:
  case cudaErrorInsufficientDriver:
  case cudaErrorCallRequiresNewerDriver:
    return "this machine has no usable NVIDIA GPU and driver: run the CUDA "
           "backend where `nvidia-smi -L` lists a GPU (driver for CUDA 13), "
           "or use the CPU backend";
  case cudaErrorInvalidDevice:
    return "the rank's device index is not a visible GPU: check LOCAL_RANK "
           "against CUDA_VISIBLE_DEVICES and --nproc-per-node";
  case cudaErrorNoKernelImageForDevice:
  case cudaErrorUnsupportedPtxVersion:
    return "the kernels are built for sm_90 (H100, H200): rebuild with this "
           "GPU's architecture in CUDA_ARCHITECTURES (runtime/cuda)";
  case cudaErrorInvalidConfiguration:
  case cudaErrorLaunchOutOfResources:
    return "a kernel's launch shape does not fit this GPU: a bug in titan's "
           "launch configuration (runtime/cuda/LaunchConfig.cpp), please "
           "report it with the shapes";
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
    return "a kernel accessed memory outside its buffers: run with "
           "compute-sanitizer to find it, and report it";
  default:
    return "";
  }
}

titanrt_status codeFor(cudaError_t error) {
  switch (error) {
  case cudaErrorMemoryAllocation:
    return TITANRT_ERROR_INVALID_ARGUMENT;
  case cudaErrorNoDevice:
  case cudaErrorInsufficientDriver:
  case cudaErrorCallRequiresNewerDriver:
  case cudaErrorInvalidDevice:
  case cudaErrorNoKernelImageForDevice:
  case cudaErrorUnsupportedPtxVersion:
    return TITANRT_ERROR_UNSUPPORTED;
  default:
    return TITANRT_ERROR_INTERNAL;
  }
}

std::string describeCall(const char *call, const std::string &what) {
  return what.empty() ? std::string(call)
                      : std::string(call) + " (" + what + ")";
}

} // namespace

Status cuda::checkCuda(cudaError_t error, const char *call,
                       const std::string &what) {
  if (error == cudaSuccess)
    return Status::success();
  std::string message = describeCall(call, what) +
                        " failed: " + cudaGetErrorString(error) + " (" +
                        cudaGetErrorName(error) + ")";
  if (const char *fix = fixFor(error); *fix)
    message += "; " + std::string(fix);
  return Status(codeFor(error), message);
}

Status cuda::checkCublas(cublasStatus_t status, const char *call,
                         const std::string &what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::success();
  std::string message = describeCall(call, what) +
                        " failed: " + cublasLtGetStatusString(status) + " (" +
                        cublasLtGetStatusName(status) + ")";
  titanrt_status code = TITANRT_ERROR_INTERNAL;
  switch (status) {
  case CUBLAS_STATUS_NOT_SUPPORTED:
  case CUBLAS_STATUS_INVALID_VALUE:
    code = TITANRT_ERROR_UNSUPPORTED;
    message += "; cuBLASLt has no algorithm for this GEMM's types, layouts "
               "or pointer alignment: keep operands 16-byte aligned (the "
               "memory planner aligns to 64) and use f32 or bf16";
    break;
  case CUBLAS_STATUS_ALLOC_FAILED:
    code = TITANRT_ERROR_INVALID_ARGUMENT;
    message += "; cuBLASLt could not allocate host or GPU memory: free GPU "
               "memory (see cudaMalloc's advice)";
    break;
  case CUBLAS_STATUS_NOT_INITIALIZED:
    message += "; the cuBLASLt handle could not be created: check the CUDA "
               "driver (nvidia-smi)";
    break;
  case CUBLAS_STATUS_ARCH_MISMATCH:
    code = TITANRT_ERROR_UNSUPPORTED;
    message += "; this GPU lacks the feature (bf16 GEMMs need sm_80 or "
               "newer)";
    break;
  default:
    break;
  }
  return Status(code, message);
}

Status cuda::checkLaunch(const char *kernel) {
  return checkCuda(cudaGetLastError(), "kernel launch", kernel);
}

std::string cuda::formatDeviceBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}
