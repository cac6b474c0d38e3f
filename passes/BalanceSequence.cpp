//===- BalanceSequence.cpp - titan-balance-sequence
//------------------------===//
//
// Implements titan-balance-sequence (see passes/Passes.td): stores the
// sequence of a function permuted by chunks, so that a contiguous split of it
// over the context-parallel ranks gives every rank an equal share of causal
// attention work.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/DimClasses.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::titan {
#define GEN_PASS_DEF_BALANCESEQUENCEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The chunk order that balances causal attention over `ways` ranks: the
/// sequence is cut into 2 * ways chunks and rank r holds chunks r and
/// 2 * ways - 1 - r (an early, cheap one and a late, expensive one).
SmallVector<int64_t> balancedOrder(int64_t ways) {
  SmallVector<int64_t> order;
  for (int64_t rank = 0; rank < ways; ++rank) {
    order.push_back(rank);
    order.push_back(2 * ways - 1 - rank);
  }
  return order;
}

/// Whether `op` computes positions alone: an iota, a constant that is not a
/// splat, or an op of those and of splats.
bool isPositional(Operation *op) {
  if (!op || op->getNumResults() != 1 || op->getNumRegions() != 0 ||
      !isa<TitanDialect>(op->getDialect()))
    return false;
  auto isSplat = [](Operation *def) {
    auto constant = dyn_cast_or_null<ConstantOp>(def);
    auto dense =
        constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
    return dense && dense.isSplat();
  };
  if (isa<ConstantOp>(op))
    return !isSplat(op);
  if (isa<IotaOp>(op))
    return true;
  return op->getNumOperands() > 0 &&
         llvm::all_of(op->getOperands(), [&](Value operand) {
           return isSplat(operand.getDefiningOp()) ||
                  isPositional(operand.getDefiningOp());
         });
}

/// A copy of positional `value`'s computation before `user`, splats
/// shared.
Value copyPositions(OpBuilder &builder, Value value) {
  Operation *def = value.getDefiningOp();
  if (!isPositional(def))
    return value;
  IRMapping operands;
  for (Value operand : def->getOperands())
    operands.map(operand, copyPositions(builder, operand));
  return builder.clone(*def, operands)->getResult(0);
}

/// Gives each random_uniform (dropout) a copy of its counters' computation:
/// CSE merges the element positions of dropout on [b, t, c] and on a
/// transposed [b, c, t] when c == t, and one value read in both roles would
/// take the sequence's class at dims 1 and 2 and be permuted along both.
void unshareRandomCounters(Block &body) {
  for (auto random : body.getOps<RandomUniformOp>()) {
    OpBuilder builder(random);
    random.getCountersMutable().assign(
        copyPositions(builder, random.getCounters()));
  }
}

/// A reshape that merges the sequence into a dim with others (GPTBigCode's
/// q.view(b, t * h, d), OPT's x.view(-1, dim)) hides it from `classes`; one
/// that splits a dim of the same class the same way (the scores [b, t * h,
/// t] viewed [b, t, h, t]) gives it back: joins such split dims with
/// `sequence`. A merged class is remembered with the factor sizes of the
/// merge and the sequence's place among them. Returns a member of each
/// merged class.
SmallVector<ValueDim> joinSplitsOfMergedSequence(
    ArrayRef<std::pair<Operation *, OpShardingRule>> rules, DimClasses &classes,
    ValueDim sequence) {
  SmallVector<ValueDim> mergedDims;
  DenseMap<unsigned, std::pair<SmallVector<int64_t>, size_t>> merged;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &[op, rule] : rules) {
      auto reshape = dyn_cast<ReshapeOp>(op);
      if (!reshape)
        continue;
      auto sizesOf = [&, &rule = rule](ArrayRef<int64_t> factors) {
        return llvm::map_to_vector(
            factors, [&](int64_t f) { return rule.factorSizes[f]; });
      };
      auto isSequence = [&](Value value, int64_t dim) {
        return classes.same(ValueDim(value, dim), sequence);
      };
      for (auto [inDim, inFactors] : llvm::enumerate(rule.operandDims[0])) {
        for (auto [outDim, outFactors] : llvm::enumerate(rule.resultDims[0])) {
          if (inFactors.size() == 1 && outFactors.size() > 1 &&
              isSequence(reshape.getInput(), inDim)) {
            const auto *at = llvm::find(outFactors, inFactors.front());
            unsigned id = classes.find(ValueDim(reshape.getResult(), outDim));
            if (at != outFactors.end() && !merged.count(id)) {
              merged[id] = {sizesOf(outFactors),
                            static_cast<size_t>(at - outFactors.begin())};
              mergedDims.push_back(ValueDim(reshape.getResult(), outDim));
              changed = true;
            }
            continue;
          }
          if (inFactors.size() <= 1 || outFactors.size() != 1 ||
              isSequence(reshape.getResult(), outDim))
            continue;
          auto it =
              merged.find(classes.find(ValueDim(reshape.getInput(), inDim)));
          if (it != merged.end() && it->second.first == sizesOf(inFactors) &&
              inFactors[it->second.second] == outFactors.front()) {
            classes.join(ValueDim(reshape.getResult(), outDim), sequence);
            changed = true;
          }
        }
      }
    }
  }
  return mergedDims;
}

