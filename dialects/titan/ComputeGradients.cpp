//===- ComputeGradients.cpp - VJP rules of the compute ops ----------------===//
//
// DifferentiableOpInterface::buildVJP of every forward compute op
// (TitanComputeOps.td). Each rule emits, at the builder's insertion point,
// titan ops that map the cotangent of the op's result to the cotangents of
// its operands. Conventions:
//   - a null result cotangent (the result does not reach the loss) and a
//     non-float result give null operand cotangents;
//   - operands that are not differentiable get a null cotangent: integer ids
//     and labels, i1 conditions, compare's operands, RoPE's cos/sin tables
//     (buffers); constant and iota have no operands and emit nothing;
//   - rules follow PyTorch's derivatives where a choice exists: max splits
//     the cotangent 0.5/0.5 on ties (torch.maximum), reduce_max divides it
//     equally among the maxima (torch.amax);
//   - fused backward ops (gelu_grad, rms_norm_grad, layer_norm_grad,
//     embedding_grad, attention_grad, cross_entropy_grad, pad) are used where
//     a decomposition would be poor or impossible; everything else is
//     decomposed into forward ops;
//   - rules that need a zero tensor (max, select), an element count
//     (reduce_mean) or slice bounds (concat) need static shapes there and
//     fail with a diagnostic on the op otherwise.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TitanDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::titan;

using Grads = FailureOr<SmallVector<Value>>;

namespace {
/// Emits titan ops at one insertion point and location; the result type of
/// an elementwise op is the type of its first operand.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value add(Value x, Value y) {
    return AddOp::create(b, loc, x.getType(), x, y);
  }
  Value sub(Value x, Value y) {
    return SubOp::create(b, loc, x.getType(), x, y);
  }
  Value mul(Value x, Value y) {
    return MulOp::create(b, loc, x.getType(), x, y);
  }
  Value div(Value x, Value y) {
    return DivOp::create(b, loc, x.getType(), x, y);
  }
  Value neg(Value x) { return NegOp::create(b, loc, x.getType(), x); }
  Value scale(Value x, double factor) {
    return ScaleOp::create(b, loc, x.getType(), x, b.getF64FloatAttr(factor));
  }
  Value cast(Value x, Type type) { return CastOp::create(b, loc, type, x); }

  /// `compare predicate, x, y` as an i1 tensor.
  Value compare(StringRef predicate, Value x, Value y) {
    auto type = llvm::cast<RankedTensorType>(x.getType());
    return CompareOp::create(b, loc, type.clone(b.getI1Type()),
                             b.getStringAttr(predicate), x, y);
  }
  Value select(Value cond, Value onTrue, Value onFalse) {
    return SelectOp::create(b, loc, onTrue.getType(), cond, onTrue, onFalse);
  }

  /// `reduce_sum` of `x` over the sorted `dims`.
  Value reduceSum(Value x, ArrayRef<int64_t> dims, bool keepdim) {
    auto type = llvm::cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape;
    for (auto [dim, size] : llvm::enumerate(type.getShape())) {
      if (!llvm::is_contained(dims, static_cast<int64_t>(dim)))
        shape.push_back(size);
      else if (keepdim)
        shape.push_back(1);
    }
    return ReduceSumOp::create(b, loc, type.clone(shape), x,
                               b.getDenseI64ArrayAttr(dims),
                               keepdim ? b.getUnitAttr() : UnitAttr());
  }
  Value broadcast(Value x, RankedTensorType type, ArrayRef<int64_t> dims) {
    return BroadcastInDimOp::create(b, loc, type, x,
                                    b.getDenseI64ArrayAttr(dims));
  }
  Value reshape(Value x, Type type) {
    return x.getType() == type ? x : ReshapeOp::create(b, loc, type, x);
  }
  /// `transpose` of `x`: result dim d is dim `permutation[d]` of `x`.
  Value transpose(Value x, ArrayRef<int64_t> permutation) {
    auto type = llvm::cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape;
    for (int64_t dim : permutation)
      shape.push_back(type.getDimSize(dim));
    return TransposeOp::create(b, loc, type.clone(shape), x,
                               b.getDenseI64ArrayAttr(permutation));
  }
  Value matmul(Type type, Value lhs, Value rhs, bool transposeLhs,
               bool transposeRhs) {
    return MatmulOp::create(b, loc, type, lhs, rhs, /*addend=*/Value(),
                            transposeLhs, transposeRhs);
  }
};
} // namespace

