//===- NcclPlugin.cpp - libtitanrt_nccl.so's entry point ------------------===//

#include "comm/nccl/NcclPlugin.h"

#include "comm/nccl/NcclBootstrap.h"

using namespace titan::rt;

extern "C" __attribute__((visibility("default"))) void
titanrt_nccl_connector(int device, cudaStream_t stream,
                       CommunicatorConnector *connector) {
  *connector = [device, stream](
                   StoreClient *store, const LaunchEnvironment &env,
                   const MeshShape &mesh,
                   const std::vector<std::vector<int>> &axisSets,
                   std::chrono::milliseconds timeout,
                   const std::shared_ptr<Watchdog> &watchdog,
                   std::vector<std::unique_ptr<Communicator>> &communicators) {
    std::vector<std::unique_ptr<NcclCommunicator>> created;
    TITANRT_RETURN_IF_ERROR(connectNcclCommunicators(store, env, mesh, axisSets,
                                                     device, stream, timeout,
                                                     watchdog, created));
    for (std::unique_ptr<NcclCommunicator> &communicator : created)
      communicators.push_back(std::move(communicator));
    return Status::success();
  };
}

// The loader checks the entry point's type against the declaration.
static_assert(std::is_same_v<decltype(titanrt_nccl_connector),
                             titanrt_nccl_connector_fn>);
