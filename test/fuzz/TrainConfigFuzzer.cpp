//===- TrainConfigFuzzer.cpp - libFuzzer target of the TOML config reader -===//
//
// Parses arbitrary text as a torchtitan-style TOML training config.
//
//===----------------------------------------------------------------------===//

#include "titan/Config/TrainConfig.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>

using namespace mlir::titan;

/// One input: the text of a `.toml` config.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<TrainConfig> config = parseTrainConfig(text, "fuzz.toml");
  if (!config)
    llvm::consumeError(config.takeError());
  return 0;
}
