//===- Interpreter.cpp - reference interpreter of titan programs ----------===//

#include "titan/Interpreter/Interpreter.h"

#include "Kernels.h"

#include "titan/Dialect/GlobalShape.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/Rounding.h"
#include "titan/Dialect/TitanDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <tuple>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::kernels;

std::string mlir::titan::getArgumentName(func::FuncOp function,
                                         unsigned index) {
  if (auto name = function.getArgAttrOfType<StringAttr>(
          index, TitanDialect::kNameAttrName))
    return name.str();
  return "arg" + std::to_string(index);
}

std::string mlir::titan::getResultName(func::FuncOp function, unsigned index) {
  if (auto name = function.getResultAttrOfType<StringAttr>(
          index, TitanDialect::kNameAttrName))
    return name.str();
  return "result" + std::to_string(index);
}

/// The element kind and shape (with dynamic dims) of a tensor type the
/// interpreter handles.
static std::optional<std::pair<ElementType, ArrayRef<int64_t>>>
getKindAndShape(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return std::nullopt;
  std::optional<ElementType> kind =
      getInterpretedElementType(tensor.getElementType());
  if (!kind)
    return std::nullopt;
  return std::make_pair(*kind, tensor.getShape());
}

/// A type or attribute as MLIR prints it, for messages (diagnostics would
/// quote it).
template <typename T> static std::string printToString(T entity) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << entity;
  return text;
}

/// True when `value` has the kind and rank of `type` and its size on every
/// static dim of `type`.
static bool hasType(const TensorValue &value, Type type) {
  auto expected = getKindAndShape(type);
  if (!expected || expected->first != value.getKind() ||
      expected->second.size() != value.getShape().size())
    return false;
  return llvm::all_of(
      llvm::zip_equal(expected->second, value.getShape()), [](auto dims) {
        auto [expectedSize, size] = dims;
        return ShapedType::isDynamic(expectedSize) || expectedSize == size;
      });
}

/// The runtime shape of a `titan.reshape` of `input` to `type`: static dims
/// as given; the last dynamic dim is what the element count leaves, and the
/// dynamic dims before it take the input's size at the same position while
/// all dims before them agree (batch and sequence dims kept by a reshape).
static FailureOr<SmallVector<int64_t>>
inferReshape(Operation *op, ArrayRef<int64_t> input, ArrayRef<int64_t> type) {
  SmallVector<int64_t> shape(type);
  size_t lastDynamic = shape.size();
  for (auto [d, size] : llvm::enumerate(shape))
    if (ShapedType::isDynamic(size))
      lastDynamic = d;
  for (size_t d = 0; d < lastDynamic && d < input.size(); ++d) {
    if (ShapedType::isDynamic(shape[d]))
      shape[d] = input[d];
    if (shape[d] != input[d])
      break;
  }
  int64_t total = 1, known = 1;
  for (int64_t size : input)
    total *= size;
  std::optional<size_t> unknown;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (!ShapedType::isDynamic(size)) {
      known *= size;
      continue;
    }
    if (unknown)
      return op->emitOpError("cannot infer more than one dynamic result dim");
    unknown = d;
  }
  if (unknown)
    shape[*unknown] = known ? total / known : 0;
  return shape;
}

/// The runtime shape of a `titan.broadcast_in_dim` of `input` to `type`: a
/// dynamic result dim takes the size of the operand dim mapped to it.
static FailureOr<SmallVector<int64_t>> inferBroadcast(Operation *op,
                                                      ArrayRef<int64_t> input,
                                                      ArrayRef<int64_t> type,
                                                      ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape(type);
  for (auto [d, resultDim] : llvm::enumerate(dims))
    if (ShapedType::isDynamic(shape[resultDim]))
      shape[resultDim] = input[d];
  if (llvm::any_of(shape, ShapedType::isDynamic))
    return op->emitOpError("cannot infer a dynamic result dim that no "
                           "operand dim maps to");
  return shape;
}

//===----------------------------------------------------------------------===//
// Compute ops
//===----------------------------------------------------------------------===//

/// The tensor of a `titan.constant`.
static FailureOr<TensorValue> evaluateConstant(ConstantOp op) {
  auto [kind, shape] = *getKindAndShape(op.getType());
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return op.emitError("the interpreter only handles dense elements "
                        "constants, got ")
           << op.getValue();
  if (isFloatElementType(kind)) {
    std::vector<double> values;
    values.reserve(dense.getNumElements());
    for (const APFloat &value : dense.getValues<APFloat>())
      values.push_back(value.convertToDouble());
    return fromDoubles(kind, shape, values);
  }
  TensorValue result(kind, shape);
  if (kind == ElementType::I1)
    llvm::copy(dense.getValues<bool>(), result.getMutable<uint8_t>().begin());
  else
    for (auto [out, value] : llvm::zip_equal(result.getMutable<int64_t>(),
                                             dense.getValues<APInt>()))
      out = value.getSExtValue();
  return result;
}

/// `torch.maximum` on doubles: NaN if either operand is.
static double maximumOf(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b);
}

