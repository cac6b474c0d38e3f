//===- Spmdize.cpp - the local program of one rank ------------------------===//
//
// Implements titan-spmdize (see passes/Passes.td for the contract) as a
// dialect conversion: a context-aware type converter gives every value of an
// annotated global function the local type of its shard (from the value's
// placements), the function signature is converted with it, every op is
// replaced by its partition (ShardingRuleOpInterface::partition), and every
// titan.redistribute by a titan.local_redistribute, which
// titan-redistribute-to-collectives turns into collectives. The placements
// are checked, and each op's choice per mesh axis explained, before
// anything is rewritten, so that every error names the value and the mesh
// axis and no pattern can fail halfway.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Dialect/Partition.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Passes.h"

#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <map>

namespace mlir::titan {
#define GEN_PASS_DEF_SPMDIZEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The layouts of the values of one global function and the checked
/// partition context of each op.
class GlobalFunction {
public:
  explicit GlobalFunction(func::FuncOp function) : function(function) {}

  /// Reads and checks every layout and every op's placements.
  LogicalResult analyze();

  func::FuncOp getFunction() const { return function; }
  /// The layout of a value of the global program.
  const ValueLayout &getLayout(Value value) const {
    return layouts.find(value)->second;
  }
  /// The layout of `value` if it is a value of the global program.
  const ValueLayout *findLayout(Value value) const {
    auto it = layouts.find(value);
    return it == layouts.end() ? nullptr : &it->second;
  }
  /// The local type of a value of the global program.
  RankedTensorType getLocalType(const ValueLayout &layout) const {
    return mesh ? titan::getLocalType(layout.global, *mesh, layout.placements)
                : layout.global;
  }
  /// `titan.global_shape` for a value laid out as `layout` when its local
  /// type times the ranks does not give its global shape (uneven shards),
  /// else null.
  Attribute getRecordedGlobalShape(const ValueLayout &layout) const;
  /// The floating-point operations each rank spends on padding, by rank
  /// (empty without a mesh): per op, its global FLOPs times the padded
  /// share of its factors less the rank's share.
  SmallVector<int64_t> getPaddingFlops() const;
  /// The layouts the function declares for its results.
  ArrayRef<ValueLayout> getResultLayouts() const { return resultLayouts; }
  /// The checked context of an op with a sharding rule.
  PartitionContext *getContext(Operation *op) {
    auto it = contexts.find(op);
    return it == contexts.end() ? nullptr : &it->second;
  }
  /// A partition context for `op` from the layouts of its values.
  PartitionContext makeContext(Operation *op) const;

private:
  /// Checks one layout (mesh, placements, static sharded dims; uneven ones
  /// are padded, see getLocalType);
  /// `describe` names the value in messages.
  LogicalResult checkLayout(Operation *anchor, Attribute attr, Type type,
                            const Twine &describe, ValueLayout &layout);
  /// Checks that `op` can be partitioned as its placements say.
  LogicalResult checkOp(Operation *op);

  func::FuncOp function;
  /// The mesh every placement of the function names (null: none does).
  std::optional<DeviceMesh> mesh;
  FlatSymbolRefAttr meshSymbol;
  DenseMap<Value, ValueLayout> layouts;
  SmallVector<ValueLayout> resultLayouts;
  DenseMap<Operation *, PartitionContext> contexts;
};

} // namespace

