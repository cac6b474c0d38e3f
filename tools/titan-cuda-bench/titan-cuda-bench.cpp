//===- titan-cuda-bench.cpp - speed of the CUDA backend on a GPU ----------===//
//
// Times titan's cuBLASLt bf16 GEMMs and CUDA kernels (runtime/cuda) at the
// shapes of a Llama 3 ~1B proxy (dim 2048, 16 heads of 128, 8 KV heads,
// FFN 8192, vocabulary 128,256; 16 blocks for the optimizer) for each
// batch x sequence of --shapes, and the fused AdamW over the model's
// parameters once. Each operation is called --warmup times, then timed
// --iters times with CUDA events (the L2 cache flushed before each call);
// one line per operation gives the median time, the achieved TFLOP/s
// (GEMMs, attention) or GB/s (the others: every input read and every
// output written once) and its share of the H200's peak (989 TFLOP/s dense
// bf16, 4.8 TB/s HBM). --json writes it all for
// tools/bench/gpu_torch_baseline.py, which times PyTorch on the same
// shapes (tools/bench/gpu.sh runs both; docs/cuda-backend.md).
//
//   titan-cuda-bench [--device N] [--shapes 1x2048,4x4096] [--warmup N]
//       [--iters N] [--only gemm,elementwise,attention,loss,adamw]
//       [--no-flush-l2] [--json FILE]
//
// Exits 0 when everything ran, 1 when an operation failed (FAILED lines),
// 2 on bad arguments or without a usable GPU.
//
//===----------------------------------------------------------------------===//

#include "BenchHarness.h"
#include "BenchOps.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::bench;

namespace {

constexpr const char *kUsage =
    "usage: titan-cuda-bench [--device N] [--shapes BxS,...] [--warmup N] "
    "[--iters N]\n"
    "           [--only gemm,elementwise,attention,loss,adamw] "
    "[--no-flush-l2] [--json FILE]\n";

const std::set<std::string> kFamilies = {"gemm", "elementwise", "attention",
                                         "loss", "adamw"};

std::vector<std::string> split(const std::string &text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty())
      parts.push_back(part);
  return parts;
}

/// Parses "4x4096" (batch x sequence); false if malformed.
bool parseShape(const std::string &text, BatchShape &shape) {
  long long batch = 0, seq = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%lldx%lld%c", &batch, &seq, &rest) != 2 ||
      batch <= 0 || seq <= 0)
    return false;
  shape.batch = batch;
  shape.seq = seq;
  return true;
}

