//===- CudaRankBackend.cpp - libtitanrt_cuda.so's rank backend ------------===//
//
// createRankBackend of the CUDA runtime: for a program compiled for CUDA,
// the rank's GPU (LOCAL_RANK), a CudaBackend and its compute stream, which
// the compiler's kernels launch on and the step memory copies on; the
// program's communicators on NCCL (libtitanrt_nccl.so, loaded when the
// program has any), their operations on one communication stream ordered
// with the compute stream by StreamCollectiveQueue; a CPU program is
// refused (its executable links libtitanrt.so). Built into
// libtitanrt_cuda.so only (not TitanRuntimeCuda, which runs alone on GPU
// machines without the CPU runtime).
//
//===----------------------------------------------------------------------===//

#include "core/RankBackend.h"
#include "cuda/CudaBackend.h"
#include "cuda/CudaStepMemory.h"
#include "cuda/KernelModules.h"
#include "cuda/NcclLoader.h"
#include "cuda/StreamCollectiveQueue.h"

using namespace titan::rt;

Status titan::rt::createRankBackend(const ProgramDescription &program,
                                    const RankBackendOptions &options,
                                    RankBackend &backend) {
  TITANRT_RETURN_IF_ERROR(checkProgramBackend(program, "cuda"));
  if (!options.stepMemory.empty() && options.stepMemory != "host")
    return Status::invalidArgument(
        "TITAN_STEP_MEMORY=" + options.stepMemory +
        " is a test aid of the CPU backend; unset it for a CUDA program");
  cuda::AttentionKernels attention;
  TITANRT_RETURN_IF_ERROR(
      cuda::parseAttentionKernels(options.cudaAttention, attention));
  int device = int(options.localRank);
  TITANRT_RETURN_IF_ERROR(cuda::selectDevice(device));
  std::unique_ptr<cuda::CudaBackend> compute;
  TITANRT_RETURN_IF_ERROR(cuda::CudaBackend::create(compute, attention));
  cudaStream_t computeStream = compute->getStream();
  titanrt_cuda_set_stream(computeStream);
  backend.memory = std::make_unique<cuda::CudaStepMemory>(computeStream);
  backend.compute = std::move(compute);
  if (program.communicators.empty())
    return Status::success();

  // Shared by the connector and the queues; `backend` outlives the
  // context's communicators and queues that use it.
  auto communication = std::make_shared<cuda::Stream>();
  TITANRT_RETURN_IF_ERROR(cuda::Stream::create(*communication));
  backend.connectCommunicators =
      [device, communication](
          StoreClient *store, const LaunchEnvironment &env,
          const MeshShape &mesh, const std::vector<std::vector<int>> &axisSets,
          std::chrono::milliseconds timeout,
          const std::shared_ptr<Watchdog> &watchdog,
          std::vector<std::unique_ptr<Communicator>> &communicators) {
        CommunicatorConnector nccl;
        TITANRT_RETURN_IF_ERROR(cuda::loadNcclConnector(
            cuda::getNcclPluginPath(), device, communication->get(), nccl));
        return nccl(store, env, mesh, axisSets, timeout, watchdog,
                    communicators);
      };
  backend.collectiveQueues = [computeStream, communication](
                                 Communicator &communicator, int32_t index) {
    return std::make_unique<cuda::StreamCollectiveQueue>(
        communicator, index,
        std::make_unique<cuda::CudaStreamOrder>(computeStream,
                                                communication->get()));
  };
  return Status::success();
}
