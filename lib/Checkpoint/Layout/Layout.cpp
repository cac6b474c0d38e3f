//===- Layout.cpp - The checkpoint plan of a partitioned program ----------===//

#include "titan/Checkpoint/Layout.h"

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/ElementTypes.h"
#include "titan/Dialect/GlobalShape.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Placement/PlacementAlgebra.h"
#include "titan/Support/FormatInts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::titan;

/// The checkpoint dtype of a tensor element type, if it has one.
static std::optional<ElementType> dtypeOf(Type type) {
  std::optional<ElementType> dtype = getElementTypeOf(type);
  if (!dtype || !isTorchDType(*dtype))
    return std::nullopt;
  return dtype;
}

namespace {

/// Builds the plan tensor by tensor from @train_step's arguments.
class LayoutBuilder {
public:
  LayoutBuilder(func::FuncOp function, const DeviceMesh &mesh)
      : function(function), mesh(mesh) {}

  /// Adds tensor `key` of `kind` holding argument `index` to `plan`.
  LogicalResult add(StringRef key, unsigned index, CheckpointPlan &plan,
                    PlanTensorKind kind = PlanTensorKind::State);

  /// Adds buffer `key` named `source`, of global type `type` (`loc` names
  /// it in errors): every rank holds it whole, and the runtime saves it from
  /// the executable's buffers/ folder, which holds it as the model file does
  /// (a program may keep a buffer permuted or sharded).
  LogicalResult addBuffer(StringRef key, StringRef source,
                          RankedTensorType type, Location loc,
                          CheckpointPlan &plan);

private:
  /// Adds tensor `key` of `kind` taken from `source`, of `type` (`loc` names
  /// it in errors), whose ranks hold `layout`'s boxes.
  LogicalResult addLayout(StringRef key, StringRef source,
                          RankedTensorType type, Location loc,
                          ArgumentLayout layout, CheckpointPlan &plan,
                          PlanTensorKind kind);

  func::FuncOp function;
  const DeviceMesh &mesh;
};

} // namespace

FailureOr<ArgumentLayout>
mlir::titan::computeArgumentLayout(func::FuncOp function, unsigned index,
                                   const DeviceMesh &mesh) {
  BlockArgument arg = function.getArgument(index);
  auto nameAttr =
      function.getArgAttrOfType<StringAttr>(index, TitanDialect::kNameAttrName);
  StringRef name = nameAttr ? nameAttr.getValue() : StringRef("?");
  auto emitArgError = [&]() {
    return mlir::emitError(arg.getLoc()) << "layout of '" << name << "': ";
  };
  auto type = cast<RankedTensorType>(arg.getType());
  auto placements = function.getArgAttrOfType<PlacementsAttr>(
      index, TitanDialect::kPlacementsAttrName);
  if (!placements || placements.size() != mesh.getNumAxes())
    return emitArgError() << "no placements over the mesh";
  ArgumentLayout layout;
  for (const Placement &placement : placements.getPlacements())
    if (placement.isPartial())
      return emitArgError()
             << "a partial value (" << placement.str() << ") has no box";
  layout.globalShape = getArgGlobalShape(function, index, mesh.getSizes());
  for (int64_t rank = 0; rank < mesh.getNumRanks(); ++rank) {
    llvm::Expected<LocalShard> shard = computeLocalShapeAndGlobalOffset(
        layout.globalShape, mesh.getSizes(), placements.getPlacements(),
        mesh.getCoordinate(rank));
    if (!shard)
      return emitArgError() << llvm::toString(shard.takeError());
    // An uneven shard is the first part of the rank's (padded) local type.
    bool fits = llvm::all_of(
        llvm::zip_equal(shard->shape, type.getShape()),
        [](auto sizes) { return std::get<0>(sizes) <= std::get<1>(sizes); });
    bool exact = shard->shape == ArrayRef<int64_t>(type.getShape());
    if (!fits || (!exact && !function.getArgAttr(
                                index, TitanDialect::kGlobalShapeAttrName)))
      return emitArgError()
             << "rank " << rank << " holds " << formatInts(shard->shape)
             << ", not the local type " << type;
    layout.boxes.push_back(IndexBox{shard->offset, shard->shape});
  }
  return layout;
}

