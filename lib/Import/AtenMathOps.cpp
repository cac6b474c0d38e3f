//===- AtenMathOps.cpp - elementwise functions written with titan ops -----===//
//
// Conversions of the aten functions titan has no op for, written with its
// exp, log, sqrt, tanh, sin, div and select so that the training step
// differentiates them: inverse trigonometric and hyperbolic functions (a
// Cephes-style arctangent), log1p and logaddexp accurate where the plain
// formula is not, xlogy, hypot, copysign, heaviside, sinc, the shrinkage
// activations, prelu and logcumsumexp. Each branch a select does not take
// is kept finite (its inputs made safe), so that its zero gradient does
// not turn into NaN on the way back.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

constexpr double kPi = 3.14159265358979323846;

/// `onTrue` where `predicate(lhs, number)`, else `onFalse`.
Value selectWhere(Emitter &emit, StringRef predicate, Value lhs, double number,
                  Value onTrue, Value onFalse) {
  return emit.select(emit.compare(predicate, lhs, emit.splatLike(lhs, number)),
                     onTrue, onFalse);
}

/// atan(x) as Cephes' atanf computes it (float32's precision): |x| reduced
/// to [0, tan(pi/8)] by atan(a) = pi/2 - atan(1/a) above tan(3pi/8) and
/// pi/4 + atan((a - 1) / (a + 1)) above tan(pi/8), then an odd polynomial
/// of degree 9; the sign put back.
Value arctangent(Emitter &emit, Value x) {
  Value a = absolute(emit, x);
  Value one = emit.splatLike(a, 1.0);
  Value big = emit.compare("gt", a, emit.splatLike(a, 2.414213562373095));
  Value middle = emit.compare("gt", a, emit.splatLike(a, 0.4142135623730950));
  // -1 / a of a safe a where that branch is not taken (a may be 0 there).
  Value inverted =
      emit.unary<NegOp>(emit.binary<DivOp>(one, emit.select(big, a, one)));
  Value shifted = emit.binary<DivOp>(emit.binary<SubOp>(a, one),
                                     emit.binary<AddOp>(a, one));
  Value r = emit.select(big, inverted, emit.select(middle, shifted, a));
  Value base = emit.select(
      big, emit.splatLike(a, kPi / 2),
      emit.select(middle, emit.splatLike(a, kPi / 4), emit.splatLike(a, 0.0)));
  Value z = emit.binary<MulOp>(r, r);
  Value poly = emit.splatLike(z, 8.05374449538e-2);
  for (double c : {-1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1})
    poly =
        emit.binary<AddOp>(emit.binary<MulOp>(poly, z), emit.splatLike(z, c));
  Value magnitude = emit.binary<AddOp>(
      base, emit.binary<AddOp>(
                emit.binary<MulOp>(emit.binary<MulOp>(poly, z), r), r));
  return selectWhere(emit, "lt", x, 0.0, emit.unary<NegOp>(magnitude),
                     magnitude);
}

/// log(1 + x) accurate near 0: log(u) * x / (u - 1) with u = 1 + x (the
/// rounding of u cancels), x itself where u rounds to 1, u where it is
/// infinite. The factor x / (u - 1) (1 within rounding) is not
/// differentiated: its derivative is made of rounding residues, which
/// would put an error of (u - 1 - x) / x into the gradient 1 / u.
Value logOnePlus(Emitter &emit, Value x) {
  Value one = emit.splatLike(x, 1.0);
  Value u = emit.binary<AddOp>(one, x);
  Value exact = emit.compare("eq", u, one);
  Value excess = emit.select(exact, one, emit.binary<SubOp>(u, one));
  Value infinite = emit.compare(
      "eq", u, emit.splatLike(u, std::numeric_limits<double>::infinity()));
  Value finiteU = emit.select(infinite, one, u);
  Value corrected = emit.binary<MulOp>(
      emit.unary<LogOp>(finiteU),
      emit.unary<StopGradientOp>(emit.binary<DivOp>(x, excess)));
  return emit.select(exact, x, emit.select(infinite, u, corrected));
}

/// log(exp(a) + exp(b)) = max(a, b) + log1p(exp(-|a - b|)); a + log 2 where
/// a == b (two equal infinities give that infinity, not NaN, and their
/// difference is not differentiated).
Value logAddExp(Emitter &emit, Value a, Value b) {
  Value equal = emit.compare("eq", a, b);
  Value difference =
      emit.select(equal, emit.splatLike(a, 0.0), emit.binary<SubOp>(a, b));
  Value tail = logOnePlus(
      emit, emit.unary<ExpOp>(emit.unary<NegOp>(absolute(emit, difference))));
  Value general = emit.binary<AddOp>(emit.binary<MaxOp>(a, b), tail);
  return emit.select(
      equal, emit.binary<AddOp>(a, emit.splatLike(a, std::log(2.0))), general);
}

