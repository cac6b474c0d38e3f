//===- TensorValue.h - host tensors of the interpreter ----------*- C++ -*-===//
//
// The runtime value of a ranked tensor in titan's reference interpreter: an
// element kind, a shape and row-major elements. Elements are stored in the
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
#include <variant>
#include <vector>

namespace mlir::titan {

/// The element types the interpreter handles.
enum class ElementKind : uint8_t { F32, F64, BF16, F16, I64, I32, I1 };

/// The MLIR spelling of `kind`: "f32", "bf16", "i1", ...
llvm::StringRef stringifyElementKind(ElementKind kind);

/// The kind of the MLIR element type `type`, or nullopt when the interpreter
/// does not handle it.
std::optional<ElementKind> getElementKind(Type type);

/// True for f32, f64, bf16 and f16.
bool isFloatKind(ElementKind kind);

/// Rounds `value` to the nearest value of the float kind `kind` (ties to
/// even) and returns it as the float storage holds it. Only for f32, bf16
/// and f16.
float roundToFloatKind(double value, ElementKind kind);

/// Row-major elements in their storage type (see the file comment).
using ElementStorage = std::variant<std::vector<float>, std::vector<double>,
                                    std::vector<int64_t>, std::vector<uint8_t>>;

/// A ranked host tensor.
class TensorValue {
public:
  /// An empty f32 tensor of shape [0].
  TensorValue() : TensorValue(ElementKind::F32, {0}) {}
  /// A zero-filled tensor of `kind` and `shape`.
  TensorValue(ElementKind kind, llvm::ArrayRef<int64_t> shape);

  ElementKind getKind() const { return kind; }
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
  ElementKind kind;
  llvm::SmallVector<int64_t> shape;
  ElementStorage storage;
};

/// The MLIR spelling of a tensor type of `kind` and `shape`.
std::string formatTensorType(ElementKind kind, llvm::ArrayRef<int64_t> shape);

/// The .npy element type titan uses for `kind` (bf16 travels as raw bits in
/// '<u2', i1 as '|b1').
NpyDType getNpyDType(ElementKind kind);

/// Converts an .npy array to a tensor of `kind`; fails, naming both, when the
/// file's element type is not the one `kind` travels as. `name` is used in
/// the error message.
llvm::Expected<TensorValue>
tensorFromNpy(const NpyArray &array, ElementKind kind, llvm::StringRef name);

/// Converts a tensor to an .npy array.
NpyArray tensorToNpy(const TensorValue &tensor);

} // namespace mlir::titan

#endif // TITAN_INTERPRETER_TENSORVALUE_H
