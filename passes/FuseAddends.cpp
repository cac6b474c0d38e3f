//===- FuseAddends.cpp - sums into the op that computes a term ------------===//
//
// Implements titan-fuse-addends (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

namespace mlir::titan {
#define GEN_PASS_DEF_FUSEADDENDSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// A term of a sum computed by an op that can add the other term itself
/// (its optional `addend` operand): a matmul's product or RMSNorm's input
/// cotangent, read by the add directly or through one reshape (a view).
struct Term {
  /// The op's result that the add reads.
  Value result;
  ReshapeOp view;
};

/// The addend operand of `value`'s defining op when `value` is the result
/// it adds to and the op has no addend yet.
std::optional<MutableOperandRange> getFreeAddend(Value value) {
  Operation *op = value.getDefiningOp();
  return llvm::TypeSwitch<Operation *, std::optional<MutableOperandRange>>(op)
      .Case([](MatmulOp matmul) -> std::optional<MutableOperandRange> {
        if (matmul.getAddend())
          return std::nullopt;
        return matmul.getAddendMutable();
      })
      .Case([&](RmsNormGradOp grad) -> std::optional<MutableOperandRange> {
        if (grad.getAddend() || value != grad.getInputGrad())
          return std::nullopt;
        return grad.getAddendMutable();
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Whether `addend` is an expansion (a broadcast bias, a splat constant)
/// that an add kernel computes from a few values as it reads: as the op's
/// addend it would be written out whole first.
bool isExpansion(Value addend) {
  return isa_and_nonnull<BroadcastInDimOp, ConstantOp>(addend.getDefiningOp());
}

/// The term `value` is (directly or through one reshape), when the add that
/// reads `value` is its only reader and `addend` exists before the op in
/// the add's block, so that the op can read it where it stands.
std::optional<Term> matchTerm(Value value, Value addend, Block *block) {
  if (isExpansion(addend))
    return std::nullopt;
  Term term;
  term.view = value.getDefiningOp<ReshapeOp>();
  if (term.view) {
    if (!value.hasOneUse())
      return std::nullopt;
    value = term.view.getInput();
  }
  term.result = value;
  Operation *op = value.getDefiningOp();
  if (!op || !getFreeAddend(value) || !value.hasOneUse() ||
      op->getBlock() != block)
    return std::nullopt;
  if (auto arg = dyn_cast<BlockArgument>(addend))
    return arg.getOwner() == block ? std::optional(term) : std::nullopt;
  Operation *source = addend.getDefiningOp();
  if (source->getBlock() != block || !source->isBeforeInBlock(op))
    return std::nullopt;
  return term;
}

class FuseAddendsPass
    : public titan::impl::FuseAddendsPassBase<FuseAddendsPass> {
public:
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation()->walk([&](AddOp add) { adds.push_back(add); });
    // In program order: an earlier add's fused term may be the addend of a
    // later one (a sum of three products is two fused GEMMs).
    for (AddOp add : adds)
      fuse(add);
  }

private:
  /// Makes the op that computes one operand of `add` compute the sum, when
  /// the other operand can be its addend.
  void fuse(AddOp add) {
    Block *block = add->getBlock();
    for (auto [value, addend] : {std::pair{add.getRhs(), add.getLhs()},
                                 std::pair{add.getLhs(), add.getRhs()}}) {
      std::optional<Term> term = matchTerm(value, addend, block);
      if (!term)
        continue;
      if (term->view) {
        OpBuilder builder(term->result.getDefiningOp());
        addend = ReshapeOp::create(builder, addend.getLoc(),
                                   term->result.getType(), addend);
      }
      getFreeAddend(term->result)->assign(addend);
      add.replaceAllUsesWith(value);
      add.erase();
      return;
    }
  }
};

} // namespace
