//===- ValidationProgram.cpp - a validation step beside the training step -===//

#include "titan/Codegen/ValidationProgram.h"

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/TitanDialect.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

/// A byte range of the validation step's state and where it moves.
struct StateMove {
  int64_t begin, end, delta;
};

/// Moves the places of one planned function.
class PlaceMover {
public:
  PlaceMover(MLIRContext *context, std::vector<StateMove> state,
             int64_t inputDelta)
      : context(context), state(std::move(state)), inputDelta(inputDelta) {}

  /// `place` moved; null if it lies in no state argument (a bug).
  BufferAttr move(BufferAttr place) const {
    int64_t offset = place.getOffset();
    switch (place.getRegion()) {
    case MemoryRegion::Arena:
      return place;
    case MemoryRegion::Inputs:
      offset += inputDelta;
      break;
    case MemoryRegion::State: {
      const StateMove *found = nullptr;
      for (const StateMove &range : state)
        if (offset >= range.begin && offset + place.getBytes() <= range.end)
          found = &range;
      if (!found)
        return {};
      offset += found->delta;
      break;
    }
    }
    return BufferAttr::get(context, place.getRegion(), offset,
                           place.getBytes());
  }

  /// Moves the places of `function`'s arguments, op results and results.
  LogicalResult run(func::FuncOp function) const {
    auto moveAttr = [&](Attribute attr) -> Attribute {
      auto place = dyn_cast_or_null<BufferAttr>(attr);
      return place ? move(place) : attr;
    };
    // The places of the arguments (`result` false) or of the results.
    auto moveSignature = [&](bool result) {
      unsigned count =
          result ? function.getNumResults() : function.getNumArguments();
      StringRef key = TitanDialect::kBufferAttrName;
      for (unsigned i = 0; i < count; ++i) {
        Attribute attr = result ? function.getResultAttr(i, key)
                                : function.getArgAttr(i, key);
        if (!attr)
          continue;
        Attribute moved = moveAttr(attr);
        if (!moved)
          return false;
        if (result)
          function.setResultAttr(i, key, moved);
        else
          function.setArgAttr(i, key, moved);
      }
      return true;
    };
    if (!moveSignature(/*result=*/false) || !moveSignature(/*result=*/true))
      return failure();
    WalkResult walked = function.walk([&](Operation *op) {
      auto places =
          op->getAttrOfType<ArrayAttr>(TitanDialect::kBuffersAttrName);
      if (!places)
        return WalkResult::advance();
      SmallVector<Attribute> moved;
      for (Attribute attr : places) {
        moved.push_back(moveAttr(attr));
        if (!moved.back())
          return WalkResult::interrupt();
      }
      op->setAttr(TitanDialect::kBuffersAttrName,
                  ArrayAttr::get(context, moved));
      return WalkResult::advance();
    });
    return failure(walked.wasInterrupted());
  }

private:
  MLIRContext *context;
  std::vector<StateMove> state;
  int64_t inputDelta;
};

/// The memory plan of `function` with `bytes` of `key` instead.
DictionaryAttr withRegionBytes(DictionaryAttr plan,
                               ArrayRef<std::pair<StringRef, int64_t>> bytes) {
  NamedAttrList entries(plan);
  Builder builder(plan.getContext());
  for (auto [key, value] : bytes)
    entries.set(key, builder.getI64IntegerAttr(value));
  return entries.getDictionary(plan.getContext());
}

int64_t regionBytes(DictionaryAttr plan, StringRef key) {
  auto value = plan.getAs<IntegerAttr>(key);
  return value ? value.getInt() : 0;
}

} // namespace