/// `titan.gelu` of one value.
static double gelu(double x, bool tanhApproximation) {
  if (tanhApproximation)
    return 0.5 * x *
           (1.0 + std::tanh(std::sqrt(2.0 / llvm::numbers::pi) *
                            (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

/// The derivative of `titan.gelu` at `x`.
static double geluDerivative(double x, bool tanhApproximation) {
  if (tanhApproximation) {
    double c = std::sqrt(2.0 / llvm::numbers::pi);
    double t = std::tanh(c * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) +
           0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
  }
  double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  double density = std::exp(-0.5 * x * x) / std::sqrt(2.0 * llvm::numbers::pi);
  return cdf + x * density;
}

/// `factor` rounded to the float kind `kind`.
static double roundFactor(double factor, ElementType kind) {
  return kind == ElementType::F64 ? factor : roundToFloatType(factor, kind);
}

/// Reports that the interpreter does not run `op`.
static LogicalResult emitUnsupported(Operation *op) {
  return op->emitError("the titan interpreter does not handle '")
         << op->getName() << "'";
}

/// Evaluates the compute op `op` on one rank's operands. Returns failure
/// (after an error on `op`) for unknown ops and data-dependent errors.
static FailureOr<TensorValue> evaluate(Operation *op,
                                       ArrayRef<const TensorValue *> in,
                                       int64_t rank, int64_t numRanks) {
  auto resultShape = [&] {
    return cast<RankedTensorType>(op->getResult(0).getType()).getShape();
  };
  using Result = FailureOr<TensorValue>;
  auto resultKind = [&] {
    return getKindAndShape(op->getResult(0).getType())->first;
  };
  auto check =
      [&](llvm::Expected<TensorValue> value) -> FailureOr<TensorValue> {
    if (value)
      return std::move(*value);
    InFlightDiagnostic diag = op->emitOpError();
    if (numRanks > 1)
      diag << "on rank " << rank << ": ";
    diag << llvm::toString(value.takeError());
    return failure();
  };
  auto unary = [&](auto fn) { return mapFloat(*in[0], fn); };
  auto binary = [&](auto fn) { return zipFloat(*in[0], *in[1], fn); };
  // Arithmetic of floats or of integers (two's complement, wrapping).
  bool integers = !in.empty() && (in[0]->getKind() == ElementType::I64 ||
                                  in[0]->getKind() == ElementType::I32);
  auto arithmetic = [&](auto floatFn, auto integerFn) {
    if (integers)
      return zipInteger(*in[0], *in[1], integerFn);
    return zipFloat(*in[0], *in[1], floatFn);
  };
  return llvm::TypeSwitch<Operation *, Result>(op)
      // Elementwise arithmetic.
      .Case([&](AddOp) {
        return arithmetic([](double a, double b) { return a + b; },
                          [](uint64_t a, uint64_t b) { return a + b; });
      })
      .Case([&](SubOp) {
        return arithmetic([](double a, double b) { return a - b; },
                          [](uint64_t a, uint64_t b) { return a - b; });
      })
      .Case([&](MulOp) {
        return arithmetic([](double a, double b) { return a * b; },
                          [](uint64_t a, uint64_t b) { return a * b; });
      })
      .Case([&](DivOp) {
        return binary([](double a, double b) { return a / b; });
      })
      // Floats in the kernels' compute type: f32 but for f64.
      .Case<RoundedDivOp, RemainderOp>([&](auto op) {
        constexpr bool remainder = std::is_same_v<decltype(op), RemainderOp>;
        bool truncate = op.getTruncate();
        auto rounded = [&](auto a, auto b) {
          return remainder ? floatRemainder(a, b, truncate)
                           : roundedFloatDivision(a, b, truncate);
        };
        return arithmetic(
            [&](double a, double b) -> double {
              if (in[0]->getKind() == ElementType::F64)
                return rounded(a, b);
              return rounded(float(a), float(b));
            },
            [&](uint64_t a, uint64_t b) {
              auto [quotient, rest] = integerDivision(a, b, truncate);
              return static_cast<uint64_t>(remainder ? rest : quotient);
            });
      })
      .Case([&](MaxOp) {
        return arithmetic(maximumOf, [](uint64_t a, uint64_t b) {
          return static_cast<int64_t>(a) >= static_cast<int64_t>(b) ? a : b;
        });
      })
      .Case([&](NegOp) {
        if (integers)
          return zipInteger(*in[0], *in[0],
                            [](uint64_t a, uint64_t) { return 0 - a; });
        return unary([](double x) { return -x; });
      })
      .Case([&](ExpOp) { return unary([](double x) { return std::exp(x); }); })
      .Case([&](LogOp) { return unary([](double x) { return std::log(x); }); })
      .Case(
          [&](SqrtOp) { return unary([](double x) { return std::sqrt(x); }); })
      .Case([&](RsqrtOp) {
        return unary([](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case(
          [&](TanhOp) { return unary([](double x) { return std::tanh(x); }); })
      .Case([&](SigmoidOp) {
        return unary([](double x) { return 1.0 / (1.0 + std::exp(-x)); });
      })
      .Case([&](SiluOp) {
        return unary([](double x) { return x / (1.0 + std::exp(-x)); });
      })
      .Case([&](CosOp) { return unary([](double x) { return std::cos(x); }); })
      .Case([&](SinOp) { return unary([](double x) { return std::sin(x); }); })
      .Case([&](ErfOp) { return unary([](double x) { return std::erf(x); }); })
      .Case([&](GeluOp gelu) {
        bool approximate = gelu.getApproximate() == "tanh";
        return unary([=](double x) { return ::gelu(x, approximate); });
      })
      .Case([&](ScaleOp scale) {
        double factor =
            roundFactor(scale.getFactor().convertToDouble(), in[0]->getKind());
        return unary([=](double x) { return x * factor; });
      })
      // Constants, conversions, masks.
      .Case([&](ConstantOp constant) { return evaluateConstant(constant); })
      .Case([&](CastOp) { return cast(*in[0], resultKind()); })
      .Case([&](StopGradientOp) { return *in[0]; })
      .Case([&](RandomUniformOp r) -> Result {
        return randomUniform(*in[0], r.getStep() ? in[1] : nullptr,
                             r.getStream(), r.getSeed());
      })
      .Case([&](IotaOp iotaOp) -> Result {
        if (ShapedType::isDynamicShape(resultShape()))
          return op->emitOpError("needs a static result shape");
        return iota(resultKind(), resultShape(), iotaOp.getDim());
      })
      .Case([&](CompareOp compareOp) -> Result {
        return compare(*parseComparePredicate(compareOp.getPredicate()), *in[0],
                       *in[1]);
      })
      .Case([&](SelectOp) { return select(*in[0], *in[1], *in[2]); })
      // Reductions and normalizations.
      .Case([&](ReduceSumOp r) {
        return reduce(*in[0], r.getDims(), r.getKeepdim(), ReduceKind::Sum);
      })
      .Case([&](ReduceMaxOp r) {
        return reduce(*in[0], r.getDims(), r.getKeepdim(), ReduceKind::Max);
      })
      .Case([&](ReduceMeanOp r) {
        return reduce(*in[0], r.getDims(), r.getKeepdim(), ReduceKind::Avg);
      })
      .Case([&](SoftmaxOp s) { return softmax(*in[0], s.getDim(), false); })
      .Case([&](LogSoftmaxOp s) { return softmax(*in[0], s.getDim(), true); })
      .Case([&](RmsNormOp norm) {
        return rmsNorm(*in[0], *in[1], norm.getEps().convertToDouble());
      })
      .Case([&](LayerNormOp norm) {
        return layerNorm(*in[0], *in[1], *in[2],
                         norm.getEps().convertToDouble());
      })
      // Contractions and model-level ops.
      .Case([&](MatmulOp mm) {
        return matmul(*in[0], *in[1], mm.getAddend() ? in[2] : nullptr,
                      mm.getTransposeLhs(), mm.getTransposeRhs());
      })
      .Case([&](EmbeddingOp) { return check(embedding(*in[0], *in[1])); })
      .Case([&](RopeOp r) {
        return rope(*in[0], *in[1], *in[2], r.getStyle() == "interleaved");
      })
      .Case([&](CrossEntropyOp ce) {
        return check(crossEntropy(*in[0], *in[1],
                                  static_cast<int64_t>(ce.getIgnoreIndex())));
      })
      // Backward-only ops with one result.
      .Case([&](GeluGradOp g) {
        bool approximate = g.getApproximate() == "tanh";
        return binary([=](double x, double dy) {
          return dy * geluDerivative(x, approximate);
        });
      })
      .Case([&](EmbeddingGradOp g) -> Result {
        int64_t vocab = g.getType().getDimSize(0);
        if (ShapedType::isDynamic(vocab))
          return op->emitOpError("needs a static vocab size");
        return check(embeddingGrad(*in[0], *in[1], vocab));
      })
      .Case([&](CrossEntropyGradOp ce) {
        return check(crossEntropyGrad(
            *in[0], *in[1], *in[2], static_cast<int64_t>(ce.getIgnoreIndex())));
      })
      .Case([&](PadOp p) -> Result {
        if (ShapedType::isDynamicShape(resultShape()))
          return op->emitOpError("needs a static result shape");
        return pad(*in[0], p.getStart(), p.getStep(), resultShape());
      })
      // The wait for an asynchronous collective: its result, which the
      // interpreter computed where the collective stands.
      .Case([&](WaitOp) -> Result { return *in[0]; })
      .Case([&](CheckIdsOp c) -> Result {
        return check(checkIds(*in[0], c.getBound(), c.getTable()));
      })
      // Shape ops.
      .Case([&](ReshapeOp) -> Result {
        FailureOr<SmallVector<int64_t>> shape =
            inferReshape(op, in[0]->getShape(), resultShape());
        if (failed(shape))
          return failure();
        TensorValue result = *in[0];
        result.reshape(*shape);
        return result;
      })
      .Case(
          [&](TransposeOp t) { return transpose(*in[0], t.getPermutation()); })
      .Case([&](SliceOp s) {
        SmallVector<int64_t> shape;
        for (auto [start, limit, step] :
             llvm::zip_equal(s.getStart(), s.getLimit(), s.getStep()))
          shape.push_back((limit - start + step - 1) / step);
        return slice(*in[0], s.getStart(), s.getStep(), shape);
      })
      .Case([&](ConcatOp c) { return concat(in, c.getDim()); })
      .Case([&](BroadcastInDimOp b) -> Result {
        FailureOr<SmallVector<int64_t>> shape =
            inferBroadcast(op, in[0]->getShape(), resultShape(), b.getDims());
        if (failed(shape))
          return failure();
        return broadcastInDim(*in[0], *shape, b.getDims());
      })
      .Case([&](RedistributeOp) -> Result {
        if (numRanks > 1)
          return op->emitOpError("is a global-program op: spmdize the "
                                 "program before running it on several "
                                 "ranks");
        return *in[0];
      })
      .Default([&](Operation *) -> Result { return emitUnsupported(op); });
}

/// Evaluates the compute op `op` with several results on one rank's
/// operands.
static FailureOr<std::vector<TensorValue>>
evaluateResults(Operation *op, ArrayRef<const TensorValue *> in) {
  using Result = FailureOr<std::vector<TensorValue>>;
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([&](RmsNormGradOp g) {
        return rmsNormGrad(*in[0], *in[1], *in[2],
                           g.getAddend() ? in[3] : nullptr,
                           g.getEps().convertToDouble());
      })
      .Case([&](LayerNormGradOp g) {
        return layerNormGrad(*in[0], *in[1], *in[2],
                             g.getEps().convertToDouble());
      })
      .Case([&](AttentionOp a) {
        return attention(*in[0], *in[1], *in[2], a.getCausal(),
                         a.getScaleOrDefault());
      })
      .Case([&](AdamWOp a) {
        std::optional<double> gradScale;
        if (a.getGradScale())
          gradScale = toDoubles(*in[6]).front();
        std::vector<TensorValue> results =
            adamW(*in[0], *in[1], *in[2], *in[3], toDoubles(*in[4]).front(),
                  toDoubles(*in[5]).front(), gradScale,
                  {a.getBeta1().convertToDouble(),
                   a.getBeta2().convertToDouble(), a.getEps().convertToDouble(),
                   a.getWeightDecay().convertToDouble()});
        if (Value copy = a.getNewParamCopy())
          results.push_back(
              cast(results.front(), getKindAndShape(copy.getType())->first));
        return results;
      })
      .Case([&](AttentionGradOp g) {
        return attentionGrad(*in[0], *in[1], *in[2], *in[3], *in[4], *in[5],
                             g.getCausal(), g.getScaleOrDefault());
      })
      .Default([&](Operation *) -> Result { return emitUnsupported(op); });
}

//===----------------------------------------------------------------------===//
// Lockstep execution of all ranks
//===----------------------------------------------------------------------===//

namespace {
/// The state of one run: every rank's values and the messages in flight.
/// What the programs of a pipeline's ranks share: the messages between
/// their stages, by (sending rank, receiving rank, tag) over the whole
/// world (global rank = pipeline rank x ranks per stage + rank).
struct PipelineMailboxes {
  int64_t ranksPerStage = 1;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<TensorValue>>
      messages;
};

/// How one op of an execution went.
enum class StepResult { Ran, Blocked, Done, Failed };

class Execution {
public:
  /// An execution of `interpreter`'s function; with `pipeline`, the program
  /// of pipeline rank `pipelineRank`, whose stage transfers go through it.
  Execution(const Interpreter &interpreter,
            PipelineMailboxes *pipeline = nullptr, int64_t pipelineRank = 0)
      : interpreter(interpreter), numRanks(interpreter.getNumRanks()),
        values(numRanks), pipeline(pipeline), pipelineRank(pipelineRank) {}

  /// Binds every rank's arguments; fails on a kind or shape mismatch.
  LogicalResult bindArguments(std::vector<std::vector<TensorValue>> arguments);

  /// Runs the body; returns every rank's results.
  FailureOr<std::vector<std::vector<TensorValue>>> run();

  /// Runs the next op: Blocked when it receives from a pipeline stage that
  /// has not sent yet (nothing changes), Done after the return.
  StepResult step();
  /// The op the execution is at.
  Operation *getCurrentOp() const { return &*cursor; }
  /// The results, once step() returned Done.
  std::vector<std::vector<TensorValue>> takeResults() {
    return std::move(results);
  }

private:
  /// Runs a non-collective op on every rank.
  LogicalResult runComputeOp(Operation *op);
  /// Runs a group collective on every group of ranks: `compute` maps the
  /// group's operands to the group's results.
  template <typename OpTy, typename Fn>
  LogicalResult runGroupCollective(OpTy op, Fn compute);
  /// Runs `titan.send` or `titan.recv` on every rank.
  LogicalResult runPointToPoint(Operation *op);
  /// Runs `titan.axis_index` on every rank.
  LogicalResult runAxisIndex(AxisIndexOp op);
  /// Runs `titan.launch` on every rank: the kernel's body (titan ops on
  /// tensors, as titan-fuse-kernels outlines it) on the launch's operands.
  LogicalResult runLaunch(LaunchOp op);
  /// Stores `value` as `result` of rank `rank` after checking its type.
  LogicalResult define(Operation *op, Value result, int64_t rank,
                       TensorValue value);
  /// The mesh of a collective and its mesh axes `axes` as indices of it.
  FailureOr<std::pair<const DeviceMesh *, SmallVector<unsigned>>>
  getMeshAxes(Operation *op, FlatSymbolRefAttr meshName, ArrayAttr axes);

  /// Runs a transfer between pipeline stages; Blocked when a message has
  /// not arrived.
  StepResult runPipelineTransfer(Operation *op);
  /// Runs `op` (not the return).
  LogicalResult runOp(Operation &op);

  const Interpreter &interpreter;
  int64_t numRanks;
  std::vector<llvm::DenseMap<Value, TensorValue>> values;
  /// Sent tensors by (sender, receiver, tag), oldest first.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<TensorValue>>
      mailboxes;
  PipelineMailboxes *pipeline;
  int64_t pipelineRank;
  /// The next op to run, and the values each op uses last.
  Block::iterator cursor;
  bool started = false;
  llvm::DenseMap<Operation *, SmallVector<Value>> lastUses;
  std::vector<std::vector<TensorValue>> results;
};
} // namespace

LogicalResult
Execution::bindArguments(std::vector<std::vector<TensorValue>> arguments) {
  func::FuncOp function = interpreter.getFunction();
  Block &body = function.getBody().front();
  if (int64_t(arguments.size()) != numRanks)
    return function.emitError() << "expected the arguments of " << numRanks
                                << " ranks, got " << arguments.size();
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    if (arguments[rank].size() != body.getNumArguments())
      return function.emitError()
             << "expected " << body.getNumArguments() << " arguments, got "
             << arguments[rank].size();
    for (BlockArgument arg : body.getArguments()) {
      TensorValue &value = arguments[rank][arg.getArgNumber()];
      if (!hasType(value, arg.getType())) {
        InFlightDiagnostic diag = function.emitError();
        if (numRanks > 1)
          diag << "on rank " << rank << ": ";
        return diag << "argument '"
                    << getArgumentName(function, arg.getArgNumber())
                    << "' expects " << printToString(arg.getType()) << ", got "
                    << value.getTypeString();
      }
      values[rank][arg] = std::move(value);
    }
  }
  return success();
}

LogicalResult Execution::define(Operation *op, Value result, int64_t rank,
                                TensorValue value) {
  if (!hasType(value, result.getType()))
    return op->emitOpError()
           << "produced " << value.getTypeString() << " on rank " << rank
           << " for a result of type " << printToString(result.getType());
  values[rank][result] = std::move(value);
  return success();
}

LogicalResult Execution::runComputeOp(Operation *op) {
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    SmallVector<const TensorValue *> operands;
    for (Value operand : op->getOperands())
      operands.push_back(&values[rank].find(operand)->second);
    if (op->getNumResults() != 1) {
      FailureOr<std::vector<TensorValue>> results =
          evaluateResults(op, operands);
      if (failed(results))
        return failure();
      for (auto [result, value] : llvm::zip_equal(op->getResults(), *results))
        if (failed(define(op, result, rank, std::move(value))))
          return failure();
      continue;
    }
    FailureOr<TensorValue> result = evaluate(op, operands, rank, numRanks);
    if (failed(result) ||
        failed(define(op, op->getResult(0), rank, std::move(*result))))
      return failure();
  }
  return success();
}

FailureOr<std::pair<const DeviceMesh *, SmallVector<unsigned>>>
Execution::getMeshAxes(Operation *op, FlatSymbolRefAttr meshName,
                       ArrayAttr axes) {
  FailureOr<const DeviceMesh *> mesh = interpreter.getMesh(op, meshName);
  if (failed(mesh))
    return failure();
  SmallVector<unsigned> indices;
  for (auto name : axes.getAsValueRange<StringAttr>()) {
    std::optional<unsigned> axis = (*mesh)->findAxis(name);
    if (!axis)
      return op->emitOpError()
             << "names the unknown mesh axis \"" << name << "\"";
    indices.push_back(*axis);
  }
  return std::make_pair(*mesh, std::move(indices));
}

template <typename OpTy, typename Fn>
LogicalResult Execution::runGroupCollective(OpTy op, Fn compute) {
  auto meshAxes = getMeshAxes(op, op.getMeshAttr(), op.getAxes());
  if (failed(meshAxes))
    return failure();
  const auto &[mesh, axes] = *meshAxes;
  std::vector<bool> done(numRanks, false);
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    if (done[rank])
      continue;
    SmallVector<int64_t> group = getGroup(*mesh, axes, rank);
    SmallVector<const TensorValue *> inputs;
    for (int64_t member : group)
      inputs.push_back(&values[member].find(op.getInput())->second);
    FailureOr<std::vector<TensorValue>> outputs = compute(inputs);
    if (failed(outputs))
      return failure();
    for (auto [member, output] : llvm::zip_equal(group, *outputs)) {
      if (failed(define(op, op.getResult(), member, std::move(output))))
        return failure();
      done[member] = true;
    }
  }
  return success();
}

LogicalResult Execution::runPointToPoint(Operation *op) {
  auto send = dyn_cast<SendOp>(op);
  auto recv = dyn_cast<RecvOp>(op);
  auto meshAxes =
      getMeshAxes(op, send ? send.getMeshAttr() : recv.getMeshAttr(),
                  send ? send.getAxes() : recv.getAxes());
  if (failed(meshAxes))
    return failure();
  const auto &[mesh, axes] = *meshAxes;
  if (axes.size() != 1)
    return op->emitOpError("names more than one mesh axis");
  unsigned axis = axes.front();
  int64_t peer = send ? send.getPeer() : recv.getPeer();
  int64_t tag = send ? send.getTag() : recv.getTag();
  if (peer < 0 || peer >= mesh->getSize(axis))
    return op->emitOpError()
           << "peer " << peer << " is outside mesh axis \""
           << mesh->getAxisName(axis) << "\" of size " << mesh->getSize(axis);
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    SmallVector<int64_t> coordinate = mesh->getCoordinate(rank);
    coordinate[axis] = peer;
    int64_t peerRank = mesh->getRank(coordinate);
    if (send) {
      mailboxes[{rank, peerRank, tag}].push_back(
          values[rank].find(send.getInput())->second);
      continue;
    }
    std::deque<TensorValue> &box = mailboxes[{peerRank, rank, tag}];
    if (box.empty())
      return op->emitError()
             << "on rank " << rank << ": no titan.send from rank " << peerRank
             << " with tag " << tag << " precedes it";
    TensorValue message = std::move(box.front());
    box.pop_front();
    if (failed(define(op, recv.getResult(), rank, std::move(message))))
      return failure();
  }
  return success();
}

LogicalResult Execution::runAxisIndex(AxisIndexOp op) {
  auto meshAxes = getMeshAxes(op, op.getMeshAttr(), op.getAxes());
  if (failed(meshAxes))
    return failure();
  const auto &[mesh, axes] = *meshAxes;
  ElementType kind = getKindAndShape(op.getType())->first;
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    SmallVector<int64_t> coordinate = mesh->getCoordinate(rank);
    int64_t index = 0;
    for (unsigned axis : axes)
      index = index * mesh->getSize(axis) + coordinate[axis];
    if (failed(define(op, op.getResult(), rank,
                      fromDoubles(kind, {}, {double(index)}))))
      return failure();
  }
  return success();
}

LogicalResult Execution::runLaunch(LaunchOp op) {
  auto kernel = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      op, op.getKernelAttr());
  if (!kernel || kernel.isExternal() || kernel.getNumResults() == 0)
    return op.emitOpError()
           << "the interpreter runs kernels on tensors (before "
              "titan-lower-kernels); "
           << op.getKernelAttr() << " is not one";
  Block &body = kernel.getBody().front();
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    llvm::DenseMap<Value, TensorValue> local;
    for (auto [arg, input] :
         llvm::zip_equal(body.getArguments(), op.getInputs()))
      local[arg] = values[rank].find(input)->second;
    for (Operation &inner : body) {
      SmallVector<const TensorValue *> operands;
      for (Value operand : inner.getOperands())
        operands.push_back(&local.find(operand)->second);
      if (auto ret = dyn_cast<func::ReturnOp>(inner)) {
        for (auto [result, operand] :
             llvm::zip_equal(op.getResults(), operands))
          if (failed(define(op, result, rank, *operand)))
            return failure();
        break;
      }
      if (inner.getNumResults() == 1) {
        FailureOr<TensorValue> result =
            evaluate(&inner, operands, rank, numRanks);
        if (failed(result))
          return failure();
        local[inner.getResult(0)] = std::move(*result);
        continue;
      }
      FailureOr<std::vector<TensorValue>> results =
          evaluateResults(&inner, operands);
      if (failed(results))
        return failure();
      for (auto [result, value] : llvm::zip_equal(inner.getResults(), *results))
        local[result] = std::move(value);
    }
  }
  return success();
}

/// `count` copies of `value`.
static std::vector<TensorValue> replicate(TensorValue value, size_t count) {
  return std::vector<TensorValue>(count, value);
}

FailureOr<std::vector<std::vector<TensorValue>>> Execution::run() {
  while (true) {
    switch (step()) {
    case StepResult::Ran:
      continue;
    case StepResult::Done:
      return takeResults();
    case StepResult::Failed:
      return failure();
    case StepResult::Blocked:
      llvm_unreachable("only the programs of a pipeline wait for messages");
    }
  }
}

StepResult Execution::step() {
  Block &body = interpreter.getFunction().getBody().front();
  if (!started) {
    started = true;
    cursor = body.begin();
    // Every rank drops a value after the op that uses it last.
    llvm::DenseSet<Value> seen;
    for (Operation &op : llvm::reverse(body))
      for (Value operand : op.getOperands())
        if (seen.insert(operand).second)
          lastUses[&op].push_back(operand);
  }
  if (cursor == body.end()) {
    interpreter.getFunction().emitError(
        "the body does not end with func.return");
    return StepResult::Failed;
  }
  Operation &op = *cursor;
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    results.assign(numRanks, {});
    for (int64_t rank = 0; rank < numRanks; ++rank)
      for (Value operand : ret.getOperands())
        results[rank].push_back(values[rank].find(operand)->second);
    return StepResult::Done;
  }
  if (isPipelineTransfer(&op)) {
    StepResult transferred = runPipelineTransfer(&op);
    if (transferred != StepResult::Ran)
      return transferred;
  } else if (failed(runOp(op))) {
    return StepResult::Failed;
  }
  for (Value dead : lastUses.lookup(&op))
    for (llvm::DenseMap<Value, TensorValue> &rankValues : values)
      rankValues.erase(dead);
  ++cursor;
  return StepResult::Ran;
}

