//===- titan-tune.cpp - choose an activation-checkpointing policy ---------===//
//
//   titan-tune ac MODEL.pt --config CFG.toml [--set k=v]... [--world-size N]
//       [--budget-gib X] [--svg FILE.svg] [--work DIR]
//       [--measure --data DIR [--steps N]]
//
// Compiles the training step under each activation-checkpointing policy
// torchtitan offers (none; selective "op": save attention, max reductions
// and every other matmul; selective every N-th block; full), and when FSDP
// shards the parameters each of them also with fsdp_reshard_after_forward
// = "always" (the backward gathers the parameters again), each with
// titan-compile --summary-json (--emit=memory-plan: no native code unless
// --measure), and prints for each the memory a rank needs (the exact
// memory plan) and the predicted step time, recomputation, tokens/s and MFU
// (docs/cost-model.md). It picks the fastest policy whose
// memory fits the budget (--budget-gib, default: the memory of the
// config's [hardware] device) and draws the policies as points of memory
// against step time, with the Pareto front (--svg). With --measure it runs
// the policies that fit on this machine's ranks (titan-run, the config's
// world size) and picks the fastest measured one. titan-compile and
// titan-run are the ones beside titan-tune, or those the environment
// variables TITAN_COMPILE and TITAN_RUN name.
//
//===----------------------------------------------------------------------===//

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cl = llvm::cl;
using llvm::StringRef;

static cl::OptionCategory tuneOptions("titan-tune options");
static cl::SubCommand
    acCommand("ac",
              "Choose an activation-checkpointing policy for a memory budget");

