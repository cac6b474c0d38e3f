//===- Metrics.cpp - what a training job reports --------------------------===//

#include "core/Metrics.h"

#include "core/Trainer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <sys/resource.h>
#include <unistd.h>

using namespace titan::rt;

namespace {

/// "12.3 MiB".
std::string formatMiB(int64_t bytes) {
  return llvm::formatv("{0:F1} MiB", bytes / double(1 << 20)).str();
}

/// The process's peak resident memory.
int64_t peakRss() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return int64_t(usage.ru_maxrss) * 1024;
}

/// `path` under the dump folder.
std::string dumpPath(const RunOptions &options, const char *name) {
  llvm::SmallString<256> path(options.dumpFolder);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// A JSON number (JSON has no NaN or infinity: null).
std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  return llvm::formatv("{0:e9}", value).str();
}

} // namespace

/// Whether the launcher asked for a progress line although stdout is not a
/// terminal (TITAN_PROGRESS=1: titan-run relays it to its own terminal).
static bool isProgressRequested() {
  const char *value = std::getenv("TITAN_PROGRESS");
  return value && std::string_view(value) == "1";
}

MetricsLog::MetricsLog(const RunOptions &options, bool isLogger,
                       int64_t worldSize, int64_t tokensPerStep,
                       int64_t arenaBytes, int64_t lastStep)
    : options(options), isLogger(isLogger), worldSize(worldSize),
      tokensPerStep(tokensPerStep), arenaBytes(arenaBytes), lastStep(lastStep),
      terminal(isatty(STDOUT_FILENO) || isProgressRequested()) {}

Status MetricsLog::open() {
  if (!isLogger)
    return Status::success();
  history.reserve(size_t(std::max<int64_t>(
      options.runSteps ? *options.runSteps : options.steps, 0)));
  if (!options.dumpFolder.empty()) {
    if (std::error_code error =
            llvm::sys::fs::create_directories(options.dumpFolder))
      return Status::io("cannot create [job] dump_folder '" +
                        options.dumpFolder + "': " + error.message());
    std::string path = dumpPath(options, "metrics.jsonl");
    jsonl.open(path, std::ios::app);
    if (!jsonl)
      return Status::io("cannot write '" + path + "'");
  }
  if (!options.metricsFile.empty()) {
    extraJsonl.open(options.metricsFile, std::ios::app);
    if (!extraJsonl)
      return Status::io("cannot write --metrics '" + options.metricsFile + "'");
  }
  return Status::success();
}

StepMetrics MetricsLog::compute(int64_t tokensPerStep, int64_t worldSize,
                                double flopsPerToken, double peakFlopsPerSecond,
                                double seconds) {
  // torchtitan's count: tokens per second per device, times the model's
  // FLOPs per token, over the device's peak.
  StepMetrics metrics;
  metrics.seconds = seconds;
  metrics.tokensPerSecondPerDevice =
      double(tokensPerStep) / double(std::max<int64_t>(worldSize, 1)) / seconds;
  metrics.tflopsPerDevice =
      flopsPerToken * metrics.tokensPerSecondPerDevice / 1e12;
  if (peakFlopsPerSecond > 0)
    metrics.mfu = 100.0 * flopsPerToken * metrics.tokensPerSecondPerDevice /
                  peakFlopsPerSecond;
  return metrics;
}

