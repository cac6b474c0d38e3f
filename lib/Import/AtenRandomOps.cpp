//===- AtenRandomOps.cpp - torch.rand, randn, bernoulli_, ... -------------===//
//
// PyTorch's random ops, drawn from titan.random_uniform as dropout is: each
// op takes streams of its own, and a number depends only on the element's
// position in the whole tensor, the stream, the step and training.seed. So
// every parallel layout draws the same numbers as one rank, activation
// checkpointing recomputes them, and each step draws new ones; they are
// not PyTorch's numbers (its generator is another), but follow the same
// distributions: torch.rand / rand_like and uniform_, randn / randn_like,
// normal and normal_ (Box-Muller), bernoulli and bernoulli_, exponential_
// (F.gumbel_softmax), randint / randint_like and random_, randperm.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;
using torch::jit::Node;

namespace {

/// The tensor a random op fills: its shape and element type.
struct RandomTarget {
  SmallVector<int64_t> shape;
  Type element;
};

/// What random op `node` fills: the tensor of the sizes its input `size`
/// names (`torch.rand(size)`; float32, or `sizeElement` where given, unless
/// a dtype says), else its input 0's shape (`rand_like(x)`, `x.uniform_()`;
/// x's type unless a dtype says). With `floating`, refuses a non-float
/// type.
llvm::Expected<RandomTarget> randomTarget(GraphImporter &importer, Node *node,
                                          bool floating,
                                          Type sizeElement = Type()) {
  RandomTarget target;
  Type fallback = sizeElement ? sizeElement
                              : Type(Float32Type::get(&importer.getContext()));
  const c10::FunctionSchema *schema = node->maybeSchema();
  std::optional<int> sizeIndex;
  if (schema)
    if (auto index = schema->argumentIndexWithName("size"))
      sizeIndex = *index;
  if (sizeIndex) {
    llvm::Expected<std::vector<int64_t>> sizes =
        importer.intListInput(node, *sizeIndex);
    if (!sizes)
      return sizes.takeError();
    target.shape.assign(sizes->begin(), sizes->end());
  } else {
    llvm::Expected<Value> self = importer.tensorInput(node, 0);
    if (!self)
      return self.takeError();
    target.shape.assign(tensorType(*self).getShape().begin(),
                        tensorType(*self).getShape().end());
    fallback = tensorType(*self).getElementType();
  }
  llvm::Expected<Type> element = optionalDtype(importer, node, fallback);
  if (!element)
    return element.takeError();
  if (floating && !isa<FloatType>(*element))
    return makeError(llvm::formatv("{0} draws floating-point numbers, not {1}",
                                   node->kind().toUnqualString(), *element));
  target.element = *element;
  return target;
}

/// Standard normal f32 numbers of `shape` by the Box-Muller transform of
/// two uniform streams: sqrt(-2 log(1 - u1)) cos(2 pi u2) (1 - u1 in (0,
/// 1], so the numbers are finite: within 5.8 of 0 on the 2^-24 grid).
Value standardNormal(Emitter &emit, ArrayRef<int64_t> shape) {
  Value first = emit.importer.emitUniform(shape);
  Value second = emit.importer.emitUniform(shape);
  Value radius = emit.unary<SqrtOp>(emit.scale(
      emit.unary<LogOp>(emit.binary<SubOp>(emit.splatLike(first, 1.0), first)),
      -2.0));
  return emit.binary<MulOp>(radius, emit.unary<CosOp>(emit.scale(
                                        second, 2 * 3.14159265358979323846)));
}

/// aten::rand(size) / rand_like(x) (`normal`: randn / randn_like): uniform
/// numbers in [0, 1) (standard normal ones) of a float type.
Outputs convertRand(GraphImporter &importer, Node *node, bool normal) {
  llvm::Expected<RandomTarget> target =
      randomTarget(importer, node, /*floating=*/true);
  if (!target)
    return target.takeError();
  Emitter emit(importer);
  Value numbers = normal ? standardNormal(emit, target->shape)
                         : importer.emitUniform(target->shape);
  return single(emit.cast(numbers, target->element));
}

/// aten::uniform_(x, from=0, to=1): x's shape filled with numbers uniform
/// in [from, to).
Outputs convertUniform(GraphImporter &importer, Node *node) {
  llvm::Expected<RandomTarget> target =
      randomTarget(importer, node, /*floating=*/true);
  if (!target)
    return target.takeError();
  double from = numberOr(importer, node, "from", 0.0);
  double to = numberOr(importer, node, "to", 1.0);
  if (from > to)
    return makeError(llvm::formatv(
        "uniform_ draws from [from, to), but from ({0}) > to ({1})",
        numberText(from), numberText(to)));
  Emitter emit(importer);
  Value uniform = importer.emitUniform(target->shape);
  Value numbers = emit.binary<AddOp>(emit.scale(uniform, to - from),
                                     emit.splatLike(uniform, from));
  return single(emit.cast(numbers, target->element));
}

/// A normal distribution's standard deviation given as a number, checked
/// as torch checks it.
llvm::Error checkStd(double std) {
  if (std >= 0)
    return llvm::Error::success();
  return makeError(llvm::formatv("normal expects std >= 0.0, but found std {0}",
                                 numberText(std)));
}

/// aten::normal_(x, mean=0, std=1) and torch.normal: aten::normal(mean,
/// std) of numbers and a size, or of tensors (broadcast together) and
/// numbers: mean + std z of standard normal z. As in PyTorch, no gradient
/// reaches a mean or std tensor.
Outputs convertNormal(GraphImporter &importer, Node *node) {
  bool inPlace = StringRef(node->kind().toUnqualString()).ends_with("_");
  Emitter emit(importer);
  if (inPlace || importer.namedInput(node, "size")) {
    llvm::Expected<RandomTarget> target =
        randomTarget(importer, node, /*floating=*/true);
    if (!target)
      return target.takeError();
    llvm::Expected<double> mean = importer.numberInput(node, inPlace ? 1 : 0);
    llvm::Expected<double> std = importer.numberInput(node, inPlace ? 2 : 1);
    if (llvm::Error error = requireAll(
            "normal needs a mean and a std known at import time", mean, std))
      return std::move(error);
    if (llvm::Error error = checkStd(*std))
      return std::move(error);
    Value z = standardNormal(emit, target->shape);
    Value numbers =
        emit.binary<AddOp>(emit.scale(z, *std), emit.splatLike(z, *mean));
    return single(emit.cast(numbers, target->element));
  }
  const ImportedValue &stdValue = importer.input(node, 1);
  if (stdValue.isNumber())
    if (llvm::Error error = checkStd(stdValue.asDouble()))
      return std::move(error);
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 2);
  if (!operands)
    return operands.takeError();
  Value mean = StopGradientOp::create(emit.builder, emit.loc, (*operands)[0]);
  Value std = StopGradientOp::create(emit.builder, emit.loc, (*operands)[1]);
  RankedTensorType type = tensorType(mean);
  Value z =
      emit.cast(standardNormal(emit, type.getShape()), type.getElementType());
  return single(emit.binary<AddOp>(mean, emit.binary<MulOp>(std, z)));
}

