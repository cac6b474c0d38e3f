//===- CommChecks.h - argument checks shared by communicators ---*- C++ -*-===//
//
// What every Communicator checks before it communicates, with errors that
// name the operation and the communicator ("all_reduce over mesh axes (tp)
// [ranks 2, 3]: ..."): all ranks of a group pass the same arguments, so a
// bad one fails everywhere instead of hanging.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_COMMCHECKS_H
#define TITAN_RUNTIME_COMM_COMMCHECKS_H

#include "comm/Reductions.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan::rt {

/// "mesh axes (tp) [ranks 2, 3]": a communicator in messages.
std::string describeCommunicator(const std::string &axes,
                                 const std::vector<int64_t> &worldRanks);

/// Checks that the byte or element count `size` (named `what`) of the
/// operation `where` is not negative.
Status checkSize(const std::string &where, const char *what, int64_t size);

/// Checks that `root` is a member index of a group of `groupSize`.
Status checkRoot(const std::string &where, int64_t root, int64_t groupSize);

/// Checks the peer of a send or recv: a member index of a group of
/// `groupSize` other than `rank`; and its tag, which must fit 32 bits
/// unsigned.
Status checkPeer(const std::string &where, int64_t peer, int64_t tag,
                 int64_t rank, int64_t groupSize);

/// getReduction, with errors naming `where`.
Status checkReduction(const std::string &where, int32_t dtype, int32_t reduce,
                      Reduction &reduction);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_COMMCHECKS_H
