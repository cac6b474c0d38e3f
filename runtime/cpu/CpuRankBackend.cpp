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
  TITANRT_RETURN_IF_ERROR(checkProgramBackend(program, "cpu"));
  TITANRT_RETURN_IF_ERROR(createStepMemory(options.stepMemory, backend.memory));
  backend.compute = std::make_unique<cpu::CpuBackend>(options.threads);
  return Status::success();
}
