//===- NpyFuzzer.cpp - libFuzzer target of the .npy reader ----------------===//
//
// Parses arbitrary bytes as an .npy file and re-serializes what it accepts,
// which must parse again to the same array.
//
//===----------------------------------------------------------------------===//

#include "titan/Support/Npy.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using namespace mlir::titan;

/// One input: the contents of an .npy file.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<NpyArray> array = parseNpy(bytes, "fuzz.npy");
  if (!array) {
    llvm::consumeError(array.takeError());
    return 0;
  }
  llvm::Expected<NpyArray> again = parseNpy(serializeNpy(*array), "again.npy");
  if (!again || again->dtype != array->dtype || again->shape != array->shape ||
      again->data != array->data)
    std::abort();
  return 0;
}
