//===- KernelModules.h - launching the compiler's kernels -------*- C++ -*-===//
//
// The entry points the host code of a program compiled for CUDA calls
// (titan-lower-to-runtime target=cuda; docs/cuda-backend.md, "The
// compiler's kernels on the GPU"): MLIR's GPU translation emits calls of
// mgpuModuleLoad / mgpuModuleUnload from constructors and destructors of
// the executable, and mgpuModuleGetFunction / mgpuLaunchKernel at every
// launch; titan's kernel functions add titanrt_cuda_stream. The signatures
// are those MLIR 22's generated code declares. These C functions cannot
// return a status: a failure is recorded for the calling thread, and
// whoever calls the step function on that thread checks
// titanrt_cuda_take_launch_error after it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_KERNELMODULES_H
#define TITAN_RUNTIME_CUDA_KERNELMODULES_H

#include <cstddef>
#include <cstdint>

extern "C" {

/// The CUDA stream (a cudaStream_t) the calling thread's compiled kernels
/// launch on: what titanrt_cuda_set_stream last set on this thread, or the
/// legacy default stream (null) before. Per thread, since each rank steps
/// on a thread of its own.
void *titanrt_cuda_stream(void);

/// Makes `stream` (a cudaStream_t; null: the default stream) the calling
/// thread's compute stream, before its step function runs.
void titanrt_cuda_set_stream(void *stream);

/// The first launch error recorded on the calling thread since the last
/// call (loading the kernels' image, finding a kernel, launching it),
/// naming the call and the kernel, or null when there was none; clears it.
/// The text stays valid until the next call on this thread. Launches are
/// asynchronous: a kernel's own failure surfaces at the stream's next
/// synchronization, not here.
const char *titanrt_cuda_take_launch_error(void);

/// Registers the kernels' image (`size` bytes of fatbin at `image`, which
/// the executable keeps) and returns its handle. Called by a constructor
/// before main, when no CUDA context may exist yet: the image is loaded on
/// the first mgpuModuleGetFunction.
void *mgpuModuleLoad(void *image, size_t size);

/// Unloads the image of `module` if it was loaded, and frees the handle
/// (called by a destructor at exit; errors are ignored then).
void mgpuModuleUnload(void *module);

/// The kernel `name` of `module` (an opaque handle for mgpuLaunchKernel),
/// loading the image on first use; null, with the error recorded, when the
/// image cannot be loaded or has no such kernel. Thread-safe.
void *mgpuModuleGetFunction(void *module, const char *name);

/// Queues `function` (from mgpuModuleGetFunction) on `stream` with a grid
/// of gridX x gridY x gridZ blocks of blockX x blockY x blockZ threads,
/// `sharedBytes` of dynamic shared memory and the kernel's arguments
/// `params` (`paramCount` pointers to them); `extra` must be null. Does not
/// synchronize; a failure to queue is recorded.
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedBytes, void *stream,
                      void **params, void **extra, size_t paramCount);
}

#endif // TITAN_RUNTIME_CUDA_KERNELMODULES_H
