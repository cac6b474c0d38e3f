//===- NcclGroups.h - a rank's place in each split of the world -*- C++ -*-===//
//
// titan's NCCL communicators are split from one world communicator, one
// ncclCommSplit per set of mesh axes: the ranks of a group (MeshGroups.h)
// pass the same color, and each passes its index in the group order as the
// key, so the new communicator's ranks follow the group order that the
// collectives' chunks follow. Pure host arithmetic, the same on every rank.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_NCCL_NCCLGROUPS_H
#define TITAN_RUNTIME_COMM_NCCL_NCCLGROUPS_H

#include "comm/Connect.h"

#include <cstdint>
#include <vector>

namespace titan::rt {

/// What one rank passes to ncclCommSplit for one set of mesh axes.
struct NcclSplit {
  /// The group's world ranks in group order (getGroupRanks).
  std::vector<int64_t> ranks;
  /// The same for every member of the group and different for every other
  /// group of the split: the world rank of its first member (its smallest),
  /// never negative (NCCL_SPLIT_NOCOLOR is -1).
  int color = 0;
  /// The rank's index in `ranks`: its rank in the new communicator.
  int key = 0;
};

/// The split of world rank `rank` of `mesh` over `axes` (indices of mesh
/// axes, distinct; checkMesh checks them).
NcclSplit getNcclSplit(const MeshShape &mesh, const std::vector<int> &axes,
                       int64_t rank);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_NCCL_NCCLGROUPS_H
