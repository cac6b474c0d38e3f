//===- StoreClient.h - a c10d TCPStore client -------------------*- C++ -*-===//
//
// A client of a store speaking PyTorch 1.13's c10d TCPStore protocol
// (StoreProtocol.h): torchrun's agent store, Python's TCPStore, titan-run's
// or rank 0's StoreServer.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_STORECLIENT_H
#define TITAN_RUNTIME_COMM_STORECLIENT_H

#include "comm/Socket.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace titan::rt {

/// One connection to a TCPStore. Every key is sent as "/" + keyPrefix +
/// key, so with an empty prefix a key is the same key Python's TCPStore
/// sees. Safe to call from several threads (one request at a time). A
/// request that fails or times out closes the connection; the next one
/// reconnects.
class StoreClient {
public:
  /// Connects to the store at `host`:`port`, retrying until `timeout`,
  /// which also bounds every later request's sending, get() and
  /// reconnection.
  static Status connect(const std::string &host, int port,
                        std::string keyPrefix,
                        std::chrono::milliseconds timeout,
                        std::unique_ptr<StoreClient> &client);

  /// Sets `key` to `value`.
  Status set(const std::string &key, const std::vector<uint8_t> &value);
  /// Waits (up to the client's timeout) until `key` exists, then reads it.
  Status get(const std::string &key, std::vector<uint8_t> &value);
  /// Adds `delta` to the counter `key` (missing: 0); `result` is the sum.
  Status add(const std::string &key, int64_t delta, int64_t &result);
  /// Whether every key of `keys` exists, without waiting.
  Status check(const std::vector<std::string> &keys, bool &ready);
  /// Waits until every key of `keys` exists, at most `timeout`.
  Status wait(const std::vector<std::string> &keys,
              std::chrono::milliseconds timeout);

  /// "host:port" of the store, for messages.
  std::string getAddress() const { return host + ":" + std::to_string(port); }
  /// The timeout given to connect().
  std::chrono::milliseconds getTimeout() const { return timeout; }

private:
  StoreClient(std::string host, int port, std::string keyPrefix,
              std::chrono::milliseconds timeout)
      : host(std::move(host)), port(port), keyPrefix(std::move(keyPrefix)),
        timeout(timeout) {}

  /// Connects if the last request left no connection.
  Status ensureConnected();
  /// The key as sent.
  std::string wireKey(const std::string &key) const;
  /// Closes the connection after `cause`, and names the store and the
  /// request in the returned error.
  Status fail(const std::string &request, const Status &cause);
  /// Waits for all `keys` by `deadline`; the caller holds the lock.
  Status waitLocked(const std::vector<std::string> &keys,
                    Clock::time_point deadline);

  /// Where the store listens.
  std::string host;
  int port;
  /// Put after "/" before every key.
  std::string keyPrefix;
  /// Bounds connecting and get().
  std::chrono::milliseconds timeout;
  /// One request at a time.
  std::mutex mutex;
  /// The connection; closed after a failed request.
  Socket socket;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_STORECLIENT_H