/// The common frame of every rule: checks that there is one cotangent of the
/// result's type, returns null cotangents when it is null or the result is
/// not a float tensor, and otherwise calls `rule(emitter, cotangent)`.
template <typename Rule>
static Grads buildRule(Operation *op, OpBuilder &builder,
                       ValueRange resultGrads, Rule rule) {
  if (resultGrads.size() != 1)
    return op->emitOpError()
           << "expects one result cotangent, got " << resultGrads.size();
  Value grad = resultGrads.front();
  Type resultType = op->getResult(0).getType();
  if (!grad || !isa<FloatType>(getElementTypeOrSelf(resultType)))
    return SmallVector<Value>(op->getNumOperands());
  if (grad.getType() != resultType)
    return op->emitOpError() << "expects a result cotangent of type "
                             << resultType << ", got " << grad.getType();
  Emitter emitter{builder, op->getLoc()};
  return rule(emitter, grad);
}

/// A zero tensor of the static type `type` for the rule of `op`.
static FailureOr<Value> zeros(Operation *op, Emitter &e,
                              RankedTensorType type) {
  if (!type.hasStaticShape())
    return op->emitOpError()
           << "needs a static shape for its VJP, got " << type;
  auto element = cast<FloatType>(type.getElementType());
  auto value = DenseElementsAttr::get(
      type, APFloat::getZero(element.getFloatSemantics()));
  return ConstantOp::create(e.b, e.loc, type, value).getResult();
}

/// The cotangent of a `reduce_*` operand of type `inputType` from `grad`,
/// the cotangent of its result (reduced over `dims`, kept as size 1 when
/// `keepdim`): `grad` broadcast back over the reduced dims.
static Value broadcastReduced(Emitter &e, Value grad,
                              RankedTensorType inputType,
                              ArrayRef<int64_t> dims, bool keepdim) {
  SmallVector<int64_t> mapped;
  for (int64_t dim = 0; dim < inputType.getRank(); ++dim)
    if (keepdim || !llvm::is_contained(dims, dim))
      mapped.push_back(dim);
  return e.broadcast(grad, inputType, mapped);
}

/// The cotangent of the operand (of type `operandType`) of a broadcast whose
/// operand dim d maps to result dim `dims[d]`, from the cotangent `grad` of
/// the broadcast result: the sum over the result dims the operand does not
/// have or has with size 1, in the operand's dim order. This is the "sum to
/// shape" of broadcast_in_dim and of matmul's shared rank-2 rhs.
static Value sumToOperand(Emitter &e, Value grad, RankedTensorType operandType,
                          ArrayRef<int64_t> dims) {
  auto gradType = cast<RankedTensorType>(grad.getType());
  SmallVector<int64_t> summed;
  for (int64_t resultDim = 0; resultDim < gradType.getRank(); ++resultDim) {
    const int64_t *mapped = llvm::find(dims, resultDim);
    if (mapped == dims.end() ||
        (operandType.getDimSize(mapped - dims.begin()) == 1 &&
         gradType.getDimSize(resultDim) != 1))
      summed.push_back(resultDim);
  }
  Value sum = summed.empty() ? grad : e.reduceSum(grad, summed, true);
  // The operand dims in the order of the result dims they map to.
  SmallVector<int64_t> order =
      llvm::to_vector(llvm::seq<int64_t>(0, dims.size()));
  llvm::sort(order, [&](int64_t a, int64_t b) { return dims[a] < dims[b]; });
  SmallVector<int64_t> shape;
  for (int64_t dim : order)
    shape.push_back(operandType.getDimSize(dim));
  Value ordered = e.reshape(sum, operandType.clone(shape));
  if (llvm::is_sorted(dims))
    return ordered;
  SmallVector<int64_t> inverse(order.size());
  for (auto [position, dim] : llvm::enumerate(order))
    inverse[dim] = position;
  return e.transpose(ordered, inverse);
}

