//===- Device.h - GPUs, streams, events and buffers -------------*- C++ -*-===//
//
// RAII owners of the CUDA objects the backend holds: a rank's streams (one
// for compute, one for communication) and the events that order them, and
// device buffers (workspaces; the regions are in DeviceArena.h). Creating
// one returns a Status that names the call and the fix (CudaStatus.h);
// destruction never fails (errors at teardown are ignored).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_DEVICE_H
#define TITAN_RUNTIME_CUDA_DEVICE_H

#include "core/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace titan::rt::cuda {

/// Makes GPU `device` (a rank's LOCAL_RANK) current for the calling thread;
/// fails naming the device and how many are visible.
Status selectDevice(int device);

/// A non-blocking CUDA stream (it does not synchronize with the legacy
/// default stream).
class Stream {
public:
  Stream() = default;
  ~Stream();
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  /// Creates a stream on the current device; a lower `priority` runs first
  /// (cudaDeviceGetStreamPriorityRange; 0 is the default).
  static Status create(Stream &stream, int priority = 0);

  cudaStream_t get() const { return stream; }
  /// Blocks until everything queued on the stream is done.
  Status synchronize() const;

private:
  cudaStream_t stream = nullptr;
};

/// A CUDA event: marks a point of a stream that other streams or the host
/// wait for.
class Event {
public:
  Event() = default;
  ~Event();
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  /// Creates an event; with `timing`, elapsedMilliseconds works on it (it
  /// costs more to record).
  static Status create(Event &event, bool timing = false);

  cudaEvent_t get() const { return event; }
  /// Marks the current end of `stream`.
  Status record(cudaStream_t stream) const;
  /// Makes `stream` wait (on the GPU) until the recorded point is reached.
  Status makeWait(cudaStream_t stream) const;
  /// Blocks the host until the recorded point is reached.
  Status synchronize() const;
  /// The milliseconds between `start` and this event (both timing events,
  /// both complete).
  Status elapsedMilliseconds(const Event &start, float &milliseconds) const;

private:
  cudaEvent_t event = nullptr;
};

/// Device memory of a fixed size, allocated with cudaMalloc (256-byte
/// aligned).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  /// Replaces the buffer with `bytes` new bytes (none for 0); `what` names
  /// it in the error ("the GEMM workspace").
  Status allocate(int64_t bytes, const char *what);

  void *get() const { return pointer; }
  template <typename T> T *as() const { return static_cast<T *>(pointer); }
  int64_t getBytes() const { return bytes; }

private:
  void release();

  void *pointer = nullptr;
  int64_t bytes = 0;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_DEVICE_H
