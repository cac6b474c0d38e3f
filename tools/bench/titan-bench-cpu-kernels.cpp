//===- titan-bench-cpu-kernels.cpp - Speed of the CPU backend's kernels ---===//
//
// Times the CPU backend's kernels on the shapes of titan's Llama
// debugmodel (dim 256, FFN 768, vocab 2048, 16 heads) at seq 2048:
//
//   - the pool's parallelFor overhead (an empty loop);
//   - sgemm through cpu::matmul (the pool's threads, OpenBLAS single-
//     threaded inside each) and, for comparison, one cblas_sgemm with
//     OpenBLAS's own threads (as many as the pool);
//   - attention forward and backward, blocked (the kernels cpu::attention
//     and cpu::attentionGrad run, or those of --attention-target), against
//     an "eager" baseline in the same run: what PyTorch eager does, the
//     [batch * heads, seq, seq] scores materialized by a batched sgemm, a
//     softmax over them (vectorized, the pool's threads) and a second
//     sgemm; its backward uses the probabilities saved by its forward (4
//     sgemms and the softmax gradient).
//
// It prints which kernels OpenBLAS uses (OPENBLAS_CORETYPE overrides its
// choice, docs/runtime-cpu-kernels.md). Run it with OPENBLAS_THREAD_TIMEOUT=4:
// OpenBLAS's workers otherwise spin about 0.1 s after its threaded GEMM and
// take the cores from the pool's next one. Each figure is the best of --reps
// timed runs after one warm-up run: on a shared machine, the run least
// disturbed by other processes. The variants compared in a row (pool and
// OpenBLAS threads; blocked and eager attention) run in turn, so that they
// see the same load. Effective GFLOP/s count the forward as 4 * batch *
// heads * seq^2 * head_dim (QK^T and PV) and the backward as 2.5x that (5
// products), both halved when causal; the eager baseline gets the same
// counts, so GFLOP/s ratios are time ratios.
//
//===----------------------------------------------------------------------===//

#include "cpu/AttentionKernels.h"
#include "cpu/CpuKernels.h"
#include "cpu/Simd.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

using namespace titan::rt;
using namespace titan::rt::cpu;
namespace cl = llvm::cl;

static cl::opt<int> numThreads("pool-threads", cl::desc("Threads of the pool"),
                               cl::init(2));
static cl::opt<int> reps("reps", cl::desc("Timed runs per figure"),
                         cl::init(5));
static cl::opt<int64_t> seqLen("seq", cl::desc("Sequence length"),
                               cl::init(2048));
static cl::opt<int64_t> numHeads("heads", cl::desc("Attention heads"),
                                 cl::init(16));
static cl::opt<std::string> attentionTarget(
    "attention-target",
    cl::desc("The attention kernels: x86-64-v3, x86-64-v4 or, by default, "
             "the widest the CPU runs"));
static cl::list<int64_t> headDims("head-dim",
                                  cl::desc("Head sizes (default 16,64,128)"),
                                  cl::CommaSeparated);

namespace {

/// The shortest wall time in seconds of each of `fns` over --reps rounds,
/// after a warm-up round; a round calls them in turn, so that all see the
/// same load from other processes.
std::vector<double> bestSeconds(const std::vector<std::function<void()>> &fns) {
  for (const std::function<void()> &fn : fns)
    fn();
  std::vector<double> best(fns.size(), INFINITY);
  for (int round = 0; round < reps; ++round)
    for (size_t i = 0; i < fns.size(); ++i) {
      auto start = std::chrono::steady_clock::now();
      fns[i]();
      best[i] = std::min(best[i], std::chrono::duration<double>(
                                      std::chrono::steady_clock::now() - start)
                                      .count());
    }
  return best;
}

/// `count` floats uniform in [-1, 1].
std::vector<float> randomFloats(int64_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &value : values)
    value = distribution(generator);
  return values;
}

/// Exits with the message if `status` failed.
void check(const Status &status) {
  if (status.ok())
    return;
  llvm::errs() << "titan-bench-cpu-kernels: " << status.getMessage() << "\n";
  std::exit(1);
}

/// Prints the cost of an empty parallelFor.
void benchParallelFor(ThreadPool &pool) {
  constexpr int kCalls = 2000;
  double seconds = bestSeconds({[&] {
    for (int i = 0; i < kCalls; ++i)
      pool.parallelFor(pool.getNumThreads(), 1, [](int64_t, int64_t) {});
  }})[0];
  llvm::outs() << llvm::format(
      "parallelFor (empty, %d chunks): %.1f us/call\n\n", pool.getNumThreads(),
      seconds / kCalls * 1e6);
}

