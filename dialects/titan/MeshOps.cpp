//===- MeshOps.cpp - mesh and redistribute --------------------------------===//

#include "titan/Dialect/Partition.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::titan;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

ParseResult MeshOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  SmallVector<Attribute> axisNames;
  SmallVector<int64_t> axisSizes;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name),
                             result.attributes) ||
      parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Square,
          [&] {
            std::string axis;
            int64_t size = 0;
            if (parser.parseString(&axis) || parser.parseEqual() ||
                parser.parseInteger(size))
              return failure();
            axisNames.push_back(parser.getBuilder().getStringAttr(axis));
            axisSizes.push_back(size);
            return success();
          }) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  Builder &builder = parser.getBuilder();
  result.addAttribute(getAxisNamesAttrName(result.name),
                      builder.getArrayAttr(axisNames));
  result.addAttribute(getAxisSizesAttrName(result.name),
                      builder.getDenseI64ArrayAttr(axisSizes));
  return success();
}

void MeshOp::print(OpAsmPrinter &printer) {
  printer << " ";
  printer.printSymbolName(getSymName());
  printer << " [";
  llvm::interleaveComma(
      llvm::zip(getAxisNames(), getAxisSizes()), printer, [&](auto axis) {
        printer << "\"" << cast<StringAttr>(std::get<0>(axis)).getValue()
                << "\"=" << std::get<1>(axis);
      });
  printer << "]";
  printer.printOptionalAttrDict(
      (*this)->getAttrs(),
      {getSymNameAttrName(), getAxisNamesAttrName(), getAxisSizesAttrName()});
}

LogicalResult MeshOp::verify() {
  if (getAxisNames().size() != getAxisSizes().size())
    return emitOpError() << "has " << getAxisNames().size()
                         << " axis names but " << getAxisSizes().size()
                         << " axis sizes";
  if (getAxisNames().empty())
    return emitOpError() << "needs at least one axis";
  llvm::StringSet<> seen;
  for (auto [nameAttr, size] : llvm::zip(getAxisNames(), getAxisSizes())) {
    StringRef name = cast<StringAttr>(nameAttr).getValue();
    if (name.empty())
      return emitOpError() << "has an axis with an empty name";
    if (!seen.insert(name).second)
      return emitOpError() << "has axis \"" << name << "\" more than once";
    if (size <= 0)
      return emitOpError() << "axis \"" << name
                           << "\" must have a positive size, got " << size;
  }
  // Multiplied while it stays within the bound, so it cannot overflow.
  int64_t devices = 1;
  for (int64_t size : getAxisSizes()) {
    if (size > kMaxDevices / devices)
      return emitOpError() << "has more than " << kMaxDevices
                           << " devices (the product of its axis sizes); "
                              "titan plans every rank ahead of time and "
                              "supports meshes up to that size";
    devices *= size;
  }
  return success();
}

std::optional<unsigned> MeshOp::getAxisIndex(StringRef name) {
  for (auto [index, axis] : llvm::enumerate(getAxisNames()))
    if (cast<StringAttr>(axis).getValue() == name)
      return index;
  return std::nullopt;
}

int64_t MeshOp::getNumDevices() {
  int64_t devices = 1;
  for (int64_t size : getAxisSizes())
    devices *= size;
  return devices;
}

FailureOr<DeviceMesh> MeshOp::getDeviceMesh() {
  SmallVector<std::string> names(getAxisNames().getAsValueRange<StringAttr>());
  llvm::Expected<DeviceMesh> mesh = DeviceMesh::get(names, getAxisSizes());
  if (!mesh)
    return emitError() << llvm::toString(mesh.takeError());
  return std::move(*mesh);
}

MeshOp MeshOp::lookup(Operation *from, FlatSymbolRefAttr symbol) {
  if (!symbol)
    return {};
  return dyn_cast_or_null<MeshOp>(
      SymbolTable::lookupNearestSymbolFrom(from, symbol));
}

//===----------------------------------------------------------------------===//
// ProgramRanks
//===----------------------------------------------------------------------===//

int64_t ProgramRanks::getStageSize() {
  int64_t size = 1;
  for (int64_t axis : stageMesh.getAxisSizes())
    size *= axis;
  return size;
}

FailureOr<DeviceMesh> ProgramRanks::getJobMesh() {
  if (pipelineDegree == 1)
    return stageMesh.getDeviceMesh();
  SmallVector<std::string> names = {kPipelineAxisName.str()};
  SmallVector<int64_t> sizes = {pipelineDegree};
  llvm::append_range(names,
                     stageMesh.getAxisNames().getAsValueRange<StringAttr>());
  llvm::append_range(sizes, stageMesh.getAxisSizes());
  llvm::Expected<DeviceMesh> mesh = DeviceMesh::get(names, sizes);
  if (!mesh)
    return stageMesh.emitError()
           << "the job's mesh of pipeline rank " << pipelineRank << ": "
           << llvm::toString(mesh.takeError());
  return std::move(*mesh);
}

