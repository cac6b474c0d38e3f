//===- TitanInterfaces.td - titan op interfaces ------------*- tablegen -*-===//
//
// The interfaces that the passes query instead of switching on op kinds: how
// an op may be sharded and partitioned, how it is differentiated, what it
// costs, and how a collective communicates.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_INTERFACES
#define TITAN_INTERFACES

include "mlir/IR/OpBase.td"

def Titan_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::titan";
  let description = [{
    An einsum-like factor rule for the op (Shardy's OpShardingRule): every
    dimension of every operand and result is mapped to a factor; a factor
    shared by operands and results may be sharded consistently, a factor that
    appears only in operands is a reduction factor whose sharding leaves the
    results Partial, and some factors may be marked as not shardable (e.g. the
    softmax dimension). `titan-propagate-placements` chooses placements
    from this rule only.

    `titan-spmdize` partitions the op through the two other methods: the
    placements in the IR are checked and explained as a choice per mesh
    axis (`checkPartition`), then the op's local computation is emitted on
    the local operands (`partition`). Their defaults take the rule at its
    word (the op applied to local shards); ops whose local computation
    differs (a masked embedding lookup, loss parallel's cross-entropy, a
    constant's shard) override them, so no pass holds a list of ops.
  }];
  let methods = [
    InterfaceMethod<
      "Returns the factor rule of this op.",
      "::mlir::titan::OpShardingRule", "getShardingRule", (ins)>,
    InterfaceMethod<[{
        Checks that the op can compute its results' placements from its
        operands' (both in `context`) and records the choice on each mesh
        axis in `context`; emits an error on the op otherwise. Default: the
        sharding rule must explain the placements.
      }],
      "::llvm::LogicalResult", "checkPartition",
      (ins "::mlir::titan::PartitionContext &":$context), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::titan::checkPartitionByRule($_op.getOperation(),
                                                   context);
      }]>,
    InterfaceMethod<[{
        Emits the op's local computation at the builder's insertion point on
        `localOperands` (the operands' shards) and returns the local
        results, which have `context`'s local result types. Called after
        `checkPartition` succeeded. Default: the op cloned on the local
        operands with the local result types.
      }],
      "::llvm::FailureOr<::llvm::SmallVector<::mlir::Value>>", "partition",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$localOperands,
           "::mlir::titan::PartitionContext &":$context), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::titan::partitionByCloning($_op.getOperation(), builder,
                                                 localOperands, context);
      }]>,
  ];
}

def Titan_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::titan";
  let description = [{
    An op of the local program that moves data between the ranks of a group
    (the ranks whose mesh coordinates differ only on the named axes). The
    plan report, the memory planner and the kernel outliner recognize
    communication through this interface; its traffic comes from the cost
    model (titan/CostModel/CostModel.h).
  }];
  let methods = [
    InterfaceMethod<"The communication pattern, for the cost model.",
      "::mlir::titan::CollectiveKind", "getCollectiveKind", (ins)>,
    InterfaceMethod<"The mesh axes a group spans (names, outer first).",
      "::mlir::ArrayAttr", "getAxes", (ins)>,
    InterfaceMethod<"Number of ranks in one group.",
      "int64_t", "getGroupSize", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::titan::getGroupSize($_op.getOperation(),
                                           $_op.getMeshAttr(), $_op.getAxes());
      }]>,
    InterfaceMethod<[{
        What the op does to the tensor in a few words, for reports:
        "dim 1", "dim 1 sum", "sum", "dim 0->1", "root 0", "peer 1".
      }],
      "std::string", "getSummary", (ins)>,
    InterfaceMethod<"Bytes one rank sends (ring algorithms).",
      "double", "getBytesSentPerRank", (ins), /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::titan::getCollectiveBytesSentPerRank(
            $_op.getOperation());
      }]>,
  ];
}

def Titan_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::titan";
  let description = [{
    Reverse-mode differentiation of the op: given the cotangents of its
    results, emit ops that compute the cotangents of its operands (the
    vector-Jacobian product). `titan-build-train-step` differentiates a
    program only through this interface; an op without it is an error that
    names the op.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the VJP at the builder's insertion point. `resultGrads` has one
        entry per result (null when the result does not reach the loss).
        Returns one cotangent per operand (null when the operand is not
        differentiable, e.g. integer token ids).
      }],
      "::llvm::FailureOr<::llvm::SmallVector<::mlir::Value>>", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads)>,
  ];
}

def Titan_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::titan";
  let description = [{
    The op's work for the cost model: floating-point operations and bytes
    read plus written, for the shapes the op has in the IR (global before
    spmdize, local after).
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations this op performs.",
      "int64_t", "getFlops", (ins)>,
    InterfaceMethod<"Bytes this op reads from and writes to memory.",
      "int64_t", "getBytesAccessed", (ins),
      /*methodBody=*/"", /*defaultImplementation=*/[{
        return ::mlir::titan::defaultBytesAccessed($_op);
      }]>,
  ];
}

#endif // TITAN_INTERFACES