/// Prints the sgemm rates of the debugmodel's shapes.
void benchGemms(ThreadPool &pool) {
  llvm::outs() << "sgemm C[m, n] = A[m, k] B[n, k]^T (nn.Linear), GFLOP/s\n";
  llvm::outs() << llvm::format("%-18s %12s %16s\n", "m x n x k", "titan pool",
                               "OpenBLAS threads");
  struct Shape {
    int64_t m, n, k;
  };
  for (Shape s : {Shape{2048, 256, 256}, Shape{2048, 256, 768},
                  Shape{2048, 768, 256}, Shape{2048, 2048, 256}}) {
    std::vector<float> a = randomFloats(s.m * s.k, 1);
    std::vector<float> b = randomFloats(s.n * s.k, 2);
    std::vector<float> c(s.m * s.n);
    double flops = 2.0 * s.m * s.n * s.k;
    std::vector<double> seconds = bestSeconds(
        {[&] {
           check(matmul(pool, TITANRT_F32, a.data(), b.data(), nullptr,
                        c.data(), 1, s.m, s.n, s.k, false, true, true));
         },
         [&] {
           openblas_set_num_threads(pool.getNumThreads());
           cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.m, s.n, s.k,
                       1.0f, a.data(), s.k, b.data(), s.k, 0.0f, c.data(), s.n);
           openblas_set_num_threads(1);
         }});
    std::string name = std::to_string(s.m) + " x " + std::to_string(s.n) +
                       " x " + std::to_string(s.k);
    llvm::outs() << llvm::format("%-18s %12.1f %16.1f\n", name.c_str(),
                                 flops / seconds[0] * 1e-9,
                                 flops / seconds[1] * 1e-9);
  }
  llvm::outs() << "\n";
}

/// The eager baseline's softmax of one row of scores in place: scale, the
/// causal mask (columns past `visible` get probability 0), max, exp, sum,
/// normalize, vectorized with the kernels' exp2. `size` is a multiple of
/// kVecLanes.
void eagerSoftmaxRow(float *row, int64_t size, int64_t visible, float scale) {
  const float log2e = 1.4426950408889634f;
  Vec max = splat(-INFINITY);
  for (int64_t j = 0; j < size; j += kVecLanes) {
    Vec x = loadVec(row + j) * scale;
    for (int64_t l = 0; l < kVecLanes; ++l)
      if (j + l >= visible)
        x[l] = -INFINITY;
    storeVec(row + j, x);
    max = maxVec(max, x);
  }
  float rowMax = -INFINITY;
  for (int64_t l = 0; l < kVecLanes; ++l)
    rowMax = std::max(rowMax, max[l]);
  Vec sum{};
  for (int64_t j = 0; j < size; j += kVecLanes) {
    Vec p = exp2Vec((loadVec(row + j) - rowMax) * log2e);
    storeVec(row + j, p);
    sum += p;
  }
  float inverse = 1.0f / sumLanes(sum);
  for (int64_t j = 0; j < size; j += kVecLanes)
    storeVec(row + j, loadVec(row + j) * inverse);
}

/// The eager baseline's softmax gradient of one row in place: dS = P * (dP
/// - rowsum(P * dP)) * scale (the scale of the scores' gradient folded in).
void eagerSoftmaxGradRow(const float *p, float *dp, int64_t size, float scale) {
  Vec dot{};
  for (int64_t j = 0; j < size; j += kVecLanes)
    dot += loadVec(p + j) * loadVec(dp + j);
  float rowDot = sumLanes(dot);
  for (int64_t j = 0; j < size; j += kVecLanes)
    storeVec(dp + j, loadVec(p + j) * (loadVec(dp + j) - rowDot) * scale);
}

