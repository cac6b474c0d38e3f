//===- AtenLossOps.cpp - losses written with titan ops --------------------===//
//
// The losses of torch.nn.functional as a model's forward calls them:
// aten::cross_entropy_loss (titan.cross_entropy where it fits, else written
// out), nll_loss / nll_loss_nd / nll_loss2d, binary_cross_entropy and
// binary_cross_entropy_with_logits, the elementwise regression losses
// (mse_loss, l1_loss, smooth_l1_loss, huber_loss) and kl_div, each reduced
// as its `reduction` code says (torch's Reduction enum: 0 none, 1 mean, 2
// sum). Every one is built from ops the training step differentiates.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

/// The `reduction` input of loss `what`: 0 (none), 1 (mean, also when
/// absent) or 2 (sum), or an error.
llvm::Expected<int64_t> reductionMode(GraphImporter &importer, Node *node,
                                      StringRef what) {
  const ImportedValue *reduction = importer.namedInput(node, "reduction");
  int64_t mode = reduction && !reduction->isNone() ? reduction->intValue : 1;
  if (mode < 0 || mode > 2)
    return makeError(llvm::formatv("{0} with reduction code {1}: PyTorch's "
                                   "are 0 (none), 1 (mean), 2 (sum)",
                                   what, mode));
  return mode;
}

/// `losses` as they are (mode 0), their mean (1) or their sum (2).
Value reduceLosses(Emitter &emit, Value losses, int64_t mode) {
  if (mode == 0)
    return losses;
  Value sum = emit.sumAll(losses);
  if (mode == 2)
    return sum;
  int64_t count = tensorType(losses).getNumElements();
  return emit.scale(sum, 1.0 / static_cast<double>(count));
}

/// The optional tensor input `name` of `node` (None or absent: a null
/// Value), or an error naming loss `what`.
llvm::Expected<Value> optionalTensor(GraphImporter &importer, Node *node,
                                     StringRef name, StringRef what) {
  const ImportedValue *given = importer.namedInput(node, name);
  if (!given || given->isNone())
    return Value();
  if (!given->isTensor())
    return makeError(llvm::formatv("{0}'s {1} must be a tensor", what, name));
  return given->tensor;
}

/// Class-index labels against log-probabilities with the classes last, as
/// PyTorch's nll_loss weighs them: `losses` is each label's -weight[label]
/// * logp[label] (0 for a label equal to ignore_index), `weights` the sum
/// of the counted labels' class weights (what a mean divides by).
struct NegativeLogLikelihood {
  Value losses, weights;
};

/// Class-index `labels` [..] spread over the rows `rowsType` [.., C]:
/// each label repeated along its row.
Value labelRows(Emitter &emit, Value labels, RankedTensorType rowsType) {
  SmallVector<int64_t> labelsAsRows(tensorType(labels).getShape());
  labelsAsRows.push_back(1);
  return emit.broadcastTo(emit.reshape(labels, labelsAsRows),
                          rowsType.getShape());
}

/// Where each row of `rowsType` [.., C] has its class `rowLabels` (a
/// labelRows): an i1 one-hot.
Value labelOneHot(Emitter &emit, Value rowLabels, RankedTensorType rowsType) {
  return emit.compare("eq",
                      emit.iota(rowsType.clone(emit.builder.getI64Type()),
                                rowsType.getRank() - 1),
                      emit.cast(rowLabels, emit.builder.getI64Type()));
}

NegativeLogLikelihood negativeLogLikelihood(Emitter &emit,
                                            Value logProbabilities,
                                            Value labels, Value classWeights,
                                            int64_t ignoreIndex) {
  RankedTensorType rowsType = tensorType(logProbabilities);
  Type lossType = rowsType.getElementType();
  int64_t classDim = rowsType.getRank() - 1;
  Value rowLabels = labelRows(emit, labels, rowsType);
  // Each label's one-hot row, zero for an ignored label (also one naming a
  // class, as a padding id does), times the class weights.
  Value oneHot = emit.cast(labelOneHot(emit, rowLabels, rowsType), lossType);
  Value counted = emit.cast(
      emit.compare("ne", rowLabels,
                   emit.splatLike(rowLabels, static_cast<double>(ignoreIndex))),
      lossType);
  Value weighted = emit.binary<MulOp>(oneHot, counted);
  if (classWeights)
    weighted = emit.binary<MulOp>(
        weighted, emit.broadcastTo(emit.cast(classWeights, lossType),
                                   rowsType.getShape()));
  Value losses = emit.unary<NegOp>(emit.reduceSum(
      emit.binary<MulOp>(weighted, logProbabilities), {classDim}, false));
  return {losses, emit.sumAll(weighted)};
}

/// The mean of nll losses: their sum over the counted labels' weights, 0
/// when no label counts (PyTorch gives NaN; a step whose labels are all
/// ignored then changes nothing).
Value nllMean(Emitter &emit, const NegativeLogLikelihood &nll) {
  Value sum = emit.sumAll(nll.losses);
  Value zero = emit.splatLike(nll.weights, 0.0);
  Value positive = emit.compare("gt", nll.weights, zero);
  return emit.binary<DivOp>(
      sum, emit.select(positive, nll.weights, emit.splatLike(zero, 1.0)));
}

