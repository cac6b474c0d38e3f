//===- Elementwise.cpp - titan's elementwise ops to linalg ----------------===//
//
// Every elementwise op becomes one all-parallel `linalg.generic` with
// identity indexing maps whose body is the op's scalar semantics (those of
// lib/Interpreter: floats compute in f32 for bf16/f16 and round once), so
// that elementwise fusion merges chains of them into one loop nest.
// `titan.constant` becomes a `linalg.fill` when splat (fusion folds the
// value into its users) and an `arith.constant` otherwise; `titan.iota` a
// generic of `linalg.index`.
//
// Some scalar functions are not single math ops: the rounded division and
// remainder (include/titan/Dialect/Rounding.h, step for step), erf in f64
// (math.erf has no lowering for f64: a series and a continued fraction here),
// and f32 sin/cos, whose argument is first reduced modulo 2 pi in f64 (the f32
// polynomial's own reduction loses accuracy linearly in |x|, which RoPE
// tables of long sequences reach).
//
//===----------------------------------------------------------------------===//

#include "Helpers.h"

#include "titan/Dialect/RandomUniform.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The scalar computation of an elementwise op on its operands.
using ScalarFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Identity maps for the operands of an elementwise `op`.
SmallVector<AffineMap> getIdentityMaps(Operation *op) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  return SmallVector<AffineMap>(
      op->getNumOperands(),
      AffineMap::getMultiDimIdentityMap(type.getRank(), op->getContext()));
}

/// Replaces the float elementwise `op` by a generic computing `fn` on its
/// operands in the compute type of its result.
LogicalResult rewriteFloatElementwise(Operation *op, PatternRewriter &rewriter,
                                      ScalarFn fn) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  rewriter.replaceOp(op,
                     buildFloatMap(rewriter, op->getLoc(), type,
                                   getComputeType(type.getElementType()),
                                   op->getOperands(), getIdentityMaps(op), fn));
  return success();
}

/// Replaces the elementwise `op` by a generic computing `fn` on its
/// operands as they are (no conversion to a compute type).
LogicalResult rewriteElementwise(Operation *op, PatternRewriter &rewriter,
                                 ScalarFn fn) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  rewriter.replaceOp(op, buildMap(rewriter, op->getLoc(), type,
                                  op->getOperands(), getIdentityMaps(op), fn));
  return success();
}

//===----------------------------------------------------------------------===//
// Arithmetic and math
//===----------------------------------------------------------------------===//

/// A titan op whose scalar semantics is one arith or math op.
template <typename OpTy, typename ScalarOp>
LogicalResult convertDirect(OpTy op, PatternRewriter &rewriter) {
  return rewriteFloatElementwise(
      op, rewriter, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return ScalarOp::create(b, loc, args[0].getType(), args);
      });
}

/// A titan op of floats or integers: one arith op for each.
template <typename OpTy, typename FloatOp, typename IntegerOp>
LogicalResult convertArithmetic(OpTy op, PatternRewriter &rewriter) {
  if (!isa<IntegerType>(getElementTypeOrSelf(op.getType())))
    return convertDirect<OpTy, FloatOp>(op, rewriter);
  return rewriteElementwise(
      op, rewriter, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return IntegerOp::create(b, loc, args[0].getType(), args);
      });
}

/// The quotient or remainder (`remainder`) of integers `a` and `b`, as
/// integerDivision in include/titan/Dialect/Rounding.h computes it.
Value buildIntegerDivision(OpBuilder &b, Location loc, Value a, Value divisor,
                           bool truncate, bool remainder) {
  Type type = a.getType();
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, value));
  };
  auto compare = [&](arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, predicate, x, y);
  };
  Value zero = constant(0), one = constant(1);
  Value byMinusOne = compare(arith::CmpIPredicate::eq, divisor, constant(-1));
  Value byOne = arith::OrIOp::create(
      b, loc, compare(arith::CmpIPredicate::eq, divisor, zero), byMinusOne);
  Value safe = arith::SelectOp::create(b, loc, byOne, one, divisor);
  Value quotient = arith::DivSIOp::create(b, loc, a, safe);
  Value rest = arith::RemSIOp::create(b, loc, a, safe);
  quotient = arith::SelectOp::create(
      b, loc, byMinusOne, arith::SubIOp::create(b, loc, zero, quotient),
      quotient);
  if (!truncate) {
    Value signsDiffer = arith::XOrIOp::create(
        b, loc, compare(arith::CmpIPredicate::slt, rest, zero),
        compare(arith::CmpIPredicate::slt, divisor, zero));
    Value adjust = arith::AndIOp::create(
        b, loc, compare(arith::CmpIPredicate::ne, rest, zero), signsDiffer);
    quotient = arith::SelectOp::create(
        b, loc, adjust, arith::SubIOp::create(b, loc, quotient, one), quotient);
    rest = arith::SelectOp::create(
        b, loc, adjust, arith::AddIOp::create(b, loc, rest, divisor), rest);
  }
  return remainder ? rest : quotient;
}

