//===- MaterializeRedistributes.cpp - titan-materialize-redistributes -----===//
//
// Makes every change of placement that titan-propagate-placements decided an
// explicit titan.redistribute (see passes/Passes.td for the contract): one
// per (value, placements), right after the value's definition, shared by
// every use that needs it.
//
//===----------------------------------------------------------------------===//

#include "titan/CostModel/CostModel.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/ValuePlacements.h"
#include "titan/Passes.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::titan {
#define GEN_PASS_DEF_MATERIALIZEREDISTRIBUTESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Creates the redistributes of one function.
class Materializer {
public:
  Materializer(func::FuncOp func, bool remarks)
      : func(func), remarks(remarks) {}

  void run();

private:
  /// The placements of `value` (null: replicated).
  PlacementsAttr placementsOf(Value value);
  /// Whether `value`'s placements are `wanted`.
  bool hasPlacements(Value value, PlacementsAttr wanted);
  /// The redistribute of `value` to `to`, created after the value's
  /// definition (and the redistributes of it created before) on first use
  /// by `user`; `reason` says who needs it (for remarks).
  Value getRedistributed(Value value, PlacementsAttr to, Operation *user,
                         const Twine &reason);

  func::FuncOp func;
  bool remarks;
  /// Created redistributes per value, in creation order.
  DenseMap<Value, SmallVector<RedistributeOp, 1>> created;
};

} // namespace

PlacementsAttr Materializer::placementsOf(Value value) {
  return getValuePlacements(func, value);
}

bool Materializer::hasPlacements(Value value, PlacementsAttr wanted) {
  PlacementsAttr own = placementsOf(value);
  if (own)
    return own == wanted;
  return wanted.isFullyReplicated();
}

Value Materializer::getRedistributed(Value value, PlacementsAttr to,
                                     Operation *user, const Twine &reason) {
  Location loc = user->getLoc();
  SmallVector<RedistributeOp, 1> &list = created[value];
  for (RedistributeOp op : list)
    if (op.getTo() == to)
      return op.getResult();
  OpBuilder builder(func.getContext());
  if (!list.empty())
    builder.setInsertionPointAfter(list.back());
  else if (Operation *def = value.getDefiningOp())
    builder.setInsertionPointAfter(def);
  else
    builder.setInsertionPointToStart(&func.getBody().front());
  auto op = RedistributeOp::create(builder, loc, value.getType(), value, to);
  op->setAttr(TitanDialect::kPlacementsAttrName, builder.getArrayAttr({to}));
  // A redistribution has the phase of what computes the value (else of its
  // first user). It serves the module of the op that computes the value in
  // the forward and, mirroring that, of the VJP that consumes it in the
  // backward (a cotangent gathered before a block's VJPs belongs to that
  // block, as the forward's reduce-scatter after it does).
  Operation *def = value.getDefiningOp();
  copyPhase(def ? def : user, op);
  copyModulePath(def && getPhase(def) != Phase::Backward ? def : user, op);
  list.push_back(op);
  if (remarks) {
    auto type = cast<RankedTensorType>(value.getType());
    PlacementsAttr from = placementsOf(value);
    SmallVector<Placement> fromList =
        from ? SmallVector<Placement>(from.getPlacements())
             : SmallVector<Placement>(to.size(), Placement::replicate());
    MeshOp mesh = MeshOp::lookup(func, to.getMesh());
    RedistributeCost cost = estimateRedistribution(
        type.getShape(), getElementByteWidth(type.getElementType()), fromList,
        to.getPlacements(), mesh.getAxisSizes(), {});
    op->emitRemark() << formatPlacements(fromList) << " -> "
                     << formatPlacements(to.getPlacements())
                     << llvm::formatv(" ({0:F0} bytes per rank) ",
                                      cost.totalBytes)
                     << reason;
  }
  return op.getResult();
}

void Materializer::run() {
  Block &body = func.getBody().front();
  for (Operation &op : body.without_terminator()) {
    auto wanted =
        op.getAttrOfType<ArrayAttr>(TitanDialect::kOperandPlacementsAttrName);
    if (!wanted)
      continue;
    for (OpOperand &use : op.getOpOperands()) {
      auto to = cast<PlacementsAttr>(wanted[use.getOperandNumber()]);
      if (!hasPlacements(use.get(), to))
        use.set(getRedistributed(use.get(), to, &op,
                                 llvm::formatv("for operand #{0} of '{1}'",
                                               use.getOperandNumber(),
                                               op.getName())));
    }
    op.removeAttr(TitanDialect::kOperandPlacementsAttrName);
  }
  Operation *terminator = body.getTerminator();
  for (OpOperand &use : terminator->getOpOperands()) {
    unsigned index = use.getOperandNumber();
    auto pinned = func.getResultAttrOfType<PlacementsAttr>(
        index, TitanDialect::kPlacementsAttrName);
    if (pinned && !hasPlacements(use.get(), pinned))
      use.set(getRedistributed(
          use.get(), pinned, terminator,
          llvm::formatv("for result #{0} of the function: pinned by the plan",
                        index)));
  }
}

namespace {
struct MaterializeRedistributesPass
    : titan::impl::MaterializeRedistributesPassBase<
          MaterializeRedistributesPass> {
  using MaterializeRedistributesPassBase::MaterializeRedistributesPassBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock())
        Materializer(func, remarks).run();
  }
};
} // namespace
