//===- PropagatePlacements.cpp - titan-propagate-placements ---------------===//
//
// Gives every tensor value of a function DTensor placements from those of its
// arguments, through the ops' sharding rules, choosing each op's placements
// by the estimated cost of the redistributions they need (the cost model),
// after spreading the known layouts as hints (PlacementHints.h). The
// placements each op needs of its operands are recorded in the IR for
// titan-materialize-redistributes. See the pass description in Passes.td for
// the algorithm and the cost model.
//
//===----------------------------------------------------------------------===//

#include "PlacementCosts.h"
#include "PlacementHints.h"
#include "titan/Dialect/AxisChoice.h"
#include "titan/Dialect/DimClasses.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>
#include <tuple>

namespace mlir::titan {
#define GEN_PASS_DEF_PROPAGATEPLACEMENTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// A decided op: its rule, the choice per mesh axis, and why (for remarks).
struct OpDecision {
  OpShardingRule rule;
  SmallVector<AxisChoice> choices;
  /// Per mesh axis (only with remarks): the chosen candidate and the cost of
  /// the choice against each alternative on that axis, e.g.
  /// `axis "x": shard operand #0 dim 0 (parallel) (0 B) over replicate
  /// (512 B)`.
  SmallVector<std::string> reasons;
  /// The layout this op requires of each operand.
  SmallVector<Layout> operandLayouts;
};

class PlacementPropagator {
public:
  PlacementPropagator(func::FuncOp func, MeshOp mesh,
                      ArrayRef<double> bandwidth, StationaryAxes stationaryAxes,
                      bool remarks)
      : func(func), mesh(mesh),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        remarks(remarks), hasBandwidth(!bandwidth.empty()),
        meshSizes(mesh.getAxisSizes()),
        bandwidth(bandwidth.empty() ? SmallVector<double>(meshSizes.size(), 1.0)
                                    : SmallVector<double>(bandwidth)),
        costs(func, this->meshSizes, this->bandwidth, std::move(stationaryAxes),
              state) {}

  LogicalResult run();

private:
  /// True when `choices` can be applied together (areChoicesValid).
  bool isValid(const OpShardingRule &rule, ArrayRef<AxisChoice> choices) const {
    return areChoicesValid(rule, choices, meshSizes);
  }
  /// The candidates on `axis` in the deterministic order: shardings
  /// proposed by the known values (operands, planned redistributions of
  /// operands, then results), partial groups, replicate.
  SmallVector<AxisChoice> candidates(Operation *op, const OpShardingRule &rule,
                                     unsigned axis) const;
  /// Decides `op` from what is known and records the consequences.
  void decide(Operation *op);
  /// Writes the placements of every value and those each op needs of its
  /// operands into the IR.
  void writePlacements();
  /// Prints a cost: bytes per rank when no bandwidths were given (`1024 B`),
  /// seconds otherwise (`1.024e-06 s`).
  std::string formatCost(double value) const {
    return hasBandwidth ? llvm::formatv("{0:e3} s", value).str()
                        : llvm::formatv("{0:F0} B", value).str();
  }
  PlacementsAttr getAttr(ArrayRef<Placement> layout) const {
    return PlacementsAttr::get(meshRef.getContext(), meshRef, layout);
  }

  func::FuncOp func;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  bool remarks;
  /// Whether the user gave per-axis bandwidths (costs are then seconds).
  bool hasBandwidth;
  SmallVector<int64_t> meshSizes;
  SmallVector<double> bandwidth;
  /// The ops with a sharding rule, in program order.
  SmallVector<Operation *> ops;
  DenseMap<Operation *, OpDecision> decisions;
  PropagationState state;
  ChoiceCosts costs;
  /// The classes of dims that are one factor across the function (lookups
  /// compress paths, hence mutable), and the (class, mesh axis) pairs some
  /// known value shards: a Partial value may be reduce-scattered onto a dim
  /// of such a class (e.g. a gradient of gathered K/V back onto the
  /// sequence, a weight gradient onto the dim FSDP shards).
  mutable DimClasses classes;
  llvm::DenseSet<std::pair<unsigned, unsigned>> shardedClasses;
};

} // namespace