/// The rounded quotient or the remainder (`remainder`) of floats `a` and
/// `b`, as roundedFloatDivision and floatRemainder in
/// include/titan/Dialect/Rounding.h compute them.
Value buildFloatRounding(OpBuilder &b, Location loc, Value a, Value divisor,
                         bool truncate, bool remainder) {
  Type type = a.getType();
  auto compare = [&](arith::CmpFPredicate predicate, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, predicate, x, y);
  };
  if (truncate)
    return remainder ? arith::RemFOp::create(b, loc, a, divisor).getResult()
                     : math::TruncOp::create(
                           b, loc, arith::DivFOp::create(b, loc, a, divisor))
                           .getResult();
  Value zero = createFloat(b, loc, type, 0.0);
  Value one = createFloat(b, loc, type, 1.0);
  Value rest = arith::RemFOp::create(b, loc, a, divisor);
  // C++'s `!=` is true for NaN (une), `<` false (olt).
  Value adjust = arith::AndIOp::create(
      b, loc, compare(arith::CmpFPredicate::UNE, rest, zero),
      arith::XOrIOp::create(b, loc,
                            compare(arith::CmpFPredicate::OLT, divisor, zero),
                            compare(arith::CmpFPredicate::OLT, rest, zero)));
  if (remainder)
    return arith::SelectOp::create(
        b, loc, adjust, arith::AddFOp::create(b, loc, rest, divisor), rest);
  Value quotient = arith::DivFOp::create(b, loc, a, divisor);
  Value exact = arith::DivFOp::create(
      b, loc, arith::SubFOp::create(b, loc, a, rest), divisor);
  exact = arith::SelectOp::create(
      b, loc, adjust, arith::SubFOp::create(b, loc, exact, one), exact);
  Value floored = math::FloorOp::create(b, loc, exact);
  Value rounded = arith::SelectOp::create(
      b, loc,
      compare(arith::CmpFPredicate::OGT,
              arith::SubFOp::create(b, loc, exact, floored),
              createFloat(b, loc, type, 0.5)),
      arith::AddFOp::create(b, loc, floored, one), floored);
  Value result = arith::SelectOp::create(
      b, loc, compare(arith::CmpFPredicate::OEQ, exact, zero),
      math::CopySignOp::create(b, loc, zero, quotient), rounded);
  return arith::SelectOp::create(
      b, loc, compare(arith::CmpFPredicate::OEQ, divisor, zero), quotient,
      result);
}

/// titan.rounded_div and titan.remainder of floats or integers.
template <typename OpTy>
LogicalResult convertRounding(OpTy op, PatternRewriter &rewriter) {
  bool truncate = op.getTruncate();
  constexpr bool remainder = std::is_same_v<OpTy, RemainderOp>;
  if (!isa<IntegerType>(getElementTypeOrSelf(op.getType())))
    return rewriteFloatElementwise(
        op, rewriter,
        [truncate](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return buildFloatRounding(b, loc, args[0], args[1], truncate,
                                    remainder);
        });
  return rewriteElementwise(
      op, rewriter,
      [truncate](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return buildIntegerDivision(b, loc, args[0], args[1], truncate,
                                    remainder);
      });
}

/// titan.neg of floats, or of integers as 0 - x.
LogicalResult convertNeg(NegOp op, PatternRewriter &rewriter) {
  if (!isa<IntegerType>(getElementTypeOrSelf(op.getType())))
    return convertDirect<NegOp, arith::NegFOp>(op, rewriter);
  return rewriteElementwise(
      op, rewriter, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value zero = arith::ConstantOp::create(
            b, loc, b.getIntegerAttr(args[0].getType(), 0));
        return arith::SubIOp::create(b, loc, zero, args[0]);
      });
}