LogicalResult LayoutBuilder::add(StringRef key, unsigned index,
                                 CheckpointPlan &plan, PlanTensorKind kind) {
  BlockArgument argument = function.getArgument(index);
  FailureOr<ArgumentLayout> layout =
      computeArgumentLayout(function, index, mesh);
  if (failed(layout))
    return failure();
  return addLayout(
      key,
      function.getArgAttrOfType<StringAttr>(index, TitanDialect::kNameAttrName)
          .getValue(),
      cast<RankedTensorType>(argument.getType()), argument.getLoc(),
      std::move(*layout), plan, kind);
}

LogicalResult LayoutBuilder::addBuffer(StringRef key, StringRef source,
                                       RankedTensorType type, Location loc,
                                       CheckpointPlan &plan) {
  ArgumentLayout layout;
  layout.globalShape.assign(type.getShape().begin(), type.getShape().end());
  IndexBox whole{SmallVector<int64_t>(type.getRank(), 0), layout.globalShape};
  layout.boxes.assign(mesh.getNumRanks(), whole);
  return addLayout(key, source, type, loc, std::move(layout), plan,
                   PlanTensorKind::Buffer);
}

LogicalResult LayoutBuilder::addLayout(StringRef key, StringRef source,
                                       RankedTensorType type, Location loc,
                                       ArgumentLayout layout,
                                       CheckpointPlan &plan,
                                       PlanTensorKind kind) {
  std::optional<ElementType> dtype = dtypeOf(type.getElementType());
  if (!dtype)
    return mlir::emitError(loc)
           << "checkpoint layout of '" << source << "': element type "
           << type.getElementType() << " has no checkpoint dtype";
  PlanTensor tensor{key.str(),          source.str(), *dtype,
                    layout.globalShape, {},           kind};
  // The first rank holding a box writes it; its replicas only load it.
  llvm::StringSet<> written;
  tensor.boxes.reserve(layout.boxes.size());
  for (IndexBox &box : layout.boxes) {
    std::string boxKey;
    for (ArrayRef<int64_t> values :
         {ArrayRef(box.offsets), ArrayRef(box.sizes)})
      boxKey.append(reinterpret_cast<const char *>(values.data()),
                    values.size() * sizeof(int64_t));
    bool first = written.insert(boxKey).second;
    tensor.boxes.push_back(PlanBox{std::move(box), first});
  }
  plan.tensors.push_back(std::move(tensor));
  return success();
}

/// The index of each named argument of `function`.
static llvm::StringMap<unsigned> argumentsByName(func::FuncOp function) {
  llvm::StringMap<unsigned> indices;
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    if (auto name = function.getArgAttrOfType<StringAttr>(
            i, TitanDialect::kNameAttrName))
      indices[name.getValue()] = i;
  return indices;
}