/// The functions of one floating-point tensor written in this file.
enum class MathFunction {
  Atan,
  Asin,
  Acos,
  Asinh,
  Acosh,
  Atanh,
  Log1p,
  Deg2rad,
  Rad2deg,
  Sinc,
  Softsign,
  Tanhshrink,
};

/// The scalar counterpart of `function` (scripted math.atan(x) of a
/// Python float folds at import).
double scalarOf(MathFunction function, double x) {
  switch (function) {
  case MathFunction::Atan:
    return std::atan(x);
  case MathFunction::Asin:
    return std::asin(x);
  case MathFunction::Acos:
    return std::acos(x);
  case MathFunction::Asinh:
    return std::asinh(x);
  case MathFunction::Acosh:
    return std::acosh(x);
  case MathFunction::Atanh:
    return std::atanh(x);
  case MathFunction::Log1p:
    return std::log1p(x);
  case MathFunction::Deg2rad:
    return x * kPi / 180;
  case MathFunction::Rad2deg:
    return x * 180 / kPi;
  case MathFunction::Sinc:
    return x == 0 ? 1 : std::sin(kPi * x) / (kPi * x);
  case MathFunction::Softsign:
    return x / (1 + std::fabs(x));
  case MathFunction::Tanhshrink:
    return x - std::tanh(x);
  }
  llvm_unreachable("unknown math function");
}

/// asinh(|x|) = log1p(a + a^2 / (1 + sqrt(1 + a^2))) (accurate near 0), or
/// log(a) + log 2 where a^2 would overflow; acosh(x) the same way of
/// t = x - 1: log1p(t + sqrt(2t + t^2)).
Value inverseHyperbolic(Emitter &emit, Value x, bool cosine) {
  constexpr double kLarge = 1e9;
  Value one = emit.splatLike(x, 1.0);
  Value a = cosine ? x : absolute(emit, x);
  Value large = emit.compare("gt", a, emit.splatLike(a, kLarge));
  Value bounded = emit.min(a, emit.splatLike(a, kLarge));
  Value small;
  if (cosine) {
    Value t = emit.binary<SubOp>(bounded, one);
    small = logOnePlus(
        emit, emit.binary<AddOp>(
                  t, emit.unary<SqrtOp>(emit.binary<AddOp>(
                         emit.scale(t, 2.0), emit.binary<MulOp>(t, t)))));
  } else {
    Value square = emit.binary<MulOp>(bounded, bounded);
    Value root = emit.unary<SqrtOp>(emit.binary<AddOp>(one, square));
    small = logOnePlus(
        emit, emit.binary<AddOp>(
                  bounded,
                  emit.binary<DivOp>(square, emit.binary<AddOp>(one, root))));
  }
  Value far = emit.binary<AddOp>(emit.unary<LogOp>(emit.binary<MaxOp>(a, one)),
                                 emit.splatLike(a, std::log(2.0)));
  Value magnitude = emit.select(large, far, small);
  if (cosine)
    return magnitude;
  return selectWhere(emit, "lt", x, 0.0, emit.unary<NegOp>(magnitude),
                     magnitude);
}

