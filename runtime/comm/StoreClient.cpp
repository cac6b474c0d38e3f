//===- StoreClient.cpp - a c10d TCPStore client ---------------------------===//

#include "comm/StoreClient.h"

#include "comm/StoreProtocol.h"

#include <sys/socket.h>

namespace titan::rt {

namespace {

/// "'a'" or "'a', 'b'": keys in messages.
std::string quoteKeys(const std::vector<std::string> &keys) {
  std::string text;
  for (const std::string &key : keys)
    text += (text.empty() ? "'" : ", '") + key + "'";
  return text;
}

} // namespace

Status StoreClient::connect(const std::string &host, int port,
                            std::string keyPrefix,
                            std::chrono::milliseconds timeout,
                            std::unique_ptr<StoreClient> &client) {
  std::unique_ptr<StoreClient> candidate(
      new StoreClient(host, port, std::move(keyPrefix), timeout));
  {
    std::lock_guard<std::mutex> lock(candidate->mutex);
    TITANRT_RETURN_IF_ERROR(candidate->ensureConnected());
  }
  client = std::move(candidate);
  return Status::success();
}

Status StoreClient::ensureConnected() {
  if (socket.isOpen())
    return Status::success();
  TITANRT_RETURN_IF_ERROR(
      connectWithRetry(host, port, timeout, "the rendezvous store", socket));
  // A store that stops reading (its process stopped) must not block a
  // request forever once the socket's buffers are full.
  timeval limit = {static_cast<time_t>(timeout.count() / 1000),
                   static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  return Status::success();
}

std::string StoreClient::wireKey(const std::string &key) const {
  return kStoreKeyPrefix + keyPrefix + key;
}

Status StoreClient::fail(const std::string &request, const Status &cause) {
  socket.close();
  return Status::communication("rendezvous store at " + getAddress() + ": " +
                               request + ": " + cause.getMessage());
}

Status StoreClient::set(const std::string &key,
                        const std::vector<uint8_t> &value) {
  std::lock_guard<std::mutex> lock(mutex);
  TITANRT_RETURN_IF_ERROR(ensureConnected());
  Status sent = StoreMessage(StoreCommand::Set)
                    .addString(wireKey(key))
                    .addBytes(value)
                    .send(socket.get());
  return sent.ok() ? sent : fail("set '" + key + "'", sent);
}

Status StoreClient::get(const std::string &key, std::vector<uint8_t> &value) {
  std::lock_guard<std::mutex> lock(mutex);
  TITANRT_RETURN_IF_ERROR(ensureConnected());
  TITANRT_RETURN_IF_ERROR(waitLocked({key}, Clock::now() + timeout));
  Status status = StoreMessage(StoreCommand::Get)
                      .addString(wireKey(key))
                      .send(socket.get());
  if (status.ok())
    status = StoreReader(socket.get(), Clock::now() + timeout).readBytes(value);
  return status.ok() ? status : fail("get '" + key + "'", status);
}

Status StoreClient::add(const std::string &key, int64_t delta,
                        int64_t &result) {
  std::lock_guard<std::mutex> lock(mutex);
  TITANRT_RETURN_IF_ERROR(ensureConnected());
  Status status = StoreMessage(StoreCommand::Add)
                      .addString(wireKey(key))
                      .addInt64(delta)
                      .send(socket.get());
  if (status.ok())
    status =
        StoreReader(socket.get(), Clock::now() + timeout).readInt64(result);
  return status.ok() ? status : fail("add to '" + key + "'", status);
}

Status StoreClient::check(const std::vector<std::string> &keys, bool &ready) {
  std::lock_guard<std::mutex> lock(mutex);
  TITANRT_RETURN_IF_ERROR(ensureConnected());
  StoreMessage request(StoreCommand::Check);
  request.addInt64(static_cast<int64_t>(keys.size()));
  for (const std::string &key : keys)
    request.addString(wireKey(key));
  Status status = request.send(socket.get());
  uint8_t answer = 0;
  if (status.ok())
    status = StoreReader(socket.get(), Clock::now() + timeout).readByte(answer);
  if (status.ok() &&
      answer != static_cast<uint8_t>(StoreCheckResponse::Ready) &&
      answer != static_cast<uint8_t>(StoreCheckResponse::NotReady))
    status = Status::communication("the answer " + std::to_string(answer) +
                                   " is not c10d's TCPStore protocol");
  ready = answer == static_cast<uint8_t>(StoreCheckResponse::Ready);
  return status.ok() ? status : fail("check " + quoteKeys(keys), status);
}

Status StoreClient::wait(const std::vector<std::string> &keys,
                         std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mutex);
  TITANRT_RETURN_IF_ERROR(ensureConnected());
  return waitLocked(keys, Clock::now() + timeout);
}

Status StoreClient::waitLocked(const std::vector<std::string> &keys,
                               Clock::time_point deadline) {
  StoreMessage request(StoreCommand::Wait);
  request.addInt64(static_cast<int64_t>(keys.size()));
  for (const std::string &key : keys)
    request.addString(wireKey(key));
  Status status = request.send(socket.get());
  uint8_t answer = 0;
  if (status.ok())
    status = StoreReader(socket.get(), deadline).readByte(answer);
  if (status.ok() &&
      answer != static_cast<uint8_t>(StoreWaitResponse::StopWaiting))
    status = Status::communication("the answer " + std::to_string(answer) +
                                   " is not c10d's TCPStore protocol");
  // A wait that timed out may still be answered later: fail() closes the
  // connection so that no later request reads that answer.
  return status.ok() ? status : fail("wait for " + quoteKeys(keys), status);
}

} // namespace titan::rt
