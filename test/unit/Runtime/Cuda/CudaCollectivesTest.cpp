//===- CudaCollectivesTest.cpp - the CUDA backend's collectives, no GPU ---===//
//
// The host side of the CUDA backend's communication: the order
// StreamCollectiveQueue puts between the compute stream and the
// communication stream for synchronous collectives, titanrt_start /
// titanrt_wait and a step's drain (through AsyncCollectives, as libtitanrt
// calls it), checked on a recording StreamOrder and communicator; and the
// loading of libtitanrt_nccl.so.
//
//===----------------------------------------------------------------------===//

#include "core/AsyncCollectives.h"
#include "cuda/NcclLoader.h"
#include "cuda/StreamCollectiveQueue.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cuda_runtime_api.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace titan::rt;
using namespace titan::rt::cuda;
using testing::ElementsAre;
using testing::HasSubstr;

namespace {

/// What the streams and the communicator were asked, in order.
using Log = std::vector<std::string>;

/// A StreamOrder that logs; marks count up from 0 and are reached once
/// `reached` says so.
class RecordingOrder final : public StreamOrder {
public:
  explicit RecordingOrder(Log &log) : log(log) {}
  Status communicationAfterCompute() override {
    log.push_back("communication waits for compute");
    return Status::success();
  }
  Status markCommunication(int64_t &mark) override {
    mark = next++;
    log.push_back("mark " + std::to_string(mark));
    return Status::success();
  }
  Status computeAfter(int64_t mark) override {
    log.push_back("compute waits for " + std::to_string(mark));
    return Status::success();
  }
  bool isReached(int64_t mark) override { return mark < reached; }
  void release(int64_t mark) override {
    log.push_back("release " + std::to_string(mark));
  }

  /// Marks below this one are reached.
  int64_t reached = 0;

private:
  Log &log;
  int64_t next = 0;
};

/// A communicator that logs the operations it enqueues; they fail once
/// `failing` is set.
class RecordingCommunicator final : public Communicator {
public:
  explicit RecordingCommunicator(Log &log) : log(log) {}
  int64_t getRank() const override { return 0; }
  int64_t getSize() const override { return 2; }
  Status allGather(const void *, void *, int64_t) override {
    return record("all_gather");
  }
  Status reduceScatter(titanrt_dtype, titanrt_reduce, const void *, void *,
                       int64_t) override {
    return record("reduce_scatter");
  }
  Status allReduce(titanrt_dtype, titanrt_reduce, const void *, void *,
                   int64_t) override {
    return record("all_reduce");
  }
  Status allToAll(const void *, void *, int64_t) override {
    return record("all_to_all");
  }
  Status broadcast(int64_t, const void *, void *, int64_t) override {
    return record("broadcast");
  }
  Status send(int64_t, int64_t, const void *, int64_t) override {
    return record("send");
  }
  Status recv(int64_t, int64_t, void *, int64_t) override {
    return record("recv");
  }
  Status barrier() override { return record("barrier"); }

  bool failing = false;

private:
  Status record(const std::string &operation) {
    log.push_back(operation);
    if (failing)
      return Status::communication(operation + " over the test group: the "
                                               "peer left");
    return Status::success();
  }
  Log &log;
};

/// AsyncCollectives whose queues are StreamCollectiveQueues over
/// RecordingOrders, as the CUDA rank backend sets them up.
struct StreamJob {
  Log log;
  RecordingCommunicator communicator{log};
  RecordingOrder *order = nullptr;
  AsyncCollectives async;