/// `x` [N, C, d..] with the classes (dim 1) moved last; [C] and [N, C] as
/// they are.
Value classesLast(Emitter &emit, Value x) {
  int64_t rank = tensorType(x).getRank();
  if (rank <= 2)
    return x;
  SmallVector<int64_t> permutation{0};
  for (int64_t d = 2; d < rank; ++d)
    permutation.push_back(d);
  permutation.push_back(1);
  return emit.transpose(x, permutation);
}

/// The scores, class-index labels and class weights of a cross-entropy or
/// nll loss, or an error naming `what`.
struct ClassLossInputs {
  Value scores, labels, classWeights;
  int64_t mode, ignoreIndex;
};

llvm::Expected<ClassLossInputs> classLossInputs(GraphImporter &importer,
                                                Node *node, StringRef what) {
  llvm::Expected<Value> scores = importer.tensorInput(node, 0);
  llvm::Expected<Value> target = importer.tensorInput(node, 1);
  if (llvm::Error error = requireAll(what + " needs scores and a target tensor",
                                     scores, target))
    return std::move(error);
  RankedTensorType type = tensorType(*scores);
  if (!isa<FloatType>(type.getElementType()))
    return makeError(llvm::formatv("{0} of {1}: the scores must be a float "
                                   "tensor",
                                   what, type));
  Type labelType = tensorType(*target).getElementType();
  if (!isa<IntegerType>(labelType) || labelType.isInteger(1))
    return makeError(what + " with class probabilities as the target is not "
                            "supported (titan takes class indices)");
  SmallVector<int64_t> labelShape(type.getShape());
  if (!labelShape.empty())
    labelShape.erase(labelShape.begin() + (labelShape.size() > 1 ? 1 : 0));
  if (ArrayRef<int64_t>(labelShape) != tensorType(*target).getShape())
    return makeError(llvm::formatv(
        "{0} of scores {1} and target {2}: the target must have the scores' "
        "shape without the class dim (dim 1, or 0 of a 1-d input)",
        what, type, tensorType(*target)));
  llvm::Expected<Value> weight = optionalTensor(importer, node, "weight", what);
  if (!weight)
    return weight.takeError();
  llvm::Expected<int64_t> mode = reductionMode(importer, node, what);
  if (!mode)
    return mode.takeError();
  const ImportedValue *ignore = importer.namedInput(node, "ignore_index");
  ClassLossInputs inputs{*scores, *target, *weight, *mode,
                         ignore && !ignore->isNone() ? ignore->intValue : -100};
  // Rows whose number depends on the data (`F.cross_entropy(logits[mask],
  // labels[mask])`): the labels past the count are ignored, so the mean
  // divides by the rows found and the others add nothing.
  const ValidPrefix *rows = importer.validPrefix(*scores);
  const ValidPrefix *labels = importer.validPrefix(*target);
  if (rows || labels) {
    if (!rows || !labels || rows->count != labels->count || rows->dim != 0 ||
        labels->dim != 0 || type.getRank() < 2)
      return makeError(llvm::formatv(
          "{0} of rows whose number depends on the data (from {1}) takes "
          "scores and labels selected by the same mask or search, one row "
          "each",
          what, (rows ? rows : labels)->origin));
    Emitter emit(importer);
    ArrayRef<int64_t> shape = tensorType(*target).getShape();
    inputs.labels =
        emit.select(validMask(emit, *labels, shape), *target,
                    emit.splat(tensorType(*target),
                               static_cast<double>(inputs.ignoreIndex)));
  }
  return inputs;
}

/// The per-row `losses` of class loss `node` (reduction 'none'), with the
/// valid prefix of its scores' rows where they have one.
Value keepRows(GraphImporter &importer, Node *node, Value losses) {
  llvm::Expected<Value> scores = importer.tensorInput(node, 0);
  if (!scores) {
    llvm::consumeError(scores.takeError());
    return losses;
  }
  if (const ValidPrefix *rows = importer.validPrefix(*scores))
    importer.setValidPrefix(losses, *rows);
  return losses;
}