/// The number of elements of `type` in `dims`; fails on a dynamic one.
static FailureOr<int64_t> countReduced(Operation *op, RankedTensorType type,
                                       ArrayRef<int64_t> dims) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (type.isDynamicDim(dim))
      return op->emitOpError()
             << "needs static reduced dims for its VJP, got " << type;
    count *= type.getDimSize(dim);
  }
  return count;
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

Grads AddOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &, Value dy) -> Grads {
                     return SmallVector<Value>{dy, dy};
                   });
}

Grads SubOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     return SmallVector<Value>{dy, e.neg(dy)};
                   });
}

Grads MulOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        return SmallVector<Value>{e.mul(dy, getRhs()), e.mul(dy, getLhs())};
      });
}

Grads DivOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // d(l / r)/dr = -(l / r) / r.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value rhsGrad = e.neg(e.div(e.mul(dy, getResult()), getRhs()));
        return SmallVector<Value>{e.div(dy, getRhs()), rhsGrad};
      });
}

Grads RoundedDivOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // A step function: zero almost everywhere (no cotangents).
  return SmallVector<Value>(2);
}

Grads RemainderOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // l - r * q(l, r), q piecewise constant: dy for l, -dy * q for r.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value quotient = RoundedDivOp::create(e.b, e.loc, getType(), getLhs(),
                                              getRhs(), getTruncateAttr());
        return SmallVector<Value>{dy, e.neg(e.mul(dy, quotient))};
      });
}

Grads MaxOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // torch.maximum: where(l == r, dy / 2, dy), zeroed where the operand is
  // the smaller one.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        FailureOr<Value> zero = zeros(*this, e, getType());
        if (failed(zero))
          return failure();
        Value shared =
            e.select(e.compare("eq", getLhs(), getRhs()), e.scale(dy, 0.5), dy);
        return SmallVector<Value>{
            e.select(e.compare("lt", getLhs(), getRhs()), *zero, shared),
            e.select(e.compare("gt", getLhs(), getRhs()), *zero, shared)};
      });
}

Grads NegOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     return SmallVector<Value>{e.neg(dy)};
                   });
}

Grads ExpOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     return SmallVector<Value>{e.mul(dy, getResult())};
                   });
}

Grads LogOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     return SmallVector<Value>{e.div(dy, getInput())};
                   });
}

Grads SqrtOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // d sqrt(x) = 1 / (2 sqrt(x)).
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        return SmallVector<Value>{e.scale(e.div(dy, getResult()), 0.5)};
      });
}

Grads RsqrtOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // d x^-1/2 = -x^-3/2 / 2 = -y^3 / 2.
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     Value y = getResult();
                     return SmallVector<Value>{
                         e.scale(e.mul(dy, e.mul(y, e.mul(y, y))), -0.5)};
                   });
}

Grads TanhOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // d tanh = 1 - y^2.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value y = getResult();
        return SmallVector<Value>{e.sub(dy, e.mul(e.mul(dy, y), y))};
      });
}

Grads SigmoidOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // d sigmoid = y (1 - y).
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value y = getResult();
        return SmallVector<Value>{e.mul(dy, e.sub(y, e.mul(y, y)))};
      });
}

Grads SiluOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // d (x s) = s + x s (1 - s) = s + y - y s, with s = sigmoid(x).
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value s = SigmoidOp::create(e.b, e.loc, getType(), getInput());
        Value y = getResult();
        return SmallVector<Value>{e.mul(dy, e.add(s, e.sub(y, e.mul(y, s))))};
      });
}

Grads CosOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value sin = SinOp::create(e.b, e.loc, getType(), getInput());
        return SmallVector<Value>{e.neg(e.mul(dy, sin))};
      });
}

