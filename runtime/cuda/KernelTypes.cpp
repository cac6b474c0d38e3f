//===- KernelTypes.cpp - the plain data of the CUDA kernels ---------------===//

#include "cuda/KernelTypes.h"

#include <cmath>
#include <string>

using namespace titan::rt;
using namespace titan::rt::cuda;

Status cuda::checkAdamWHyperparameters(const AdamWHyperparameters &hyper) {
  auto fail = [](const std::string &what) {
    return Status::invalidArgument("adamw (CUDA): " + what);
  };
  if (!(hyper.lr >= 0))
    return fail("lr = " + std::to_string(hyper.lr) + " must be >= 0");
  if (!(hyper.beta1 >= 0 && hyper.beta1 < 1) ||
      !(hyper.beta2 >= 0 && hyper.beta2 < 1))
    return fail("betas (" + std::to_string(hyper.beta1) + ", " +
                std::to_string(hyper.beta2) + ") must be in [0, 1)");
  if (!(hyper.eps > 0))
    return fail("eps = " + std::to_string(hyper.eps) + " must be positive");
  if (!(hyper.weightDecay >= 0))
    return fail("weight_decay = " + std::to_string(hyper.weightDecay) +
                " must be >= 0");
  if (hyper.step < 0)
    return fail("step = " + std::to_string(hyper.step) + " is negative");
  return Status::success();
}

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