/// Prints the forward and backward of `kernels` and of the eager baseline.
void benchAttention(ThreadPool &pool, const AttentionKernels &kernels,
                    int64_t headDim, bool causal) {
  int64_t heads = numHeads, seq = seqLen, head = seq * headDim;
  float scale = 1.0f / std::sqrt(float(headDim));
  std::vector<float> q = randomFloats(heads * head, 1),
                     k = randomFloats(heads * head, 2),
                     v = randomFloats(heads * head, 3),
                     dOut = randomFloats(heads * head, 4);
  std::vector<float> out(heads * head), lse(heads * seq), dq(heads * head),
      dk(heads * head), dv(heads * head), workspace(heads * seq);
  double forwardFlops = 4.0 * heads * seq * seq * headDim * (causal ? 0.5 : 1);
  double backwardFlops = 2.5 * forwardFlops;

  AttentionShape shape{1, heads, heads, seq, headDim, causal, scale};
  // Eager: P [heads, seq, seq] materialized and kept for the backward.
  std::vector<float> p(heads * seq * seq), dp(heads * seq * seq);
  std::vector<double> seconds = bestSeconds({
      [&] {
        kernels.forward(pool, shape, q.data(), k.data(), v.data(), out.data(),
                        lse.data());
      },
      [&] {
        kernels.backward(pool, shape, q.data(), k.data(), v.data(), out.data(),
                         lse.data(), dOut.data(), dq.data(), dk.data(),
                         dv.data(), workspace.data());
      },
      [&] {
        check(matmul(pool, TITANRT_F32, q.data(), k.data(), nullptr, p.data(),
                     heads, seq, seq, headDim, false, true, false));
        pool.parallelFor(heads * seq, 16, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row)
            eagerSoftmaxRow(p.data() + row * seq, seq,
                            causal ? row % seq + 1 : seq, scale);
        });
        check(matmul(pool, TITANRT_F32, p.data(), v.data(), nullptr, out.data(),
                     heads, seq, headDim, seq, false, false, false));
      },
      [&] {
        // dV = P^T dO, dP = dO V^T, dS, dQ = dS K, dK = dS^T Q.
        check(matmul(pool, TITANRT_F32, p.data(), dOut.data(), nullptr,
                     dv.data(), heads, seq, headDim, seq, true, false, false));
        check(matmul(pool, TITANRT_F32, dOut.data(), v.data(), nullptr,
                     dp.data(), heads, seq, seq, headDim, false, true, false));
        pool.parallelFor(heads * seq, 16, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row)
            eagerSoftmaxGradRow(p.data() + row * seq, dp.data() + row * seq,
                                seq, scale);
        });
        check(matmul(pool, TITANRT_F32, dp.data(), k.data(), nullptr, dq.data(),
                     heads, seq, headDim, seq, false, false, false));
        check(matmul(pool, TITANRT_F32, dp.data(), q.data(), nullptr, dk.data(),
                     heads, seq, headDim, seq, true, false, false));
      },
  });

  auto row = [&](const char *direction, double blocked, double eager,
                 double flops) {
    llvm::outs() << llvm::format(
        "%-4lld %-7s %-8s %9.2f %9.1f %9.2f %9.1f %7.2fx\n", (long long)headDim,
        causal ? "causal" : "full", direction, blocked * 1e3,
        flops / blocked * 1e-9, eager * 1e3, flops / eager * 1e-9,
        eager / blocked);
  };
  row("forward", seconds[0], seconds[2], forwardFlops);
  row("backward", seconds[1], seconds[3], backwardFlops);
}

/// The attention kernels --attention-target names, or null after an error.
const AttentionKernels *selectAttentionKernels() {
  if (attentionTarget.empty() && getAttentionKernels())
    return getAttentionKernels();
#ifdef __x86_64__
  if (attentionTarget == "x86-64-v3" && __builtin_cpu_supports("x86-64-v3"))
    return &attentionKernelsV3;
  if (attentionTarget == "x86-64-v4" && __builtin_cpu_supports("x86-64-v4"))
    return &attentionKernelsV4;
#endif
  llvm::errs() << "titan-bench-cpu-kernels: this CPU runs no attention "
                  "kernels for '"
               << attentionTarget << "'\n";
  return nullptr;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "Speed of the CPU backend's kernels\n");
  if (seqLen % kVecLanes != 0) {
    llvm::errs() << "titan-bench-cpu-kernels: --seq must be a multiple of "
                 << kVecLanes << "\n";
    return 1;
  }
  const AttentionKernels *kernels = selectAttentionKernels();
  if (!kernels)
    return 1;
  std::vector<int64_t> dims(headDims.begin(), headDims.end());
  if (dims.empty())
    dims = {16, 64, 128};
  ThreadPool pool(numThreads);
  llvm::outs() << "threads " << numThreads << ", best of " << reps
               << " runs, OpenBLAS kernels for " << openblas_get_corename()
               << "\n\n";
  benchParallelFor(pool);
  benchGemms(pool);

  llvm::outs() << "attention (" << kernels->target << " kernels), batch 1, "
               << numHeads << " heads, seq " << seqLen
               << "; blocked vs eager (ms, effective GFLOP/s)\n";
  llvm::outs() << llvm::format("%-4s %-7s %-8s %9s %9s %9s %9s %8s\n", "dim",
                               "mask", "pass", "blocked", "GFLOP/s", "eager",
                               "GFLOP/s", "speedup");
  for (int64_t headDim : dims)
    for (bool causal : {true, false})
      benchAttention(pool, *kernels, headDim, causal);
  return 0;
}
