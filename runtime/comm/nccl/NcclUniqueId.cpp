//===- NcclUniqueId.cpp - NCCL's unique id through titan's store ----------===//

#include "comm/nccl/NcclUniqueId.h"

#include "comm/Socket.h"
#include "comm/StoreClient.h"

#include <cstring>

namespace titan::rt {

namespace {

/// What every value starts with, before the version.
constexpr const char kMagic[] = "titan-nccl-id ";

/// The text before the id's bytes: the magic, the version and a space.
std::string getHeader(int version) {
  return kMagic + std::to_string(version) + " ";
}

} // namespace

std::string describeNcclVersion(int version) {
  // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z from 2.9 on, and
  // X * 1000 + Y * 100 + Z before.
  if (version < 20900)
    return std::to_string(version / 1000) + "." +
           std::to_string(version / 100 % 10) + "." +
           std::to_string(version % 100);
  return std::to_string(version / 10000) + "." +
         std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

std::vector<uint8_t> encodeUniqueId(const ncclUniqueId &id, int version) {
  std::string header = getHeader(version);
  std::vector<uint8_t> value(header.begin(), header.end());
  const auto *bytes = reinterpret_cast<const uint8_t *>(id.internal);
  value.insert(value.end(), bytes, bytes + sizeof(id.internal));
  return value;
}

Status decodeUniqueId(const std::string &key, const std::vector<uint8_t> &value,
                      int version, ncclUniqueId &id) {
  const std::string magic = kMagic;
  const std::string text(value.begin(), value.end());
  if (text.compare(0, magic.size(), magic) != 0)
    return Status::communication(
        "the value of '" + key +
        "' in the rendezvous store is not an NCCL unique id written by "
        "titan (does another job use the same store and run id?)");
  size_t end = text.find(' ', magic.size());
  int written = 0;
  try {
    written = std::stoi(text.substr(magic.size(), end - magic.size()));
  } catch (const std::exception &) {
    end = std::string::npos;
  }
  if (end == std::string::npos)
    return Status::communication("the NCCL unique id under '" + key +
                                 "' has no version");
  if (written != version)
    return Status::communication(
        "the NCCL unique id under '" + key +
        "' was written by a rank "
        "running NCCL " +
        describeNcclVersion(written) + " but this rank runs NCCL " +
        describeNcclVersion(version) +
        ": every rank must load the same NCCL (check LD_LIBRARY_PATH)");
  const size_t bytes = value.size() - (end + 1);
  if (bytes != sizeof(id.internal))
    return Status::communication("the NCCL unique id under '" + key + "' has " +
                                 std::to_string(bytes) + " bytes, not " +
                                 std::to_string(sizeof(id.internal)));
  std::memcpy(id.internal, value.data() + end + 1, sizeof(id.internal));
  return Status::success();
}

Status publishUniqueId(StoreClient &store, const std::string &key,
                       const ncclUniqueId &id, int version) {
  return store.set(key, encodeUniqueId(id, version));
}

Status fetchUniqueId(StoreClient &store, const std::string &key, int version,
                     ncclUniqueId &id) {
  std::vector<uint8_t> value;
  Status status = store.get(key, value);
  if (!status.ok())
    return Status::communication(
        "waiting " + formatDuration(store.getTimeout()) +
        " for the NCCL unique id rank 0 publishes: " + status.getMessage() +
        " (is rank 0 running, and did it reach the NCCL bootstrap?)");
  return decodeUniqueId(key, value, version, id);
}

} // namespace titan::rt
