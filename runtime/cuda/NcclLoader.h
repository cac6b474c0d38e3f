//===- NcclLoader.h - loading libtitanrt_nccl.so ----------------*- C++ -*-===//
//
// libtitanrt_cuda.so's side of comm/nccl/NcclPlugin.h: finds
// libtitanrt_nccl.so beside itself and loads it when a job has
// communicators. A library that cannot be loaded (NCCL missing) is an
// error naming it, the loader's reason and the fix.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_NCCLLOADER_H
#define TITAN_RUNTIME_CUDA_NCCLLOADER_H

#include "comm/Connect.h"

#include <cuda_runtime_api.h>

#include <string>

namespace titan::rt::cuda {

/// The path of libtitanrt_nccl.so: in the folder of the library (or
/// executable) that holds this code.
std::string getNcclPluginPath();

/// Loads the NCCL plugin at `path` (kept loaded for the process) and sets
/// `connector` to its connector on CUDA device `device` and `stream`.
Status loadNcclConnector(const std::string &path, int device,
                         cudaStream_t stream, CommunicatorConnector &connector);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_NCCLLOADER_H
