//===- CommChecks.cpp - argument checks shared by communicators -----------===//

#include "comm/CommChecks.h"

namespace titan::rt {

std::string describeCommunicator(const std::string &axes,
                                 const std::vector<int64_t> &worldRanks) {
  std::string ranks;
  for (int64_t rank : worldRanks)
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
  return "mesh axes " + axes +
         (worldRanks.size() == 1 ? " [rank " : " [ranks ") + ranks + "]";
}

Status checkSize(const std::string &where, const char *what, int64_t size) {
  if (size < 0)
    return Status::invalidArgument(where + ": " + what + " is " +
                                   std::to_string(size));
  return Status::success();
}

Status checkRoot(const std::string &where, int64_t root, int64_t groupSize) {
  if (root < 0 || root >= groupSize)
    return Status::invalidArgument(where + ": root " + std::to_string(root) +
                                   " is not a group index (the group has " +
                                   std::to_string(groupSize) + " ranks)");
  return Status::success();
}

Status checkPeer(const std::string &where, int64_t peer, int64_t tag,
                 int64_t rank, int64_t groupSize) {
  if (peer < 0 || peer >= groupSize)
    return Status::invalidArgument(where + ": peer " + std::to_string(peer) +
                                   " is not a group index (the group has " +
                                   std::to_string(groupSize) + " ranks)");
  if (peer == rank)
    return Status::invalidArgument(where + ": peer " + std::to_string(peer) +
                                   " is this rank itself");
  if (tag < 0 || tag > int64_t(UINT32_MAX))
    return Status::invalidArgument(where + ": tag " + std::to_string(tag) +
                                   " is outside [0, 2^32)");
  return Status::success();
}

Status checkReduction(const std::string &where, int32_t dtype, int32_t reduce,
                      Reduction &reduction) {
  Status status = getReduction(dtype, reduce, reduction);
  if (!status.ok())
    return Status(status.getCode(), where + ": " + status.getMessage());
  return status;
}

} // namespace titan::rt