StepResult Execution::runPipelineTransfer(Operation *op) {
  if (!pipeline) {
    op->emitError("a transfer between pipeline stages: run the programs of "
                  "every pipeline rank together (titan-eval with one program "
                  "file per pipeline rank)");
    return StepResult::Failed;
  }
  auto send = dyn_cast<SendOp>(op);
  auto recv = dyn_cast<RecvOp>(op);
  int64_t peer = send ? send.getPeer() : recv.getPeer();
  int64_t tag = send ? send.getTag() : recv.getTag();
  auto world = [&](int64_t stageRank, int64_t rank) {
    return stageRank * pipeline->ranksPerStage + rank;
  };
  if (send) {
    for (int64_t rank = 0; rank < numRanks; ++rank)
      pipeline->messages[{world(pipelineRank, rank), world(peer, rank), tag}]
          .push_back(values[rank].find(send.getInput())->second);
    return StepResult::Ran;
  }
  auto box = [&](int64_t rank) -> std::deque<TensorValue> & {
    return pipeline
        ->messages[{world(peer, rank), world(pipelineRank, rank), tag}];
  };
  for (int64_t rank = 0; rank < numRanks; ++rank)
    if (box(rank).empty())
      return StepResult::Blocked;
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    TensorValue message = std::move(box(rank).front());
    box(rank).pop_front();
    if (failed(define(op, recv.getResult(), rank, std::move(message))))
      return StepResult::Failed;
  }
  return StepResult::Ran;
}

