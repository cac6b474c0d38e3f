//===- Schedule.h - pipeline-parallel schedules as data ---------*- C++ -*-===//
//
// A pipeline-parallel (PP) schedule as torch.distributed.pipelining writes
// one: for each pp rank, the ordered list of the actions it runs. An action
// is (stage, kind, microbatch): a forward F, a full backward B, or the split
// backward of the zero-bubble schedules (I for the inputs' gradients, W for
// the weights'), and the point-to-point transfers between stages on
// different ranks (SEND_F / RECV_F for activations, SEND_B / RECV_B for
// gradients). Stages are placed on ranks in a loop (stage s on rank s % p) or,
// for ZBVZeroBubble, in a V (rank r holds stages r and 2p-1-r).
//
// This header generates torch's schedules (GPipe, 1F1B, Interleaved1F1B,
// LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble) in torch's compute order,
// reads and writes the CSV form of torch's _PipelineScheduleRuntime, checks
// a schedule, and adds the send/recv actions the way torch's _add_send_recv
// does. Only LLVMSupport: no MLIR IR (docs/pipeline-schedules.md).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PIPELINESCHEDULE_SCHEDULE_H
#define TITAN_PIPELINESCHEDULE_SCHEDULE_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::titan {

/// What an action does; the comments give torch's spelling in a CSV cell.
enum class PipelineActionKind : uint8_t {
  /// F: the forward of one microbatch through one stage.
  Forward,
  /// B: the full backward (input and weight gradients together).
  Backward,
  /// I: the backward for the stage's inputs only (zero-bubble schedules).
  BackwardInput,
  /// W: the backward for the stage's weights only, after its I.
  BackwardWeight,
  /// SEND_F: send a forward's output to the next stage's rank.
  SendForward,
  /// RECV_F: receive the previous stage's output (the action names the
  /// receiving stage).
  RecvForward,
  /// SEND_B: send an input gradient to the previous stage's rank.
  SendBackward,
  /// RECV_B: receive the next stage's input gradient (the action names the
  /// receiving stage).
  RecvBackward,
  /// UNSHARD, RESHARD, REDUCE_GRAD: torch's FSDP and gradient-reduction
  /// actions; titan reads and writes them but gives them no work.
  Unshard,
  Reshard,
  ReduceGrad,
};

/// Torch's spelling of `kind` ("F", "SEND_F", "REDUCE_GRAD").
llvm::StringRef getPipelineActionKindName(PipelineActionKind kind);

/// Whether `kind` computes (F, B, I, W).
bool isComputeAction(PipelineActionKind kind);

/// Whether `kind` is a point-to-point transfer (SEND_F, RECV_F, SEND_B,
/// RECV_B).
bool isCommunicationAction(PipelineActionKind kind);

/// One action of a rank's list.
struct PipelineAction {
  /// The stage it runs on (a receive names the receiving stage).
  int64_t stage = 0;
  PipelineActionKind kind = PipelineActionKind::Forward;
  /// The microbatch; absent only for UNSHARD, RESHARD and REDUCE_GRAD.
  std::optional<int64_t> microbatch;

  /// Same stage, kind and microbatch.
  bool operator==(const PipelineAction &other) const {
    return stage == other.stage && kind == other.kind &&
           microbatch == other.microbatch;
  }
  bool operator!=(const PipelineAction &other) const {
    return !(*this == other);
  }
};

/// The action in torch's string form: stage, kind, microbatch ("0F1",
/// "2SEND_B3", "1UNSHARD").
std::string formatPipelineAction(const PipelineAction &action);

/// Parses torch's string form of one action (surrounding blanks ignored),
/// as torch 2.6 and later spell it (torch 2.5 wrote the full backward BW and
/// the input-only one B). Stricter than torch's regex, which accepts
/// trailing text: the whole cell must be an action, and every kind but
/// UNSHARD, RESHARD and REDUCE_GRAD needs its microbatch.
llvm::Expected<PipelineAction> parsePipelineAction(llvm::StringRef text);

/// How stages are placed on pp ranks.
enum class StagePlacement : uint8_t {
  /// Stage s on rank s % p (GPipe, 1F1B, Interleaved1F1B, LoopedBFS,
  /// InterleavedZeroBubble).
  Loop,
  /// Rank r holds stages r and 2p-1-r (ZBVZeroBubble; two stages per rank).
  V,
};

/// "loop" or "v", as torch's generate_stage_to_rank_mapping names them.
llvm::StringRef getStagePlacementName(StagePlacement placement);

/// A schedule: each pp rank's ordered actions over `getNumStages()` stages
/// and `numMicrobatches` microbatches.
struct PipelineSchedule {
  /// The pp ranks, the stages each holds, and the microbatches of a step.
  int64_t numRanks = 0;
  int64_t stagesPerRank = 0;
  int64_t numMicrobatches = 0;
  /// Which rank holds which stage.
  StagePlacement placement = StagePlacement::Loop;
  /// One list per rank, in the order the rank runs them.
  llvm::SmallVector<llvm::SmallVector<PipelineAction, 0>> ranks;

