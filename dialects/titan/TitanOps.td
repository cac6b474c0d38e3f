//===- TitanOps.td - titan operations ----------------------*- tablegen -*-===//
//
// The op set is split by theme into files that all generate into one op list:
//   TitanMeshOps.td        mesh and redistribute (the global, annotated view)
//   TitanComputeOps.td     tensor compute of a Llama-class training step
//   TitanCollectiveOps.td  collectives on local tensors (after spmdize)
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_OPS
#define TITAN_OPS

include "TitanDialect.td"
include "TitanAttrs.td"
include "TitanInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Shared type constraints.
//===----------------------------------------------------------------------===//

/// Floating-point element types titan computes in.
def Titan_Float : AnyTypeOf<[F32, F16, BF16, F64]>;
/// Ranked tensors of titan's floating-point types.
def Titan_FloatTensor : RankedTensorOf<[F32, F16, BF16, F64]>;
/// Ranked tensors of titan's floating-point and (two's complement) integer
/// types: what elementwise integer arithmetic takes (positions, masks).
def Titan_NumericTensor : RankedTensorOf<[F32, F16, BF16, F64, I64, I32]>;
/// Ranked tensors of integer indices (token ids, labels).
def Titan_IndexTensor : RankedTensorOf<[I64, I32]>;
/// Any ranked tensor titan handles.
def Titan_Tensor : RankedTensorOf<[F32, F16, BF16, F64, I64, I32, I1]>;

/// Array of mesh axis names, e.g. ["fsdp", "tp"].
def Titan_MeshAxesAttr : TypedArrayAttrBase<StrAttr, "mesh axis names">;

include "TitanMeshOps.td"
include "TitanComputeOps.td"
include "TitanCollectiveOps.td"
include "TitanExecutableOps.td"

#endif // TITAN_OPS
