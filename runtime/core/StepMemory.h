//===- StepMemory.h - where the step function's regions live ---*- C++ -*-===//
//
// The Trainer reads and writes a rank's three regions (docs/runtime.md:
// arena, state, inputs) in host memory, its host mirror (Regions); the
// compiled step function works on the regions StepMemory gives it. On the
// CPU backend they are the mirror itself and the copies between them cost
// nothing; on a GPU they are device memory, and the Trainer copies what the
// step needs in (the state once, the inputs every step) and what it reads
// out (scalars, results, the state before a checkpoint).
//
// The interface is header-only so that a backend outside runtime/core (the
// CUDA one's CudaStepMemory, runtime/cuda) implements it without linking
// the CPU runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_STEPMEMORY_H
#define TITAN_RUNTIME_CORE_STEPMEMORY_H

#include "core/ProgramDescription.h"
#include "core/Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace titan::rt {

/// The three memory regions of a rank in host memory, allocated once: the
/// host mirror the Trainer works on.
class Regions : public RegionTable {
public:
  Regions() = default;
  ~Regions();
  Regions(const Regions &) = delete;
  Regions &operator=(const Regions &) = delete;

  /// Allocates the regions (zeroed, page-aligned) of `description`.
  Status allocate(const ProgramDescription &description);
};

/// Where the step function's regions live, and the copies between them and
/// the host mirror. Copies may be asynchronous: the host mirror's bytes of
/// a download are there, and an upload's source may be written again, once
/// synchronize() returns.
class StepMemory {
public:
  virtual ~StepMemory() = default;

  /// Allocates the step's regions of `description` beside `mirror` (already
  /// allocated for it), which the copies read and write.
  virtual Status allocate(const ProgramDescription &description,
                          Regions &mirror) = 0;
  /// The base of `region` the step function gets.
  virtual uint8_t *getStepBase(Region region) const = 0;
  /// Copies `bytes` bytes at `offset` of `region` from the host mirror into
  /// the step's memory.
  virtual Status upload(Region region, int64_t offset, int64_t bytes) = 0;
  /// Copies `bytes` bytes at `offset` of `region` from the step's memory
  /// into the host mirror.
  virtual Status download(Region region, int64_t offset, int64_t bytes) = 0;
  /// Waits until the step's work and the copies asked for are done.
  virtual Status synchronize() = 0;
  /// The bytes of the device's memory in use now, as the device reports
  /// them (the step's regions and what the backend's libraries hold
  /// besides): the measured side of the planned memory. None for host
  /// memory.
  virtual std::optional<int64_t> getDeviceBytesInUse() const {
    return std::nullopt;
  }
};

/// The CPU backend's: the step runs on the host mirror itself, so copies
/// are no-ops.
class HostStepMemory final : public StepMemory {
public:
  Status allocate(const ProgramDescription &description,
                  Regions &mirror) override;
  uint8_t *getStepBase(Region region) const override {
    return mirror->getBase(region);
  }
  Status upload(Region, int64_t, int64_t) override { return Status::success(); }
  Status download(Region, int64_t, int64_t) override {
    return Status::success();
  }
  Status synchronize() override { return Status::success(); }

private:
  Regions *mirror = nullptr;
};

/// A test aid (TITAN_STEP_MEMORY=copying): the step runs on host regions of
/// its own, as it would on a GPU's memory, and copies are memcpy, so that a
/// copy the Trainer misses shows in the CPU backend's results.
class CopyingStepMemory final : public StepMemory {
public:
  Status allocate(const ProgramDescription &description,
                  Regions &mirror) override;
  uint8_t *getStepBase(Region region) const override {
    return step.getBase(region);
  }
  Status upload(Region region, int64_t offset, int64_t bytes) override;
  Status download(Region region, int64_t offset, int64_t bytes) override;
  Status synchronize() override { return Status::success(); }

private:
  Regions *mirror = nullptr;
  Regions step;
};

/// The step memory `kind` names: "host" (or "") or "copying"; an error for
/// another name. (The CUDA backend's CudaStepMemory is made where its
/// runtime is linked, not here.)
Status createStepMemory(const std::string &kind,
                        std::unique_ptr<StepMemory> &memory);

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_STEPMEMORY_H
