//===- MeshGroups.cpp - the groups of ranks of a device mesh --------------===//

#include "comm/MeshGroups.h"

#include <set>

namespace titan::rt {

namespace {

/// "(dp=2, tp=4)": the whole mesh, for messages.
std::string describeMesh(const MeshShape &mesh) {
  std::string text;
  for (size_t axis = 0; axis < mesh.axisSizes.size(); ++axis)
    text += (axis ? ", " : "") + mesh.axisNames[axis] + "=" +
            std::to_string(mesh.axisSizes[axis]);
  return "(" + text + ")";
}

/// The row-major stride of each axis.
std::vector<int64_t> getStrides(const MeshShape &mesh) {
  std::vector<int64_t> strides(mesh.axisSizes.size(), 1);
  for (size_t axis = strides.size(); axis-- > 1;)
    strides[axis - 1] = strides[axis] * mesh.axisSizes[axis];
  return strides;
}

} // namespace

Status checkMesh(const MeshShape &mesh, int64_t worldSize,
                 const std::vector<std::vector<int>> &axisSets) {
  if (mesh.axisNames.size() != mesh.axisSizes.size())
    return Status::invalidArgument(
        "the mesh has " + std::to_string(mesh.axisNames.size()) +
        " axis names but " + std::to_string(mesh.axisSizes.size()) +
        " axis sizes");
  int64_t ranks = 1;
  for (size_t axis = 0; axis < mesh.axisSizes.size(); ++axis) {
    if (mesh.axisSizes[axis] < 1)
      return Status::invalidArgument("mesh axis '" + mesh.axisNames[axis] +
                                     "' has size " +
                                     std::to_string(mesh.axisSizes[axis]));
    ranks *= mesh.axisSizes[axis];
  }
  if (ranks != worldSize)
    return Status::invalidArgument("the program's mesh " + describeMesh(mesh) +
                                   " has " + std::to_string(ranks) +
                                   " ranks but the job has WORLD_SIZE " +
                                   std::to_string(worldSize) + " (launch " +
                                   std::to_string(ranks) + " ranks)");
  for (size_t index = 0; index < axisSets.size(); ++index) {
    std::set<int> seen;
    for (int axis : axisSets[index]) {
      if (axis < 0 || axis >= static_cast<int>(mesh.axisSizes.size()))
        return Status::invalidArgument(
            "communicator " + std::to_string(index) + " names mesh axis " +
            std::to_string(axis) + " but the mesh " + describeMesh(mesh) +
            " has " + std::to_string(mesh.axisSizes.size()) + " axes");
      if (!seen.insert(axis).second)
        return Status::invalidArgument("communicator " + std::to_string(index) +
                                       " names mesh axis '" +
                                       mesh.axisNames[axis] + "' twice");
    }
  }
  return Status::success();
}

std::vector<int64_t> getGroupRanks(const MeshShape &mesh,
                                   const std::vector<int> &axes, int64_t rank) {
  std::vector<int64_t> strides = getStrides(mesh);
  // The group's first member: this rank with coordinate 0 on `axes`.
  int64_t base = rank;
  for (int axis : axes)
    base -= (rank / strides[axis] % mesh.axisSizes[axis]) * strides[axis];
  std::vector<int64_t> ranks = {base};
  // Row-major over `axes`, the first one outer: expand the last axis first.
  for (size_t index = axes.size(); index-- > 0;) {
    int axis = axes[index];
    std::vector<int64_t> expanded;
    for (int64_t coordinate = 0; coordinate < mesh.axisSizes[axis];
         ++coordinate)
      for (int64_t member : ranks)
        expanded.push_back(member + coordinate * strides[axis]);
    ranks = std::move(expanded);
  }
  return ranks;
}

std::string describeAxes(const MeshShape &mesh, const std::vector<int> &axes) {
  std::string text;
  for (int axis : axes)
    text += (text.empty() ? "" : ", ") + mesh.axisNames[axis];
  return "(" + text + ")";
}

} // namespace titan::rt
