//===- TitanDialect.h - the titan dialect -----------------------*- C++ -*-===//
//
// Umbrella header of the titan dialect: dialect, attributes, interfaces and
// ops.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITANDIALECT_H
#define TITAN_DIALECT_TITANDIALECT_H

#include "titan/CostModel/CostModel.h"
#include "titan/Dialect/ShardingRule.h"
#include "titan/Placement/Placement.h"
#include "titan/Placement/PlacementAlgebra.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "titan/TitanDialect.h.inc"

namespace mlir::titan {
class MeshOp;

/// Default of CostOpInterface::getBytesAccessed: the bytes of every ranked
/// tensor operand and result of `op` (of a slice, its result twice: it
/// reads only the elements it keeps).
int64_t defaultBytesAccessed(Operation *op);

/// Number of ranks in the group of a collective over `axes` of the mesh
/// `mesh` (product of the axis sizes; 1 when the mesh cannot be found).
int64_t getGroupSize(Operation *op, FlatSymbolRefAttr mesh, ArrayAttr axes);

/// Number of elements of a static ranked tensor type; 0 for anything else.
int64_t getStaticNumElements(Type type);

/// Bytes of one element of `type` (bf16: 2, i1: 1, ...).
int64_t getElementByteWidth(Type type);

/// Whether every value of the float (element) type of `from` is exactly a
/// value of the wider float (element) type of `to`: bf16 and f16 in f32
/// and f64, f32 in f64. Tensor types are compared by their element types.
bool isExactFloatWidening(Type from, Type to);

/// Bytes of a value of static ranked tensor type `type`; 0 for anything
/// else.
int64_t getStaticByteSize(Type type);

/// Default of CollectiveOpInterface::getBytesSentPerRank: the cost model's
/// bytes for the op's kind, group and local operand (result for a recv).
double getCollectiveBytesSentPerRank(Operation *op);

/// The type of `titan.attention`'s log-sum-exp for queries of type `q`
/// (a ranked tensor, [batch, q_heads, seq, head_dim]): [batch, q_heads, seq]
/// in f32, f64 for f64 queries. For a `q` of another rank (which the op's
/// verifier rejects), its shape without the last dim; `q` itself if it is
/// no ranked tensor.
Type getAttentionLseType(Type q);

class PartitionContext;
/// Default of ShardingRuleOpInterface::checkPartition: the op's sharding
/// rule must explain the placements of `context` (see Partition.h).
LogicalResult checkPartitionByRule(Operation *op, PartitionContext &context);
/// Default of ShardingRuleOpInterface::partition: `op` cloned on
/// `localOperands` with the local result types, after the padding of its
/// uneven reduced dims is masked (PartitionContext::maskReducedPadding).
FailureOr<SmallVector<Value>> partitionByCloning(Operation *op,
                                                 OpBuilder &builder,
                                                 ValueRange localOperands,
                                                 PartitionContext &context);
} // namespace mlir::titan

#include "titan/TitanInterfaces.h.inc"

#include "titan/TitanEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "titan/TitanAttrs.h.inc"

#define GET_OP_CLASSES
#include "titan/TitanOps.h.inc"

#endif // TITAN_DIALECT_TITANDIALECT_H
