//===- BuildTrainStep.cpp - loss, reverse-mode AD and AdamW ---------------===//
//
// Implements titan-build-train-step (see passes/Passes.td for the contract).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::titan {
#define GEN_PASS_DEF_BUILDTRAINSTEPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// One argument or result of @train_step.
struct Slot {
  Type type;
  std::string name;
  /// The role of an argument; none for results.
  std::optional<ArgRole> role;
};

/// The name and role attributes of argument `index` of `function` (an
/// argument without a role is an input).
std::pair<StringRef, ArgRole> nameAndRole(func::FuncOp function,
                                          unsigned index) {
  auto name =
      function.getArgAttrOfType<StringAttr>(index, TitanDialect::kNameAttrName);
  return {name ? name.getValue() : StringRef(),
          getArgRole(function, index).value_or(ArgRole::Input)};
}

class BuildTrainStepPass
    : public titan::impl::BuildTrainStepPassBase<BuildTrainStepPass> {
public:
  using BuildTrainStepPassBase::BuildTrainStepPassBase;

  void runOnOperation() override {
    if (failed(build()))
      signalPassFailure();
    // With the gradients built, a stop_gradient is its input.
    getOperation().walk([](StopGradientOp op) {
      op.replaceAllUsesWith(op.getInput());
      op.erase();
    });
  }

private:
  LogicalResult build();
  /// Gives @train_step its type from its body and names its arguments and
  /// results (`args`, `results`); a validation step's ops are all forward.
  LogicalResult finish(func::FuncOp trainStep, ArrayRef<Slot> args,
                       ArrayRef<Slot> results, OpBuilder &builder);
  /// Reverse-mode differentiation of the ops of `body` up to the loss:
  /// fills `grads` with the cotangent of every value that needs one.
  LogicalResult differentiate(Block *body, Value loss,
                              const llvm::DenseSet<Value> &params,
                              DenseMap<Value, Value> &grads,
                              OpBuilder &builder);
};

