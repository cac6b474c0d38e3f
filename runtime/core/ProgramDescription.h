//===- ProgramDescription.h - reading a compiled program's description ----===//
//
// The text titan-compile embeds in every executable
// (`titan_program_description`): the mesh, the communicators, the sizes of
// the memory regions, every argument and result of the step with its place,
// and the box of the global batch each rank reads. The format is in
// docs/runtime.md; the writer is lib/Codegen/ProgramDescription.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_PROGRAMDESCRIPTION_H
#define TITAN_RUNTIME_CORE_PROGRAMDESCRIPTION_H

#include "comm/Connect.h"
#include "core/Status.h"

#include "titan/Config/LrSchedule.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace titan::rt {

/// The memory regions of a rank (the order of the step function's
/// pointers).
enum class Region { Arena = 0, State = 1, Inputs = 2 };

/// "arena", "state" or "inputs": how messages name `region`.
inline const char *getRegionName(Region region) {
  static const char *const names[3] = {"arena", "state", "inputs"};
  return names[static_cast<int>(region)];
}

/// An argument or result of the step, and where it lives.
struct TensorPlace {
  std::string name;
  /// "param", "state", "buffer" or "input" for arguments; "" for results.
  std::string role;
  int32_t dtype = TITANRT_F32;
  std::vector<int64_t> shape;
  Region region = Region::Arena;
  int64_t offset = 0;
  int64_t bytes = 0;

  /// The number of elements (1 for a 0-d tensor).
  int64_t numElements() const;
};

/// The bases and sizes of a rank's three regions, wherever they live (host
/// memory: Regions, core/StepMemory.h; a GPU's: cuda::DeviceArena).
class RegionTable {
public:
  uint8_t *getBase(Region region) const {
    return bases[static_cast<int>(region)];
  }
  int64_t getBytes(Region region) const {
    return sizes[static_cast<int>(region)];
  }
  /// Where `place` lives.
  uint8_t *address(const TensorPlace &place) const {
    return getBase(place.region) + place.offset;
  }
  /// Fails unless [offset, offset + bytes) lies in `region`; `op` ("upload")
  /// says what would have touched it.
  Status checkRange(const char *op, Region region, int64_t offset,
                    int64_t bytes) const {
    int64_t regionBytes = getBytes(region);
    if (offset >= 0 && bytes >= 0 && offset <= regionBytes &&
        bytes <= regionBytes - offset)
      return Status::success();
    return Status::invalidArgument(
        std::string("cannot ") + op + " " + std::to_string(bytes) +
        " bytes at offset " + std::to_string(offset) + " of the " +
        getRegionName(region) + " (" + std::to_string(regionBytes) + " bytes)");
  }

protected:
  uint8_t *bases[3] = {nullptr, nullptr, nullptr};
  int64_t sizes[3] = {0, 0, 0};
};

/// A box of a global tensor.
struct Box {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
};

/// How the ranks read an input from the global batch.
struct InputLayout {
  std::vector<int64_t> globalShape;
  /// The box each rank reads, by rank.
  std::vector<Box> boxes;
  /// Context parallelism's stored order (titan.sequence_order): dim
  /// `orderDim` is cut into chunks and position k holds chunk order[k].
  std::optional<int64_t> orderDim;
  std::vector<int64_t> order;
  /// For ids that index a table (titan.id_range): every value is in
  /// [idRange[0], idRange[1]) or equals idRange[2] when given.
  std::vector<int64_t> idRange;
};

/// Everything the runtime needs to know about a compiled program.
struct ProgramDescription {
  /// The job's mesh; under pipeline parallelism its first axis is "pp".
  MeshShape mesh;
  /// Under pipeline parallelism, the pipeline rank whose program this is:
  /// it runs on the ranks of that pp coordinate only.
  std::optional<int64_t> pipelineRank;
  /// The backend the program was compiled for: "cpu" or "cuda" (titan-compile
  /// --backend); its compute calls and kernels run there.
  std::string backend = "cpu";
  int64_t arenaBytes = 0;
  int64_t stateBytes = 0;
  int64_t inputBytes = 0;
  /// The mesh axes (indices) of every communicator, by index.
  std::vector<std::vector<int>> communicators;
  std::vector<TensorPlace> arguments;
  std::vector<TensorPlace> results;
  /// Layouts of the inputs, by name.
  std::map<std::string, InputLayout> inputs;
  /// What a run does unless its command line says otherwise (the training
  /// config's values).
  double defaultLearningRate = 8e-4;
  int64_t defaultSteps = 1;
  int64_t defaultSeed = 0;
  /// The config's learning-rate schedule (a constant rate by default).
  mlir::titan::LrSchedule lrSchedule;

  /// The number of ranks of the mesh.
  int64_t getWorldSize() const;
  /// The pipeline coordinate of job rank `rank` (0 without pipeline
  /// parallelism).
  int64_t getPipelineCoordinate(int64_t rank) const;
  /// The argument or result called `name`, or null.
  const TensorPlace *findArgument(const std::string &name) const;
  /// The model's token ids: the one input that is not the training step's
  /// own (`labels`, `lr`, `step`), whatever the model calls it (`tokens`,
  /// nanoGPT's `idx`, Hugging Face's `input_ids`); null unless there is
  /// exactly one.
  const TensorPlace *findTokenInput() const;
  const TensorPlace *findResult(const std::string &name) const;
  /// The argument whose copy `copy` (role param_copy, `copy.<name>`:
  /// ParamSlot::Copy, include/titan/Dialect/ArgRole.h) is, or null.
  const TensorPlace *findCopiedArgument(const TensorPlace &copy) const;
};

/// Parses `text`; errors name the line and what is wrong with it.
Status parseProgramDescription(const std::string &text,
                               ProgramDescription &description);

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_PROGRAMDESCRIPTION_H