void MetricsLog::step(int64_t step, double loss, double gradNorm,
                      double learningRate, double seconds, int64_t epoch,
                      bool last, std::optional<int64_t> deviceBytes) {
  if (!isLogger)
    return;
  StepMetrics metrics = compute(tokensPerStep, worldSize, options.flopsPerToken,
                                options.peakFlopsPerSecond, seconds);
  metrics.step = step;
  metrics.loss = loss;
  metrics.gradNorm = gradNorm;
  metrics.learningRate = learningRate;
  metrics.epoch = epoch;
  if (history.size() < history.capacity())
    history.push_back(metrics);
  int64_t rss = peakRss();
  bool logged = step % std::max<int64_t>(options.logFreq, 1) == 0 || last;
  if (terminal && !logged) {
    // Redrawn in place; the next log line clears it.
    std::printf("\r\033[Kstep %lld/%lld | loss %.4f | %.0f tokens/s/device | "
                "%.0f s left",
                static_cast<long long>(step), static_cast<long long>(lastStep),
                loss, metrics.tokensPerSecondPerDevice,
                seconds * double(lastStep - step));
    std::fflush(stdout);
  }
  if (logged) {
    if (terminal)
      std::printf("\r\033[K");
    std::string flops;
    if (options.flopsPerToken > 0)
      flops = llvm::formatv(" | {0:G3} TFLOP/s", metrics.tflopsPerDevice);
    if (options.peakFlopsPerSecond > 0)
      flops += llvm::formatv(" | MFU {0:F2}%", metrics.mfu).str();
    std::string norm;
    if (!std::isnan(gradNorm))
      norm = llvm::formatv(" | grad_norm {0:F4}", gradNorm).str();
    std::string device;
    if (deviceBytes)
      device = ", " + formatMiB(*deviceBytes) + " device in use";
    std::printf("step %lld | loss %.6f%s | lr %.4g | %.1f ms | %.0f "
                "tokens/s/device%s | memory %s arena, %s peak RSS%s\n",
                static_cast<long long>(step), loss, norm.c_str(), learningRate,
                seconds * 1e3, metrics.tokensPerSecondPerDevice, flops.c_str(),
                formatMiB(arenaBytes).c_str(), formatMiB(rss).c_str(),
                device.c_str());
    std::fflush(stdout);
  }
  std::string line =
      llvm::formatv(
          "{{\"step\": {0}, \"loss\": {1}, \"lr\": {2}, "
          "\"seconds\": {3}, \"tokens_per_second_per_device\": {4}, "
          "\"tflops_per_device\": {5}, \"mfu_percent\": {6}, "
          "\"epoch\": {7}, \"arena_bytes\": {8}, "
          "\"peak_rss_bytes\": {9}, \"grad_norm\": {10}{11}}\n",
          step, jsonNumber(loss), jsonNumber(learningRate), jsonNumber(seconds),
          jsonNumber(metrics.tokensPerSecondPerDevice),
          jsonNumber(metrics.tflopsPerDevice), jsonNumber(metrics.mfu), epoch,
          arenaBytes, rss, jsonNumber(gradNorm),
          deviceBytes
              ? llvm::formatv(", \"device_memory_bytes\": {0}", *deviceBytes)
                    .str()
              : std::string())
          .str();
  for (std::ofstream *file : {&jsonl, &extraJsonl})
    if (file->is_open())
      *file << line << std::flush;
}

void MetricsLog::validation(int64_t step, double loss, int64_t batches,
                            int64_t tokens, double seconds) {
  if (!isLogger)
    return;
  if (!history.empty() && history.back().step == step)
    history.back().validationLoss = loss;
  if (terminal)
    std::printf("\r\033[K");
  std::printf("validate step %lld | loss %.6f | %lld batches, %lld tokens | "
              "%.1f ms\n",
              static_cast<long long>(step), loss,
              static_cast<long long>(batches), static_cast<long long>(tokens),
              seconds * 1e3);
  std::fflush(stdout);
  std::string line =
      llvm::formatv("{{\"step\": {0}, \"validation_loss\": {1}, "
                    "\"validation_batches\": {2}, \"validation_tokens\": {3}, "
                    "\"validation_seconds\": {4}}\n",
                    step, jsonNumber(loss), batches, tokens,
                    jsonNumber(seconds))
          .str();
  for (std::ofstream *file : {&jsonl, &extraJsonl})
    if (file->is_open())
      *file << line << std::flush;
}