/// 1 + e^-x.
Value buildOnePlusExpNeg(OpBuilder &b, Location loc, Value x) {
  Value exp = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::AddFOp::create(b, loc, createFloat(b, loc, x.getType(), 1.0),
                               exp);
}

LogicalResult convertSigmoid(SigmoidOp op, PatternRewriter &rewriter) {
  return rewriteFloatElementwise(
      op, rewriter, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value one = createFloat(b, loc, args[0].getType(), 1.0);
        return arith::DivFOp::create(b, loc, one,
                                     buildOnePlusExpNeg(b, loc, args[0]));
      });
}

LogicalResult convertSilu(SiluOp op, PatternRewriter &rewriter) {
  return rewriteFloatElementwise(
      op, rewriter, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return arith::DivFOp::create(b, loc, args[0],
                                     buildOnePlusExpNeg(b, loc, args[0]));
      });
}

/// sin or cos of an f32 or f64 scalar. f32 arguments are first reduced
/// modulo 2 pi in f64: the polynomial approximation of f32 sin/cos reduces
/// in f32 and loses ~3e-8 |x| (2e-4 at the positions of a long sequence's
/// RoPE table); reduced, it is accurate to ~1e-7.
template <typename MathOp>
Value buildTrigonometric(OpBuilder &b, Location loc, Value x) {
  Type type = x.getType();
  if (type.isF64())
    return MathOp::create(b, loc, x);
  Type f64 = Float64Type::get(b.getContext());
  Value wide = convertFloat(b, loc, x, f64);
  constexpr double kTwoPi = 2.0 * llvm::numbers::pi;
  Value turns = math::RoundEvenOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, wide,
                            createFloat(b, loc, f64, 1 / kTwoPi)));
  Value reduced = arith::SubFOp::create(
      b, loc, wide,
      arith::MulFOp::create(b, loc, turns, createFloat(b, loc, f64, kTwoPi)));
  return MathOp::create(b, loc, convertFloat(b, loc, reduced, type));
}

template <typename OpTy, typename MathOp>
LogicalResult convertTrigonometric(OpTy op, PatternRewriter &rewriter) {
  return rewriteFloatElementwise(
      op, rewriter, [](OpBuilder &b, Location loc, ValueRange args) {
        return buildTrigonometric<MathOp>(b, loc, args[0]);
      });
}

LogicalResult convertScale(ScaleOp op, PatternRewriter &rewriter) {
  // The factor is rounded to the element type, then applied in the compute
  // type (where it is exact).
  Type elementType = op.getType().getElementType();
  APFloat factor = op.getFactor();
  bool losesInfo = false;
  factor.convert(cast<FloatType>(elementType).getFloatSemantics(),
                 APFloat::rmNearestTiesToEven, &losesInfo);
  double rounded = factor.convertToDouble();
  return rewriteFloatElementwise(
      op, rewriter, [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return arith::MulFOp::create(
            b, loc, args[0], createFloat(b, loc, args[0].getType(), rounded));
      });
}

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

/// Evaluates the polynomial with `coefficients` (constant term first) at
/// `x` by Horner's rule.
Value buildPolynomial(OpBuilder &b, Location loc, Value x,
                      ArrayRef<double> coefficients) {
  Type type = x.getType();
  Value result = createFloat(b, loc, type, coefficients.back());
  for (double coefficient : llvm::reverse(coefficients.drop_back())) {
    Value product = arith::MulFOp::create(b, loc, result, x);
    result = arith::AddFOp::create(b, loc, product,
                                   createFloat(b, loc, type, coefficient));
  }
  return result;
}

