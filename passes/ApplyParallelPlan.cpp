//===- ApplyParallelPlan.cpp - mesh and argument placements ---------------===//
//
// Implements titan-apply-parallel-plan (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Config/Mesh.h"
#include "titan/Config/ParallelPlan.h"
#include "titan/Config/TrainConfig.h"
#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Passes.h"

namespace mlir::titan {
#define GEN_PASS_DEF_APPLYPARALLELPLANPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

class ApplyParallelPlanPass
    : public titan::impl::ApplyParallelPlanPassBase<ApplyParallelPlanPass> {
public:
  using ApplyParallelPlanPassBase::ApplyParallelPlanPassBase;

  void runOnOperation() override {
    if (failed(apply()))
      signalPassFailure();
  }

private:
  LogicalResult apply();
  /// Placements of a value over the mesh, `R` on axes of size 1.
  SmallVector<Placement> onMesh(ArrayRef<Placement> perAxis) const;
  /// Checks that the plan shards dims that `type` has; `what` names it.
  /// Errors point at `anchor`'s location (the module's: a function's
  /// location would quote its whole signature). Dims that the degrees do
  /// not divide are sharded unevenly, as DTensor does.
  LogicalResult checkShardedDims(Operation *anchor, StringRef what,
                                 RankedTensorType type,
                                 ArrayRef<Placement> placements) const;

  ResolvedMesh mesh;
};

/// The first tied name (a key of the module's titan.state_dict that names
/// another name of a parameter of `params`) that rule `index` of `plan`
/// matches, and the parameter's own name; nullopt if none.
std::optional<std::pair<StringRef, StringRef>>
tiedNameMatchedBy(ModuleOp module, const ParallelPlan &plan, size_t index,
                  const llvm::StringMap<SmallVector<Placement>> &params) {
  auto stateDict =
      module->getAttrOfType<DictionaryAttr>(TitanDialect::kStateDictAttrName);
  if (!stateDict)
    return std::nullopt;
  for (NamedAttribute entry : stateDict) {
    StringRef parameter = cast<StringAttr>(entry.getValue()).getValue();
    if (plan.ruleOf(entry.getName().getValue()) == index &&
        params.count(parameter))
      return std::pair(entry.getName().getValue(), parameter);
  }
  return std::nullopt;
}

SmallVector<Placement>
ApplyParallelPlanPass::onMesh(ArrayRef<Placement> perAxis) const {
  SmallVector<Placement> result;
  for (unsigned axis = 0; axis < NumMeshAxes; ++axis)
    result.push_back(mesh.getSize(MeshAxis(axis)) > 1 ? perAxis[axis]
                                                      : Placement::replicate());
  return result;
}

LogicalResult
ApplyParallelPlanPass::checkShardedDims(Operation *anchor, StringRef what,
                                        RankedTensorType type,
                                        ArrayRef<Placement> placements) const {
  for (const Placement &p : placements)
    if (p.isShard() && p.getDim() >= type.getRank())
      return emitError(anchor->getLoc())
             << "titan-apply-parallel-plan: the plan shards dim " << p.getDim()
             << " of " << what << ", which has rank " << type.getRank()
             << "; fix the plan's placement for it";
  return success();
}

LogicalResult ApplyParallelPlanPass::apply() {
  ModuleOp module = getOperation();
  // Errors point at the module's location without printing the module.
  auto fail = [&](const Twine &message) {
    return emitError(module.getLoc())
           << "titan-apply-parallel-plan: " << message;
  };

  // Degrees, resolved as titan-compile resolves a config's.
  ParallelismConfig degrees;
  degrees.dataParallelReplicateDegree = dpReplicate;
  degrees.dataParallelShardDegree = dpShard;
  degrees.contextParallelDegree = cp;
  degrees.tensorParallelDegree = tp;
  llvm::Expected<ResolvedMesh> resolved = resolveMesh(degrees, worldSize);
  if (!resolved)
    return fail(llvm::toString(resolved.takeError()));
  mesh = *resolved;

  ParallelPlan plan = ParallelPlan::llamaDefault();
  if (!planFile.empty()) {
    llvm::Expected<ParallelPlan> loaded = ParallelPlan::load(planFile);
    if (!loaded)
      return fail(llvm::toString(loaded.takeError()));
    plan = std::move(*loaded);
  }

  // The function to annotate: the training step if there is one.
  auto function = module.lookupSymbol<func::FuncOp>("train_step");
  if (!function)
    function = module.lookupSymbol<func::FuncOp>("forward");
  if (!function)
    return fail("no @train_step or @forward to parallelize");
  if (!module.getOps<MeshOp>().empty())
    return fail("the module already has a mesh");

  OpBuilder builder(module.getContext());
  builder.setInsertionPointToStart(module.getBody());
  SmallVector<Attribute> axisNames;
  for (unsigned axis = 0; axis < NumMeshAxes; ++axis)
    axisNames.push_back(builder.getStringAttr(getMeshAxisName(MeshAxis(axis))));
  MeshOp::create(builder, module.getLoc(), "mesh",
                 builder.getArrayAttr(axisNames),
                 builder.getDenseI64ArrayAttr(mesh.getSizes()));
  auto meshRef = FlatSymbolRefAttr::get(module.getContext(), "mesh");
  auto makeAttr = [&](ArrayRef<Placement> placements) {
    return PlacementsAttr::get(module.getContext(), meshRef, placements);
  };

  // Placements by argument name: parameters first, then everything derived
  // from a parameter's name (optimizer state, updates, gradients).
  Placement replicate = Placement::replicate();
  llvm::StringMap<SmallVector<Placement>> paramPlacements;
  llvm::SmallDenseSet<size_t> matchedRules;
  SmallVector<Placement> replicated =
      onMesh({replicate, replicate, replicate, replicate});
  SmallVector<Placement> batch =
      onMesh({Placement::shard(0), Placement::shard(0), Placement::shard(1),
              replicate});
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    if (!name || getArgRole(function, i) != ArgRole::Param)
      continue;
    // FSDP shards dim 0, or dim 1 of a weight whose dim 0 tensor parallelism
    // already splits: the two axes then shard disjoint dims, so the gradient
    // is reduce-scattered over "fsdp" without touching the "tp" layout. A
    // 0-d parameter (a learned scale) has no dim to shard: it is replicated
    // and its gradient all-reduced, as DDP's.
    Placement tpPlacement = plan.placementOf(name.getValue());
    auto type = cast<RankedTensorType>(function.getArgument(i).getType());
    int64_t fsdpDim = mesh.getSize(TpAxis) > 1 && tpPlacement.isShard(0) &&
                              type.getRank() >= 2
                          ? 1
                          : 0;
    Placement fsdp =
        type.getRank() == 0 ? replicate : Placement::shard(fsdpDim);
    paramPlacements[name.getValue()] =
        onMesh({replicate, fsdp, replicate, tpPlacement});
    if (std::optional<size_t> rule = plan.ruleOf(name.getValue()))
      matchedRules.insert(*rule);
  }
  // A plan that names none of the model's parameters (the built-in plan is
  // torchtitan's Llama names) leaves tensor parallelism with nothing to
  // split: every weight whole on each "tp" rank, and its collectives.
  if (mesh.getSize(TpAxis) > 1) {
    std::string which = planFile.empty()
                            ? std::string("the built-in plan (torchtitan's "
                                          "Llama names)")
                            : "'" + planFile + "'";
    if (matchedRules.empty())
      emitWarning(module.getLoc())
          << "tensor parallelism over " << mesh.getSize(TpAxis)
          << " ranks, but no parameter of the model matches a rule of " << which
          << ": every weight stays whole on each rank; name the model's "
             "parameters in [parallelism] tp_plan (docs/config.md)";
    else
      for (auto [index, rule] : llvm::enumerate(plan.getRules())) {
        if (matchedRules.contains(index))
          continue;
        InFlightDiagnostic warning = emitWarning(module.getLoc())
                                     << "rule '" << rule.pattern << "' of "
                                     << which
                                     << " matches no parameter of the model";
        // A tied parameter's other name (an output projection tied to the
        // embedding) is no parameter of its own.
        if (auto tied = tiedNameMatchedBy(module, plan, index, paramPlacements))
          warning << ": '" << tied->first
                  << "' is another name of the tied parameter '" << tied->second
                  << "'; rules place a tied parameter by that first name";
      }
  }
  /// The placements of a value named `name` (an argument of `role`, or a
  /// result).
  auto placementsOf = [&](StringRef name, std::optional<ArgRole> role,
                          Type type) -> SmallVector<Placement> {
    if (role == ArgRole::Param) {
      auto it = paramPlacements.find(name);
      if (it != paramPlacements.end())
        return it->second;
    }
    if (auto slot = parsePrefixedParamSlot(name)) {
      auto it = paramPlacements.find(slot->second);
      if (it != paramPlacements.end())
        return it->second;
    }
    if (role == ArgRole::Input && cast<RankedTensorType>(type).getRank() >= 2)
      return batch;
    if (name == "logits")
      return batch;
    return replicated;
  };