/// aten::atan, asin, acos, asinh, acosh, atanh, log1p, deg2rad, rad2deg,
/// sinc, softsign and tanhshrink of a tensor (integers computed in
/// float32) or a number.
Outputs convertMath(GraphImporter &importer, Node *node,
                    MathFunction function) {
  const ImportedValue &input = importer.input(node, 0);
  if (input.isNumber())
    return single(ImportedValue::ofFloat(scalarOf(function, input.asDouble())));
  llvm::Expected<Value> x = promotedFloatInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value one = emit.splatLike(*x, 1.0);
  switch (function) {
  case MathFunction::Atan:
    return single(arctangent(emit, *x));
  case MathFunction::Asin:
    // atan(x / sqrt((1 - x)(1 + x))): +-pi/2 at +-1, NaN past them.
    return single(arctangent(
        emit, emit.binary<DivOp>(*x, emit.unary<SqrtOp>(emit.binary<MulOp>(
                                         emit.binary<SubOp>(one, *x),
                                         emit.binary<AddOp>(one, *x))))));
  case MathFunction::Acos:
    // 2 atan(sqrt((1 - x) / (1 + x))): accurate near 1, pi at -1.
    return single(
        emit.scale(arctangent(emit, emit.unary<SqrtOp>(emit.binary<DivOp>(
                                        emit.binary<SubOp>(one, *x),
                                        emit.binary<AddOp>(one, *x)))),
                   2.0));
  case MathFunction::Asinh:
    return single(inverseHyperbolic(emit, *x, /*cosine=*/false));
  case MathFunction::Acosh:
    return single(inverseHyperbolic(emit, *x, /*cosine=*/true));
  case MathFunction::Atanh:
    // log1p(2x / (1 - x)) / 2.
    return single(emit.scale(
        logOnePlus(emit, emit.binary<DivOp>(emit.scale(*x, 2.0),
                                            emit.binary<SubOp>(one, *x))),
        0.5));
  case MathFunction::Log1p:
    return single(logOnePlus(emit, *x));
  case MathFunction::Deg2rad:
    return single(emit.scale(*x, kPi / 180));
  case MathFunction::Rad2deg:
    return single(emit.scale(*x, 180 / kPi));
  case MathFunction::Sinc: {
    // sin(t) / t with t = pi x; 1 - t^2/6 + t^4/120 - t^6/5040 where
    // |t| < 0.1 (1 at 0, and a gradient without the cancellation of
    // cos(t) / t - sin(t) / t^2), the quotient of a safe t there.
    Value t = emit.scale(*x, kPi);
    Value near = emit.compare("lt", absolute(emit, t), emit.splatLike(t, 0.1));
    Value square = emit.binary<MulOp>(t, t);
    Value series = emit.splatLike(t, -1.0 / 5040);
    for (double c : {1.0 / 120, -1.0 / 6, 1.0})
      series = emit.binary<AddOp>(emit.binary<MulOp>(series, square),
                                  emit.splatLike(t, c));
    Value safe = emit.select(near, one, t);
    return single(emit.select(
        near, series, emit.binary<DivOp>(emit.unary<SinOp>(safe), safe)));
  }
  case MathFunction::Softsign:
    return single(
        emit.binary<DivOp>(*x, emit.binary<AddOp>(one, absolute(emit, *x))));
  case MathFunction::Tanhshrink:
    return single(emit.binary<SubOp>(*x, emit.unary<TanhOp>(*x)));
  }
  llvm_unreachable("unknown math function");
}

} // namespace

Value mlir::titan::import::atan2Of(Emitter &emit, Value y, Value x) {
  // atan(y / x) of a safe x, moved to the quadrant of (x, y); +-pi/2 on
  // the y axis, 0 at the origin.
  Value zero = emit.splatLike(x, 0.0), one = emit.splatLike(x, 1.0);
  Value onAxis = emit.compare("eq", x, zero);
  Value base =
      arctangent(emit, emit.binary<DivOp>(y, emit.select(onAxis, one, x)));
  Value upper = emit.compare("ge", y, zero);
  Value left =
      emit.binary<AddOp>(base, emit.select(upper, emit.splatLike(y, kPi),
                                           emit.splatLike(y, -kPi)));
  Value axis = selectWhere(
      emit, "gt", y, 0.0, emit.splatLike(y, kPi / 2),
      selectWhere(emit, "lt", y, 0.0, emit.splatLike(y, -kPi / 2), zero));
  return selectWhere(emit, "gt", x, 0.0, base,
                     selectWhere(emit, "lt", x, 0.0, left, axis));
}

Value mlir::titan::import::hypotOf(Emitter &emit, Value a, Value b) {
  // m sqrt((a/m)^2 + (b/m)^2) with m = max(|a|, |b|) (no overflow); 0
  // where both are 0, m where it is infinite.
  Value zero = emit.splatLike(a, 0.0), one = emit.splatLike(a, 1.0);
  Value m = emit.binary<MaxOp>(absolute(emit, a), absolute(emit, b));
  Value infinite = emit.compare(
      "eq", m, emit.splatLike(m, std::numeric_limits<double>::infinity()));
  Value both = emit.compare("eq", m, zero);
  Value safe = emit.select(both, one, emit.select(infinite, one, m));
  Value p = emit.binary<DivOp>(a, safe), q = emit.binary<DivOp>(b, safe);
  Value root = emit.unary<SqrtOp>(
      emit.binary<AddOp>(emit.binary<MulOp>(p, p), emit.binary<MulOp>(q, q)));
  return emit.select(both, zero,
                     emit.select(infinite, m, emit.binary<MulOp>(m, root)));
}