SmallVector<AxisChoice>
PlacementPropagator::candidates(Operation *op, const OpShardingRule &rule,
                                unsigned axis) const {
  SmallVector<AxisChoice> result;
  auto propose = [&](ArrayRef<Placement> layout, const ValueDims &dims) {
    const Placement &p = layout[axis];
    if (!p.isShard() || p.getDim() >= static_cast<int64_t>(dims.size()))
      return;
    std::optional<int64_t> factor = getShardedFactor(rule, dims, p.getDim());
    if (!factor || !isFactorShardable(rule, *factor, axis, meshSizes, {}))
      return;
    AxisChoice choice{AxisChoice::Kind::Shard, *factor};
    if (!llvm::is_contained(result, choice))
      result.push_back(choice);
  };
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    if (const Layout *layout = state.known(operand))
      propose(*layout, rule.operandDims[index]);
    auto it = state.planned.find(operand);
    if (it != state.planned.end())
      for (const Layout &layout : it->second)
        propose(layout, rule.operandDims[index]);
  }
  for (auto [index, value] : llvm::enumerate(op->getResults()))
    if (const Layout *layout = state.known(value))
      propose(*layout, rule.resultDims[index]);
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    const Layout *layout = state.known(operand);
    if (!layout || !(*layout)[axis].isPartial())
      continue;
    for (int64_t dim : llvm::seq<int64_t>(0, rule.operandDims[index].size())) {
      if (!shardedClasses.contains({classes.find({operand, dim}), axis}))
        continue;
      Layout scattered = *layout;
      scattered[axis] = Placement::shard(dim);
      propose(scattered, rule.operandDims[index]);
    }
  }
  // A group may stay partial when every operand of it is partial of one
  // linear kind and is used only here: a partial value with several uses is
  // better reduced once than on every path.
  for (auto [index, group] : llvm::enumerate(rule.linearOperandGroups)) {
    std::optional<ReduceKind> kind;
    bool valid = true;
    for (unsigned operandIndex : group) {
      Value operand = op->getOperand(operandIndex);
      const Layout *layout = state.known(operand);
      if (!layout || !(*layout)[axis].isPartial() || !operand.hasOneUse()) {
        valid = false;
        break;
      }
      ReduceKind reduce = (*layout)[axis].getReduce();
      if ((reduce != ReduceKind::Sum && reduce != ReduceKind::Avg) ||
          (kind && *kind != reduce)) {
        valid = false;
        break;
      }
      kind = reduce;
    }
    if (valid && kind)
      result.push_back(
          {AxisChoice::Kind::Partial, static_cast<int64_t>(index), *kind});
  }
  result.push_back({AxisChoice::Kind::Replicate});
  return result;
}