/// aten::bernoulli(p) (torch.bernoulli: each element 1 with the
/// probability it holds), bernoulli(x, p) and bernoulli_(x, p) (a number
/// or a tensor broadcast to x's shape; DropPath's `x.new_empty(shape)
/// .bernoulli_(keep_prob)`): 1 where a uniform number is below the
/// probability, else 0, in x's type. No gradient, as PyTorch's.
Outputs convertBernoulli(GraphImporter &importer, Node *node) {
  llvm::Expected<RandomTarget> target =
      randomTarget(importer, node, /*floating=*/false);
  if (!target)
    return target.takeError();
  Emitter emit(importer);
  auto uniformType =
      RankedTensorType::get(target->shape, emit.builder.getF32Type());
  Value probability;
  const ImportedValue *p = importer.namedInput(node, "p");
  if (p && p->isNumber()) {
    double chance = p->asDouble();
    if (chance < 0 || chance > 1)
      return makeError(
          llvm::formatv("bernoulli expects p to be in [0, 1], but got p={0}",
                        numberText(chance)));
    probability = emit.splat(uniformType, chance);
  } else {
    llvm::Expected<Value> given = importer.tensorInput(node, p ? 1 : 0);
    if (!given)
      return given.takeError();
    if (!isa<FloatType>(tensorType(*given).getElementType()))
      return makeError("bernoulli needs probabilities of a floating-point "
                       "type");
    llvm::Expected<SmallVector<int64_t>> shape =
        broadcastShape(tensorType(*given).getShape(), target->shape);
    if (!shape || ArrayRef<int64_t>(*shape) != ArrayRef(target->shape)) {
      if (!shape)
        llvm::consumeError(shape.takeError());
      return makeError(llvm::formatv(
          "bernoulli's probabilities '{0}' do not broadcast to the shape of "
          "the tensor it fills",
          given->getType()));
    }
    probability = emit.broadcastTo(
        emit.cast(StopGradientOp::create(emit.builder, emit.loc, *given),
                  emit.builder.getF32Type()),
        target->shape);
  }
  Value uniform = importer.emitUniform(target->shape);
  return single(
      emit.cast(emit.compare("lt", uniform, probability), target->element));
}

