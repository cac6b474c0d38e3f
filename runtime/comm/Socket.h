//===- Socket.h - blocking TCP sockets with deadlines -----------*- C++ -*-===//
//
// The few socket operations the rendezvous store needs: connecting with
// retries until a timeout, listening on a port, sending and receiving whole
// buffers by a deadline, and finding the local address peers can reach.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_SOCKET_H
#define TITAN_RUNTIME_COMM_SOCKET_H

#include "core/Status.h"

#include <chrono>
#include <cstddef>
#include <string>

namespace titan::rt {

/// The clock of every deadline of the communication layer.
using Clock = std::chrono::steady_clock;

/// An owned file descriptor (a socket or a pipe end), closed when destroyed.
class Socket {
public:
  Socket() = default;
  /// Takes ownership of `fd` (-1: none).
  explicit Socket(int fd) : fd(fd) {}
  Socket(Socket &&other) noexcept;
  Socket &operator=(Socket &&other) noexcept;
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;
  ~Socket();

  /// The descriptor, or -1.
  int get() const { return fd; }
  /// Whether a descriptor is held.
  bool isOpen() const { return fd >= 0; }
  /// Closes the descriptor, if any.
  void close();

private:
  int fd = -1;
};

/// strerror(error) starting in lower case, to continue a sentence.
std::string describeErrno(int error);

/// "30 s", "1.5 s": a duration in messages.
std::string formatDuration(std::chrono::milliseconds duration);

/// Connects to `host`:`port`, retrying with backoff (10 ms, doubling up to
/// 1 s) while the connection is refused or times out, for at most
/// `timeout`. `what` names the peer in the error: "cannot reach the
/// rendezvous store at 10.0.0.1:29500 after 30 s: connection refused".
Status connectWithRetry(const std::string &host, int port,
                        std::chrono::milliseconds timeout,
                        const std::string &what, Socket &socket);

/// Listens on `port` of every local address (IPv6 and IPv4 where the host
/// has IPv6, else IPv4); port 0 picks a free port. `boundPort` is the port.
Status listenOnPort(int port, Socket &socket, int &boundPort);

/// Writes all `size` bytes of `data` to the socket `fd` (EPIPE is an
/// error, never SIGPIPE).
Status sendAll(int fd, const void *data, size_t size);

/// Reads exactly `size` bytes from the socket `fd` into `data`, failing when
/// the peer closes the connection or `deadline` passes first.
Status recvAll(int fd, void *data, size_t size, Clock::time_point deadline);

/// The address of this host that peers reach it at, seen from `host`
/// (a name or address; `port` is only used to pick a route): "127.0.0.1"
/// when `host` is a loopback address, otherwise the source address of this
/// host's route to `host`.
Status findLocalAddressToward(const std::string &host, int port,
                              std::string &address);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_SOCKET_H
