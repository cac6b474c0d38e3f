//===- CudaRankBackend.cpp - libtitanrt_cuda.so's rank backend ------------===//
//
// createRankBackend of the CUDA runtime: for a program compiled for CUDA,
// the rank's GPU (LOCAL_RANK), a CudaBackend and its stream, which the
// compiler's kernels launch on and the step memory copies on; a CPU
// program is refused (its executable links libtitanrt.so). Built into
// libtitanrt_cuda.so only (not TitanRuntimeCuda, which runs alone on GPU
// machines without the CPU runtime).
//
//===----------------------------------------------------------------------===//

#include "core/RankBackend.h"
#include "cuda/CudaBackend.h"
#include "cuda/CudaStepMemory.h"
#include "cuda/KernelModules.h"

using namespace titan::rt;

Status titan::rt::createRankBackend(const ProgramDescription &program,
                                    const RankBackendOptions &options,
                                    RankBackend &backend) {
  TITANRT_RETURN_IF_ERROR(checkProgramBackend(program, "cuda"));
  if (!options.stepMemory.empty() && options.stepMemory != "host")
    return Status::invalidArgument(
        "TITAN_STEP_MEMORY=" + options.stepMemory +
        " is a test aid of the CPU backend; unset it for a CUDA program");
  TITANRT_RETURN_IF_ERROR(cuda::selectDevice(int(options.localRank)));
  std::unique_ptr<cuda::CudaBackend> compute;
  TITANRT_RETURN_IF_ERROR(cuda::CudaBackend::create(compute));
  titanrt_cuda_set_stream(compute->getStream());
  backend.memory = std::make_unique<cuda::CudaStepMemory>(compute->getStream());
  backend.compute = std::move(compute);
  return Status::success();
}
