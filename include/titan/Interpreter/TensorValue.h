//===- TensorValue.h - host tensors of the interpreter ----------*- C++ -*-===//
//
// The runtime value of a ranked tensor in titan's reference interpreter: an
// element type, a shape and row-major elements. Elements are stored in the
// type the interpreter computes in, one storage type per family of element
// types:
//
//   f32, bf16, f16 -> float   (bf16/f16 values are rounded to their type after
//                              every op, so they are exactly representable)
//   f64            -> double
//   i64, i32       -> int64_t (i32 values stay in the int32 range)
//   i1             -> uint8_t (0 or 1)
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_INTERPRETER_TENSORVALUE_H
#define TITAN_INTERPRETER_TENSORVALUE_H

#include "titan/Support/Npy.h"

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace mlir::titan {

/// The element type of the MLIR element type `type` when the interpreter
/// handles it (every ElementType but U16 and U8), else nullopt.
std::optional<ElementType> getInterpretedElementType(Type type);

/// Rounds `value` to the nearest value of the float type `kind` (ties to
/// even) and returns it as the float storage holds it. Only for f32, bf16
/// and f16.
float roundToFloatType(double value, ElementType kind);

/// Row-major elements in their storage type (see the file comment).
using ElementStorage = std::variant<std::vector<float>, std::vector<double>,
                                    std::vector<int64_t>, std::vector<uint8_t>>;

/// A ranked host tensor.
class TensorValue {
public:
  /// An empty f32 tensor of shape [0].
  TensorValue() : TensorValue(ElementType::F32, {0}) {}
  /// A zero-filled tensor of `kind` and `shape`.
  TensorValue(ElementType kind, llvm::ArrayRef<int64_t> shape);

  ElementType getKind() const { return kind; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getNumElements() const;

  /// The elements; `T` must be the storage type of the kind.
  template <typename T> llvm::ArrayRef<T> get() const {
    return std::get<std::vector<T>>(storage);
  }
  template <typename T> llvm::MutableArrayRef<T> getMutable() {
    return std::get<std::vector<T>>(storage);
  }
  const ElementStorage &getStorage() const { return storage; }
  ElementStorage &getStorage() { return storage; }

  /// Gives the tensor another shape with the same number of elements.
  void reshape(llvm::ArrayRef<int64_t> newShape);

  /// Rounds bf16 and f16 elements to their type; no-op for other kinds.
  void roundToKind();

  /// Bitwise equality of kind, shape and elements.
  bool operator==(const TensorValue &other) const;

  /// The MLIR spelling of the type, e.g. "tensor<2x64xf32>".
  std::string getTypeString() const;

private:
  ElementType kind;
  /// A std::vector, whose move cannot throw (SmallVector's is not declared
  /// so): containers of tensors then move them when they grow instead of
  /// copying every element.
  std::vector<int64_t> shape;
  ElementStorage storage;
};
static_assert(std::is_nothrow_move_constructible_v<TensorValue>,
              "std::vector<TensorValue> must move, not copy, when it grows");

/// The MLIR spelling of a tensor type of `kind` and `shape`.
std::string formatTensorType(ElementType kind, llvm::ArrayRef<int64_t> shape);

/// Converts an .npy array to a tensor of `kind`; fails, naming both, when the
/// file's element type is not the one `kind` travels as. `name` is used in
/// the error message.
llvm::Expected<TensorValue>
tensorFromNpy(const NpyArray &array, ElementType kind, llvm::StringRef name);

/// Converts a tensor to an .npy array.
NpyArray tensorToNpy(const TensorValue &tensor);

} // namespace mlir::titan

#endif // TITAN_INTERPRETER_TENSORVALUE_H
