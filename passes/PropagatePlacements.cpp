//===- PropagatePlacements.cpp - titan-propagate-placements ---------------===//
//
// Gives every tensor value of a function DTensor placements from those of its
// arguments, through the ops' sharding rules, and makes every change of
// placement an explicit titan.redistribute chosen by the estimated cost of
// the redistributions. See the pass description in Passes.td for the
// algorithm and the cost model.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/DimClasses.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Passes.h"
#include "titan/Placement/PlacementAlgebra.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
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

/// The placements of a value, one per mesh axis.
using Layout = SmallVector<Placement>;
/// The factors of each dim of one value in a rule.
using ValueDims = SmallVector<SmallVector<int64_t, 1>>;

/// What an op does on one mesh axis.
struct AxisChoice {
  enum class Kind : uint8_t { Shard, Partial, Replicate };
  Kind kind = Kind::Replicate;
  /// The sharded factor (Shard) or the linear operand group (Partial).
  int64_t index = -1;
  /// The partial kind of the group's operands (Partial).
  ReduceKind reduce = ReduceKind::Sum;

  bool operator==(const AxisChoice &other) const {
    return kind == other.kind && index == other.index && reduce == other.reduce;
  }
};

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

/// Index of the dim of `dims` that holds factor `factor`, if any.
static std::optional<int64_t> findDim(const ValueDims &dims, int64_t factor) {
  for (auto [dim, factors] : llvm::enumerate(dims))
    if (llvm::is_contained(factors, factor))
      return dim;
  return std::nullopt;
}

/// The factor through which a sharding of `dims[dim]` is expressed: its
/// outermost factor whose size is not 1.
static std::optional<int64_t>
shardedFactor(const OpShardingRule &rule, const ValueDims &dims, int64_t dim) {
  for (int64_t factor : dims[dim])
    if (rule.factorSizes[factor] != 1)
      return factor;
  return std::nullopt;
}

/// Prints an axis choice for remarks.
static std::string describe(const OpShardingRule &rule,
                            const AxisChoice &choice) {
  switch (choice.kind) {
  case AxisChoice::Kind::Shard: {
    // Name the factor by the first operand (or result) dim that holds it.
    std::string where;
    for (auto [index, dims] : llvm::enumerate(rule.operandDims))
      if (std::optional<int64_t> dim = findDim(dims, choice.index)) {
        where = llvm::formatv("operand #{0} dim {1}", index, *dim);
        break;
      }
    if (where.empty())
      for (auto [index, dims] : llvm::enumerate(rule.resultDims))
        if (std::optional<int64_t> dim = findDim(dims, choice.index)) {
          where = llvm::formatv("result #{0} dim {1}", index, *dim);
          break;
        }
    return llvm::formatv("shard {0} ({1})", where,
                         stringifyFactorKind(rule.factorKinds[choice.index]));
  }
  case AxisChoice::Kind::Partial:
    return llvm::formatv(
        "keep operands {{{0}} partial",
        llvm::join(
            llvm::map_range(rule.linearOperandGroups[choice.index],
                            [](unsigned i) { return std::to_string(i); }),
            ", "));
  case AxisChoice::Kind::Replicate:
    return "replicate";
  }
  llvm_unreachable("unknown axis choice");
}

/// Prints a layout as `[S(0), R]`.
static std::string formatLayout(ArrayRef<Placement> layout) {
  return "[" +
         llvm::join(llvm::map_range(layout,
                                    [](const Placement &p) { return p.str(); }),
                    ", ") +
         "]";
}

class PlacementPropagator {
public:
  PlacementPropagator(func::FuncOp func, MeshOp mesh,
                      ArrayRef<double> bandwidth,
                      llvm::StringMap<SmallVector<unsigned>> stationaryAxes,
                      bool remarks)
      : func(func), mesh(mesh), stationaryAxes(std::move(stationaryAxes)),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        remarks(remarks), hasBandwidth(!bandwidth.empty()),
        meshSizes(mesh.getAxisSizes()),
        bandwidth(bandwidth.begin(), bandwidth.end()) {
    if (this->bandwidth.empty())
      this->bandwidth.assign(meshSizes.size(), 1.0);
  }

