//===- StoreProtocol.h - c10d TCPStore's wire protocol ----------*- C++ -*-===//
//
// The wire protocol of PyTorch 1.13's c10d TCPStore, which torchrun's agent
// store and Python's torch.distributed.TCPStore speak, and titan's store
// client and server with them (docs/runtime-comm.md).
//
// A request is one command byte followed by its arguments, with no header
// and no framing; integers are 8 bytes in the host's (little-endian) byte
// order, strings and byte vectors a uint64 length followed by the bytes:
//
//   Set         key, value                -> (no answer)
//   CompareSet  key, expected, desired    -> the value after the operation
//   Get         key                       -> value (the key must exist)
//   Add         key, int64 delta          -> int64 sum (kept as decimal text)
//   Check       uint64 n, n keys          -> StoreCheckResponse
//   Wait        uint64 n, n keys          -> StoreWaitResponse, once all exist
//   GetNumKeys                            -> int64
//   WatchKey    key                       -> (callback connection; not served)
//   DeleteKey   key                       -> int64 number of keys deleted
//
// A server answers a request it cannot serve (an unknown command, Get of a
// missing key, Add to a non-number) by closing the connection, as c10d's
// does. 1.13's clients put "/" before every key; torch 2.x changed the
// protocol (a validation handshake first), so this is tied to 1.13.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_STOREPROTOCOL_H
#define TITAN_RUNTIME_COMM_STOREPROTOCOL_H

#include "comm/Socket.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan::rt {

/// The first byte of a request (c10d's QueryType).
enum class StoreCommand : uint8_t {
  Set = 0,
  CompareSet = 1,
  Get = 2,
  Add = 3,
  Check = 4,
  Wait = 5,
  GetNumKeys = 6,
  WatchKey = 7,
  DeleteKey = 8,
};

/// The answer to Check.
enum class StoreCheckResponse : uint8_t { Ready = 0, NotReady = 1 };

/// The answer to Wait.
enum class StoreWaitResponse : uint8_t { StopWaiting = 0 };

/// What c10d's client puts before every key; titan's client does too, so
/// that a key means the same to both.
inline constexpr const char *kStoreKeyPrefix = "/";

/// The longest key or value either side accepts: a longer length is taken
/// for a peer that does not speak the protocol.
inline constexpr uint64_t kMaxStoreItemBytes = uint64_t(1) << 30;

/// One message under construction, sent in one write.
class StoreMessage {
public:
  /// An answer (no command byte).
  StoreMessage() = default;
  /// A request.
  explicit StoreMessage(StoreCommand command);

  /// Appends one byte.
  StoreMessage &addByte(uint8_t value);
  /// Appends an 8-byte integer.
  StoreMessage &addInt64(int64_t value);
  /// Appends a length-prefixed byte string.
  StoreMessage &addBytes(const void *data, size_t size);
  /// Appends a length-prefixed string.
  StoreMessage &addString(const std::string &value) {
    return addBytes(value.data(), value.size());
  }
  /// Appends a length-prefixed byte vector.
  StoreMessage &addBytes(const std::vector<uint8_t> &value) {
    return addBytes(value.data(), value.size());
  }

  /// Writes the message to the socket `fd`.
  Status send(int fd) const { return sendAll(fd, bytes.data(), bytes.size()); }

private:
  std::vector<uint8_t> bytes;
};

/// Reads the parts of one message from the socket `fd`, all by one
/// deadline.
class StoreReader {
public:
  StoreReader(int fd, Clock::time_point deadline)
      : fd(fd), deadline(deadline) {}

  /// Reads one byte.
  Status readByte(uint8_t &value);
  /// Reads an 8-byte integer.
  Status readInt64(int64_t &value);
  /// Reads an 8-byte count (of keys, of bytes).
  Status readCount(uint64_t &value);
  /// Reads a length-prefixed byte vector.
  Status readBytes(std::vector<uint8_t> &value);
  /// Reads a length-prefixed string.
  Status readString(std::string &value);

private:
  int fd;
  Clock::time_point deadline;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_STOREPROTOCOL_H