class BalanceSequencePass
    : public titan::impl::BalanceSequencePassBase<BalanceSequencePass> {
public:
  using BalanceSequencePassBase::BalanceSequencePassBase;

  void runOnOperation() override {
    if (ways <= 1)
      return;
    for (auto function : getOperation().getOps<func::FuncOp>())
      if (!function.isExternal() && failed(balance(function)))
        return signalPassFailure();
  }

private:
  LogicalResult balance(func::FuncOp function);
};

LogicalResult BalanceSequencePass::balance(func::FuncOp function) {
  if (!function.getBody().hasOneBlock())
    return function.emitOpError(
        "must have a single block to balance its sequence");
  Block &body = function.getBody().front();
  // The sequence: dim 1 of the [batch, seq] model inputs.
  std::optional<ValueDim> sequence;
  int64_t length = 0;
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (getArgRole(function, arg.getArgNumber()) != ArgRole::Input || !type ||
        type.getRank() != 2)
      continue;
    sequence = ValueDim(arg, 1);
    length = type.getDimSize(1);
    break;
  }
  // Nothing to do without a sequence, or when it is balanced already.
  if (!sequence ||
      function.getArgAttr(cast<BlockArgument>(sequence->first).getArgNumber(),
                          TitanDialect::kSequenceOrderAttrName))
    return success();
  int64_t numChunks = 2 * ways;
  if (ShapedType::isDynamic(length))
    return function.emitOpError()
           << "has a dynamic sequence length, which context parallelism "
              "cannot split; give the input a static seq_len";
  // Without equal chunks the sequence keeps its natural order: contiguous,
  // uneven shards (torch.chunk), correct but not balanced.
  if (length % numChunks != 0) {
    function.emitRemark()
        << "sequence length " << length << " of @" << function.getSymName()
        << " is not divisible by 2 x " << static_cast<int64_t>(ways) << " = "
        << numChunks
        << " chunks: context parallelism keeps the natural order (uneven "
           "contiguous shards, causal attention work not balanced across "
           "ranks); choose a seq_len that is a multiple of "
        << numChunks << " to balance it";
    return success();
  }

  // Every value dim that indexes sequence positions: the dims that share a
  // factor, alone, with the sequence through the ops' sharding rules.
  unshareRandomCounters(body);
  std::vector<std::pair<Operation *, OpShardingRule>> rules;
  for (Operation &op : body.without_terminator()) {
    auto ruled = dyn_cast<ShardingRuleOpInterface>(op);
    if (!ruled)
      return op.emitOpError("has no sharding rule; titan-balance-sequence "
                            "cannot tell its sequence dims");
    rules.emplace_back(&op, ruled.getShardingRule());
  }
  DimClasses classes = DimClasses::build(body);
  // The model's [batch, seq] inputs (the tokens and the labels) are one
  // sequence, also where the program loses track of it between them (a
  // reshape that merges the sequence with the batch, `x.view(-1, dim)`,
  // and splits it again).
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (getArgRole(function, arg.getArgNumber()) == ArgRole::Input && type &&
        type.getRank() == 2 && type.getDimSize(1) == length)
      classes.join(ValueDim(arg, 1), *sequence);
  }
  auto isSequence = [&](Value value, int64_t dim) {
    return classes.same(ValueDim(value, dim), *sequence);
  };
  SmallVector<ValueDim> mergedDims =
      joinSplitsOfMergedSequence(rules, classes, *sequence);

  SmallVector<int64_t> order = balancedOrder(ways);
  int64_t chunk = length / numChunks;
  for (auto &[op, rule] : rules) {
    // Ops that read positions along the sequence cannot be permuted.
    auto refuse = [&, op = op](int64_t dim) {
      return op->emitOpError()
             << "depends on positions along the sequence (dim " << dim
             << "), which load-balanced context parallelism permutes; "
                "keep the sequence whole in the model or set "
                "context_parallel_degree = 1";
    };
    if (auto slice = dyn_cast<SliceOp>(op)) {
      RankedTensorType type = slice.getInput().getType();
      for (int64_t dim : llvm::seq<int64_t>(0, type.getRank()))
        if (isSequence(slice.getInput(), dim) &&
            (slice.getStart()[dim] != 0 || slice.getStep()[dim] != 1 ||
             slice.getLimit()[dim] != type.getDimSize(dim)))
          return refuse(dim);
    }
    if (auto pad = dyn_cast<PadOp>(op)) {
      RankedTensorType type = pad.getInput().getType();
      for (int64_t dim : llvm::seq<int64_t>(0, type.getRank())) {
        if (!isSequence(pad.getInput(), dim) ||
            type.getDimSize(dim) == pad.getType().getDimSize(dim))
          continue;
        // The gradient of a table sliced by position (`positions[:, :T]`,
        // whose slice is stored permuted below): the whole sequence placed
        // at the table's start goes back to its natural order first.
        if (pad.getStart()[dim] != 0 || pad.getStep()[dim] != 1 ||
            type.getDimSize(dim) != length)
          return refuse(dim);
        OpBuilder builder(pad);
        TensorBuilder tb(builder, pad.getLoc());
        SmallVector<Value> chunks(numChunks);
        for (auto [stored, natural] : llvm::enumerate(order))
          chunks[natural] = tb.slice(pad.getInput(), dim, stored * chunk,
                                     (stored + 1) * chunk, /*step=*/1);
        pad.getInputMutable().assign(tb.concat(chunks, dim));
      }
    }
    // A lookup of rows along the sequence (torch.gather or x[:, ids] along
    // it, at positions the model computes) reads them by natural position.
    if (auto lookup = dyn_cast<EmbeddingOp>(op)) {
      ValueDim rows(lookup.getTable(), 0);
      if (isSequence(lookup.getTable(), 0) ||
          llvm::any_of(mergedDims, [&](ValueDim merged) {
            return classes.same(rows, merged);
          }))
        return refuse(0);
    }
    if (auto concat = dyn_cast<ConcatOp>(op))
      if (llvm::any_of(concat.getInputs(), [&](Value input) {
            return isSequence(input, concat.getDim());
          }))
        return refuse(concat.getDim());
    // Causal attention masks by the stored position of q and k.
    bool causal = false;
    if (auto attention = dyn_cast<AttentionOp>(op))
      causal = attention.getCausal();
    if (auto grad = dyn_cast<AttentionGradOp>(op))
      causal = grad.getCausal();
    if (causal && isSequence(op->getOperand(0), 2))
      return refuse(2);
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      RankedTensorType type = reshape.getInput().getType();
      for (int64_t dim : llvm::seq<int64_t>(0, type.getRank()))
        if (type.getDimSize(dim) == length &&
            isSequence(reshape.getInput(), dim) &&
            !getSoleFactor(rule, rule.operandDims[0], dim))
          return refuse(dim);
    }

    // A result dim of the sequence that no operand dim carries is where
    // positions enter (an iota, a slice of a table indexed by position, a
    // constant): store it permuted like the sequence. A broadcast dim or a
    // splat constant is the same at every position and stays as it is.
    if (isa<BroadcastInDimOp>(op))
      continue;
    if (auto constant = dyn_cast<ConstantOp>(op))
      if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
          dense && dense.isSplat())
        continue;
    for (auto [index, result] : llvm::enumerate(op->getResults())) {
      const auto &dims = rule.resultDims[index];
      for (int64_t dim : llvm::seq<int64_t>(0, dims.size())) {
        // An iota is the same at every position of its other dims (the
        // experts' ids of a router over the flattened tokens).
        if (auto iota = dyn_cast<IotaOp>(op); iota && static_cast<int64_t>(iota.getDim()) != dim)
          continue;
        std::optional<int64_t> factor = getSoleFactor(rule, dims, dim);
        bool carried =
            factor && llvm::any_of(rule.operandDims, [&](const auto &in) {
              return llvm::any_of(in, [&](const auto &factors) {
                return llvm::is_contained(factors, *factor);
              });
            });
        // Positions of a dim that merges the sequence with others (an iota
        // over [b * t], dropout after x.view(-1, dim)) would need the
        // permutation within the merge.
        if (factor && !carried &&
            llvm::any_of(mergedDims, [&](ValueDim merged) {
              return classes.same(ValueDim(result, dim), merged);
            }))
          return refuse(dim);
        if (!factor || !isSequence(result, dim) || carried)
          continue;
        OpBuilder builder(op->getContext());
        builder.setInsertionPointAfter(op);
        TensorBuilder tb(builder, op->getLoc());
        SmallVector<Value> chunks;
        for (int64_t c : order)
          chunks.push_back(
              tb.slice(result, dim, c * chunk, (c + 1) * chunk, /*step=*/1));
        Value permuted = tb.concat(chunks, dim);
        SmallPtrSet<Operation *, 8> slices;
        for (Value piece : chunks)
          slices.insert(piece.getDefiningOp());
        result.replaceAllUsesExcept(permuted, slices);
      }
    }
  }

  // The contract: arguments and results along the sequence are stored
  // permuted.
  auto mark = [&](Value value, auto setAttr) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      return;
    for (int64_t dim : llvm::seq<int64_t>(0, type.getRank()))
      if (type.getDimSize(dim) == length && isSequence(value, dim)) {
        SmallVector<int64_t> entry{dim};
        entry.append(order);
        setAttr(DenseI64ArrayAttr::get(function.getContext(), entry));
        return;
      }
  };
  // Only the data is stored permuted: a parameter or buffer along the
  // sequence (weights over positions: an MLP-Mixer's token mixing, a
  // Linear(seq_len, ...) on the transposed activations) keeps its natural
  // order in the checkpoint and the runtime.
  for (BlockArgument arg : body.getArguments()) {
    bool stored = false;
    mark(arg, [&](Attribute) { stored = true; });
    if (!stored)
      continue;
    if (getArgRole(function, arg.getArgNumber()) != ArgRole::Input) {
      auto name = function.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), TitanDialect::kNameAttrName);
      return function.emitOpError()
             << "argument '" << (name ? name.getValue() : StringRef("?"))
             << "' has a dim along the sequence (weights over positions, "
                "e.g. a Linear(seq_len, ...) mixing the tokens), which "
                "load-balanced context parallelism would have to store "
                "permuted; set context_parallel_degree = 1";
    }
    mark(arg, [&](Attribute a) {
      function.setArgAttr(arg.getArgNumber(),
                          TitanDialect::kSequenceOrderAttrName, a);
    });
  }
  for (auto [index, value] :
       llvm::enumerate(body.getTerminator()->getOperands()))
    mark(value, [&](Attribute a) {
      function.setResultAttr(index, TitanDialect::kSequenceOrderAttrName, a);
    });
  return success();
}

} // namespace
