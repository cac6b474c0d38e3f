//===- CollectiveSimulator.h - collectives on host tensors ------*- C++ -*-===//
//
// The reference the placement algebra is tested against: shards a host
// tensor, runs a redistribution plan with in-memory collectives over the
// mesh-axis groups (moving padded buffers as real collectives do), and
// assembles the result. Test support only.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TEST_UNIT_PLACEMENT_COLLECTIVESIMULATOR_H
#define TITAN_TEST_UNIT_PLACEMENT_COLLECTIVESIMULATOR_H

#include "titan/Placement/PlacementAlgebra.h"

#include <vector>

namespace mlir::titan {

/// A dense row-major host tensor of doubles.
struct HostTensor {
  llvm::SmallVector<int64_t> shape;
  std::vector<double> data;

  /// The number of elements: the product of `shape`.
  int64_t getNumElements() const;
  bool operator==(const HostTensor &other) const {
    return shape == other.shape && data == other.data;
  }
  bool operator!=(const HostTensor &other) const { return !(*this == other); }
};

/// Every rank's local tensor under `placements`, indexed by rank. Shards are
/// torch.chunk boxes of `global`; a partial axis splits each value into parts
/// that reduce to it, different on every rank and element (sum and avg: small
/// integer offsets balanced on coordinate 0; max: coordinate 0 holds the
/// value, the others less; min: the others more), so integer-valued tensors
/// stay exact.
llvm::Expected<std::vector<HostTensor>>
shardTensor(const DeviceMesh &mesh, const HostTensor &global,
            llvm::ArrayRef<Placement> placements);

/// Runs `step` on every rank's local tensor with in-memory collectives over
/// the groups of `step.meshAxis`, moving padded buffers as a real collective
/// would. Fails when a local tensor does not have its rank's shape under
/// `step.before`.
llvm::Error applyRedistributeStep(const DeviceMesh &mesh,
                                  llvm::ArrayRef<int64_t> globalShape,
                                  const RedistributeStep &step,
                                  std::vector<HostTensor> &locals);

/// Rebuilds the global tensor from every rank's local tensor under
/// `placements`: reduces over the partial axes and places the shards. Fails
/// when a local tensor has the wrong shape or two replicas disagree.
llvm::Expected<HostTensor> assembleTensor(const DeviceMesh &mesh,
                                          llvm::ArrayRef<int64_t> globalShape,
                                          llvm::ArrayRef<HostTensor> locals,
                                          llvm::ArrayRef<Placement> placements);

} // namespace mlir::titan

#endif // TITAN_TEST_UNIT_PLACEMENT_COLLECTIVESIMULATOR_H
