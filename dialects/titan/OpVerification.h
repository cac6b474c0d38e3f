//===- OpVerification.h - checks shared by the op verifiers -----*- C++ -*-===//
//
// Internal to dialects/titan: small checks the compute and collective op
// verifiers share, so they report the same condition the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECTS_TITAN_OPVERIFICATION_H
#define TITAN_DIALECTS_TITAN_OPVERIFICATION_H

#include "titan/Dialect/TitanDialect.h"

namespace mlir::titan {

/// Checks that `dim` (the attribute `what` of `op`) is a dimension of a
/// rank-`rank` tensor: "<what> <dim> is out of range for a rank-<rank>
/// tensor" otherwise.
LogicalResult verifyDimInRange(Operation *op, StringRef what, int64_t dim,
                               int64_t rank);

/// Checks the types of one parameter's AdamW update (titan.adamw,
/// titan.fused_adamw): `grad` has `param`'s shape, and `copy`, unless
/// null, `param`'s shape and a strictly narrower float type.
LogicalResult verifyAdamWTypes(Operation *op, RankedTensorType param,
                               RankedTensorType grad, Type copy);

/// Checks AdamW's hyperparameters: betas in [0, 1), eps positive and
/// finite, weight_decay non-negative and finite.
LogicalResult verifyAdamWHyperparameters(Operation *op, double beta1,
                                         double beta2, double eps,
                                         double weightDecay);

} // namespace mlir::titan

#endif // TITAN_DIALECTS_TITAN_OPVERIFICATION_H