/// aten::cross_entropy_loss(logits [N, C, *] or [C], target, weight,
/// reduction, ignore_index, label_smoothing) (F.cross_entropy inside the
/// model: multi-token prediction's losses, returned after the logits):
/// titan.cross_entropy over the classes moved last, its mean (reduction
/// 'mean'), or the mean times the labels counted ('sum', 0 when all are
/// ignored); with class weights, label smoothing or reduction 'none',
/// written out as PyTorch computes them. Targets are class indices.
Outputs convertCrossEntropyLoss(GraphImporter &importer, Node *node) {
  llvm::Expected<ClassLossInputs> inputs =
      classLossInputs(importer, node, "cross_entropy");
  if (!inputs)
    return inputs.takeError();
  double smoothing = numberOr(importer, node, "label_smoothing", 0.0);
  if (smoothing < 0.0 || smoothing > 1.0)
    return makeError(llvm::formatv(
        "cross_entropy's label_smoothing must be in [0, 1], not {0}",
        smoothing));
  Emitter emit(importer);
  Type element = tensorType(inputs->scores).getElementType();
  Value logits = classesLast(emit, inputs->scores);
  if (cast<FloatType>(element).getWidth() < 32)
    logits = emit.cast(logits, emit.builder.getF32Type());
  Type lossType = tensorType(logits).getElementType();
  Value labels = emit.cast(inputs->labels, emit.builder.getI64Type());
  auto scalar = RankedTensorType::get({}, lossType);
  if (!inputs->classWeights && smoothing == 0.0 && inputs->mode != 0) {
    Value mean = CrossEntropyOp::create(
        emit.builder, emit.loc, scalar, logits, labels,
        emit.builder.getI64IntegerAttr(inputs->ignoreIndex));
    if (inputs->mode == 1)
      return single(mean);
    Value count = emit.sumAll(emit.cast(
        emit.compare("ne", labels,
                     emit.splatLike(labels, double(inputs->ignoreIndex))),
        lossType));
    Value zero = emit.splat(scalar, 0.0);
    return single(emit.select(emit.compare("gt", count, zero),
                              emit.binary<MulOp>(mean, count), zero));
  }
  RankedTensorType rowsType = tensorType(logits);
  int64_t classDim = rowsType.getRank() - 1;
  Value logProbabilities =
      LogSoftmaxOp::create(emit.builder, emit.loc, rowsType, logits,
                           emit.builder.getI64IntegerAttr(classDim));
  NegativeLogLikelihood nll =
      negativeLogLikelihood(emit, logProbabilities, labels,
                            inputs->classWeights, inputs->ignoreIndex);
  if (smoothing != 0.0) {
    // Label smoothing: (1 - s) nll + s / C times the (weighted) sum of
    // -log p over the classes, for every counted label.
    Value weighted = logProbabilities;
    if (inputs->classWeights)
      weighted = emit.binary<MulOp>(
          weighted, emit.broadcastTo(emit.cast(inputs->classWeights, lossType),
                                     rowsType.getShape()));
    Value counted = emit.cast(
        emit.compare("ne", labels,
                     emit.splatLike(labels, double(inputs->ignoreIndex))),
        lossType);
    Value smooth = emit.binary<MulOp>(
        emit.unary<NegOp>(emit.reduceSum(weighted, {classDim}, false)),
        counted);
    int64_t classes = rowsType.getDimSize(classDim);
    nll.losses =
        emit.binary<AddOp>(emit.scale(nll.losses, 1.0 - smoothing),
                           emit.scale(smooth, smoothing / double(classes)));
  }
  if (inputs->mode == 0)
    return single(keepRows(importer, node, emit.cast(nll.losses, element)));
  if (inputs->mode == 2)
    return single(emit.sumAll(nll.losses));
  return single(nllMean(emit, nll));
}

/// aten::nll_loss, nll_loss_nd, nll_loss2d(log-probabilities [N, C, *] or
/// [C], target, weight, reduction, ignore_index) (F.nll_loss after a
/// log_softmax): each label's -weight[label] * input[label], 0 for an
/// ignored label; their mean over the counted labels' weights, sum, or
/// the losses themselves.
Outputs convertNllLoss(GraphImporter &importer, Node *node) {
  llvm::Expected<ClassLossInputs> inputs =
      classLossInputs(importer, node, "nll_loss");
  if (!inputs)
    return inputs.takeError();
  Emitter emit(importer);
  Value labels = emit.cast(inputs->labels, emit.builder.getI64Type());
  NegativeLogLikelihood nll =
      negativeLogLikelihood(emit, classesLast(emit, inputs->scores), labels,
                            inputs->classWeights, inputs->ignoreIndex);
  if (inputs->mode == 0)
    return single(keepRows(importer, node, nll.losses));
  if (inputs->mode == 2)
    return single(emit.sumAll(nll.losses));
  return single(nllMean(emit, nll));
}

/// The float input and target of an elementwise loss `what`, one shape
/// and type (a target of another shape is broadcast, as F.mse_loss's
/// broadcast_tensors does).
llvm::Expected<std::pair<Value, Value>>
elementwiseLossOperands(GraphImporter &importer, Node *node, StringRef what) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 2);
  if (!operands)
    return makeError(
        what + " needs two tensors: " + llvm::toString(operands.takeError()));
  return std::make_pair((*operands)[0], (*operands)[1]);
}

/// The elementwise losses of aten::mse_loss, l1_loss, smooth_l1_loss and
/// huber_loss.
enum class RegressionLoss { Squared, Absolute, SmoothL1, Huber };