  LogicalResult run();

private:
  /// The known layout of `value`, if any.
  const Layout *known(Value value) const {
    auto it = states.find(value);
    return it == states.end() ? nullptr : &it->second;
  }
  /// The estimate of redistributing `value` from `from` to `to`: bytes per
  /// rank and seconds (both infinite when the algebra refuses).
  RedistributeCost estimate(Value value, ArrayRef<Placement> from,
                            ArrayRef<Placement> to) const;
  /// The seconds of `estimate` (bytes per rank when all bandwidths are 1).
  double cost(Value value, ArrayRef<Placement> from,
              ArrayRef<Placement> to) const {
    return estimate(value, from, to).totalSeconds;
  }
  /// True when a redistribute of `value` to `to` is already planned.
  bool isPlanned(Value value, ArrayRef<Placement> to) const;
  /// True when factor `factor` may be sharded on mesh axis `axis` by an op
  /// whose earlier axes chose `choices`.
  bool isShardable(const OpShardingRule &rule, int64_t factor, unsigned axis,
                   ArrayRef<AxisChoice> choices) const;
  /// The placement that operand `index` / result `index` has under `choice`.
  Placement operandPlacement(const OpShardingRule &rule,
                             const AxisChoice &choice, unsigned index) const;
  Placement resultPlacement(const OpShardingRule &rule,
                            const AxisChoice &choice, unsigned index) const;
  /// True when `choices` (one per mesh axis) can be applied together: the
  /// axes sharding each factor divide it, and every result is Partial of
  /// one reduction at most.
  bool isValid(const OpShardingRule &rule, ArrayRef<AxisChoice> choices) const;
  /// The layout operand / result `index` has under `choices`.
  Layout operandLayout(const OpShardingRule &rule, ArrayRef<AxisChoice> choices,
                       unsigned index) const;
  Layout resultLayout(const OpShardingRule &rule, ArrayRef<AxisChoice> choices,
                      unsigned index) const;
  /// The cost of `choices` for `op` given what is known.
  double choiceCost(Operation *op, const OpShardingRule &rule,
                    ArrayRef<AxisChoice> choices) const;
  /// The candidates on `axis` in the deterministic order: shardings
  /// proposed by the known values (operands, planned redistributions of
  /// operands, then results), partial groups, replicate.
  SmallVector<AxisChoice> candidates(Operation *op, const OpShardingRule &rule,
                                     unsigned axis) const;
  /// Decides `op` from what is known and records the consequences.
  void decide(Operation *op);
  /// Spreads the known layouts (arguments, the plan's hints, pinned
  /// results) as hints through the ops that only move or combine elements
  /// (every factor parallel: no contraction, no reduction), both ways, to
  /// the values no layout reaches yet: a value learns what the elementwise
  /// computation around it already uses, e.g. a weight gradient the layout
  /// of the moments AdamW combines it with, before its producer decides.
  void propagateHints();
  /// The layout of `from` carried through the factors of `rule` to a value
  /// whose dims are `toDims`, if it shards something.
  std::optional<Layout> carryLayout(const OpShardingRule &rule,
                                    const ValueDims &fromDims,
                                    ArrayRef<Placement> from,
                                    const ValueDims &toDims) const;
  /// Inserts the redistributions and writes the placements into the IR.
  void materialize();
  /// The redistribute of `value` to `layout`, created after the value's
  /// definition (and the redistributes of it created before) on first use.
  Value getRedistributed(Value value, ArrayRef<Placement> layout, Location loc,
                         StringRef reason);
  /// Prints a cost: bytes per rank when no bandwidths were given (`1024 B`),
  /// seconds otherwise (`1.024e-06 s`).
  std::string formatCost(double value) const {
    return hasBandwidth ? llvm::formatv("{0:e3} s", value).str()
                        : llvm::formatv("{0:F0} B", value).str();
  }
  PlacementsAttr getAttr(ArrayRef<Placement> layout) const {
    return PlacementsAttr::get(meshRef.getContext(), meshRef, layout);
  }