LogicalResult GlobalFunction::checkLayout(Operation *anchor, Attribute attr,
                                          Type type, const Twine &describe,
                                          ValueLayout &layout) {
  layout.global = dyn_cast<RankedTensorType>(type);
  if (!layout.global)
    return anchor->emitError()
           << describe << ": titan-spmdize handles ranked tensors only, got "
           << type;
  if (!attr) {
    layout.placements.assign(mesh ? mesh->getNumAxes() : 0,
                             Placement::replicate());
    return success();
  }
  auto placements = dyn_cast<PlacementsAttr>(attr);
  if (!placements)
    return anchor->emitError()
           << describe << ": expected #titan.placements, got " << attr;
  if (placements.getMesh() != meshSymbol)
    return anchor->emitError()
           << describe << ": placements on mesh " << placements.getMesh()
           << " in a function placed on mesh " << meshSymbol
           << "; titan-spmdize partitions a function over one mesh";
  layout.placements.assign(placements.getPlacements().begin(),
                           placements.getPlacements().end());
  ArrayRef<int64_t> shape = layout.global.getShape();
  if (llvm::Error error = verifyPlacements(getStaticShape(shape),
                                           mesh->getSizes(), layout.placements))
    return anchor->emitError()
           << describe << ": " << llvm::toString(std::move(error));
  for (int64_t dim = 0, rank = shape.size(); dim < rank; ++dim) {
    SmallVector<unsigned> axes = layout.getAxesSharding(dim);
    if (!axes.empty() && ShapedType::isDynamic(shape[dim]))
      return anchor->emitError()
             << describe << ": dim " << dim
             << " is dynamic and sharded over mesh axis \""
             << mesh->getAxisName(axes.front())
             << "\"; titan-spmdize needs static sizes for sharded dims";
  }
  return success();
}

LogicalResult GlobalFunction::analyze() {
  if (!llvm::hasSingleElement(function.getBody()))
    return function.emitError(
        "titan-spmdize handles functions of one block only");
  // The mesh: the first one a placement names.
  StringRef name = TitanDialect::kPlacementsAttrName;
  Block &body = function.getBody().front();
  auto noteMesh = [&](Attribute attr) {
    if (auto placements = dyn_cast_or_null<PlacementsAttr>(attr))
      if (!meshSymbol)
        meshSymbol = placements.getMesh();
  };
  for (unsigned i : llvm::seq(function.getNumArguments()))
    noteMesh(function.getArgAttr(i, name));
  for (unsigned i : llvm::seq(function.getNumResults()))
    noteMesh(function.getResultAttr(i, name));
  for (Operation &op : body.without_terminator()) {
    if (auto redistribute = dyn_cast<RedistributeOp>(op))
      noteMesh(redistribute.getTo());
    if (auto attrs = op.getAttrOfType<ArrayAttr>(name))
      for (Attribute attr : attrs)
        noteMesh(attr);
  }
  if (meshSymbol) {
    MeshOp meshOp = MeshOp::lookup(function, meshSymbol);
    if (!meshOp)
      return function.emitError()
             << "placements refer to unknown mesh " << meshSymbol;
    FailureOr<DeviceMesh> deviceMesh = meshOp.getDeviceMesh();
    if (failed(deviceMesh))
      return failure();
    mesh = std::move(*deviceMesh);
  }

  auto describe = [&](StringRef what, unsigned index, StringAttr valueName) {
    std::string text = (what + " #" + Twine(index)).str();
    if (valueName)
      text += " '" + valueName.str() + "'";
    return text;
  };
  for (BlockArgument arg : body.getArguments()) {
    unsigned index = arg.getArgNumber();
    if (failed(checkLayout(function, function.getArgAttr(index, name),
                           arg.getType(),
                           describe("argument", index,
                                    function.getArgAttrOfType<StringAttr>(
                                        index, TitanDialect::kNameAttrName)),
                           layouts[arg])))
      return failure();
  }
  for (auto [index, type] : llvm::enumerate(function.getResultTypes()))
    if (failed(checkLayout(function, function.getResultAttr(index, name), type,
                           describe("result", index,
                                    function.getResultAttrOfType<StringAttr>(
                                        index, TitanDialect::kNameAttrName)),
                           resultLayouts.emplace_back())))
      return failure();
  for (Operation &op : body.without_terminator()) {
    auto placements = op.getAttrOfType<ArrayAttr>(name);
    for (OpResult result : op.getResults()) {
      Attribute attr;
      if (placements)
        attr = placements[result.getResultNumber()];
      else if (auto redistribute = dyn_cast<RedistributeOp>(op))
        attr = redistribute.getTo();
      if (failed(checkLayout(&op, attr, result.getType(),
                             "result #" + Twine(result.getResultNumber()),
                             layouts[result])))
        return failure();
    }
  }

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
    const ValueLayout &value = getLayout(operand);
    const ValueLayout &declared = resultLayouts[index];
    if (value.placements != declared.placements)
      return ret.emitError()
             << "returns a value placed as "
             << PlacementsAttr::get(function.getContext(), meshSymbol,
                                    value.placements)
             << " as result #" << index << ", declared as "
             << PlacementsAttr::get(function.getContext(), meshSymbol,
                                    declared.placements)
             << "; redistribute it before returning";
  }
  for (Operation &op : body.without_terminator())
    if (failed(checkOp(&op)))
      return failure();
  return success();
}

