//===- ApplyParallelPlan.cpp - mesh and argument placements ---------------===//
//
// Implements titan-apply-parallel-plan (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Config/ParallelPlan.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Passes.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::titan {
#define GEN_PASS_DEF_APPLYPARALLELPLANPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Mesh axes in DTensor mesh-dim order.
enum Axis : unsigned { DpReplicate, Fsdp, Cp, Tp, NumAxes };
constexpr const char *kAxisNames[NumAxes] = {"dp_replicate", "fsdp", "cp",
                                             "tp"};
/// The config key of each axis' degree.
constexpr const char *kAxisKeys[NumAxes] = {
    "data_parallel_replicate_degree", "data_parallel_shard_degree",
    "context_parallel_degree", "tensor_parallel_degree"};

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
  /// Checks that every sharded dim of `type` divides; `what` names it.
  /// Errors point at `anchor`'s location (the module's: a function's
  /// location would quote its whole signature).
  LogicalResult checkDivisible(Operation *anchor, StringRef what,
                               RankedTensorType type,
                               ArrayRef<Placement> placements) const;

  int64_t sizes[NumAxes] = {1, 1, 1, 1};
};

SmallVector<Placement>
ApplyParallelPlanPass::onMesh(ArrayRef<Placement> perAxis) const {
  SmallVector<Placement> result;
  for (unsigned axis = 0; axis < NumAxes; ++axis)
    result.push_back(sizes[axis] > 1 ? perAxis[axis] : Placement::replicate());
  return result;
}