  /// True when `to` moves argument `value` on an axis where its role keeps
  /// it stationary.
  bool movesStationaryArg(Value value, ArrayRef<Placement> from,
                          ArrayRef<Placement> to) const;

  func::FuncOp func;
  MeshOp mesh;
  /// Per argument role ("param", "input"): the mesh axes on which such
  /// arguments are never redistributed.
  llvm::StringMap<SmallVector<unsigned>> stationaryAxes;
  FlatSymbolRefAttr meshRef;
  bool remarks;
  /// Whether the user gave per-axis bandwidths (costs are then seconds).
  bool hasBandwidth;
  SmallVector<int64_t> meshSizes;
  SmallVector<double> bandwidth;
  /// The ops with a sharding rule, in program order.
  SmallVector<Operation *> ops;
  DenseMap<Operation *, OpDecision> decisions;
  /// The layout of each value: fixed once its producer decided (or by the
  /// signature), a hint before (a layout the plan or the values around it
  /// ask for).
  DenseMap<Value, Layout> states;
  /// Layouts other than its own that a value is redistributed to.
  DenseMap<Value, SmallVector<Layout, 1>> planned;
  /// The classes of dims that are one factor across the function (lookups
  /// compress paths, hence mutable), and the (class, mesh axis) pairs some
  /// known value shards: a Partial value may be reduce-scattered onto a dim
  /// of such a class (e.g. a gradient of gathered K/V back onto the
  /// sequence, a weight gradient onto the dim FSDP shards).
  mutable DimClasses classes;
  llvm::DenseSet<std::pair<unsigned, unsigned>> shardedClasses;
  /// Created redistributes per (value, target layout) and the last one per
  /// value (the insertion point of the next).
  DenseMap<Value, SmallVector<std::pair<Layout, Value>, 1>> created;
};

} // namespace

RedistributeCost PlacementPropagator::estimate(Value value,
                                               ArrayRef<Placement> from,
                                               ArrayRef<Placement> to) const {
  RedistributeCost refused;
  refused.totalBytes = refused.totalSeconds =
      std::numeric_limits<double>::infinity();
  if (ArrayRef<Placement>(from) == to)
    return {};
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape =
      llvm::map_to_vector(type.getShape(), [](int64_t size) {
        return ShapedType::isDynamic(size) ? 1 : size;
      });
  auto steps = planRedistribution(shape, meshSizes, from, to);
  if (!steps) {
    llvm::consumeError(steps.takeError());
    return refused;
  }
  auto result = estimateRedistributeCost(
      *steps, meshSizes, getElementByteWidth(type.getElementType()), bandwidth);
  if (!result) {
    llvm::consumeError(result.takeError());
    return refused;
  }
  return *result;
}

bool PlacementPropagator::isPlanned(Value value, ArrayRef<Placement> to) const {
  auto it = planned.find(value);
  return it != planned.end() &&
         llvm::any_of(it->second, [&](const Layout &layout) {
           return ArrayRef<Placement>(layout) == to;
         });
}

bool PlacementPropagator::isShardable(const OpShardingRule &rule,
                                      int64_t factor, unsigned axis,
                                      ArrayRef<AxisChoice> choices) const {
  if (rule.factorKinds[factor] == FactorKind::NeedReplication)
    return false;
  int64_t size = rule.factorSizes[factor];
  if (ShapedType::isDynamic(size))
    return false;
  int64_t ways = meshSizes[axis];
  for (auto [earlier, choice] : llvm::enumerate(choices))
    if (choice.kind == AxisChoice::Kind::Shard && choice.index == factor)
      ways *= meshSizes[earlier];
  if (ways <= 1 || size % ways != 0)
    return false;
  auto isOutermost = [&](const ValueDims &dims) {
    std::optional<int64_t> dim = findDim(dims, factor);
    return !dim || shardedFactor(rule, dims, *dim) == factor;
  };
  return llvm::all_of(rule.operandDims, isOutermost) &&
         llvm::all_of(rule.resultDims, isOutermost);
}

