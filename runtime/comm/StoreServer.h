//===- StoreServer.h - a c10d TCPStore server -------------------*- C++ -*-===//
//
// The rendezvous store the ranks meet at: a key-value server speaking
// PyTorch 1.13's c10d TCPStore protocol (StoreProtocol.h) on a background
// thread. titan-run hosts one as torchrun's agent does; rank 0 hosts one
// when no launcher does. Python's torch.distributed.TCPStore is a client.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_STORESERVER_H
#define TITAN_RUNTIME_COMM_STORESERVER_H

#include "comm/Socket.h"

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace titan::rt {

/// A TCPStore server; stops (closing every connection) when destroyed.
class StoreServer {
public:
  /// Starts serving on `port` of every local address; port 0 picks a free
  /// one (getPort()).
  static Status start(int port, std::unique_ptr<StoreServer> &server);

  ~StoreServer();
  StoreServer(const StoreServer &) = delete;
  StoreServer &operator=(const StoreServer &) = delete;

  /// The port the server listens on.
  int getPort() const { return port; }

private:
  StoreServer(Socket listener, int port, Socket stopReader, Socket stopWriter);

  /// The server thread: accepts connections and answers requests until
  /// the stop pipe closes.
  void serve();
  /// Reads and answers one request on `client`; false when the connection
  /// must be closed (it closed, broke, or sent what the server cannot
  /// serve).
  bool handleRequest(int client);
  /// Stores `value` under `key` and answers the clients waiting for it.
  void setValue(const std::string &key, std::vector<uint8_t> value);
  /// Answers the clients whose last awaited key is `key`.
  void wakeWaiters(const std::string &key);
  /// Forgets the waits of a closed connection.
  void forgetClient(int client);

  /// The listening socket and its port.
  Socket listener;
  int port;
  /// A pipe: the server thread stops when the write end closes.
  Socket stopReader;
  Socket stopWriter;
  std::thread thread;

  // Owned by the server thread.
  /// The connected clients.
  std::vector<Socket> clients;
  /// The store.
  std::unordered_map<std::string, std::vector<uint8_t>> values;
  /// The connections waiting for each missing key.
  std::unordered_map<std::string, std::vector<int>> waiters;
  /// For each waiting connection, how many of its keys are still missing.
  std::unordered_map<int, size_t> missingKeyCounts;
  /// Waiting connections whose answer could not be sent.
  std::vector<int> brokenClients;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_STORESERVER_H
