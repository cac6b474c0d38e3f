//===- ThreadPool.cpp - the worker threads of the CPU kernels -------------===//
//
// numThreads - 1 persistent workers sleep on a condition variable. A
// parallelFor publishes one loop (the function, its chunk size and a shared
// chunk counter) under the mutex and bumps a generation number; the workers
// and the caller then claim chunks from the counter until none is left, and
// the caller waits until every worker has checked out of the generation, so
// no worker can still be reading the loop when parallelFor returns.
//
// The chunks depend only on n, grain and the number of threads; which thread
// runs which chunk varies from run to run. The kernels write disjoint outputs
// per index and compute each index the same way on any thread, so their
// results do not depend on that assignment.
//
//===----------------------------------------------------------------------===//

#include "cpu/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using namespace titan::rt;

namespace {

/// Chunks per thread a loop is cut into (at most), so that threads that
/// finish early take over work of uneven loops (causal attention).
constexpr int64_t kChunksPerThread = 4;

/// Whether this thread is running a chunk of some pool's loop: a
/// parallelFor called from inside one runs inline instead of waiting for
/// workers that are busy with the outer loop.
thread_local bool insideLoop = false;

} // namespace

/// The pool's state; see the file comment.
struct ThreadPool::Impl {
  /// Starts numThreads - 1 workers.
  explicit Impl(int numThreads) : numThreads(numThreads) {
    for (int i = 1; i < numThreads; ++i)
      workers.emplace_back([this] { workerMain(); });
  }

  /// Stops and joins the workers.
  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    for (std::thread &worker : workers)
      worker.join();
  }

  /// Claims and runs chunks of the current loop until none is left.
  void runChunks() {
    insideLoop = true;
    for (int64_t chunk = nextChunk.fetch_add(1); chunk < numChunks;
         chunk = nextChunk.fetch_add(1)) {
      int64_t begin = chunk * chunkSize;
      (*body)(begin, std::min(begin + chunkSize, loopSize));
    }
    insideLoop = false;
  }

  /// A worker: waits for each new generation, helps with its loop, checks
  /// out.
  void workerMain() {
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping)
          return;
        seen = generation;
      }
      runChunks();
      std::lock_guard<std::mutex> lock(mutex);
      if (--pendingWorkers == 0)
        done.notify_one();
    }
  }

  /// ThreadPool::parallelFor: [0, n) in chunks of max(grain,
  /// n / (kChunksPerThread * numThreads)) (rounded up); a loop of one chunk,
  /// a pool of one thread or a nested call runs fn(0, n) on the caller.
  /// `fn` must not throw.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &fn) {
    if (n <= 0)
      return;
    int64_t maxChunks = numThreads * kChunksPerThread;
    int64_t size =
        std::max({grain, int64_t(1), (n + maxChunks - 1) / maxChunks});
    int64_t chunks = (n + size - 1) / size;
    if (chunks == 1 || workers.empty() || insideLoop) {
      fn(0, n);
      return;
    }
    // One loop at a time: the loop's fields are shared with the workers.
    std::lock_guard<std::mutex> callLock(callMutex);
    {
      std::lock_guard<std::mutex> lock(mutex);
      body = &fn;
      loopSize = n;
      chunkSize = size;
      numChunks = chunks;
      nextChunk.store(0);
      pendingWorkers = static_cast<int>(workers.size());
      ++generation;
    }
    wake.notify_all();
    runChunks();
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return pendingWorkers == 0; });
  }

  /// The threads in all, the caller included.
  const int numThreads;
  /// The numThreads - 1 workers.
  std::vector<std::thread> workers;

  /// Serializes parallelFor calls from different threads.
  std::mutex callMutex;
  /// Guards the loop's fields, the generation and the worker count.
  std::mutex mutex;
  /// Signals the workers a new generation (or stopping).
  std::condition_variable wake;
  /// Signals the caller that the last worker checked out.
  std::condition_variable done;
  uint64_t generation = 0;
  bool stopping = false;
  int pendingWorkers = 0;

  /// The current loop: fn, [0, loopSize) cut into numChunks chunks of
  /// chunkSize (the last may be shorter), and the next unclaimed chunk.
  const std::function<void(int64_t, int64_t)> *body = nullptr;
  int64_t loopSize = 0;
  int64_t chunkSize = 0;
  int64_t numChunks = 0;
  std::atomic<int64_t> nextChunk{0};
};

ThreadPool::ThreadPool(int numThreads)
    : impl(new Impl(std::max(numThreads, 1))) {}

ThreadPool::~ThreadPool() { delete impl; }

int ThreadPool::getNumThreads() const { return impl->numThreads; }

void ThreadPool::parallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)> &fn) {
  impl->parallelFor(n, grain, fn);
}