/// aten::mse_loss(input, target, reduction): (x - y)^2; l1_loss: |x - y|;
/// smooth_l1_loss(.., beta): 0.5 d^2 / beta where |d| < beta, else |d| -
/// 0.5 beta (|d| when beta is 0); huber_loss(.., delta): 0.5 d^2 where |d|
/// < delta, else delta (|d| - 0.5 delta). Then reduced.
Outputs convertRegressionLoss(GraphImporter &importer, Node *node,
                              RegressionLoss kind) {
  static constexpr const char *names[] = {"mse_loss", "l1_loss",
                                          "smooth_l1_loss", "huber_loss"};
  StringRef what = names[static_cast<int>(kind)];
  llvm::Expected<std::pair<Value, Value>> operands =
      elementwiseLossOperands(importer, node, what);
  if (!operands)
    return operands.takeError();
  llvm::Expected<int64_t> mode = reductionMode(importer, node, what);
  if (!mode)
    return mode.takeError();
  Emitter emit(importer);
  Value difference = emit.binary<SubOp>(operands->first, operands->second);
  Value magnitude = absolute(emit, difference);
  Value squared = emit.binary<MulOp>(difference, difference);
  Value losses;
  switch (kind) {
  case RegressionLoss::Squared:
    losses = squared;
    break;
  case RegressionLoss::Absolute:
    losses = magnitude;
    break;
  case RegressionLoss::SmoothL1:
  case RegressionLoss::Huber: {
    bool huber = kind == RegressionLoss::Huber;
    double width = numberOr(importer, node, huber ? "delta" : "beta", 1.0);
    if (width < 0 || (huber && width == 0))
      return makeError(llvm::formatv("{0}'s {1} must be {2} 0, not {3}", what,
                                     huber ? "delta" : "beta",
                                     huber ? ">" : ">=", width));
    if (width == 0) {
      losses = magnitude;
      break;
    }
    Value quadratic = emit.scale(squared, huber ? 0.5 : 0.5 / width);
    Value linear =
        emit.binary<SubOp>(magnitude, emit.splatLike(magnitude, 0.5 * width));
    if (huber)
      linear = emit.scale(linear, width);
    losses = emit.select(
        emit.compare("lt", magnitude, emit.splatLike(magnitude, width)),
        quadratic, linear);
    break;
  }
  }
  return single(reduceLosses(emit, losses, *mode));
}

/// log(x) clamped below at -100, as PyTorch's binary_cross_entropy takes
/// the logs of the probabilities (so a probability of 0 or 1 gives a
/// finite loss).
Value clampedLog(Emitter &emit, Value x) {
  Value log = emit.unary<LogOp>(x);
  return emit.binary<MaxOp>(log, emit.splatLike(log, -100.0));
}

/// aten::binary_cross_entropy(probabilities, target, weight, reduction):
/// -(y log p + (1 - y) log(1 - p)) with both logs clamped at -100, times
/// the weight.
Outputs convertBinaryCrossEntropy(GraphImporter &importer, Node *node) {
  llvm::Expected<std::pair<Value, Value>> operands =
      elementwiseLossOperands(importer, node, "binary_cross_entropy");
  if (!operands)
    return operands.takeError();
  llvm::Expected<Value> weight =
      optionalTensor(importer, node, "weight", "binary_cross_entropy");
  llvm::Expected<int64_t> mode =
      reductionMode(importer, node, "binary_cross_entropy");
  if (!weight || !mode) {
    llvm::Error error = llvm::joinErrors(weight.takeError(), mode.takeError());
    return std::move(error);
  }
  Emitter emit(importer);
  auto [p, y] = *operands;
  Value one = emit.splatLike(p, 1.0);
  Value losses = emit.unary<NegOp>(emit.binary<AddOp>(
      emit.binary<MulOp>(y, clampedLog(emit, p)),
      emit.binary<MulOp>(emit.binary<SubOp>(one, y),
                         clampedLog(emit, emit.binary<SubOp>(one, p)))));
  if (*weight)
    losses = emit.binary<MulOp>(
        losses,
        emit.broadcastTo(emit.cast(*weight, tensorType(p).getElementType()),
                         tensorType(p).getShape()));
  return single(reduceLosses(emit, losses, *mode));
}

/// aten::binary_cross_entropy_with_logits(logits, target, weight,
/// pos_weight, reduction): (1 - y) x - (1 + (pos_weight - 1) y)
/// log(sigmoid(x)) (PyTorch's -(pos_weight y log s + (1 - y) log(1 - s))),
/// times the weight.
Outputs convertBinaryCrossEntropyWithLogits(GraphImporter &importer,
                                            Node *node) {
  StringRef what = "binary_cross_entropy_with_logits";
  llvm::Expected<std::pair<Value, Value>> operands =
      elementwiseLossOperands(importer, node, what);
  if (!operands)
    return operands.takeError();
  llvm::Expected<Value> weight = optionalTensor(importer, node, "weight", what);
  llvm::Expected<Value> positiveWeight =
      optionalTensor(importer, node, "pos_weight", what);
  llvm::Expected<int64_t> mode = reductionMode(importer, node, what);
  if (!weight || !positiveWeight || !mode) {
    llvm::Error error = llvm::joinErrors(
        llvm::joinErrors(weight.takeError(), positiveWeight.takeError()),
        mode.takeError());
    return std::move(error);
  }
  Emitter emit(importer);
  auto [x, y] = *operands;
  RankedTensorType type = tensorType(x);
  auto broadcast = [&](Value v) {
    return emit.broadcastTo(emit.cast(v, type.getElementType()),
                            type.getShape());
  };
  Value one = emit.splatLike(x, 1.0);
  Value logWeight = one;
  if (*positiveWeight)
    logWeight = emit.binary<AddOp>(
        one, emit.binary<MulOp>(
                 emit.binary<SubOp>(broadcast(*positiveWeight), one), y));
  Value losses =
      emit.binary<SubOp>(emit.binary<MulOp>(emit.binary<SubOp>(one, y), x),
                         emit.binary<MulOp>(logWeight, logSigmoid(emit, x)));
  if (*weight)
    losses = emit.binary<MulOp>(losses, broadcast(*weight));
  return single(reduceLosses(emit, losses, *mode));
}