Placement PlacementPropagator::operandPlacement(const OpShardingRule &rule,
                                                const AxisChoice &choice,
                                                unsigned index) const {
  switch (choice.kind) {
  case AxisChoice::Kind::Shard:
    if (std::optional<int64_t> dim =
            findDim(rule.operandDims[index], choice.index))
      return Placement::shard(*dim);
    return Placement::replicate();
  case AxisChoice::Kind::Partial:
    if (llvm::is_contained(rule.linearOperandGroups[choice.index], index))
      return Placement::partial(choice.reduce);
    return Placement::replicate();
  case AxisChoice::Kind::Replicate:
    return Placement::replicate();
  }
  llvm_unreachable("unknown axis choice");
}

Placement PlacementPropagator::resultPlacement(const OpShardingRule &rule,
                                               const AxisChoice &choice,
                                               unsigned index) const {
  switch (choice.kind) {
  case AxisChoice::Kind::Shard:
    if (std::optional<int64_t> dim =
            findDim(rule.resultDims[index], choice.index))
      return Placement::shard(*dim);
    if (rule.factorKinds[choice.index] == FactorKind::Reduction)
      return Placement::partial(rule.partialKind);
    return Placement::replicate();
  case AxisChoice::Kind::Partial:
    return Placement::partial(choice.reduce);
  case AxisChoice::Kind::Replicate:
    return Placement::replicate();
  }
  llvm_unreachable("unknown axis choice");
}

bool PlacementPropagator::isValid(const OpShardingRule &rule,
                                  ArrayRef<AxisChoice> choices) const {
  for (auto [axis, choice] : llvm::enumerate(choices))
    if (choice.kind == AxisChoice::Kind::Shard &&
        !isShardable(rule, choice.index, axis, choices.take_front(axis)))
      return false;
  for (unsigned index : llvm::seq<unsigned>(0, rule.resultDims.size())) {
    std::optional<ReduceKind> kind;
    for (const Placement &p : resultLayout(rule, choices, index)) {
      if (!p.isPartial())
        continue;
      if (kind && *kind != p.getReduce())
        return false;
      kind = p.getReduce();
    }
  }
  return true;
}

Layout PlacementPropagator::operandLayout(const OpShardingRule &rule,
                                          ArrayRef<AxisChoice> choices,
                                          unsigned index) const {
  return llvm::map_to_vector(choices, [&](const AxisChoice &c) {
    return operandPlacement(rule, c, index);
  });
}

Layout PlacementPropagator::resultLayout(const OpShardingRule &rule,
                                         ArrayRef<AxisChoice> choices,
                                         unsigned index) const {
  return llvm::map_to_vector(choices, [&](const AxisChoice &c) {
    return resultPlacement(rule, c, index);
  });
}

bool PlacementPropagator::movesStationaryArg(Value value,
                                             ArrayRef<Placement> from,
                                             ArrayRef<Placement> to) const {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || stationaryAxes.empty())
    return false;
  auto role = func::FuncOp(func).getArgAttrOfType<StringAttr>(
      arg.getArgNumber(), TitanDialect::kRoleAttrName);
  auto axes =
      role ? stationaryAxes.find(role.getValue()) : stationaryAxes.end();
  return axes != stationaryAxes.end() &&
         llvm::any_of(axes->second,
                      [&](unsigned axis) { return from[axis] != to[axis]; });
}

