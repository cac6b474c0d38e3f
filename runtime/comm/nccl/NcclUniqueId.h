//===- NcclUniqueId.h - NCCL's unique id through titan's store --*- C++ -*-===//
//
// Every rank of an NCCL communicator needs the same ncclUniqueId, which one
// rank creates (ncclGetUniqueId). titan's ranks pass it through the
// rendezvous store they already share: rank 0 sets it under a key of the
// job (the store client's prefix names the run and attempt), the others
// wait for that key. The value carries the NCCL version of the rank that
// wrote it, so ranks that load different NCCL libraries fail with a
// message instead of hanging or crashing inside ncclCommInitRank.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_NCCL_NCCLUNIQUEID_H
#define TITAN_RUNTIME_COMM_NCCL_NCCLUNIQUEID_H

#include "comm/nccl/NcclVersion.h"
#include "core/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan::rt {

class StoreClient;

/// The store key of the world communicator's unique id (under the store
/// client's job prefix).
inline constexpr const char *kNcclWorldIdKey = "nccl/world/unique_id";

/// The store value of `id` from a rank running NCCL `version`
/// (ncclGetVersion's code): "titan-nccl-id <version> " followed by the
/// id's NCCL_UNIQUE_ID_BYTES bytes.
std::vector<uint8_t> encodeUniqueId(const ncclUniqueId &id, int version);

/// Reads encodeUniqueId's `value`, found under `key`, into `id`, on a rank
/// running NCCL `version`. A value that is not one, or one written by
/// another NCCL version, is an error naming the key.
Status decodeUniqueId(const std::string &key, const std::vector<uint8_t> &value,
                      int version, ncclUniqueId &id);

/// "2.28.9": an NCCL version code, for messages.
std::string describeNcclVersion(int version);

/// Sets `key` in `store` to `id`, written by a rank running NCCL `version`.
Status publishUniqueId(StoreClient &store, const std::string &key,
                       const ncclUniqueId &id, int version);

/// Waits (up to the store client's timeout) for the id rank 0 publishes
/// under `key`, and reads it into `id` on a rank running NCCL `version`.
Status fetchUniqueId(StoreClient &store, const std::string &key, int version,
                     ncclUniqueId &id);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_NCCL_NCCLUNIQUEID_H
