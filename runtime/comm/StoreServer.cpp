//===- StoreServer.cpp - a c10d TCPStore server ---------------------------===//

#include "comm/StoreServer.h"

#include "comm/StoreProtocol.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace titan::rt {

namespace {

/// How long a client may take to send the rest of a request it began.
constexpr std::chrono::seconds kRequestTimeout(30);

/// How long an answer may wait for a client that does not read it.
constexpr timeval kAnswerTimeout = {30, 0};

/// Parses the decimal text Add keeps a counter as; false if it is not one.
bool parseCounter(const std::vector<uint8_t> &text, int64_t &value) {
  std::string digits(text.begin(), text.end());
  if (digits.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  value = std::strtoll(digits.c_str(), &end, 10);
  return errno == 0 && *end == '\0';
}

} // namespace

Status StoreServer::start(int port, std::unique_ptr<StoreServer> &server) {
  Socket listener;
  int boundPort = 0;
  TITANRT_RETURN_IF_ERROR(listenOnPort(port, listener, boundPort));
  int stopPipe[2];
  if (::pipe2(stopPipe, O_CLOEXEC) != 0)
    return Status::communication("cannot create the store server's stop "
                                 "pipe: " +
                                 describeErrno(errno));
  server.reset(new StoreServer(std::move(listener), boundPort,
                               Socket(stopPipe[0]), Socket(stopPipe[1])));
  return Status::success();
}

StoreServer::StoreServer(Socket listener, int port, Socket stopReader,
                         Socket stopWriter)
    : listener(std::move(listener)), port(port),
      stopReader(std::move(stopReader)), stopWriter(std::move(stopWriter)) {
  thread = std::thread([this] { serve(); });
}

StoreServer::~StoreServer() {
  stopWriter.close();
  thread.join();
}

void StoreServer::serve() {
  while (true) {
    std::vector<pollfd> entries = {{stopReader.get(), POLLIN, 0},
                                   {listener.get(), POLLIN, 0}};
    for (const Socket &client : clients)
      entries.push_back({client.get(), POLLIN, 0});
    if (::poll(entries.data(), entries.size(), -1) < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    if (entries[0].revents != 0)
      return;

    std::vector<int> closing;
    for (size_t index = 2; index < entries.size(); ++index)
      if (entries[index].revents != 0 && !handleRequest(entries[index].fd))
        closing.push_back(entries[index].fd);
    closing.insert(closing.end(), brokenClients.begin(), brokenClients.end());
    brokenClients.clear();
    for (int client : closing) {
      forgetClient(client);
      clients.erase(std::remove_if(clients.begin(), clients.end(),
                                   [&](const Socket &socket) {
                                     return socket.get() == client;
                                   }),
                    clients.end());
    }

    if (entries[1].revents & POLLIN) {
      Socket client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (client.isOpen()) {
        int one = 1;
        ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ::setsockopt(client.get(), SOL_SOCKET, SO_SNDTIMEO, &kAnswerTimeout,
                     sizeof(kAnswerTimeout));
        clients.push_back(std::move(client));
      }
    }
  }
}

bool StoreServer::handleRequest(int client) {
  StoreReader reader(client, Clock::now() + kRequestTimeout);
  uint8_t command;
  if (!reader.readByte(command).ok())
    return false;
  switch (static_cast<StoreCommand>(command)) {
  case StoreCommand::Set: {
    std::string key;
    std::vector<uint8_t> value;
    if (!reader.readString(key).ok() || !reader.readBytes(value).ok())
      return false;
    setValue(key, std::move(value));
    return true;
  }
  case StoreCommand::CompareSet: {
    std::string key;
    std::vector<uint8_t> expected, desired;
    if (!reader.readString(key).ok() || !reader.readBytes(expected).ok() ||
        !reader.readBytes(desired).ok())
      return false;
    auto found = values.find(key);
    // As c10d: a missing key is created only when `expected` is empty;
    // otherwise the answer is `expected`.
    std::vector<uint8_t> answer = expected;
    if (found == values.end() && expected.empty()) {
      answer = desired;
      setValue(key, std::move(desired));
    } else if (found != values.end()) {
      if (found->second == expected)
        found->second = std::move(desired);
      answer = found->second;
    }
    return StoreMessage().addBytes(answer).send(client).ok();
  }
  case StoreCommand::Get: {
    std::string key;
    if (!reader.readString(key).ok())
      return false;
    auto found = values.find(key);
    return found != values.end() &&
           StoreMessage().addBytes(found->second).send(client).ok();
  }
  case StoreCommand::Add: {
    std::string key;
    int64_t sum;
    if (!reader.readString(key).ok() || !reader.readInt64(sum).ok())
      return false;
    auto found = values.find(key);
    if (found != values.end()) {
      int64_t current;
      if (!parseCounter(found->second, current))
        return false;
      sum = static_cast<int64_t>(static_cast<uint64_t>(sum) +
                                 static_cast<uint64_t>(current));
    }
    std::string text = std::to_string(sum);
    setValue(key, std::vector<uint8_t>(text.begin(), text.end()));
    return StoreMessage().addInt64(sum).send(client).ok();
  }
  case StoreCommand::Check:
  case StoreCommand::Wait: {
    uint64_t count;
    if (!reader.readCount(count).ok())
      return false;
    std::vector<std::string> missing;
    for (uint64_t index = 0; index < count; ++index) {
      std::string key;
      if (!reader.readString(key).ok())
        return false;
      if (!values.count(key))
        missing.push_back(std::move(key));
    }
    if (static_cast<StoreCommand>(command) == StoreCommand::Check) {
      auto answer = missing.empty() ? StoreCheckResponse::Ready
                                    : StoreCheckResponse::NotReady;
      return StoreMessage()
          .addByte(static_cast<uint8_t>(answer))
          .send(client)
          .ok();
    }
    if (missing.empty())
      return StoreMessage()
          .addByte(static_cast<uint8_t>(StoreWaitResponse::StopWaiting))
          .send(client)
          .ok();
    missingKeyCounts[client] = missing.size();
    for (const std::string &key : missing)
      waiters[key].push_back(client);
    return true;
  }
  case StoreCommand::GetNumKeys:
    return StoreMessage()
        .addInt64(static_cast<int64_t>(values.size()))
        .send(client)
        .ok();
  case StoreCommand::DeleteKey: {
    std::string key;
    if (!reader.readString(key).ok())
      return false;
    return StoreMessage()
        .addInt64(static_cast<int64_t>(values.erase(key)))
        .send(client)
        .ok();
  }
  case StoreCommand::WatchKey:
    break;
  }
  return false;
}

void StoreServer::setValue(const std::string &key, std::vector<uint8_t> value) {
  values[key] = std::move(value);
  wakeWaiters(key);
}

void StoreServer::wakeWaiters(const std::string &key) {
  auto found = waiters.find(key);
  if (found == waiters.end())
    return;
  std::vector<int> waiting = std::move(found->second);
  waiters.erase(found);
  for (int client : waiting) {
    auto count = missingKeyCounts.find(client);
    if (count == missingKeyCounts.end() || --count->second > 0)
      continue;
    missingKeyCounts.erase(count);
    if (!StoreMessage()
             .addByte(static_cast<uint8_t>(StoreWaitResponse::StopWaiting))
             .send(client)
             .ok())
      brokenClients.push_back(client);
  }
}

void StoreServer::forgetClient(int client) {
  missingKeyCounts.erase(client);
  for (auto entry = waiters.begin(); entry != waiters.end();) {
    std::vector<int> &waiting = entry->second;
    waiting.erase(std::remove(waiting.begin(), waiting.end(), client),
                  waiting.end());
    entry = waiting.empty() ? waiters.erase(entry) : std::next(entry);
  }
}

} // namespace titan::rt
