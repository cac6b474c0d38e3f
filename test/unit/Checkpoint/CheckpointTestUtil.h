//===- CheckpointTestUtil.h - helpers of the checkpoint tests ---*- C++ -*-===//

#ifndef TITAN_TEST_UNIT_CHECKPOINT_CHECKPOINTTESTUTIL_H
#define TITAN_TEST_UNIT_CHECKPOINT_CHECKPOINTTESTUTIL_H

#include "titan/Checkpoint/Dcp.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

#include <string>

namespace mlir::titan::test {

/// The message of `err`, which the test expects to be an error.
inline std::string errorOf(llvm::Error err) {
  EXPECT_TRUE(bool(err));
  return llvm::toString(std::move(err));
}

/// The message of `value`'s error, which the test expects; empty when it
/// holds a value.
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  EXPECT_FALSE(bool(value));
  return value ? std::string() : llvm::toString(value.takeError());
}

/// The box at `offsets` of `sizes`.
inline IndexBox box(llvm::ArrayRef<int64_t> offsets,
                    llvm::ArrayRef<int64_t> sizes) {
  return IndexBox{llvm::SmallVector<int64_t>(offsets),
                  llvm::SmallVector<int64_t>(sizes)};
}

} // namespace mlir::titan::test

#endif // TITAN_TEST_UNIT_CHECKPOINT_CHECKPOINTTESTUTIL_H
