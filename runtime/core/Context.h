//===- Context.h - the runtime state of one rank ----------------*- C++ -*-===//
//
// titanrt_context, opaque to compiled code: the rank's communicators (one
// per communicator index of its program) and their asynchronous
// collectives, the compute backend (the CPU's threads or a GPU's stream),
// the message of the last failed call, and the tracer of a profiled step.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_CONTEXT_H
#define TITAN_RUNTIME_CORE_CONTEXT_H

#include "comm/Communicator.h"
#include "core/AsyncCollectives.h"
#include "core/ComputeBackend.h"
#include "core/Status.h"
#include "core/Tracer.h"

#include <memory>
#include <string>
#include <vector>

struct titanrt_context {
  /// Where the compute calls run. Declared first: destroyed last, after
  /// the collectives whose queues order work on its stream (CUDA).
  std::unique_ptr<titan::rt::ComputeBackend> compute;
  /// The communicators of the program, by communicator index.
  std::vector<std::unique_ptr<titan::rt::Communicator>> communicators;
  /// The collectives titanrt_start made asynchronous and the queues of the
  /// communicators. Declared after `communicators`: destroyed first, it
  /// completes its queues while their communicators still live.
  titan::rt::AsyncCollectives async;
  /// The message of the last failed call (titanrt_last_error).
  std::string lastError;
  /// Records the calls of a profiled step ([profiling]); null otherwise.
  titan::rt::Tracer *tracer = nullptr;

  /// Records `status` as the last error and returns its code.
  titanrt_status fail(const titan::rt::Status &status) {
    lastError = status.getMessage();
    return status.getCode();
  }
  /// Returns the code of `status`, recording its message if it failed.
  titanrt_status finish(const titan::rt::Status &status) {
    return status.ok() ? TITANRT_OK : fail(status);
  }
};

#endif // TITAN_RUNTIME_CORE_CONTEXT_H