void PlacementPropagator::decide(Operation *op) {
  OpDecision &decision = decisions[op];
  decision.rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
  const OpShardingRule &rule = decision.rule;
  unsigned numAxes = meshSizes.size();
  SmallVector<SmallVector<AxisChoice>> options;
  for (unsigned axis : llvm::seq(numAxes))
    options.push_back(candidates(op, rule, axis));
  // Every combination of the axes' candidates, the first axis outermost and
  // each axis in candidate order; the first cheapest valid one wins.
  SmallVector<size_t> pick(numAxes, 0), best;
  double bestCost = std::numeric_limits<double>::infinity();
  auto choicesOf = [&](ArrayRef<size_t> indices) {
    SmallVector<AxisChoice> choices;
    for (auto [axis, index] : llvm::enumerate(indices))
      choices.push_back(options[axis][index]);
    return choices;
  };
  auto costOf = [&](ArrayRef<size_t> indices) {
    SmallVector<AxisChoice> choices = choicesOf(indices);
    return isValid(rule, choices) ? costs.getChoiceCost(op, rule, choices)
                                  : std::numeric_limits<double>::infinity();
  };
  while (true) {
    double total = costOf(pick);
    if (best.empty() || total < bestCost) {
      best = pick;
      bestCost = total;
    }
    unsigned axis = numAxes;
    while (axis > 0 && ++pick[axis - 1] == options[axis - 1].size())
      pick[--axis] = 0;
    if (axis == 0)
      break;
  }
  decision.choices = choicesOf(best);
  if (remarks) {
    // Per axis: the choice and, for each alternative on that axis alone,
    // the cost with the other axes as chosen.
    for (unsigned axis : llvm::seq(numAxes)) {
      std::string reason = llvm::formatv(
          "axis \"{0}\": {1} ({2})",
          cast<StringAttr>(mesh.getAxisNames()[axis]).getValue(),
          describeChoice(rule, decision.choices[axis]), formatCost(bestCost));
      for (size_t i : llvm::seq<size_t>(0, options[axis].size())) {
        if (i == best[axis])
          continue;
        SmallVector<size_t> other = best;
        other[axis] = i;
        reason += llvm::formatv(" over {0} ({1})",
                                describeChoice(rule, options[axis][i]),
                                formatCost(costOf(other)));
      }
      decision.reasons.push_back(std::move(reason));
    }
  }
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    Layout required = getOperandPlacements(rule, decision.choices, index);
    // Producers decide first: every operand has its layout.
    if (state.layouts.lookup(operand) != required &&
        !state.isPlanned(operand, required))
      state.planned[operand].push_back(required);
    decision.operandLayouts.push_back(std::move(required));
  }
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    state.layouts[result] = getResultPlacements(rule, decision.choices, index);
  }
}

LogicalResult PlacementPropagator::run() {
  Block &body = func.getBody().front();
  StringRef name = TitanDialect::kPlacementsAttrName;
  size_t numAxes = meshSizes.size();
  for (BlockArgument arg : body.getArguments()) {
    Layout layout(numAxes, Placement::replicate());
    if (auto attr =
            func.getArgAttrOfType<PlacementsAttr>(arg.getArgNumber(), name))
      layout.assign(attr.getPlacements().begin(), attr.getPlacements().end());
    state.layouts[arg] = layout;
  }
  for (Operation &op : body.without_terminator()) {
    if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
      ArrayRef<Placement> to = redistribute.getTo().getPlacements();
      state.layouts[redistribute.getResult()] = Layout(to.begin(), to.end());
      continue;
    }
    if (!isa<ShardingRuleOpInterface>(op))
      return op.emitOpError("has no sharding rule; titan-propagate-placements "
                            "cannot place its values");
    ops.push_back(&op);
  }
  // Placements the plan wrote on op results (e.g. sequence parallelism's
  // layout of the normalized activations) are hints for those values, as
  // pinned function results are for the values returned.
  for (Operation *op : ops)
    if (auto attr = op->getAttrOfType<ArrayAttr>(name))
      for (auto [result, entry] : llvm::zip(op->getResults(), attr))
        if (auto placements = dyn_cast<PlacementsAttr>(entry))
          state.layouts[result] = Layout(placements.getPlacements().begin(),
                                         placements.getPlacements().end());
  // Pinned function results are hints for the values returned.
  Operation *terminator = body.getTerminator();
  for (auto [index, value] : llvm::enumerate(terminator->getOperands()))
    if (auto attr = func.getResultAttrOfType<PlacementsAttr>(index, name))
      if (!state.known(value))
        state.layouts[value] =
            Layout(attr.getPlacements().begin(), attr.getPlacements().end());

  spreadPlacementHints(ops, state.layouts);
  classes = DimClasses::build(body);
  for (const auto &[value, layout] : state.layouts)
    for (auto [axis, placement] : llvm::enumerate(layout))
      if (placement.isShard())
        shardedClasses.insert(
            {classes.find({value, placement.getDim()}), axis});
  // Producers before consumers, in program order: each op sees the layouts
  // its operands were given and the hints on its results.
  for (Operation *op : ops)
    decide(op);
  writePlacements();
  return success();
}

