//===- EmulatedCudart.cpp - the CUDA runtime calls on host memory ---------===//
//
// The CUDA runtime API functions the kernels' launchers, DeviceBuffer,
// Stream, Event and titan-cuda-kernel-check's tensors call, for
// CudaEmulationTest (EmulatedCuda.h): "device" memory is host memory,
// copies and fills happen when called (emulated launches run to completion
// before they return, so every stream is always idle), streams and events
// are tokens, and there is one device. Linked instead of libcudart. Also
// the device intrinsic __expf, which the toolkit's headers declare for host
// code too (exact here; the GPU's is a fast approximation).
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace {
/// What a stream or event handle points to: nothing is queued on either.
struct Token {};
} // namespace

cudaError_t cudaMalloc(void **devPtr, size_t size) {
  // 256-byte aligned like cudaMalloc's allocations.
  *devPtr = std::aligned_alloc(256, (size + 255) / 256 * 256);
  return *devPtr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *devPtr) {
  std::free(devPtr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                       cudaMemcpyKind) {
  if (count)
    std::memcpy(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count,
                            cudaStream_t) {
  if (count)
    std::memset(devPtr, value, count);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  *free = *total = size_t(1) << 34;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned int,
                                         int) {
  *stream = reinterpret_cast<cudaStream_t>(new Token);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete reinterpret_cast<Token *>(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) {
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int) {
  *event = reinterpret_cast<cudaEvent_t>(new Token);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<Token *>(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }

cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.0f;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int) {
  return cudaSuccess;
}

cudaError_t cudaGetLastError() { return cudaSuccess; }

cudaError_t cudaPeekAtLastError() { return cudaSuccess; }

const char *cudaGetErrorName(cudaError_t error) {
  return error == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated";
}

const char *cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "emulated CUDA error";
}

extern "C" float __expf(float x) { return std::exp(x); }