Attribute
GlobalFunction::getRecordedGlobalShape(const ValueLayout &layout) const {
  if (!mesh)
    return nullptr;
  ArrayRef<int64_t> shape = layout.global.getShape();
  RankedTensorType local = getLocalType(layout);
  for (int64_t dim = 0, rank = shape.size(); dim < rank; ++dim) {
    int64_t implied = local.getDimSize(dim);
    for (unsigned axis : layout.getAxesSharding(dim))
      implied *= mesh->getSize(axis);
    if (implied != shape[dim])
      return DenseI64ArrayAttr::get(layout.global.getContext(), shape);
  }
  return nullptr;
}

SmallVector<int64_t> GlobalFunction::getPaddingFlops() const {
  if (!mesh)
    return {};
  SmallVector<double> wasted(mesh->getNumRanks(), 0.0);
  func::FuncOp body = function;
  for (Operation &op : body.getBody().front().without_terminator()) {
    auto found = contexts.find(&op);
    auto cost = dyn_cast<CostOpInterface>(op);
    if (found == contexts.end() || !cost)
      continue;
    const PartitionContext &context = found->second;
    OpShardingRule rule = cast<ShardingRuleOpInterface>(&op).getShardingRule();
    // The axes sharding each factor, outermost first.
    std::map<int64_t, SmallVector<unsigned>> factorAxes;
    for (auto [axis, choice] : llvm::enumerate(context.getChoices()))
      if (choice.kind == AxisChoice::Kind::Shard)
        factorAxes[choice.index].push_back(axis);
    // Each factor's chunk on a rank (nested torch.chunk) over its size.
    auto share = [&](int64_t factor, ArrayRef<unsigned> axes,
                     ArrayRef<int64_t> coordinate) {
      int64_t size = rule.factorSizes[factor];
      int64_t chunk = size;
      for (unsigned axis : axes)
        chunk =
            getChunkExtent(chunk, mesh->getSize(axis), coordinate[axis]).size;
      return double(chunk) / double(size);
    };
    SmallVector<int64_t> first(mesh->getNumAxes(), 0);
    double padded = 1;
    bool uneven = false;
    for (const auto &[factor, axes] : factorAxes) {
      int64_t ways = 1;
      for (unsigned axis : axes)
        ways *= mesh->getSize(axis);
      uneven |= rule.factorSizes[factor] % ways != 0;
      padded *= share(factor, axes, first);
    }
    if (!uneven)
      continue;
    double flops = double(cost.getFlops());
    for (int64_t rank = 0; rank < mesh->getNumRanks(); ++rank) {
      SmallVector<int64_t> coordinate = mesh->getCoordinate(rank);
      double useful = 1;
      for (const auto &[factor, axes] : factorAxes)
        useful *= share(factor, axes, coordinate);
      wasted[rank] += flops * (padded - useful);
    }
  }
  return llvm::map_to_vector(wasted,
                             [](double w) { return int64_t(std::llround(w)); });
}

PartitionContext GlobalFunction::makeContext(Operation *op) const {
  auto layoutsOf = [&](ValueRange values) {
    return llvm::map_to_vector(values,
                               [&](Value value) { return getLayout(value); });
  };
  return PartitionContext(op, mesh ? &*mesh : nullptr, meshSymbol,
                          layoutsOf(op->getOperands()),
                          layoutsOf(op->getResults()));
}

