//===- FaultInjection.cpp - crashes and full disks for save tests ---------===//
//
// An LD_PRELOAD library for the crash-safety tests of checkpoint saves
// (test/Checkpoint/crash-safe-save.test, hf-crash-safe-export.test). It
// counts the events that change files - a write to a regular file (write,
// pwrite), a rename (rename, renameat2), a remove - and, as the environment
// asks:
//
//   TITAN_FAULT_KILL_AT=N          kills the process (SIGKILL) at the N-th
//                                  event: a write is cut in half first, a
//                                  rename or remove does not happen;
//   TITAN_FAULT_NO_SPACE_AFTER=B   fails every write to a regular file with
//                                  ENOSPC once B bytes have been written.
//
//===----------------------------------------------------------------------===//

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

/// The number of the event to kill the process at (0: never).
int64_t killAt() {
  static const int64_t value = [] {
    const char *text = std::getenv("TITAN_FAULT_KILL_AT");
    return text ? std::atoll(text) : 0;
  }();
  return value;
}

/// The bytes that may be written before writes fail (-1: no limit).
int64_t spaceLeft() {
  static const int64_t value = [] {
    const char *text = std::getenv("TITAN_FAULT_NO_SPACE_AFTER");
    return text ? std::atoll(text) : -1;
  }();
  return value;
}

int64_t events = 0;
int64_t bytesWritten = 0;

/// Whether `fd` is a regular file (not a terminal or pipe).
bool isRegularFile(int fd) {
  struct stat info;
  return ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
}

/// Counts an event; whether the process dies at it.
bool killedAt() { return killAt() > 0 && ++events == killAt(); }

/// The real function `name` of the next library (libc).
template <typename Function> Function next(const char *name) {
  return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

/// Runs a write of `count` bytes through `doWrite(count)` with the faults
/// the environment asks for.
template <typename Write>
ssize_t faultyWrite(int fd, size_t count, Write doWrite) {
  if (!isRegularFile(fd))
    return doWrite(count);
  if (killedAt()) {
    doWrite(count / 2);
    ::raise(SIGKILL);
  }
  if (spaceLeft() >= 0 && bytesWritten + int64_t(count) > spaceLeft()) {
    errno = ENOSPC;
    return -1;
  }
  ssize_t written = doWrite(count);
  if (written > 0)
    bytesWritten += written;
  return written;
}

} // namespace

extern "C" {

ssize_t write(int fd, const void *data, size_t count) {
  static auto real = next<ssize_t (*)(int, const void *, size_t)>("write");
  return faultyWrite(fd, count, [&](size_t n) { return real(fd, data, n); });
}

ssize_t pwrite(int fd, const void *data, size_t count, off_t offset) {
  static auto real =
      next<ssize_t (*)(int, const void *, size_t, off_t)>("pwrite");
  return faultyWrite(fd, count,
                     [&](size_t n) { return real(fd, data, n, offset); });
}

ssize_t pwrite64(int fd, const void *data, size_t count, off64_t offset) {
  static auto real =
      next<ssize_t (*)(int, const void *, size_t, off64_t)>("pwrite64");
  return faultyWrite(fd, count,
                     [&](size_t n) { return real(fd, data, n, offset); });
}

int rename(const char *from, const char *to) {
  static auto real = next<int (*)(const char *, const char *)>("rename");
  if (killedAt())
    ::raise(SIGKILL);
  return real(from, to);
}

int renameat2(int fromDir, const char *from, int toDir, const char *to,
              unsigned flags) {
  static auto real =
      next<int (*)(int, const char *, int, const char *, unsigned)>(
          "renameat2");
  if (killedAt())
    ::raise(SIGKILL);
  return real(fromDir, from, toDir, to, flags);
}

int remove(const char *path) {
  static auto real = next<int (*)(const char *)>("remove");
  if (killedAt())
    ::raise(SIGKILL);
  return real(path);
}

int unlink(const char *path) {
  static auto real = next<int (*)(const char *)>("unlink");
  if (killedAt())
    ::raise(SIGKILL);
  return real(path);
}

} // extern "C"
