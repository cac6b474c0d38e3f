//===- AtenSpecialOps.cpp - special functions written with titan ops ------===//
//
// aten::erfc, erfinv, lgamma (and mvlgamma), digamma and torch.special's
// ndtr, ndtri and entr, erfcx, log_ndtr, i0, i0e, i1 and i1e, as titan's
// elementwise ops, computed in float64 and returned in the input's float type
// (integers give float32, as torch promotes them):
//   erfc:    t exp(-x^2 - 1.26551223 + t P(t)), t = 1 / (1 + |x| / 2), a
//            Chebyshev fit of fractional error below 1.2e-7 for every x,
//            and 2 minus it for x < 0;
//   erfinv:  Giles' approximation in w = -log((1 - x)(1 + x)), a
//            polynomial in w - 2.5 below w = 5 and in sqrt(w) - 3 above
//            (+-inf at +-1);
//   lgamma:  Lanczos' series (g = 7, 9 terms) for x >= 1/2, and the
//            reflection log(pi / |sin(pi x)|) - lgamma(1 - x) below;
//            inf at 0 and the negative integers;
//   digamma: the asymptotic series at x + 6 less 1/x + .. + 1/(x + 5), and
//            the reflection digamma(1 - x) - pi / tan(pi x) below 1/2;
//            -inf at 0 and NaN at the negative integers, as torch's;
//   erfcx and log_ndtr from erfc's fit without its exp(-x^2), finite far
//            into the tails;
//   i0, i1:  Numerical Recipes' fits (relative error below 2e-7).
// Every branch reads a safe operand where it is not taken, so that its
// gradient stays finite. The gradients are those of the approximations.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

/// The special functions of this file.
enum class Special {
  Erfc,
  Erfinv,
  Lgamma,
  Digamma,
  Ndtr,
  Ndtri,
  Entr,
  Erfcx,
  LogNdtr,
  I0,
  I0e,
  I1,
  I1e
};

constexpr double kPi = 3.14159265358979323846;

/// sum_i coefficients[i] t^i by Horner's rule.
Value polynomial(Emitter &emit, Value t, ArrayRef<double> coefficients) {
  Value result = emit.splatLike(t, coefficients.back());
  for (double c : llvm::reverse(coefficients.drop_back()))
    result =
        emit.binary<AddOp>(emit.binary<MulOp>(result, t), emit.splatLike(t, c));
  return result;
}

/// Where x is 0 or a negative integer: the poles of lgamma and digamma.
Value atPole(Emitter &emit, Value x) {
  Value whole = emit.compare("eq", x, floorOf(emit, x));
  return emit.select(whole, emit.compare("le", x, emit.splatLike(x, 0.0)),
                     whole);
}

/// The fit of erfc at z >= 0: t = 1 / (1 + z / 2) and the exponent
/// -1.26551223 + t P(t), erfc(z) being t exp(exponent - z^2).
std::pair<Value, Value> erfcFit(Emitter &emit, Value z) {
  Value one = emit.splatLike(z, 1.0);
  Value t =
      emit.binary<DivOp>(one, emit.binary<AddOp>(one, emit.scale(z, 0.5)));
  Value exponent = polynomial(emit, t,
                              {-1.26551223, 1.00002368, 0.37409196, 0.09678418,
                               -0.18628806, 0.27886807, -1.13520398, 1.48851587,
                               -0.82215223, 0.17087277});
  return {t, exponent};
}

Value erfc(Emitter &emit, Value x) {
  Value z = absolute(emit, x);
  auto [t, exponent] = erfcFit(emit, z);
  Value tail = emit.binary<MulOp>(t, emit.unary<ExpOp>(emit.binary<SubOp>(
                                         exponent, emit.binary<MulOp>(z, z))));
  return emit.select(emit.compare("lt", x, emit.splatLike(x, 0.0)),
                     emit.binary<SubOp>(emit.splatLike(x, 2.0), tail), tail);
}

