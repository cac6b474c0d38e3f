//===- KernelTypes.cpp - the plain data of the CUDA kernels ---------------===//

#include "cuda/KernelTypes.h"

#include <cmath>
#include <string>

using namespace titan::rt;
using namespace titan::rt::cuda;

Status cuda::parseAttentionKernels(const std::string &name,
                                   AttentionKernels &kernels) {
  if (name.empty() || name == "auto") {
    kernels = AttentionKernels::Auto;
    return Status::success();
  }
  if (name == "cuda_cores") {
    kernels = AttentionKernels::CudaCores;
    return Status::success();
  }
  return Status::invalidArgument(
      "TITAN_CUDA_ATTENTION=" + name +
      " is not a choice of attention kernels: auto (tensor cores where they "
      "apply, the default) or cuda_cores");
}