LogicalResult BuildTrainStepPass::build() {
  ModuleOp module = getOperation();
  auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
  if (!forward)
    return module.emitError()
           << "titan-build-train-step: no function @" << forwardName
           << " (import a model with titan-compile first)";
  if (module.lookupSymbol("train_step"))
    return module.emitError()
           << "titan-build-train-step: the module already has @train_step";
  Location loc = forward.getLoc();

  // The model must map tokens [batch, seq] to logits [batch, seq, vocab],
  // and may return scalar losses after them (a mixture of experts'
  // load-balancing loss), which the step adds to the cross-entropy.
  auto isFloat = [](RankedTensorType type) {
    return type && isa<FloatType>(type.getElementType());
  };
  auto logitsType =
      forward.getNumResults() >= 1
          ? dyn_cast<RankedTensorType>(forward.getResultTypes()[0])
          : RankedTensorType();
  bool scalarsAfter =
      llvm::all_of(forward.getResultTypes().drop_front(), [&](Type type) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        return isFloat(tensor) && tensor.getRank() == 0;
      });
  if (!isFloat(logitsType) || logitsType.getRank() != 3 || !scalarsAfter)
    return forward.emitError()
           << "titan-build-train-step: @" << forwardName
           << " must return a tensor of logits [batch, seq, vocab] "
              "(floating point), optionally followed by scalar losses to "
              "add to the cross-entropy, it returns "
           << forward.getResultTypes()
           << "; make the model's forward return the logits (and its "
              "auxiliary losses) only";
  int64_t batch = logitsType.getDimSize(0), seq = logitsType.getDimSize(1);
  int tokensIndex = -1;
  SmallVector<std::string> inputNames;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto [name, role] = nameAndRole(forward, i);
    if (role != ArgRole::Input)
      continue;
    inputNames.push_back(name.empty() ? "#" + std::to_string(i) : name.str());
    tokensIndex = i;
  }
  if (inputNames.size() > 1)
    return forward.emitError()
           << "titan-build-train-step: @" << forwardName << " has "
           << inputNames.size() << " model inputs ("
           << llvm::join(inputNames, ", ")
           << "); a language model takes the token ids only: trace the model "
              "with the token ids alone (torch.jit.trace(model, "
              "(input_ids,))), or script it with the other inputs Optional "
              "and None by default";
  auto tokensType = tokensIndex < 0
                        ? RankedTensorType()
                        : dyn_cast<RankedTensorType>(
                              forward.getArgument(tokensIndex).getType());
  if (!tokensType || !isa<IntegerType>(tokensType.getElementType()) ||
      tokensType.getShape() != ArrayRef<int64_t>{batch, seq})
    return forward.emitError()
           << "titan-build-train-step: @" << forwardName
           << " must take token ids of shape [" << batch << ", " << seq
           << "] (the batch and sequence dims of its logits)";

  // The signature of @train_step.
  SmallVector<Slot> args, results;
  SmallVector<unsigned> paramIndices, bufferIndices;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    ArgRole role = nameAndRole(forward, i).second;
    if (role == ArgRole::Param)
      paramIndices.push_back(i);
    else if (role == ArgRole::Buffer && !forward.getArgument(i).use_empty())
      bufferIndices.push_back(i);
  }
  auto nameOf = [&](unsigned i) {
    StringRef name = nameAndRole(forward, i).first;
    return name.empty() ? "arg" + std::to_string(i) : name.str();
  };
  auto typeOf = [&](unsigned i) { return forward.getArgument(i).getType(); };
  for (unsigned i : paramIndices)
    args.push_back({typeOf(i), nameOf(i), ArgRole::Param});
  // A validation step reads the parameters only.
  if (!evaluate)
    for (ParamSlot moment : {ParamSlot::ExpAvg, ParamSlot::ExpAvgSq})
      for (unsigned i : paramIndices)
        args.push_back(
            {typeOf(i), getParamSlotName(moment, nameOf(i)), ArgRole::State});
  for (unsigned i : bufferIndices)
    args.push_back({typeOf(i), nameOf(i), ArgRole::Buffer});
  OpBuilder builder(module.getContext());
  auto scalarF32 = RankedTensorType::get({}, builder.getF32Type());
  args.push_back({tokensType, nameOf(tokensIndex), ArgRole::Input});
  args.push_back({tokensType, "labels", ArgRole::Input});
  if (!evaluate) {
    args.push_back({scalarF32, "lr", ArgRole::Input});
    args.push_back({scalarF32, "step", ArgRole::Input});
  }

  builder.setInsertionPointAfter(forward);
  SmallVector<Type> argTypes;
  for (const Slot &slot : args)
    argTypes.push_back(slot.type);
  auto trainStep = func::FuncOp::create(builder, loc, "train_step",
                                        builder.getFunctionType(argTypes, {}));
  Block *body = trainStep.addEntryBlock();
  builder.setInsertionPointToStart(body);

  // Clone the forward body onto the new arguments.
  size_t numParams = paramIndices.size();
  size_t stateSlots = evaluate ? numParams : 3 * numParams;
  IRMapping mapping;
  for (auto [k, i] : llvm::enumerate(paramIndices))
    mapping.map(forward.getArgument(i), body->getArgument(k));
  for (auto [k, i] : llvm::enumerate(bufferIndices))
    mapping.map(forward.getArgument(i), body->getArgument(stateSlots + k));
  size_t tail = stateSlots + bufferIndices.size();
  mapping.map(forward.getArgument(tokensIndex), body->getArgument(tail));
  Value labels = body->getArgument(tail + 1);
  Value lr = evaluate ? Value() : body->getArgument(tail + 2);
  Value step = evaluate ? Value() : body->getArgument(tail + 3);
  Value logits;
  SmallVector<Value> auxiliaryLosses;
  for (Operation &op : forward.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      logits = mapping.lookup(ret.getOperand(0));
      for (Value loss : ret.getOperands().drop_front())
        auxiliaryLosses.push_back(mapping.lookup(loss));
      continue;
    }
    Operation *clone = builder.clone(op, mapping);
    // Random numbers (dropout) are new every step and follow the job's
    // seed.
    if (auto random = dyn_cast<RandomUniformOp>(clone)) {
      // A validation step's random numbers (other than dropout, which its
      // import drops) are those of step 0 each time.
      if (!step) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointToStart(body);
        step = TensorBuilder(builder, loc).splat(scalarF32, 0.0);
      }
      random.getStepMutable().assign(step);
      random.setSeed(seed);
    }
  }

  // Loss: mean token cross-entropy, on the [batch, seq] grid of tokens as
  // is (not flattened: a sequence split by context parallelism stays split).
  // Logits of a narrower float type are widened first, as torchtitan's
  // loss does (`pred.float()`).
  TensorBuilder tb(builder, loc);
  if (cast<FloatType>(logitsType.getElementType()).getWidth() < 32)
    logits = tb.cast(logits, builder.getF32Type());
  Value loss = CrossEntropyOp::create(builder, loc, scalarF32, logits, labels,
                                      builder.getI64IntegerAttr(ignoreIndex));
  // The model's own losses (auxiliary load-balancing losses, z-losses),
  // computed in float32 like the cross-entropy, are added to it: the step
  // trains their sum and reports it as the loss.
  for (Value auxiliary : auxiliaryLosses)
    loss = tb.binary<AddOp>(loss, tb.cast(auxiliary, builder.getF32Type()));
  if (evaluate) {
    func::ReturnOp::create(builder, loc, loss);
    results.push_back({loss.getType(), "loss", std::nullopt});
    return finish(trainStep, args, results, builder);
  }

  // Gradients.
  llvm::DenseSet<Value> params;
  for (size_t k = 0; k < numParams; ++k)
    params.insert(body->getArgument(k));
  DenseMap<Value, Value> grads;
  if (failed(differentiate(body, loss, params, grads, builder)))
    return failure();
  // The ops up to the loss are the forward, the VJPs appended after it the
  // backward, and what follows (clipping, AdamW) the optimizer.
  Operation *lastBackward = &body->back();
  // A parameter's optimizer ops belong to the parameter's module
  // ("layers.0.attention.wq" of "layers.0.attention.wq.weight").
  SmallVector<TensorBuilder> paramBuilders;
  for (size_t k = 0; k < numParams; ++k) {
    StringRef module = StringRef(args[k].name).rsplit('.').first;
    paramBuilders.emplace_back(
        builder, module == args[k].name ? loc : addModulePath(loc, module));
  }
  // A parameter no cotangent reaches (never read, or read only through
  // titan.stop_gradient) has no gradient: as torch.optim.AdamW skips a
  // parameter whose `.grad` is None, its step returns it and its moments
  // as they are, and its gradient, where returned, is zero.
  SmallVector<Value> paramGrads;
  for (size_t k = 0; k < numParams; ++k) {
    Value param = body->getArgument(k);
    Value grad = grads.lookup(param);
    paramGrads.push_back(
        grad ? paramBuilders[k].cast(grad, tensorTypeOf(param).getElementType())
             : Value());
  }

  // Global-norm clipping (torch.nn.utils.clip_grad_norm_, 2-norm).
  auto broadcastScalar = [&](TensorBuilder &tb, Value scalar, Value like) {
    RankedTensorType type = tensorTypeOf(like);
    return tb.broadcastTo(tb.cast(scalar, type.getElementType()),
                          type.getShape());
  };
  // The gradients' global norm before clipping: clipping needs it, and the
  // runtime logs it (torchtitan's grad_norm).
  Value gradNorm, gradScale;
  if (maxNorm > 0 && llvm::any_of(paramGrads, [](Value g) { return g; })) {
    Value sumSquares;
    for (auto [g, ptb] : llvm::zip(paramGrads, paramBuilders)) {
      if (!g)
        continue;
      Value g32 = ptb.cast(g, builder.getF32Type());
      Value s = ptb.sumAll(ptb.binary<MulOp>(g32, g32));
      sumSquares = sumSquares ? tb.binary<AddOp>(sumSquares, s) : s;
    }
    Value norm = tb.unary<SqrtOp>(sumSquares);
    gradNorm = norm;
    Value coef =
        tb.binary<DivOp>(tb.splat(scalarF32, maxNorm),
                         tb.binary<AddOp>(norm, tb.splat(scalarF32, 1e-6)));
    gradScale = tb.min(coef, tb.splat(scalarF32, 1.0));
  }

  // AdamW, one op per parameter, the clipping coefficient applied inside.
  SmallVector<Value> newParams, newExpAvg, newExpAvgSq;
  for (size_t k = 0; k < numParams; ++k) {
    if (!paramGrads[k]) {
      newParams.push_back(body->getArgument(k));
      newExpAvg.push_back(body->getArgument(numParams + k));
      newExpAvgSq.push_back(body->getArgument(2 * numParams + k));
      continue;
    }
    TensorBuilder &ptb = paramBuilders[k];
    Type paramType = body->getArgument(k).getType();
    auto adamw = AdamWOp::create(
        builder, ptb.getLoc(), paramType, paramType, paramType,
        /*new_param_copy=*/Type(), body->getArgument(k), paramGrads[k],
        body->getArgument(numParams + k), body->getArgument(2 * numParams + k),
        lr, step, gradScale, builder.getF64FloatAttr(beta1),
        builder.getF64FloatAttr(beta2), builder.getF64FloatAttr(eps),
        builder.getF64FloatAttr(weightDecay));
    newParams.push_back(adamw.getNewParam());
    newExpAvg.push_back(adamw.getNewExpAvg());
    newExpAvgSq.push_back(adamw.getNewExpAvgSq());
  }
  // The gradients the step returns are the clipped ones (zero where none
  // reaches the parameter).
  if (emitGrads)
    for (auto [k, g] : llvm::enumerate(paramGrads)) {
      TensorBuilder &ptb = paramBuilders[k];
      if (!g)
        g = ptb.splatLike(body->getArgument(k), 0.0);
      else if (gradScale)
        g = ptb.binary<MulOp>(g, broadcastScalar(ptb, gradScale, g));
    }

  // Results.
  SmallVector<Value> returned{loss};
  results.push_back({loss.getType(), "loss", std::nullopt});
  auto addResults = [&](ArrayRef<Value> values, ParamSlot slot) {
    for (auto [k, value] : llvm::enumerate(values)) {
      returned.push_back(value);
      results.push_back({value.getType(), getParamSlotName(slot, args[k].name),
                         std::nullopt});
    }
  };
  addResults(newParams, ParamSlot::Updated);
  addResults(newExpAvg, ParamSlot::ExpAvg);
  addResults(newExpAvgSq, ParamSlot::ExpAvgSq);
  if (emitGrads)
    addResults(paramGrads, ParamSlot::Grad);
  if (gradNorm) {
    returned.push_back(gradNorm);
    results.push_back({gradNorm.getType(), "grad_norm", std::nullopt});
  }
  func::ReturnOp::create(builder, loc, returned);
  Phase phase = Phase::Forward;
  for (Operation &op : body->without_terminator()) {
    setPhase(&op, phase);
    if (&op == lastBackward)
      phase = Phase::Optimizer;
    else if (&op == loss.getDefiningOp())
      phase = Phase::Backward;
  }
  return finish(trainStep, args, results, builder);
}