  StreamJob() {
    async.setQueueFactory(
        [this](Communicator &c, int32_t index) {
          auto recording = std::make_unique<RecordingOrder>(log);
          order = recording.get();
          return std::make_unique<StreamCollectiveQueue>(c, index,
                                                         std::move(recording));
        },
        /*queueEveryCall=*/true);
  }
  Status run(CollectiveKind kind) {
    return async.run(nullptr, 0, communicator, {kind});
  }
};

TEST(StreamCollectiveQueue, ASynchronousCollectiveIsOrderedBothWays) {
  StreamJob job;
  ASSERT_TRUE(job.run(CollectiveKind::AllGather).ok());
  EXPECT_THAT(job.log,
              ElementsAre("communication waits for compute", "all_gather",
                          "mark 0", "compute waits for 0", "release 0"));
  EXPECT_FALSE(job.async.isBusy());
}

TEST(StreamCollectiveQueue, AStartedCollectiveJoinsComputeAtItsWait) {
  StreamJob job;
  ASSERT_TRUE(job.async.start(7).ok());
  ASSERT_TRUE(job.run(CollectiveKind::ReduceScatter).ok());
  // Compute goes on: nothing waits for the reduce_scatter yet.
  EXPECT_THAT(job.log, ElementsAre("communication waits for compute",
                                   "reduce_scatter", "mark 0"));
  EXPECT_TRUE(job.async.isBusy());
  // A synchronous collective on the communicator is ordered after it on
  // the communication stream: the host does not wait.
  ASSERT_TRUE(job.run(CollectiveKind::AllReduce).ok());
  job.order->reached = 1;
  EXPECT_FALSE(job.async.isBusy());
  ASSERT_TRUE(job.async.wait(nullptr, 7).ok());
  EXPECT_THAT(job.log,
              ElementsAre("communication waits for compute", "reduce_scatter",
                          "mark 0", "communication waits for compute",
                          "all_reduce", "mark 1", "compute waits for 1",
                          "release 1", "compute waits for 0", "release 0"));
  EXPECT_EQ(job.async.wait(nullptr, 7).getMessage(),
            "titanrt_wait: handle 7 was already waited for");
}

TEST(StreamCollectiveQueue, TheStepsDrainJoinsWhatWasNeverWaitedFor) {
  StreamJob job;
  ASSERT_TRUE(job.async.start(1).ok());
  ASSERT_TRUE(job.run(CollectiveKind::AllGather).ok());
  ASSERT_TRUE(job.async.start(2).ok());
  ASSERT_TRUE(job.run(CollectiveKind::AllToAll).ok());
  job.log.clear();
  ASSERT_TRUE(job.async.drain().ok());
  // The state the trainer reads next is written after both.
  EXPECT_THAT(job.log, ElementsAre("compute waits for 0", "release 0",
                                   "compute waits for 1", "release 1"));
}

TEST(StreamCollectiveQueue, AFailedStartIsReportedWhereTheStepLooksNext) {
  StreamJob job;
  job.communicator.failing = true;
  ASSERT_TRUE(job.async.start(4).ok());
  // Enqueueing failed: nothing was marked, and the compute stream has
  // nothing to wait for.
  ASSERT_TRUE(job.run(CollectiveKind::Broadcast).ok());
  EXPECT_THAT(job.log,
              ElementsAre("communication waits for compute", "broadcast"));
  Status next = job.run(CollectiveKind::AllGather);
  EXPECT_EQ(next.getMessage(),
            "broadcast over the test group: the peer left (the asynchronous "
            "broadcast of handle 4, found failed by the synchronous "
            "all_gather after it)");
  Status waited = job.async.wait(nullptr, 4);
  EXPECT_EQ(waited.getMessage(),
            "broadcast over the test group: the peer left (the asynchronous "
            "broadcast of handle 4, at its titanrt_wait)");
}

TEST(StreamCollectiveQueue, ASynchronousFailureReleasesNothingItDidNotMark) {
  Log log;
  RecordingCommunicator communicator(log);
  communicator.failing = true;
  StreamCollectiveQueue queue(communicator, 0,
                              std::make_unique<RecordingOrder>(log));
  CollectiveCall call;
  call.kind = CollectiveKind::AllReduce;
  EXPECT_EQ(queue.run(call).getMessage(),
            "all_reduce over the test group: the peer left");
  EXPECT_THAT(log,
              ElementsAre("communication waits for compute", "all_reduce"));
}

TEST(NcclLoader, FindsThePluginBesideTheRuntime) {
  std::string path = getNcclPluginPath();
  EXPECT_THAT(path, testing::EndsWith("/libtitanrt_nccl.so"));
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
  CommunicatorConnector connector;
  Status loaded = loadNcclConnector(path, 0, nullptr, connector);
  ASSERT_TRUE(loaded.ok()) << loaded.getMessage();
  ASSERT_TRUE(bool(connector));

  // A world of one rank over one axis: without a GPU the connector fails
  // at the device; with one it makes the communicator.
  LaunchEnvironment env;
  MeshShape mesh{{"fsdp"}, {1}};
  std::vector<std::unique_ptr<Communicator>> communicators;
  int devices = 0;
  bool hasGpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  if (hasGpu)
    GTEST_SKIP() << "a GPU is present: NCCL itself is checked by gpu.sh";
  Status connected = connector(nullptr, env, mesh, {{0}},
                               std::chrono::seconds(5), nullptr, communicators);
  EXPECT_THAT(connected.getMessage(),
              HasSubstr("rank 0 of 1: selecting CUDA device 0"));
  EXPECT_TRUE(communicators.empty());
}

TEST(NcclLoader, AMissingPluginNamesItselfAndTheFix) {
  CommunicatorConnector connector;
  Status loaded = loadNcclConnector("/nonexistent/libtitanrt_nccl.so", 0,
                                    nullptr, connector);
  EXPECT_EQ(loaded.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_THAT(loaded.getMessage(),
              HasSubstr("a CUDA job of more than one rank communicates "
                        "through NCCL, but /nonexistent/libtitanrt_nccl.so "
                        "cannot be loaded: "));
  EXPECT_THAT(loaded.getMessage(),
              HasSubstr("install NCCL 2.x, libnccl.so.2, or add its folder "
                        "to LD_LIBRARY_PATH"));
  EXPECT_FALSE(bool(connector));
}

} // namespace