/// exp(x^2) erfc(x): the fit's t exp(exponent) for x >= 0, 2 exp(x^2) less
/// it below.
Value erfcx(Emitter &emit, Value x) {
  auto [t, exponent] = erfcFit(emit, absolute(emit, x));
  Value scaled = emit.binary<MulOp>(t, emit.unary<ExpOp>(exponent));
  Value negative = emit.compare("lt", x, emit.splatLike(x, 0.0));
  // exp(x^2) of a negative x only (an overflow elsewhere would reach the
  // gradient through the select).
  Value square = emit.binary<MulOp>(x, x);
  Value grown =
      emit.unary<ExpOp>(emit.select(negative, square, emit.splatLike(x, 0.0)));
  return emit.select(
      negative, emit.binary<SubOp>(emit.scale(grown, 2.0), scaled), scaled);
}

/// log(ndtr(x)): below 0, log(erfc(z) / 2) with z = -x / sqrt 2 as the
/// fit's log t + exponent - z^2 - log 2 (finite far into the tail); from 0,
/// log(1 - q) with q = erfc(x / sqrt 2) / 2, by its series where q is
/// small.
Value logNdtr(Emitter &emit, Value x) {
  Value zero = emit.splatLike(x, 0.0);
  Value negative = emit.compare("lt", x, zero);
  Value z = emit.scale(absolute(emit, x), 1.0 / std::sqrt(2.0));
  auto [t, exponent] = erfcFit(emit, z);
  Value lower =
      emit.binary<SubOp>(emit.binary<AddOp>(emit.unary<LogOp>(t), exponent),
                         emit.binary<AddOp>(emit.binary<MulOp>(z, z),
                                            emit.splatLike(x, std::log(2.0))));
  Value q = emit.scale(
      emit.binary<MulOp>(t, emit.unary<ExpOp>(emit.binary<SubOp>(
                                exponent, emit.binary<MulOp>(z, z)))),
      0.5);
  Value small = emit.compare("lt", q, emit.splatLike(q, 1e-4));
  Value series = emit.unary<NegOp>(
      emit.binary<MulOp>(q, polynomial(emit, q, {1.0, 0.5, 1.0 / 3, 0.25})));
  Value direct = emit.unary<LogOp>(
      emit.binary<SubOp>(emit.splatLike(q, 1.0), emit.select(small, zero, q)));
  return emit.select(negative, lower, emit.select(small, series, direct));
}

/// The modified Bessel functions I0 and I1 (Numerical Recipes' fits,
/// relative error below 2e-7), scaled by exp(-|x|) with `scaled`: a
/// polynomial in (x / 3.75)^2 up to |x| = 3.75, and exp(|x|) / sqrt(|x|)
/// times one in 3.75 / |x| above. I1 is odd.
Value bessel(Emitter &emit, Value x, bool first, bool scaled) {
  Value z = absolute(emit, x);
  Value limit = emit.splatLike(x, 3.75);
  Value near = emit.compare("le", z, limit);
  // The small-argument branch reads at most 3.75, the large one at least.
  Value small = emit.select(near, z, limit);
  Value large = emit.select(near, limit, z);
  Value t = emit.binary<MulOp>(emit.scale(small, 1 / 3.75),
                               emit.scale(small, 1 / 3.75));
  Value inner =
      first ? emit.binary<MulOp>(
                  small, polynomial(emit, t,
                                    {0.5, 0.87890594, 0.51498869, 0.15084934,
                                     0.2658733e-1, 0.301532e-2, 0.32411e-3}))
            : polynomial(emit, t,
                         {1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732,
                          0.360768e-1, 0.45813e-2});
  Value u = emit.binary<DivOp>(limit, large);
  Value outer = emit.binary<DivOp>(
      first ? polynomial(emit, u,
                         {0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2,
                          -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
                          0.1787654e-1, -0.420059e-2})
            : polynomial(emit, u,
                         {0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2,
                          0.916281e-2, -0.2057706e-1, 0.2635537e-1,
                          -0.1647633e-1, 0.392377e-2}),
      emit.unary<SqrtOp>(large));
  // inner is I(|x|) near 0; outer is I(|x|) exp(-|x|) far from it.
  Value decay = emit.unary<ExpOp>(emit.unary<NegOp>(small));
  Value growth = emit.unary<ExpOp>(large);
  Value value =
      scaled ? emit.select(near, emit.binary<MulOp>(inner, decay), outer)
             : emit.select(near, inner, emit.binary<MulOp>(outer, growth));
  if (!first)
    return value;
  return emit.select(emit.compare("lt", x, emit.splatLike(x, 0.0)),
                     emit.unary<NegOp>(value), value);
}