/// erf(x) for an f32 or f64 scalar: `math.erf` for f32 (polynomial
/// approximation when lowered); for f64, which has no lowering of
/// `math.erf`, a Taylor series below |x| = 2.5 and a continued fraction of
/// erfc above (relative error below 1e-14).
Value buildErf(OpBuilder &b, Location loc, Value x) {
  Type type = x.getType();
  if (!type.isF64())
    return math::ErfOp::create(b, loc, x);
  // The series converges fast below the threshold, the continued fraction
  // above it; each is evaluated at a clamped argument, so that the branch
  // not taken stays finite.
  constexpr double kThreshold = 2.5;
  constexpr int kTerms = 40;
  Value threshold = createFloat(b, loc, type, kThreshold);
  Value magnitude = math::AbsFOp::create(b, loc, x);
  Value small = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                      magnitude, threshold);

  // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)).
  SmallVector<double> series;
  double factorial = 1.0;
  for (int n = 0; n < kTerms; ++n) {
    if (n > 0)
      factorial *= n;
    double sign = n % 2 ? -1.0 : 1.0;
    series.push_back(2.0 / std::sqrt(llvm::numbers::pi) * sign /
                     (factorial * double(2 * n + 1)));
  }
  Value clampedX = arith::MinimumFOp::create(
      b, loc,
      arith::MaximumFOp::create(b, loc, x,
                                createFloat(b, loc, type, -kThreshold)),
      threshold);
  Value square = arith::MulFOp::create(b, loc, clampedX, clampedX);
  Value seriesValue = arith::MulFOp::create(
      b, loc, clampedX, buildPolynomial(b, loc, square, series));

  // erfc(a) = exp(-a^2) / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) /
  // (a + ...)))) for a = |x| >= threshold, evaluated from the bottom.
  Value a = arith::MaximumFOp::create(b, loc, magnitude, threshold);
  Value fraction = a;
  for (int k = kTerms; k >= 1; --k) {
    Value term = arith::DivFOp::create(
        b, loc, createFloat(b, loc, type, 0.5 * k), fraction);
    fraction = arith::AddFOp::create(b, loc, a, term);
  }
  Value negSquare =
      arith::NegFOp::create(b, loc, arith::MulFOp::create(b, loc, a, a));
  Value erfc = arith::DivFOp::create(
      b, loc,
      arith::MulFOp::create(
          b, loc, math::ExpOp::create(b, loc, negSquare),
          createFloat(b, loc, type, 1.0 / std::sqrt(llvm::numbers::pi))),
      fraction);
  Value tail = math::CopySignOp::create(
      b, loc,
      arith::SubFOp::create(b, loc, createFloat(b, loc, type, 1.0), erfc), x);
  return arith::SelectOp::create(b, loc, small, seriesValue, tail);
}

//===----------------------------------------------------------------------===//

/// The scalar pieces of GELU and its derivative in the type of `x`.
struct Gelu {
  OpBuilder &b;
  Location loc;
  Value x;

  Value constant(double value) {
    return createFloat(b, loc, x.getType(), value);
  }
  Value mul(Value lhs, Value rhs) {
    return arith::MulFOp::create(b, loc, lhs, rhs);
  }
  Value add(Value lhs, Value rhs) {
    return arith::AddFOp::create(b, loc, lhs, rhs);
  }

  /// erf(x / sqrt(2)).
  Value erfTerm() {
    return buildErf(b, loc,
                    arith::DivFOp::create(b, loc, x, constant(std::sqrt(2.0))));
  }

  /// 0.5 * (1 + erf(x / sqrt(2))): the normal CDF.
  Value cdf() { return mul(constant(0.5), add(constant(1.0), erfTerm())); }

  /// tanh(sqrt(2/pi) * (x + 0.044715 x^3)).
  Value tanhTerm() {
    Value cube = mul(mul(mul(constant(0.044715), x), x), x);
    Value inner =
        mul(constant(std::sqrt(2.0 / llvm::numbers::pi)), add(x, cube));
    return math::TanhOp::create(b, loc, inner);
  }

  /// gelu(x), with the association of the interpreter.
  Value value(bool tanhForm) {
    Value half = mul(constant(0.5), x);
    return mul(half, add(constant(1.0), tanhForm ? tanhTerm() : erfTerm()));
  }

  /// gelu'(x).
  Value derivative(bool tanhForm) {
    if (!tanhForm) {
      // Phi(x) + x phi(x).
      Value square = mul(mul(constant(-0.5), x), x);
      Value density =
          arith::DivFOp::create(b, loc, math::ExpOp::create(b, loc, square),
                                constant(std::sqrt(2.0 * llvm::numbers::pi)));
      return add(cdf(), mul(x, density));
    }
    // 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2).
    Value t = tanhTerm();
    Value first = mul(constant(0.5), add(constant(1.0), t));
    Value oneMinusSquare =
        arith::SubFOp::create(b, loc, constant(1.0), mul(t, t));
    Value slope = add(constant(1.0), mul(mul(constant(3.0 * 0.044715), x), x));
    Value second = mul(mul(mul(mul(constant(0.5), x), oneMinusSquare),
                           constant(std::sqrt(2.0 / llvm::numbers::pi))),
                       slope);
    return add(first, second);
  }
};