/// aten::kl_div(log-probabilities, target, reduction, log_target): target
/// (log target - input), 0 where the target is 0 (log_target false), or
/// exp(target) (target - input); then reduced (F.kl_div's 'batchmean' is
/// the sum divided by the batch outside this op).
Outputs convertKlDiv(GraphImporter &importer, Node *node) {
  llvm::Expected<std::pair<Value, Value>> operands =
      elementwiseLossOperands(importer, node, "kl_div");
  if (!operands)
    return operands.takeError();
  llvm::Expected<int64_t> mode = reductionMode(importer, node, "kl_div");
  if (!mode)
    return mode.takeError();
  Emitter emit(importer);
  auto [input, target] = *operands;
  Value losses;
  if (flagOr(importer, node, "log_target", false)) {
    losses = emit.binary<MulOp>(emit.unary<ExpOp>(target),
                                emit.binary<SubOp>(target, input));
  } else {
    Value zero = emit.splatLike(target, 0.0);
    Value positive = emit.compare("gt", target, zero);
    // log of 1 where the target is not positive: its term is 0 (NaN for a
    // negative target in PyTorch, which no probability is).
    Value safe = emit.select(positive, target, emit.splatLike(target, 1.0));
    losses = emit.select(
        positive,
        emit.binary<MulOp>(target,
                           emit.binary<SubOp>(emit.unary<LogOp>(safe), input)),
        zero);
  }
  return single(reduceLosses(emit, losses, *mode));
}

/// Inputs `first`.. (`count` of them) of loss `what` as float tensors of
/// one shape, and its reduction code.
struct LossOperands {
  SmallVector<Value> values;
  int64_t mode;
};

llvm::Expected<LossOperands> lossOperands(GraphImporter &importer, Node *node,
                                          StringRef what, size_t count) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, count);
  if (!operands)
    return makeError(llvm::formatv("{0} needs {1} tensors: {2}", what, count,
                                   llvm::toString(operands.takeError())));
  llvm::Expected<int64_t> mode = reductionMode(importer, node, what);
  if (!mode)
    return mode.takeError();
  return LossOperands{*operands, *mode};
}

/// max(x, 0).
Value positivePart(Emitter &emit, Value x) {
  return emit.binary<MaxOp>(x, emit.splatLike(x, 0.0));
}

/// aten::margin_ranking_loss(x1, x2, y, margin, reduction): max(0, -y (x1
/// - x2) + margin).
Outputs convertMarginRankingLoss(GraphImporter &importer, Node *node) {
  llvm::Expected<LossOperands> operands =
      lossOperands(importer, node, "margin_ranking_loss", 3);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  Value x1 = operands->values[0], x2 = operands->values[1],
        y = operands->values[2];
  Value losses = emit.binary<AddOp>(
      emit.unary<NegOp>(emit.binary<MulOp>(y, emit.binary<SubOp>(x1, x2))),
      emit.splatLike(x1, numberOr(importer, node, "margin", 0.0)));
  return single(reduceLosses(emit, positivePart(emit, losses), operands->mode));
}

/// aten::hinge_embedding_loss(x, y, margin, reduction): max(0, margin - x)
/// where y is not 1, plus x where y is not -1 (PyTorch's sum of the two
/// masked terms).
Outputs convertHingeEmbeddingLoss(GraphImporter &importer, Node *node) {
  llvm::Expected<LossOperands> operands =
      lossOperands(importer, node, "hinge_embedding_loss", 2);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  Value x = operands->values[0], y = operands->values[1];
  Value zero = emit.splatLike(x, 0.0);
  Value margin = emit.splatLike(x, numberOr(importer, node, "margin", 1.0));
  Value losses = emit.binary<AddOp>(
      emit.select(emit.compare("ne", y, emit.splatLike(y, 1.0)),
                  positivePart(emit, emit.binary<SubOp>(margin, x)), zero),
      emit.select(emit.compare("ne", y, emit.splatLike(y, -1.0)), x, zero));
  return single(reduceLosses(emit, losses, operands->mode));
}

/// aten::soft_margin_loss(x, y, reduction): log(1 + exp(-y x)), as
/// -log(sigmoid(y x)) (finite where PyTorch's overflows).
Outputs convertSoftMarginLoss(GraphImporter &importer, Node *node) {
  llvm::Expected<LossOperands> operands =
      lossOperands(importer, node, "soft_margin_loss", 2);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  Value losses = emit.unary<NegOp>(logSigmoid(
      emit, emit.binary<MulOp>(operands->values[0], operands->values[1])));
  return single(reduceLosses(emit, losses, operands->mode));
}