LogicalResult GlobalFunction::checkOp(Operation *op) {
  if (isa<RedistributeOp>(op) || isPipelineTransfer(op))
    return success();
  if (isa<CollectiveOpInterface, AxisIndexOp, LocalRedistributeOp>(op))
    return op->emitError()
           << "'" << op->getName()
           << "' is an op of the local program; the global program "
              "communicates through titan.redistribute only";
  if (auto ruled = dyn_cast<ShardingRuleOpInterface>(op)) {
    PartitionContext context = makeContext(op);
    if (failed(ruled.checkPartition(context)))
      return failure();
    contexts.try_emplace(op, std::move(context));
    return success();
  }
  // An op without a rule runs as it is on replicated values only.
  for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
    for (auto [axis, placement] : llvm::enumerate(getLayout(value).placements))
      if (!placement.isReplicate())
        return op->emitOpError()
               << "has no sharding rule, so titan-spmdize computes it only "
                  "on replicated values, but a value is "
               << placement.str() << " on mesh axis \""
               << mesh->getAxisName(axis)
               << "\"; redistribute it to R or give the op a rule";
  return success();
}

namespace {

/// Replaces the ops of the function being converted by their partitions and
/// titan.redistribute by titan.local_redistribute.
class PartitionPattern : public ConversionPattern {
public:
  PartitionPattern(const TypeConverter &converter, MLIRContext *context,
                   GlobalFunction &global)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1,
                          context),
        global(global) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (isa<func::FuncOp, func::ReturnOp>(op))
      return failure();
    if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
      const ValueLayout &from = global.getLayout(redistribute.getInput());
      const ValueLayout &to = global.getLayout(redistribute.getResult());
      if (from.placements == to.placements) {
        rewriter.replaceOp(op, operands[0]);
        return success();
      }
      PartitionContext context = global.makeContext(op);
      Value local = context.buildRedistribute(rewriter, op->getLoc(),
                                              operands[0], from.global,
                                              from.placements, to.placements);
      if (Attribute microbatch = op->getAttr(TitanDialect::kMicrobatchAttrName))
        local.getDefiningOp()->setAttr(TitanDialect::kMicrobatchAttrName,
                                       microbatch);
      rewriter.replaceOp(op, local);
      return success();
    }
    // A pipeline stage sends and receives each rank's own part.
    if (auto recv = dyn_cast<RecvOp>(op); recv && isPipelineTransfer(op)) {
      auto local = RecvOp::create(
          rewriter, op->getLoc(),
          global.getLocalType(global.getLayout(recv.getResult())),
          recv.getMeshAttr(), recv.getAxes(), recv.getPeerAttr(),
          recv.getTagAttr());
      rewriter.replaceOp(op, local->getResults());
      return success();
    }
    if (PartitionContext *context = global.getContext(op)) {
      FailureOr<SmallVector<Value>> local =
          cast<ShardingRuleOpInterface>(op).partition(rewriter, operands,
                                                      *context);
      if (failed(local))
        return failure();
      rewriter.replaceOp(op, *local);
      return success();
    }
    // An op without a rule, on replicated values: the op itself.
    Operation *local = rewriter.clone(*op);
    local->setOperands(operands);
    rewriter.replaceOp(op, local->getResults());
    return success();
  }

private:
  GlobalFunction &global;
};

/// Gives the function its local signature.
class SignaturePattern : public OpConversionPattern<func::FuncOp> {
public:
  SignaturePattern(const TypeConverter &converter, MLIRContext *context,
                   GlobalFunction &global)
      : OpConversionPattern(converter, context), global(global) {}

  LogicalResult
  matchAndRewrite(func::FuncOp function, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (function != global.getFunction())
      return failure();
    Block &body = function.getBody().front();
    TypeConverter::SignatureConversion signature(body.getNumArguments());
    for (BlockArgument arg : body.getArguments())
      signature.addInputs(arg.getArgNumber(),
                          getTypeConverter()->convertType(arg));
    rewriter.applySignatureConversion(&body, signature, getTypeConverter());
    SmallVector<Type> results = llvm::map_to_vector(
        global.getResultLayouts(), [&](const ValueLayout &layout) -> Type {
          return global.getLocalType(layout);
        });
    rewriter.modifyOpInPlace(function, [&] {
      function.setType(FunctionType::get(
          function.getContext(), signature.getConvertedTypes(), results));
      function->setAttr(kConvertedAttrName, rewriter.getUnitAttr());
    });
    return success();
  }

