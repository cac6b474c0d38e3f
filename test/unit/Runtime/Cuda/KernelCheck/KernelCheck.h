//===- KernelCheck.h - the CUDA kernels against references ------*- C++ -*-===//
//
// The pieces of titan-cuda-kernel-check: tensors uploaded to and
// downloaded from the GPU in a titanrt_dtype (values as doubles on the
// host: exactly what the GPU sees, bf16 rounding included), and a Checker
// that prints one line per comparison, `ok <name> max_rel_err=<e>` or
// `FAIL <name> max_rel_err=<e> tolerance=<t>`, and counts the failures.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TEST_UNIT_RUNTIME_CUDA_KERNELCHECK_KERNELCHECK_H
#define TITAN_TEST_UNIT_RUNTIME_CUDA_KERNELCHECK_KERNELCHECK_H

#include "core/Status.h"
#include "cuda/CudaBackend.h"
#include "cuda/Device.h"
#include "cuda/Gemm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan::rt::cuda::check {

/// `count` values uniform in [-range, range] from `seed`, rounded to
/// `dtype` (bf16: to nearest even; integer types: truncated).
std::vector<double> randomValues(int64_t count, uint32_t seed, int32_t dtype,
                                 double range = 1.0);

/// A GPU buffer of `count` elements of `dtype`.
class DeviceTensor {
public:
  DeviceTensor() = default;
  /// Allocates `count` elements (contents undefined).
  Status allocate(int32_t dtype, int64_t count);
  /// Allocates and copies `values` converted to `dtype`.
  Status upload(int32_t dtype, const std::vector<double> &values);
  /// Copies the buffer back (synchronously), as doubles.
  Status download(std::vector<double> &values) const;

  void *get() const { return buffer.get(); }
  template <typename T> T *as() const { return buffer.as<T>(); }
  int32_t getDtype() const { return dtype; }
  int64_t getCount() const { return count; }

private:
  DeviceBuffer buffer;
  int32_t dtype = TITANRT_F32;
  int64_t count = 0;
};

/// Prints and counts the results.
class Checker {
public:
  /// Compares `actual` with `expected` (relative to the largest |expected|)
  /// against `tolerance`; NaN or a size mismatch fails.
  void compare(const std::string &name, const std::vector<double> &actual,
               const std::vector<double> &expected, double tolerance);
  /// Two runs of a kernel must agree bit for bit.
  void expectIdentical(const std::string &name, const std::vector<double> &a,
                       const std::vector<double> &b);
  /// `status` must be OK; a failure is printed as `FAIL <name>: <message>`.
  bool expectOk(const std::string &name, const Status &status);

  int getFailures() const { return failures; }
  int getChecks() const { return checks; }

private:
  int failures = 0;
  int checks = 0;
};

/// What every check shares: the stream and the GEMM engine.
struct Context {
  Stream stream;
  std::unique_ptr<GemmEngine> gemm;
  /// The runtime's compute backend (its own stream), for the ABI's calls;
  /// null where there is no GPU (CudaEmulationTest: the ABI's calls are
  /// not checked).
  std::unique_ptr<CudaBackend> backend;
  /// The same with AttentionKernels::Cudnn (cuDNN's fused attention), or
  /// null and why it could not be created (no cuDNN on the loader's path).
  std::unique_ptr<CudaBackend> cudnnBackend;
  Status cudnnFailure;
};

/// The tolerance of a comparison in `dtype`: f32 results against the
/// double reference, or bf16 results (rounded to 8 bits of mantissa).
double toleranceFor(int32_t dtype, double f32 = 1e-4, double bf16 = 1.6e-2);

/// "f32" or "bf16".
std::string nameOf(int32_t dtype);

/// The attention family's shapes (the scale is set from head_dim): ragged
/// last tiles, one row, GQA and MHA, head dims 4 to 128, causal or not.
std::vector<AttentionShape> attentionCheckShapes();

/// The check families (one per file).
void checkGemm(Checker &checker, Context &context);
void checkElementwise(Checker &checker, Context &context);
void checkAttention(Checker &checker, Context &context);
void checkLoss(Checker &checker, Context &context);

} // namespace titan::rt::cuda::check

#endif // TITAN_TEST_UNIT_RUNTIME_CUDA_KERNELCHECK_KERNELCHECK_H