LogicalResult convertErf(ErfOp op, PatternRewriter &rewriter) {
  return rewriteFloatElementwise(
      op, rewriter, [](OpBuilder &b, Location loc, ValueRange args) {
        return buildErf(b, loc, args[0]);
      });
}

LogicalResult convertGelu(GeluOp op, PatternRewriter &rewriter) {
  bool tanhForm = op.getApproximate() == "tanh";
  return rewriteFloatElementwise(
      op, rewriter, [&](OpBuilder &b, Location loc, ValueRange args) {
        return Gelu{b, loc, args[0]}.value(tanhForm);
      });
}

LogicalResult convertGeluGrad(GeluGradOp op, PatternRewriter &rewriter) {
  bool tanhForm = op.getApproximate() == "tanh";
  return rewriteFloatElementwise(
      op, rewriter, [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value derivative = Gelu{b, loc, args[0]}.derivative(tanhForm);
        return arith::MulFOp::create(b, loc, args[1], derivative);
      });
}

//===----------------------------------------------------------------------===//
// Conversions and masks
//===----------------------------------------------------------------------===//

/// Converts a float scalar to the integer type `to` as `titan.cast` does:
/// toward zero, saturating at the type's bounds, NaN to 0.
Value buildFloatToInt(OpBuilder &b, Location loc, Value value, IntegerType to) {
  value = convertFloat(b, loc, value, getComputeType(value.getType()));
  Type from = value.getType();
  unsigned bits = to.getWidth();
  double limit = std::ldexp(1.0, bits - 1);
  Value converted = arith::FPToSIOp::create(b, loc, to, value);
  auto integer = [&](APInt v) -> Value {
    return arith::ConstantOp::create(b, loc, to, b.getIntegerAttr(to, v));
  };
  Value tooBig = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, value,
                                       createFloat(b, loc, from, limit));
  Value tooSmall =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, value,
                            createFloat(b, loc, from, -limit));
  Value isNan =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, value, value);
  converted = arith::SelectOp::create(
      b, loc, tooBig, integer(APInt::getSignedMaxValue(bits)), converted);
  converted = arith::SelectOp::create(
      b, loc, tooSmall, integer(APInt::getSignedMinValue(bits)), converted);
  return arith::SelectOp::create(b, loc, isNan, integer(APInt(bits, 0)),
                                 converted);
}

/// Converts `value` to the element type `to` as `titan.cast` does.
Value buildCast(OpBuilder &b, Location loc, Value value, Type to) {
  Type from = value.getType();
  auto fromInt = dyn_cast<IntegerType>(from);
  auto toInt = dyn_cast<IntegerType>(to);
  if (from == to)
    return value;
  // Anything to i1 is `!= 0` (NaN included).
  if (toInt && toInt.getWidth() == 1) {
    if (fromInt)
      return arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne, value,
          arith::ConstantOp::create(b, loc, from, b.getIntegerAttr(from, 0)));
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value,
                                 createFloat(b, loc, from, 0.0));
  }
  if (fromInt && toInt) {
    if (fromInt.getWidth() == 1)
      return arith::ExtUIOp::create(b, loc, to, value);
    if (fromInt.getWidth() > toInt.getWidth())
      return arith::TruncIOp::create(b, loc, to, value);
    return arith::ExtSIOp::create(b, loc, to, value);
  }
  if (fromInt) {
    // Integers convert to f32 (or f64) first: bf16 and f16 round from there.
    Type wide = getComputeType(to);
    Value converted = fromInt.getWidth() == 1
                          ? Value(arith::UIToFPOp::create(b, loc, wide, value))
                          : Value(arith::SIToFPOp::create(b, loc, wide, value));
    return convertFloat(b, loc, converted, to);
  }
  if (toInt)
    return buildFloatToInt(b, loc, value, toInt);
  return convertFloat(b, loc, value, to);
}

