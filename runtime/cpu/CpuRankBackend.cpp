//===- CpuRankBackend.cpp - libtitanrt.so's rank backend ------------------===//
//
// createRankBackend of the CPU runtime: the CPU backend, and an error for a
// program compiled for CUDA (its executable links libtitanrt_cuda.so).
//
//===----------------------------------------------------------------------===//

#include "core/RankBackend.h"
#include "cpu/CpuBackend.h"

using namespace titan::rt;

Status titan::rt::createRankBackend(const ProgramDescription &program,
                                    const RankBackendOptions &options,
                                    RankBackend &backend) {
  if (program.backend != "cpu")
    return Status::unsupported(
        "this program was compiled for the " + program.backend +
        " backend, but this runtime (libtitanrt.so) is the CPU backend's: "
        "run the executable titan-compile --backend=" +
        program.backend + " built (it links libtitanrt_cuda.so)");
  TITANRT_RETURN_IF_ERROR(createStepMemory(options.stepMemory, backend.memory));
  backend.compute = std::make_unique<cpu::CpuBackend>(options.threads);
  return Status::success();
}
