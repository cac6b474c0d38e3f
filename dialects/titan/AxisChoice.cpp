//===- AxisChoice.cpp - what an op does on one mesh axis ------------------===//
//
// See include/titan/Dialect/AxisChoice.h.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/AxisChoice.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;

std::optional<int64_t> mlir::titan::findFactorDim(const ValueDims &dims,
                                                  int64_t factor) {
  for (auto [dim, factors] : llvm::enumerate(dims))
    if (llvm::is_contained(factors, factor))
      return dim;
  return std::nullopt;
}

std::optional<int64_t> mlir::titan::getShardedFactor(const OpShardingRule &rule,
                                                     const ValueDims &dims,
                                                     int64_t dim) {
  for (int64_t factor : dims[dim])
    if (rule.factorSizes[factor] != 1)
      return factor;
  return std::nullopt;
}

/// Why factor `factor` cannot be sharded on `axis` (see isFactorShardable),
/// or an empty string when it can.
static std::string whyNotShardable(const OpShardingRule &rule, int64_t factor,
                                   unsigned axis, ArrayRef<int64_t> meshSizes,
                                   ArrayRef<AxisChoice> earlier) {
  if (rule.factorKinds[factor] == FactorKind::NeedReplication)
    return "the op needs that dim whole on every rank (a need_replication "
           "factor of its sharding rule)";
  int64_t size = rule.factorSizes[factor];
  if (ShapedType::isDynamic(size))
    return "its size is dynamic";
  int64_t ways = meshSizes[axis];
  for (auto [index, choice] : llvm::enumerate(earlier))
    if (choice.kind == AxisChoice::Kind::Shard && choice.index == factor)
      ways *= meshSizes[index];
  if (ways <= 1)
    return "the axis has a single rank";
  auto isOutermost = [&](const ValueDims &dims) {
    std::optional<int64_t> dim = findFactorDim(dims, factor);
    return !dim || getShardedFactor(rule, dims, *dim) == factor;
  };
  if (!llvm::all_of(rule.operandDims, isOutermost) ||
      !llvm::all_of(rule.resultDims, isOutermost))
    return "its factor is an inner part of a dim of another operand or "
           "result, whose shards would not be contiguous";
  if (size % ways == 0)
    return "";
  // Uneven chunks (torch.chunk) of a factor are the chunks of every dim that
  // holds it only when that dim has no other factor: chunking the outer
  // factor of a merged dim unevenly is not chunking the dim.
  auto isAlone = [&](const ValueDims &dims) {
    std::optional<int64_t> dim = findFactorDim(dims, factor);
    return !dim || llvm::all_of(dims[*dim], [&](int64_t other) {
      return other == factor || rule.factorSizes[other] == 1;
    });
  };
  if (!llvm::all_of(rule.operandDims, isAlone) ||
      !llvm::all_of(rule.resultDims, isAlone))
    return llvm::formatv("its factor of size {0} does not divide over {1} "
                         "ranks and shares a dim with other factors, whose "
                         "uneven chunks would not be the dim's",
                         size, ways);
  // The mean of unequal shards is not the mean of their means.
  if (rule.factorKinds[factor] == FactorKind::Reduction &&
      rule.partialKind == ReduceKind::Avg)
    return llvm::formatv("its factor of size {0} does not divide over {1} "
                         "ranks, and the average of unequal shards is not "
                         "the average of the whole",
                         size, ways);
  return "";
}

bool mlir::titan::isFactorShardable(const OpShardingRule &rule, int64_t factor,
                                    unsigned axis, ArrayRef<int64_t> meshSizes,
                                    ArrayRef<AxisChoice> earlier) {
  return whyNotShardable(rule, factor, axis, meshSizes, earlier).empty();
}

