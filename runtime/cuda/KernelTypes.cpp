//===- KernelTypes.cpp - the plain data of the CUDA kernels ---------------===//

#include "cuda/KernelTypes.h"

#include <cmath>
#include <string>
#include <utility>

using namespace titan::rt;
using namespace titan::rt::cuda;

Status cuda::parseAttentionKernels(const std::string &name,
                                   AttentionKernels &kernels) {
  const std::pair<const char *, AttentionKernels> choices[] = {
      {"", AttentionKernels::Auto},
      {"auto", AttentionKernels::Auto},
      {"cudnn", AttentionKernels::Cudnn},
      {"titan", AttentionKernels::Titan},
      {"cuda_cores", AttentionKernels::CudaCores}};
  for (const auto &[choice, value] : choices)
    if (name == choice) {
      kernels = value;
      return Status::success();
    }
  return Status::invalidArgument(
      "TITAN_CUDA_ATTENTION=" + name +
      " is not a choice of attention kernels: auto (cuDNN's fused attention "
      "where it applies, else titan's; the default), cudnn, titan (titan's "
      "kernels: tensor cores where they apply) or cuda_cores");
}
