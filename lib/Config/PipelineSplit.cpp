//===- PipelineSplit.cpp - the stages of a pipeline -----------------------===//
//
// torchtitan's rules, read from torchtitan v0.2.x
// torchtitan/distributed/pipeline_parallel.py (pipeline_llm: the number of
// virtual stages; generate_llm_fqn_per_model_part: the computed split;
// pipeline_module_split: stages per rank) and v0.1.0
// torchtitan/models/llama3/infra/pipeline.py (split points). torchtitan
// raises its errors when it builds the stages; titan raises them when it
// compiles, naming the keys and the fix.
//
//===----------------------------------------------------------------------===//

#include "titan/Config/PipelineSplit.h"

#include "Toml.h"

#include "titan/Config/TrainConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>
#include <optional>
#include <tuple>

using namespace mlir::titan;

namespace {

using P = PipelineStagePlacement;

const PipelineScheduleInfo kSchedules[] = {
    {"GPipe", P::Single, true, "", ""},
    {"1F1B", P::Single, true, "", ""},
    {"Interleaved1F1B", P::Loop, true, "", ""},
    {"LoopedBFS", P::Loop, true, "", ""},
    {"InterleavedZeroBubble", P::Loop, true, "", ""},
    {"ZBVZeroBubble", P::V, true, "", ""},
    {"DualPipeV", P::V, false,
     "DualPipeV overlaps one microbatch's forward with another's backward "
     "for mixture-of-experts communication, which titan does not do",
     "use \"ZBVZeroBubble\", which places the stages in the same V"},
};

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// ceil(a / b) for b > 0, as Python's math.ceil(a / b).
int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

/// "'first' to 'last'" of the names, for messages.
std::string describeRange(llvm::ArrayRef<std::string> names) {
  if (names.empty())
    return "none";
  if (names.size() == 1)
    return "'" + names.front() + "'";
  return "'" + names.front() + "' to '" + names.back() + "'";
}

/// "'a', 'b'" of the names, for messages.
std::string describeList(llvm::ArrayRef<std::string> names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

/// What stage placement asks of the stages per rank, for messages.
llvm::StringRef describePlacement(PipelineStagePlacement placement) {
  switch (placement) {
  case P::Single:
    return "a single-stage schedule (GPipe, 1F1B) runs exactly 1 stage per "
           "rank";
  case P::Loop:
    return "a multi-stage schedule runs at least 2 stages per rank";
  case P::V:
    return "a V schedule (ZBVZeroBubble) runs exactly 2 stages per rank";
  }
  return "";
}

/// Whether `stagesPerRank` suits `placement` when torchtitan computes the
/// stages (pipeline_llm; V schedules: pipeline_module_split's assertion).
bool isComputedStagesPerRankValid(int64_t stagesPerRank,
                                  PipelineStagePlacement placement) {
  switch (placement) {
  case P::Single:
    return stagesPerRank == 1;
  case P::Loop:
    return stagesPerRank >= 2;
  case P::V:
    return stagesPerRank == 2;
  }
  return false;
}

/// generate_llm_fqn_per_model_part's split as block counts: `numBlocks`
/// blocks plus the first and last stages' weights are `numStages` even
/// parts, the remainder one each to the first stages; the first stage's
/// count is less its weight, the last's less theirs. `origin` says where
/// the number of stages comes from, for messages.
llvm::Expected<llvm::SmallVector<int64_t>>
generateBlocksPerStage(int64_t numStages, int64_t numBlocks,
                       int64_t inputWeight, int64_t outputWeight,
                       const llvm::Twine &origin) {
  if (numStages < 1)
    return error(origin + ", but a pipeline needs at least 1 stage");
  if (numStages == 1)
    return llvm::SmallVector<int64_t>{numBlocks};
  int64_t effective = numBlocks + inputWeight + outputWeight;
  if (numStages > effective)
    return error(llvm::formatv(
        "{0}, more than the {1} effective layers torchtitan splits ({2} "
        "blocks + pipeline_parallel_first_stage_less_layers {3} + "
        "pipeline_parallel_last_stage_less_layers {4}); use fewer stages (a "
        "lower pipeline_parallel_degree, a larger "
        "pipeline_parallel_layers_per_stage or a single-stage schedule)",
        origin, effective, numBlocks, inputWeight, outputWeight));
  int64_t perStage = effective / numStages;
  int64_t extra = effective % numStages;
  for (auto [key, weight, other] :
       {std::tuple<llvm::StringRef, int64_t, int64_t>{
            "pipeline_parallel_first_stage_less_layers", inputWeight,
            outputWeight},
        {"pipeline_parallel_last_stage_less_layers", outputWeight,
         inputWeight}}) {
    if (weight <= perStage)
      continue;
    // The largest value down to 0 that torchtitan accepts.
    std::optional<int64_t> fits;
    for (int64_t value = weight - 1; value >= 0 && !fits; --value)
      if (value <= (numBlocks + value + other) / numStages)
        fits = value;
    return error(llvm::formatv(
        "'parallelism.{0}' = {1} is more than the {2} effective layers of a "
        "stage ({3} = {4} blocks + {5} + {6}, over {7} stages), which "
        "torchtitan refuses; {8}",
        key, weight, perStage, effective, numBlocks, inputWeight, outputWeight,
        numStages,
        fits ? llvm::formatv("set it to at most {0}", *fits).str()
             : std::string("lower it")));
  }
  llvm::SmallVector<int64_t> counts;
  for (int64_t stage = 0; stage < numStages; ++stage) {
    int64_t count = perStage + (stage < extra ? 1 : 0);
    if (stage == 0)
      count -= inputWeight;
    else if (stage == numStages - 1)
      count -= outputWeight;
    counts.push_back(count);
  }
  return counts;
}

/// Checks that `numStages` explicitly split stages suit `degree` ranks and
/// `placement`: a multiple of the degree (pipeline_module_split's
/// assertion), one per rank for single-stage schedules (torchtitan would
/// run only each rank's first), two for V schedules. `what` names the key
/// and how many stages it gives.
llvm::Error checkExplicitStageCount(int64_t numStages, int64_t degree,
                                    PipelineStagePlacement placement,
                                    const llvm::Twine &what) {
  if (numStages % degree != 0)
    return error(what + llvm::formatv(", not a multiple of "
                                      "pipeline_parallel_degree={0}: every "
                                      "rank runs the same number of stages",
                                      degree));
  int64_t perRank = numStages / degree;
  if ((placement == P::Single && perRank != 1) ||
      (placement == P::V && perRank != 2)) {
    int64_t wanted = placement == P::Single ? degree : 2 * degree;
    return error(what + llvm::formatv(", {0} per rank, but {1}; give {2} "
                                      "stages",
                                      perRank, describePlacement(placement),
                                      wanted));
  }
  return llvm::Error::success();
}

/// The blocks of each part of module_fqns_per_model_part.
llvm::Expected<llvm::SmallVector<int64_t>>
countModuleFqns(llvm::ArrayRef<std::vector<std::string>> parts,
                llvm::ArrayRef<std::string> blocks,
                llvm::ArrayRef<std::string> leading,
                llvm::ArrayRef<std::string> trailing) {
  const llvm::StringRef key = "'parallelism.module_fqns_per_model_part'";
  llvm::StringMap<int64_t> blockIndex;
  for (auto [index, name] : llvm::enumerate(blocks))
    blockIndex[name] = index;
  // The part each module was first seen in.
  llvm::StringMap<size_t> seenIn;
  int64_t next = 0;
  size_t last = parts.size() - 1;
  llvm::SmallVector<int64_t> counts;
  for (auto [part, names] : llvm::enumerate(parts)) {
    int64_t count = 0;
    for (const std::string &name : names) {
      auto [seen, inserted] = seenIn.try_emplace(name, part);
      if (!inserted)
        return error(
            key + ": " +
            (seen->second == part
                 ? llvm::formatv("part {0} names '{1}' twice", part, name).str()
                 : llvm::formatv("'{0}' is in part {1} and part {2}", name,
                                 seen->second, part)
                       .str()) +
            ": every module is in exactly one part");
      if (auto block = blockIndex.find(name); block != blockIndex.end()) {
        if (block->second != next)
          return error(llvm::formatv(
              "{0}: part {1} names '{2}' where {3} comes next: the parts take "
              "the blocks in the model's order, every block in exactly one "
              "part",
              key, part, name,
              next < int64_t(blocks.size()) ? "'" + blocks[next] + "'"
                                            : std::string("no block")));
        ++next;
        ++count;
      } else if (llvm::is_contained(leading, name)) {
        if (part != 0)
          return error(llvm::formatv(
              "{0}: part {1} names '{2}', a module before the blocks: it "
              "belongs in the first part (part 0)",
              key, part, name));
      } else if (llvm::is_contained(trailing, name)) {
        if (part != last)
          return error(llvm::formatv(
              "{0}: part {1} names '{2}', a module after the blocks: it "
              "belongs in the last part (part {3})",
              key, part, name, last));
      } else {
        std::vector<llvm::StringRef> known(blocks.begin(), blocks.end());
        known.insert(known.end(), leading.begin(), leading.end());
        known.insert(known.end(), trailing.begin(), trailing.end());
        std::string modules = "the blocks (" + describeRange(blocks) + ")";
        if (!leading.empty())
          modules +=
              ", the modules before them (" + describeList(leading) + ")";
        if (!trailing.empty())
          modules +=
              ", the modules after them (" + describeList(trailing) + ")";
        return error(key + ": part " + llvm::Twine(part) + " names '" + name +
                     "', which is not a module of the model" +
                     suggestName(name, known) + "; the parts name " + modules);
      }
    }
    counts.push_back(count);
  }
  if (next < int64_t(blocks.size()))
    return error(key + ": " + describeRange(blocks.drop_front(next)) +
                 (blocks.size() - next == 1 ? " is" : " are") +
                 " in no part: every block must be in exactly one part");
  for (const std::string &name : leading)
    if (!seenIn.count(name))
      return error(key + ": '" + name +
                   "' is in no part: it belongs in the first part, with the "
                   "first blocks");
  for (const std::string &name : trailing)
    if (!seenIn.count(name))
      return error(key + ": '" + name +
                   "' is in no part: it belongs in the last part, with the "
                   "last blocks");
  return counts;
}

/// The blocks of each stage that pipeline_parallel_split_points begin.
llvm::Expected<llvm::SmallVector<int64_t>>
countSplitPoints(llvm::ArrayRef<std::string> points,
                 llvm::ArrayRef<std::string> blocks) {
  const llvm::StringRef key = "'parallelism.pipeline_parallel_split_points'";
  llvm::SmallVector<int64_t> counts;
  int64_t previous = 0;
  for (auto [index, name] : llvm::enumerate(points)) {
    const std::string *found = llvm::find(blocks, name);
    if (found == blocks.end()) {
      std::vector<llvm::StringRef> known(blocks.begin(), blocks.end());
      return error(key + " names '" + name + "', which is not a block of the " +
                   "model" + suggestName(name, known) +
                   "; split points name the blocks where stages begin (" +
                   describeRange(blocks) + ")");
    }
    int64_t block = found - blocks.begin();
    if (index > 0 && block <= previous)
      return error(
          key + " names '" + name + "' " +
          (block == previous ? "twice" : "after '" + points[index - 1] + "'") +
          ": split points must be in the model's order, each once");
    counts.push_back(block - previous);
    previous = block;
  }
  counts.push_back(int64_t(blocks.size()) - previous);
  return counts;
}

} // namespace

llvm::ArrayRef<PipelineScheduleInfo> mlir::titan::getPipelineSchedules() {
  return kSchedules;
}

const PipelineScheduleInfo *
mlir::titan::lookupPipelineSchedule(llvm::StringRef name) {
  for (const PipelineScheduleInfo &schedule : kSchedules)
    if (schedule.name.equals_insensitive(name))
      return &schedule;
  return nullptr;
}

llvm::Error
mlir::titan::checkPipelineSplitKeys(const ParallelismConfig &parallelism) {
  if (parallelism.pipelineParallelDegree <= 1)
    return llvm::Error::success();
  std::optional<int64_t> layersPerStage =
      parallelism.pipelineParallelLayersPerStage;
  if (layersPerStage && *layersPerStage < 1)
    return error(llvm::formatv("'parallelism.pipeline_parallel_layers_per_"
                               "stage' must be at least 1, got {0}",
                               *layersPerStage));
  bool fqns = !parallelism.moduleFqnsPerModelPart.empty();
  bool points = !parallelism.pipelineParallelSplitPoints.empty();
  if (fqns && points)
    return error("'parallelism.module_fqns_per_model_part' (torchtitan v0.2) "
                 "and 'parallelism.pipeline_parallel_split_points' (v0.1) "
                 "both split the model into stages; give one of them");
  if (!fqns && !points)
    return llvm::Error::success();
  llvm::StringRef explicitKey =
      fqns ? "parallelism.module_fqns_per_model_part"
           : "parallelism.pipeline_parallel_split_points";
  if (layersPerStage)
    return error(llvm::formatv(
        "'parallelism.pipeline_parallel_layers_per_stage' = {0} computes the "
        "split that '{1}' gives explicitly (torchtitan takes the explicit "
        "one); give one of them",
        *layersPerStage, explicitKey));
  for (auto [key, value] :
       {std::pair<llvm::StringRef, std::optional<int64_t>>{
            "pipeline_parallel_first_stage_less_layers",
            parallelism.pipelineParallelFirstStageLessLayers},
        {"pipeline_parallel_last_stage_less_layers",
         parallelism.pipelineParallelLastStageLessLayers}})
    if (value && *value != 1)
      return error(llvm::formatv(
          "'parallelism.{0}' = {1} does nothing with '{2}', which names the "
          "modules of every stage (torchtitan ignores it); remove it",
          key, *value, explicitKey));
  return llvm::Error::success();
}

llvm::Expected<PipelineSplit> mlir::titan::splitPipelineStages(
    const ParallelismConfig &parallelism, llvm::ArrayRef<std::string> blocks,
    PipelineStagePlacement placement, llvm::ArrayRef<std::string> leading,
    llvm::ArrayRef<std::string> trailing) {
  int64_t degree = parallelism.pipelineParallelDegree;
  if (degree < 1)
    return error(llvm::formatv(
        "'parallelism.pipeline_parallel_degree' must be at least 1, got {0}",
        degree));
  if (degree == 1)
    return PipelineSplit();
  if (llvm::Error e = checkPipelineSplitKeys(parallelism))
    return std::move(e);
  int64_t numBlocks = blocks.size();
  auto finish = [&](llvm::SmallVector<int64_t> counts) {
    PipelineSplit split;
    split.numStages = counts.size();
    split.stagesPerRank = split.numStages / degree;
    split.blocksPerStage = std::move(counts);
    return split;
  };

  if (!parallelism.moduleFqnsPerModelPart.empty()) {
    const auto &parts = parallelism.moduleFqnsPerModelPart;
    if (llvm::Error e = checkExplicitStageCount(
            parts.size(), degree, placement,
            llvm::formatv("'parallelism.module_fqns_per_model_part' has {0} "
                          "parts",
                          parts.size())))
      return std::move(e);
    llvm::Expected<llvm::SmallVector<int64_t>> counts =
        countModuleFqns(parts, blocks, leading, trailing);
    if (!counts)
      return counts.takeError();
    return finish(std::move(*counts));
  }

  if (!parallelism.pipelineParallelSplitPoints.empty()) {
    const auto &points = parallelism.pipelineParallelSplitPoints;
    if (llvm::Error e = checkExplicitStageCount(
            points.size() + 1, degree, placement,
            llvm::formatv("'parallelism.pipeline_parallel_split_points' has "
                          "{0} split points, so {1} stages",
                          points.size(), points.size() + 1)))
      return std::move(e);
    llvm::Expected<llvm::SmallVector<int64_t>> counts =
        countSplitPoints(points, blocks);
    if (!counts)
      return counts.takeError();
    return finish(std::move(*counts));
  }

  int64_t inputWeight = parallelism.getFirstStageLessLayers();
  int64_t outputWeight = parallelism.getLastStageLessLayers();
  int64_t effective = numBlocks + inputWeight + outputWeight;
  int64_t numStages;
  std::string origin;
  if (std::optional<int64_t> layersPerStage =
          parallelism.pipelineParallelLayersPerStage) {
    // pipeline_llm: ceil(effective layers / layers per stage) virtual
    // stages, at most one layer apart.
    auto stagesFor = [&](int64_t perStage) {
      return ceilDiv(effective, perStage);
    };
    auto isValid = [&](int64_t perStage) {
      int64_t stages = stagesFor(perStage);
      if (stages <= 0 || stages % degree != 0 ||
          !isComputedStagesPerRankValid(stages / degree, placement))
        return false;
      llvm::Expected<llvm::SmallVector<int64_t>> counts =
          generateBlocksPerStage(stages, numBlocks, inputWeight, outputWeight,
                                 "");
      if (!counts) {
        llvm::consumeError(counts.takeError());
        return false;
      }
      return true;
    };
    numStages = stagesFor(*layersPerStage);
    origin = llvm::formatv("'parallelism.pipeline_parallel_layers_per_stage' "
                           "= {0} gives ceil(({1} blocks + {2} + {3}) / {0}) "
                           "= {4} stages",
                           *layersPerStage, numBlocks, inputWeight,
                           outputWeight, numStages)
                 .str();
    bool divisible = numStages % degree == 0;
    if (!divisible ||
        !isComputedStagesPerRankValid(numStages / degree, placement)) {
      // The value nearest to the given one that works, if any.
      std::optional<int64_t> best;
      for (int64_t perStage = 1; perStage <= std::max<int64_t>(effective, 1);
           ++perStage)
        if (isValid(perStage) &&
            (!best || std::abs(perStage - *layersPerStage) <
                          std::abs(*best - *layersPerStage)))
          best = perStage;
      std::string fix = best ? llvm::formatv("set it to {0} ({1} stages)",
                                             *best, stagesFor(*best))
                                   .str()
                             : "no value of it splits these blocks so; change "
                               "pipeline_parallel_degree or the schedule";
      std::string problem =
          divisible
              ? llvm::formatv("{0} per rank, but {1}", numStages / degree,
                              describePlacement(placement))
                    .str()
              : llvm::formatv("not a multiple of pipeline_parallel_degree={0}",
                              degree)
                    .str();
      return error(origin + ", " + problem + "; " + fix);
    }
  } else {
    // pipeline_llm's default: 1 stage per rank for single-stage schedules,
    // 2 for the others.
    numStages = degree * (placement == P::Single ? 1 : 2);
    origin =
        llvm::formatv("pipeline_parallel_degree={0} with a {1} schedule "
                      "gives {2} stages",
                      degree,
                      placement == P::Single ? "single-stage" : "multi-stage",
                      numStages)
            .str();
  }
  // torchtitan computes this split whenever no explicit one is given, and
  // raises its errors; titan's cost model balances the stages instead when
  // no key asks for torchtitan's.
  llvm::Expected<llvm::SmallVector<int64_t>> counts = generateBlocksPerStage(
      numStages, numBlocks, inputWeight, outputWeight, origin);
  if (!counts)
    return counts.takeError();
  PipelineSplit split = finish(std::move(*counts));
  if (!parallelism.hasPipelineSplitKey())
    split.blocksPerStage.clear();
  return split;
}