LogicalResult Execution::runOp(Operation &op) {
  using Inputs = ArrayRef<const TensorValue *>;
  using Outputs = FailureOr<std::vector<TensorValue>>;
  LogicalResult status = success();
  if (auto gather = dyn_cast<AllGatherOp>(op)) {
    status = runGroupCollective(gather, [&](Inputs in) -> Outputs {
      return replicate(concat(in, gather.getGatherDim()), in.size());
    });
  } else if (auto allReduce = dyn_cast<AllReduceOp>(op)) {
    status = runGroupCollective(allReduce, [&](Inputs in) -> Outputs {
      return replicate(reduceTensors(in, allReduce.getReduce().getValue()),
                       in.size());
    });
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    status = runGroupCollective(scatter, [&](Inputs in) -> Outputs {
      int64_t dim = scatter.getScatterDim();
      if (in[0]->getShape()[dim] % int64_t(in.size()))
        return scatter.emitOpError()
               << "dim " << dim << " of " << in[0]->getTypeString()
               << " is not divisible by the group size " << in.size();
      return split(reduceTensors(in, scatter.getReduce().getValue()), dim,
                   in.size());
    });
  } else if (auto allToAll = dyn_cast<AllToAllOp>(op)) {
    status = runGroupCollective(allToAll, [&](Inputs in) -> Outputs {
      int64_t splitDim = allToAll.getSplitDim(), n = in.size();
      if (in[0]->getShape()[splitDim] % n)
        return allToAll.emitOpError()
               << "dim " << splitDim << " of " << in[0]->getTypeString()
               << " is not divisible by the group size " << n;
      std::vector<std::vector<TensorValue>> chunks;
      for (const TensorValue *input : in)
        chunks.push_back(split(*input, splitDim, n));
      std::vector<TensorValue> outputs;
      for (int64_t receiver = 0; receiver < n; ++receiver) {
        SmallVector<const TensorValue *> pieces;
        for (int64_t sender = 0; sender < n; ++sender)
          pieces.push_back(&chunks[sender][receiver]);
        outputs.push_back(concat(pieces, allToAll.getConcatDim()));
      }
      return outputs;
    });
  } else if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    status = runGroupCollective(broadcast, [&](Inputs in) -> Outputs {
      int64_t root = broadcast.getRoot();
      if (root >= int64_t(in.size()))
        return broadcast.emitOpError()
               << "root " << root << " is outside the group of " << in.size()
               << " ranks";
      return replicate(*in[root], in.size());
    });
  } else if (auto axisIndex = dyn_cast<AxisIndexOp>(op)) {
    status = runAxisIndex(axisIndex);
  } else if (isa<SendOp, RecvOp>(op)) {
    status = runPointToPoint(&op);
  } else if (auto launch = dyn_cast<LaunchOp>(op)) {
    status = runLaunch(launch);
  } else {
    status = runComputeOp(&op);
  }
  return status;
}

