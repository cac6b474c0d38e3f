//===- titan-calibrate.cpp - measure a CPU machine for the cost model -----===//
//
//   titan-run --nproc-per-node N titan-calibrate -- -o cpu.toml [--quick]
//
// Measures what one rank of a CPU job gets on this machine when N ranks
// share it, as the runtime runs them (each rank's kernels on a pool of
// hardware threads / N threads, OpenBLAS single-threaded inside each task),
// and writes a device file for the cost model (docs/cost-model.md):
//
//   - sgemm rate by shape, through the runtime's own matmul: the fastest
//     is the float32 peak, every shape a point of the GEMM efficiency curve
//     (by its FLOPs);
//   - the attention kernels' rate (forward and backward of causal heads of
//     64, by the model FLOPs the cost model charges them) over that peak:
//     the attention efficiency (at most 1: the blocked kernels can beat
//     OpenBLAS's sgemm per model FLOP);
//   - memory bandwidth: a triad (a = b + s c) over arrays far larger than
//     the caches, on the pool's threads;
//   - the vector rate: multiply-adds on a cache-resident array;
//   - the overhead of one op: a parallel loop that does nothing;
//   - with N > 1, Gloo's all_reduce by size, fitted to alpha-beta (ring
//     steps x latency + bytes sent / bandwidth) by least squares.
//
// All ranks measure at once (so that they share the cores and memory as
// training ranks do); the figures written are the mean over the ranks.
// Run without a launcher it is one rank, and the links keep figures
// nothing measured (the file says so). Each figure is the best of --reps
// rounds, each a fixed amount of work timed from a barrier to a barrier.
//
//===----------------------------------------------------------------------===//

#include "comm/Connect.h"
#include "core/RankBackend.h"
#include "cpu/CpuKernels.h"
#include "cpu/ThreadPool.h"

#include "titan/Config/DeviceFile.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace titan::rt;
namespace cl = llvm::cl;

static cl::OptionCategory calibrateOptions("titan-calibrate options");

static cl::opt<std::string> outputFile("o", cl::cat(calibrateOptions),
                                       cl::desc("Device file to write"),
                                       cl::value_desc("file.toml"),
                                       cl::init("-"));
static cl::opt<std::string> deviceName("name", cl::cat(calibrateOptions),
                                       cl::desc("device.name (default: cpu)"),
                                       cl::init("cpu"));
static cl::opt<bool> quick("quick", cl::cat(calibrateOptions),
                           cl::desc("Fewer and smaller measurements (a test)"));
static cl::opt<int> reps("reps", cl::cat(calibrateOptions),
                         cl::desc("Timed rounds per figure"), cl::init(3));
static cl::opt<int> threadsOption(
    "pool-threads", cl::cat(calibrateOptions),
    cl::desc("Threads per rank (default: as the runtime, hardware threads "
             "divided by the ranks on this machine)"),
    cl::init(0));

namespace {

using Clock = std::chrono::steady_clock;

/// Exits with `message` when `status` failed.
void check(const Status &status, llvm::StringRef what) {
  if (status.ok())
    return;
  llvm::errs() << "titan-calibrate: error: " << what << ": "
               << status.getMessage() << "\n";
  std::exit(1);
}

/// The job: this rank's communicator over all ranks (null when alone).
struct Job {
  LaunchEnvironment env;
  std::unique_ptr<Communicator> world;

