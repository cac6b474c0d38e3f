//===- TensorBuilder.h - building titan tensor computations -----*- C++ -*-===//
//
// A thin layer over OpBuilder for the code that generates titan ops (the
// importer, build-train-step, VJP rules): it computes result types, so callers
// state what they compute, not the types.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TENSORBUILDER_H
#define TITAN_DIALECT_TENSORBUILDER_H

#include "titan/Dialect/TitanDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::titan {

/// The type titan computes elements of `type` in: f32 for bf16 and f16,
/// `type` itself otherwise (each op rounds its result to its type once).
Type getComputeType(Type type);

/// Builds titan ops at `builder`'s insertion point with location `loc`.
class TensorBuilder {
public:
  TensorBuilder(OpBuilder &builder, Location loc)
      : builder(builder), loc(loc) {}

  OpBuilder &getBuilder() { return builder; }
  Location getLoc() const { return loc; }
  MLIRContext *getContext() { return builder.getContext(); }

  /// A tensor of `type` whose elements all equal `value` (floats, integers
  /// and i1).
  Value splat(RankedTensorType type, double value);
  /// A tensor shaped like `like` (element type `element`, or `like`'s).
  Value splatLike(Value like, double value, Type element = {});
  /// `value` converted to element type `element` (itself when equal).
  Value cast(Value value, Type element);
  /// `value` broadcast to `shape` (numpy rules: trailing dims align).
  Value broadcastTo(Value value, ArrayRef<int64_t> shape);
  /// `value` with shape `shape` (itself when equal).
  Value reshape(Value value, ArrayRef<int64_t> shape);
  /// `value` with its dims permuted by `permutation`.
  Value transpose(Value value, ArrayRef<int64_t> permutation);
  /// `value[start:limit:step]` along `dim`.
  Value slice(Value value, int64_t dim, int64_t start, int64_t limit,
              int64_t step);
  /// `value` followed by zeros along `dim` up to `size` (itself when equal).
  Value padTo(Value value, int64_t dim, int64_t size);
  /// Concatenation along `dim` (the single value itself).
  Value concat(ArrayRef<Value> values, int64_t dim);
  /// `input * factor` for a compile-time factor.
  Value scale(Value input, double factor);
  /// Sum over `dims` (sorted), keeping them as size 1 when `keepdim`.
  Value reduceSum(Value input, ArrayRef<int64_t> dims, bool keepdim);
  /// Sum of all elements: a 0-d tensor.
  Value sumAll(Value input);
  /// `compare(predicate, lhs, rhs)` -> i1 tensor.
  Value compare(StringRef predicate, Value lhs, Value rhs);
  /// Whether the 0-d integer `index` equals `k`, broadcast to `shape` (i1).
  Value indexEquals(Value index, int64_t k, ArrayRef<int64_t> shape);
  Value select(Value cond, Value onTrue, Value onFalse);
  Value iota(RankedTensorType type, int64_t dim);
  /// min(a, b) = -max(-a, -b).
  Value min(Value lhs, Value rhs);

  /// Elementwise op of one type (operands already of one type and shape).
  template <typename OpTy> Value binary(Value lhs, Value rhs) {
    return OpTy::create(builder, loc, lhs.getType(), lhs, rhs);
  }
  template <typename OpTy> Value unary(Value input) {
    return OpTy::create(builder, loc, input.getType(), input);
  }

private:
  OpBuilder &builder;
  Location loc;
};

/// The ranked tensor type of `value`.
inline RankedTensorType tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_TENSORBUILDER_H
