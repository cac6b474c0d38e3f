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

/// A reduction of a gradient that a cast widens for the optimizer: the
/// redistribution, the ops that only move its result's elements on the way
/// (reshapes, transposes), and the cast.
struct GradientReduction {
  RedistributeOp redistribute;
  SmallVector<Operation *> views;
  CastOp widen;
};

/// The reduction `widen` widens, when `widen` casts to `wide` for the
/// optimizer only and its input is, through single-use views, the single
/// use of a redistribution that sums a Partial value of a narrower float
/// type.
std::optional<GradientReduction> matchReduction(func::FuncOp function,
                                                CastOp widen, FloatType wide) {
  if (widen.getType().getElementType() != wide ||
      !isReadByOptimizerOnly(widen.getResult()))
    return std::nullopt;
  GradientReduction match{RedistributeOp(), {}, widen};
  Value value = widen.getInput();
  while (!match.redistribute) {
    Operation *def = value.getDefiningOp();
    if (!def || !value.hasOneUse())
      return std::nullopt;
    if (auto redistribute = dyn_cast<RedistributeOp>(def))
      match.redistribute = redistribute;
    else if (isa<ReshapeOp, TransposeOp>(def))
      match.views.push_back(def);
    else
      return std::nullopt;
    value = def->getOperand(0);
  }
  auto element =
      dyn_cast<FloatType>(match.redistribute.getType().getElementType());
  PlacementsAttr from = getValuePlacements(function, value);
  if (!element || element.getWidth() >= wide.getWidth() || !from ||
      getPartialKind(from.getPlacements()) != ReduceKind::Sum)
    return std::nullopt;
  return match;
}

/// Widens the input of the redistribution of `match` before it, and the
/// views after it, in place of the cast.
void widenBeforeReduction(func::FuncOp function, GradientReduction &match,
                          FloatType wide) {
  RedistributeOp redistribute = match.redistribute;
  Value input = redistribute.getInput();
  OpBuilder builder(redistribute);
  auto widened = CastOp::create(
      builder, match.widen.getLoc(),
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
  match.widen.getResult().replaceAllUsesWith(match.widen.getInput());
  match.widen.erase();
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
    function.walk([&](CastOp widen) {
      if (std::optional<GradientReduction> match =
              matchReduction(function, widen, wide))
        reductions.push_back(*match);
    });
    for (GradientReduction &match : reductions)
      widenBeforeReduction(function, match, wide);
  }
};

} // namespace
