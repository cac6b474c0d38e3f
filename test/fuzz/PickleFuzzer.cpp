//===- PickleFuzzer.cpp - libFuzzer target of the pickle VM ---------------===//
//
// Runs the restricted pickle reader over arbitrary bytes with the globals a
// checkpoint may reference, and prints what it accepts (printing walks the
// graph once per reference, which the reader's expansion bound must keep
// small).
//
//===----------------------------------------------------------------------===//

#include "titan/Checkpoint/Pickle.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

using namespace mlir::titan;

/// One input: a pickle, as `data.pkl` of a torch.save archive or a DCP
/// `.metadata` file holds it.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  llvm::Expected<PickleRef> root =
      readPickle(bytes, "fuzz.pkl", checkpointPickleGlobals());
  if (!root) {
    llvm::consumeError(root.takeError());
    return 0;
  }
  (*root)->print(llvm::nulls());
  return 0;
}
