//===- ProgramDescription.cpp - what a compiled program tells its runtime -===//

#include "titan/Codegen/ProgramDescription.h"

#include "titan/Checkpoint/Layout.h"
#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/ElementTypes.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Runtime/titanrt.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::titan;

int32_t mlir::titan::getRuntimeDType(Type element) {
  if (element.isF32())
    return TITANRT_F32;
  if (element.isF64())
    return TITANRT_F64;
  if (element.isBF16())
    return TITANRT_BF16;
  if (element.isF16())
    return TITANRT_F16;
  if (element.isSignlessInteger(64))
    return TITANRT_I64;
  if (element.isSignlessInteger(32))
    return TITANRT_I32;
  if (element.isSignlessInteger(1))
    return TITANRT_BOOL;
  return -1;
}

StringRef mlir::titan::getRuntimeDTypeName(Type element) {
  if (getRuntimeDType(element) < 0)
    return "";
  return stringifyElementType(*getElementTypeOf(element));
}

int32_t CommunicatorTable::getIndex(ArrayRef<std::string> names) {
  for (auto [index, known] : llvm::enumerate(axes))
    if (ArrayRef<std::string>(known) == names)
      return index;
  axes.push_back(names.vec());
  return axes.size() - 1;
}

int32_t CommunicatorTable::getIndex(ArrayAttr axesAttr) {
  std::vector<std::string> names;
  for (Attribute axis : axesAttr)
    names.push_back(cast<StringAttr>(axis).getValue().str());
  return getIndex(names);
}

void CommunicatorTable::addCommunicatorsOf(func::FuncOp step) {
  step.walk([&](Operation *op) {
    if (auto collective = dyn_cast<CollectiveOpInterface>(op))
      getIndex(collective.getAxes());
    else if (auto index = dyn_cast<AxisIndexOp>(op))
      getIndex(index.getAxes());
  });
}

/// "[2,128]" (the checkpoint plan's bracketed lists).
static std::string formatList(ArrayRef<int64_t> values) {
  return "[" +
         llvm::join(llvm::map_range(
                        values, [](int64_t v) { return std::to_string(v); }),
                    ",") +
         "]";
}

/// " <region> <offset> <bytes>" of a #titan.buffer.
static std::string formatPlace(BufferAttr place) {
  return (" " + stringifyMemoryRegion(place.getRegion()) + " " +
          std::to_string(place.getOffset()) + " " +
          std::to_string(place.getBytes()))
      .str();
}

