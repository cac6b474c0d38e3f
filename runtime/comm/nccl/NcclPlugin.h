//===- NcclPlugin.h - NCCL as a library loaded on demand --------*- C++ -*-===//
//
// The CUDA backend's NCCL communicators live in libtitanrt_nccl.so, which
// links NCCL; libtitanrt_cuda.so loads it (cuda/NcclLoader.h) only when a
// job has communicators, so that a single-rank CUDA job needs no NCCL on
// its machine. The library has one entry point, declared here.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_NCCL_NCCLPLUGIN_H
#define TITAN_RUNTIME_COMM_NCCL_NCCLPLUGIN_H

#include "comm/Connect.h"

#include <cuda_runtime_api.h>

/// The entry point's name in libtitanrt_nccl.so.
#define TITANRT_NCCL_CONNECTOR_SYMBOL "titanrt_nccl_connector"

extern "C" {
/// Sets `*connector` to one that connects the communicators of its axis
/// sets with NCCL (connectNcclCommunicators) on CUDA device `device`,
/// enqueueing their operations on `stream` (which outlives them).
using titanrt_nccl_connector_fn =
    void(int device, cudaStream_t stream,
         titan::rt::CommunicatorConnector *connector);
}

#endif // TITAN_RUNTIME_COMM_NCCL_NCCLPLUGIN_H
