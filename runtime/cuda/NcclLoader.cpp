//===- NcclLoader.cpp - loading libtitanrt_nccl.so ------------------------===//

#include "cuda/NcclLoader.h"

#include "comm/nccl/NcclPlugin.h"

#include <dlfcn.h>

namespace titan::rt::cuda {

std::string getNcclPluginPath() {
  Dl_info info = {};
  std::string folder = ".";
  if (dladdr(reinterpret_cast<void *>(&getNcclPluginPath), &info) &&
      info.dli_fname) {
    std::string self = info.dli_fname;
    size_t slash = self.rfind('/');
    if (slash != std::string::npos)
      folder = self.substr(0, slash);
  }
  return folder + "/libtitanrt_nccl.so";
}

Status loadNcclConnector(const std::string &path, int device,
                         cudaStream_t stream,
                         CommunicatorConnector &connector) {
  // Never closed: the communicators it makes live until the process ends.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    return Status::unsupported(
        "a CUDA job of more than one rank communicates through NCCL, but " +
        path + " cannot be loaded: " + (reason ? reason : "unknown error") +
        " (install NCCL 2.x, libnccl.so.2, or add its folder to "
        "LD_LIBRARY_PATH; PyTorch's CUDA wheels carry one in "
        "site-packages/nvidia/nccl/lib)");
  }
  auto *entry = reinterpret_cast<titanrt_nccl_connector_fn *>(
      dlsym(library, TITANRT_NCCL_CONNECTOR_SYMBOL));
  if (!entry)
    return Status::internal(path + " has no " TITANRT_NCCL_CONNECTOR_SYMBOL
                                   " (is it titan's NCCL plugin, of the same "
                                   "build as libtitanrt_cuda.so?)");
  entry(device, stream, &connector);
  return Status::success();
}

} // namespace titan::rt::cuda
