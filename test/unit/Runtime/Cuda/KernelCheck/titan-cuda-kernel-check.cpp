//===- titan-cuda-kernel-check.cpp - the CUDA kernels against references --===//
//
// On a GPU: runs every kernel of runtime/cuda and the cuBLASLt GEMMs on
// random inputs of several shapes (sizes that are not multiples of the
// tiles included), compares each with its CPU reference (runtime/cuda/
// Reference.h) and prints one line per comparison, `ok <name>
// max_rel_err=<e>` or `FAIL ...`; exits 1 if any fails, 2 without a usable
// GPU. test/Runtime/Cuda/kernels.test runs it (REQUIRES: cuda-device).
//
//   titan-cuda-kernel-check [--device N] [--only
//   gemm|elementwise|attention|loss]
//
//===----------------------------------------------------------------------===//

#include "KernelCheck.h"

#include "cuda/CudaStatus.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::check;

int main(int argc, char **argv) {
  int device = 0;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: titan-cuda-kernel-check [--device N] [--only "
                   "gemm|elementwise|attention|loss]\n");
      return 2;
    }
  }
  Status status = selectDevice(device);
  cudaDeviceProp properties;
  if (status.ok())
    status = checkCuda(cudaGetDeviceProperties(&properties, device),
                       "cudaGetDeviceProperties");
  Context context;
  if (status.ok())
    status = Stream::create(context.stream);
  if (status.ok())
    status = GemmEngine::create(context.gemm);
  // titan's kernels through the ABI (bit for bit what the launchers give),
  // and cuDNN's attention through a second backend.
  if (status.ok())
    status = CudaBackend::create(context.backend, AttentionKernels::Titan);
  if (status.ok())
    context.cudnnFailure =
        CudaBackend::create(context.cudnnBackend, AttentionKernels::Cudnn);
  if (!status.ok()) {
    std::fprintf(stderr, "titan-cuda-kernel-check: error: %s\n",
                 status.getMessage().c_str());
    return 2;
  }
  std::printf("device %d: %s (sm_%d%d, %d SMs)\n", device, properties.name,
              properties.major, properties.minor,
              properties.multiProcessorCount);

  Checker checker;
  const std::pair<const char *, void (*)(Checker &, Context &)> families[] = {
      {"gemm", checkGemm},
      {"elementwise", checkElementwise},
      {"attention", checkAttention},
      {"loss", checkLoss}};
  auto start = std::chrono::steady_clock::now();
  for (auto [name, run] : families)
    if (only.empty() || only == name)
      run(checker, context);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("%d checks, %d failed (%.1f s)\n", checker.getChecks(),
              checker.getFailures(), seconds);
  return checker.getFailures() == 0 ? 0 : 1;
}