//===----------------------------------------------------------------------===//
// Interpreter
//===----------------------------------------------------------------------===//

FailureOr<Interpreter> Interpreter::create(ModuleOp module, StringRef entry,
                                           int64_t numRanks) {
  auto function = module.lookupSymbol<func::FuncOp>(entry);
  if (!function)
    return module.emitError() << "no func.func @" << entry << " in the module";
  if (numRanks < 1)
    return module.emitError()
           << "the number of ranks must be positive, got " << numRanks;
  if (function.isExternal() || !llvm::hasSingleElement(function.getBody()))
    return function.emitError("the interpreter runs functions of one block");
  for (auto [index, type] : llvm::enumerate(function.getArgumentTypes()))
    if (!getKindAndShape(type))
      return function.emitError()
             << "argument '" << getArgumentName(function, index)
             << "' has a type the interpreter does not handle: "
             << printToString(type);
  for (auto [index, type] : llvm::enumerate(function.getResultTypes()))
    if (!getKindAndShape(type))
      return function.emitError()
             << "result '" << getResultName(function, index)
             << "' has a type the interpreter does not handle: "
             << printToString(type);
  std::map<std::string, DeviceMesh> meshes;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    FailureOr<DeviceMesh> deviceMesh = mesh.getDeviceMesh();
    if (failed(deviceMesh))
      return failure();
    meshes.emplace(mesh.getSymName().str(), std::move(*deviceMesh));
  }
  return Interpreter(function, numRanks, std::move(meshes));
}