  /// The mean over the ranks of each of `values` (in place).
  void average(std::vector<double> &values) {
    if (!world)
      return;
    check(world->allReduce(TITANRT_F64, TITANRT_SUM, values.data(),
                           values.data(), int64_t(values.size())),
          "all_reduce of the results");
    for (double &value : values)
      value /= double(env.worldSize);
  }
  void barrier() {
    if (world)
      check(world->barrier(), "barrier");
  }
};

/// Seconds per call of `fn` when every rank calls it `calls` times at
/// once: the best over --reps rounds (after a warm-up call) of the wall
/// time from a barrier before the first call to one after the last, so
/// that a rank that finishes early does not leave the others the machine.
double timeTogether(Job &job, int64_t calls, const std::function<void()> &fn) {
  fn();
  double best = INFINITY;
  for (int round = 0; round < reps; ++round) {
    job.barrier();
    auto start = Clock::now();
    for (int64_t call = 0; call < calls; ++call)
      fn();
    job.barrier();
    double elapsed =
        std::chrono::duration<double>(Clock::now() - start).count();
    best = std::min(best, elapsed / double(calls));
  }
  return best;
}

/// Calls that make about `total` units of work of `each` units per call.
int64_t callsFor(double total, double each) {
  return std::max<int64_t>(1, int64_t(total / each));
}

/// A GEMM shape (C m x n, k deep) and its measured FLOP/s.
struct GemmPoint {
  int64_t m, n, k;
  double flopsPerSecond = 0;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

/// Square GEMMs and the shapes of small Llama blocks (tokens x dim x dim,
/// tokens x FFN x dim).
std::vector<GemmPoint> gemmShapes() {
  if (quick)
    return {{32, 32, 32}, {128, 128, 128}, {256, 256, 256}, {1024, 256, 256}};
  return {{32, 32, 32},       {64, 64, 64},     {128, 128, 128},
          {256, 256, 256},    {512, 512, 512},  {1024, 1024, 1024},
          {2048, 2048, 2048}, {4096, 256, 256}, {4096, 768, 256},
          {4096, 256, 768},   {8192, 2048, 256}};
}

void measureGemms(Job &job, ThreadPool &pool, std::vector<GemmPoint> &points) {
  for (GemmPoint &point : points) {
    std::vector<float> a(point.m * point.k, 0.5f), b(point.k * point.n, 0.25f),
        c(point.m * point.n);
    int64_t calls = callsFor(quick ? 2e9 : 2e10, point.flops());
    double seconds = timeTogether(job, calls, [&] {
      check(cpu::matmul(pool, TITANRT_F32, a.data(), b.data(), nullptr,
                        c.data(),
                        /*batch=*/1, point.m, point.n, point.k, false, false,
                        /*bShared=*/true),
            "matmul");
    });
    point.flopsPerSecond = point.flops() / seconds;
  }
}

/// Model FLOP/s of the runtime's causal attention, forward then backward
/// (from the forward's output and log-sum-exp), on 8 heads of 64 at seq
/// 2048 (a training length: shorter ones fit the caches better): the FLOPs
/// titan.attention and titan.attention_grad count (4 and 10 x heads x
/// seq^2 x head_dim, halved by the mask) over their time.
double measureAttentionRate(Job &job, ThreadPool &pool) {
  const int64_t heads = quick ? 4 : 8, seq = quick ? 256 : 2048, headDim = 64;
  const double scale = 1.0 / std::sqrt(double(headDim));
  int64_t elements = heads * seq * headDim, rows = heads * seq;
  auto values = [&](float phase) {
    std::vector<float> data(elements);
    for (int64_t i = 0; i < elements; ++i)
      data[i] = std::sin(0.37f * float(i) + phase);
    return data;
  };
  std::vector<float> q = values(0), k = values(1), v = values(2),
                     grad = values(3), out(elements), dq(elements),
                     dk(elements), dv(elements), lse(rows), workspace(rows);
  double flops =
      14.0 * double(heads) * double(seq) * double(seq) * double(headDim) / 2;
  double seconds = timeTogether(job, callsFor(quick ? 1e9 : 2e10, flops), [&] {
    check(cpu::attention(pool, TITANRT_F32, q.data(), k.data(), v.data(),
                         out.data(), lse.data(), /*batch=*/1, heads, heads, seq,
                         headDim, /*causal=*/true, scale),
          "attention");
    check(cpu::attentionGrad(pool, TITANRT_F32, q.data(), k.data(), v.data(),
                             out.data(), lse.data(), grad.data(), dq.data(),
                             dk.data(), dv.data(), workspace.data(), 1, heads,
                             heads, seq, headDim, true, scale),
          "attention_grad");
  });
  return flops / seconds;
}

/// Bytes per second of a triad over arrays of `elements` doubles.
double measureBandwidth(Job &job, ThreadPool &pool, int64_t elements) {
  std::vector<double> a(elements), b(elements, 1.0), c(elements, 2.0);
  double bytes = 3.0 * double(elements) * sizeof(double);
  double seconds = timeTogether(job, callsFor(quick ? 1e9 : 1e10, bytes), [&] {
    pool.parallelFor(elements, 1 << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        a[i] = b[i] + 3.0 * c[i];
    });
  });
  return bytes / seconds;
}

/// FLOP/s of float multiply-adds on arrays that stay in the L1 cache.
double measureVectorRate(Job &job, ThreadPool &pool) {
  constexpr int64_t kLanes = 256, kIterations = 20000;
  int threads = pool.getNumThreads();
  std::vector<std::vector<float>> data(threads, std::vector<float>(kLanes, 1));
  double seconds = timeTogether(job, quick ? 2 : 20, [&] {
    pool.parallelFor(threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        float *x = data[t].data();
        for (int64_t it = 0; it < kIterations; ++it)
          for (int64_t i = 0; i < kLanes; ++i)
            x[i] = x[i] * 0.999f + 0.001f;
      }
    });
  });
  return 2.0 * double(kLanes) * kIterations * threads / seconds;
}

