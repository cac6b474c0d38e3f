//===- ForkServer.cpp - run a tool's main in forked children --------------===//
//
// See include/titan/Support/ForkServer.h.
//
//===----------------------------------------------------------------------===//

#include "titan/Support/ForkServer.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Errno.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace mlir::titan;

namespace {

/// Environment variables that LibTorch, OpenBLAS, OpenMP, the C library or
/// a sanitizer read once, as they load: a forked process would not apply
/// a change (the same list as test/Inputs/forked_process.py's).
constexpr const char *kLoadTimePrefixes[] = {
    "OMP_",    "GOMP_",    "KMP_",  "MKL_",    "OPENBLAS_", "GOTO",
    "TORCH_",  "PYTORCH_", "CUDA_", "NVIDIA_", "PYTHON",    "LD_",
    "MALLOC_", "GLIBC_",   "LC_",   "LANG",    "TZ",        "ASAN_",
    "LSAN_",   "UBSAN_",   "TSAN_", "MSAN_"};

/// The variables of `entries` ("KEY=VALUE") read as libraries load.
llvm::StringMap<std::string>
loadTimeEnvironment(llvm::ArrayRef<llvm::StringRef> entries) {
  llvm::StringMap<std::string> found;
  for (llvm::StringRef entry : entries) {
    auto [key, value] = entry.split('=');
    for (const char *prefix : kLoadTimePrefixes)
      if (key.starts_with(prefix)) {
        found[key] = value.str();
        break;
      }
  }
  return found;
}

/// Moves all `size` bytes at `data` with `transfer` (::read or ::write),
/// retried after signals; false at an error or the end of the stream.
template <typename Buffer, typename Transfer>
bool transferAll(int fd, Buffer *data, size_t size, Transfer transfer) {
  while (size) {
    ssize_t moved = llvm::sys::RetryAfterSignal(-1, transfer, fd, data, size);
    if (moved <= 0)
      return false;
    data += moved;
    size -= moved;
  }
  return true;
}

bool writeAll(int fd, const char *data, size_t size) {
  return transferAll(fd, data, size, ::write);
}

bool readExactly(int fd, char *data, size_t size) {
  return transferAll(fd, data, size, ::read);
}

/// Sends one length-prefixed message.
bool sendMessage(int fd, llvm::StringRef payload) {
  uint32_t size = htonl(static_cast<uint32_t>(payload.size()));
  std::string message(reinterpret_cast<const char *>(&size), sizeof(size));
  message += payload.str();
  return writeAll(fd, message.data(), message.size());
}

/// A client's request: its payload and the descriptors attached to it.
struct Request {
  std::string payload;
  llvm::SmallVector<int, 3> fds;
};

/// Reads one length-prefixed message and the descriptors sent with it.
bool receiveRequest(int fd, Request &request) {
  uint32_t size = 0;
  char control[CMSG_SPACE(3 * sizeof(int))];
  iovec vector{&size, sizeof(size)};
  msghdr header{};
  header.msg_iov = &vector;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof(control);
  ssize_t got;
  do
    got = ::recvmsg(fd, &header, MSG_CMSG_CLOEXEC);
  while (got < 0 && errno == EINTR);
  if (got <= 0)
    return false;
  for (cmsghdr *message = CMSG_FIRSTHDR(&header); message;
       message = CMSG_NXTHDR(&header, message)) {
    if (message->cmsg_level != SOL_SOCKET || message->cmsg_type != SCM_RIGHTS)
      continue;
    size_t count = (message->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(message) + i * sizeof(int), sizeof(int));
      request.fds.push_back(received);
    }
  }
  if (got < static_cast<ssize_t>(sizeof(size)) &&
      !readExactly(fd, reinterpret_cast<char *>(&size) + got,
                   sizeof(size) - got))
    return false;
  request.payload.resize(ntohl(size));
  return readExactly(fd, request.payload.data(), request.payload.size());
}