void mlir::titan::readParameterCopies(func::FuncOp training,
                                      func::FuncOp validation) {
  MLIRContext *context = validation.getContext();
  llvm::StringMap<BlockArgument> params;
  for (BlockArgument arg : validation.getArguments())
    if (getArgRole(validation, arg.getArgNumber()) == ArgRole::Param)
      if (auto name = validation.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), TitanDialect::kNameAttrName))
        params[name.getValue()] = arg;
  for (BlockArgument copy : training.getArguments()) {
    unsigned index = copy.getArgNumber();
    auto name = training.getArgAttrOfType<StringAttr>(
        index, TitanDialect::kNameAttrName);
    if (getArgRole(training, index) != ArgRole::ParamCopy || !name)
      continue;
    std::optional<std::pair<ParamSlot, StringRef>> slot =
        parsePrefixedParamSlot(name.getValue());
    if (!slot || slot->first != ParamSlot::Copy)
      continue;
    auto param = params.find(slot->second);
    if (param == params.end())
      continue;
    SmallVector<CastOp> casts;
    for (Operation *user : param->second.getUsers())
      if (auto cast = dyn_cast<CastOp>(user);
          cast && cast.getType() == copy.getType())
        casts.push_back(cast);
    if (casts.empty())
      continue;
    NamedAttribute attrs[] = {
        NamedAttribute(TitanDialect::kNameAttrName, name),
        NamedAttribute(TitanDialect::kRoleAttrName,
                       getArgRoleAttr(context, ArgRole::ParamCopy))};
    unsigned argIndex = validation.getNumArguments();
    (void)validation.insertArgument(argIndex, copy.getType(),
                                    DictionaryAttr::get(context, attrs),
                                    param->second.getLoc());
    for (CastOp cast : casts) {
      cast.getResult().replaceAllUsesWith(validation.getArgument(argIndex));
      cast.erase();
    }
  }
}

llvm::Error mlir::titan::joinValidationProgram(func::FuncOp training,
                                               func::FuncOp validation) {
  auto trainingPlan = training->getAttrOfType<DictionaryAttr>(
      TitanDialect::kMemoryPlanAttrName);
  auto validationPlan = validation->getAttrOfType<DictionaryAttr>(
      TitanDialect::kMemoryPlanAttrName);
  if (!trainingPlan || !validationPlan)
    return llvm::createStringError(
        "joining the validation program needs both memory plans "
        "(titan-plan-memory)");
  auto nameOf = [](func::FuncOp function, unsigned i) {
    auto name =
        function.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    return name ? name.getValue() : StringRef();
  };
  auto placeOf = [](func::FuncOp function, unsigned i) {
    return function.getArgAttrOfType<BufferAttr>(i,
                                                 TitanDialect::kBufferAttrName);
  };
  llvm::StringMap<unsigned> trainingArguments;
  for (unsigned i = 0; i < training.getNumArguments(); ++i)
    trainingArguments[nameOf(training, i)] = i;

  std::vector<StateMove> moves;
  for (unsigned i = 0; i < validation.getNumArguments(); ++i) {
    BufferAttr place = placeOf(validation, i);
    if (!place || place.getRegion() != MemoryRegion::State)
      continue;
    StringRef name = nameOf(validation, i);
    auto found = trainingArguments.find(name);
    if (found == trainingArguments.end())
      return llvm::createStringError(
          "the validation program reads '" + name +
          "', which the training step does not hold");
    Type trainingType = training.getArgument(found->second).getType();
    Type validationType = validation.getArgument(i).getType();
    BufferAttr target = placeOf(training, found->second);
    if (trainingType != validationType || !target ||
        target.getRegion() != MemoryRegion::State) {
      std::string message;
      llvm::raw_string_ostream os(message);
      os << "the validation program holds '" << name << "' as "
         << validationType << ", the training step as " << trainingType
         << ": the two programs must place the model's tensors alike";
      return llvm::createStringError(message);
    }
    moves.push_back({place.getOffset(), place.getOffset() + place.getBytes(),
                     target.getOffset() - place.getOffset()});
  }

  // The 64-byte alignment of the planner's places.
  int64_t inputDelta =
      llvm::alignTo(regionBytes(trainingPlan, "input_bytes"), 64);
  PlaceMover mover(validation.getContext(), std::move(moves), inputDelta);
  if (failed(mover.run(validation)))
    return llvm::createStringError(
        "the validation program has a view of its state that lies in no "
        "parameter or buffer");

  int64_t arena = std::max(regionBytes(trainingPlan, "arena_bytes"),
                           regionBytes(validationPlan, "arena_bytes"));
  int64_t inputs = inputDelta + regionBytes(validationPlan, "input_bytes");
  int64_t state = regionBytes(trainingPlan, "state_bytes");
  SmallVector<std::pair<StringRef, int64_t>> regions = {
      {"arena_bytes", arena}, {"state_bytes", state}, {"input_bytes", inputs}};
  training->setAttr(TitanDialect::kMemoryPlanAttrName,
                    withRegionBytes(trainingPlan, regions));
  validation->setAttr(TitanDialect::kMemoryPlanAttrName,
                      withRegionBytes(validationPlan, regions));
  return llvm::Error::success();
}