namespace {

/// The functions of two floating-point tensors (or numbers) written here.
enum class BinaryMathFunction {
  Atan2,
  Logaddexp,
  Logaddexp2,
  Xlogy,
  Xlog1py,
  Hypot,
  Copysign,
  Heaviside,
  Ldexp
};

/// aten::atan2(y, x), logaddexp (logaddexp2), xlogy(x, y), special_xlog1py,
/// hypot, copysign, heaviside(x, values) and ldexp(x, exponent) (x 2^exponent,
/// the power as exp(exponent ln 2)): their operands broadcast and promoted to
/// one float type.
Outputs convertBinaryMath(GraphImporter &importer, Node *node,
                          BinaryMathFunction function) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 2);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  Value a = (*operands)[0], b = (*operands)[1];
  Value zero = emit.splatLike(a, 0.0), one = emit.splatLike(a, 1.0);
  switch (function) {
  case BinaryMathFunction::Atan2:
    return single(atan2Of(emit, a, b));
  case BinaryMathFunction::Logaddexp2:
    // log2(2^a + 2^b): logaddexp of a ln 2 and b ln 2, over ln 2.
    return single(emit.scale(logAddExp(emit, emit.scale(a, std::log(2.0)),
                                       emit.scale(b, std::log(2.0))),
                             1.0 / std::log(2.0)));
  case BinaryMathFunction::Logaddexp:
    return single(logAddExp(emit, a, b));
  case BinaryMathFunction::Xlogy:
  case BinaryMathFunction::Xlog1py: {
    // x log(y) (log1p(y)), 0 where x is 0 (of a safe y), NaN where y is.
    Value none = emit.compare("eq", a, zero);
    Value safe = emit.select(none, one, b);
    Value logarithm = function == BinaryMathFunction::Xlogy
                          ? emit.unary<LogOp>(safe)
                          : logOnePlus(emit, safe);
    Value product = emit.binary<MulOp>(a, logarithm);
    return single(emit.select(emit.compare("ne", b, b), b,
                              emit.select(none, zero, product)));
  }
  case BinaryMathFunction::Hypot:
    return single(hypotOf(emit, a, b));
  case BinaryMathFunction::Copysign: {
    Value magnitude = absolute(emit, a);
    return single(selectWhere(emit, "lt", b, 0.0, emit.unary<NegOp>(magnitude),
                              magnitude));
  }
  case BinaryMathFunction::Heaviside:
    return single(selectWhere(emit, "eq", a, 0.0, b,
                              selectWhere(emit, "gt", a, 0.0, one, zero)));
  case BinaryMathFunction::Ldexp:
    return single(
        emit.binary<MulOp>(a, emit.unary<ExpOp>(emit.scale(b, std::log(2.0)))));
  }
  llvm_unreachable("unknown binary math function");
}

/// aten::hardshrink(x, lambd): x where |x| > lambd, else 0; softshrink: x
/// moved lambd towards 0, 0 within lambd of it.
Outputs convertShrink(GraphImporter &importer, Node *node, bool soft) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  double lambda = numberOr(importer, node, "lambd", 0.5);
  if (soft && lambda < 0)
    return makeError(
        llvm::formatv("softshrink needs lambd >= 0, not {0}", lambda));
  Emitter emit(importer);
  Value zero = emit.splatLike(*x, 0.0);
  if (!soft)
    return single(
        selectWhere(emit, "gt", absolute(emit, *x), lambda, *x, zero));
  return single(selectWhere(
      emit, "gt", *x, lambda,
      emit.binary<SubOp>(*x, emit.splatLike(*x, lambda)),
      selectWhere(emit, "lt", *x, -lambda,
                  emit.binary<AddOp>(*x, emit.splatLike(*x, lambda)), zero)));
}

