//===- GlibcCompat.cpp - libtitanrt_cuda.so on older C libraries ----------===//
//
// LLVM's Support, which libtitanrt_cuda.so links statically so that GPU
// machines need no LLVM (runtime/CMakeLists.txt), calls arc4random, which
// glibc has only since 2.36; GPU images often run older ones (Ubuntu 22.04:
// 2.35). This hidden definition satisfies the call inside the library from
// getrandom(2) (glibc 2.25), so the library asks for no GLIBC_2.36 symbol,
// and nothing outside it sees the definition.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

/// 32 random bits from the kernel (as glibc's arc4random).
extern "C" __attribute__((visibility("hidden"))) uint32_t
arc4random(void) noexcept {
  uint32_t value = 0;
  if (getrandom(&value, sizeof(value), 0) == sizeof(value))
    return value;
  // A kernel without getrandom: its device.
  int device = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (device >= 0) {
    (void)!read(device, &value, sizeof(value));
    close(device);
  }
  return value;
}
