//===- TorchSaveFuzzer.cpp - libFuzzer target of the torch.save reader ----===//
//
// Reads arbitrary bytes as a torch.save archive of one tensor, as the DCP
// loader reads each chunk: the zip directory, `data.pkl`, the view of the
// storage (getTorchSaveTensorLayout), and the tensor copied out of it.
//
//===----------------------------------------------------------------------===//

#include "titan/Checkpoint/TorchSave.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>

using namespace mlir::titan;

/// One input: a torch.save archive (an uncompressed zip). The CRC-32s of
/// its entries are not checked, so that mutated data gets past the zip
/// reader into the pickle and the copy of the view.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<TorchSaveArchive> archive =
      readTorchSave(bytes, "fuzz.pt", /*checkData=*/false);
  if (!archive) {
    llvm::consumeError(archive.takeError());
    return 0;
  }
  llvm::Expected<DenseTensor> tensor = readTorchSaveTensor(*archive, "fuzz.pt");
  if (!tensor)
    llvm::consumeError(tensor.takeError());
  return 0;
}