Grads SinOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value cos = CosOp::create(e.b, e.loc, getType(), getInput());
        return SmallVector<Value>{e.mul(dy, cos)};
      });
}

Grads ErfOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // d erf(x) = 2 / sqrt(pi) exp(-x^2).
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value x = getInput();
        Value gaussian =
            ExpOp::create(e.b, e.loc, getType(), e.neg(e.mul(x, x)));
        return SmallVector<Value>{
            e.scale(e.mul(dy, gaussian), 2.0 / std::sqrt(llvm::numbers::pi))};
      });
}

Grads GeluOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        return SmallVector<Value>{GeluGradOp::create(
            e.b, e.loc, getType(), getInput(), dy, getApproximateAttr())};
      });
}

Grads ScaleOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        return SmallVector<Value>{e.scale(dy, getFactor().convertToDouble())};
      });
}

//===----------------------------------------------------------------------===//
// Constants, conversions, masks
//===----------------------------------------------------------------------===//

Grads ConstantOp::buildVJP(OpBuilder &, ValueRange) {
  return SmallVector<Value>();
}

Grads IotaOp::buildVJP(OpBuilder &, ValueRange) { return SmallVector<Value>(); }

Grads RandomUniformOp::buildVJP(OpBuilder &, ValueRange) {
  return SmallVector<Value>(getNumOperands());
}

Grads CheckIdsOp::buildVJP(OpBuilder &, ValueRange) {
  return SmallVector<Value>(1);
}

Grads CompareOp::buildVJP(OpBuilder &, ValueRange) {
  return SmallVector<Value>(2);
}

Grads CastOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // The cotangent is cast back to the input's type; from integers nothing.
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     Type inputType = getInput().getType();
                     if (!isa<FloatType>(getElementTypeOrSelf(inputType)))
                       return SmallVector<Value>(1);
                     return SmallVector<Value>{e.cast(dy, inputType)};
                   });
}

Grads StopGradientOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // `Tensor.detach()`: the input gets no cotangent.
  return SmallVector<Value>(1);
}

Grads SelectOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        FailureOr<Value> zero = zeros(*this, e, getType());
        if (failed(zero))
          return failure();
        return SmallVector<Value>{Value(), e.select(getCond(), dy, *zero),
                                  e.select(getCond(), *zero, dy)};
      });
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

Grads ReduceSumOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     return SmallVector<Value>{broadcastReduced(
                         e, dy, getInput().getType(), getDims(), getKeepdim())};
                   });
}

Grads ReduceMeanOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        FailureOr<int64_t> count =
            countReduced(*this, getInput().getType(), getDims());
        if (failed(count))
          return failure();
        Value spread = broadcastReduced(e, dy, getInput().getType(), getDims(),
                                        getKeepdim());
        return SmallVector<Value>{e.scale(spread, 1.0 / double(*count))};
      });
}

Grads ReduceMaxOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // torch.amax: the cotangent is divided equally among the maxima.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        RankedTensorType inputType = getInput().getType();
        auto spread = [&](Value reduced) {
          return broadcastReduced(e, reduced, inputType, getDims(),
                                  getKeepdim());
        };
        Value isMax =
            e.cast(e.compare("eq", getInput(), spread(getResult())), inputType);
        Value count = e.reduceSum(isMax, getDims(), getKeepdim());
        return SmallVector<Value>{e.mul(isMax, spread(e.div(dy, count)))};
      });
}

Grads SoftmaxOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // dx = y (dy - sum(dy y)).
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        int64_t dim = getDim();
        Value y = getResult();
        Value dot = e.reduceSum(e.mul(dy, y), dim, /*keepdim=*/true);
        Value spread = broadcastReduced(e, dot, getType(), dim, true);
        return SmallVector<Value>{e.mul(y, e.sub(dy, spread))};
      });
}

Grads LogSoftmaxOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // dx = dy - softmax(x) sum(dy), with softmax(x) = exp(y).
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        int64_t dim = getDim();
        Value total = e.reduceSum(dy, dim, /*keepdim=*/true);
        Value spread = broadcastReduced(e, total, getType(), dim, true);
        Value probabilities = ExpOp::create(e.b, e.loc, getType(), getResult());
        return SmallVector<Value>{e.sub(dy, e.mul(probabilities, spread))};
      });
}