double PlacementPropagator::choiceCost(Operation *op,
                                       const OpShardingRule &rule,
                                       ArrayRef<AxisChoice> choices) const {
  double total = 0;
  SmallVector<std::pair<Value, Layout>> counted;
  // Adds the cost of redistributing `value` from `from` to `to` once; an
  // operand's redistribution already planned by another consumer is shared
  // and free.
  auto add = [&](Value value, ArrayRef<Placement> from, Layout to,
                 bool shared) {
    if (ArrayRef<Placement>(from) == ArrayRef<Placement>(to) ||
        (shared && isPlanned(value, to)))
      return;
    if (movesStationaryArg(value, from, to)) {
      total = std::numeric_limits<double>::infinity();
      return;
    }
    for (const auto &[seen, layout] : counted)
      if (seen == value && layout == to)
        return;
    total += cost(value, from, to);
    counted.emplace_back(value, std::move(to));
  };
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    const Layout *layout = known(operand);
    if (!layout)
      continue;
    add(operand, *layout, operandLayout(rule, choices, index),
        /*shared=*/true);
  }
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    Layout produced = resultLayout(rule, choices, index);
    if (const Layout *hint = known(result)) {
      // Every layout the consumers decided so far asked for: the hint and
      // the redistributions planned from it.
      add(result, produced, *hint, /*shared=*/false);
      auto it = planned.find(result);
      if (it != planned.end())
        for (const Layout &wanted : it->second)
          add(result, produced, wanted, /*shared=*/false);
      continue;
    }
    // A new partial result will have to be reduced: charge, per partial
    // axis, a reduce-scatter onto the first dim the axis divides (or an
    // all-reduce).
    Layout reduced = produced;
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(result.getType()).getShape();
    for (auto [axis, placement] : llvm::enumerate(reduced)) {
      if (!placement.isPartial())
        continue;
      placement = Placement::replicate();
      for (auto [dim, size] : llvm::enumerate(shape)) {
        if (!ShapedType::isDynamic(size) && size % meshSizes[axis] == 0) {
          placement = Placement::shard(dim);
          break;
        }
      }
    }
    if (reduced != produced)
      total += cost(result, produced, reduced);
  }
  return total;
}

SmallVector<AxisChoice>
PlacementPropagator::candidates(Operation *op, const OpShardingRule &rule,
                                unsigned axis) const {
  SmallVector<AxisChoice> result;
  auto propose = [&](ArrayRef<Placement> layout, const ValueDims &dims) {
    const Placement &p = layout[axis];
    if (!p.isShard() || p.getDim() >= static_cast<int64_t>(dims.size()))
      return;
    std::optional<int64_t> factor = shardedFactor(rule, dims, p.getDim());
    if (!factor || !isShardable(rule, *factor, axis, {}))
      return;
    AxisChoice choice{AxisChoice::Kind::Shard, *factor};
    if (!llvm::is_contained(result, choice))
      result.push_back(choice);
  };
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    if (const Layout *layout = known(operand))
      propose(*layout, rule.operandDims[index]);
    auto it = planned.find(operand);
    if (it != planned.end())
      for (const Layout &layout : it->second)
        propose(layout, rule.operandDims[index]);
  }
  for (auto [index, value] : llvm::enumerate(op->getResults()))
    if (const Layout *layout = known(value))
      propose(*layout, rule.resultDims[index]);
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    const Layout *layout = known(operand);
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
      const Layout *layout = known(operand);
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
    return isValid(rule, choices) ? choiceCost(op, rule, choices)
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
          describe(rule, decision.choices[axis]), formatCost(bestCost));
      for (size_t i : llvm::seq<size_t>(0, options[axis].size())) {
        if (i == best[axis])
          continue;
        SmallVector<size_t> other = best;
        other[axis] = i;
        reason +=
            llvm::formatv(" over {0} ({1})", describe(rule, options[axis][i]),
                          formatCost(costOf(other)));
      }
      decision.reasons.push_back(std::move(reason));
    }
  }
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    Layout required = operandLayout(rule, decision.choices, index);
    // Producers decide first: every operand has its layout.
    if (states.lookup(operand) != required && !isPlanned(operand, required))
      planned[operand].push_back(required);
    decision.operandLayouts.push_back(std::move(required));
  }
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    states[result] = resultLayout(rule, decision.choices, index);
  }
}