/// aten::exponential_(x, lambd=1): x's shape filled with exponential
/// numbers of rate lambd, -log(1 - u) / lambd. As PyTorch's CUDA kernel,
/// never 0 (at least 2^-24 / lambd), so that F.gumbel_softmax's -log of
/// them is finite.
Outputs convertExponential(GraphImporter &importer, Node *node) {
  llvm::Expected<RandomTarget> target =
      randomTarget(importer, node, /*floating=*/true);
  if (!target)
    return target.takeError();
  double rate = numberOr(importer, node, "lambd", 1.0);
  if (!(rate > 0))
    return makeError(
        llvm::formatv("exponential_ expects lambda > 0.0, but found lambda={0}",
                      numberText(rate)));
  Emitter emit(importer);
  Value uniform = importer.emitUniform(target->shape);
  Value draw = emit.scale(emit.unary<LogOp>(emit.binary<SubOp>(
                              emit.splatLike(uniform, 1.0), uniform)),
                          -1.0);
  Value numbers = emit.scale(
      emit.binary<MaxOp>(draw, emit.splatLike(draw, std::ldexp(1.0, -24))),
      1.0 / rate);
  return single(emit.cast(numbers, target->element));
}

/// The largest range of integers titan draws from: the uniform numbers'
/// grid.
constexpr int64_t kMaxIntegerRange = int64_t(1) << 24;

/// aten::randint(low=0, high, size), randint_like(x, low=0, high) and
/// random_(x, from=0, to): integers uniform in [low, high), as low +
/// floor(u (high - low)) (int64 for randint, else x's type, unless a dtype
/// says).
Outputs convertRandint(GraphImporter &importer, Node *node) {
  llvm::Expected<RandomTarget> target =
      randomTarget(importer, node, /*floating=*/false,
                   IntegerType::get(&importer.getContext(), 64));
  if (!target)
    return target.takeError();
  StringRef name = node->kind().toUnqualString();
  bool random = name.starts_with("random");
  const ImportedValue *high = importer.namedInput(node, random ? "to" : "high");
  if (!high || !high->isNumber())
    return makeError(llvm::formatv(
        "{0} needs the end of its range (titan does not draw from the whole "
        "range of a dtype)",
        name));
  int64_t low = intOr(importer, node, random ? "from" : "low", 0);
  auto end = static_cast<int64_t>(high->asDouble());
  if (low >= end)
    return makeError(llvm::formatv(
        "{0} expects 'from' to be less than 'to', but got from={1} >= to={2}",
        name, low, end));
  if (end - low > kMaxIntegerRange)
    return makeError(llvm::formatv(
        "{0} of a range of {1} integers: titan draws from ranges of at most "
        "2^24 integers",
        name, end - low));
  Emitter emit(importer);
  Value uniform = emit.cast(importer.emitUniform(target->shape), emit.f64());
  Value numbers =
      emit.binary<AddOp>(floorOf(emit, emit.scale(uniform, double(end - low))),
                         emit.splatLike(uniform, double(low)));
  return single(emit.cast(numbers, target->element));
}

/// aten::randperm(n): a random permutation of 0..n-1 (int64 unless a dtype
/// says), the stable order of n uniform numbers; n is at most
/// kMaxOneHotDim, the longest dim titan sorts.
Outputs convertRandperm(GraphImporter &importer, Node *node) {
  llvm::Expected<int64_t> n = importer.intInput(node, 0);
  if (!n)
    return n.takeError();
  if (*n < 0 || *n > kMaxOneHotDim)
    return makeError(llvm::formatv(
        "randperm of {0} elements: titan permutes 0 to {1} elements (it "
        "sorts random numbers, comparing every pair)",
        *n, kMaxOneHotDim));
  llvm::Expected<Type> element = optionalDtype(
      importer, node, IntegerType::get(&importer.getContext(), 64));
  if (!element)
    return element.takeError();
  Emitter emit(importer);
  if (*n == 0)
    return single(emit.splat(RankedTensorType::get({0}, *element), 0.0));
  Value uniform = importer.emitUniform({*n});
  Value order = sortAlong(emit, uniform, 0, /*descending=*/false,
                          /*withValues=*/false)
                    .second;
  return single(emit.cast(order, *element));
}

} // namespace

void mlir::titan::import::addRandomConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::rand"] = [](GraphImporter &i, Node *n) {
    return convertRand(i, n, /*normal=*/false);
  };
  table["aten::rand_like"] = table["aten::rand"];
  table["aten::randn"] = [](GraphImporter &i, Node *n) {
    return convertRand(i, n, /*normal=*/true);
  };
  table["aten::randn_like"] = table["aten::randn"];
  // The in-place ops' functional names (`x.uniform_()` is aten::uniform
  // written into x).
  table["aten::uniform"] = convertUniform;
  table["aten::normal"] = convertNormal;
  table["aten::bernoulli"] = convertBernoulli;
  table["aten::exponential"] = convertExponential;
  table["aten::randint"] = convertRandint;
  table["aten::randint_like"] = convertRandint;
  table["aten::random"] = convertRandint;
  table["aten::randperm"] = convertRandperm;
}