LogicalResult
ApplyParallelPlanPass::checkDivisible(Operation *anchor, StringRef what,
                                      RankedTensorType type,
                                      ArrayRef<Placement> placements) const {
  for (int64_t dim = 0; dim < type.getRank(); ++dim) {
    int64_t ways = 1;
    std::string keys;
    for (unsigned axis = 0; axis < NumAxes; ++axis) {
      if (!placements[axis].isShard(dim))
        continue;
      if (placements[axis].getDim() >= type.getRank())
        break;
      ways *= sizes[axis];
      keys += (keys.empty() ? "" : " x ") +
              llvm::formatv("{0}={1}", kAxisKeys[axis], sizes[axis]).str();
    }
    if (ways > 1 && type.getDimSize(dim) % ways != 0)
      return emitError(anchor->getLoc())
             << "titan-apply-parallel-plan: " << what << " has dim " << dim
             << " of size " << type.getDimSize(dim)
             << ", which does not divide into " << ways << " shards (" << keys
             << "); choose degrees that divide it";
  }
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

  // Degrees.
  if (worldSize < 1)
    return fail("the world size must be positive");
  for (auto [value, key] :
       {std::pair<int64_t, const char *>{dpReplicate, kAxisKeys[DpReplicate]},
        {cp, kAxisKeys[Cp]},
        {tp, kAxisKeys[Tp]},
        {pp, "pipeline_parallel_degree"}})
    if (value < 1)
      return fail(llvm::formatv("{0} must be at least 1, got {1}", key, value));
  if (pp != 1)
    return fail(llvm::formatv("pipeline_parallel_degree={0} is not supported "
                              "yet: pipeline stages come with the pipeline "
                              "issue; set it to 1",
                              static_cast<int64_t>(pp)));
  int64_t others = dpReplicate * cp * tp;
  int64_t shard = dpShard;
  if (shard == -1) {
    if (worldSize % others != 0)
      return fail(llvm::formatv(
          "the world size {0} is not divisible by "
          "data_parallel_replicate_degree={1} x context_parallel_degree={2} x "
          "tensor_parallel_degree={3} = {4}, so data_parallel_shard_degree=-1 "
          "has no value",
          static_cast<int64_t>(worldSize), static_cast<int64_t>(dpReplicate),
          static_cast<int64_t>(cp), static_cast<int64_t>(tp), others));
    shard = worldSize / others;
  } else if (shard < 1) {
    return fail(llvm::formatv(
        "data_parallel_shard_degree must be -1 or at least 1, got {0}", shard));
  }
  if (others * shard != worldSize)
    return fail(llvm::formatv(
        "data_parallel_replicate_degree={0} x data_parallel_shard_degree={1} "
        "x context_parallel_degree={2} x tensor_parallel_degree={3} = {4}, "
        "but the world size is {5}; the degrees must multiply to the world "
        "size",
        static_cast<int64_t>(dpReplicate), shard, static_cast<int64_t>(cp),
        static_cast<int64_t>(tp), others * shard,
        static_cast<int64_t>(worldSize)));
  sizes[DpReplicate] = dpReplicate;
  sizes[Fsdp] = shard;
  sizes[Cp] = cp;
  sizes[Tp] = tp;

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
  for (const char *name : kAxisNames)
    axisNames.push_back(builder.getStringAttr(name));
  MeshOp::create(builder, module.getLoc(), "mesh",
                 builder.getArrayAttr(axisNames),
                 builder.getDenseI64ArrayAttr(sizes));
  auto meshRef = FlatSymbolRefAttr::get(module.getContext(), "mesh");
  auto makeAttr = [&](ArrayRef<Placement> placements) {
    return PlacementsAttr::get(module.getContext(), meshRef, placements);
  };

  // Placements by argument name: parameters first, then everything derived
  // from a parameter's name (optimizer state, updates, gradients).
  Placement replicate = Placement::replicate();
  llvm::StringMap<SmallVector<Placement>> paramPlacements;
  SmallVector<Placement> replicated =
      onMesh({replicate, replicate, replicate, replicate});
  SmallVector<Placement> batch =
      onMesh({Placement::shard(0), Placement::shard(0), Placement::shard(1),
              replicate});
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto role =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kRoleAttrName);
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    if (!role || !name || role.getValue() != "param")
      continue;
    // FSDP shards dim 0, or dim 1 of a weight whose dim 0 tensor parallelism
    // already splits: the two axes then shard disjoint dims, so the gradient
    // is reduce-scattered over "fsdp" without touching the "tp" layout.
    Placement tpPlacement = plan.placementOf(name.getValue());
    auto type = cast<RankedTensorType>(function.getArgument(i).getType());
    int64_t fsdpDim =
        sizes[Tp] > 1 && tpPlacement.isShard(0) && type.getRank() >= 2 ? 1 : 0;
    paramPlacements[name.getValue()] =
        onMesh({replicate, Placement::shard(fsdpDim), replicate, tpPlacement});
  }
  /// The placements of a value named `name` (an argument or a result).
  auto placementsOf = [&](StringRef name, StringRef role,
                          Type type) -> SmallVector<Placement> {
    for (StringRef prefix :
         {"", "exp_avg.", "exp_avg_sq.", "param.", "grad."}) {
      if (!name.starts_with(prefix))
        continue;
      auto it = paramPlacements.find(name.drop_front(prefix.size()));
      if (it != paramPlacements.end() &&
          (prefix.empty() ? role == "param" : true))
        return it->second;
    }
    if (role == "input" && cast<RankedTensorType>(type).getRank() >= 2)
      return batch;
    if (name == "logits")
      return batch;
    return replicated;
  };

  SmallVector<Attribute> argPlacements;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    auto role =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kRoleAttrName);
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    Type type = function.getArgument(i).getType();
    SmallVector<Placement> placements = placementsOf(
        name ? name.getValue() : "", role ? role.getValue() : "", type);
    std::string what = name ? "'" + name.getValue().str() + "'"
                            : "argument #" + std::to_string(i);
    if (failed(checkDivisible(module, what, cast<RankedTensorType>(type),
                              placements)))
      return failure();
    argPlacements.push_back(makeAttr(placements));
  }
  setEachArgAttr(function, TitanDialect::kPlacementsAttrName,
                 [&](unsigned i) { return argPlacements[i]; });
  // Sequence parallelism: the normalized activations [batch, seq, dim] are
  // sharded along the sequence over "tp" as well.
  if (sequenceParallel && sizes[Tp] > 1) {
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
        return makeAttr(placementsOf(name ? name.getValue() : "", "",
                                     function.getResultTypes()[i]));
      });
  return success();
}

} // namespace