FailureOr<const DeviceMesh *>
Interpreter::getMesh(Operation *user, FlatSymbolRefAttr symbol) const {
  auto it = meshes.find(symbol.getValue().str());
  if (it == meshes.end())
    return user->emitError() << "unknown mesh " << symbol;
  if (it->second.getNumRanks() != numRanks)
    return user->emitError()
           << "mesh " << symbol << " has " << it->second.getNumRanks()
           << " devices but the program runs on " << numRanks << " ranks";
  return &it->second;
}

ElementType Interpreter::getArgumentKind(unsigned index) const {
  func::FuncOp function = getFunction();
  return getKindAndShape(function.getArgumentTypes()[index])->first;
}

std::string Interpreter::describeGlobalArgument(unsigned index) const {
  func::FuncOp function = getFunction();
  auto type = cast<RankedTensorType>(function.getArgumentTypes()[index]);
  std::string local = printToString(type);
  auto placements = function.getArgAttrOfType<PlacementsAttr>(
      index, TitanDialect::kPlacementsAttrName);
  if (numRanks == 1 || !placements)
    return local;
  auto mesh = meshes.find(placements.getMesh().getValue().str());
  if (mesh == meshes.end())
    return local;
  SmallVector<int64_t> global =
      getArgGlobalShape(function, index, mesh->second.getSizes());
  if (function.getArgAttr(index, TitanDialect::kGlobalShapeAttrName))
    return printToString(type.clone(global)) + " (each rank holds at most " +
           local + " under " + printToString(placements) + ")";
  return printToString(type.clone(global)) +
         " when evenly sharded (each rank holds " + local + " under " +
         printToString(placements) + ")";
}

FailureOr<std::vector<std::vector<TensorValue>>>
Interpreter::runRanks(std::vector<std::vector<TensorValue>> arguments) const {
  Execution execution(*this);
  if (failed(execution.bindArguments(std::move(arguments))))
    return failure();
  return execution.run();
}