void PlacementPropagator::writePlacements() {
  MLIRContext *context = func.getContext();
  StringRef name = TitanDialect::kPlacementsAttrName;
  for (Operation *op : ops) {
    SmallVector<Attribute> results =
        llvm::map_to_vector(op->getResults(), [&](Value result) -> Attribute {
          return getAttr(state.layouts.lookup(result));
        });
    op->setAttr(name, ArrayAttr::get(context, results));
    const OpDecision &decision = decisions.find(op)->second;
    bool moves = llvm::any_of(op->getOpOperands(), [&](OpOperand &use) {
      return state.layouts.lookup(use.get()) !=
             decision.operandLayouts[use.getOperandNumber()];
    });
    if (!moves)
      continue;
    op->setAttr(TitanDialect::kOperandPlacementsAttrName,
                ArrayAttr::get(
                    context,
                    llvm::map_to_vector(decision.operandLayouts,
                                        [&](const Layout &layout) -> Attribute {
                                          return getAttr(layout);
                                        })));
    if (remarks)
      op->emitRemark() << "redistributes an operand: "
                       << llvm::join(decision.reasons, "; ");
  }
  // Values without a consumer that decided (function results) keep their
  // layouts; a result pinned by the plan is redistributed to it later.
  Operation *terminator = func.getBody().front().getTerminator();
  for (OpOperand &use : terminator->getOpOperands())
    if (!func.getResultAttrOfType<PlacementsAttr>(use.getOperandNumber(), name))
      func.setResultAttr(use.getOperandNumber(), name,
                         getAttr(state.layouts.lookup(use.get())));
  setEachArgAttr(func, name, [&](unsigned i) -> Attribute {
    return getAttr(state.layouts.lookup(func.getArgument(i)));
  });
}

namespace {
struct PropagatePlacementsPass
    : titan::impl::PropagatePlacementsPassBase<PropagatePlacementsPass> {
  using PropagatePlacementsPassBase::PropagatePlacementsPassBase;

  void runOnOperation() override {
    StringRef name = TitanDialect::kPlacementsAttrName;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // The mesh: the one the function's argument or result placements
      // name; a function without any is not distributed and is left alone.
      PlacementsAttr first;
      for (unsigned i : llvm::seq(func.getNumArguments()))
        if (auto attr = func.getArgAttrOfType<PlacementsAttr>(i, name))
          first = first ? first : attr;
      for (unsigned i : llvm::seq(func.getNumResults()))
        if (auto attr = func.getResultAttrOfType<PlacementsAttr>(i, name))
          first = first ? first : attr;
      if (!first)
        continue;
      if (!func.getBody().hasOneBlock()) {
        func.emitOpError("must have a single block to propagate placements");
        return signalPassFailure();
      }
      MeshOp mesh = MeshOp::lookup(func, first.getMesh());
      if (!mesh) {
        func.emitOpError("placements refer to unknown mesh ")
            << first.getMesh();
        return signalPassFailure();
      }
      if (!axisBandwidth.empty() &&
          axisBandwidth.size() != mesh.getAxisSizes().size()) {
        func.emitOpError("axis-bandwidth has ")
            << axisBandwidth.size() << " entries but mesh " << first.getMesh()
            << " has " << mesh.getAxisSizes().size() << " axes";
        return signalPassFailure();
      }
      if (llvm::any_of(axisBandwidth, [](double b) { return b <= 0; })) {
        func.emitOpError("axis-bandwidth entries must be positive");
        return signalPassFailure();
      }
      StationaryAxes stationary;
      for (auto [role, option, axisNames] :
           {std::make_tuple(ArgRole::Param, "stationary-param-axes",
                            &stationaryParamAxes),
            std::make_tuple(ArgRole::Input, "stationary-input-axes",
                            &stationaryInputAxes)}) {
        for (const std::string &name : *axisNames) {
          std::optional<unsigned> axis = mesh.getAxisIndex(name);
          if (!axis) {
            func.emitOpError()
                << option << " names axis \"" << name << "\" but mesh "
                << first.getMesh() << " has no such axis";
            return signalPassFailure();
          }
          stationary[role].push_back(*axis);
        }
      }
      PlacementPropagator propagator(func, mesh, axisBandwidth,
                                     std::move(stationary), remarks);
      if (failed(propagator.run()))
        return signalPassFailure();
    }
  }
};
} // namespace