/// aten::prelu(x, weight): x where positive, else weight x, of one weight
/// or one per channel (dim 1; dim 0 of a vector).
Outputs convertPrelu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  llvm::Expected<Value> weight = importer.tensorInput(node, 1);
  if (!x || !weight)
    return makeError("prelu needs a float tensor and a weight tensor");
  RankedTensorType type = tensorType(*x);
  int64_t weights = tensorType(*weight).getNumElements();
  int64_t channelDim = type.getRank() >= 2 ? 1 : 0;
  int64_t channels = type.getRank() ? type.getDimSize(channelDim) : 1;
  if (tensorType(*weight).getRank() > 1 ||
      (weights != 1 && weights != channels))
    return makeError(llvm::formatv(
        "prelu needs one weight or one per channel ({0}), not {1}", channels,
        weights));
  Emitter emit(importer);
  SmallVector<int64_t> shape(type.getRank(), 1);
  if (weights != 1)
    shape[channelDim] = channels;
  Value w = emit.broadcastTo(
      emit.reshape(emit.cast(*weight, type.getElementType()), shape),
      type.getShape());
  return single(
      selectWhere(emit, "gt", *x, 0.0, *x, emit.binary<MulOp>(w, *x)));
}

/// aten::logcumsumexp(x, dim): log of the running sum of exp along dim, in
/// log2(n) rounds of logaddexp with the value `shift` positions earlier
/// (-inf before the start).
Outputs convertLogcumsumexp(GraphImporter &importer, Node *node) {
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value running = *x;
  int64_t n = td->shape[td->dim];
  Value empty =
      emit.splatLike(running, -std::numeric_limits<double>::infinity());
  for (int64_t shift = 1; shift < n; shift *= 2) {
    Value earlier = emit.concat({emit.slice(empty, td->dim, 0, shift, 1),
                                 emit.slice(running, td->dim, 0, n - shift, 1)},
                                td->dim);
    running = logAddExp(emit, running, earlier);
  }
  return single(running);
}

} // namespace

void mlir::titan::import::addMathConversions(
    llvm::StringMap<Conversion> &table) {
  auto add = [&](std::initializer_list<StringRef> kinds, Conversion fn) {
    for (StringRef kind : kinds)
      table[kind] = fn;
  };
  auto math = [](MathFunction function) -> Conversion {
    return [function](GraphImporter &importer, Node *node) {
      return convertMath(importer, node, function);
    };
  };
  auto binaryMath = [](BinaryMathFunction function) -> Conversion {
    return [function](GraphImporter &importer, Node *node) {
      return convertBinaryMath(importer, node, function);
    };
  };
  add({"aten::atan", "aten::arctan"}, math(MathFunction::Atan));
  add({"aten::asin", "aten::arcsin"}, math(MathFunction::Asin));
  add({"aten::acos", "aten::arccos"}, math(MathFunction::Acos));
  add({"aten::asinh", "aten::arcsinh"}, math(MathFunction::Asinh));
  add({"aten::acosh", "aten::arccosh"}, math(MathFunction::Acosh));
  add({"aten::atanh", "aten::arctanh"}, math(MathFunction::Atanh));
  add({"aten::log1p", "aten::special_log1p"}, math(MathFunction::Log1p));
  add({"aten::deg2rad"}, math(MathFunction::Deg2rad));
  add({"aten::rad2deg"}, math(MathFunction::Rad2deg));
  add({"aten::sinc", "aten::special_sinc"}, math(MathFunction::Sinc));
  add({"aten::softsign"}, math(MathFunction::Softsign));
  add({"aten::tanhshrink"}, math(MathFunction::Tanhshrink));
  add({"aten::atan2", "aten::arctan2"}, binaryMath(BinaryMathFunction::Atan2));
  add({"aten::logaddexp"}, binaryMath(BinaryMathFunction::Logaddexp));
  add({"aten::logaddexp2"}, binaryMath(BinaryMathFunction::Logaddexp2));
  add({"aten::xlogy", "aten::special_xlogy"},
      binaryMath(BinaryMathFunction::Xlogy));
  add({"aten::special_xlog1py"}, binaryMath(BinaryMathFunction::Xlog1py));
  add({"aten::hypot"}, binaryMath(BinaryMathFunction::Hypot));
  add({"aten::copysign"}, binaryMath(BinaryMathFunction::Copysign));
  add({"aten::heaviside"}, binaryMath(BinaryMathFunction::Heaviside));
  add({"aten::ldexp"}, binaryMath(BinaryMathFunction::Ldexp));
  add({"aten::hardshrink"}, [](GraphImporter &importer, Node *node) {
    return convertShrink(importer, node, /*soft=*/false);
  });
  add({"aten::softshrink"}, [](GraphImporter &importer, Node *node) {
    return convertShrink(importer, node, /*soft=*/true);
  });
  add({"aten::prelu"}, convertPrelu);
  add({"aten::logcumsumexp"}, convertLogcumsumexp);
}