FailureOr<std::vector<TensorValue>>
Interpreter::shardArgument(unsigned index, const TensorValue &global) const {
  func::FuncOp function = getFunction();
  auto placements = function.getArgAttrOfType<PlacementsAttr>(
      index, TitanDialect::kPlacementsAttrName);
  if (!placements)
    return replicate(global, numRanks);
  FailureOr<const DeviceMesh *> mesh = getMesh(function, placements.getMesh());
  if (failed(mesh))
    return failure();
  std::string name = getArgumentName(function, index);
  ArrayRef<Placement> list = placements.getPlacements();
  if (llvm::Error error =
          verifyPlacements(global.getShape(), (*mesh)->getSizes(), list))
    return function.emitError()
           << "argument '" << name << "': " << llvm::toString(std::move(error));
  Type expected = function.getArgumentTypes()[index];
  // Uneven shards: the program was compiled for one global shape.
  auto recorded = function.getArgAttrOfType<DenseI64ArrayAttr>(
      index, TitanDialect::kGlobalShapeAttrName);
  if (recorded && global.getShape() != recorded.asArrayRef())
    return function.emitError()
           << "argument '" << name << "': the program was compiled for a "
           << "global "
           << formatTensorType(global.getKind(), recorded.asArrayRef())
           << ", got " << global.getTypeString();
  std::vector<TensorValue> locals;
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    SmallVector<int64_t> coordinate = (*mesh)->getCoordinate(rank);
    llvm::Expected<LocalShard> shard = computeLocalShapeAndGlobalOffset(
        global.getShape(), (*mesh)->getSizes(), list, coordinate);
    if (!shard)
      return function.emitError() << "argument '" << name
                                  << "': " << llvm::toString(shard.takeError());
    SmallVector<int64_t> step(shard->shape.size(), 1);
    TensorValue local = slice(global, shard->offset, step, shard->shape);
    // An uneven shard is padded with zeros to the program's (largest)
    // shard.
    auto ranked = dyn_cast<RankedTensorType>(expected);
    if (recorded && ranked.getShape() != ArrayRef<int64_t>(shard->shape))
      local = kernels::pad(local, SmallVector<int64_t>(step.size(), 0), step,
                           ranked.getShape());
    bool zeroPart = llvm::any_of(llvm::enumerate(list), [&](auto entry) {
      auto [axis, placement] = entry;
      return placement.isPartial() &&
             placement.getReduce() == ReduceKind::Sum && coordinate[axis] != 0;
    });
    if (zeroPart)
      local = TensorValue(local.getKind(), local.getShape());
    if (!hasType(local, expected))
      return function.emitError()
             << "argument '" << name << "': the global "
             << global.getTypeString() << " under " << placements
             << " gives rank " << rank << " a " << local.getTypeString()
             << ", but the program expects " << printToString(expected);
    locals.push_back(std::move(local));
  }
  return locals;
}

FailureOr<TensorValue> Interpreter::assembleResult(
    unsigned index, const std::vector<std::vector<TensorValue>> &locals) const {
  func::FuncOp function = getFunction();
  std::string name = getResultName(function, index);
  auto placements = function.getResultAttrOfType<PlacementsAttr>(
      index, TitanDialect::kPlacementsAttrName);
  auto localOf = [&](int64_t rank) -> const TensorValue & {
    return locals[rank][index];
  };
  if (!placements) {
    for (int64_t rank = 1; rank < numRanks; ++rank)
      if (!(localOf(rank) == localOf(0)))
        return function.emitError()
               << "result '" << name << "' has no placements (replicated), "
               << "but ranks 0 and " << rank << " hold different values";
    return localOf(0);
  }
  FailureOr<const DeviceMesh *> mesh = getMesh(function, placements.getMesh());
  if (failed(mesh))
    return failure();
  ArrayRef<Placement> list = placements.getPlacements();
  SmallVector<unsigned> partialAxes, replicateAxes;
  ReduceKind reduceKind = ReduceKind::Sum;
  for (auto [axis, placement] : llvm::enumerate(list)) {
    if (placement.isPartial()) {
      partialAxes.push_back(axis);
      reduceKind = placement.getReduce();
    }
    if (placement.isReplicate())
      replicateAxes.push_back(axis);
  }
  // The recorded global shape (uneven shards, padded locally), or each
  // global dim as the sum of the local dims over the axes sharding it.
  ArrayRef<int64_t> localShape = localOf(0).getShape();
  SmallVector<int64_t> globalShape(localShape.size(), 0);
  auto recorded = function.getResultAttrOfType<DenseI64ArrayAttr>(
      index, TitanDialect::kGlobalShapeAttrName);
  if (recorded)
    globalShape.assign(recorded.asArrayRef().begin(),
                       recorded.asArrayRef().end());
  for (int64_t rank = 0; rank < numRanks && !recorded; ++rank) {
    SmallVector<int64_t> coordinate = (*mesh)->getCoordinate(rank);
    for (size_t d = 0; d < globalShape.size(); ++d) {
      bool counts = llvm::all_of(llvm::enumerate(list), [&](auto entry) {
        auto [axis, placement] = entry;
        return placement.isShard(d) || coordinate[axis] == 0;
      });
      if (counts)
        globalShape[d] += localOf(rank).getShape()[d];
    }
  }
  TensorValue global(localOf(0).getKind(), globalShape);
  for (int64_t rank = 0; rank < numRanks; ++rank) {
    SmallVector<int64_t> coordinate = (*mesh)->getCoordinate(rank);
    llvm::Expected<LocalShard> shard = computeLocalShapeAndGlobalOffset(
        globalShape, (*mesh)->getSizes(), list, coordinate);
    if (!shard)
      return function.emitError() << "result '" << name
                                  << "': " << llvm::toString(shard.takeError());
    // A rank holding an uneven shard holds it padded.
    ArrayRef<int64_t> held = localOf(rank).getShape();
    bool fits =
        held.size() == shard->shape.size() &&
        llvm::all_of(llvm::zip_equal(shard->shape, held), [&](auto sizes) {
          return recorded ? std::get<0>(sizes) <= std::get<1>(sizes)
                          : std::get<0>(sizes) == std::get<1>(sizes);
        });
    if (!fits)
      return function.emitError()
             << "result '" << name << "': rank " << rank << " holds "
             << localOf(rank).getTypeString() << ", but the global shape "
             << formatTensorType(global.getKind(), globalShape) << " under "
             << placements << " gives it "
             << formatTensorType(global.getKind(), shard->shape);
    // The rank's shard: what it holds less the padding. The replicas and
    // the partial group of a rank hold the same box.
    auto shardOf = [&](int64_t member) {
      const TensorValue &local = localOf(member);
      if (local.getShape() == ArrayRef<int64_t>(shard->shape))
        return local;
      SmallVector<int64_t> start(shard->shape.size(), 0),
          step(shard->shape.size(), 1);
      return slice(local, start, step, shard->shape);
    };
    // Replicas must agree with the replica at coordinate 0 of the R axes.
    SmallVector<int64_t> representative(coordinate);
    for (unsigned axis : replicateAxes)
      representative[axis] = 0;
    int64_t representativeRank = (*mesh)->getRank(representative);
    if (representativeRank != rank) {
      if (!(shardOf(rank) == shardOf(representativeRank)))
        return function.emitError()
               << "result '" << name << "': ranks " << representativeRank
               << " and " << rank << " replicate it under " << placements
               << " but hold different values";
      continue;
    }
    if (llvm::any_of(partialAxes,
                     [&](unsigned axis) { return coordinate[axis] != 0; }))
      continue;
    std::vector<TensorValue> shards;
    for (int64_t member : getGroup(**mesh, partialAxes, rank))
      shards.push_back(shardOf(member));
    SmallVector<const TensorValue *> parts;
    for (const TensorValue &part : shards)
      parts.push_back(&part);
    insertSlice(global, reduceTensors(parts, reduceKind), shard->offset);
  }
  return global;
}

