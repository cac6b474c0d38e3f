//===- IndexFunction.h - compile-time tensors as index functions -*- C++
//-*-===//
//
// Symbolic evaluation of the tensors a program computes at compile time
// (constants, iotas, buffers recorded by diagonals (titan.diagonals), and
// elementwise and shape ops on them) as functions of
// their element indices, with the rounding of each op's element type. Passes
// use it to prove what a mask or a scale is (titan-fuse-attention proves a
// mask causal) instead of guessing from how it was written.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_INDEXFUNCTION_H
#define TITAN_DIALECT_INDEXFUNCTION_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <vector>

namespace mlir::titan {

/// A tensor whose every element is known at compile time as a function of
/// its indices i_0, ..., i_{n-1}: either affine, `offset + sum_d coef[d] *
/// i_d` (a constant when every coef is 0), or a function of the difference
/// of two indices whose dims have the same size n, `table[i_a - i_b + n -
/// 1]` (the shape of causal and banded masks).
struct IndexFunction {
  SmallVector<double> coef;
  double offset = 0;
  /// The table form when `a` >= 0.
  int64_t a = -1, b = -1;
  std::vector<double> table;

  bool isTable() const { return a >= 0; }
  bool isConstant() const {
    return !isTable() && llvm::all_of(coef, [](double c) { return c == 0; });
  }
  /// The value at element `index` (one index per dim).
  double at(ArrayRef<int64_t> index) const {
    if (isTable())
      return table[index[a] - index[b] + (table.size() + 1) / 2 - 1];
    double value = offset;
    for (auto [c, i] : llvm::zip(coef, index))
      value += c * static_cast<double>(i);
    return value;
  }
  static IndexFunction constant(int64_t rank, double value) {
    IndexFunction f;
    f.coef.assign(rank, 0);
    f.offset = value;
    return f;
  }
};

/// `value` converted to `element` as titan.cast converts (floats round to
/// nearest even, to integers truncate toward zero, to i1 `value != 0`);
/// nullopt when the integer conversion overflows.
std::optional<double> roundToElementType(Type element, double value);

/// The values of `f` as a function of `i_a - i_b` (dims of size `n`), at
/// `i_a - i_b + n - 1`, or nullopt when `f` depends on anything else.
std::optional<std::vector<double>>
tabulateDifference(const IndexFunction &f, int64_t a, int64_t b, int64_t n);

/// Evaluates the compile-time values that masks and scales are made of.
class IndexFunctionEvaluator {
public:
  /// The function `value` computes, or nullopt when it is not a compile-time
  /// value of a supported form.
  std::optional<IndexFunction> evaluate(Value value);
  /// The value of a compile-time scalar (a splat, possibly cast, broadcast or
  /// reshaped), or nullopt.
  std::optional<double> evaluateScalar(Value value);
  /// Takes `value` to compute `f` (what a caller knows of it: the importer,
  /// of a buffer whose function does not hold its attributes yet).
  void assume(Value value, IndexFunction f) { known[value] = std::move(f); }

private:
  std::optional<IndexFunction> compute(Operation *op, RankedTensorType type);
  /// Applies `fn` element by element to `operands` (results of `type`).
  std::optional<IndexFunction>
  pointwise(ArrayRef<IndexFunction> operands, RankedTensorType type,
            llvm::function_ref<double(ArrayRef<double>)> fn);
  std::optional<IndexFunction> fromConstant(DenseElementsAttr dense,
                                            RankedTensorType type);

  DenseMap<Value, std::optional<IndexFunction>> known;
};

} // namespace mlir::titan

#endif // TITAN_DIALECT_INDEXFUNCTION_H
