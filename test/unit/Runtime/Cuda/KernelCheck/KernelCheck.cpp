//===- KernelCheck.cpp - comparing the CUDA kernels with references -------===//

#include "KernelCheck.h"

#include "cuda/CudaStatus.h"

#include "titan/Support/Bfloat16.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::check;

std::vector<double> check::randomValues(int64_t count, uint32_t seed,
                                        int32_t dtype, double range) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> distribution(-range, range);
  std::vector<double> values(static_cast<size_t>(count));
  for (double &value : values) {
    value = distribution(generator);
    if (dtype == TITANRT_BF16)
      value = mlir::titan::bf16ToFloat(mlir::titan::floatToBf16(float(value)));
    else if (dtype == TITANRT_F32)
      value = double(float(value));
  }
  return values;
}

Status DeviceTensor::allocate(int32_t type, int64_t elements) {
  dtype = type;
  count = elements;
  return buffer.allocate(elements * int64_t(dtypeSize(type)),
                         "a kernel check tensor");
}

Status DeviceTensor::upload(int32_t type, const std::vector<double> &values) {
  TITANRT_RETURN_IF_ERROR(allocate(type, int64_t(values.size())));
  std::vector<char> bytes(values.size() * dtypeSize(type));
  for (size_t i = 0; i < values.size(); ++i) {
    char *at = bytes.data() + i * dtypeSize(type);
    if (type == TITANRT_F32) {
      float value = float(values[i]);
      std::memcpy(at, &value, sizeof(value));
    } else if (type == TITANRT_BF16) {
      uint16_t value = mlir::titan::floatToBf16(float(values[i]));
      std::memcpy(at, &value, sizeof(value));
    } else if (type == TITANRT_I64) {
      int64_t value = int64_t(values[i]);
      std::memcpy(at, &value, sizeof(value));
    } else {
      int32_t value = int32_t(values[i]);
      std::memcpy(at, &value, sizeof(value));
    }
  }
  if (bytes.empty())
    return Status::success();
  return checkCuda(cudaMemcpy(buffer.get(), bytes.data(), bytes.size(),
                              cudaMemcpyHostToDevice),
                   "cudaMemcpy", "upload");
}

Status DeviceTensor::download(std::vector<double> &values) const {
  std::vector<char> bytes(static_cast<size_t>(count) * dtypeSize(dtype));
  values.assign(static_cast<size_t>(count), 0.0);
  if (bytes.empty())
    return Status::success();
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", "download"));
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpy(bytes.data(), buffer.get(), bytes.size(),
                           cudaMemcpyDeviceToHost),
                "cudaMemcpy", "download"));
  for (size_t i = 0; i < values.size(); ++i) {
    const char *at = bytes.data() + i * dtypeSize(dtype);
    if (dtype == TITANRT_F32) {
      float value;
      std::memcpy(&value, at, sizeof(value));
      values[i] = value;
    } else if (dtype == TITANRT_BF16) {
      uint16_t value;
      std::memcpy(&value, at, sizeof(value));
      values[i] = mlir::titan::bf16ToFloat(value);
    } else if (dtype == TITANRT_I64) {
      int64_t value;
      std::memcpy(&value, at, sizeof(value));
      values[i] = double(value);
    } else {
      int32_t value;
      std::memcpy(&value, at, sizeof(value));
      values[i] = value;
    }
  }
  return Status::success();
}

void Checker::compare(const std::string &name,
                      const std::vector<double> &actual,
                      const std::vector<double> &expected, double tolerance) {
  ++checks;
  double scale = 0, error = 0;
  bool finite = actual.size() == expected.size();
  for (size_t i = 0; finite && i < expected.size(); ++i) {
    if (std::isnan(actual[i]) != std::isnan(expected[i])) {
      finite = false;
      break;
    }
    if (std::isnan(expected[i]))
      continue;
    scale = std::max(scale, std::abs(expected[i]));
    error = std::max(error, std::abs(actual[i] - expected[i]));
  }
  double relative = !finite ? INFINITY : scale > 0 ? error / scale : error;
  if (relative <= tolerance) {
    std::printf("ok %s max_rel_err=%.3g\n", name.c_str(), relative);
  } else {
    ++failures;
    std::printf("FAIL %s max_rel_err=%.3g tolerance=%.3g\n", name.c_str(),
                relative, tolerance);
  }
  std::fflush(stdout);
}

void Checker::expectIdentical(const std::string &name,
                              const std::vector<double> &a,
                              const std::vector<double> &b) {
  ++checks;
  bool same = a.size() == b.size() &&
              std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
  if (same) {
    std::printf("ok %s bitwise\n", name.c_str());
  } else {
    ++failures;
    std::printf("FAIL %s: two runs differ\n", name.c_str());
  }
  std::fflush(stdout);
}

bool Checker::expectOk(const std::string &name, const Status &status) {
  if (status.ok())
    return true;
  ++checks;
  ++failures;
  std::printf("FAIL %s: %s\n", name.c_str(), status.getMessage().c_str());
  std::fflush(stdout);
  return false;
}

double check::toleranceFor(int32_t dtype, double f32, double bf16) {
  return dtype == TITANRT_BF16 ? bf16 : f32;
}

std::string check::nameOf(int32_t dtype) {
  return dtype == TITANRT_BF16 ? "bf16" : "f32";
}

std::vector<AttentionShape> check::attentionCheckShapes() {
  return {
      {2, 4, 2, 200, 64, true, 0},  {1, 2, 1, 100, 128, true, 0},
      {1, 3, 3, 129, 16, false, 0}, {1, 1, 1, 1, 4, true, 0},
      {1, 2, 2, 64, 36, false, 0},  {1, 4, 1, 512, 128, true, 0},
      {1, 2, 2, 1, 64, true, 0},    {3, 8, 2, 65, 32, false, 0},
  };
}
