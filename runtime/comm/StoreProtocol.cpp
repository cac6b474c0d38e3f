//===- StoreProtocol.cpp - c10d TCPStore's wire protocol ------------------===//

#include "comm/StoreProtocol.h"

namespace titan::rt {

StoreMessage::StoreMessage(StoreCommand command) {
  bytes.push_back(static_cast<uint8_t>(command));
}

StoreMessage &StoreMessage::addByte(uint8_t value) {
  bytes.push_back(value);
  return *this;
}

StoreMessage &StoreMessage::addInt64(int64_t value) {
  auto unsignedValue = static_cast<uint64_t>(value);
  for (int byte = 0; byte < 8; ++byte)
    bytes.push_back(static_cast<uint8_t>(unsignedValue >> (8 * byte)));
  return *this;
}

StoreMessage &StoreMessage::addBytes(const void *data, size_t size) {
  addInt64(static_cast<int64_t>(size));
  auto *first = static_cast<const uint8_t *>(data);
  bytes.insert(bytes.end(), first, first + size);
  return *this;
}

Status StoreReader::readByte(uint8_t &value) {
  return recvAll(fd, &value, 1, deadline);
}

Status StoreReader::readInt64(int64_t &value) {
  uint8_t raw[8];
  TITANRT_RETURN_IF_ERROR(recvAll(fd, raw, sizeof(raw), deadline));
  uint64_t unsignedValue = 0;
  for (int byte = 0; byte < 8; ++byte)
    unsignedValue |= uint64_t(raw[byte]) << (8 * byte);
  value = static_cast<int64_t>(unsignedValue);
  return Status::success();
}

Status StoreReader::readCount(uint64_t &value) {
  int64_t raw;
  TITANRT_RETURN_IF_ERROR(readInt64(raw));
  value = static_cast<uint64_t>(raw);
  if (value > kMaxStoreItemBytes)
    return Status::communication("a length of " + std::to_string(value) +
                                 " bytes is not c10d's TCPStore protocol");
  return Status::success();
}

Status StoreReader::readBytes(std::vector<uint8_t> &value) {
  uint64_t size;
  TITANRT_RETURN_IF_ERROR(readCount(size));
  value.resize(size);
  return recvAll(fd, value.data(), size, deadline);
}

Status StoreReader::readString(std::string &value) {
  uint64_t size;
  TITANRT_RETURN_IF_ERROR(readCount(size));
  value.resize(size);
  return recvAll(fd, value.data(), size, deadline);
}

} // namespace titan::rt