/// Runs `main` as the client asked, in this (forked) process: the client's
/// streams, folder, umask and environment. Does not return.
[[noreturn]] void runTool(ToolMain main, llvm::ArrayRef<int> fds,
                          llvm::StringRef cwd, mode_t mask,
                          llvm::ArrayRef<llvm::StringRef> arguments,
                          llvm::ArrayRef<llvm::StringRef> environment) {
  std::signal(SIGPIPE, SIG_DFL);
  for (auto [target, fd] : llvm::enumerate(fds)) {
    ::dup2(fd, static_cast<int>(target));
    ::close(fd);
  }
  if (::chdir(cwd.str().c_str()) != 0) {
    std::perror("titan fork server: chdir");
    std::exit(1);
  }
  ::umask(mask);
  ::clearenv();
  for (llvm::StringRef entry : environment) {
    auto [key, value] = entry.split('=');
    ::setenv(key.str().c_str(), value.str().c_str(), 1);
  }
  // argv lives until exit, as a process's does.
  static std::vector<std::string> storage;
  static std::vector<char *> argv;
  for (llvm::StringRef argument : arguments)
    storage.push_back(argument.str());
  for (std::string &argument : storage)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  exitSkippingStaticDestructors(
      main(static_cast<int>(storage.size()), argv.data()));
}

/// Serves one accepted connection: answers, and for "forked" starts the
/// child that runs the tool and reports its status.
void serve(int listener, int connection, ToolMain main,
           const llvm::StringMap<std::string> &ownEnvironment) {
  Request request;
  if (!receiveRequest(connection, request))
    return;
  auto closeFds = [&] {
    for (int fd : request.fds)
      ::close(fd);
  };
  llvm::SmallVector<llvm::StringRef> fields;
  llvm::StringRef(request.payload).split(fields, '\0');
  unsigned count = 0;
  unsigned mask = 0;
  bool wellFormed = fields.size() >= 3 && !fields[1].getAsInteger(10, mask) &&
                    !fields[2].getAsInteger(10, count) && count > 0 &&
                    fields.size() >= 3 + count && request.fds.size() == 3;
  if (!wellFormed) {
    closeFds();
    return;
  }
  llvm::ArrayRef<llvm::StringRef> arguments =
      llvm::ArrayRef(fields).slice(3, count);
  llvm::ArrayRef<llvm::StringRef> environment =
      llvm::ArrayRef(fields).drop_front(3 + count);
  if (loadTimeEnvironment(environment) != ownEnvironment) {
    sendMessage(connection, "direct");
    closeFds();
    return;
  }
  if (!sendMessage(connection, "forked")) {
    closeFds();
    return;
  }
  pid_t monitor = ::fork();
  if (monitor != 0) {
    closeFds();
    return;
  }
  // The monitor: waits for the tool and sends its status.
  std::signal(SIGCHLD, SIG_DFL);
  ::close(listener);
  pid_t tool = ::fork();
  if (tool == 0) {
    ::close(connection);
    runTool(main, request.fds, fields[0], mask, arguments, environment);
  }
  closeFds();
  int status = 0;
  int code = 1;
  pid_t waited;
  do
    waited = ::waitpid(tool, &status, 0);
  while (waited < 0 && errno == EINTR);
  if (waited == tool && WIFEXITED(status))
    code = WEXITSTATUS(status);
  else if (waited == tool && WIFSIGNALED(status))
    code = 128 + WTERMSIG(status);
  sendMessage(connection, std::to_string(code));
  ::_exit(0);
}

} // namespace

void mlir::titan::exitSkippingStaticDestructors(int status) {
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__)
  std::exit(status);
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  std::exit(status);
#endif
#endif
  llvm::sys::Process::Exit(status, /*NoCleanup=*/true);
}

int mlir::titan::runForkServer(llvm::StringRef socketPath, ToolMain main,
                               int idleSeconds) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof(address.sun_path))
    return 1;
  std::memcpy(address.sun_path, socketPath.data(), socketPath.size());
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 ||
      ::bind(listener, reinterpret_cast<sockaddr *>(&address),
             sizeof(address)) != 0 ||
      ::listen(listener, 64) != 0)
    return 1;
  // Monitors are reaped by the system; a client gone away is a failed
  // write, not a signal.
  std::signal(SIGCHLD, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<llvm::StringRef> ownEntries;
  for (char **entry = environ; *entry; ++entry)
    ownEntries.push_back(*entry);
  llvm::StringMap<std::string> ownEnvironment = loadTimeEnvironment(ownEntries);
  bool idle = false;
  while (true) {
    pollfd waiting{listener, POLLIN, 0};
    int ready = ::poll(&waiting, 1, idle ? 0 : idleSeconds * 1000);
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0) {
      if (idle)
        return 0;
      // Idle: no new client finds the socket once it is gone; those
      // already waiting in the backlog are still served.
      ::unlink(socketPath.str().c_str());
      idle = true;
      continue;
    }
    int connection = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0)
      continue;
    serve(listener, connection, main, ownEnvironment);
    ::close(connection);
  }
}