  /// numRanks x stagesPerRank.
  int64_t getNumStages() const { return numRanks * stagesPerRank; }
  /// The rank that holds `stage` under the placement.
  int64_t getRankOfStage(int64_t stage) const;
  /// The stages rank `rank` holds, in ascending order.
  llvm::SmallVector<int64_t> getStagesOfRank(int64_t rank) const;
  /// Whether the schedule has SEND/RECV actions.
  bool hasCommunication() const;
};

/// Checks `schedule`: one list per rank; stages, microbatches and kinds in
/// range; each action on the rank that holds its stage; every (stage,
/// microbatch) has exactly one F and either one B or one I and one W, the
/// backward after the F and the W after the I. A schedule with SEND/RECV
/// actions must have exactly the transfers `insertCommunication` would add,
/// each send after the compute that produces it. Messages name the rank, the
/// cell (its index in the rank's list, from 0) and the problem.
llvm::Error verifyPipelineSchedule(const PipelineSchedule &schedule);

/// torch.distributed.pipelining's schedules.
enum class PipelineScheduleKind : uint8_t {
  GPipe,
  OneFOneB,
  Interleaved1F1B,
  LoopedBFS,
  InterleavedZeroBubble,
  ZBVZeroBubble,
};

/// Torch's name of `kind` ("GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS",
/// "InterleavedZeroBubble", "ZBVZeroBubble").
llvm::StringRef getPipelineScheduleKindName(PipelineScheduleKind kind);

/// The schedule named `name`, ignoring case as torch's get_schedule_class
/// does; an unknown name gets an error listing the known ones.
llvm::Expected<PipelineScheduleKind>
parsePipelineScheduleKind(llvm::StringRef name);

/// Where `kind` places its stages (V for ZBVZeroBubble, Loop otherwise).
StagePlacement getStagePlacement(PipelineScheduleKind kind);

/// The compute-only schedule of `kind` for `numRanks` pp ranks with
/// `stagesPerRank` stages each and `numMicrobatches` microbatches, each rank's
/// compute actions in the order torch 2.6-2.7 generates them (without
/// torch's idle padding; docs/pipeline-schedules.md tells what 2.5 did).
/// Refuses what torch refuses, with the reason: GPipe and 1F1B run one stage
/// per rank, 1F1B needs at least as many microbatches as stages,
/// Interleaved1F1B and InterleavedZeroBubble need a microbatch count that is a
/// multiple of max(1, microbatches / ranks), ZBVZeroBubble needs two stages per
/// rank.
llvm::Expected<PipelineSchedule>
generatePipelineSchedule(PipelineScheduleKind kind, int64_t numRanks,
                         int64_t stagesPerRank, int64_t numMicrobatches);

/// Adds the point-to-point actions to a compute-only schedule as torch's
/// _add_send_recv does: a SEND_F right after each F whose next stage is on
/// another rank and a SEND_B after each B or I whose previous stage is, the
/// matching RECV on the consumer's rank placed when the send is, and a
/// consumer waiting until its receive is placed (ranks visited in turn, each
/// taking its next action when it can). Two stages on one rank (the point
/// of ZBV's V) exchange nothing. Every receive comes after its send in one
/// global order of the ranks' lists, so the result cannot deadlock when
/// sends do not block and receives do. Refuses a schedule that already has
/// SEND/RECV actions, and one whose order can never be met (naming the
/// action each rank waits at).
llvm::Expected<PipelineSchedule>
insertCommunication(const PipelineSchedule &schedule);

/// Reads a schedule in the CSV form of torch's _PipelineScheduleRuntime
/// (_dump_csv / _load_csv): one row per pp rank, one action per cell in
/// torch's string form; empty cells (torch's idle steps) are skipped and
/// cells may be double-quoted. Rows may end in "\n" or "\r\n"; blank lines
/// at the end are ignored. The file must have `numRanks` rows; the stages
/// per rank follow from the highest stage, the placement (loop or v) from
/// which rank holds each stage. The schedule is then verified as
/// `verifyPipelineSchedule` does against `numMicrobatches`, with the errors
/// naming the rank, the cell (its column from 0) and the problem.
llvm::Expected<PipelineSchedule>
parsePipelineScheduleCsv(llvm::StringRef text, int64_t numRanks,
                         int64_t numMicrobatches);

/// Reads the schedule CSV file at `path` as parsePipelineScheduleCsv does;
/// errors name the file.
llvm::Expected<PipelineSchedule>
readPipelineScheduleCsvFile(llvm::StringRef path, int64_t numRanks,
                            int64_t numMicrobatches);

/// Writes `schedule` as torch's _dump_csv does: one row per rank, cells
/// joined by ",", each row ended by "\r\n" (Python's csv.writer).
std::string printPipelineScheduleCsv(const PipelineSchedule &schedule);

} // namespace mlir::titan

#endif // TITAN_PIPELINESCHEDULE_SCHEDULE_H
