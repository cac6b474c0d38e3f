//===- CollectiveChecks.h - every collective, checked exactly ---*- C++ -*-===//
//
// Shared by the unit tests (ranks as threads) and titan-comm-check (ranks
// as processes under titan-run or torchrun): runs every operation of a
// communicator on data each rank derives from its world rank, so every rank
// knows what every other one sent, and compares the results bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TEST_UNIT_RUNTIME_COMM_COLLECTIVECHECKS_H
#define TITAN_TEST_UNIT_RUNTIME_COMM_COLLECTIVECHECKS_H

#include "comm/Communicator.h"

#include <cstdint>
#include <vector>

namespace titan::rt::test {

/// Runs all_gather, all_reduce (in and out of place), reduce_scatter for
/// f32, f64, i64, i32, bf16 and f16 with sum, avg, max and min, all_to_all,
/// broadcast from every root (in and out of place), send/recv around the
/// group with two tags, and a barrier on `communicator`, whose group is
/// `groupRanks` (world ranks in group order) and to which world rank
/// `worldRank` belongs. Every member of the group must call it. Fails on
/// the first operation that fails or result that differs; adds the number
/// of results compared to `checks`.
Status checkCollectives(Communicator &communicator,
                        const std::vector<int64_t> &groupRanks,
                        int64_t worldRank, int64_t &checks);

} // namespace titan::rt::test

#endif // TITAN_TEST_UNIT_RUNTIME_COMM_COLLECTIVECHECKS_H