Grads RmsNormOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        auto grad = RmsNormGradOp::create(
            e.b, e.loc, getInput().getType(), getWeight().getType(), getInput(),
            getWeight(), dy, /*addend=*/Value(), getEpsAttr());
        return SmallVector<Value>{grad.getInputGrad(), grad.getWeightGrad()};
      });
}

Grads LayerNormOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Type weightType = getWeight().getType();
        auto grad = LayerNormGradOp::create(e.b, e.loc, getInput().getType(),
                                            weightType, weightType, getInput(),
                                            getWeight(), dy, getEpsAttr());
        return SmallVector<Value>{grad.getInputGrad(), grad.getWeightGrad(),
                                  grad.getBiasGrad()};
      });
}

//===----------------------------------------------------------------------===//
// Contractions and model-level ops
//===----------------------------------------------------------------------===//

Grads MatmulOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // With C = A' B' (A' = A or A^T, B' = B or B^T): dA' = dC B'^T and
  // dB' = A'^T dC, each written as one matmul with transpose flags.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value lhs = getLhs(), rhs = getRhs();
        RankedTensorType lhsType = getLhs().getType();
        RankedTensorType rhsType = getRhs().getType();
        bool transposeLhs = getTransposeLhs(), transposeRhs = getTransposeRhs();
        int64_t rank = lhsType.getRank();
        bool sharedRhs = rhsType.getRank() != rank;

        Value lhsGrad;
        if (!transposeLhs) {
          lhsGrad = e.matmul(lhsType, dy, rhs, false, !transposeRhs);
        } else if (!sharedRhs) {
          // dA = B' dC^T.
          lhsGrad = e.matmul(lhsType, rhs, dy, transposeRhs, true);
        } else {
          // A rank-2 B' cannot be the lhs of a batched matmul: dA = (dC
          // B'^T)^T.
          SmallVector<int64_t> shape(lhsType.getShape());
          std::swap(shape[rank - 2], shape[rank - 1]);
          Value product =
              e.matmul(lhsType.clone(shape), dy, rhs, false, !transposeRhs);
          SmallVector<int64_t> swapLast =
              llvm::to_vector(llvm::seq<int64_t>(0, rank));
          std::swap(swapLast[rank - 2], swapLast[rank - 1]);
          lhsGrad = e.transpose(product, swapLast);
        }

        // The rhs cotangent per batch, summed over the batch for a shared
        // rank-2 rhs. (Folding the batch into the rows of one rank-2 product
        // would avoid the [batch, K, N] intermediate, but a reshape that
        // merges the batch with a sharded sequence dim cannot keep that
        // sharding, e.g. under context parallelism.)
        SmallVector<int64_t> shape(lhsType.getShape().drop_back(2));
        llvm::append_range(shape, rhsType.getShape().take_back(2));
        RankedTensorType batchedType = rhsType.clone(shape);
        Value rhsGrad =
            transposeRhs ? e.matmul(batchedType, dy, lhs, true, transposeLhs)
                         : e.matmul(batchedType, lhs, dy, !transposeLhs, false);
        if (sharedRhs)
          rhsGrad = sumToOperand(e, rhsGrad, rhsType, {rank - 2, rank - 1});
        SmallVector<Value> grads = {lhsGrad, rhsGrad};
        if (getAddend())
          grads.push_back(dy); // Added as it is.
        return grads;
      });
}

Grads EmbeddingOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     Value table = EmbeddingGradOp::create(
                         e.b, e.loc, getTable().getType(), getIds(), dy);
                     return SmallVector<Value>{table, Value()};
                   });
}

Grads EmbeddingGradOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // A scatter-add's VJP is the gather of the cotangent at the same ids.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value rows =
            EmbeddingOp::create(e.b, e.loc, getGrad().getType(), dy, getIds());
        return SmallVector<Value>{Value(), rows};
      });
}

