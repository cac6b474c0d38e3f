//===- SetGradientReduceDtype.cpp - titan-set-gradient-reduce-dtype -------===//
//
// Implements titan-set-gradient-reduce-dtype (see passes/Passes.td for the
// contract): parameter gradients cross the data-parallel ranks widened, as
// FSDP2's reduce_dtype makes them.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/ValuePlacements.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::titan {
#define GEN_PASS_DEF_SETGRADIENTREDUCEDTYPEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Whether `value` is read only by the optimizer or returned.
bool isReadByOptimizerOnly(Value value) {
  return llvm::all_of(value.getUsers(), [](Operation *user) {
    return isa<func::ReturnOp>(user) || getPhase(user) == Phase::Optimizer;
  });
}

/// A reduction of a gradient for the optimizer: the redistribution, the
/// ops that only move its result's elements on the way (reshapes,
/// transposes), and the cast that widens the result (mixed precision's
/// float32 masters) or, where the optimizer reads the gradient in its
/// narrow type (pure bf16 training), none.
struct GradientReduction {
  RedistributeOp redistribute;
  SmallVector<Operation *> views;
  CastOp widen;
};

/// The reduction `redistribute` begins, when it sums a Partial value of a
/// float type narrower than `wide` and its result is, through single-use
/// views, either the single use of a cast to `wide` read only by the
/// optimizer or itself read only by the optimizer.
std::optional<GradientReduction> matchReduction(func::FuncOp function,
                                                RedistributeOp redistribute,
                                                FloatType wide) {
  auto element = dyn_cast<FloatType>(redistribute.getType().getElementType());
  PlacementsAttr from = getValuePlacements(function, redistribute.getInput());
  if (!element || element.getWidth() >= wide.getWidth() || !from ||
      getPartialKind(from.getPlacements()) != ReduceKind::Sum)
    return std::nullopt;
  GradientReduction match{redistribute, {}, CastOp()};
  Value value = redistribute.getResult();
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (auto widen = dyn_cast<CastOp>(user);
        widen && widen.getType().getElementType() == wide) {
      if (!isReadByOptimizerOnly(widen.getResult()))
        return std::nullopt;
      match.widen = widen;
      return match;
    }
    if (!isa<ReshapeOp, TransposeOp>(user))
      break;
    match.views.push_back(user);
    value = user->getResult(0);
  }
  if (value.use_empty() || !isReadByOptimizerOnly(value))
    return std::nullopt;
  return match;
}

/// Widens the input of the redistribution of `match` before it, and the
/// views after it, in place of the cast; without a cast, narrows the last
/// view's result back for the optimizer (FSDP2 casts the reduced gradient
/// to the parameter's dtype).
void widenBeforeReduction(func::FuncOp function, GradientReduction &match,
                          FloatType wide) {
  RedistributeOp redistribute = match.redistribute;
  Operation *last =
      match.views.empty() ? redistribute.getOperation() : match.views.back();
  Value reduced = last->getResult(0);
  auto narrowType = cast<RankedTensorType>(reduced.getType());
  PlacementsAttr reducedPlacements = getValuePlacements(function, reduced);
  Value input = redistribute.getInput();
  OpBuilder builder(redistribute);
  auto widened = CastOp::create(
      builder, redistribute.getLoc(),
      cast<RankedTensorType>(input.getType()).clone(wide), input);
  // The cast is exact, so a partial value stays partial.
  if (PlacementsAttr from = getValuePlacements(function, input))
    widened->setAttr(TitanDialect::kPlacementsAttrName,
                     builder.getArrayAttr({from}));
  redistribute.getInputMutable().assign(widened);
  auto widenResult = [&](Operation *op) {
    Value result = op->getResult(0);
    result.setType(cast<RankedTensorType>(result.getType()).clone(wide));
  };
  widenResult(redistribute);
  llvm::for_each(match.views, widenResult);
  if (match.widen) {
    match.widen.getResult().replaceAllUsesWith(match.widen.getInput());
    match.widen.erase();
    return;
  }
  builder.setInsertionPointAfter(last);
  auto narrowed =
      CastOp::create(builder, redistribute.getLoc(), narrowType, reduced);
  if (reducedPlacements)
    narrowed->setAttr(TitanDialect::kPlacementsAttrName,
                      builder.getArrayAttr({reducedPlacements}));
  reduced.replaceAllUsesExcept(narrowed, narrowed);
}

class SetGradientReduceDtypePass
    : public titan::impl::SetGradientReduceDtypePassBase<
          SetGradientReduceDtypePass> {
public:
  using SetGradientReduceDtypePassBase::SetGradientReduceDtypePassBase;

  void runOnOperation() override {
    auto wide = llvm::dyn_cast_or_null<FloatType>(
        llvm::StringSwitch<Type>(dtype)
            .Case("f32", Float32Type::get(&getContext()))
            .Case("f64", Float64Type::get(&getContext()))
            .Default(Type()));
    if (!wide) {
      emitError(getOperation().getLoc())
          << "titan-set-gradient-reduce-dtype: dtype '" << dtype
          << "' is not a float type gradients can be reduced in (expected "
             "f32 or f64)";
      return signalPassFailure();
    }
    auto function = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!function)
      return;
    SmallVector<GradientReduction> reductions;
    function.walk([&](RedistributeOp redistribute) {
      if (std::optional<GradientReduction> match =
              matchReduction(function, redistribute, wide))
        reductions.push_back(*match);
    });
    for (GradientReduction &match : reductions)
      widenBeforeReduction(function, match, wide);
  }
};

} // namespace