FailureOr<CheckpointPlan>
mlir::titan::computeCheckpointLayout(ModuleOp module) {
  auto function = module.lookupSymbol<func::FuncOp>("train_step");
  if (!function || module.getOps<MeshOp>().empty())
    return module.emitError("the checkpoint layout needs a partitioned "
                            "@train_step (titan-compile --emit=spmd)");
  // A pipeline rank's program holds its tensors over its stage's mesh.
  FailureOr<ProgramRanks> ranks = getProgramRanks(module);
  if (failed(ranks))
    return failure();
  FailureOr<DeviceMesh> mesh = ranks->stageMesh.getDeviceMesh();
  if (failed(mesh))
    return failure();

  CheckpointPlan plan;
  plan.numRanks = mesh->getNumRanks();
  // A tensor per parameter and moment, a step per optimized parameter and
  // one per extra state_dict entry; reserved, as a PlanTensor is copied (not
  // moved) when the vector grows.
  auto stateDict =
      module->getAttrOfType<DictionaryAttr>(TitanDialect::kStateDictAttrName);
  plan.tensors.reserve(2 * function.getNumArguments() +
                       (stateDict ? stateDict.size() : 0));
  LayoutBuilder builder(function, *mesh);
  std::optional<unsigned> stepIndex;
  llvm::SmallVector<std::string> optimizedParams;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    std::optional<ArgRole> role = getArgRole(function, i);
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    if (!role || !name)
      continue;
    StringRef value = name.getValue();
    if (role == ArgRole::Input && value == "step")
      stepIndex = i;
    if (role == ArgRole::Param && failed(builder.add(value, i, plan)))
      return failure();
    if (role != ArgRole::State)
      continue;
    auto slot = parsePrefixedParamSlot(value);
    if (!slot || (slot->first != ParamSlot::ExpAvg &&
                  slot->first != ParamSlot::ExpAvgSq))
      return function.emitError("checkpoint layout: unknown optimizer state '")
             << value << "'";
    auto [moment, fqn] = *slot;
    // torchtitan's key: optimizer.state.<fqn>.exp_avg(_sq).
    StringRef key = getParamSlotPrefix(moment).drop_back();
    if (failed(
            builder.add(("optimizer.state." + fqn + "." + key).str(), i, plan)))
      return failure();
    if (moment == ParamSlot::ExpAvg)
      optimizedParams.push_back(fqn.str());
  }
  if (stepIndex) {
    for (const std::string &fqn : optimizedParams)
      if (failed(builder.add("optimizer.state." + fqn + ".step", *stepIndex,
                             plan)))
        return failure();
    // torchtitan's trainer saves its step as a Python int (a bytes entry).
    auto type =
        cast<RankedTensorType>(function.getArgument(*stepIndex).getType());
    std::optional<ElementType> dtype = dtypeOf(type.getElementType());
    if (type.getRank() != 0 || !dtype)
      return function.emitError("checkpoint layout: the step is ")
             << type << ", not a 0-d tensor of a checkpoint dtype";
    plan.values.push_back(
        PlanValue{"train_state.step",
                  function
                      .getArgAttrOfType<StringAttr>(*stepIndex,
                                                    TitanDialect::kNameAttrName)
                      .str(),
                  *dtype});
  }
  // What else the model's state_dict holds: the other names of tied
  // parameters and the buffers.
  if (stateDict) {
    llvm::StringMap<unsigned> argumentOf = argumentsByName(function);
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    llvm::StringMap<unsigned> forwardArgumentOf;
    if (forward)
      forwardArgumentOf = argumentsByName(forward);
    for (NamedAttribute entry : stateDict) {
      StringRef key = entry.getName().getValue();
      StringRef name = cast<StringAttr>(entry.getValue()).getValue();
      auto found = argumentOf.find(name);
      std::optional<ArgRole> role;
      if (found != argumentOf.end())
        role = getArgRole(function, found->second);
      if (role == ArgRole::Param) {
        if (key != name && failed(builder.add(key, found->second, plan,
                                              PlanTensorKind::Alias)))
          return failure();
        continue;
      }
      // A buffer, as the model file holds it: @forward's argument (also one
      // the step does not read, a causal mask replaced by causal
      // attention), else the step's; a parameter in neither is another
      // pipeline rank's.
      auto unpartitioned = forwardArgumentOf.find(name);
      if (unpartitioned != forwardArgumentOf.end() &&
          getArgRole(forward, unpartitioned->second) == ArgRole::Buffer) {
        BlockArgument argument = forward.getArgument(unpartitioned->second);
        if (failed(builder.addBuffer(key, name,
                                     cast<RankedTensorType>(argument.getType()),
                                     argument.getLoc(), plan)))
          return failure();
      } else if (role == ArgRole::Buffer) {
        FailureOr<ArgumentLayout> layout =
            computeArgumentLayout(function, found->second, *mesh);
        if (failed(layout))
          return failure();
        BlockArgument argument = function.getArgument(found->second);
        auto type = RankedTensorType::get(
            layout->globalShape,
            cast<RankedTensorType>(argument.getType()).getElementType());
        if (failed(builder.addBuffer(key, name, type, argument.getLoc(), plan)))
          return failure();
      }
    }
  }
  if (llvm::Error err = validateCheckpointPlan(plan))
    return module.emitError(llvm::toString(std::move(err)));
  return plan;
}