FailureOr<std::string>
mlir::titan::describeProgram(ModuleOp module, func::FuncOp step,
                             const CommunicatorTable &communicators,
                             const RunDefaults &defaults, StringRef backend) {
  auto plan =
      step->getAttrOfType<DictionaryAttr>(TitanDialect::kMemoryPlanAttrName);
  if (!plan)
    return step.emitError("describing the program needs its memory plan "
                          "(titan-plan-memory)");
  auto regionBytes = [&](StringRef key) {
    auto value = plan.getAs<IntegerAttr>(key);
    return value ? value.getInt() : 0;
  };
  // The runtime's mesh is the job's: a pipeline rank's program names the
  // pp axis too, and its communicators over @pipeline ["pp"] are over it.
  FailureOr<ProgramRanks> ranks = getProgramRanks(module);
  if (failed(ranks))
    return failure();
  FailureOr<DeviceMesh> mesh = ranks->stageMesh.getDeviceMesh();
  FailureOr<DeviceMesh> jobMesh = ranks->getJobMesh();
  if (failed(mesh) || failed(jobMesh))
    return failure();

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "titan-program 1\nmesh";
  for (unsigned axis = 0; axis < jobMesh->getNumAxes(); ++axis)
    os << " " << jobMesh->getAxisName(axis) << "=" << jobMesh->getSize(axis);
  if (ranks->pipelineDegree > 1)
    os << "\npipeline rank=" << ranks->pipelineRank;
  // CPU programs say nothing (as before there were backends).
  if (backend != "cpu")
    os << "\nbackend " << backend;
  os << "\nregions arena=" << regionBytes("arena_bytes")
     << " state=" << regionBytes("state_bytes")
     << " inputs=" << regionBytes("input_bytes") << "\n";
  const LrSchedule &schedule = defaults.schedule;
  os << "defaults lr=" << llvm::formatv("{0:e9}", defaults.learningRate)
     << " steps=" << defaults.steps << " seed=" << defaults.seed << "\n";
  os << "lr_schedule warmup=" << schedule.warmupSteps
     << " stable=" << schedule.stableSteps << " decay=" << schedule.decaySteps
     << " type=" << stringifyLrDecayType(schedule.decayType)
     << " min=" << llvm::formatv("{0:e17}", schedule.minLrFactor) << "\n";
  for (auto [index, axes] : llvm::enumerate(communicators.getAxes())) {
    for (auto [position, axis] : llvm::enumerate(axes)) {
      if (!jobMesh->findAxis(axis))
        return step.emitError("communicator ")
               << index << " is over axis '" << axis
               << "', which the job's mesh does not have";
      if (llvm::is_contained(ArrayRef(axes).take_front(position), axis))
        return step.emitError("communicator ")
               << index << " names axis '" << axis << "' twice";
    }
    os << "comm " << index << " " << llvm::join(axes, " ") << "\n";
  }

  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto name =
        step.getArgAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    std::optional<ArgRole> role = getArgRole(step, i);
    auto place =
        step.getArgAttrOfType<BufferAttr>(i, TitanDialect::kBufferAttrName);
    auto type = cast<RankedTensorType>(arg.getType());
    if (!name || !role || !place)
      return step.emitError("argument #")
             << i << " lacks a name, role or planned buffer";
    os << "arg " << i << " " << name.getValue() << " "
       << stringifyArgRole(*role) << " "
       << getRuntimeDTypeName(type.getElementType()) << " "
       << formatList(type.getShape()) << formatPlace(place) << "\n";
    if (role != ArgRole::Input)
      continue;
    // Inputs come from a global batch: each rank reads its box.
    FailureOr<ArgumentLayout> layout = computeArgumentLayout(step, i, *mesh);
    if (failed(layout))
      return failure();
    os << "global " << name.getValue() << " " << formatList(layout->globalShape)
       << "\n";
    // Every rank of the job, as if it ran this program: the pipeline
    // ranks' programs cut the batch alike.
    for (int64_t rank = 0; rank < jobMesh->getNumRanks(); ++rank) {
      const IndexBox &box = layout->boxes[rank % layout->boxes.size()];
      os << "box " << name.getValue() << " " << rank << " "
         << formatList(box.offsets) << " " << formatList(box.sizes) << "\n";
    }
    if (auto order = step.getArgAttrOfType<DenseI64ArrayAttr>(
            i, TitanDialect::kSequenceOrderAttrName))
      os << "order " << name.getValue() << " " << formatList(order.asArrayRef())
         << "\n";
    if (auto range = step.getArgAttrOfType<DenseI64ArrayAttr>(
            i, TitanDialect::kIdRangeAttrName))
      os << "range " << name.getValue() << " " << formatList(range.asArrayRef())
         << "\n";
  }
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    auto name =
        step.getResultAttrOfType<StringAttr>(i, TitanDialect::kNameAttrName);
    auto place =
        step.getResultAttrOfType<BufferAttr>(i, TitanDialect::kBufferAttrName);
    auto type = cast<RankedTensorType>(step.getResultTypes()[i]);
    if (!name || !place)
      return step.emitError("result #") << i << " lacks a name or buffer";
    os << "result " << i << " " << name.getValue() << " "
       << getRuntimeDTypeName(type.getElementType()) << " "
       << formatList(type.getShape()) << formatPlace(place) << "\n";
  }

  os << "end\n";
  return text;
}