  SmallVector<Attribute> argPlacements;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    Type type = function.getArgument(i).getType();
    SmallVector<Placement> placements = placementsOf(
        name ? name.getValue() : "", getArgRole(function, i), type);
    std::string what = name ? "'" + name.getValue().str() + "'"
                            : "argument #" + std::to_string(i);
    if (failed(checkShardedDims(module, what, cast<RankedTensorType>(type),
                                placements)))
      return failure();
    argPlacements.push_back(makeAttr(placements));
  }
  setEachArgAttr(function, TitanDialect::kPlacementsAttrName,
                 [&](unsigned i) { return argPlacements[i]; });
  // Sequence parallelism: the normalized activations [batch, seq, dim] are
  // sharded along the sequence over "tp" as well.
  if (sequenceParallel && mesh.getSize(TpAxis) > 1) {
    SmallVector<Placement> sequenceSharded =
        onMesh({Placement::shard(0), Placement::shard(0), Placement::shard(1),
                Placement::shard(1)});
    function.walk([&](Operation *op) {
      if (!isa<RmsNormOp, LayerNormOp>(op) ||
          cast<RankedTensorType>(op->getResult(0).getType()).getRank() != 3)
        return;
      op->setAttr(
          TitanDialect::kPlacementsAttrName,
          ArrayAttr::get(module.getContext(), {makeAttr(sequenceSharded)}));
    });
  }
  // Without loss parallelism (disable_loss_parallel), the loss needs the
  // whole vocabulary: propagation gathers the logits before it, as
  // torchtitan's output projection with output_layouts=Replicate().
  if (!lossParallel) {
    auto unit = UnitAttr::get(module.getContext());
    function.walk([&](CrossEntropyOp op) { op.setReplicatedVocabAttr(unit); });
    function.walk(
        [&](CrossEntropyGradOp op) { op.setReplicatedVocabAttr(unit); });
  }
  setEachResultAttr(
      function, TitanDialect::kPlacementsAttrName, [&](unsigned i) {
        auto name = function.getResultAttrOfType<StringAttr>(
            i, TitanDialect::kNameAttrName);
        return makeAttr(placementsOf(name ? name.getValue() : "", std::nullopt,
                                     function.getResultTypes()[i]));
      });
  return success();
}

} // namespace