/// aten::cosine_embedding_loss(x1, x2, y, margin, reduction): with cos the
/// cosine of x1 and x2 along their last dim (PyTorch's, each squared
/// magnitude plus 1e-12), 1 - cos where y is 1 and max(0, cos - margin)
/// where y is -1. x1 and x2 are [N, D] with y [N], or [D] with a 0-d y.
Outputs convertCosineEmbeddingLoss(GraphImporter &importer, Node *node) {
  StringRef what = "cosine_embedding_loss";
  llvm::Expected<Value> x1 = promotedFloatInput(importer, node, 0);
  llvm::Expected<Value> x2 = promotedFloatInput(importer, node, 1);
  llvm::Expected<Value> y = promotedFloatInput(importer, node, 2);
  if (llvm::Error error = requireAll(what + " needs three tensors", x1, x2, y))
    return std::move(error);
  int64_t targetRank = tensorType(*y).getRank();
  if (targetRank > 1 ||
      tensorType(*x1).getShape() != tensorType(*x2).getShape() ||
      tensorType(*x1).getRank() != targetRank + 1)
    return makeError(llvm::formatv(
        "{0} of {1}, {2} and target {3}: expected inputs [N, D] with a target "
        "[N], or [D] with a 0-d target",
        what, tensorType(*x1), tensorType(*x2), tensorType(*y)));
  llvm::Expected<int64_t> mode = reductionMode(importer, node, what);
  if (!mode)
    return mode.takeError();
  Emitter emit(importer);
  Value a = *x1, b = emit.cast(*x2, tensorType(a).getElementType());
  auto sumOfProducts = [&](Value u, Value v) {
    return emit.reduceSum(emit.binary<MulOp>(u, v), {targetRank}, false);
  };
  auto squaredMagnitude = [&](Value u) {
    Value sum = sumOfProducts(u, u);
    return emit.binary<AddOp>(sum, emit.splatLike(sum, 1e-12));
  };
  Value cosine = emit.binary<DivOp>(
      sumOfProducts(a, b), emit.unary<SqrtOp>(emit.binary<MulOp>(
                               squaredMagnitude(a), squaredMagnitude(b))));
  Value target = emit.cast(*y, tensorType(cosine).getElementType());
  Value zero = emit.splatLike(cosine, 0.0);
  Value losses = emit.binary<AddOp>(
      emit.select(emit.compare("eq", target, emit.splatLike(target, 1.0)),
                  emit.binary<SubOp>(emit.splatLike(cosine, 1.0), cosine),
                  zero),
      emit.select(
          emit.compare("eq", target, emit.splatLike(target, -1.0)),
          positivePart(emit, emit.binary<SubOp>(
                                 cosine, emit.splatLike(
                                             cosine, numberOr(importer, node,
                                                              "margin", 0.0)))),
          zero));
  return single(reduceLosses(emit, losses, *mode));
}

/// aten::triplet_margin_loss(anchor, positive, negative, margin, p, eps,
/// swap, reduction): max(0, margin + d(a, p) - d(a, n)), d the
/// pairwise_distance; with swap, d(a, n) is at most d(p, n).
Outputs convertTripletMarginLoss(GraphImporter &importer, Node *node) {
  llvm::Expected<LossOperands> operands =
      lossOperands(importer, node, "triplet_margin_loss", 3);
  if (!operands)
    return operands.takeError();
  double p = numberOr(importer, node, "p", 2.0);
  double eps = numberOr(importer, node, "eps", 1e-6);
  Emitter emit(importer);
  Value anchor = operands->values[0], positive = operands->values[1],
        negative = operands->values[2];
  llvm::Expected<Value> toPositive =
      pairwiseDistance(emit, anchor, positive, p, eps, /*keepdim=*/false);
  llvm::Expected<Value> toNegative =
      pairwiseDistance(emit, anchor, negative, p, eps, /*keepdim=*/false);
  if (!toPositive || !toNegative) {
    llvm::consumeError(toNegative.takeError());
    return makeError("triplet_margin_loss: " +
                     llvm::toString(toPositive.takeError()));
  }
  Value away = *toNegative;
  if (flagOr(importer, node, "swap", false)) {
    llvm::Expected<Value> swapped =
        pairwiseDistance(emit, positive, negative, p, eps, /*keepdim=*/false);
    if (!swapped)
      return swapped.takeError();
    away = emit.min(away, *swapped);
  }
  Value losses = emit.binary<SubOp>(
      emit.binary<AddOp>(
          *toPositive,
          emit.splatLike(away, numberOr(importer, node, "margin", 1.0))),
      away);
  return single(reduceLosses(emit, positivePart(emit, losses), operands->mode));
}

/// aten::poisson_nll_loss(x, y, log_input, full, eps, reduction): exp(x) -
/// y x (log_input), else x - y log(x + eps); `full` adds Stirling's y log y
/// - y + log(2 pi y) / 2 where y > 1.
Outputs convertPoissonNllLoss(GraphImporter &importer, Node *node) {
  llvm::Expected<LossOperands> operands =
      lossOperands(importer, node, "poisson_nll_loss", 2);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  Value x = operands->values[0], y = operands->values[1];
  Value losses;
  if (flagOr(importer, node, "log_input", true)) {
    losses = emit.binary<SubOp>(emit.unary<ExpOp>(x), emit.binary<MulOp>(y, x));
  } else {
    Value shifted = emit.binary<AddOp>(
        x, emit.splatLike(x, numberOr(importer, node, "eps", 1e-8)));
    losses = emit.binary<SubOp>(
        x, emit.binary<MulOp>(y, emit.unary<LogOp>(shifted)));
  }
  if (flagOr(importer, node, "full", false)) {
    Value one = emit.splatLike(y, 1.0);
    Value counted = emit.compare("gt", y, one);
    Value safe = emit.select(counted, y, one);
    Value stirling = emit.binary<AddOp>(
        emit.binary<SubOp>(emit.binary<MulOp>(safe, emit.unary<LogOp>(safe)),
                           safe),
        emit.scale(emit.unary<LogOp>(emit.scale(safe, 2 * llvm::numbers::pi)),
                   0.5));
    losses = emit.binary<AddOp>(
        losses, emit.select(counted, stirling, emit.splatLike(y, 0.0)));
  }
  return single(reduceLosses(emit, losses, operands->mode));
}