FailureOr<ProgramRanks> mlir::titan::getProgramRanks(ModuleOp module) {
  ProgramRanks ranks;
  MeshOp pipeline;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    if (mesh.getSymName() == kPipelineMeshName) {
      pipeline = mesh;
      continue;
    }
    if (ranks.stageMesh)
      return mesh.emitError("a partitioned program has one titan.mesh (and "
                            "@pipeline under pipeline parallelism); this is "
                            "a second one");
    ranks.stageMesh = mesh;
  }
  if (!ranks.stageMesh)
    return module.emitError("the program has no titan.mesh: partition it "
                            "first (titan-compile --emit=spmd)");
  if (!pipeline)
    return ranks;
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  auto record =
      step ? step->getAttrOfType<DictionaryAttr>(kPipelineAttrName) : nullptr;
  auto degree = record ? record.getAs<IntegerAttr>("degree") : nullptr;
  auto rank = record ? record.getAs<IntegerAttr>("rank") : nullptr;
  if (!degree || !rank)
    return pipeline.emitError("@pipeline needs the pipeline rank's record "
                              "(")
           << kPipelineAttrName
           << " with degree and rank on @train_step, written by "
              "titan-partition-pipeline)";
  ranks.pipelineDegree = degree.getInt();
  ranks.pipelineRank = rank.getInt();
  if (pipeline.getAxisSizes().size() != 1 ||
      pipeline.getAxisSizes()[0] != ranks.pipelineDegree ||
      ranks.pipelineRank < 0 || ranks.pipelineRank >= ranks.pipelineDegree)
    return pipeline.emitError("@pipeline disagrees with @train_step's ")
           << kPipelineAttrName << " (degree " << ranks.pipelineDegree
           << ", rank " << ranks.pipelineRank << ")";
  return ranks;
}

//===----------------------------------------------------------------------===//
// RedistributeOp
//===----------------------------------------------------------------------===//

LogicalResult RedistributeOp::verify() {
  MeshOp mesh = MeshOp::lookup(*this, getTo().getMesh());
  if (!mesh)
    return emitOpError() << "refers to unknown mesh " << getTo().getMesh();
  return getTo().verifyFor([&] { return emitOpError(); }, mesh,
                           getType().getRank());
}

OpFoldResult RedistributeOp::fold(FoldAdaptor) {
  auto producer = getInput().getDefiningOp<RedistributeOp>();
  if (!producer)
    return {};
  // Redistributing to the placements the value already has is a no-op.
  if (producer.getTo() == getTo())
    return getInput();
  // Only the final placements matter: skip the intermediate layout.
  getInputMutable().assign(producer.getInput());
  return getResult();
}

//===----------------------------------------------------------------------===//
// LocalRedistributeOp
//===----------------------------------------------------------------------===//

LogicalResult LocalRedistributeOp::verify() {
  if (getFrom().getMesh() != getTo().getMesh())
    return emitOpError() << "moves a shard from mesh " << getFrom().getMesh()
                         << " to mesh " << getTo().getMesh()
                         << "; both placements must name one mesh";
  MeshOp mesh = MeshOp::lookup(*this, getTo().getMesh());
  if (!mesh)
    return emitOpError() << "refers to unknown mesh " << getTo().getMesh();
  auto global = cast<RankedTensorType>(getGlobal());
  auto emit = [&] { return emitOpError(); };
  if (failed(getFrom().verifyFor(emit, mesh, global.getRank())) ||
      failed(getTo().verifyFor(emit, mesh, global.getRank())))
    return failure();
  FailureOr<DeviceMesh> deviceMesh = mesh.getDeviceMesh();
  if (failed(deviceMesh))
    return failure();
  for (auto [what, placements, type] :
       {std::make_tuple("operand", getFrom(), getInput().getType()),
        std::make_tuple("result", getTo(), getType())}) {
    if (llvm::Error error = verifyPlacements(getStaticShape(global.getShape()),
                                             deviceMesh->getSizes(),
                                             placements.getPlacements()))
      return emitOpError() << llvm::toString(std::move(error));
    RankedTensorType local =
        getLocalType(global, *deviceMesh, placements.getPlacements());
    if (local != type)
      return emitOpError() << what << " type " << type
                           << " is not the shard of " << global << " under "
                           << placements << " (expected " << local << ")";
  }
  return success();
}