static cl::opt<std::string> modelFile(cl::Positional, cl::Required,
                                      cl::desc("<model.pt>"),
                                      cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<std::string> configFile("config", cl::Required,
                                       cl::desc("Training config"),
                                       cl::value_desc("file.toml"),
                                       cl::sub(acCommand),
                                       cl::cat(tuneOptions));
static cl::list<std::string>
    overrides("set",
              cl::desc("Override a config value, as titan-compile --set"),
              cl::value_desc("section.key=value"), cl::sub(acCommand),
              cl::cat(tuneOptions));
static cl::opt<int>
    worldSize("world-size",
              cl::desc("Ranks to compile for (default: the config's)"),
              cl::init(0), cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<double> budgetGib(
    "budget-gib",
    cl::desc("Memory per rank the policy must fit in, GiB (default: the "
             "memory of the config's [hardware] device)"),
    cl::init(0), cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<std::string> svgFile("svg",
                                    cl::desc("Draw memory against step time "
                                             "of every policy into this file"),
                                    cl::value_desc("file.svg"),
                                    cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<std::string>
    workDir("work",
            cl::desc("Folder for each policy's planned program (with "
                     "--measure its executable) and summary "
                     "(default: a new temporary folder, removed at the end)"),
            cl::value_desc("DIR"), cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<std::string>
    backend("backend",
            cl::desc("Where the job computes, as titan-compile --backend: cpu "
                     "(default) or cuda (its memory plan holds the CUDA "
                     "runtime's workspaces)"),
            cl::init("cpu"), cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<bool>
    measure("measure",
            cl::desc("Run the policies that fit on this machine's ranks "
                     "(titan-run) and choose the fastest measured"),
            cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<std::string>
    dataDir("data", cl::desc("With --measure: the batches (.npy) to train on"),
            cl::value_desc("DIR"), cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<unsigned>
    jobs("jobs",
         cl::desc("Policies compiled at once (default: the machine's "
                  "hardware threads; each titan-compile holds the model's "
                  "program in memory)"),
         cl::init(0), cl::sub(acCommand), cl::cat(tuneOptions));
static cl::opt<int> measureSteps("steps",
                                 cl::desc("With --measure: steps per policy "
                                          "(the first is not timed)"),
                                 cl::init(4), cl::sub(acCommand),
                                 cl::cat(tuneOptions));

namespace {

/// One policy and what titan-compile said of it.
struct Candidate {
  /// [activation_checkpoint] mode and selective_ac_option, and whether
  /// FSDP reshards after the forward.
  std::string mode, option;
  bool reshard = false;
  /// Mode "auto": its memory_budget_gib.
  std::optional<double> budgetGib;
  /// What the table calls it, and a file-name form.
  std::string label, slug;
  /// From the summary.
  double totalBytes = 0, stepSeconds = 0, recomputeSeconds = 0,
         tokensPerSecond = 0, mfu = 0;
  int64_t attentionLayers = 0, fsdpDegree = 1;
  /// The [hardware] device's memory.
  double deviceMemoryBytes = 0;
  /// With --measure: the median step time of the runtime.
  std::optional<double> measuredSeconds;
  bool fits = false;
};

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "titan-tune") << message << "\n";
  return 1;
}

/// The path of `tool`: the environment variable of its name (TITAN_COMPILE
/// for titan-compile), else the tool next to this executable.
std::string toolPath(StringRef tool, const char *argv0) {
  std::string variable = tool.upper();
  llvm::replace(variable, '-', '_');
  if (std::optional<std::string> chosen = llvm::sys::Process::GetEnv(variable))
    return *chosen;
  std::string self = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&toolPath));
  llvm::SmallString<256> path = llvm::sys::path::parent_path(self);
  llvm::sys::path::append(path, tool);
  return std::string(path);
}

/// Serializes what concurrent compilations print.
std::mutex outputMutex;

/// Runs `arguments` (the first is the program) with stdout and stderr into
/// `log`; returns false and prints the log's end when it fails.
bool runLogged(const std::vector<std::string> &arguments, StringRef log) {
  std::vector<StringRef> refs(arguments.begin(), arguments.end());
  std::optional<StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(arguments.front(), refs, std::nullopt,
                                         redirects, 0, 0, &message);
  if (status == 0)
    return true;
  std::lock_guard<std::mutex> lock(outputMutex);
  llvm::errs() << "titan-tune: " << llvm::join(arguments, " ") << " failed"
               << (message.empty() ? "" : ": " + message) << "; its output ("
               << log << ") ends with:\n";
  if (auto buffer = llvm::MemoryBuffer::getFile(log)) {
    StringRef text = (*buffer)->getBuffer();
    llvm::errs() << text.substr(text.size() > 2000 ? text.size() - 2000 : 0);
  }
  return false;
}

/// Reads `key.sub` numbers from titan-compile's summary.
std::optional<double> number(const llvm::json::Object &summary,
                             StringRef section, StringRef key) {
  const llvm::json::Object *object = summary.getObject(section);
  return object ? object->getNumber(key) : std::nullopt;
}

/// The median of the step times in a metrics file after the first step.
std::optional<double> medianStepSeconds(StringRef metrics) {
  auto buffer = llvm::MemoryBuffer::getFile(metrics);
  if (!buffer)
    return std::nullopt;
  std::vector<double> seconds;
  llvm::SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, false);
  for (StringRef line : llvm::drop_begin(lines)) {
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(line);
    if (!value) {
      llvm::consumeError(value.takeError());
      continue;
    }
    if (const llvm::json::Object *object = value->getAsObject())
      if (std::optional<double> s = object->getNumber("seconds"))
        seconds.push_back(*s);
  }
  if (seconds.empty())
    return std::nullopt;
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

/// "49.54 MiB", "12.30 GiB".
std::string gib(double bytes) {
  if (bytes >= double(1ull << 30))
    return llvm::formatv("{0:F2} GiB", bytes / double(1ull << 30)).str();
  return llvm::formatv("{0:F2} MiB", bytes / double(1ull << 20)).str();
}

std::string milliseconds(double seconds) {
  return llvm::formatv("{0:F3} ms", seconds * 1e3).str();
}

/// Draws the candidates as points of peak memory against step time, with
/// the Pareto front and the budget.
void drawPareto(const std::vector<Candidate> &candidates, double budgetBytes,
                llvm::raw_ostream &os) {
  constexpr double kLeft = 90, kTop = 40, kWidth = 560, kHeight = 340;
  // Both axes span the points and the budget with a margin.
  double minSeconds = INFINITY, maxSeconds = 0;
  double minBytes = budgetBytes, maxBytes = budgetBytes;
  for (const Candidate &c : candidates) {
    minSeconds = std::min(minSeconds, c.stepSeconds);
    maxSeconds = std::max(maxSeconds, c.stepSeconds);
    minBytes = std::min(minBytes, c.totalBytes);
    maxBytes = std::max(maxBytes, c.totalBytes);
  }
  double secondsMargin =
      std::max(0.1 * (maxSeconds - minSeconds), 0.02 * maxSeconds);
  double bytesMargin = std::max(0.1 * (maxBytes - minBytes), 0.02 * maxBytes);
  minSeconds = std::max(0.0, minSeconds - secondsMargin);
  maxSeconds += secondsMargin;
  minBytes = std::max(0.0, minBytes - bytesMargin);
  maxBytes += bytesMargin;
  auto x = [&](double seconds) {
    return kLeft + kWidth * (seconds - minSeconds) / (maxSeconds - minSeconds);
  };
  auto y = [&](double bytes) {
    return kTop + kHeight * (1 - (bytes - minBytes) / (maxBytes - minBytes));
  };
  auto secondsAt = [&](int tick) {
    return minSeconds + (maxSeconds - minSeconds) * tick / 4;
  };
  auto bytesAt = [&](int tick) {
    return minBytes + (maxBytes - minBytes) * tick / 4;
  };
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" "
        "height=\"440\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"22\" font-size=\"14\">Activation "
                      "checkpointing: memory per rank against predicted step "
                      "time</text>\n",
                      kLeft);
  os << llvm::formatv("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" "
                      "stroke=\"black\"/>\n<line x1=\"{0}\" x2=\"{3}\" "
                      "y1=\"{2}\" y2=\"{2}\" stroke=\"black\"/>\n",
                      kLeft, kTop, kTop + kHeight, kLeft + kWidth);
  for (int tick = 0; tick <= 4; ++tick) {
    os << llvm::formatv("<text x=\"{0}\" y=\"{1:F1}\" text-anchor=\"end\">"
                        "{2}</text>\n",
                        kLeft - 6, y(bytesAt(tick)) + 4, gib(bytesAt(tick)));
    os << llvm::formatv("<text x=\"{0:F1}\" y=\"{1}\" text-anchor=\"middle\">"
                        "{2}</text>\n",
                        x(secondsAt(tick)), kTop + kHeight + 18,
                        llvm::formatv("{0:F1} ms", secondsAt(tick) * 1e3));
  }
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
                      "predicted step time</text>\n",
                      kLeft + kWidth / 2, kTop + kHeight + 36);
  os << llvm::formatv("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:F1}\" "
                      "y2=\"{2:F1}\" stroke=\"#e15759\" "
                      "stroke-dasharray=\"6,3\"/>\n<text x=\"{1}\" "
                      "y=\"{3:F1}\" text-anchor=\"end\" fill=\"#e15759\">"
                      "budget {4}</text>\n",
                      kLeft, kLeft + kWidth, y(budgetBytes), y(budgetBytes) - 4,
                      gib(budgetBytes));
  // The Pareto front: no other policy is both faster and smaller.
  std::vector<const Candidate *> front;
  for (const Candidate &c : candidates)
    if (llvm::none_of(candidates, [&](const Candidate &o) {
          return &o != &c && o.stepSeconds <= c.stepSeconds &&
                 o.totalBytes <= c.totalBytes &&
                 (o.stepSeconds < c.stepSeconds || o.totalBytes < c.totalBytes);
        }))
      front.push_back(&c);
  llvm::sort(front, [](const Candidate *a, const Candidate *b) {
    return a->stepSeconds < b->stepSeconds;
  });
  std::string points;
  for (const Candidate *c : front)
    points +=
        llvm::formatv("{0:F1},{1:F1} ", x(c->stepSeconds), y(c->totalBytes))
            .str();
  os << "<polyline points=\"" << points
     << "\" fill=\"none\" stroke=\"#4e79a7\"/>\n";
  // Policies that compile to the same memory and time share one point and
  // one label ("none + reshard = auto + reshard").
  std::vector<std::string> labels;
  for (const Candidate &c : candidates) {
    auto same = llvm::find_if(candidates, [&](const Candidate &o) {
      return o.stepSeconds == c.stepSeconds && o.totalBytes == c.totalBytes;
    });
    if (&*same == &c) {
      labels.push_back(c.label);
    } else {
      labels[same - candidates.begin()] += " = " + c.label;
      labels.push_back("");
    }
  }
  for (auto [c, label] : llvm::zip(candidates, labels)) {
    if (label.empty())
      continue;
    // torchtitan's two named policies as squares, the others as dots.
    bool named = !c.reshard && (c.mode == "full" ||
                                (c.mode == "selective" && c.option == "op"));
    double px = x(c.stepSeconds), py = y(c.totalBytes);
    if (named)
      os << llvm::formatv("<rect x=\"{0:F1}\" y=\"{1:F1}\" width=\"9\" "
                          "height=\"9\" fill=\"#f28e2b\"/>\n",
                          px - 4.5, py - 4.5);
    else
      os << llvm::formatv("<circle cx=\"{0:F1}\" cy=\"{1:F1}\" r=\"4.5\" "
                          "fill=\"#4e79a7\"/>\n",
                          px, py);
    os << llvm::formatv("<text x=\"{0:F1}\" y=\"{1:F1}\">{2}</text>\n", px + 8,
                        py - 6, label);
  }
  os << llvm::formatv(
      "<rect x=\"{0}\" y=\"{1}\" width=\"9\" height=\"9\" "
      "fill=\"#f28e2b\"/><text x=\"{2}\" y=\"{3}\">torchtitan's "
      "selective (op) and full</text>\n",
      kLeft + kWidth + 20, kTop, kLeft + kWidth + 34, kTop + 9);
  os << llvm::formatv("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" "
                      "stroke=\"#4e79a7\"/><text x=\"{3}\" y=\"{4}\">"
                      "Pareto front</text>\n",
                      kLeft + kWidth + 18, kLeft + kWidth + 30, kTop + 24,
                      kLeft + kWidth + 34, kTop + 28);
  os << "</svg>\n";
}

int tuneActivationCheckpointing(const char *argv0) {
  std::string compiler = toolPath("titan-compile", argv0);
  std::string launcher = toolPath("titan-run", argv0);
  if (backend != "cpu" && backend != "cuda")
    return fail("--backend '" + backend + "': choose cpu or cuda");
  if (measure && dataDir.empty())
    return fail("--measure needs --data DIR (the batches to train on)");

  llvm::SmallString<256> work(workDir);
  bool temporary = work.empty();
  if (temporary) {
    if (std::error_code error =
            llvm::sys::fs::createUniqueDirectory("titan-tune", work))
      return fail("cannot create a work folder: " + error.message());
  } else if (std::error_code error = llvm::sys::fs::create_directories(work)) {
    return fail("cannot create '" + work + "': " + error.message());
  }
  llvm::scope_exit cleanup([&] {
    if (temporary)
      llvm::sys::fs::remove_directories(work);
  });

  // Compiles `c` and reads its summary into it; false when titan-compile
  // failed. The predictions and the memory need the memory plan only;
  // --measure runs executables. Candidates compile concurrently
  // (compileAll): this touches only `c`.
  auto compile = [&](Candidate &c) -> bool {
    llvm::SmallString<256> out(work), summaryPath(work), log(work);
    llvm::sys::path::append(out, measure ? c.slug : c.slug + ".mlir");
    llvm::sys::path::append(summaryPath, c.slug + ".json");
    llvm::sys::path::append(log, c.slug + ".log");
    std::vector<std::string> arguments = {
        compiler, modelFile,        "--config",       configFile,
        "-o",     std::string(out), "--summary-json", std::string(summaryPath)};
    if (!measure)
      arguments.push_back("--emit=memory-plan");
    arguments.push_back("--backend=" + backend);
    for (const std::string &set : overrides)
      arguments.insert(arguments.end(), {"--set", set});
    arguments.insert(
        arguments.end(),
        {"--set", "activation_checkpoint.mode=" + c.mode, "--set",
         "activation_checkpoint.selective_ac_option=\"" + c.option + "\"",
         "--set",
         std::string("parallelism.fsdp_reshard_after_forward=") +
             (c.reshard ? "always" : "never")});
    if (c.budgetGib)
      arguments.insert(arguments.end(),
                       {"--set", llvm::formatv("activation_checkpoint."
                                               "memory_budget_gib={0:F6}",
                                               *c.budgetGib)
                                     .str()});
    if (worldSize > 0)
      arguments.push_back("--world-size=" + std::to_string(worldSize));
    {
      std::lock_guard<std::mutex> lock(outputMutex);
      llvm::errs() << "titan-tune: compiling " << c.label << "\n";
    }
    if (!runLogged(arguments, log))
      return false;
    auto buffer = llvm::MemoryBuffer::getFile(summaryPath);
    llvm::Expected<llvm::json::Value> summary =
        buffer ? llvm::json::parse((*buffer)->getBuffer())
               : llvm::Expected<llvm::json::Value>(llvm::createStringError(
                     buffer.getError(), "cannot read the summary"));
    if (!summary) {
      std::lock_guard<std::mutex> lock(outputMutex);
      fail(summaryPath + ": " + llvm::toString(summary.takeError()));
      return false;
    }
    const llvm::json::Object &object = *summary->getAsObject();
    c.totalBytes = number(object, "memory", "total_bytes").value_or(0);
    c.stepSeconds = number(object, "predicted", "step_seconds").value_or(0);
    c.recomputeSeconds =
        number(object, "predicted", "recompute_seconds").value_or(0);
    c.tokensPerSecond =
        number(object, "predicted", "tokens_per_second_per_rank").value_or(0);
    c.mfu = number(object, "predicted", "mfu").value_or(0);
    c.attentionLayers =
        int64_t(number(object, "predicted", "attention_layers").value_or(0));
    c.fsdpDegree = int64_t(number(object, "mesh", "fsdp").value_or(1));
    c.deviceMemoryBytes = number(object, "device", "memory_bytes").value_or(0);
    return true;
  };
  // Compiles `batch` on up to --jobs threads; whether each succeeded.
  auto compileAll = [&](std::vector<Candidate> &batch) {
    std::vector<char> compiled(batch.size(), false);
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(jobs));
    for (size_t i = 0; i < batch.size(); ++i)
      pool.async([&, i] { compiled[i] = compile(batch[i]); });
    pool.wait();
    return compiled;
  };
  auto makeCandidate = [](StringRef mode, StringRef option, StringRef label,
                          bool reshard) {
    Candidate c;
    c.mode = mode.str();
    c.option = option.str();
    c.reshard = reshard;
    c.label = (label + (reshard ? " + reshard" : "")).str();
    c.slug = (mode + "-" + option + (reshard ? "-reshard" : "")).str();
    return c;
  };

  // No recomputation first: it says how many blocks there are, whether
  // FSDP shards and the device's memory.
  std::vector<Candidate> candidates = {
      makeCandidate("none", "op", "none", false)};
  if (!compile(candidates.front()))
    return 1;
  int64_t fsdpDegree = candidates.front().fsdpDegree;
  if (budgetGib <= 0)
    budgetGib = candidates.front().deviceMemoryBytes / double(1ull << 30);
  // Every N-th block for N from 2 up to half the blocks (N = 1 is full);
  // each policy also resharding after the forward when FSDP shards.
  int64_t layers = candidates.front().attentionLayers;
  std::vector<std::pair<std::string, std::string>> policies = {
      {"selective", "op"}, {"full", "op"}};
  for (int64_t every = 2; every <= layers / 2 && every <= 8; every *= 2)
    policies.push_back({"selective", std::to_string(every)});
  auto labelOf = [](const std::pair<std::string, std::string> &policy) {
    if (policy.first == "full")
      return std::string("full");
    return policy.second == "op" ? std::string("selective op")
                                 : "selective every " + policy.second;
  };
  std::vector<Candidate> fixed;
  for (const auto &policy : policies)
    fixed.push_back(
        makeCandidate(policy.first, policy.second, labelOf(policy), false));
  if (fsdpDegree > 1) {
    policies.insert(policies.begin(), {"none", "op"});
    for (const auto &policy : policies)
      fixed.push_back(makeCandidate(
          policy.first, policy.second,
          policy.first == "none" ? "none" : labelOf(policy), true));
  }
  if (llvm::is_contained(compileAll(fixed), false))
    return 1;
  candidates.insert(candidates.end(), fixed.begin(), fixed.end());
  // titan's own choice at the budget, and at the memory torchtitan's
  // selective policy takes (the solver's choice against the fixed list).
  // An auto candidate that cannot fit its budget is left out.
  auto makeAuto = [](double gibBudget, StringRef label, bool reshard) {
    Candidate c;
    c.mode = "auto";
    c.option = "op";
    c.reshard = reshard;
    c.budgetGib = gibBudget;
    c.label = (label + (reshard ? " + reshard" : "")).str();
    c.slug =
        llvm::formatv("auto-{0:F3}{1}", gibBudget, reshard ? "-reshard" : "")
            .str();
    return c;
  };
  auto selective = llvm::find_if(candidates, [](const Candidate &c) {
    return c.mode == "selective" && c.option == "op" && !c.reshard;
  });
  double selectiveGib = selective->totalBytes / double(1ull << 30);
  std::vector<Candidate> autos = {makeAuto(budgetGib, "auto", false)};
  if (fsdpDegree > 1)
    autos.push_back(makeAuto(budgetGib, "auto", true));
  autos.push_back(makeAuto(selectiveGib, "auto at selective's memory", false));
  std::vector<char> compiledAutos = compileAll(autos);
  for (size_t i = 0; i < autos.size(); ++i) {
    if (compiledAutos[i])
      candidates.push_back(autos[i]);
    else
      llvm::errs() << "titan-tune: " << autos[i].label << " left out\n";
  }
  double budgetBytes = budgetGib * double(1ull << 30);
  for (Candidate &c : candidates)
    c.fits = c.totalBytes <= budgetBytes;

  if (measure) {
    for (Candidate &c : candidates) {
      if (!c.fits)
        continue;
      llvm::SmallString<256> out(work), metrics(work), log(work);
      llvm::sys::path::append(out, c.slug);
      llvm::sys::path::append(metrics, c.slug + ".jsonl");
      llvm::sys::path::append(log, c.slug + ".run.log");
      llvm::errs() << "titan-tune: running " << c.label << "\n";
      int64_t ranks = worldSize;
      if (ranks <= 0) {
        // The executable's manifest says how many ranks it was built for.
        llvm::SmallString<256> manifest(out);
        llvm::sys::path::append(manifest, "manifest.json");
        auto buffer = llvm::MemoryBuffer::getFile(manifest);
        llvm::Expected<llvm::json::Value> value =
            buffer ? llvm::json::parse((*buffer)->getBuffer())
                   : llvm::Expected<llvm::json::Value>(llvm::createStringError(
                         buffer.getError(), "cannot read the manifest"));
        if (!value)
          return fail(manifest + ": " + llvm::toString(value.takeError()));
        const llvm::json::Array *entries =
            value->getAsObject()->getArray("ranks");
        ranks = entries ? int64_t(entries->size()) : 1;
      }
      if (!runLogged({launcher, std::string(out), "--nproc-per-node",
                      std::to_string(ranks), "--", "--data", dataDir, "--steps",
                      std::to_string(measureSteps), "--metrics",
                      std::string(metrics)},
                     log))
        return 1;
      c.measuredSeconds = medianStepSeconds(metrics);
    }
  }

  // The table, then the choice.
  llvm::outs() << llvm::formatv("{0,-28} {1,14} {2,5} {3,14} {4,12} {5,14} "
                                "{6,7}{7}\n",
                                "policy", "memory/rank", "fits", "step (pred.)",
                                "recompute", "tokens/s/rank", "MFU",
                                measure ? "   step (measured)" : "");
  for (const Candidate &c : candidates)
    llvm::outs() << llvm::formatv(
        "{0,-28} {1,14} {2,5} {3,14} {4,12} {5,14:F1} {6,6:F1}%{7}\n", c.label,
        gib(c.totalBytes), c.fits ? "yes" : "no", milliseconds(c.stepSeconds),
        milliseconds(c.recomputeSeconds), c.tokensPerSecond, 100 * c.mfu,
        c.measuredSeconds ? "   " + milliseconds(*c.measuredSeconds)
                          : std::string(measure ? "   -" : ""));
  const Candidate *best = nullptr;
  for (const Candidate &c : candidates) {
    if (!c.fits)
      continue;
    double time =
        measure ? c.measuredSeconds.value_or(INFINITY) : c.stepSeconds;
    double bestTime = best ? (measure ? best->measuredSeconds.value_or(INFINITY)
                                      : best->stepSeconds)
                           : INFINITY;
    if (time < bestTime)
      best = &c;
  }
  if (!svgFile.empty()) {
    std::error_code error;
    llvm::raw_fd_ostream svg(svgFile, error);
    if (error)
      return fail("cannot write '" + svgFile + "': " + error.message());
    drawPareto(candidates, budgetBytes, svg);
  }
  if (!best) {
    llvm::outs() << "no policy fits in " << gib(budgetBytes)
                 << " per rank: shard over more ranks (FSDP, TP) or lower "
                    "training.local_batch_size or training.seq_len\n";
    return 2;
  }
  llvm::outs() << "chosen: " << best->label << " (the fastest "
               << (measure ? "measured" : "predicted") << " that fits in "
               << gib(budgetBytes)
               << " per rank): [activation_checkpoint] mode = \"" << best->mode
               << "\"";
  if (best->mode == "selective")
    llvm::outs() << ", selective_ac_option = \"" << best->option << "\"";
  if (best->budgetGib)
    llvm::outs() << llvm::formatv(", memory_budget_gib = {0:F6}",
                                  *best->budgetGib);
  if (best->reshard)
    llvm::outs() << "; [parallelism] fsdp_reshard_after_forward = \"always\"";
  llvm::outs() << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  for (cl::SubCommand *command : {&cl::SubCommand::getTopLevel(), &acCommand})
    cl::HideUnrelatedOptions(tuneOptions, *command);
  cl::ParseCommandLineOptions(
      argc, argv,
      "titan-tune: choose settings from titan's predictions\n\n"
      "  titan-tune ac MODEL.pt --config CFG.toml [--budget-gib X] [--svg "
      "F]\n\n"
      "It runs the titan-compile and titan-run beside it, or those the "
      "environment variables TITAN_COMPILE and TITAN_RUN name.\n");
  if (acCommand)
    return tuneActivationCheckpointing(argv[0]);
  return fail("expected a subcommand: ac (see --help)");
}