LogicalResult convertCast(CastOp op, PatternRewriter &rewriter) {
  Type to = op.getType().getElementType();
  return rewriteElementwise(op, rewriter,
                            [&](OpBuilder &b, Location loc, ValueRange args) {
                              return buildCast(b, loc, args[0], to);
                            });
}

LogicalResult convertCompare(CompareOp op, PatternRewriter &rewriter) {
  StringRef predicate = op.getPredicate();
  return rewriteElementwise(
      op, rewriter, [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
        Value lhs = args[0], rhs = args[1];
        if (auto type = dyn_cast<IntegerType>(lhs.getType())) {
          // i1 compares as unsigned 0 < 1.
          bool isBool = type.getWidth() == 1;
          auto kind = llvm::StringSwitch<arith::CmpIPredicate>(predicate)
                          .Case("eq", arith::CmpIPredicate::eq)
                          .Case("ne", arith::CmpIPredicate::ne)
                          .Case("lt", isBool ? arith::CmpIPredicate::ult
                                             : arith::CmpIPredicate::slt)
                          .Case("le", isBool ? arith::CmpIPredicate::ule
                                             : arith::CmpIPredicate::sle)
                          .Case("gt", isBool ? arith::CmpIPredicate::ugt
                                             : arith::CmpIPredicate::sgt)
                          .Default(isBool ? arith::CmpIPredicate::uge
                                          : arith::CmpIPredicate::sge);
          return arith::CmpIOp::create(b, loc, kind, lhs, rhs);
        }
        // Ordered predicates are false on NaN, `une` is true.
        auto kind = llvm::StringSwitch<arith::CmpFPredicate>(predicate)
                        .Case("eq", arith::CmpFPredicate::OEQ)
                        .Case("ne", arith::CmpFPredicate::UNE)
                        .Case("lt", arith::CmpFPredicate::OLT)
                        .Case("le", arith::CmpFPredicate::OLE)
                        .Case("gt", arith::CmpFPredicate::OGT)
                        .Default(arith::CmpFPredicate::OGE);
        Type computeType = getComputeType(lhs.getType());
        return arith::CmpFOp::create(b, loc, kind,
                                     convertFloat(b, loc, lhs, computeType),
                                     convertFloat(b, loc, rhs, computeType));
      });
}

LogicalResult convertSelect(SelectOp op, PatternRewriter &rewriter) {
  return rewriteElementwise(
      op, rewriter, [](OpBuilder &b, Location loc, ValueRange args) -> Value {
        return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
      });
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

LogicalResult convertConstant(ConstantOp op, PatternRewriter &rewriter) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (dense && dense.isSplat()) {
    Location loc = op.getLoc();
    Value scalar = arith::ConstantOp::create(rewriter, loc,
                                             dense.getSplatValue<TypedAttr>());
    rewriter.replaceOp(
        op, createFilled(rewriter, loc, op.getType().getShape(), scalar));
    return success();
  }
  rewriter.replaceOpWithNewOp<arith::ConstantOp>(
      op, cast<TypedAttr>(op.getValue()));
  return success();
}

LogicalResult convertIota(IotaOp op, PatternRewriter &rewriter) {
  int64_t dim = op.getDim();
  Type elementType = op.getType().getElementType();
  rewriter.replaceOp(
      op, buildMap(rewriter, op.getLoc(), op.getType(), {}, {},
                   [&](OpBuilder &b, Location loc, ValueRange) -> Value {
                     Value index = linalg::IndexOp::create(b, loc, dim);
                     Value position = arith::IndexCastOp::create(
                         b, loc, b.getI64Type(), index);
                     return buildCast(b, loc, position, elementType);
                   }));
  return success();
}

/// The i64 constant of the 64 bits of `value`.
Value buildWord(OpBuilder &b, Location loc, uint64_t value) {
  return arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                      static_cast<int64_t>(value));
}

/// randomMix (RandomUniform.h) of i64 `z` in arith ops.
Value buildRandomMix(OpBuilder &b, Location loc, Value z) {
  auto i64 = [&](uint64_t value) { return buildWord(b, loc, value); };
  auto xorShift = [&](Value v, unsigned shift) -> Value {
    return arith::XOrIOp::create(b, loc, v,
                                 arith::ShRUIOp::create(b, loc, v, i64(shift)));
  };
  z = arith::MulIOp::create(b, loc, xorShift(z, kRandomShift1),
                            i64(kRandomMultiplier1));
  z = arith::MulIOp::create(b, loc, xorShift(z, kRandomShift2),
                            i64(kRandomMultiplier2));
  return xorShift(z, kRandomShift3);
}