Value erfinv(Emitter &emit, Value x) {
  Value one = emit.splatLike(x, 1.0);
  Value w = emit.unary<NegOp>(emit.unary<LogOp>(emit.binary<MulOp>(
      emit.binary<SubOp>(one, x), emit.binary<AddOp>(one, x))));
  Value five = emit.splatLike(x, 5.0);
  Value central = emit.compare("lt", w, five);
  Value near =
      emit.binary<SubOp>(emit.select(central, w, five), emit.splatLike(x, 2.5));
  Value nearP = polynomial(emit, near,
                           {1.50140941, 0.246640727, -0.00417768164,
                            -0.00125372503, 0.00021858087, -4.39150654e-06,
                            -3.5233877e-06, 3.43273939e-07, 2.81022636e-08});
  Value far =
      emit.binary<SubOp>(emit.unary<SqrtOp>(emit.select(central, five, w)),
                         emit.splatLike(x, 3.0));
  Value farP = polynomial(emit, far,
                          {2.83297682, 1.00167406, 0.00943887047, -0.0076224613,
                           0.00573950773, -0.00367342844, 0.00134934322,
                           0.000100950558, -0.000200214257});
  // +-1 give +-inf (the polynomial in sqrt(w) would give -inf for both).
  Value result = emit.binary<MulOp>(emit.select(central, nearP, farP), x);
  return emit.select(
      emit.compare("eq", absolute(emit, x), one),
      emit.binary<MulOp>(
          x, emit.splatLike(x, std::numeric_limits<double>::infinity())),
      result);
}

/// lgamma(y) for y >= 1/2 by Lanczos' series.
Value lanczosLgamma(Emitter &emit, Value y) {
  static constexpr double coefficients[] = {
      676.5203681218851,     -1259.1392167224028,  771.32342877765313,
      -176.61502916214059,   12.507343278686905,   -0.13857109526572012,
      9.9843695780195716e-6, 1.5056327351493116e-7};
  Value z = emit.binary<SubOp>(y, emit.splatLike(y, 1.0));
  Value sum = emit.splatLike(y, 0.99999999999980993);
  for (auto [i, c] : llvm::enumerate(coefficients))
    sum = emit.binary<AddOp>(
        sum, emit.binary<DivOp>(
                 emit.splatLike(y, c),
                 emit.binary<AddOp>(z, emit.splatLike(y, double(i + 1)))));
  Value t = emit.binary<AddOp>(z, emit.splatLike(y, 7.5));
  Value half = emit.binary<AddOp>(z, emit.splatLike(y, 0.5));
  return emit.binary<AddOp>(
      emit.binary<SubOp>(
          emit.binary<AddOp>(emit.splatLike(y, 0.5 * std::log(2 * kPi)),
                             emit.binary<MulOp>(half, emit.unary<LogOp>(t))),
          t),
      emit.unary<LogOp>(sum));
}

Value lgamma(Emitter &emit, Value x) {
  Value half = emit.splatLike(x, 0.5);
  Value reflected = emit.compare("lt", x, half);
  Value one = emit.splatLike(x, 1.0);
  Value y = emit.select(reflected, emit.binary<SubOp>(one, x), x);
  Value direct = lanczosLgamma(emit, y);
  // log(pi / |sin(pi x)|), read at x = 1/2 where it is not taken.
  Value sine = absolute(emit, emit.unary<SinOp>(emit.scale(
                                  emit.select(reflected, x, half), kPi)));
  Value reflection =
      emit.binary<SubOp>(emit.binary<SubOp>(emit.splatLike(x, std::log(kPi)),
                                            emit.unary<LogOp>(sine)),
                         direct);
  return emit.select(atPole(emit, x),
                     emit.splatLike(x, std::numeric_limits<double>::infinity()),
                     emit.select(reflected, reflection, direct));
}