/// `value` with dim `order[0]` cut into equal chunks and reordered by
/// `order[1:]` (`titan.sequence_order`): position k gets chunk order[k+1]
/// (`inverse`: chunk order[k+1] gets position k back).
static TensorValue permuteChunks(const TensorValue &value,
                                 ArrayRef<int64_t> order, bool inverse) {
  int64_t dim = order.front();
  ArrayRef<int64_t> chunks = order.drop_front();
  SmallVector<int64_t> shape(value.getShape());
  int64_t size = shape[dim] / static_cast<int64_t>(chunks.size());
  shape[dim] = size;
  SmallVector<int64_t> start(shape.size(), 0), step(shape.size(), 1);
  std::vector<TensorValue> pieces(chunks.size());
  for (auto [position, chunk] : llvm::enumerate(chunks)) {
    int64_t from = inverse ? position : chunk;
    start[dim] = from * size;
    pieces[inverse ? chunk : position] = slice(value, start, step, shape);
  }
  SmallVector<const TensorValue *> parts;
  for (const TensorValue &piece : pieces)
    parts.push_back(&piece);
  return concat(parts, dim);
}

FailureOr<std::vector<std::vector<TensorValue>>>
Interpreter::shardArguments(ArrayRef<TensorValue> givenArguments) const {
  func::FuncOp function = getFunction();
  if (givenArguments.size() != function.getNumArguments())
    return function.emitError() << "expected " << function.getNumArguments()
                                << " arguments, got " << givenArguments.size();
  // Arguments stored with a permuted sequence get it permuted here.
  std::vector<TensorValue> globalArguments(givenArguments.begin(),
                                           givenArguments.end());
  for (auto [index, argument] : llvm::enumerate(globalArguments))
    if (auto order = function.getArgAttrOfType<DenseI64ArrayAttr>(
            index, TitanDialect::kSequenceOrderAttrName))
      argument = permuteChunks(argument, order.asArrayRef(), false);
  std::vector<std::vector<TensorValue>> arguments(numRanks);
  if (numRanks == 1) {
    arguments[0].assign(globalArguments.begin(), globalArguments.end());
    return arguments;
  }
  for (auto [index, global] : llvm::enumerate(globalArguments)) {
    FailureOr<std::vector<TensorValue>> locals = shardArgument(index, global);
    if (failed(locals))
      return failure();
    for (int64_t rank = 0; rank < numRanks; ++rank)
      arguments[rank].push_back(std::move((*locals)[rank]));
  }
  return arguments;
}

FailureOr<std::vector<std::vector<TensorValue>>>
Interpreter::runLocal(ArrayRef<TensorValue> givenArguments) const {
  FailureOr<std::vector<std::vector<TensorValue>>> arguments =
      shardArguments(givenArguments);
  if (failed(arguments))
    return failure();
  return runRanks(std::move(*arguments));
}

FailureOr<std::vector<TensorValue>> Interpreter::assembleResults(
    std::vector<std::vector<TensorValue>> locals) const {
  func::FuncOp function = getFunction();
  std::vector<TensorValue> globals;
  if (numRanks == 1) {
    globals = std::move(locals.front());
  } else {
    for (unsigned index = 0; index < function.getNumResults(); ++index) {
      FailureOr<TensorValue> global = assembleResult(index, locals);
      if (failed(global))
        return failure();
      globals.push_back(std::move(*global));
    }
  }
  // Results stored with a permuted sequence are put back in order: callers
  // see the natural order.
  for (auto [index, result] : llvm::enumerate(globals))
    if (auto order = function.getResultAttrOfType<DenseI64ArrayAttr>(
            index, TitanDialect::kSequenceOrderAttrName))
      result = permuteChunks(result, order.asArrayRef(), true);
  return globals;
}

FailureOr<std::vector<TensorValue>>
Interpreter::run(ArrayRef<TensorValue> givenArguments) const {
  FailureOr<std::vector<std::vector<TensorValue>>> results =
      runLocal(givenArguments);
  if (failed(results))
    return failure();
  return assembleResults(std::move(*results));
}

FailureOr<std::vector<std::vector<TensorValue>>>
Interpreter::runPipeline(ArrayRef<const Interpreter *> programs,
                         ArrayRef<std::vector<TensorValue>> arguments) {
  assert(!programs.empty() && programs.size() == arguments.size());
  PipelineMailboxes mailboxes;
  mailboxes.ranksPerStage = programs.front()->getNumRanks();
  std::vector<std::unique_ptr<Execution>> executions;
  for (auto [pipelineRank, program] : llvm::enumerate(programs)) {
    if (program->getNumRanks() != mailboxes.ranksPerStage)
      return program->getFunction().emitError()
             << "pipeline rank " << pipelineRank << "'s program runs on "
             << program->getNumRanks() << " ranks, pipeline rank 0's on "
             << mailboxes.ranksPerStage;
    FailureOr<std::vector<std::vector<TensorValue>>> local =
        program->shardArguments(arguments[pipelineRank]);
    if (failed(local))
      return failure();
    executions.push_back(
        std::make_unique<Execution>(*program, &mailboxes, pipelineRank));
    if (failed(executions.back()->bindArguments(std::move(*local))))
      return failure();
  }
  // Each program runs until it waits or ends, in turn.
  std::vector<std::optional<std::vector<std::vector<TensorValue>>>> locals(
      programs.size());
  while (llvm::any_of(locals, [](const auto &done) { return !done; })) {
    bool progressed = false;
    for (auto [pipelineRank, execution] : llvm::enumerate(executions)) {
      while (!locals[pipelineRank]) {
        StepResult result = execution->step();
        if (result == StepResult::Failed)
          return failure();
        if (result == StepResult::Blocked)
          break;
        progressed = true;
        if (result == StepResult::Done)
          locals[pipelineRank] = execution->takeResults();
      }
    }
    if (!progressed) {
      InFlightDiagnostic diag = programs.front()->getFunction().emitError(
          "the pipeline's programs all wait for a message no rank sends");
      for (auto [pipelineRank, execution] : llvm::enumerate(executions))
        if (!locals[pipelineRank])
          diag.attachNote(execution->getCurrentOp()->getLoc())
              << "pipeline rank " << pipelineRank << " waits here";
      return failure();
    }
  }
  std::vector<std::vector<TensorValue>> globals;
  for (auto [program, local] : llvm::zip(programs, locals)) {
    FailureOr<std::vector<TensorValue>> assembled =
        program->assembleResults(std::move(*local));
    if (failed(assembled))
      return failure();
    globals.push_back(std::move(*assembled));
  }
  return globals;
}
