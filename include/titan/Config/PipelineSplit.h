//===- PipelineSplit.h - the stages of a pipeline ---------------*- C++ -*-===//
//
// Which of a model's transformer blocks each pipeline stage runs, from
// torchtitan's [parallelism] keys: torchtitan v0.2's
// pipeline_parallel_layers_per_stage and pipeline_parallel_{first,last}_
// stage_less_layers (generate_llm_fqn_per_model_part in
// torchtitan/distributed/pipeline_parallel.py), v0.2's explicit
// module_fqns_per_model_part, and v0.1's pipeline_parallel_split_points
// (torchtitan/models/llama3/infra/pipeline.py). When none of them is set,
// only the number of stages is torchtitan's (one per rank for single-stage
// schedules, two for the others) and titan's compiler balances the blocks
// over the stages by its cost model.
//
// Only LLVMSupport, like TrainConfig.h.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONFIG_PIPELINESPLIT_H
#define TITAN_CONFIG_PIPELINESPLIT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir::titan {

struct ParallelismConfig;

/// How a schedule places its stages on the pipeline ranks.
enum class PipelineStagePlacement {
  /// One stage per rank (GPipe, 1F1B: torch's PipelineScheduleSingle).
  Single,
  /// Several stages per rank, stage s on rank s mod degree (Interleaved1F1B,
  /// LoopedBFS, InterleavedZeroBubble).
  Loop,
  /// Two stages per rank in a V: rank r holds stages r and 2 x degree - 1 - r
  /// (ZBVZeroBubble, DualPipeV).
  V,
};

/// One of torch's pipeline schedules.
struct PipelineScheduleInfo {
  /// torch's spelling: "GPipe", "1F1B", "Interleaved1F1B", ...
  llvm::StringRef name;
  PipelineStagePlacement placement;
  /// Whether titan runs it; parseTrainConfig refuses the others when
  /// pipeline_parallel_degree > 1.
  bool supported;
  /// Why titan does not run it, and what to use instead (for unsupported
  /// schedules).
  llvm::StringRef unsupportedReason;
  llvm::StringRef unsupportedFix;
};

/// torch's schedules that pipeline_parallel_schedule may name: GPipe, 1F1B,
/// Interleaved1F1B, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble and
/// DualPipeV.
llvm::ArrayRef<PipelineScheduleInfo> getPipelineSchedules();

/// The schedule `name` names, case-insensitively as torch's
/// get_schedule_class matches it ("interleaved1f1b"), or null.
const PipelineScheduleInfo *lookupPipelineSchedule(llvm::StringRef name);

/// The stages of a pipeline.
struct PipelineSplit {
  /// The (virtual) stages, a multiple of pipeline_parallel_degree.
  int64_t numStages = 1;
  /// numStages / pipeline_parallel_degree.
  int64_t stagesPerRank = 1;
  /// The number of blocks of each stage, in stage order (adding up to the
  /// model's blocks), when a key fixes them; empty: the compiler balances
  /// the stages by its cost model.
  llvm::SmallVector<int64_t> blocksPerStage;
};

/// The checks of `parallelism`'s split keys that need no model, when
/// pipeline_parallel_degree > 1 (torchtitan reads none of them otherwise):
/// pipeline_parallel_layers_per_stage is at least 1;
/// module_fqns_per_model_part (v0.2) and pipeline_parallel_split_points
/// (v0.1) are not both set; pipeline_parallel_layers_per_stage, which
/// computes the split, is not set together with either explicit split; the
/// less-layers keys, which only weigh a computed split, are not set to
/// anything but their default 1 with an explicit split. Errors name the keys
/// ("parallelism.KEY") and the fix; parseTrainConfig calls it.
llvm::Error checkPipelineSplitKeys(const ParallelismConfig &parallelism);

/// The stages of a model whose transformer blocks are `blocks`, in model
/// order ("layers.0", "layers.1"...; "transformer.h.0"... for GPT-2), under
/// a schedule that places stages as `placement`
/// (lookupPipelineSchedule(parallelism.pipelineParallelSchedule)->placement
/// for a named schedule). `leadingModules` and `trailingModules` are the
/// model's modules before and after the blocks ("tok_embeddings"; "norm",
/// "output"), which module_fqns_per_model_part may name.
///
/// pipeline_parallel_degree 1: one stage, no split (torchtitan does not
/// pipeline). Otherwise, following torchtitan:
///  - pipeline_parallel_layers_per_stage: ceil((blocks + first less + last
///    less) / layers per stage) stages, a multiple of the degree, exactly
///    one per rank for Single placement, at least two for Loop, exactly two
///    for V; the blocks split as below;
///  - else the stages are degree x (1 for Single, 2 otherwise); when either
///    less-layers key is written, the blocks split as
///    generate_llm_fqn_per_model_part does: blocks + first less + last less
///    "effective layers" divided evenly, the remainder going one each to the
///    first stages, the first stage's count less the first less-layers and
///    the last's less the last less-layers;
///  - module_fqns_per_model_part: one stage per part, every block in exactly
///    one part, in model order; leading modules in the first part only,
///    trailing ones in the last part only, each exactly once;
///  - pipeline_parallel_split_points: stages begin at the named blocks (in
///    model order, each once), the first one at the first block;
///  - with none of these keys, blocksPerStage is empty.
/// The explicit splits need a multiple of the degree of stages (exactly one
/// per rank for Single placement, two for V). Errors name the keys, the
/// values and the fix (unknown module names with "did you mean").
llvm::Expected<PipelineSplit>
splitPipelineStages(const ParallelismConfig &parallelism,
                    llvm::ArrayRef<std::string> blocks,
                    PipelineStagePlacement placement,
                    llvm::ArrayRef<std::string> leadingModules = {},
                    llvm::ArrayRef<std::string> trailingModules = {});

} // namespace mlir::titan

#endif // TITAN_CONFIG_PIPELINESPLIT_H