Value digamma(Emitter &emit, Value x) {
  Value half = emit.splatLike(x, 0.5);
  Value one = emit.splatLike(x, 1.0);
  Value reflected = emit.compare("lt", x, half);
  Value y = emit.select(reflected, emit.binary<SubOp>(one, x), x);
  // digamma(y) = digamma(y + 6) - sum_{k < 6} 1 / (y + k), the first by
  // its asymptotic series in 1 / w^2.
  Value shifts = emit.splatLike(x, 0.0);
  for (int k = 0; k < 6; ++k)
    shifts = emit.binary<AddOp>(
        shifts, emit.binary<DivOp>(
                    one, emit.binary<AddOp>(y, emit.splatLike(x, double(k)))));
  Value w = emit.binary<AddOp>(y, emit.splatLike(x, 6.0));
  Value inverse = emit.binary<DivOp>(one, w);
  Value inverseSquare = emit.binary<MulOp>(inverse, inverse);
  Value series = emit.binary<MulOp>(
      inverseSquare,
      polynomial(emit, inverseSquare,
                 {-1.0 / 12, 1.0 / 120, -1.0 / 252, 1.0 / 240, -1.0 / 132}));
  Value direct = emit.binary<SubOp>(
      emit.binary<AddOp>(
          emit.binary<SubOp>(emit.unary<LogOp>(w), emit.scale(inverse, 0.5)),
          series),
      shifts);
  // digamma(1 - x) - pi / tan(pi x), read at x = 1/4 where not taken.
  Value angle =
      emit.scale(emit.select(reflected, x, emit.splatLike(x, 0.25)), kPi);
  Value cotangent =
      emit.binary<DivOp>(emit.unary<CosOp>(angle), emit.unary<SinOp>(angle));
  Value result = emit.select(
      reflected, emit.binary<SubOp>(direct, emit.scale(cotangent, kPi)),
      direct);
  // -inf at 0, NaN at the negative integers.
  Value zero = emit.splatLike(x, 0.0);
  return emit.select(
      atPole(emit, x),
      emit.select(emit.compare("eq", x, zero),
                  emit.splatLike(x, -std::numeric_limits<double>::infinity()),
                  emit.splatLike(x, std::numeric_limits<double>::quiet_NaN())),
      result);
}

/// -x log x; 0 at 0, -inf below.
Value entr(Emitter &emit, Value x) {
  Value zero = emit.splatLike(x, 0.0);
  Value positive = emit.compare("gt", x, zero);
  Value safe = emit.select(positive, x, emit.splatLike(x, 1.0));
  Value value =
      emit.unary<NegOp>(emit.binary<MulOp>(safe, emit.unary<LogOp>(safe)));
  return emit.select(
      positive, value,
      emit.select(emit.compare("eq", x, zero), zero,
                  emit.splatLike(x, -std::numeric_limits<double>::infinity())));
}