/// The generator of RandomUniform.h: the stream's key is a constant, the
/// step's is mixed per element from the step operand (LLVM hoists it out
/// of the loops).
LogicalResult convertRandomUniform(RandomUniformOp op,
                                   PatternRewriter &rewriter) {
  uint64_t streamKey = randomStreamKey(op.getSeed(), op.getStream());
  int64_t rank = op.getType().getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, op.getContext());
  SmallVector<Value> inputs = {op.getCounters()};
  SmallVector<AffineMap> maps = {identity};
  if (Value step = op.getStep()) {
    inputs.push_back(step);
    maps.push_back(AffineMap::get(rank, 0, op.getContext()));
  }
  rewriter.replaceOp(
      op, buildMap(rewriter, op.getLoc(), op.getType(), inputs, maps,
                   [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                     auto i64 = [&](uint64_t value) {
                       return buildWord(b, loc, value);
                     };
                     Value gamma = i64(kRandomGamma);
                     Value stepKey = i64(randomStepKey(streamKey, 0));
                     if (args.size() > 1) {
                       Value step = arith::FPToSIOp::create(
                           b, loc, b.getI64Type(), args[1]);
                       stepKey = buildRandomMix(
                           b, loc,
                           arith::AddIOp::create(
                               b, loc, i64(streamKey),
                               arith::MulIOp::create(b, loc, step, gamma)));
                     }
                     Value z = buildRandomMix(
                         b, loc,
                         arith::AddIOp::create(
                             b, loc, stepKey,
                             arith::MulIOp::create(b, loc, args[0], gamma)));
                     Value bits = arith::ShRUIOp::create(b, loc, z,
                                                         i64(64 - kRandomBits));
                     Value value =
                         arith::UIToFPOp::create(b, loc, b.getF32Type(), bits);
                     return arith::MulFOp::create(
                         b, loc, value,
                         arith::ConstantOp::create(
                             b, loc, b.getF32FloatAttr(kRandomScale)));
                   }));
  return success();
}

} // namespace

void mlir::titan::populateElementwiseToLinalgPatterns(
    RewritePatternSet &patterns) {
  addConversion(patterns,
                convertArithmetic<AddOp, arith::AddFOp, arith::AddIOp>);
  addConversion(patterns,
                convertArithmetic<SubOp, arith::SubFOp, arith::SubIOp>);
  addConversion(patterns,
                convertArithmetic<MulOp, arith::MulFOp, arith::MulIOp>);
  addConversion(patterns, convertDirect<DivOp, arith::DivFOp>);
  // NaN-propagating, as torch.maximum.
  addConversion(patterns,
                convertArithmetic<MaxOp, arith::MaximumFOp, arith::MaxSIOp>);
  addConversion(patterns, convertRounding<RoundedDivOp>);
  addConversion(patterns, convertRounding<RemainderOp>);
  addConversion(patterns, convertNeg);
  addConversion(patterns, convertDirect<ExpOp, math::ExpOp>);
  addConversion(patterns, convertDirect<LogOp, math::LogOp>);
  addConversion(patterns, convertDirect<SqrtOp, math::SqrtOp>);
  addConversion(patterns, convertDirect<RsqrtOp, math::RsqrtOp>);
  addConversion(patterns, convertDirect<TanhOp, math::TanhOp>);
  addConversion(patterns, convertTrigonometric<CosOp, math::CosOp>);
  addConversion(patterns, convertTrigonometric<SinOp, math::SinOp>);
  addConversion(patterns, convertErf);
  addConversion(patterns, convertSigmoid);
  addConversion(patterns, convertSilu);
  addConversion(patterns, convertScale);
  addConversion(patterns, convertGelu);
  addConversion(patterns, convertGeluGrad);
  addConversion(patterns, convertCast);
  addConversion(patterns, convertRandomUniform);
  addConversion(patterns, convertCompare);
  addConversion(patterns, convertSelect);
  addConversion(patterns, convertConstant);
  addConversion(patterns, convertIota);
}