LogicalResult BuildTrainStepPass::finish(func::FuncOp trainStep,
                                         ArrayRef<Slot> args,
                                         ArrayRef<Slot> results,
                                         OpBuilder &builder) {
  Block *body = &trainStep.getBody().front();
  if (evaluate)
    for (Operation &op : body->without_terminator())
      setPhase(&op, Phase::Forward);
  trainStep.setType(builder.getFunctionType(
      body->getArgumentTypes(), body->getTerminator()->getOperandTypes()));
  setEachArgAttr(trainStep, TitanDialect::kNameAttrName, [&](unsigned i) {
    return builder.getStringAttr(args[i].name);
  });
  setEachArgRole(trainStep, [&](unsigned i) { return *args[i].role; });
  setEachResultAttr(trainStep, TitanDialect::kNameAttrName, [&](unsigned i) {
    return builder.getStringAttr(results[i].name);
  });
  return success();
}

LogicalResult BuildTrainStepPass::differentiate(
    Block *body, Value loss, const llvm::DenseSet<Value> &params,
    DenseMap<Value, Value> &grads, OpBuilder &builder) {
  // The forward computation: every op up to the loss.
  Operation *lossOp = loss.getDefiningOp();
  SmallVector<Operation *> ops;
  for (Operation &op : *body) {
    ops.push_back(&op);
    if (&op == lossOp)
      break;
  }

  // Values that depend on a parameter: only they need cotangents, and only
  // ops with such an operand need a VJP rule.
  llvm::DenseSet<Value> varied(params.begin(), params.end());
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (Value result : op->getResults())
        if (isa<FloatType>(getElementTypeOrSelf(result.getType())))
          varied.insert(result);

  auto accumulate = [&](Value value, Value grad) {
    Value &slot = grads[value];
    if (!slot) {
      slot = grad;
      return;
    }
    TensorBuilder tb(builder, value.getLoc());
    slot = tb.binary<AddOp>(slot,
                            tb.cast(grad, tensorTypeOf(slot).getElementType()));
  };

  builder.setInsertionPointAfter(lossOp);
  TensorBuilder tb(builder, loss.getLoc());
  grads[loss] = tb.splatLike(loss, 1.0);

  for (Operation *op : llvm::reverse(ops)) {
    bool hasGrad =
        llvm::any_of(op->getResults(), [&](Value r) { return grads.count(r); });
    bool hasVariedOperand = llvm::any_of(
        op->getOperands(), [&](Value v) { return varied.contains(v); });
    if (!hasGrad || !hasVariedOperand)
      continue;
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable)
      return op->emitError()
             << "titan-build-train-step: '" << op->getName()
             << "' has no VJP rule, but it lies between a parameter and the "
                "loss; implement DifferentiableOpInterface::buildVJP for it "
                "(dialects/titan/ComputeGradients.cpp)";
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(grads.lookup(result));
    FailureOr<SmallVector<Value>> operandGrads =
        differentiable.buildVJP(builder, resultGrads);
    if (failed(operandGrads))
      return op->emitError() << "titan-build-train-step: the VJP rule of '"
                             << op->getName() << "' failed";
    for (auto [operand, grad] : llvm::zip(op->getOperands(), *operandGrads))
      if (grad && varied.contains(operand))
        accumulate(operand, grad);
  }
  return success();
}

} // namespace
