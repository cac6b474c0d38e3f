//===- RedistributeToCollectives.cpp - titan-redistribute-to-collectives --===//
//
// Replaces every titan.local_redistribute with the steps of the placement
// algebra's plan (see passes/Passes.td for the contract): one collective per
// mesh axis that moves data, static slices and selects on the rank's
// coordinate for the steps that stay local.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Partition.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"

namespace mlir::titan {
#define GEN_PASS_DEF_REDISTRIBUTETOCOLLECTIVESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Emits the steps of one local redistribute before it.
class StepEmitter {
public:
  StepEmitter(LocalRedistributeOp op, const DeviceMesh &mesh)
      : op(op), mesh(mesh), builder(op), b(builder, op.getLoc()) {}

  /// The local value after the plan's steps, or failure with an error.
  FailureOr<Value> emit();

private:
  /// The rank's coordinate on mesh axis `axis` as a 0-d i64 tensor.
  Value axisIndex(unsigned axis) {
    return AxisIndexOp::create(
        builder, op.getLoc(), RankedTensorType::get({}, builder.getI64Type()),
        op.getTo().getMesh(),
        builder.getStrArrayAttr({mesh.getAxisName(axis)}));
  }

  LocalRedistributeOp op;
  const DeviceMesh &mesh;
  OpBuilder builder;
  TensorBuilder b;
};

} // namespace

FailureOr<Value> StepEmitter::emit() {
  auto global = cast<RankedTensorType>(op.getGlobal());
  llvm::Expected<std::vector<RedistributeStep>> steps = planRedistribution(
      getStaticShape(global.getShape()), mesh.getSizes(),
      op.getFrom().getPlacements(), op.getTo().getPlacements());
  if (!steps)
    return op.emitError() << llvm::toString(steps.takeError());
  MLIRContext *context = builder.getContext();
  Location loc = op.getLoc();
  StringRef meshName = op.getTo().getMesh().getValue();
  Value local = op.getInput();
  for (const RedistributeStep &step : *steps) {
    RankedTensorType type = getLocalType(global, mesh, step.after);
    unsigned axis = step.meshAxis;
    ArrayAttr axes = builder.getStrArrayAttr({mesh.getAxisName(axis)});
    auto reduce = [&] { return ReduceKindAttr::get(context, *step.reduce); };
    switch (step.kind) {
    case StepKind::AllGather:
      local = AllGatherOp::create(builder, loc, type, local, meshName, axes,
                                  *step.unshardDim);
      break;
    case StepKind::AllReduce:
      local = AllReduceOp::create(builder, loc, type, local, meshName, axes,
                                  reduce());
      break;
    case StepKind::ReduceScatter:
      if (!isa<FloatType>(type.getElementType()))
        return op.emitError()
               << "cannot reduce-scatter a partial " << global
               << ": titan.reduce_scatter takes floating-point tensors";
      local = ReduceScatterOp::create(builder, loc, type, local, meshName, axes,
                                      *step.shardDim, reduce());
      break;
    case StepKind::AllToAll:
      local = AllToAllOp::create(builder, loc, type, local, meshName, axes,
                                 *step.shardDim, *step.unshardDim);
      break;
    case StepKind::LocalChunk: {
      // Chunk k of the local value, chosen by the rank's coordinate: a chain
      // of selects, exact for every element type.
      int64_t dim = *step.shardDim, size = type.getDimSize(dim);
      Value index = axisIndex(axis);
      int64_t last = mesh.getSize(axis) - 1;
      Value chunk = b.slice(local, dim, last * size, (last + 1) * size, 1);
      for (int64_t k = last - 1; k >= 0; --k) {
        Value candidate = b.slice(local, dim, k * size, (k + 1) * size, 1);
        Value isK = b.indexEquals(index, k, type.getShape());
        chunk = b.select(isK, candidate, chunk);
      }
      local = chunk;
      break;
    }
    case StepKind::Partition:
      // Sum: coordinate 0 keeps the value, the others hold zero; the other
      // reductions keep it on every rank.
      if (*step.reduce == ReduceKind::Sum) {
        Value isFirst = b.indexEquals(axisIndex(axis), 0, type.getShape());
        Value zeros = b.splat(type, 0.0);
        local = b.select(isFirst, local, zeros);
      }
      break;
    }
  }
  return local;
}

namespace {
class RedistributeToCollectivesPass
    : public titan::impl::RedistributeToCollectivesPassBase<
          RedistributeToCollectivesPass> {
public:
  using RedistributeToCollectivesPassBase::RedistributeToCollectivesPassBase;

  void runOnOperation() override {
    llvm::StringMap<DeviceMesh> meshes;
    WalkResult result =
        getOperation().walk([&](LocalRedistributeOp op) -> WalkResult {
          FlatSymbolRefAttr symbol = op.getTo().getMesh();
          auto it = meshes.find(symbol.getValue());
          if (it == meshes.end()) {
            // The verifier found the mesh.
            FailureOr<DeviceMesh> mesh =
                MeshOp::lookup(op, symbol).getDeviceMesh();
            if (failed(mesh))
              return WalkResult::interrupt();
            it = meshes.try_emplace(symbol.getValue(), std::move(*mesh)).first;
          }
          FailureOr<Value> local = StepEmitter(op, it->second).emit();
          if (failed(local))
            return WalkResult::interrupt();
          op.replaceAllUsesWith(*local);
          op.erase();
          return WalkResult::advance();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
