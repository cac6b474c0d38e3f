//===- Metrics.h - what a training job reports ------------------*- C++ -*-===//
//
// Rank 0's log of a run (docs/training-jobs.md): every `[metrics] log_freq`
// steps one line with the loss, the gradient norm, the learning rate, the step
// time, tokens/s per device, TFLOP/s and MFU by torchtitan's count, and memory;
// one JSON line per step in `dump_folder/metrics.jsonl` (and --metrics FILE);
// and, at the end, the loss and throughput over the run drawn as
// `dump_folder/metrics.svg`. On a terminal a progress line (step of steps,
// the time left) is redrawn between the log lines.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_METRICS_H
#define TITAN_RUNTIME_CORE_METRICS_H

#include "core/Status.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace titan::rt {

struct RunOptions;

/// One step's numbers.
struct StepMetrics {
  int64_t step = 0;
  double loss = 0;
  /// The gradients' norm before clipping (NaN without clipping).
  double gradNorm = 0;
  double learningRate = 0;
  double seconds = 0;
  double tokensPerSecondPerDevice = 0;
  double tflopsPerDevice = 0;
  /// Percent of the device's peak; 0 when unknown.
  double mfu = 0;
  int64_t epoch = 0;
  /// The validation loss after this step, NaN where none ran.
  double validationLoss = NAN;
};

/// The log of one rank's run; only `isLogger`'s (rank 0's) writes.
class MetricsLog {
public:
  /// `lastStep`: the step the run ends after (for the progress line).
  MetricsLog(const RunOptions &options, bool isLogger, int64_t worldSize,
             int64_t tokensPerStep, int64_t arenaBytes, int64_t lastStep);

  /// Opens the JSONL files.
  Status open();
  /// Records a step; prints its line every log_freq steps and at the last,
  /// and on a terminal a progress line in between. `deviceBytes`: the
  /// device's memory in use (StepMemory::getDeviceBytesInUse), if any.
  void step(int64_t step, double loss, double gradNorm, double learningRate,
            double seconds, int64_t epoch, bool last,
            std::optional<int64_t> deviceBytes = std::nullopt);
  /// Records the validation after step `step`: its mean `loss` over
  /// `batches` batches of `tokens` tokens in all, computed in `seconds`;
  /// printed, and a JSON line with `validation_loss` instead of `loss`.
  void validation(int64_t step, double loss, int64_t batches, int64_t tokens,
                  double seconds);
  /// Draws the run into `dump_folder/metrics.svg`: the losses (with the
  /// validation losses as points) and tokens/s over the steps.
  Status finish();

  /// The numbers of a step of `seconds` (exposed for tests).
  static StepMetrics compute(int64_t tokensPerStep, int64_t worldSize,
                             double flopsPerToken, double peakFlopsPerSecond,
                             double seconds);

private:
  const RunOptions &options;
  bool isLogger;
  int64_t worldSize;
  int64_t tokensPerStep;
  int64_t arenaBytes;
  int64_t lastStep;
  /// Whether stdout is a terminal (a progress line is redrawn there).
  bool terminal;
  std::ofstream jsonl;
  std::ofstream extraJsonl;
  /// Every step so far (reserved for the run: a step does not allocate).
  std::vector<StepMetrics> history;
};

/// An SVG picture of `history`: the loss and tokens/s per device over the
/// steps, as two panels with axes.
std::string drawMetrics(const std::vector<StepMetrics> &history,
                        const std::string &title);

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_METRICS_H
