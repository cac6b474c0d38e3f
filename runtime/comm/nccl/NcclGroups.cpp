//===- NcclGroups.cpp - a rank's place in each split of the world ---------===//

#include "comm/nccl/NcclGroups.h"

#include "comm/MeshGroups.h"

#include <algorithm>

namespace titan::rt {

NcclSplit getNcclSplit(const MeshShape &mesh, const std::vector<int> &axes,
                       int64_t rank) {
  NcclSplit split;
  split.ranks = getGroupRanks(mesh, axes, rank);
  // The first member has coordinate 0 on every axis of the set, so it is
  // the group's smallest rank, and no other group holds it.
  split.color = static_cast<int>(split.ranks.front());
  split.key =
      static_cast<int>(std::find(split.ranks.begin(), split.ranks.end(), rank) -
                       split.ranks.begin());
  return split;
}

} // namespace titan::rt