Placement mlir::titan::getOperandPlacement(const OpShardingRule &rule,
                                           const AxisChoice &choice,
                                           unsigned index) {
  switch (choice.kind) {
  case AxisChoice::Kind::Shard:
    if (std::optional<int64_t> dim =
            findFactorDim(rule.operandDims[index], choice.index))
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

Placement mlir::titan::getResultPlacement(const OpShardingRule &rule,
                                          const AxisChoice &choice,
                                          unsigned index) {
  switch (choice.kind) {
  case AxisChoice::Kind::Shard:
    if (std::optional<int64_t> dim =
            findFactorDim(rule.resultDims[index], choice.index))
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

SmallVector<Placement> mlir::titan::getOperandPlacements(
    const OpShardingRule &rule, ArrayRef<AxisChoice> choices, unsigned index) {
  return llvm::map_to_vector(choices, [&](const AxisChoice &choice) {
    return getOperandPlacement(rule, choice, index);
  });
}

SmallVector<Placement>
mlir::titan::getResultPlacements(const OpShardingRule &rule,
                                 ArrayRef<AxisChoice> choices, unsigned index) {
  return llvm::map_to_vector(choices, [&](const AxisChoice &choice) {
    return getResultPlacement(rule, choice, index);
  });
}

/// The reduction of the partial placements of `placements`, or an error
/// when they mix two.
static std::optional<std::pair<ReduceKind, ReduceKind>>
findMixedPartials(ArrayRef<Placement> placements) {
  std::optional<ReduceKind> kind;
  for (const Placement &p : placements) {
    if (!p.isPartial())
      continue;
    if (kind && *kind != p.getReduce())
      return std::make_pair(*kind, p.getReduce());
    kind = p.getReduce();
  }
  return std::nullopt;
}

bool mlir::titan::areChoicesValid(const OpShardingRule &rule,
                                  ArrayRef<AxisChoice> choices,
                                  ArrayRef<int64_t> meshSizes) {
  for (auto [axis, choice] : llvm::enumerate(choices))
    if (choice.kind == AxisChoice::Kind::Shard &&
        !isFactorShardable(rule, choice.index, axis, meshSizes,
                           choices.take_front(axis)))
      return false;
  return llvm::none_of(
      llvm::seq<unsigned>(0, rule.resultDims.size()), [&](unsigned index) {
        return findMixedPartials(getResultPlacements(rule, choices, index));
      });
}

std::string mlir::titan::describeChoice(const OpShardingRule &rule,
                                        const AxisChoice &choice) {
  switch (choice.kind) {
  case AxisChoice::Kind::Shard: {
    // Name the factor by the first operand (or result) dim that holds it.
    std::string where;
    for (auto [index, dims] : llvm::enumerate(rule.operandDims))
      if (std::optional<int64_t> dim = findFactorDim(dims, choice.index)) {
        where = llvm::formatv("operand #{0} dim {1}", index, *dim);
        break;
      }
    if (where.empty())
      for (auto [index, dims] : llvm::enumerate(rule.resultDims))
        if (std::optional<int64_t> dim = findFactorDim(dims, choice.index)) {
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

namespace {
/// Names operand or result `index` in messages.
std::string nameValue(bool isResult, unsigned index) {
  return (isResult ? "result #" : "operand #") + std::to_string(index);
}

/// The choice on one axis that explains the placements there.
llvm::Expected<AxisChoice>
explainAxis(const OpShardingRule &rule, unsigned axis,
            ArrayRef<SmallVector<Placement>> operands,
            ArrayRef<SmallVector<Placement>> results,
            ArrayRef<int64_t> meshSizes, ArrayRef<AxisChoice> earlier,
            StringRef axisName) {
  auto fail = [&](const Twine &message) {
    return llvm::createStringError(message);
  };
  // A sharded value names the factor; the first one decides.
  for (bool isResult : {false, true}) {
    ArrayRef<SmallVector<Placement>> values = isResult ? results : operands;
    for (auto [index, placements] : llvm::enumerate(values)) {
      const Placement &p = placements[axis];
      if (!p.isShard())
        continue;
      const ValueDims &dims =
          isResult ? rule.resultDims[index] : rule.operandDims[index];
      std::optional<int64_t> factor = getShardedFactor(rule, dims, p.getDim());
      std::string where =
          llvm::formatv("{0} has dim {1} sharded over mesh axis \"{2}\"",
                        nameValue(isResult, index), p.getDim(), axisName);
      if (!factor)
        return fail(where + ", which the op's sharding rule does not let "
                            "any factor span");
      std::string why =
          whyNotShardable(rule, *factor, axis, meshSizes, earlier);
      if (!why.empty())
        return fail(where + ", but " + why +
                    "; redistribute it to replicate that dim first");
      return AxisChoice::shard(*factor);
    }
  }
  // Partial operands must be one linear group of one kind.
  SmallVector<unsigned, 2> partial;
  std::optional<ReduceKind> kind;
  for (auto [index, placements] : llvm::enumerate(operands)) {
    const Placement &p = placements[axis];
    if (!p.isPartial())
      continue;
    if (kind && *kind != p.getReduce())
      return fail(llvm::formatv(
          "operands are partial with different reductions ({0} and {1}) on "
          "mesh axis \"{2}\"; reduce them first",
          stringifyReduce(*kind), stringifyReduce(p.getReduce()), axisName));
    kind = p.getReduce();
    partial.push_back(index);
  }
  if (partial.empty())
    return AxisChoice::replicate();
  for (auto [group, operandsOfGroup] :
       llvm::enumerate(rule.linearOperandGroups))
    if (ArrayRef<unsigned>(operandsOfGroup) == ArrayRef<unsigned>(partial) &&
        (*kind == ReduceKind::Sum || *kind == ReduceKind::Avg))
      return AxisChoice::partial(group, *kind);
  std::string groups = llvm::join(
      llvm::map_range(rule.linearOperandGroups,
                      [](ArrayRef<unsigned> group) {
                        return "{" +
                               llvm::join(
                                   llvm::map_range(group,
                                                   [](unsigned i) {
                                                     return std::to_string(i);
                                                   }),
                                   ", ") +
                               "}";
                      }),
      ", ");
  return fail(llvm::formatv(
      "operands {{{0}} are P({1}) on mesh axis \"{2}\", but the op is not "
      "linear in them as a sum or mean (its linear operand groups: {3}); "
      "reduce them first",
      llvm::join(llvm::map_range(partial,
                                 [](unsigned i) { return std::to_string(i); }),
                 ", "),
      stringifyReduce(*kind), axisName, groups.empty() ? "none" : groups));
}
} // namespace

llvm::Expected<SmallVector<AxisChoice>> mlir::titan::explainPlacements(
    const OpShardingRule &rule, ArrayRef<SmallVector<Placement>> operands,
    ArrayRef<SmallVector<Placement>> results, ArrayRef<int64_t> meshSizes,
    ArrayRef<std::string> axisNames) {
  SmallVector<AxisChoice> choices;
  for (unsigned axis : llvm::seq<unsigned>(0, meshSizes.size())) {
    llvm::Expected<AxisChoice> choice = explainAxis(
        rule, axis, operands, results, meshSizes, choices, axisNames[axis]);
    if (!choice)
      return choice.takeError();
    // Every value must have the placement the choice gives it.
    for (bool isResult : {false, true}) {
      ArrayRef<SmallVector<Placement>> values = isResult ? results : operands;
      for (auto [index, placements] : llvm::enumerate(values)) {
        Placement expected = isResult
                                 ? getResultPlacement(rule, *choice, index)
                                 : getOperandPlacement(rule, *choice, index);
        if (placements[axis] != expected)
          return llvm::createStringError(llvm::formatv(
              "{0} is {1} on mesh axis \"{2}\", but the op's sharding rule "
              "({3} there) makes it {4}",
              nameValue(isResult, index), placements[axis].str(),
              axisNames[axis], describeChoice(rule, *choice), expected.str()));
      }
    }
    choices.push_back(*choice);
  }
  for (auto [index, placements] : llvm::enumerate(results))
    if (auto mixed = findMixedPartials(placements))
      return llvm::createStringError(llvm::formatv(
          "result #{0} would be partial with two reductions ({1} and {2}); "
          "reduce an operand first",
          index, stringifyReduce(mixed->first),
          stringifyReduce(mixed->second)));
  return choices;
}