/// The scores [N, C] (or [C], as [1, C]) and class-index labels [N] (or 0-d)
/// of a multi-class margin loss `what`.
struct MarginScores {
  Value scores, labels;
  bool unbatched;
};

llvm::Expected<MarginScores> marginScores(GraphImporter &importer, Node *node,
                                          StringRef what) {
  llvm::Expected<Value> scores = promotedFloatInput(importer, node, 0);
  llvm::Expected<Value> labels = importer.tensorInput(node, 1);
  if (llvm::Error error = requireAll(what + " needs scores and a target tensor",
                                     scores, labels))
    return std::move(error);
  RankedTensorType type = tensorType(*scores);
  Type labelType = tensorType(*labels).getElementType();
  if (!isa<IntegerType>(labelType) || labelType.isInteger(1))
    return makeError(llvm::formatv("{0}'s target must hold class indices (an "
                                   "integer tensor), not {1}",
                                   what, tensorType(*labels)));
  bool unbatched = type.getRank() == 1;
  if (type.getRank() != 1 && type.getRank() != 2)
    return makeError(llvm::formatv(
        "{0} of {1}: the scores must be [N, C] or [C]", what, type));
  Emitter emit(importer);
  Value rows =
      unbatched ? emit.reshape(*scores, {1, type.getDimSize(0)}) : *scores;
  return MarginScores{rows, *labels, unbatched};
}

/// aten::multi_margin_loss(x, y, p, margin, weight, reduction): per row,
/// the sum over the classes j other than y of max(0, margin - x[y] +
/// x[j])^p (p 1 or 2), times weight[y], over the class count.
Outputs convertMultiMarginLoss(GraphImporter &importer, Node *node) {
  StringRef what = "multi_margin_loss";
  llvm::Expected<MarginScores> inputs = marginScores(importer, node, what);
  if (!inputs)
    return inputs.takeError();
  double p = numberOr(importer, node, "p", 1.0);
  if (p != 1 && p != 2)
    return makeError(llvm::formatv(
        "{0}'s p must be 1 or 2, as PyTorch's, not {1}", what, p));
  llvm::Expected<Value> weight = optionalTensor(importer, node, "weight", what);
  llvm::Expected<int64_t> mode = reductionMode(importer, node, what);
  if (!weight || !mode) {
    llvm::Error error = llvm::joinErrors(weight.takeError(), mode.takeError());
    return std::move(error);
  }
  Emitter emit(importer);
  Value x = inputs->scores;
  RankedTensorType type = tensorType(x);
  int64_t rows = type.getDimSize(0), classes = type.getDimSize(1);
  Value labels = emit.reshape(inputs->labels, {rows});
  Value hot = labelOneHot(emit, labelRows(emit, labels, type), type);
  Value zero = emit.splatLike(x, 0.0);
  // x[y] along each row.
  Value labelled = emit.broadcastTo(
      emit.reduceSum(emit.select(hot, x, zero), {1}, /*keepdim=*/true),
      type.getShape());
  Value hinge = positivePart(
      emit, emit.binary<AddOp>(
                emit.binary<SubOp>(
                    emit.splatLike(x, numberOr(importer, node, "margin", 1.0)),
                    labelled),
                x));
  if (p == 2)
    hinge = emit.binary<MulOp>(hinge, hinge);
  hinge = emit.select(hot, zero, hinge);
  if (*weight) {
    Value classWeights = emit.broadcastTo(
        emit.reshape(emit.cast(*weight, type.getElementType()), {1, classes}),
        type.getShape());
    Value labelWeight = emit.broadcastTo(
        emit.reduceSum(emit.select(hot, classWeights, zero), {1}, true),
        type.getShape());
    hinge = emit.binary<MulOp>(hinge, labelWeight);
  }
  Value losses = emit.scale(emit.reduceSum(hinge, {1}, false),
                            1.0 / static_cast<double>(classes));
  if (inputs->unbatched)
    losses = emit.reshape(losses, {});
  return single(reduceLosses(emit, losses, *mode));
}

