//===- Socket.cpp - blocking TCP sockets with deadlines -------------------===//

#include "comm/Socket.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <utility>

namespace titan::rt {

Socket::Socket(Socket &&other) noexcept : fd(std::exchange(other.fd, -1)) {}

Socket &Socket::operator=(Socket &&other) noexcept {
  if (this != &other) {
    close();
    fd = std::exchange(other.fd, -1);
  }
  return *this;
}

Socket::~Socket() { close(); }

void Socket::close() {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

std::string describeErrno(int error) {
  std::string text = std::strerror(error);
  if (!text.empty())
    text[0] =
        static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

std::string formatDuration(std::chrono::milliseconds duration) {
  int64_t milliseconds = duration.count();
  if (milliseconds % 1000 == 0)
    return std::to_string(milliseconds / 1000) + " s";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", milliseconds / 1000.0);
  return text;
}

namespace {

/// getaddrinfo's results, freed when destroyed.
using AddressList = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

/// Resolves `host`:`port` for sockets of `socketType`; `error` is
/// getaddrinfo's code (0 on success).
AddressList resolve(const std::string &host, int port, int socketType,
                    int &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socketType;
  addrinfo *addresses = nullptr;
  error = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                      &addresses);
  return AddressList(error == 0 ? addresses : nullptr, &freeaddrinfo);
}

/// The milliseconds left until `deadline` for poll(2): 0 once it passed.
int millisecondsUntil(Clock::time_point deadline) {
  int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                     deadline - Clock::now())
                     .count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

/// poll(2) on one descriptor, retried on EINTR: 1 when ready, 0 when
/// `deadline` passed, -1 with errno on failure.
int pollOne(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd entry{fd, events, 0};
    int ready = ::poll(&entry, 1, millisecondsUntil(deadline));
    if (ready >= 0 || errno != EINTR)
      return ready;
  }
}

/// One connection attempt to `address` that gives up at `deadline`;
/// returns 0 or an errno value.
int connectOnce(const addrinfo &address, Clock::time_point deadline,
                Socket &socket) {
  Socket candidate(::socket(address.ai_family,
                            address.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                            address.ai_protocol));
  if (!candidate.isOpen())
    return errno;
  if (::connect(candidate.get(), address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS)
      return errno;
    int ready = pollOne(candidate.get(), POLLOUT, deadline);
    if (ready < 0)
      return errno;
    if (ready == 0)
      return ETIMEDOUT;
    int error = 0;
    socklen_t length = sizeof(error);
    if (::getsockopt(candidate.get(), SOL_SOCKET, SO_ERROR, &error, &length) !=
        0)
      return errno;
    if (error != 0)
      return error;
  }
  int flags = ::fcntl(candidate.get(), F_GETFL);
  if (flags < 0 || ::fcntl(candidate.get(), F_SETFL, flags & ~O_NONBLOCK) < 0)
    return errno;
  int one = 1;
  ::setsockopt(candidate.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  socket = std::move(candidate);
  return 0;
}

/// Whether `address` is a loopback address (127.0.0.0/8 or ::1).
bool isLoopback(const sockaddr *address) {
  if (address->sa_family == AF_INET) {
    auto *ipv4 = reinterpret_cast<const sockaddr_in *>(address);
    return (ntohl(ipv4->sin_addr.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    auto *ipv6 = reinterpret_cast<const sockaddr_in6 *>(address);
    return IN6_IS_ADDR_LOOPBACK(&ipv6->sin6_addr);
  }
  return false;
}

} // namespace

Status connectWithRetry(const std::string &host, int port,
                        std::chrono::milliseconds timeout,
                        const std::string &what, Socket &socket) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::chrono::milliseconds backoff(10);
  std::string lastError;
  while (true) {
    int resolveError = 0;
    AddressList addresses = resolve(host, port, SOCK_STREAM, resolveError);
    if (resolveError != 0 && resolveError != EAI_AGAIN)
      return Status::communication("cannot resolve the host name '" + host +
                                   "' of " + what + ": " +
                                   gai_strerror(resolveError));
    if (resolveError != 0)
      lastError = gai_strerror(resolveError);
    for (addrinfo *address = addresses.get(); address;
         address = address->ai_next) {
      int error = connectOnce(*address, deadline, socket);
      if (error == 0)
        return Status::success();
      lastError = describeErrno(error);
    }
    Clock::time_point now = Clock::now();
    if (now >= deadline)
      break;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2,
                                                  std::chrono::seconds(1));
  }
  return Status::communication("cannot reach " + what + " at " + host + ":" +
                               std::to_string(port) + " after " +
                               formatDuration(timeout) + ": " + lastError);
}

Status listenOnPort(int port, Socket &socket, int &boundPort) {
  int lastError = 0;
  for (int family : {AF_INET6, AF_INET}) {
    Socket candidate(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!candidate.isOpen()) {
      lastError = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(candidate.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage address{};
    socklen_t length;
    if (family == AF_INET6) {
      int zero = 0;
      ::setsockopt(candidate.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero,
                   sizeof(zero));
      auto *ipv6 = reinterpret_cast<sockaddr_in6 *>(&address);
      ipv6->sin6_family = AF_INET6;
      ipv6->sin6_addr = in6addr_any;
      ipv6->sin6_port = htons(static_cast<uint16_t>(port));
      length = sizeof(sockaddr_in6);
    } else {
      auto *ipv4 = reinterpret_cast<sockaddr_in *>(&address);
      ipv4->sin_family = AF_INET;
      ipv4->sin_addr.s_addr = htonl(INADDR_ANY);
      ipv4->sin_port = htons(static_cast<uint16_t>(port));
      length = sizeof(sockaddr_in);
    }
    if (::bind(candidate.get(), reinterpret_cast<sockaddr *>(&address),
               length) != 0) {
      lastError = errno;
      if (lastError == EADDRINUSE)
        break;
      continue;
    }
    if (::listen(candidate.get(), SOMAXCONN) != 0) {
      lastError = errno;
      continue;
    }
    length = sizeof(address);
    if (::getsockname(candidate.get(), reinterpret_cast<sockaddr *>(&address),
                      &length) != 0) {
      lastError = errno;
      continue;
    }
    boundPort =
        ntohs(family == AF_INET6
                  ? reinterpret_cast<sockaddr_in6 *>(&address)->sin6_port
                  : reinterpret_cast<sockaddr_in *>(&address)->sin_port);
    socket = std::move(candidate);
    return Status::success();
  }
  return Status::communication("cannot listen on port " + std::to_string(port) +
                               ": " + describeErrno(lastError));
}

Status sendAll(int fd, const void *data, size_t size) {
  auto *bytes = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t sent = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR)
        continue;
      return Status::communication("cannot send: " + describeErrno(errno));
    }
    bytes += sent;
    size -= static_cast<size_t>(sent);
  }
  return Status::success();
}

Status recvAll(int fd, void *data, size_t size, Clock::time_point deadline) {
  auto *bytes = static_cast<char *>(data);
  while (size > 0) {
    int ready = pollOne(fd, POLLIN, deadline);
    if (ready < 0)
      return Status::communication("cannot receive: " + describeErrno(errno));
    if (ready == 0)
      return Status::communication("timed out");
    ssize_t received = ::recv(fd, bytes, size, 0);
    if (received < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      return Status::communication("cannot receive: " + describeErrno(errno));
    }
    if (received == 0)
      return Status::communication("the connection was closed by the other "
                                   "side");
    bytes += received;
    size -= static_cast<size_t>(received);
  }
  return Status::success();
}

Status findLocalAddressToward(const std::string &host, int port,
                              std::string &address) {
  int error = 0;
  AddressList addresses = resolve(host, port, SOCK_DGRAM, error);
  if (error != 0)
    return Status::communication("cannot resolve '" + host +
                                 "': " + gai_strerror(error));
  bool allLoopback = true;
  for (addrinfo *entry = addresses.get(); entry; entry = entry->ai_next)
    allLoopback = allLoopback && isLoopback(entry->ai_addr);
  if (allLoopback) {
    address = "127.0.0.1";
    return Status::success();
  }
  // Connecting a UDP socket sends nothing; it only makes the kernel pick
  // the route, whose source address getsockname() then reports.
  const addrinfo &target = *addresses;
  Socket probe(::socket(target.ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (!probe.isOpen() ||
      ::connect(probe.get(), target.ai_addr, target.ai_addrlen) != 0 ||
      ::getsockname(probe.get(), reinterpret_cast<sockaddr *>(&local),
                    &length) != 0)
    return Status::communication("cannot find a route to '" + host +
                                 "': " + describeErrno(errno));
  char text[INET6_ADDRSTRLEN] = {};
  const void *raw =
      local.ss_family == AF_INET6
          ? static_cast<const void *>(
                &reinterpret_cast<sockaddr_in6 *>(&local)->sin6_addr)
          : static_cast<const void *>(
                &reinterpret_cast<sockaddr_in *>(&local)->sin_addr);
  if (!inet_ntop(local.ss_family, raw, text, sizeof(text)))
    return Status::communication("cannot print the local address toward '" +
                                 host + "': " + describeErrno(errno));
  address = text;
  return Status::success();
}

} // namespace titan::rt
