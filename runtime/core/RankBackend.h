//===- RankBackend.h - what a rank computes on ------------------*- C++ -*-===//
//
// A rank's compute backend and step memory, made for the backend its
// program was compiled for. Each runtime library defines createRankBackend
// once: libtitanrt.so (cpu/CpuRankBackend.cpp) the CPU backend's, refusing
// programs compiled for CUDA; libtitanrt_cuda.so (cuda/CudaRankBackend.cpp)
// the CUDA backend's, refusing CPU programs.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_RANKBACKEND_H
#define TITAN_RUNTIME_CORE_RANKBACKEND_H

#include "comm/Connect.h"
#include "core/CollectiveQueue.h"
#include "core/ComputeBackend.h"
#include "core/ProgramDescription.h"
#include "core/StepMemory.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>

namespace titan::rt {

/// Where a rank's compute calls run, where its step's regions live, and how
/// its program's collectives reach the other ranks.
struct RankBackend {
  std::unique_ptr<ComputeBackend> compute;
  std::unique_ptr<StepMemory> memory;
  /// Set when the program's communicators are not Gloo's (the CUDA
  /// backend's NCCL): connects them (connectCommunicators' external sets).
  CommunicatorConnector connectCommunicators;
  /// Set when every collective of the program goes through a queue of the
  /// backend (the CUDA backend's streams): makes the queues.
  CollectiveQueueFactory collectiveQueues;
};

/// What createRankBackend needs to know of the rank.
struct RankBackendOptions {
  /// LOCAL_RANK: the GPU of a CUDA rank.
  int64_t localRank = 0;
  /// The CPU backend's threads.
  int threads = 1;
  /// TITAN_STEP_MEMORY (createStepMemory's kinds; "" for the backend's
  /// own).
  std::string stepMemory;
  /// TITAN_CUDA_ATTENTION: the CUDA backend's attention kernels ("" or
  /// "auto", "cudnn", "titan", "cuda_cores"); the CPU backend has one kind.
  std::string cudaAttention;
};

/// The hardware threads a CPU rank of `threads` threads gets when
/// `localRanks` ranks share this machine: its threads, or its share of the
/// machine's when they oversubscribe it (titan-calibrate records it with
/// a device's peaks; the runtime scales the peak by its own).
inline double getHardwareThreadsOfRank(int threads, int64_t localRanks) {
  double share = double(std::max(1u, std::thread::hardware_concurrency())) /
                 double(std::max<int64_t>(1, localRanks));
  return std::min(double(threads), share);
}

/// Fails unless `program` was compiled for `backend` ("cpu" or "cuda"), the
/// one this runtime library runs; the message names the executable to run
/// instead.
inline Status checkProgramBackend(const ProgramDescription &program,
                                  const std::string &backend) {
  if (program.backend == backend)
    return Status::success();
  auto library = [](const std::string &name) {
    return name == "cpu" ? std::string("libtitanrt.so")
                         : "libtitanrt_" + name + ".so";
  };
  return Status::unsupported(
      "this program was compiled for the " + program.backend +
      " backend, but this runtime (" + library(backend) + ") is the " +
      backend + " backend's: run the executable titan-compile --backend=" +
      program.backend + " built (it links " + library(program.backend) + ")");
}

/// Makes `backend` for `program.backend` on the calling thread (a CUDA
/// rank's device becomes current and its compute stream the one the
/// compiler's kernels launch on, for this thread: the one that steps).
Status createRankBackend(const ProgramDescription &program,
                         const RankBackendOptions &options,
                         RankBackend &backend);

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_RANKBACKEND_H