/// Seconds of a parallel loop that does nothing: what every op pays.
double measureOpOverhead(Job &job, ThreadPool &pool) {
  constexpr int kLoops = 1000;
  double seconds = timeTogether(job, quick ? 1 : 10, [&] {
    for (int loop = 0; loop < kLoops; ++loop)
      pool.parallelFor(pool.getNumThreads(), 1, [](int64_t, int64_t) {});
  });
  return seconds / kLoops;
}

/// Alpha-beta of all_reduce over `world`: seconds per ring step and bytes
/// per second, fitted to the times of all_reduces of several sizes.
std::pair<double, double> measureAllReduce(Communicator &world) {
  int64_t n = world.getSize();
  std::vector<double> sentBytes, seconds;
  for (int64_t bytes = 1 << 10; bytes <= (quick ? 1 << 20 : 1 << 24);
       bytes *= 4) {
    std::vector<float> buffer(bytes / sizeof(float), 1.0f);
    // Every rank makes the same calls (a collective's count must match):
    // rounds of `calls` all_reduces, about 8 MB in all; each rank's best
    // round, and the slowest rank's is the collective's time.
    int64_t calls = std::clamp<int64_t>((int64_t(8) << 20) / bytes, 3, 200);
    std::vector<double> best = {INFINITY};
    for (int round = 0; round <= reps; ++round) {
      auto start = Clock::now();
      for (int64_t call = 0; call < calls; ++call)
        check(world.allReduce(TITANRT_F32, TITANRT_SUM, buffer.data(),
                              buffer.data(), int64_t(buffer.size())),
              "all_reduce");
      double seconds =
          std::chrono::duration<double>(Clock::now() - start).count();
      if (round > 0) // Round 0 warms up.
        best[0] = std::min(best[0], seconds / double(calls));
    }
    check(
        world.allReduce(TITANRT_F64, TITANRT_MAX, best.data(), best.data(), 1),
        "all_reduce");
    sentBytes.push_back(2.0 * double(n - 1) / double(n) * double(bytes));
    seconds.push_back(best[0]);
  }
  // Least squares of seconds = a + b * sentBytes.
  double count = double(seconds.size()), sumX = 0, sumY = 0, sumXX = 0,
         sumXY = 0;
  for (size_t i = 0; i < seconds.size(); ++i) {
    sumX += sentBytes[i];
    sumY += seconds[i];
    sumXX += sentBytes[i] * sentBytes[i];
    sumXY += sentBytes[i] * seconds[i];
  }
  double slope = (count * sumXY - sumX * sumY) / (count * sumXX - sumX * sumX);
  double intercept = (sumY - slope * sumX) / count;
  // Noise on a loaded machine can tilt the fit: then the largest message's
  // rate is the bandwidth and the smallest message's time the latency.
  if (!(slope > 0) || intercept < 0) {
    slope = seconds.back() / sentBytes.back();
    intercept = seconds.front();
  }
  return {intercept / double(2 * (n - 1)), 1.0 / slope};
}