Status MetricsLog::finish() {
  if (!isLogger || options.dumpFolder.empty() || history.empty())
    return Status::success();
  std::string path = dumpPath(options, "metrics.svg");
  std::ofstream svg(path);
  svg << drawMetrics(history, "loss and tokens/s per device");
  if (!svg)
    return Status::io("cannot write '" + path + "'");
  return Status::success();
}

std::string titan::rt::drawMetrics(const std::vector<StepMetrics> &history,
                                   const std::string &title) {
  constexpr double kWidth = 720, kPanel = 220, kLeft = 70, kRight = 20,
                   kTop = 40, kGap = 50;
  double height = kTop + 2 * kPanel + kGap + 40;
  std::string svg;
  llvm::raw_string_ostream os(svg);
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"12\">\n",
                      kWidth, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"22\" font-size=\"15\">{1}</text>\n",
                      kLeft, title);
  int64_t firstStep = history.front().step, lastStep = history.back().step;
  double stepSpan = std::max<double>(1, double(lastStep - firstStep));
  // `pointOf`, when given, adds a point to a step (the validation loss).
  auto panel = [&](double top, const char *label, auto valueOf,
                   const char *color, auto pointOf) {
    double lo = INFINITY, hi = -INFINITY;
    for (const StepMetrics &m : history) {
      for (double v : {valueOf(m), pointOf(m)}) {
        if (std::isfinite(v)) {
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
      }
    }
    if (!std::isfinite(lo)) {
      lo = 0;
      hi = 1;
    }
    if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
      lo -= 0.5;
      hi += 0.5;
    }
    double plotWidth = kWidth - kLeft - kRight;
    auto x = [&](int64_t step) {
      return kLeft + plotWidth * double(step - firstStep) / stepSpan;
    };
    auto y = [&](double v) { return top + kPanel * (hi - v) / (hi - lo); };
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                        "height=\"{3}\" fill=\"none\" stroke=\"#999\"/>\n",
                        kLeft, top, plotWidth, kPanel);
    for (int tick = 0; tick <= 4; ++tick) {
      double v = lo + (hi - lo) * tick / 4.0;
      os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">"
                          "{2}</text>\n",
                          kLeft - 6, y(v) + 4, llvm::formatv("{0:G4}", v));
    }
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">{2}</text>\n", kLeft + 6,
                        top + 16, label);
    os << "<polyline fill=\"none\" stroke=\"" << color
       << "\" stroke-width=\"1.5\" points=\"";
    for (const StepMetrics &m : history)
      if (std::isfinite(valueOf(m)))
        os << llvm::formatv("{0:F1},{1:F1} ", x(m.step), y(valueOf(m)));
    os << "\"/>\n";
    bool points = false;
    for (const StepMetrics &m : history) {
      if (!std::isfinite(pointOf(m)))
        continue;
      points = true;
      os << llvm::formatv("<circle cx=\"{0:F1}\" cy=\"{1:F1}\" r=\"3\" "
                          "fill=\"#ff7f0e\"/>\n",
                          x(m.step), y(pointOf(m)));
    }
    if (points)
      os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#ff7f0e\">"
                          "&#x25CF; validation loss</text>\n",
                          kLeft + 6, top + 32);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">step {2}</text>\n", kLeft,
                        top + kPanel + 16, firstStep);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">step "
                        "{2}</text>\n",
                        kWidth - kRight, top + kPanel + 16, lastStep);
  };
  panel(
      kTop, "loss", [](const StepMetrics &m) { return m.loss; }, "#1f77b4",
      [](const StepMetrics &m) { return m.validationLoss; });
  panel(
      kTop + kPanel + kGap, "tokens/s per device",
      [](const StepMetrics &m) { return m.tokensPerSecondPerDevice; },
      "#d62728", [](const StepMetrics &) { return double(NAN); });
  os << "</svg>\n";
  return svg;
}
