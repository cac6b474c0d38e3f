//===- BenchHarness.cpp - timing the CUDA backend on a GPU ----------------===//

#include "BenchHarness.h"

#include "cuda/CudaStatus.h"

#include "titan/Support/Bfloat16.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::bench;

namespace {

/// Bytes overwritten before each timed call: several times the L2 cache
/// (50 MiB on H100, 60 MiB on H200).
constexpr int64_t kFlushBytes = int64_t(256) << 20;

/// Random values are generated for this many elements and repeated.
constexpr int64_t kRandomBlock = int64_t(1) << 20;

/// The achieved rate of `measurement` (TFLOP/s or GB/s) and its share of
/// the peak in percent.
std::pair<double, double> getRate(const Measurement &measurement) {
  double seconds = measurement.medianMs * 1e-3;
  if (seconds <= 0)
    return {0, 0};
  if (measurement.work.bound == Bound::Compute) {
    double tflops = measurement.work.flops / seconds / 1e12;
    return {tflops, 100 * tflops / kPeakBf16Tflops};
  }
  double gbps = measurement.work.bytes / seconds / 1e9;
  return {gbps, 100 * gbps / kPeakHbmGBps};
}

const char *getRateUnit(Bound bound) {
  return bound == Bound::Compute ? "TFLOP/s" : "GB/s";
}

/// `text` as a JSON string literal.
std::string quote(const std::string &text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

/// `value` as a JSON number (finite values only; others become null).
std::string number(double value) {
  if (!(value == value) || value > 1e300 || value < -1e300)
    return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

} // namespace

Status Harness::create(std::unique_ptr<Harness> &result, int device,
                       const TimingOptions &options) {
  std::unique_ptr<Harness> harness(new Harness());
  harness->options = options;
  TITANRT_RETURN_IF_ERROR(selectDevice(device));
  cudaDeviceProp properties;
  TITANRT_RETURN_IF_ERROR(checkCuda(
      cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties"));
  int driver = 0, runtime = 0;
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion"));
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion"));
  TITANRT_RETURN_IF_ERROR(Stream::create(harness->stream));
  TITANRT_RETURN_IF_ERROR(GemmEngine::create(harness->gemm));
  if (options.flushL2)
    TITANRT_RETURN_IF_ERROR(
        harness->flush.allocate(kFlushBytes, "the L2 flush buffer"));
  char text[512];
  std::snprintf(text, sizeof(text),
                "%s (sm_%d%d, %d SMs, %s, L2 %s), driver CUDA %d.%d, runtime "
                "CUDA %d.%d",
                properties.name, properties.major, properties.minor,
                properties.multiProcessorCount,
                formatDeviceBytes(int64_t(properties.totalGlobalMem)).c_str(),
                formatDeviceBytes(properties.l2CacheSize).c_str(),
                driver / 1000, driver % 1000 / 10, runtime / 1000,
                runtime % 1000 / 10);
  harness->description = text;
  harness->deviceName = properties.name;
  result = std::move(harness);
  return Status::success();
}

void bench::printTableHeader() {
  std::printf("%-24s %-8s %10s %10s %-7s %7s  %s\n", "op", "shape", "median_ms",
              "rate", "unit", "%peak", "problem");
}

Status Harness::time(Measurement measurement,
                     const std::function<Status()> &body) {
  auto failed = [&](const Status &status) {
    fail(measurement.op, measurement.shape, status);
    return status;
  };
  for (int i = 0; i < options.warmup; ++i)
    if (Status status = body(); !status.ok())
      return failed(status);
  const int count = std::max(1, options.iterations);
  std::vector<Event> starts(count), ends(count);
  for (int i = 0; i < count; ++i) {
    if (Status status = Event::create(starts[i], /*timing=*/true); !status.ok())
      return failed(status);
    if (Status status = Event::create(ends[i], /*timing=*/true); !status.ok())
      return failed(status);
  }
  for (int i = 0; i < count; ++i) {
    if (options.flushL2) {
      Status flushed =
          checkCuda(cudaMemsetAsync(flush.get(), i & 0xff,
                                    size_t(flush.getBytes()), getStream()),
                    "cudaMemsetAsync", "the L2 flush");
      if (!flushed.ok())
        return failed(flushed);
    }
    Status status = starts[i].record(getStream());
    if (status.ok())
      status = body();
    if (status.ok())
      status = ends[i].record(getStream());
    if (!status.ok())
      return failed(status);
  }
  if (Status status = stream.synchronize(); !status.ok())
    return failed(status);
  std::vector<double> times(count);
  for (int i = 0; i < count; ++i) {
    float milliseconds = 0;
    if (Status status = ends[i].elapsedMilliseconds(starts[i], milliseconds);
        !status.ok())
      return failed(status);
    times[i] = milliseconds;
  }
  std::sort(times.begin(), times.end());
  measurement.minMs = times.front();
  measurement.medianMs = count % 2
                             ? times[count / 2]
                             : (times[count / 2 - 1] + times[count / 2]) / 2;
  measurement.iterations = count;
  auto [rate, percent] = getRate(measurement);
  std::printf("%-24s %-8s %10.4f %10.1f %-7s %6.1f%%  %s\n",
              measurement.op.c_str(), measurement.shape.c_str(),
              measurement.medianMs, rate, getRateUnit(measurement.work.bound),
              percent, measurement.detail.c_str());
  std::fflush(stdout);
  measurements.push_back(std::move(measurement));
  return Status::success();
}

void Harness::fail(const std::string &op, const std::string &shape,
                   const Status &status) {
  std::printf("FAILED %s %s: %s\n", op.c_str(), shape.c_str(),
              status.getMessage().c_str());
  std::fflush(stdout);
  failures.push_back({op, shape, status.getMessage()});
  // A failed kernel can leave an error that later calls would report.
  (void)cudaGetLastError();
}

std::string Harness::toJson(const std::string &optionsJson) const {
  std::string json = "{\n  \"tool\": \"titan-cuda-bench\",\n";
  json += "  \"device\": " + quote(deviceName) + ",\n";
  json += "  \"device_description\": " + quote(description) + ",\n";
  json += "  \"peaks\": {\"bf16_tflops\": " + number(kPeakBf16Tflops) +
          ", \"hbm_gbps\": " + number(kPeakHbmGBps) + "},\n";
  json += "  \"options\": " + optionsJson + ",\n  \"results\": [";
  for (size_t i = 0; i < measurements.size(); ++i) {
    const Measurement &m = measurements[i];
    auto [rate, percent] = getRate(m);
    bool compute = m.work.bound == Bound::Compute;
    json += i ? ",\n    {" : "\n    {";
    json += "\"op\": " + quote(m.op) + ", \"shape\": " + quote(m.shape) +
            ", \"batch\": " + std::to_string(m.batch) +
            ", \"seq\": " + std::to_string(m.seq) +
            ", \"detail\": " + quote(m.detail) +
            ", \"bound\": " + quote(compute ? "compute" : "memory") +
            ", \"flops\": " + number(m.work.flops) +
            ", \"bytes\": " + number(m.work.bytes) +
            ", \"median_ms\": " + number(m.medianMs) +
            ", \"min_ms\": " + number(m.minMs) +
            ", \"iterations\": " + std::to_string(m.iterations) +
            ", \"tflops\": " + number(compute ? rate : 0) +
            ", \"gbps\": " + number(compute ? 0 : rate) +
            ", \"peak_pct\": " + number(percent) + "}";
  }
  json += "\n  ],\n  \"failures\": [";
  for (size_t i = 0; i < failures.size(); ++i) {
    json += i ? ",\n    {" : "\n    {";
    json += "\"op\": " + quote(failures[i][0]) +
            ", \"shape\": " + quote(failures[i][1]) +
            ", \"message\": " + quote(failures[i][2]) + "}";
  }
  json += "\n  ]\n}\n";
  return json;
}

Status bench::allocateRandom(DeviceBuffer &buffer, int32_t dtype, int64_t count,
                             uint32_t seed, double low, double high,
                             const char *what) {
  const int64_t elementBytes = int64_t(dtypeSize(dtype));
  TITANRT_RETURN_IF_ERROR(buffer.allocate(count * elementBytes, what));
  if (count == 0)
    return Status::success();
  const int64_t block = std::min(count, kRandomBlock);
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(static_cast<float>(low),
                                                     static_cast<float>(high));
  std::vector<char> bytes(static_cast<size_t>(block * elementBytes));
  for (int64_t i = 0; i < block; ++i) {
    float value = distribution(generator);
    char *at = bytes.data() + i * elementBytes;
    if (dtype == TITANRT_BF16) {
      uint16_t bits = mlir::titan::floatToBf16(value);
      std::memcpy(at, &bits, sizeof(bits));
    } else {
      std::memcpy(at, &value, sizeof(value));
    }
  }
  char *base = buffer.as<char>();
  TITANRT_RETURN_IF_ERROR(checkCuda(
      cudaMemcpy(base, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
      "cudaMemcpy", what));
  // Doubling copies fill the rest with the block.
  for (int64_t filled = block; filled < count;) {
    int64_t next = std::min(filled, count - filled);
    TITANRT_RETURN_IF_ERROR(checkCuda(
        cudaMemcpy(base + filled * elementBytes, base,
                   size_t(next * elementBytes), cudaMemcpyDeviceToDevice),
        "cudaMemcpy", what));
    filled += next;
  }
  return checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", what);
}

Status bench::allocateIds(DeviceBuffer &buffer, int64_t count, int64_t limit,
                          uint32_t seed, const char *what) {
  TITANRT_RETURN_IF_ERROR(
      buffer.allocate(count * int64_t(sizeof(int64_t)), what));
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<int64_t> distribution(0, limit - 1);
  std::vector<int64_t> ids(static_cast<size_t>(count));
  for (int64_t &id : ids)
    id = distribution(generator);
  if (ids.empty())
    return Status::success();
  return checkCuda(cudaMemcpy(buffer.get(), ids.data(),
                              ids.size() * sizeof(int64_t),
                              cudaMemcpyHostToDevice),
                   "cudaMemcpy", what);
}

Status bench::allocateZeros(DeviceBuffer &buffer, int32_t dtype, int64_t count,
                            const char *what) {
  TITANRT_RETURN_IF_ERROR(
      buffer.allocate(count * int64_t(dtypeSize(dtype)), what));
  if (count == 0)
    return Status::success();
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaMemset(buffer.get(), 0, size_t(buffer.getBytes())),
                "cudaMemset", what));
  return checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", what);
}