/// aten::multilabel_margin_loss(x, y, reduction): y [N, C] lists each row's
/// classes up to its first -1; per row, the sum over its classes j and the
/// other classes k of max(0, 1 - (x[j] - x[k])), over the class count.
Outputs convertMultilabelMarginLoss(GraphImporter &importer, Node *node) {
  StringRef what = "multilabel_margin_loss";
  llvm::Expected<MarginScores> inputs = marginScores(importer, node, what);
  if (!inputs)
    return inputs.takeError();
  llvm::Expected<int64_t> mode = reductionMode(importer, node, what);
  if (!mode)
    return mode.takeError();
  Emitter emit(importer);
  Value x = inputs->scores;
  RankedTensorType type = tensorType(x);
  int64_t rows = type.getDimSize(0), classes = type.getDimSize(1);
  if (tensorType(inputs->labels).getNumElements() != rows * classes)
    return makeError(llvm::formatv("{0} of scores {1} and target {2}: the "
                                   "target must have the scores' shape",
                                   what, tensorType(inputs->scores),
                                   tensorType(inputs->labels)));
  Type f32 = emit.builder.getF32Type();
  Value labels = emit.cast(emit.reshape(inputs->labels, {rows, classes}),
                           emit.builder.getI64Type());
  // A label counts while no -1 came at or before it: the -1s up to each
  // position are a product with [C, C] upper-triangular ones.
  Value ends =
      emit.cast(emit.compare("eq", labels, emit.splatLike(labels, -1.0)), f32);
  auto square =
      RankedTensorType::get({classes, classes}, emit.builder.getI64Type());
  Value upper = emit.cast(
      emit.compare("le", emit.iota(square, 0), emit.iota(square, 1)), f32);
  Value endsSoFar = MatmulOp::create(
      emit.builder, emit.loc, RankedTensorType::get({rows, classes}, f32), ends,
      upper, Value(), /*transpose_lhs=*/false, /*transpose_rhs=*/false);
  Value listed = emit.compare("eq", endsSoFar, emit.splatLike(endsSoFar, 0.0));
  // How often row n lists class c ([N, T, C] one-hots summed over T).
  auto listType = RankedTensorType::get({rows, classes, classes},
                                        emit.builder.getI64Type());
  Value labelAlongT = emit.broadcastTo(emit.reshape(labels, {rows, classes, 1}),
                                       listType.getShape());
  Value listedAlongT =
      emit.broadcastTo(emit.reshape(emit.cast(listed, f32), {rows, classes, 1}),
                       listType.getShape());
  Value names = emit.binary<MulOp>(
      emit.cast(emit.compare("eq", labelAlongT, emit.iota(listType, 2)), f32),
      listedAlongT);
  // A class listed twice counts twice as a j, as in PyTorch; listed at
  // all, it is no k.
  Value listings = emit.reduceSum(names, {1}, false);
  // Every (j, k) pair of a row: [N, C (j), C (k)].
  Type element = type.getElementType();
  auto pairType = RankedTensorType::get({rows, classes, classes}, element);
  Value xj = emit.broadcastTo(emit.reshape(x, {rows, classes, 1}),
                              pairType.getShape());
  Value xk = emit.broadcastTo(emit.reshape(x, {rows, 1, classes}),
                              pairType.getShape());
  listings = emit.cast(listings, element);
  Value otherF = emit.cast(
      emit.compare("eq", listings, emit.splatLike(listings, 0.0)), element);
  Value targetJ = emit.broadcastTo(emit.reshape(listings, {rows, classes, 1}),
                                   pairType.getShape());
  Value otherK = emit.broadcastTo(emit.reshape(otherF, {rows, 1, classes}),
                                  pairType.getShape());
  Value hinge =
      positivePart(emit, emit.binary<SubOp>(emit.splat(pairType, 1.0),
                                            emit.binary<SubOp>(xj, xk)));
  Value counted =
      emit.binary<MulOp>(emit.binary<MulOp>(hinge, targetJ), otherK);
  Value losses = emit.scale(emit.reduceSum(counted, {1, 2}, false),
                            1.0 / static_cast<double>(classes));
  if (inputs->unbatched)
    losses = emit.reshape(losses, {});
  return single(reduceLosses(emit, losses, *mode));
}

} // namespace

void mlir::titan::import::addLossConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::cross_entropy_loss"] = convertCrossEntropyLoss;
  for (StringRef name :
       {"aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d"})
    table[name] = convertNllLoss;
  auto regression = [&](StringRef name, RegressionLoss kind) {
    table[name] = [kind](GraphImporter &importer, Node *node) {
      return convertRegressionLoss(importer, node, kind);
    };
  };
  regression("aten::mse_loss", RegressionLoss::Squared);
  regression("aten::l1_loss", RegressionLoss::Absolute);
  regression("aten::smooth_l1_loss", RegressionLoss::SmoothL1);
  regression("aten::huber_loss", RegressionLoss::Huber);
  table["aten::binary_cross_entropy"] = convertBinaryCrossEntropy;
  table["aten::binary_cross_entropy_with_logits"] =
      convertBinaryCrossEntropyWithLogits;
  table["aten::kl_div"] = convertKlDiv;
  table["aten::margin_ranking_loss"] = convertMarginRankingLoss;
  table["aten::hinge_embedding_loss"] = convertHingeEmbeddingLoss;
  table["aten::soft_margin_loss"] = convertSoftMarginLoss;
  table["aten::cosine_embedding_loss"] = convertCosineEmbeddingLoss;
  table["aten::triplet_margin_loss"] = convertTripletMarginLoss;
  table["aten::poisson_nll_loss"] = convertPoissonNllLoss;
  table["aten::multi_margin_loss"] = convertMultiMarginLoss;
  table["aten::multilabel_margin_loss"] = convertMultilabelMarginLoss;
}
