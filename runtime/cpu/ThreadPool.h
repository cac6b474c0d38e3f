//===- ThreadPool.h - the worker threads of the CPU kernels -----*- C++ -*-===//

#ifndef TITAN_RUNTIME_CPU_THREADPOOL_H
#define TITAN_RUNTIME_CPU_THREADPOOL_H

#include <cstdint>
#include <functional>

namespace titan::rt {

/// A fixed set of threads that run the parallel loops of the CPU kernels;
/// the calling thread takes part.
class ThreadPool {
public:
  /// A pool of `numThreads` threads in all (the caller and numThreads - 1
  /// workers); at least 1.
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// The threads in all, the caller included.
  int getNumThreads() const;

  /// Calls fn(begin, end) on disjoint ranges that cover [0, n), each at
  /// least `grain` long (but the last), on the pool's threads; returns when
  /// all calls returned.
  /// The ranges depend only on n, grain and the number of threads (at most
  /// 4 per thread, claimed dynamically); a call from inside a range runs
  /// inline, and calls from several threads take turns. `fn` must not
  /// throw.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &fn);

private:
  struct Impl;
  Impl *impl;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CPU_THREADPOOL_H