std::optional<Layout> PlacementPropagator::carryLayout(
    const OpShardingRule &rule, const ValueDims &fromDims,
    ArrayRef<Placement> from, const ValueDims &toDims) const {
  Layout layout(meshSizes.size(), Placement::replicate());
  bool sharded = false;
  for (auto [axis, placement] : llvm::enumerate(from)) {
    if (!placement.isShard() ||
        placement.getDim() >= static_cast<int64_t>(fromDims.size()))
      continue;
    std::optional<int64_t> factor =
        shardedFactor(rule, fromDims, placement.getDim());
    std::optional<int64_t> dim =
        factor ? findDim(toDims, *factor) : std::nullopt;
    if (!dim || shardedFactor(rule, toDims, *dim) != factor)
      continue;
    layout[axis] = Placement::shard(*dim);
    sharded = true;
  }
  if (!sharded)
    return std::nullopt;
  return layout;
}

void PlacementPropagator::propagateHints() {
  std::vector<std::pair<Operation *, OpShardingRule>> elementwise;
  for (Operation *op : ops) {
    OpShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
    if (llvm::all_of(rule.factorKinds, [](FactorKind kind) {
          return kind == FactorKind::Parallel;
        }))
      elementwise.emplace_back(op, std::move(rule));
  }
  // Each round carries every known layout one op further, operands' to
  // results and results' to operands; a value takes a hint only when all
  // that reach it agree (a scalar broadcast feeding differently sharded
  // products stays free to be sliced for each).
  while (true) {
    llvm::MapVector<Value, std::optional<Layout>> proposals;
    auto propose = [&](Value to, std::optional<Layout> layout) {
      if (!layout || states.count(to))
        return;
      auto [it, inserted] = proposals.try_emplace(to, layout);
      if (!inserted && it->second != layout)
        it->second = std::nullopt;
    };
    for (auto &[op, rule] : elementwise) {
      for (auto [index, operand] : llvm::enumerate(op->getOperands()))
        if (const Layout *layout = known(operand))
          for (auto [resultIndex, result] : llvm::enumerate(op->getResults()))
            propose(result, carryLayout(rule, rule.operandDims[index], *layout,
                                        rule.resultDims[resultIndex]));
      for (auto [index, result] : llvm::enumerate(op->getResults()))
        if (const Layout *layout = known(result))
          for (auto [operandIndex, operand] :
               llvm::enumerate(op->getOperands()))
            propose(operand, carryLayout(rule, rule.resultDims[index], *layout,
                                         rule.operandDims[operandIndex]));
    }
    bool changed = false;
    for (auto &[value, layout] : proposals)
      if (layout) {
        states[value] = std::move(*layout);
        changed = true;
      }
    if (!changed)
      return;
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
    states[arg] = layout;
  }
  for (Operation &op : body.without_terminator()) {
    if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
      ArrayRef<Placement> to = redistribute.getTo().getPlacements();
      states[redistribute.getResult()] = Layout(to.begin(), to.end());
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
          states[result] = Layout(placements.getPlacements().begin(),
                                  placements.getPlacements().end());
  // Pinned function results are hints for the values returned.
  Operation *terminator = body.getTerminator();
  for (auto [index, value] : llvm::enumerate(terminator->getOperands()))
    if (auto attr = func.getResultAttrOfType<PlacementsAttr>(index, name))
      if (!known(value))
        states[value] =
            Layout(attr.getPlacements().begin(), attr.getPlacements().end());

  propagateHints();
  classes = DimClasses::build(body);
  for (const auto &[value, layout] : states)
    for (auto [axis, placement] : llvm::enumerate(layout))
      if (placement.isShard())
        shardedClasses.insert(
            {classes.find({value, placement.getDim()}), axis});
  // Producers before consumers, in program order: each op sees the layouts
  // its operands were given and the hints on its results.
  for (Operation *op : ops)
    decide(op);
  materialize();
  return success();
}

Value PlacementPropagator::getRedistributed(Value value,
                                            ArrayRef<Placement> layout,
                                            Location loc, StringRef reason) {
  auto &list = created[value];
  for (const auto &[target, redistributed] : list)
    if (ArrayRef<Placement>(target) == layout)
      return redistributed;
  OpBuilder builder(func.getContext());
  if (!list.empty())
    builder.setInsertionPointAfter(list.back().second.getDefiningOp());
  else if (Operation *def = value.getDefiningOp())
    builder.setInsertionPointAfter(def);
  else
    builder.setInsertionPointToStart(&func.getBody().front());
  auto op = RedistributeOp::create(builder, loc, value.getType(), value,
                                   getAttr(layout));
  op->setAttr(TitanDialect::kPlacementsAttrName,
              builder.getArrayAttr({getAttr(layout)}));
  const Layout &from = states.lookup(value);
  if (remarks) {
    RedistributeCost total = estimate(value, from, layout);
    op->emitRemark() << formatLayout(from) << " -> " << formatLayout(layout)
                     << llvm::formatv(" ({0:F0} bytes per rank",
                                      total.totalBytes)
                     << (hasBandwidth ? ", " + formatCost(total.totalSeconds)
                                      : std::string())
                     << ") " << reason;
  }
  list.emplace_back(Layout(layout.begin(), layout.end()), op.getResult());
  return op.getResult();
}

void PlacementPropagator::materialize() {
  StringRef name = TitanDialect::kPlacementsAttrName;
  for (Operation *op : ops) {
    SmallVector<Attribute> attrs =
        llvm::map_to_vector(op->getResults(), [&](Value result) -> Attribute {
          return getAttr(states.lookup(result));
        });
    op->setAttr(name, ArrayAttr::get(func.getContext(), attrs));
  }
  for (Operation *op : ops) {
    const OpDecision &decision = decisions.find(op)->second;
    for (OpOperand &use : op->getOpOperands()) {
      const Layout &required = decision.operandLayouts[use.getOperandNumber()];
      if (states.lookup(use.get()) == required)
        continue;
      std::string reason = llvm::formatv("for operand #{0} of '{1}': {2}",
                                         use.getOperandNumber(), op->getName(),
                                         llvm::join(decision.reasons, "; "));
      use.set(getRedistributed(use.get(), required, op->getLoc(), reason));
    }
  }
  Operation *terminator = func.getBody().front().getTerminator();
  for (OpOperand &use : terminator->getOpOperands()) {
    unsigned index = use.getOperandNumber();
    const Layout &layout = states.lookup(use.get());
    auto pinned = func.getResultAttrOfType<PlacementsAttr>(index, name);
    if (!pinned) {
      func.setResultAttr(index, name, getAttr(layout));
      continue;
    }
    if (pinned.getPlacements() != ArrayRef<Placement>(layout))
      use.set(getRedistributed(
          use.get(), pinned.getPlacements(), terminator->getLoc(),
          llvm::formatv("for result #{0} of the function: pinned by the plan",
                        index)
              .str()));
  }
  setEachArgAttr(func, name, [&](unsigned i) -> Attribute {
    return getAttr(states.lookup(func.getArgument(i)));
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
      llvm::StringMap<SmallVector<unsigned>> stationary;
      for (auto [role, option, axisNames] :
           {std::make_tuple("param", "stationary-param-axes",
                            &stationaryParamAxes),
            std::make_tuple("input", "stationary-input-axes",
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