  /// Marks the function whose signature is converted (removed afterwards).
  static constexpr StringLiteral kConvertedAttrName =
      "titan.spmdize_signature_converted";

private:
  GlobalFunction &global;
};

/// Returns the local results.
class ReturnPattern : public OpConversionPattern<func::ReturnOp> {
public:
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(func::ReturnOp ret, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<func::ReturnOp>(ret, adaptor.getOperands());
    return success();
  }
};

/// Whether `function` is a global program: one of its arguments, results
/// or ops carries placements.
bool hasPlacements(func::FuncOp function) {
  StringRef name = TitanDialect::kPlacementsAttrName;
  for (unsigned i = 0; i < function.getNumArguments(); ++i)
    if (function.getArgAttr(i, name))
      return true;
  for (unsigned i = 0; i < function.getNumResults(); ++i)
    if (function.getResultAttr(i, name))
      return true;
  return function
      .walk([&](Operation *op) {
        return op->hasAttr(name) || isa<RedistributeOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Rewrites one global function into the program of one rank.
LogicalResult spmdize(func::FuncOp function) {
  GlobalFunction global(function);
  if (failed(global.analyze()))
    return failure();
  MLIRContext *context = function.getContext();
  SmallVector<int64_t> paddingFlops = global.getPaddingFlops();
  // The global shapes that the local types will no longer give.
  SmallVector<Attribute> argShapes, resultShapes;
  for (BlockArgument arg : function.getArguments())
    argShapes.push_back(global.getRecordedGlobalShape(global.getLayout(arg)));
  for (const ValueLayout &layout : global.getResultLayouts())
    resultShapes.push_back(global.getRecordedGlobalShape(layout));
  TypeConverter converter;
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([&](Value value) -> std::optional<Type> {
    if (const ValueLayout *layout = global.findLayout(value))
      return global.getLocalType(*layout);
    return std::nullopt;
  });

  // Every op of the global function is rewritten exactly once.
  DenseSet<Operation *> globalOps;
  function.walk([&](Operation *op) {
    if (op != function)
      globalOps.insert(op);
  });
  ConversionTarget target(*context);
  target.markUnknownOpDynamicallyLegal([&](Operation *op) {
    if (op == function)
      return function->hasAttr(SignaturePattern::kConvertedAttrName);
    return !globalOps.contains(op);
  });
  RewritePatternSet patterns(context);
  patterns.add<PartitionPattern, SignaturePattern>(converter, context, global);
  patterns.add<ReturnPattern>(converter, context);
  ConversionConfig config;
  config.foldingMode = DialectConversionFoldingMode::Never;
  if (failed(applyFullConversion(function.getOperation(), target,
                                 std::move(patterns), config)))
    return failure();
  function->removeAttr(SignaturePattern::kConvertedAttrName);
  if (llvm::any_of(paddingFlops, [](int64_t flops) { return flops != 0; }))
    function->setAttr(TitanDialect::kPaddingFlopsAttrName,
                      DenseI64ArrayAttr::get(context, paddingFlops));
  StringRef name = TitanDialect::kGlobalShapeAttrName;
  if (llvm::any_of(argShapes, [](Attribute a) { return bool(a); }))
    setEachArgAttr(function, name, [&](unsigned i) { return argShapes[i]; });
  if (llvm::any_of(resultShapes, [](Attribute a) { return bool(a); }))
    setEachResultAttr(function, name,
                      [&](unsigned i) { return resultShapes[i]; });
  return success();
}

class SpmdizePass : public titan::impl::SpmdizePassBase<SpmdizePass> {
public:
  using SpmdizePassBase::SpmdizePassBase;

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() && hasPlacements(function) &&
          failed(spmdize(function)))
        return signalPassFailure();
  }
};

} // namespace