Grads RopeOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // A rotation's VJP is the inverse rotation: RoPE with -sin.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value input = RopeOp::create(e.b, e.loc, getType(), dy, getCos(),
                                     e.neg(getSin()), getStyleAttr());
        return SmallVector<Value>{input, Value(), Value()};
      });
}

Grads AttentionOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // The log-sum-exp is for the backward alone.
  if (resultGrads.size() == 2 && resultGrads[1])
    return emitOpError() << "has no VJP for its log-sum-exp result (lse): "
                            "only titan.attention_grad may read it";
  return buildRule(*this, builder, resultGrads.take_front(),
                   [&](Emitter &e, Value dy) -> Grads {
                     Type kvType = getK().getType();
                     auto grad = AttentionGradOp::create(
                         e.b, e.loc, getQ().getType(), kvType, kvType, getQ(),
                         getK(), getV(), getResult(), getLse(), dy,
                         getCausalAttr(), getScaleAttr());
                     return SmallVector<Value>{grad.getQGrad(), grad.getKGrad(),
                                               grad.getVGrad()};
                   });
}

Grads CrossEntropyOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value logits = CrossEntropyGradOp::create(
            e.b, e.loc, getLogits().getType(), getLogits(), getLabels(), dy,
            getIgnoreIndexAttr(), getReplicatedVocabAttr());
        return SmallVector<Value>{logits, Value()};
      });
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

Grads ReshapeOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        return SmallVector<Value>{e.reshape(dy, getInput().getType())};
      });
}

Grads TransposeOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     ArrayRef<int64_t> permutation = getPermutation();
                     SmallVector<int64_t> inverse(permutation.size());
                     for (auto [dim, source] : llvm::enumerate(permutation))
                       inverse[source] = dim;
                     return SmallVector<Value>{e.transpose(dy, inverse)};
                   });
}

Grads SliceOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        Value padded = PadOp::create(e.b, e.loc, getInput().getType(), dy,
                                     getStartAttr(), getStepAttr());
        return SmallVector<Value>{padded};
      });
}

Grads PadOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // The input's cotangent is the slice of the result's it was placed at.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        auto type = cast<RankedTensorType>(getInput().getType());
        SmallVector<int64_t> limit;
        for (auto [size, start, step] :
             llvm::zip_equal(type.getShape(), getStart(), getStep()))
          limit.push_back(start + (size - 1) * step + 1);
        Value sliced =
            SliceOp::create(e.b, e.loc, type, dy, getStartAttr(),
                            e.b.getDenseI64ArrayAttr(limit), getStepAttr());
        return SmallVector<Value>{sliced};
      });
}

Grads ConcatOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  // Operand i's cotangent is its slice of the result's cotangent.
  return buildRule(
      *this, builder, resultGrads, [&](Emitter &e, Value dy) -> Grads {
        if (!getType().hasStaticShape())
          return emitOpError()
                 << "needs a static shape for its VJP, got " << getType();
        int64_t dim = getDim();
        SmallVector<int64_t> start(getType().getRank(), 0);
        SmallVector<int64_t> limit(getType().getShape());
        SmallVector<int64_t> step(getType().getRank(), 1);
        SmallVector<Value> grads;
        for (Value input : getInputs()) {
          auto type = cast<RankedTensorType>(input.getType());
          limit[dim] = start[dim] + type.getDimSize(dim);
          grads.push_back(SliceOp::create(
              e.b, e.loc, type, dy, e.b.getDenseI64ArrayAttr(start),
              e.b.getDenseI64ArrayAttr(limit), e.b.getDenseI64ArrayAttr(step)));
          start[dim] = limit[dim];
        }
        return grads;
      });
}

Grads BroadcastInDimOp::buildVJP(OpBuilder &builder, ValueRange resultGrads) {
  return buildRule(*this, builder, resultGrads,
                   [&](Emitter &e, Value dy) -> Grads {
                     return SmallVector<Value>{
                         sumToOperand(e, dy, getInput().getType(), getDims())};
                   });
}
