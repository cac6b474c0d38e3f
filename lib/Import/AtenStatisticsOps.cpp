//===- AtenStatisticsOps.cpp - covariance, integrals and norms ------------===//
//
// torch.cov (weighted too) and corrcoef as a matmul of the centred
// observations, torch.trapezoid / trapz and cumulative_trapezoid by the
// trapezoidal rule along a dim (PyTorch's formulas), and the norms
// torch.dist (of a difference) and torch.renorm (each slice scaled down to
// a largest norm).
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;
using torch::jit::Node;

namespace {

/// A tensor input named `name` of `node` (None or absent: null), as a
/// float tensor of the observations' count `observations`.
llvm::Expected<Value> observationWeights(GraphImporter &importer, Node *node,
                                         StringRef name, int64_t observations) {
  const ImportedValue *given = importer.namedInput(node, name);
  if (!given || given->isNone())
    return Value();
  if (!given->isTensor() || tensorType(given->tensor).getRank() > 1 ||
      tensorType(given->tensor).getNumElements() != observations)
    return makeError(llvm::formatv(
        "cov(): expected {0} to be a scalar or 1D tensor with one weight per "
        "observation ({1})",
        name, observations));
  Emitter emit(importer);
  return emit.cast(emit.reshape(given->tensor, {observations}),
                   Float32Type::get(&importer.getContext()));
}

/// The covariance matrix of `x` [variables, observations] (one variable
/// for a 0-d or 1-d x), as torch.cov: the observations weighted by the
/// product of `frequencies` and `importance` (either null), less their
/// (weighted) mean, times their transpose, over the weights' sum less
/// `correction` (for importance weights, correction times sum(w a) /
/// sum(w)), clamped at 0 as PyTorch does.
Value covariance(Emitter &emit, Value x, double correction, Value frequencies,
                 Value importance) {
  ArrayRef<int64_t> shape = tensorType(x).getShape();
  int64_t variables = shape.size() == 2 ? shape[0] : 1;
  int64_t observations = shape.empty() ? 1 : shape.back();
  Value rows = emit.reshape(x, {variables, observations});
  Type element = tensorType(rows).getElementType();
  Value weights = frequencies;
  if (importance)
    weights = weights ? emit.binary<MulOp>(weights, importance) : importance;
  Value mean, norm;
  if (weights) {
    weights = emit.cast(weights, element);
    Value total = emit.sumAll(weights);
    Value spread = emit.broadcastTo(emit.reshape(weights, {1, observations}),
                                    {variables, observations});
    mean = emit.binary<DivOp>(
        emit.reduceSum(emit.binary<MulOp>(rows, spread), {1}, true),
        emit.broadcastTo(emit.reshape(total, {1, 1}), {variables, 1}));
    norm = total;
    if (correction != 0 && importance)
      norm = emit.binary<SubOp>(
          total, emit.scale(emit.binary<DivOp>(
                                emit.sumAll(emit.binary<MulOp>(
                                    weights, emit.cast(importance, element))),
                                total),
                            correction));
    else if (correction != 0)
      norm = emit.binary<SubOp>(total, emit.splatLike(total, correction));
  } else {
    mean = emit.scale(emit.reduceSum(rows, {1}, true),
                      1.0 / static_cast<double>(observations));
    norm = emit.splat(RankedTensorType::get({}, element),
                      static_cast<double>(observations) - correction);
  }
  norm = emit.binary<MaxOp>(norm, emit.splatLike(norm, 0.0));
  Value centred = emit.binary<SubOp>(
      rows, emit.broadcastTo(mean, {variables, observations}));
  Value weighted = centred;
  if (weights)
    weighted = emit.binary<MulOp>(
        centred, emit.broadcastTo(emit.reshape(weights, {1, observations}),
                                  {variables, observations}));
  Value products = matmulLast(emit, weighted, emit.transpose(centred, {1, 0}));
  Value result =
      emit.binary<DivOp>(products, emit.broadcastTo(emit.reshape(norm, {1, 1}),
                                                    {variables, variables}));
  return shape.size() == 2 ? result : emit.reshape(result, {});
}

/// The input of cov / corrcoef: a float tensor of at most 2 dims.
llvm::Expected<Value> observations(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = promotedFloatInput(importer, node, 0);
  if (!x)
    return x.takeError();
  if (tensorType(*x).getRank() > 2)
    return makeError(llvm::formatv(
        "{0}(): expected input to have two or fewer dimensions but got an "
        "input with {1} dimensions",
        node->kind().toUnqualString(), tensorType(*x).getRank()));
  return x;
}

/// aten::cov(x, correction=1, fweights=None, aweights=None).
Outputs convertCov(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = observations(importer, node);
  if (!x)
    return x.takeError();
  int64_t count =
      tensorType(*x).getRank() == 0 ? 1 : tensorType(*x).getShape().back();
  llvm::Expected<Value> frequencies =
      observationWeights(importer, node, "fweights", count);
  llvm::Expected<Value> importance =
      observationWeights(importer, node, "aweights", count);
  if (!frequencies)
    return frequencies.takeError();
  if (!importance)
    return importance.takeError();
  Emitter emit(importer);
  return single(covariance(emit, *x, numberOr(importer, node, "correction", 1),
                           *frequencies, *importance));
}

/// aten::corrcoef(x): the covariance over the products of the variables'
/// standard deviations, clamped to [-1, 1] as PyTorch clamps it.
Outputs convertCorrcoef(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = observations(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value c = covariance(emit, *x, 1.0, Value(), Value());
  if (tensorType(c).getRank() == 0)
    return single(emit.binary<DivOp>(c, c));
  int64_t n = tensorType(c).getDimSize(0);
  auto positions = RankedTensorType::get({n, n}, emit.builder.getI64Type());
  Value diagonal =
      emit.reduceSum(emit.select(emit.compare("eq", emit.iota(positions, 0),
                                              emit.iota(positions, 1)),
                                 c, emit.splatLike(c, 0.0)),
                     {1}, false);
  Value deviation = emit.unary<SqrtOp>(diagonal);
  Value scaled = emit.binary<DivOp>(
      emit.binary<DivOp>(
          c, emit.broadcastTo(emit.reshape(deviation, {n, 1}), {n, n})),
      emit.broadcastTo(emit.reshape(deviation, {1, n}), {n, n}));
  Value clamped =
      emit.min(emit.binary<MaxOp>(scaled, emit.splatLike(scaled, -1.0)),
               emit.splatLike(scaled, 1.0));
  return single(clamped);
}

/// The trapezoids along a dim of y: (y[1:] + y[:-1]) dx / 2 of the sample
/// spacings, [.., n - 1, ..].
struct Trapezoids {
  Value y;
  int64_t dim;
  /// The spacings, broadcast to the trapezoids' shape (null: `dx`).
  Value spacing;
  double dx = 1.0;
};

/// Reads trapezoid's / cumulative_trapezoid's y, x (or dx) and dim.
llvm::Expected<Trapezoids> trapezoids(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> y = promotedFloatInput(importer, node, 0);
  if (!y)
    return y.takeError();
  RankedTensorType type = tensorType(*y);
  llvm::Expected<int64_t> dim =
      normalizeDim(intOr(importer, node, "dim", -1), type.getRank());
  if (!dim)
    return dim.takeError();
  Trapezoids result{*y, *dim, Value()};
  const ImportedValue *x = importer.namedInput(node, "x");
  if (!x || x->isNone()) {
    result.dx = numberOr(importer, node, "dx", 1.0);
    return result;
  }
  if (!x->isTensor())
    return makeError("trapezoid's x must be a tensor of the sample points");
  Emitter emit(importer);
  Value points = emit.cast(x->tensor, type.getElementType());
  int64_t n = type.getDimSize(*dim);
  RankedTensorType pointsType = tensorType(points);
  if (pointsType.getRank() == 1) {
    if (pointsType.getDimSize(0) != n)
      return makeError("trapezoid: There must be one `x` value for each "
                       "sample point");
    SmallVector<int64_t> along(type.getRank(), 1);
    along[*dim] = n;
    points = emit.reshape(points, along);
  } else if (pointsType.getShape() != type.getShape()) {
    return makeError(
        llvm::formatv("trapezoid's x '{0}' must be 1-d or of y's shape '{1}'",
                      pointsType, type));
  }
  int64_t pointsDim = *dim;
  int64_t length = tensorType(points).getDimSize(pointsDim);
  Value spacing =
      emit.binary<SubOp>(emit.slice(points, pointsDim, 1, length, 1),
                         emit.slice(points, pointsDim, 0, length - 1, 1));
  SmallVector<int64_t> shape(type.getShape());
  shape[*dim] = std::max<int64_t>(n - 1, 0);
  result.spacing = emit.broadcastTo(spacing, shape);
  return result;
}

/// The areas of the trapezoids, [.., n - 1, ..].
Value trapezoidAreas(Emitter &emit, const Trapezoids &t) {
  int64_t n = tensorType(t.y).getDimSize(t.dim);
  Value sides = emit.binary<AddOp>(emit.slice(t.y, t.dim, 1, n, 1),
                                   emit.slice(t.y, t.dim, 0, n - 1, 1));
  if (t.spacing)
    return emit.scale(emit.binary<MulOp>(t.spacing, sides), 0.5);
  return emit.scale(sides, t.dx / 2);
}

/// aten::trapezoid / trapz(y, x or dx=1, dim=-1): the trapezoidal rule's
/// integral of y along dim (0 for fewer than two samples); with
/// `cumulative` (cumulative_trapezoid), the running sums of the
/// trapezoids' areas, n - 1 along dim.
Outputs convertTrapezoid(GraphImporter &importer, Node *node, bool cumulative) {
  llvm::Expected<Trapezoids> t = trapezoids(importer, node);
  if (!t)
    return t.takeError();
  Emitter emit(importer);
  if (tensorType(t->y).getDimSize(t->dim) < 2) {
    SmallVector<int64_t> shape(tensorType(t->y).getShape());
    if (cumulative)
      shape[t->dim] = 0;
    else
      shape.erase(shape.begin() + t->dim);
    return single(emit.splat(tensorType(t->y).clone(shape), 0.0));
  }
  Value areas = trapezoidAreas(emit, *t);
  if (!cumulative)
    return single(emit.reduceSum(areas, {t->dim}, false));
  return cumsumAtRunTime(emit, areas, t->dim,
                         tensorType(areas).getElementType());
}

/// aten::dist(a, b, p=2): the p-norm of a - b (broadcast) over every
/// element.
Outputs convertDist(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 2);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  Value difference = emit.binary<SubOp>((*operands)[0], (*operands)[1]);
  int64_t rank = tensorType(difference).getRank();
  llvm::Expected<Value> norm =
      vectorNorm(emit, difference, numberOr(importer, node, "p", 2.0),
                 llvm::to_vector(llvm::seq<int64_t>(0, rank)), false);
  if (!norm)
    return norm.takeError();
  return single(*norm);
}

/// aten::renorm(x, p, dim, maxnorm): each slice of x at an index of dim
/// whose p-norm exceeds maxnorm scaled by maxnorm / (norm + 1e-7), as
/// PyTorch scales it.
Outputs convertRenorm(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  llvm::Expected<double> p = importer.numberInput(node, 1);
  llvm::Expected<int64_t> dim = importer.intInput(node, 2);
  llvm::Expected<double> maxnorm = importer.numberInput(node, 3);
  if (llvm::Error error = requireAll(
          "renorm needs a float tensor and constant p, dim and maxnorm", x, p,
          dim, maxnorm))
    return std::move(error);
  int64_t rank = tensorType(*x).getRank();
  if (rank < 2)
    return makeError(llvm::formatv(
        "renorm: input needs at least 2 dimensions, got {0} dimensions", rank));
  if (*p <= 0)
    return makeError("renorm: non-positive-norm not supported");
  if (*maxnorm < 0)
    return makeError(
        llvm::formatv("renorm: expected maxnorm to be >= 0 but got {0}",
                      numberText(*maxnorm)));
  llvm::Expected<int64_t> axis = normalizeDim(*dim, rank);
  if (!axis)
    return axis.takeError();
  SmallVector<int64_t> others;
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis)
      others.push_back(d);
  Emitter emit(importer);
  llvm::Expected<Value> norm = vectorNorm(emit, *x, *p, others, true);
  if (!norm)
    return norm.takeError();
  Value limit = emit.splatLike(*norm, *maxnorm);
  Value factor = emit.select(
      emit.compare("gt", *norm, limit),
      emit.binary<DivOp>(
          limit, emit.binary<AddOp>(*norm, emit.splatLike(*norm, 1e-7))),
      emit.splatLike(*norm, 1.0));
  return single(emit.binary<MulOp>(
      *x, emit.broadcastTo(factor, tensorType(*x).getShape())));
}

} // namespace

void mlir::titan::import::addStatisticsConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::cov"] = convertCov;
  table["aten::corrcoef"] = convertCorrcoef;
  for (StringRef name : {"aten::trapezoid", "aten::trapz"})
    table[name] = [](GraphImporter &i, Node *n) {
      return convertTrapezoid(i, n, /*cumulative=*/false);
    };
  table["aten::cumulative_trapezoid"] = [](GraphImporter &i, Node *n) {
    return convertTrapezoid(i, n, /*cumulative=*/true);
  };
  table["aten::dist"] = convertDist;
  table["aten::renorm"] = convertRenorm;
}
