//===- KeepParamCopies.cpp - the optimizer writes the forward's copies ----===//
//
// Implements titan-keep-param-copies (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/ArgRole.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::titan {
#define GEN_PASS_DEF_KEEPPARAMCOPIESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// A parameter argument whose narrowing casts become a state argument.
struct CopiedParam {
  BlockArgument param;
  StringAttr name;
  /// Its casts to `copyType`, all of them.
  SmallVector<CastOp> casts;
  /// The one AdamW that updates it.
  AdamWOp update;
  /// The index of the result that returns the update.
  unsigned returnIndex = 0;
  RankedTensorType copyType;
};

/// Whether a collective reads `value`, directly or through views.
bool isReadByCollective(Value value) {
  return llvm::any_of(value.getUsers(), [](Operation *user) {
    if (auto reshape = dyn_cast<ReshapeOp>(user))
      return isReadByCollective(reshape.getResult());
    return isa<CollectiveOpInterface>(user);
  });
}

/// Fills `copied` for argument `param` of `function` if it is a parameter
/// cast to one narrower float type, read by more than embedding lookups and
/// not gathered (FSDP), and updated by one AdamW whose new value the
/// function returns as `param.<fqn>`.
bool findCopiedParam(func::FuncOp function, BlockArgument param,
                     func::ReturnOp ret, CopiedParam &copied) {
  unsigned index = param.getArgNumber();
  auto name =
      function.getArgAttrOfType<StringAttr>(index, TitanDialect::kNameAttrName);
  auto type = dyn_cast<RankedTensorType>(param.getType());
  if (getArgRole(function, index) != ArgRole::Param || !name || !type)
    return false;
  copied = CopiedParam{param, name, {}, nullptr, 0, nullptr};
  for (Operation *user : param.getUsers()) {
    if (auto adamw = dyn_cast<AdamWOp>(user)) {
      if (copied.update || adamw.getParam() != param || adamw.getNewParamCopy())
        return false;
      copied.update = adamw;
      continue;
    }
    auto cast = dyn_cast<CastOp>(user);
    if (!cast)
      continue;
    RankedTensorType castType = cast.getType();
    if (castType.getElementType() == type.getElementType() ||
        !isExactFloatWidening(castType.getElementType(), type.getElementType()))
      continue;
    // Casts to two narrow types keep both (no model does that).
    if (copied.copyType && copied.copyType != castType)
      return false;
    copied.copyType = castType;
    copied.casts.push_back(cast);
  }
  if (!copied.update || copied.casts.empty())
    return false;
  // An embedding reads the rows it gathers, cast one by one in its
  // kernel: a copy would cost the whole table every step.
  bool lookupsOnly = llvm::all_of(copied.casts, [](CastOp cast) {
    return llvm::all_of(cast->getUsers(),
                        [](Operation *user) { return isa<EmbeddingOp>(user); });
  });
  // FSDP casts a shard before gathering it: the cast moves 1/N of what the
  // gather does, and the copy would hold 2 bytes per element of the shard
  // for all of the step, where memory is what sharding is for.
  bool gathered = llvm::any_of(copied.casts, [](CastOp cast) {
    return isReadByCollective(cast.getResult());
  });
  if (lookupsOnly || gathered)
    return false;
  std::string updated = getParamSlotName(ParamSlot::Updated, name.getValue());
  for (OpOperand &operand : ret->getOpOperands()) {
    auto resultName = function.getResultAttrOfType<StringAttr>(
        operand.getOperandNumber(), TitanDialect::kNameAttrName);
    if (operand.get() == copied.update.getNewParam() && resultName &&
        resultName.getValue() == updated) {
      copied.returnIndex = operand.getOperandNumber();
      return true;
    }
  }
  return false;
}

/// Makes `copied`'s casts read a new argument `copy.<fqn>` that its AdamW
/// updates and the function returns.
void keepCopy(func::FuncOp function, func::ReturnOp ret,
              const CopiedParam &copied) {
  MLIRContext *context = function.getContext();
  StringAttr copyName = StringAttr::get(
      context, getParamSlotName(ParamSlot::Copy, copied.name.getValue()));
  NamedAttribute argAttrs[] = {
      NamedAttribute(TitanDialect::kNameAttrName, copyName),
      NamedAttribute(TitanDialect::kRoleAttrName,
                     getArgRoleAttr(context, ArgRole::ParamCopy))};
  unsigned argIndex = function.getNumArguments();
  (void)function.insertArgument(argIndex, copied.copyType,
                                DictionaryAttr::get(context, argAttrs),
                                copied.param.getLoc());
  BlockArgument copy = function.getArgument(argIndex);
  for (CastOp cast : copied.casts) {
    cast.getResult().replaceAllUsesWith(copy);
    cast.erase();
  }

  // The update writes the copy in the same pass over the parameter.
  AdamWOp update = copied.update;
  OpBuilder builder(update);
  RankedTensorType paramType = update.getParam().getType();
  auto withCopy = AdamWOp::create(
      builder, update.getLoc(), paramType, paramType, paramType,
      copied.copyType, update.getParam(), update.getGrad(), update.getExpAvg(),
      update.getExpAvgSq(), update.getLr(), update.getStep(),
      update.getGradScale(), update.getBeta1Attr(), update.getBeta2Attr(),
      update.getEpsAttr(), update.getWeightDecayAttr());
  withCopy->setDiscardableAttrs(update->getDiscardableAttrDictionary());
  update.replaceAllUsesWith(withCopy.getResults().take_front(3));
  update.erase();

  // Returned right after the parameter's update.
  unsigned resultIndex = copied.returnIndex + 1;
  NamedAttribute resultAttrs[] = {
      NamedAttribute(TitanDialect::kNameAttrName, copyName)};
  (void)function.insertResult(resultIndex, copied.copyType,
                              DictionaryAttr::get(context, resultAttrs));
  ret->insertOperands(resultIndex, withCopy.getNewParamCopy());
}

class KeepParamCopiesPass
    : public titan::impl::KeepParamCopiesPassBase<KeepParamCopiesPass> {
public:
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal() ||
          function->hasAttr(TitanDialect::kKernelAttrName))
        continue;
      auto ret =
          cast<func::ReturnOp>(function.getBody().front().getTerminator());
      SmallVector<CopiedParam> copies;
      for (BlockArgument arg : function.getArguments()) {
        CopiedParam copied;
        if (findCopiedParam(function, arg, ret, copied))
          copies.push_back(std::move(copied));
      }
      // The last first: a result inserted after a later one's update does
      // not move the earlier updates' indices.
      llvm::sort(copies, [](const CopiedParam &a, const CopiedParam &b) {
        return a.returnIndex > b.returnIndex;
      });
      for (const CopiedParam &copied : copies)
        keepCopy(function, ret, copied);
    }
  }
};

} // namespace