/// aten::erfc, erfinv, lgamma, digamma, special_ndtr (erfc(-x / sqrt 2) /
/// 2), special_ndtri (sqrt 2 erfinv(2p - 1)) and special_entr.
Outputs convertSpecial(GraphImporter &importer, Node *node, Special kind) {
  llvm::Expected<Value> input = promotedFloatInput(importer, node);
  if (!input)
    return input.takeError();
  Emitter emit(importer);
  Type element = tensorType(*input).getElementType();
  Value x = emit.cast(*input, emit.f64());
  Value result;
  switch (kind) {
  case Special::Erfc:
    result = erfc(emit, x);
    break;
  case Special::Erfinv:
    result = erfinv(emit, x);
    break;
  case Special::Lgamma:
    result = lgamma(emit, x);
    break;
  case Special::Digamma:
    result = digamma(emit, x);
    break;
  case Special::Ndtr:
    result = emit.scale(erfc(emit, emit.scale(x, -1.0 / std::sqrt(2.0))), 0.5);
    break;
  case Special::Ndtri:
    result =
        emit.scale(erfinv(emit, emit.binary<SubOp>(emit.scale(x, 2.0),
                                                   emit.splatLike(x, 1.0))),
                   std::sqrt(2.0));
    break;
  case Special::Entr:
    result = entr(emit, x);
    break;
  case Special::Erfcx:
    result = erfcx(emit, x);
    break;
  case Special::LogNdtr:
    result = logNdtr(emit, x);
    break;
  case Special::I0:
  case Special::I0e:
  case Special::I1:
  case Special::I1e:
    result = bessel(emit, x, kind == Special::I1 || kind == Special::I1e,
                    kind == Special::I0e || kind == Special::I1e);
    break;
  }
  return single(emit.cast(result, element));
}

/// aten::mvlgamma(x, p): the multivariate log-gamma function, sum over i <
/// p of lgamma(x - i / 2), plus p (p - 1) / 4 log(pi).
Outputs convertMvlgamma(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> input = promotedFloatInput(importer, node);
  llvm::Expected<int64_t> p = importer.intInput(node, 1);
  if (llvm::Error error =
          requireAll("mvlgamma needs a tensor and a constant p", input, p))
    return std::move(error);
  if (*p < 1)
    return makeError("p has to be greater than or equal to 1");
  Emitter emit(importer);
  Value x = emit.cast(*input, emit.f64());
  Value sum = emit.splatLike(x, 0.25 * *p * (*p - 1) * std::log(kPi));
  for (int64_t i = 0; i < *p; ++i)
    sum = emit.binary<AddOp>(
        sum, lgamma(emit, emit.binary<SubOp>(x, emit.splatLike(x, i / 2.0))));
  return single(emit.cast(sum, tensorType(*input).getElementType()));
}

} // namespace

void mlir::titan::import::addSpecialConversions(
    llvm::StringMap<Conversion> &table) {
  for (auto [names, kind] :
       {std::make_pair(
            std::vector<std::string>{"aten::erfc", "aten::special_erfc"},
            Special::Erfc),
        std::make_pair(
            std::vector<std::string>{"aten::erfinv", "aten::special_erfinv"},
            Special::Erfinv),
        std::make_pair(
            std::vector<std::string>{"aten::lgamma", "aten::special_gammaln"},
            Special::Lgamma),
        std::make_pair(std::vector<std::string>{"aten::digamma",
                                                "aten::special_digamma",
                                                "aten::special_psi"},
                       Special::Digamma),
        std::make_pair(std::vector<std::string>{"aten::special_ndtr"},
                       Special::Ndtr),
        std::make_pair(std::vector<std::string>{"aten::special_ndtri"},
                       Special::Ndtri),
        std::make_pair(std::vector<std::string>{"aten::special_entr"},
                       Special::Entr),
        std::make_pair(std::vector<std::string>{"aten::special_erfcx"},
                       Special::Erfcx),
        std::make_pair(std::vector<std::string>{"aten::special_log_ndtr"},
                       Special::LogNdtr),
        std::make_pair(std::vector<std::string>{"aten::i0", "aten::special_i0"},
                       Special::I0),
        std::make_pair(std::vector<std::string>{"aten::special_i0e"},
                       Special::I0e),
        std::make_pair(std::vector<std::string>{"aten::special_i1"},
                       Special::I1),
        std::make_pair(std::vector<std::string>{"aten::special_i1e"},
                       Special::I1e)})
    for (const std::string &name : names)
      table[name] = [kind = kind](GraphImporter &importer, Node *node) {
        return convertSpecial(importer, node, kind);
      };
  table["aten::mvlgamma"] = convertMvlgamma;
  table["aten::special_multigammaln"] = convertMvlgamma;
}
