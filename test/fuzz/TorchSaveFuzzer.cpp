//===- TorchSaveFuzzer.cpp - libFuzzer target of the torch.save reader ----===//
//
// Reads arbitrary bytes as a torch.save archive of one tensor, as the DCP
// loader reads each chunk: the zip directory, `data.pkl`, the view of the
// storage, and the tensor copied out of it.
//
//===----------------------------------------------------------------------===//

#include "titan/Checkpoint/TorchSave.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>

using namespace mlir::titan;

/// One input: a torch.save archive (an uncompressed zip).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<TorchSaveArchive> archive = readTorchSave(bytes, "fuzz.pt");
  if (!archive) {
    llvm::consumeError(archive.takeError());
    return 0;
  }
  llvm::Expected<TorchSaveTensorLayout> layout =
      getTorchSaveTensorLayout(*archive, "fuzz.pt");
  if (!layout) {
    llvm::consumeError(layout.takeError());
    return 0;
  }
  llvm::Expected<DenseTensor> tensor = readTorchSaveTensor(bytes, "fuzz.pt");
  if (!tensor)
    llvm::consumeError(tensor.takeError());
  return 0;
}
