//===- StepMemory.cpp - where the step function's regions live -----------===//

#include "core/StepMemory.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>

using namespace titan::rt;

//===----------------------------------------------------------------------===//
// Regions
//===----------------------------------------------------------------------===//

Regions::~Regions() {
  for (int i = 0; i < 3; ++i)
    if (bases[i])
      munmap(bases[i], sizes[i]);
}

Status Regions::allocate(const ProgramDescription &description) {
  int64_t bytes[3] = {description.arenaBytes, description.stateBytes,
                      description.inputBytes};
  for (int i = 0; i < 3; ++i) {
    sizes[i] = std::max<int64_t>(bytes[i], 1);
    void *memory = mmap(nullptr, sizes[i], PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
      return Status::invalidArgument(std::string("cannot allocate the ") +
                                     getRegionName(static_cast<Region>(i)) +
                                     " (" + std::to_string(bytes[i]) +
                                     " bytes): " + std::strerror(errno));
    bases[i] = static_cast<uint8_t *>(memory);
    sizes[i] = bytes[i];
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// HostStepMemory
//===----------------------------------------------------------------------===//

Status HostStepMemory::allocate(const ProgramDescription &,
                                Regions &hostMirror) {
  mirror = &hostMirror;
  return Status::success();
}

//===----------------------------------------------------------------------===//
// CopyingStepMemory
//===----------------------------------------------------------------------===//

Status CopyingStepMemory::allocate(const ProgramDescription &description,
                                   Regions &hostMirror) {
  mirror = &hostMirror;
  return step.allocate(description);
}

Status CopyingStepMemory::upload(Region region, int64_t offset, int64_t bytes) {
  TITANRT_RETURN_IF_ERROR(step.checkRange("upload", region, offset, bytes));
  std::memcpy(step.getBase(region) + offset, mirror->getBase(region) + offset,
              bytes);
  return Status::success();
}

Status CopyingStepMemory::download(Region region, int64_t offset,
                                   int64_t bytes) {
  TITANRT_RETURN_IF_ERROR(step.checkRange("download", region, offset, bytes));
  std::memcpy(mirror->getBase(region) + offset, step.getBase(region) + offset,
              bytes);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// createStepMemory
//===----------------------------------------------------------------------===//

Status titan::rt::createStepMemory(const std::string &kind,
                                   std::unique_ptr<StepMemory> &memory) {
  if (kind.empty() || kind == "host")
    memory = std::make_unique<HostStepMemory>();
  else if (kind == "copying")
    memory = std::make_unique<CopyingStepMemory>();
  else
    return Status::invalidArgument(
        "TITAN_STEP_MEMORY is '" + kind +
        "': expected 'host' (the default) or 'copying' (a test aid: the step "
        "runs on regions of its own and the runtime copies what it needs)");
  return Status::success();
}
