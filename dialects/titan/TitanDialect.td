//===- TitanDialect.td - titan dialect definition ----------*- tablegen -*-===//
//
// The titan dialect: a global tensor program annotated with DTensor
// placements over a device mesh, and after spmdize, the local program of one
// rank with explicit collectives.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT
#define TITAN_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Titan_Dialect : Dialect {
  let name = "titan";
  let cppNamespace = "::mlir::titan";
  let summary = "Sharding dialect for ahead-of-time distributed LLM training";
  let description = [{
    The titan dialect describes a training step of a large language model as
    one tensor program over a device mesh. Values of the global program carry
    DTensor placements (`#titan.placements`), one per mesh axis; the only op
    that changes a placement is `titan.redistribute`. After `titan-spmdize`,
    the program is the local program of one rank: shapes are local and
    communication is explicit (`titan.all_gather`, `titan.reduce_scatter`, ...).

    Placements are attached with the discardable attribute `titan.placements`
    (an array with one `#titan.placements` per result) on operations and as an
    argument/result attribute of the same name on functions. The dialect
    verifies them against the mesh they name. Function arguments and results
    also carry `titan.name` (a parameter's fully qualified name, an input's
    name, "logits") and arguments `titan.role` ("param", "state", "buffer",
    "input").
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The discardable attribute that holds placements of values.
    static constexpr ::llvm::StringLiteral kPlacementsAttrName =
        "titan.placements";
    /// On an op between titan-propagate-placements and
    /// titan-materialize-redistributes: the placements the op needs of each
    /// operand (one entry per operand), where one differs from the
    /// operand's own.
    static constexpr ::llvm::StringLiteral kOperandPlacementsAttrName =
        "titan.operand_placements";
    /// The name of a function argument or result: a parameter's fully
    /// qualified name (e.g. "layers.0.attention.wq.weight"), a model input's
    /// TorchScript name, "logits", "loss".
    static constexpr ::llvm::StringLiteral kNameAttrName = "titan.name";
    /// What a function argument is: "param" (trainable), "state" (optimizer
    /// state), "buffer" (not trained, e.g. RoPE tables) or "input" (data,
    /// e.g. tokens, labels, lr).
    static constexpr ::llvm::StringLiteral kRoleAttrName = "titan.role";
    /// On a function argument or result whose dim is stored permuted by
    /// chunks (`array<i64: dim, c0, c1, ...>`): the dim is split into equal
    /// chunks and position k holds chunk c_k of the natural order (context
    /// parallelism's load-balanced sequence, see titan-balance-sequence).
    static constexpr ::llvm::StringLiteral kSequenceOrderAttrName =
        "titan.sequence_order";
    /// On an argument or result of a per-rank program whose dims are
    /// sharded unevenly (`array<i64: ...>`, one size per dim): its global
    /// shape, which the local (padded) type times the ranks no longer
    /// gives (titan-spmdize; see titan/Dialect/GlobalShape.h).
    static constexpr ::llvm::StringLiteral kGlobalShapeAttrName =
        "titan.global_shape";
    /// On a per-rank program with uneven shards (array<i64>, one entry per
    /// rank): the floating-point operations each rank spends per call on
    /// padding (titan-spmdize, from each op's FLOPs and the chunks of the
    /// factors its sharding rule shards).
    static constexpr ::llvm::StringLiteral kPaddingFlopsAttrName =
        "titan.padding_flops";
    /// On an op of the backward that recomputes a forward value (unit;
    /// titan-select-recompute): keeps CSE from folding it into the forward
    /// op it clones.
    static constexpr ::llvm::StringLiteral kRecomputeAttrName =
        "titan.recompute";
    /// On a redistribution of a parameter (and the collectives it lowers
    /// to) that titan-partition-pipeline runs for each microbatch (i64 >= 0:
    /// the microbatch): keeps CSE from folding the copies of different
    /// microbatches into one.
    static constexpr ::llvm::StringLiteral kMicrobatchAttrName =
        "titan.microbatch";
    /// On a collective with a result (unit; titan-schedule-overlap): the
    /// executable issues it asynchronously, on the communication stream;
    /// its result's only use is the `titan.wait` where it must be complete.
    static constexpr ::llvm::StringLiteral kAsyncAttrName = "titan.async";
    /// On @train_step (a dictionary; titan-select-recompute's budgeted
    /// modes): what was chosen: `budget_mib` and `kept_mib` per rank,
    /// `recompute_seconds` predicted, `solver` (CBC's status and size).
    static constexpr ::llvm::StringLiteral kRecomputePlanAttrName =
        "titan.recompute_plan";
    /// On an integer function argument that indexes a table
    /// (`array<i64: lo, hi>` or `array<i64: lo, hi, ignore>`): every element
    /// is in [lo, hi) (or equals `ignore`); the runtime and the interpreter
    /// check inputs against it (titan-mark-id-ranges).
    static constexpr ::llvm::StringLiteral kIdRangeAttrName = "titan.id_range";
    /// On a buffer argument whose value the model file fixes and which is
    /// constant along each diagonal of its last two dims (a dense tensor of
    /// 2n - 1 elements of the argument's element type, the dims of size n,
    /// every other dim of size 1): element [..., i, j] is
    /// `diagonals[j - i + n - 1]`; on a buffer of one element (any rank),
    /// its value. The importer sets it (a causal mask stored as a buffer,
    /// nanoGPT's `attn.bias`; GPT-NeoX's `norm_factor`), so that passes can
    /// prove what the buffer is (titan-fuse-attention) and the importer
    /// fold `item()` of it.
    static constexpr ::llvm::StringLiteral kDiagonalsAttrName =
        "titan.diagonals";
    /// On the module (a dictionary of strings; the TorchScript importer):
    /// the tensors of the model file's state_dict besides its parameters
    /// under their own names, by key, to the name of the @forward argument
    /// holding it: the other names of tied parameters (GPT-2's
    /// `lm_head.weight` to `transformer.wte.weight`) and the buffers. The
    /// checkpoint layout saves them under these keys too, so that a
    /// checkpoint holds what the model's state_dict holds.
    static constexpr ::llvm::StringLiteral kStateDictAttrName =
        "titan.state_dict";
    /// On a kernel function made by titan-fuse-kernels (a unit attribute):
    /// it is called by `titan.launch` only.
    static constexpr ::llvm::StringLiteral kKernelAttrName = "titan.kernel";
    /// On a kernel (array<i64>): pairs (input parameter, output parameter)
    /// that may share one buffer, because every element of the output reads
    /// only the same element of the input; the output parameter of result
    /// i is number (inputs + i) of the lowered kernel.
    static constexpr ::llvm::StringLiteral kInPlaceAttrName = "titan.in_place";
    /// On an op of the executable program (an array with one
    /// #titan.buffer per result) and on function arguments and results (one
    /// #titan.buffer): where titan-plan-memory placed the value.
    static constexpr ::llvm::StringLiteral kBuffersAttrName = "titan.buffers";
    static constexpr ::llvm::StringLiteral kBufferAttrName = "titan.buffer";
    /// On a `titan.launch` or runtime op (an array of #titan.buffer): the
    /// scratch memory the call needs while it runs.
    static constexpr ::llvm::StringLiteral kScratchAttrName = "titan.scratch";
    /// On the planned function (a dictionary): the sizes of the rank's
    /// memory regions and where its arena use peaks.
    static constexpr ::llvm::StringLiteral kMemoryPlanAttrName =
        "titan.memory_plan";
  private:
    void registerAttributes();
  public:
  }];
}

/// Base class of every titan op.
class Titan_Op<string mnemonic, list<Trait> traits = []>
    : Op<Titan_Dialect, mnemonic, traits>;

#endif // TITAN_DIALECT