/// The CPU's model name from /proc/cpuinfo, or "unknown CPU".
std::string cpuModelName() {
  auto buffer = llvm::MemoryBuffer::getFileAsStream("/proc/cpuinfo");
  if (buffer) {
    llvm::StringRef text = (*buffer)->getBuffer();
    size_t at = text.find("model name");
    if (at != llvm::StringRef::npos) {
      llvm::StringRef line = text.substr(at).split('\n').first;
      return line.split(':').second.trim().str();
    }
  }
  return "unknown CPU";
}

/// Today as YYYY-MM-DD.
std::string today() {
  std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof(text), "%Y-%m-%d", std::gmtime(&now));
  return text;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(calibrateOptions);
  cl::ParseCommandLineOptions(
      argc, argv,
      "titan-calibrate: measures this machine for the cost model\n\n"
      "  titan-run --nproc-per-node N titan-calibrate -- -o FILE.toml\n\n"
      "measures what each of N ranks gets (GEMMs, memory, Gloo) and writes "
      "a device file for [hardware] device = \"FILE.toml\"\n");
  Job job;
  check(readLaunchEnvironment(job.env), "launch environment");
  if (job.env.worldSize > 1) {
    MeshShape mesh{{"world"}, {job.env.worldSize}};
    std::vector<std::unique_ptr<Communicator>> communicators;
    check(connectCommunicators(job.env, mesh, {{0}}, std::chrono::seconds(60),
                               communicators),
          "connecting the ranks");
    job.world = std::move(communicators.front());
  }
  int threads = threadsOption;
  if (threads <= 0)
    threads =
        std::max<int>(1, std::thread::hardware_concurrency() /
                             std::max<int64_t>(1, job.env.localWorldSize));
  ThreadPool pool(threads);
  bool leader = job.env.rank == 0;
  auto progress = [&](llvm::StringRef what) {
    if (leader)
      llvm::errs() << "titan-calibrate: " << what << "\n";
  };

  progress("sgemm by shape");
  std::vector<GemmPoint> gemms = gemmShapes();
  measureGemms(job, pool, gemms);
  std::vector<double> rates;
  for (const GemmPoint &point : gemms)
    rates.push_back(point.flopsPerSecond);
  job.average(rates);
  for (auto [point, rate] : llvm::zip(gemms, rates))
    point.flopsPerSecond = rate;

  progress("attention, memory bandwidth, vector rate, op overhead");
  std::vector<double> figures = {
      measureAttentionRate(job, pool),
      measureBandwidth(job, pool, quick ? int64_t(1) << 21 : int64_t(1) << 24),
      measureVectorRate(job, pool), measureOpOverhead(job, pool)};
  job.average(figures);
  double attentionRate = figures[0], bandwidth = figures[1],
         vectorRate = figures[2], overhead = figures[3];

  double latency = 0, linkBandwidth = 0;
  if (job.world) {
    progress("Gloo all_reduce by size");
    std::tie(latency, linkBandwidth) = measureAllReduce(*job.world);
  }
  if (!leader)
    return 0;

  // The efficiency curve: by FLOPs, points of equal FLOPs merged (their
  // mean), relative to the fastest shape.
  double peak = 0;
  std::map<double, std::vector<double>> byFlops;
  for (const GemmPoint &point : gemms) {
    peak = std::max(peak, point.flopsPerSecond);
    byFlops[point.flops()].push_back(point.flopsPerSecond);
  }
  std::string flopsList, efficiencyList;
  for (const auto &[flops, pointRates] : byFlops) {
    double mean = 0;
    for (double rate : pointRates)
      mean += rate / double(pointRates.size());
    flopsList +=
        llvm::formatv("{0}{1:e2}", flopsList.empty() ? "" : ", ", flops);
    efficiencyList +=
        llvm::formatv("{0}{1:f3}", efficiencyList.empty() ? "" : ", ",
                      std::max(0.001, mean / peak));
  }
  double memoryGib = double(sysconf(_SC_PHYS_PAGES)) *
                     double(sysconf(_SC_PAGESIZE)) / double(1ull << 30) /
                     double(std::max<int64_t>(1, job.env.localWorldSize));

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "# " << cpuModelName() << ": one rank of " << job.env.worldSize
     << " on this machine, " << threads << " thread"
     << (threads == 1 ? "" : "s") << " each.\n"
     << "# Measured by titan-calibrate" << (quick ? " --quick" : "") << " on "
     << today() << ". float32 GEMMs: the runtime's OpenBLAS\n"
     << "# sgemm; the links: Gloo over TCP on this machine";
  if (!job.world)
    os << " (not measured: run\n# under titan-run --nproc-per-node N; the "
          "figures below are placeholders\n# of 1 GB/s and 50 us)";
  os << ".\n\n"
     << "[device]\n"
     << "name = \"" << deviceName << "\"\n"
     << "description = \"" << cpuModelName() << ", " << job.env.worldSize
     << " rank" << (job.env.worldSize == 1 ? "" : "s") << " per machine\"\n"
     << llvm::formatv("memory_gib = {0:f1}\n", memoryGib)
     << "ranks_per_node = 0\n"
     << "threads_per_rank = " << threads << "\n"
     << llvm::formatv("hardware_threads_per_rank = {0:f3}\n",
                      getHardwareThreadsOfRank(threads, job.env.localWorldSize))
     << llvm::formatv("op_overhead_us = {0:f2}\n\n", overhead * 1e6)
     << "[peak_tflops]\n"
     << llvm::formatv("float32 = {0:f4}\n", peak * 1e-12)
     << llvm::formatv("vector = {0:f4}\n\n", vectorRate * 1e-12) << "[memory]\n"
     << llvm::formatv("bandwidth_gbps = {0:f2}\n", bandwidth * 1e-9)
     << "efficiency = 1.0\n\n"
     << "[gemm]\n"
     << "flops = [" << flopsList << "]\n"
     << "efficiency = [" << efficiencyList << "]\n"
     << llvm::formatv("attention_efficiency = {0:f3}\n\n",
                      std::clamp(attentionRate / peak, 0.001, 1.0));
  for (const char *link : {"intra_node", "inter_node"})
    os << "[" << link << "]\n"
       << llvm::formatv("bandwidth_gbps = {0:f3}\n",
                        job.world ? linkBandwidth * 1e-9 : 1.0)
       << llvm::formatv("latency_us = {0:f1}\n\n",
                        job.world ? latency * 1e6 : 50.0);

  // What we write must read back.
  llvm::Expected<mlir::titan::DeviceDescription> device =
      mlir::titan::parseDeviceFile(text, outputFile);
  if (!device) {
    llvm::errs() << "titan-calibrate: error: the measured device is invalid: "
                 << llvm::toString(device.takeError()) << "\n";
    return 1;
  }
  std::error_code error;
  llvm::raw_fd_ostream out(outputFile, error);
  if (error) {
    llvm::errs() << "titan-calibrate: error: cannot write '" << outputFile
                 << "': " << error.message() << "\n";
    return 1;
  }
  out << text;
  if (outputFile != "-")
    llvm::errs() << llvm::formatv(
        "titan-calibrate: wrote {0}: sgemm peak {1:f1} GFLOP/s, memory "
        "{2:f1} GB/s, all_reduce {3}\n",
        outputFile, peak * 1e-9, bandwidth * 1e-9,
        job.world ? llvm::formatv("{0:f2} GB/s, {1:f1} us per step",
                                  linkBandwidth * 1e-9, latency * 1e6)
                        .str()
                  : std::string("not measured (one rank)"));
  return 0;
}
