//===- TitanInterfaces.td - titan op interfaces ------------*- tablegen -*-===//
//
// The three interfaces that the passes query instead of switching on op kinds:
// how an op may be sharded, how it is differentiated, and what it costs.
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
    softmax dimension). `titan-propagate-placements` and `titan-spmdize` read
    only this rule.
  }];
  let methods = [
    InterfaceMethod<
      "Returns the factor rule of this op.",
      "::mlir::titan::OpShardingRule", "getShardingRule", (ins)>,
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
