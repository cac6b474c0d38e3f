//===- MeshGroups.h - the groups of ranks of a device mesh ------*- C++ -*-===//
//
// Ranks are laid out row-major over the mesh's axes; the group of a rank
// over a set of axes is the ranks whose coordinates differ from its own only
// on those axes, ordered row-major over them in the order the set names
// them (the first axis outer), which is also the order of the chunks of a
// collective.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_MESHGROUPS_H
#define TITAN_RUNTIME_COMM_MESHGROUPS_H

#include "comm/Connect.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan::rt {

/// Checks that `mesh` is well formed and has `worldSize` ranks, and that
/// every axis set names distinct axes of it.
Status checkMesh(const MeshShape &mesh, int64_t worldSize,
                 const std::vector<std::vector<int>> &axisSets);

/// The world ranks of the group of `rank` over `axes`, in group order.
std::vector<int64_t> getGroupRanks(const MeshShape &mesh,
                                   const std::vector<int> &axes, int64_t rank);

/// "(fsdp, tp)": the names of `axes` of `mesh`, for messages.
std::string describeAxes(const MeshShape &mesh, const std::vector<int> &axes);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_MESHGROUPS_H
