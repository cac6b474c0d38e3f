//===- Device.cpp - GPUs, streams, events and buffers ---------------------===//

#include "cuda/Device.h"
#include "cuda/CudaStatus.h"

#include <string>
#include <utility>

using namespace titan::rt;
using namespace titan::rt::cuda;

Status cuda::selectDevice(int device) {
  int count = 0;
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (device < 0 || device >= count)
    return Status::invalidArgument(
        "GPU " + std::to_string(device) +
        " does not exist: " + std::to_string(count) +
        " are visible; start at most that many ranks per node "
        "(--nproc-per-node) or check CUDA_VISIBLE_DEVICES");
  return checkCuda(cudaSetDevice(device), "cudaSetDevice",
                   "GPU " + std::to_string(device));
}

//===----------------------------------------------------------------------===//
// Stream
//===----------------------------------------------------------------------===//

Stream::~Stream() {
  if (stream)
    (void)cudaStreamDestroy(stream);
}

Stream::Stream(Stream &&other) noexcept
    : stream(std::exchange(other.stream, nullptr)) {}

Stream &Stream::operator=(Stream &&other) noexcept {
  std::swap(stream, other.stream);
  return *this;
}

Status Stream::create(Stream &result, int priority) {
  Stream created;
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaStreamCreateWithPriority(&created.stream,
                                             cudaStreamNonBlocking, priority),
                "cudaStreamCreateWithPriority"));
  result = std::move(created);
  return Status::success();
}

Status Stream::synchronize() const {
  return checkCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

//===----------------------------------------------------------------------===//
// Event
//===----------------------------------------------------------------------===//

Event::~Event() {
  if (event)
    (void)cudaEventDestroy(event);
}

Event::Event(Event &&other) noexcept
    : event(std::exchange(other.event, nullptr)) {}

Event &Event::operator=(Event &&other) noexcept {
  std::swap(event, other.event);
  return *this;
}

Status Event::create(Event &result, bool timing) {
  Event created;
  TITANRT_RETURN_IF_ERROR(checkCuda(
      cudaEventCreateWithFlags(&created.event, timing ? cudaEventDefault
                                                      : cudaEventDisableTiming),
      "cudaEventCreateWithFlags"));
  result = std::move(created);
  return Status::success();
}

Status Event::record(cudaStream_t stream) const {
  return checkCuda(cudaEventRecord(event, stream), "cudaEventRecord");
}

Status Event::makeWait(cudaStream_t stream) const {
  return checkCuda(cudaStreamWaitEvent(stream, event, 0),
                   "cudaStreamWaitEvent");
}

Status Event::synchronize() const {
  return checkCuda(cudaEventSynchronize(event), "cudaEventSynchronize");
}

Status Event::elapsedMilliseconds(const Event &start,
                                  float &milliseconds) const {
  return checkCuda(cudaEventElapsedTime(&milliseconds, start.event, event),
                   "cudaEventElapsedTime");
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : pointer(std::exchange(other.pointer, nullptr)),
      bytes(std::exchange(other.bytes, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  std::swap(pointer, other.pointer);
  std::swap(bytes, other.bytes);
  return *this;
}

void DeviceBuffer::release() {
  if (pointer)
    (void)cudaFree(pointer);
  pointer = nullptr;
  bytes = 0;
}

Status DeviceBuffer::allocate(int64_t size, const char *what) {
  release();
  if (size < 0)
    return Status::invalidArgument(std::string(what) + ": " +
                                   std::to_string(size) + " bytes is negative");
  if (size == 0)
    return Status::success();
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaMalloc(&pointer, size_t(size)), "cudaMalloc",
                std::string(what) + ", " + formatDeviceBytes(size)));
  bytes = size;
  return Status::success();
}