/// A positive integer argument; false if malformed.
bool parseCount(const char *text, int &value) {
  char *end = nullptr;
  long parsed = std::strtol(text, &end, 10);
  if (!*text || *end || parsed < 0 || parsed > 100000)
    return false;
  value = int(parsed);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  int device = 0;
  TimingOptions timing;
  std::vector<BatchShape> shapes;
  std::set<std::string> only;
  std::string jsonPath;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool hasValue = i + 1 < argc;
    bool ok = true;
    if (arg == "--device" && hasValue) {
      ok = parseCount(argv[++i], device);
    } else if (arg == "--warmup" && hasValue) {
      ok = parseCount(argv[++i], timing.warmup);
    } else if (arg == "--iters" && hasValue) {
      ok = parseCount(argv[++i], timing.iterations) && timing.iterations > 0;
    } else if (arg == "--shapes" && hasValue) {
      for (const std::string &text : split(argv[++i])) {
        BatchShape shape;
        if (!parseShape(text, shape)) {
          std::fprintf(stderr,
                       "titan-cuda-bench: error: bad shape '%s' (expected "
                       "BATCHxSEQ, e.g. 4x4096)\n",
                       text.c_str());
          return 2;
        }
        shapes.push_back(shape);
      }
    } else if (arg == "--only" && hasValue) {
      for (const std::string &family : split(argv[++i])) {
        if (!kFamilies.count(family)) {
          std::fprintf(stderr,
                       "titan-cuda-bench: error: unknown family '%s'\n%s",
                       family.c_str(), kUsage);
          return 2;
        }
        only.insert(family);
      }
    } else if (arg == "--no-flush-l2") {
      timing.flushL2 = false;
    } else if (arg == "--json" && hasValue) {
      jsonPath = argv[++i];
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "titan-cuda-bench: error: bad argument '%s'\n%s",
                   arg.c_str(), kUsage);
      return 2;
    }
  }
  if (shapes.empty())
    shapes = {{1, 2048}, {1, 4096}, {4, 2048}, {4, 4096}};
  auto runs = [&](const char *family) {
    return only.empty() || only.count(family);
  };

  std::unique_ptr<Harness> harness;
  if (Status status = Harness::create(harness, device, timing); !status.ok()) {
    std::fprintf(stderr,
                 "titan-cuda-bench: error: no usable GPU: %s\n"
                 "titan-cuda-bench needs an NVIDIA GPU (sm_90: H100, H200); "
                 "nothing was measured\n",
                 status.getMessage().c_str());
    return 2;
  }
  ModelShape model;
  std::printf("device %d: %s\n", device,
              harness->getDeviceDescription().c_str());
  std::printf("model: dim %lld, %lld heads x %lld (%lld KV heads), ffn %lld, "
              "vocab %lld, %lld layers; bf16 activations and weights\n",
              (long long)model.dim, (long long)model.heads,
              (long long)model.headDim, (long long)model.kvHeads,
              (long long)model.ffn, (long long)model.vocab,
              (long long)model.layers);
  std::printf("timing: %d warm-up calls, median of %d timed calls (CUDA "
              "events)%s; peaks: %.0f TFLOP/s bf16, %.0f GB/s HBM\n\n",
              timing.warmup, timing.iterations,
              timing.flushL2 ? ", L2 flushed before each" : "", kPeakBf16Tflops,
              kPeakHbmGBps);
  // The JSON is rewritten after each shape: a run stopped by a time limit
  // keeps what it measured.
  std::string shapeList;
  for (const BatchShape &shape : shapes)
    shapeList += (shapeList.empty() ? "\"" : ", \"") + shape.getName() + "\"";
  char options[512];
  std::snprintf(options, sizeof(options),
                "{\"shapes\": [%s], \"warmup\": %d, \"iterations\": %d, "
                "\"flush_l2\": %s, \"model\": {\"dim\": %lld, \"heads\": "
                "%lld, \"kv_heads\": %lld, \"head_dim\": %lld, \"ffn\": "
                "%lld, \"vocab\": %lld, \"layers\": %lld}}",
                shapeList.c_str(), timing.warmup, timing.iterations,
                timing.flushL2 ? "true" : "false", (long long)model.dim,
                (long long)model.heads, (long long)model.kvHeads,
                (long long)model.headDim, (long long)model.ffn,
                (long long)model.vocab, (long long)model.layers);
  auto writeJson = [&] {
    if (jsonPath.empty())
      return true;
    std::ofstream file(jsonPath, std::ios::trunc);
    file << harness->toJson(options);
    file.close();
    if (!file)
      std::fprintf(stderr, "titan-cuda-bench: error: cannot write '%s'\n",
                   jsonPath.c_str());
    return bool(file);
  };

  printTableHeader();
  bool written = true;
  for (const BatchShape &shape : shapes) {
    if (runs("gemm"))
      benchGemms(*harness, model, shape);
    if (runs("elementwise"))
      benchElementwise(*harness, model, shape);
    if (runs("attention"))
      benchAttention(*harness, model, shape);
    if (runs("loss"))
      benchLossAndEmbedding(*harness, model, shape);
    written = writeJson();
  }
  if (runs("adamw"))
    benchAdamW(*harness, model);
  written = writeJson();

  int failures = harness->getNumFailures();
  std::printf("\n%s\n", failures ? "some operations FAILED (see above)"
                                 : "all operations ran");
  if (!jsonPath.empty() && written)
    std::printf("wrote %s\n", jsonPath.c_str());
  if (!written)
    return 1;
  return failures ? 1 : 0;
}
