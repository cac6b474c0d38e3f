//===- BenchHarness.h - timing the CUDA backend on a GPU --------*- C++ -*-===//
//
// What titan-cuda-bench's measurements share: GPU timing with CUDA events
// (warm-up calls, then the median of N timed calls, each after the L2 cache
// was flushed), device buffers filled with pseudo-random values, and the
// report: one line per measurement with its time, its achieved TFLOP/s or
// GB/s and the share of the H200's peak, and all of it as JSON for
// tools/bench/gpu_torch_baseline.py to compare with PyTorch.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_TITAN_CUDA_BENCH_BENCHHARNESS_H
#define TITAN_TOOLS_TITAN_CUDA_BENCH_BENCHHARNESS_H

#include "core/Status.h"
#include "cuda/Device.h"
#include "cuda/Gemm.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace titan::rt::cuda::bench {

/// The H200 SXM's peaks the percentages are relative to: dense bf16 tensor
/// core throughput and HBM3e bandwidth (NVIDIA's data sheet).
constexpr double kPeakBf16Tflops = 989.0;
constexpr double kPeakHbmGBps = 4800.0;

/// What limits an operation, and so which peak it is compared with.
enum class Bound { Compute, Memory };

/// The work of one call: floating-point operations (a multiply-add is 2),
/// and the bytes it must move at least (every input read once, every output
/// written once; workspaces not counted).
struct Work {
  Bound bound = Bound::Memory;
  double flops = 0;
  double bytes = 0;
};

/// One measurement.
struct Measurement {
  /// "gemm.lm_head.fwd", "attention.bwd", "adamw.grad_bf16".
  std::string op;
  /// "b4s4096", or "model" for what does not depend on the batch.
  std::string shape;
  int64_t batch = 0;
  int64_t seq = 0;
  /// The problem in words ("m=16384 n=128256 k=2048 bf16->bf16").
  std::string detail;
  Work work;
  double medianMs = 0;
  double minMs = 0;
  int iterations = 0;
};

/// How calls are timed.
struct TimingOptions {
  int warmup = 3;
  int iterations = 20;
  /// Overwrite a buffer larger than the L2 cache before every timed call,
  /// so that inputs come from HBM as in a training step.
  bool flushL2 = true;
};

/// The GPU, its stream and GEMM engine, and the measurements so far.
class Harness {
public:
  /// Selects `device` and creates the stream, the GEMM engine and the
  /// flush buffer; fails (naming why) without a usable GPU.
  static Status create(std::unique_ptr<Harness> &harness, int device,
                       const TimingOptions &options);

  cudaStream_t getStream() const { return stream.get(); }
  GemmEngine &getGemm() { return *gemm; }
  /// "NVIDIA H200, 132 SMs, 139.8 GiB, driver 13.0, runtime 13.0".
  const std::string &getDeviceDescription() const { return description; }

  /// Queues `body` (which enqueues the work on getStream()) for the warm-up
  /// calls and the timed calls, then records the median and the minimum as
  /// `measurement` (whose op, shape and work the caller filled) and prints
  /// it. A failure of `body` or of CUDA is printed as a FAILED line,
  /// recorded, and returned.
  Status time(Measurement measurement, const std::function<Status()> &body);

  /// Records and prints a failure that happened before timing (an
  /// allocation).
  void fail(const std::string &op, const std::string &shape,
            const Status &status);

  int getNumFailures() const { return int(failures.size()); }
  /// The measurements and failures as JSON (tools/bench/gpu.sh's
  /// titan-bench.json).
  std::string toJson(const std::string &options) const;

private:
  Harness() = default;

  Stream stream;
  std::unique_ptr<GemmEngine> gemm;
  DeviceBuffer flush;
  TimingOptions options;
  std::string description;
  std::string deviceName;
  std::vector<Measurement> measurements;
  /// (op, shape, message).
  std::vector<std::vector<std::string>> failures;
};

/// Prints the header of the table the measurements are printed in.
void printTableHeader();

/// Allocates `count` elements of `dtype` (TITANRT_F32 or TITANRT_BF16) and
/// fills them with pseudo-random values uniform in [low, high] from `seed`
/// (a block of them repeated: the values do not matter for timing, only
/// that they are finite and not all equal). Synchronous.
Status allocateRandom(DeviceBuffer &buffer, int32_t dtype, int64_t count,
                      uint32_t seed, double low, double high, const char *what);

/// Allocates `count` int64 ids uniform in [0, limit) from `seed`.
Status allocateIds(DeviceBuffer &buffer, int64_t count, int64_t limit,
                   uint32_t seed, const char *what);

/// Allocates `count` elements of `dtype`, zeroed.
Status allocateZeros(DeviceBuffer &buffer, int32_t dtype, int64_t count,
                     const char *what);

} // namespace titan::rt::cuda::bench

#endif // TITAN_TOOLS_TITAN_CUDA_BENCH_BENCHHARNESS_H
