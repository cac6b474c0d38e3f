//===- DcpMetadataFuzzer.cpp - libFuzzer target of the .metadata reader ---===//
//
// Decodes arbitrary bytes as a DCP `.metadata` pickle (either flavor) and
// validates what it decodes, as DcpReader::open does before any data file
// is read.
//
//===----------------------------------------------------------------------===//

#include "titan/Checkpoint/Dcp.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>

using namespace mlir::titan;

/// One input: the contents of a checkpoint's `.metadata` file.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<DcpMetadata> metadata =
      decodeDcpMetadata(bytes, "fuzz/.metadata");
  if (!metadata) {
    llvm::consumeError(metadata.takeError());
    return 0;
  }
  llvm::consumeError(validateDcpMetadata(*metadata));
  return 0;
}
