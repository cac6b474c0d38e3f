//===- Passes.td - titan passes ----------------------------*- tablegen -*-===//
//
// Every titan pass: one def here, one .cpp file in passes/, one lit test file
// named after its flag in test/Passes/.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES
#define TITAN_PASSES

include "mlir/Pass/PassBase.td"

def BuildTrainStepPass : Pass<"titan-build-train-step", "::mlir::ModuleOp"> {
  let summary = "Builds @train_step: loss, reverse-mode gradients, AdamW";
  let description = [{
    From the model's `@forward(params..., buffers..., tokens) -> logits`
    (as the importer writes it: arguments carry `titan.name` and
    `titan.role`), builds the step below; its buffers are those the forward
    reads (a causal mask buffer that titan-fuse-attention proved and
    replaced is not read any more). No cotangent flows through a
    `titan.stop_gradient` (`detach`, the padding row of an embedding);
    once the gradients are built, each is replaced by its input.

    ```
    @train_step(params..., exp_avg..., exp_avg_sq..., buffers..., tokens,
                labels, lr, step)
        -> (loss, param'..., exp_avg'..., exp_avg_sq'... [, grad...]
            [, grad_norm])
    ```

    - loss: mean token cross-entropy of the logits `[batch, seq, vocab]`
      against `labels` `[batch, seq]`, tokens labelled `ignore-index` not
      counted (`torch.nn.functional.cross_entropy`), in float32: bf16 or
      f16 logits are widened first, as torchtitan's loss does;
    - gradients by reverse-mode differentiation: the ops on a path from a
      parameter to the loss are visited in reverse and each emits its
      vector-Jacobian product through `DifferentiableOpInterface`;
      cotangents of values used more than once are summed (tied weights get
      the sum of both uses). An op without a VJP rule on such a path is an
      error that names it;
    - optional clipping of the global gradient norm to `max-norm`
      (`torch.nn.utils.clip_grad_norm_`);
    - AdamW with PyTorch's semantics: decoupled weight decay
      `p *= 1 - lr * weight_decay`, moments `m = beta1 m + (1 - beta1) g`,
      `v = beta2 v + (1 - beta2) g^2`, bias corrections with
      `t = step + 1`, `p -= lr / (1 - beta1^t) * m / (sqrt(v) /
      sqrt(1 - beta2^t) + eps)`: one `titan.adamw` per parameter, the
      clipping coefficient its `grad_scale` (titan-fuse-kernels expands
      it, or keeps it for the runtime's kernel). A parameter no cotangent
      reaches has no gradient and, as torch.optim.AdamW skips a parameter
      whose `.grad` is None, no `titan.adamw`: the step returns it and its
      moments unchanged, and it adds nothing to the clipping norm.

    Scalar results of `@forward` after the logits (auxiliary losses: a
    mixture of experts' load-balancing loss, a router z-loss) are added to
    the cross-entropy, in f32: the step trains and reports their sum.

    `lr` and `step` are 0-d f32 arguments (`step` counts the updates done
    before this one, so the first call passes 0). The forward's random
    numbers (`titan.random_uniform`, dropout) take `step` and the `seed`
    option, so that each step draws new ones. Results are named `loss`,
    `param.<fqn>`, `exp_avg.<fqn>`, `exp_avg_sq.<fqn>`, with `emit-grads`
    `grad.<fqn>` (the clipped gradient) and, with clipping, `grad_norm`
    (the global norm before clipping, which clip_grad_norm_ returns and
    torchtitan logs). `@forward` is kept.

    With `evaluate` it builds a validation step instead (torchtitan's
    Validator, under `torch.no_grad()`): the forward and the loss, no
    gradients and no optimizer, on the parameters alone:

    ```
    @train_step(params..., buffers..., tokens, labels) -> (loss)
    ```
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "Name of the forward function">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.95", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1",
           "AdamW decoupled weight decay">,
    Option<"maxNorm", "max-norm", "double", "0.0",
           "Clip the global gradient norm to this value (<= 0: no clipping)">,
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "Label value whose tokens do not count in the loss">,
    Option<"emitGrads", "emit-grads", "bool", "false",
           "Also return the gradient of every parameter (grad.<fqn>)">,
    Option<"seed", "seed", "int64_t", "0",
           "The seed of the step's random numbers (dropout)">,
    Option<"evaluate", "evaluate", "bool", "false",
           "Build a validation step: the loss alone, no gradients or "
           "optimizer">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

def BalanceSequencePass : Pass<"titan-balance-sequence", "::mlir::ModuleOp"> {
  let summary = "Stores the sequence permuted by chunks so that context "
                "parallel ranks get equal causal attention work";
  let description = [{
    Causal attention makes the work of a query grow with its position: a
    contiguous split of the sequence over `ways` context-parallel ranks gives
    the last rank most of it. This pass cuts the sequence into 2 x `ways`
    equal chunks and stores it in the order 0, 2w-1, 1, 2w-2, ..., w-1, w,
    so that rank r's contiguous shard holds chunks r and 2w-1-r (an early,
    cheap one and a late, expensive one), as PyTorch's load-balanced context
    parallelism does.

    The sequence is dim 1 of the function's [batch, seq] model inputs
    (arguments with `titan.role = "input"` of rank 2: the tokens and the
    labels, one sequence even where the program merges it with the batch,
    `x.view(-1, dim)`, and splits it again). Every value dim that shares a
    factor alone with it through the ops' sharding rules indexes sequence
    positions, and so does the dim a reshape splits out of a dim that holds
    the sequence merged with others the same way (GPTBigCode's scores
    [b, t * h, t] viewed [b, t, h, t], of q viewed [b, t * h, d]). Where positions enter the program (a result dim of
    the sequence that no operand carries: an iota, the slice of a RoPE or
    position table, a non-splat constant such as a causal mask) the value is
    permuted the same way (slices and a concat, computed locally); so every
    position-dependent quantity follows its token and the program computes
    the same loss and gradients as before. The gradient of a table sliced
    by position (a pad of the whole sequence at the table's start, the VJP
    of `positions[:, :T]`) takes the sequence back to its natural order
    first. Arguments and results with a
    sequence dim get `titan.sequence_order = array<i64: dim, chunks...>`: the
    caller (the runtime's data loader, `titan-eval`) stores them permuted.

    A static sequence length that 2 x `ways` does not divide keeps its
    natural order (a remark says so): context parallelism then shards it
    unevenly (torch.chunk), correct but with the causal work unbalanced.

    Errors: a dynamic sequence length; an op that
    depends on positions along the sequence (a partial slice, a pad other
    than that gradient's, or a concat along it, a reshape that splits it, a causal `titan.attention`
    or `titan.attention_grad` over it, whose mask follows the stored order;
    the pipeline leaves attention explicit under context parallelism); an
    op without a sharding rule. `ways` <= 1 leaves the module alone; a function whose input is
    already marked is left alone.
  }];
  let options = [
    Option<"ways", "ways", "int64_t", "1",
           "context_parallel_degree: the number of ranks that split the "
           "sequence">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

def SelectRecomputePass : Pass<"titan-select-recompute", "::mlir::ModuleOp"> {
  let summary = "Activation checkpointing: recomputes forward values in the "
                "backward instead of keeping them";
  let description = [{
    On `@train_step` (titan-build-train-step's), trades memory for compute
    as torchtitan's `[activation_checkpoint]` does, as a program transform:
    a forward value of a checkpointed transformer block that the backward
    reads is not kept from the forward; the forward ops that compute it are
    cloned, from what the block keeps, right before the first backward op of
    the block that reads one of them, and the backward reads the clones.
    A block always keeps its inputs (the previous block's output,
    parameters, buffers, gathered parameters: FSDP's reshard is
    titan-reshard-after-forward's) and its outputs. Blocks are the ops
    stamped with module path `layers.<i>` (or any `<name>.<i>` a ModuleList
    holds). Clones carry the phase `backward` and the unit attribute
    `titan.recompute`, which keeps CSE from folding them into the forward's
    ops; the loss, gradients and update are unchanged bit for bit (the same
    ops on the same values). In titan's pipeline the pass runs on the
    placed program (after titan-materialize-redistributes), so clones of
    redistributions recompute their communication, and bytes and seconds
    are one rank's (a program without placements counts as one rank's).

    `mode`:
    - `none`: nothing.
    - `full`: every block keeps only its inputs and outputs.
    - `selective` with `selective-ac-option` `op`: every block also keeps
      what torchtitan's op policy saves: the results of attention, of max
      reductions, of reduce-scatters and of every other matmul (the 1st,
      3rd, ...). With an integer N: blocks N, 2N, ... (1-based, as
      torchtitan's every-N wrapper counts) are checkpointed fully.
    - `memory_budget`: torchtitan's: `memory-budget` is a fraction of what
      no checkpointing keeps per rank (0: what full checkpointing keeps;
      1: everything); within it, what to keep is solved as below.
    - `auto`: at most `kept-bytes` bytes per rank are kept for the
      backward (titan-compile fits this to `memory_budget_gib` against the
      exact memory plan).
    The budgeted modes solve an integer program with CBC (keep or recompute
    each value of each block; an op recomputed needs its operands kept or
    recomputed; minimizing the recomputation's predicted seconds on
    `device`, collectives over the links `ranks-per-node` implies) for at
    most `solver-seconds`; when CBC stops at the limit the best choice found
    is used, and when it found none (or failed) every block is checkpointed
    fully. The choice is written to `@train_step` as `titan.recompute_plan`
    (budget and kept MiB, predicted recompute seconds, solver status).

    Errors: an unknown mode or option; a memory budget outside [0, 1];
    `auto` without `kept-bytes`; an unknown device; a module without
    `@train_step` when the mode is not `none`.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"none\"",
           "none, full, selective, memory_budget or auto "
           "([activation_checkpoint] mode)">,
    Option<"selectiveOption", "selective-ac-option", "std::string",
           "\"op\"",
           "op, or every N-th block ([activation_checkpoint] "
           "selective_ac_option)">,
    Option<"memoryBudget", "memory-budget", "double", "0.5",
           "memory_budget mode: the fraction of no checkpointing's kept "
           "bytes ([activation_checkpoint] memory_budget)">,
    Option<"keptBytes", "kept-bytes", "int64_t", "-1",
           "auto mode: bytes per rank kept for the backward">,
    Option<"device", "device", "std::string", "\"cpu\"",
           "The device the budgeted modes time ops on (a bundled name or a "
           "device file)">,
    Option<"ranksPerNode", "ranks-per-node", "int64_t", "0",
           "Ranks per node (0: the device file's)">,
    Option<"solverSeconds", "solver-seconds", "double", "20",
           "The budgeted modes' time limit for CBC">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def PartitionPipelinePass : Pass<"titan-partition-pipeline",
                                  "::mlir::ModuleOp"> {
  let summary = "Pipeline parallelism: the program of one pipeline rank, "
                "its stages run on microbatches by a schedule";
  let description = [{
    Rewrites `@train_step` (a placed training step built for one microbatch,
    after `titan-select-recompute`) into the program of pipeline rank `rank`
    of `degree`, as torch.distributed.pipelining runs it: the model is cut
    into `stages` stages at transformer-block boundaries (stage `s` holds
    `stage-blocks[s]` consecutive blocks; without them, the split whose
    slowest stage is fastest by the cost model's predicted seconds per rank
    on `device`; the ops before the first block are stage 0's, those after
    the last block, the loss included, the last stage's; the split is
    written on the program as `titan.pipeline`), stage `s` runs on rank
    `s % degree`
    (`Interleaved1F1B`, `InterleavedZeroBubble`, `GPipe`, `1F1B`) or, for
    `ZBVZeroBubble`, in a V (rank `r` holds stages `r` and
    `2 * degree - 1 - r`), and the rank runs the compute actions `schedule`
    gives it, in order, for `microbatches` microbatches:

    - `F(s, m)`: the forward ops of stage `s` on microbatch `m`: the
      values it needs from earlier stages are received (`titan.recv`), the
      values later stages need are sent (`titan.send`) to the next stage's
      rank;
    - `B(s, m)`: the backward ops of stage `s`; zero-bubble schedules split
      it into `I(s, m)`, the ops the gradients sent to the previous stage
      need, and `W(s, m)`, the rest (weight gradients).

    The token-shaped inputs (rank >= 1 `input` arguments) take
    `microbatches` times the batch: each data-parallel rank's rows are cut
    into consecutive microbatches, as torchtitan splits a local batch.
    Values that do not depend on the tokens (parameter casts and gathers,
    constants, tables) are computed once per step, not per microbatch;
    with `fsdp-per-microbatch` (FSDP resharding after the forward), a
    parameter's all-gather (of its shards, through casts and views, read by
    the forward or the backward) runs in each microbatch's forward, as
    FSDP2 gathers for each forward, and titan-reshard-after-forward then
    gathers it again for that microbatch's backward; without a pipeline
    (one stage: gradient accumulation) each microbatch's gradients are
    then also reduced across the ranks and their shards summed, so the
    rank never holds a whole gradient sum.
    Parameter gradients are summed over the microbatches before their
    reduction across data-parallel ranks (as FSDP2 under a pipeline
    schedule, which syncs them at the last backward only; after it with
    `fsdp-per-microbatch` and one stage), in the type they are
    reduced in, then divided by the number
    of microbatches (torch's `scale_grads`); the loss is the mean of the
    microbatch losses. A cross-entropy (`titan.cross_entropy`, and its
    gradient's cotangent) is weighted by its microbatch's share of the
    step's labels (the labels not `ignore_index`, counted over the
    data-parallel ranks, times the number of microbatches; a microbatch
    without labels adds nothing), so that the loss and the gradients are
    the mean over all the step's labels, as without microbatches, however
    the ignored labels fall (torchtitan's division by the global count of
    valid tokens); that needs labels computed from the inputs alone, else
    the microbatch means are averaged. The optimizer runs once, on the rank's own
    parameters; a sum over all parameters (the gradient norm of clipping)
    is summed per rank and exchanged between the pipeline ranks (summed
    in rank order, so every rank gets the same bits; the exchanges run in
    the order of the step on every rank, before the results); the loss is sent
    from the last stage's rank to the others. The pass builds every
    rank's program and orders their transfers alike
    (include/titan/Dialect/PipelineTransfers.h), so that NCCL runs them as
    Gloo does: a rank receives each peer's messages in the order the peer
    sends them (NCCL has no tags), and no NCCL group (a rank's sends with
    its next receive) waits for a peer's later group. The program keeps
    only the
    rank's parameters, optimizer state and buffers; point-to-point ops name
    the mesh `@pipeline ["pp" = degree]` (the peer holds the same
    coordinates of the other mesh axes).

    With `schedule-csv`, each rank's actions are read from a file in the
    CSV form of torch's `_PipelineScheduleRuntime` (one row per rank;
    communication, UNSHARD, RESHARD and REDUCE_GRAD cells are accepted and
    the pass places its own transfers by the data flow), checked, and run
    instead of `schedule`'s.

    With `degree` 1 the pass is gradient accumulation
    (`training.global_batch_size`): one stage holds the whole model (it
    needs no transformer blocks), its microbatches run one after the other
    (1F1B: each microbatch's forward, then its backward), their gradients
    are summed and the optimizer runs once; nothing is sent.

    Errors: an unknown schedule; microbatches or stages the schedule cannot
    run (torch's rules); a schedule CSV that cannot be read, is malformed,
    or has another number of stages than `stages`; fewer blocks than stages; `stage-blocks` that do
    not add up to the blocks; a parameter used by two stages (tied
    weights); a value that would flow backward between stages; an optimizer
    op that combines several stages' gradients other than by a sum.
  }];
  let options = [
    Option<"degree", "degree", "int64_t", "1",
           "Pipeline ranks ([parallelism] pipeline_parallel_degree)">,
    Option<"rank", "rank", "int64_t", "0",
           "The pipeline rank whose program is built">,
    Option<"microbatches", "microbatches", "int64_t", "1",
           "Microbatches per step (local_batch_size / "
           "pipeline_parallel_microbatch_size)">,
    Option<"schedule", "schedule", "std::string", "\"1F1B\"",
           "GPipe, 1F1B, Interleaved1F1B, InterleavedZeroBubble or "
           "ZBVZeroBubble (case-insensitive)">,
    Option<"scheduleCsv", "schedule-csv", "std::string", "\"\"",
           "A schedule in torch's CSV form (pipeline_parallel_schedule_csv): "
           "each rank's actions instead of `schedule`'s">,
    Option<"fsdpPerMicrobatch", "fsdp-per-microbatch", "bool", "false",
           "Gather the parameters' shards for each microbatch instead of "
           "once per step (FSDP resharding after the forward: "
           "fsdp_reshard_after_forward always, or not never under gradient "
           "accumulation), and with one stage reduce the gradients for "
           "each microbatch too">,
    Option<"stages", "stages", "int64_t", "0",
           "Stages (0: degree for single-stage schedules, 2 x degree for "
           "the others)">,
    ListOption<"stageBlocks", "stage-blocks", "int64_t",
               "Transformer blocks per stage (default: balanced by the "
               "predicted seconds of each stage on `device`)">,
    Option<"device", "device", "std::string", "\"cpu\"",
           "The device stages are balanced for (a bundled name or a device "
           "file)">,
    Option<"ranksPerNode", "ranks-per-node", "int64_t", "0",
           "Ranks per node (0: the device file's)">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def SinkToFirstUsePass : Pass<"titan-sink-to-first-use",
                              "::mlir::ModuleOp"> {
  let summary = "Moves every side-effect-free op right before its first user";
  let description = [{
    On `@train_step`, shortens the lives of values before memory planning:
    every op without side effects (compute ops, and collectives, which every
    rank moves alike) moves right before the first op that reads one of its
    results, last op first, so that chains move together, when that frees
    at least as much as it holds: the bytes of its results against those of
    the operands it reads last, which then live longer (arguments live
    through the step anyway). Partitioning
    leaves the redistributions of arguments (FSDP's all-gathers of
    parameters, their views and casts) at the top of the step, where each
    would hold its result from the first op to its use; after this pass a
    parameter is gathered right before the block that uses it. Ops nobody
    reads and ops with side effects stay where they are; the values
    computed are unchanged.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def BucketCollectivesPass : Pass<"titan-bucket-collectives",
                                 "::mlir::ModuleOp"> {
  let summary = "One collective per transformer block for its parameters' "
                "gathers and its gradients' reductions, as FSDP2 and DDP "
                "communicate";
  let description = [{
    On `@train_step` after `titan-sink-to-first-use` and
    `titan-normalize-collectives` (every all_gather and reduce_scatter on
    contiguous chunks), replaces collectives of one kind, mesh, axes,
    reduction and element type that belong to one segment (a run of ops of
    one phase and transformer block: FSDP's unit) by one collective over
    their concatenation, so each unit pays one collective's latency instead
    of one per parameter:

    - `all_gather`s (a result larger than the operand: issued where it is
      first needed) belong to the segment of their first reader. The bucket
      is issued where the first of them stood; the pure ops computing the
      others' operands (a parameter's cast) move with it. Each operand is
      flattened, the flat operands are concatenated, gathered along dim 0,
      and each result is cut from the gathered `[group, total]` matrix (its
      columns) right before its first reader.
    - `reduce_scatter`s and `all_reduce`s (issued as soon as their operand
      is there) belong to the segment where their operand is computed. The
      bucket is issued right after the last of those operands is computed,
      when no result is read before there. A reduce_scatter's operand is
      viewed as `[group, n]` (its chunks) and the operands are concatenated
      along dim 1, so rank i's chunk holds every operand's chunk i; each
      result is a range of the reduced bucket, cut right before its first
      reader. An all_reduce of each result of a reduce_scatter bucket
      (HSDP's reduction over the replicas, through reshapes) becomes one
      all_reduce of the bucket's result.

    A collective is left alone when it is asynchronous already, a pipeline
    transfer, reads another collective's result, or when no other can join
    it (its operand is computed after, or its result read before, the
    others'). Buckets grow in program order up to `max-bytes` of operands
    (0: no limit). Every rank runs the same program, so the ranks of a group
    issue the same buckets; the values computed are the same bit for bit.

    With `device`, a bucket is kept only where the cost model predicts it
    faster than its members: the latency of the collectives it saves (the
    members' predicted times against one collective of all their bytes)
    must exceed the copies that fill it and cut its results (its operand
    and result bytes, each read and written once).
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", "0",
           "The most operand bytes one bucket holds (0: a segment's "
           "collectives of one kind form one bucket)">,
    Option<"deviceName", "device", "std::string", "\"\"",
           "The device whose cost model decides each bucket (a bundled "
           "name or a device file; empty: every bucket is kept)">,
    Option<"ranksPerNode", "ranks-per-node", "int64_t", "0",
           "Ranks per node, for which link a group spans (0: the "
           "device's)">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def ScheduleOverlapPass : Pass<"titan-schedule-overlap", "::mlir::ModuleOp"> {
  let summary = "Issues collectives early and waits for them late, so they "
                "run behind computation";
  let description = [{
    On `@train_step` after `titan-sink-to-first-use` (every collective right
    before its first reader), splits the program into segments, runs of ops
    of one phase and transformer block (FSDP's unit), and for each
    collective with a result (not a pipeline transfer):

    - issues it at the start of the segment `prefetch-depth` segments before
      the one that first reads it, or right after the last of its operands
      that cannot move, whichever is later; the pure ops that compute its
      operands and feed nothing else (a parameter's cast) move with it. With
      depth 1 this is FSDP2's prefetch: block i+1's parameters are gathered
      while block i computes, in the forward and (after
      `fsdp_reshard_after_forward`) in the backward. An all-reduce that the
      optimizer reads first (a DDP gradient's) is issued, with those pure
      ops, as soon as the values they read are computed, unless one of
      them reads another collective's result (a gradient norm's), as DDP
      reduces a bucket once its gradients are ready:
      titan-sink-to-first-use moves it (it holds as much as it frees) and
      the batch sum before it down to the optimizer, where nothing would
      compute behind it (a reduce-scatter, which frees more than it holds,
      stays right after its operand);
    - waits for it (`titan.wait`) right before its first reader, but no
      later than the start of the segment `prefetch-depth` + 1 after the one
      it stands in (an all-reduce: is issued in): a gradient's reduce-scatter
      or all-reduce completes while the next block's backward computes, and
      the gradient it reads is freed then rather than at the optimizer.

    A collective that reads another one's result (HSDP's all-reduce over the
    replicas of the gradient an fsdp reduce-scatter produced; through
    reshapes) is first moved down, with those reshapes, to where the first
    one would be waited for at the latest, when something computes between
    there and its own first reader: the first one then runs behind the
    computation up to there, and the second one from there on.

    A collective gets `titan.async` and its wait only when some op computes
    between the two (a tensor-parallel all-reduce read by the next op stays
    synchronous), and only when the bytes the new schedule keeps alive
    (results issued early, operands read until a later wait) stay within
    `memory-budget` at every op (negative: no limit); the memory planner
    counts them. All ranks of a group run the same program, so they issue
    a communicator's collectives in the same new order; the values computed
    are unchanged.
  }];
  let options = [
    Option<"prefetchDepth", "prefetch-depth", "int64_t", "1",
           "Segments (blocks) ahead of its reader a collective is issued "
           "(0: the pass changes nothing)">,
    Option<"memoryBudget", "memory-budget", "int64_t", "-1",
           "Bytes the schedule may keep alive beyond the program's order at "
           "any op (negative: no limit)">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def DecomposeCollectiveMatmulPass
    : Pass<"titan-decompose-collective-matmul", "::mlir::ModuleOp"> {
  let summary = "Async tensor parallelism: all-gather -> matmul and matmul "
                "-> reduce-scatter as chunks whose communication runs "
                "behind the other chunks' matmuls";
  let description = [{
    On `@train_step` after `titan-sink-to-first-use`, for each collective
    over the one mesh axis `axis` (torchtitan's `enable_async_tensor_parallel`
    on the `tp` axis; the collective matmuls of micro-pipelined TP):

    - an `all_gather` along dim d whose result some matmul reads as its left
      operand, rows along d (not its contracting dim): the local shard is cut
      into k chunks along d, each chunk is all-gathered asynchronously
      (`titan.async`, issued where the whole gather was), and where the
      gathered tensor is first read, for each chunk in turn the pass waits
      for it and computes its rows of every such matmul; each matmul's result
      is joined from its chunks (a concat). Readers of the whole gathered
      tensor (a weight gradient's matmul, saved for the backward) read it
      joined from the chunks.
    - a `reduce_scatter` along dim d whose operand is computed by matmuls
      (and elementwise ops between them) read by nothing else, rows along d:
      those ops are computed chunk by chunk where the last of them stood,
      each chunk's rows reduce-scattered asynchronously as soon as they are
      computed, and the chunks are waited for and joined where the whole
      reduce-scatter stood.

    Chunk j holds rows [j s/k, (j+1) s/k) of every rank's block of s rows,
    so the values computed are the same rows of the same products. The
    number of chunks k is `chunks`, or, when that is 0, the count in
    [2, `max-chunks`] dividing s that the cost model on `device` predicts
    fastest (the first all-gather or last reduce-scatter exposed, the
    others behind max(chunk collective, chunk matmuls), plus the copies that
    cut and join); a collective none of those beats stays whole. A collective
    already asynchronous, over other axes, or with some computation between
    it and its reader (or between the ops computing its operand and it),
    which titan-schedule-overlap hides it behind, is left as it is.

    Errors: an `axis` the mesh lacks; an unknown device; `max-chunks` below
    1.
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"tp\"",
           "The mesh axis whose collectives are decomposed">,
    Option<"chunks", "chunks", "int64_t", "0",
           "Chunks per collective (0: chosen by the cost model; a count "
           "that does not divide a collective's rows leaves it whole)">,
    Option<"maxChunks", "max-chunks", "int64_t", "8",
           "The most chunks the cost model considers">,
    Option<"deviceName", "device", "std::string", "\"cpu\"",
           "The device the cost model times chunks on (a bundled name or a "
           "device file)">,
    Option<"ranksPerNode", "ranks-per-node", "int64_t", "0",
           "Ranks per node (0: the device file's)">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def ReshardAfterForwardPass : Pass<"titan-reshard-after-forward",
                                   "::mlir::ModuleOp"> {
  let summary = "FSDP's reshard after forward: parameters are gathered again "
                "for the backward";
  let description = [{
    On the per-rank `@train_step` (after titan-redistribute-to-collectives),
    trades communication for memory as FSDP2's `reshard_after_forward=True`
    does: a parameter that an all_gather collected in the forward is not
    kept until the backward. Where the backward reads the gathered value
    (or a value the forward derived from it by ops of one operand: views,
    the slices that drop the padding of uneven shards), the all_gather and
    those ops are cloned right before the first backward op that reads one
    of them, and the backward reads the clones; the forward's copy dies at
    its last forward use. Clones carry the phase `backward` and the unit
    attribute `titan.recompute`, which keeps CSE from folding them into the
    forward's ops; the loss, gradients and update are unchanged bit for bit.

    `policy` (`[parallelism] fsdp_reshard_after_forward`): `never` (keep
    what the forward gathered), `always` (every parameter) or `default`
    (torchtitan's without pipeline parallelism: the parameters of every
    transformer block, named `<list>.<i>.*`, except the last block of each
    list, which the backward needs first; the root module's parameters,
    outside any block, stay gathered as FSDP2 keeps the root's).

    Errors: an unknown policy.
  }];
  let options = [
    Option<"policy", "policy", "std::string", "\"never\"",
           "never, default or always ([parallelism] "
           "fsdp_reshard_after_forward)">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def ApplyParallelPlanPass : Pass<"titan-apply-parallel-plan",
                                 "::mlir::ModuleOp"> {
  let summary = "Writes the device mesh and the placements of the arguments";
  let description = [{
    Turns torchtitan's `[parallelism]` degrees into a device mesh and DTensor
    placements of the training step's arguments and results; everything else
    is left to `titan-propagate-placements`.

    - Degrees: `data_parallel_replicate_degree` (dp-replicate),
      `data_parallel_shard_degree` (dp-shard; -1 = the rest of the world),
      `context_parallel_degree` (cp), `tensor_parallel_degree` (tp). Their
      product must equal `world-size`. `pipeline_parallel_degree` must be 1
      (pipeline stages are a separate issue).
    - The mesh: `titan.mesh @mesh ["dp_replicate"=r, "fsdp"=s, "cp"=c,
      "tp"=t]`, ranks row-major (`init_device_mesh` order).
    - Parameters, their optimizer state and the returned updates: FSDP is a
      placement, `S(0)` over "fsdp" (`S(1)` for a weight whose dim 0 the
      plan shards over "tp", so the two axes split disjoint dims and a
      gradient is reduce-scattered over "fsdp" alone; `R` for a 0-d
      parameter, which has no dim to shard); "tp" follows the
      tensor-parallel plan
      (FQN patterns -> placement; torchtitan's Llama plan by default); `R`
      elsewhere. Tokens and labels `[batch, seq]`: the batch split over
      "dp_replicate" and "fsdp", the sequence over "cp", replicated over
      "tp". Buffers, `lr`, `step` and the loss: replicated.
    - Axes of size 1 always get `R`.
    - With `sequence-parallel` (and tp > 1), the result of every
      `titan.rms_norm` / `titan.layer_norm` over `[batch, seq, dim]` gets
      the placements `titan.propagate-placements` treats as a hint: the
      batch like the tokens, the sequence split over "cp" and "tp"
      (Megatron sequence parallelism: the norms run on sequence shards, the
      column-parallel matmuls all-gather their input, the row-parallel ones
      reduce-scatter their output).
    - Loss parallelism is the default: the output projection's logits may
      stay sharded along the vocabulary over "tp" and `titan.cross_entropy`
      runs on the shards (see `titan-spmdize`). Without `loss-parallel`
      (torchtitan's `disable_loss_parallel`), `titan.cross_entropy` and
      `titan.cross_entropy_grad` get `replicated_vocab`, so propagation
      gathers the logits along the vocabulary before the loss, as
      torchtitan's output projection with `output_layouts=Replicate()`.

    Every sharded dimension must divide evenly; an error names the tensor,
    the dimension, its size and the config keys whose degrees do not divide
    it.
  }];
  let options = [
    Option<"worldSize", "world-size", "int64_t", "1",
           "Number of ranks">,
    Option<"dpReplicate", "dp-replicate", "int64_t", "1",
           "data_parallel_replicate_degree">,
    Option<"dpShard", "dp-shard", "int64_t", "-1",
           "data_parallel_shard_degree (-1: the rest)">,
    Option<"cp", "cp", "int64_t", "1", "context_parallel_degree">,
    Option<"tp", "tp", "int64_t", "1", "tensor_parallel_degree">,
    Option<"planFile", "plan", "std::string", "\"\"",
           "Tensor-parallel plan file (default: torchtitan's Llama plan)">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "enable_sequence_parallel: with tp > 1, ask for the outputs of "
           "the norms to be sharded along the sequence over \"tp\"">,
    Option<"lossParallel", "loss-parallel", "bool", "true",
           "Allow the cross-entropy on vocabulary-sharded logits; false "
           "(disable_loss_parallel) marks it replicated_vocab">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def SpmdizePass : Pass<"titan-spmdize", "::mlir::ModuleOp"> {
  let summary = "Rewrites annotated global programs into the program of one rank";
  let description = [{
    Input: a global program whose function arguments and results carry
    `titan.placements`, whose tensor op results carry the discardable
    `titan.placements = [#titan.placements<...>, ...]` (one per result), in
    which every op other than `titan.redistribute` is computable on its
    shards and all communication is explicit in `titan.redistribute` (what
    `titan-propagate-placements` and `titan-materialize-redistributes`
    write). A missing attribute means replicated, as `titan-eval` reads it.
    Every function with a placement on an argument, a result or an op is
    rewritten (its placements name one mesh); the others are left alone.

    Output: the program every rank runs, with local shapes:

    - types: every value gets the type of its shard (torch.chunk sizes of
      each sharded dim, several axes sharding one dim nesting in mesh-axis
      order); partial and replicated dims keep their size, element types
      stay. The pass is a dialect conversion whose type converter maps each
      value to its shard's type from its placements. Function arguments and
      results keep all their attributes (names, roles, placements), so
      `titan-eval --ranks=N` shards the global inputs and assembles the
      global outputs;
    - uneven shards (a dim the ranks of its axes do not divide): every rank
      holds the largest chunk, the ranks with a shorter (or empty) chunk
      padding past it with unspecified values, so one program fits all
      ranks. Arguments and results so sharded record their global shape in
      `titan.global_shape`. Padding never reaches a valid element: an op
      that reduces over an unevenly sharded factor first replaces the
      padding by the identity of its reduction (0 for sums and
      contractions, -inf for max; `PartitionContext::maskReducedPadding`),
      a mean divides by the global count, a lookup or loss reads ids in the
      padding as row 0 or the ignore index, and redistributions move the
      chunks as equal padded pieces (`titan-redistribute-to-collectives`);
    - `titan.redistribute` becomes `titan.local_redistribute` (the shard
      under the old placements to the shard under the new), which
      `titan-redistribute-to-collectives` lowers;
    - every other op is replaced by its partition
      (`ShardingRuleOpInterface::partition`). First its placements are
      checked (`checkPartition`): by default the op's sharding rule must
      explain them, one choice per mesh axis (shard a factor in every value
      that has it, results without a sharded reduction factor partial; keep
      one linear operand group partial; or replicate). Then the default
      partition is the op on its shards, with shape attributes localized by
      the local result types. The ops whose shards compute differently
      override it: a non-splat constant on a sharded dim, any constant or
      iota under a partial placement and an iota along a sharded dim are
      built whole and redistributed from R; a slice covers a sharded dim
      whole; a mean may be read as P(avg) (the mean of equal shards) or
      P(sum) (the local sum divided by the global count);
      `titan.embedding` with the table's vocab dim sharded is a masked local
      lookup (ids shifted by the shard's first row, ids outside the shard
      read row 0 and are zeroed; the result P(sum)), `titan.embedding_grad`
      scatter-adds only the rows of the ids in the rank's shard;
      `titan.cross_entropy` with sharded labels weights each rank's mean by
      its share of the counted labels (counts all-reduced over the batch
      axes; result P(sum) or P(avg) there), and with the vocab dim sharded
      (loss parallel) takes the row maxima and sums of exp from all-reduces
      over the vocab axes, reads each target logit on the rank whose shard
      holds it and counts the logsumexp on coordinate 0 only (result
      P(sum)); `titan.cross_entropy_grad` follows it. An op without a
      sharding rule is kept as it is on replicated values only.

    Rejected before anything is rewritten, with an error that names the
    value, the dim, the mesh axis and the sizes: sharded dynamic dims, placements that the op's rule does not explain (a softmax,
    norm, RoPE or attention whose normalized, rotated or attended dim is
    sharded: a need_replication factor; operands and results sharded
    differently; partial operands the op is not linear in; results whose
    partial placements disagree with the sharded reduced dims; a reshape,
    slice, pad or concat that would move elements between ranks),
    collectives in the global program, placements on two meshes, ops
    without a rule on sharded or partial values, and returned values whose
    placements differ from the declared result placements.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

def RedistributeToCollectivesPass : Pass<"titan-redistribute-to-collectives",
                                         "::mlir::ModuleOp"> {
  let summary = "Lowers titan.local_redistribute to collectives";
  let description = [{
    Replaces every `titan.local_redistribute` (what `titan-spmdize` makes of
    `titan.redistribute`) with the steps of the placement algebra's
    `planRedistribution`, in its order over the mesh axes, one mesh axis per
    collective: S->R `titan.all_gather`, P->R `titan.all_reduce`, P->S
    `titan.reduce_scatter`, S(i)->S(j) `titan.all_to_all`; R->S keeps the
    rank's chunk (static slices of every chunk and a select chain on
    `titan.axis_index`, exact for every element type); R->P(sum) keeps the
    value on coordinate 0 of the axis and zero elsewhere; R->P(avg|max|min)
    keeps it everywhere.

    Uneven shards (torch.chunk; every rank holds the largest chunk, padded)
    travel as equal padded pieces: before a reduce_scatter or all_to_all
    each rank lays the chunk it splits out as one padded piece per rank of
    the axis, and after an all_gather or all_to_all it joins the pieces it
    received, dropping their padding (static slices and a concat; when the
    pieces' offsets depend on the coordinate of an outer axis sharding the
    same dim, one layout per coordinate, chosen by a select chain).

    Errors: a move the algebra refuses (e.g. two kinds of partial in one
    placements list) and a reduce-scatter of a non-float partial value.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def PropagatePlacementsPass : Pass<"titan-propagate-placements",
                                   "::mlir::ModuleOp"> {
  let summary = "Places every value through the sharding rules, with explicit "
                "redistributions chosen by cost";
  let description = [{
    For every function whose arguments or results carry `titan.placements`
    (functions without any are left alone), gives every tensor value
    placements and decides, for every op, the placements it needs of its
    operands. Afterwards every op result carries the discardable
    `titan.placements` (one entry per result), every argument and result has
    the `titan.placements` attribute (an argument without one is replicated;
    a result pinned by the plan keeps its placements), and every op whose
    operands must change placement carries `titan.operand_placements` (one
    entry per operand), for `titan-materialize-redistributes`. With those
    placements every op is locally computable under its sharding rule
    (`ShardingRuleOpInterface`): on each mesh axis it shards one factor
    consistently in all its operands and results (results without a sharded
    Reduction factor are Partial), or keeps one linear operand group
    Partial, or replicates.

    Algorithm. First the known layouts (arguments, the plan's hints on op
    results such as sequence parallelism's, pinned function results) are
    spread as hints through the ops whose factors are all parallel (they only
    move or combine elements: elementwise ops, broadcasts, reshapes,
    transposes, slices), both ways, to values nothing reached yet; a value
    takes a hint only when all that reach it agree. So a weight gradient
    learns, before its producer decides, the layout AdamW meets it with (the
    moments', the pinned updated parameter's).

    Then every op is decided once, in program order (producers before
    consumers, as DTensor decides at run time), for all mesh axes jointly,
    from the layouts of its operands and the hints on its results. On each
    axis the candidates are: sharding a factor that an operand, a planned
    redistribution of an operand, or a hinted result shards (the outermost
    factor of size > 1 of that dim; not NeedReplication), sharding a dim of
    an operand that is Partial on the axis when a known value shards a dim
    of the same class on that axis (`DimClasses`: dims that are one factor
    across the function; so the gradient of K and V gathered for context
    parallelism is reduce-scattered back onto the sequence, not
    all-reduced), keeping a linear
    operand group Partial (every operand of the group Partial sum or avg and
    used only by this op: a partial value with several uses is reduced once,
    not on every path), and replicating. Every combination of the axes'
    candidates whose axes divide the factors they shard is costed and the
    cheapest wins; ties go to the first combination (first axis outermost,
    candidates in the order above). Once decided, the op plans a
    redistribution of each operand whose layout differs and fixes its
    results. The backward of a train step follows its forward this way:
    with sequence parallelism a block's backward reduce-scatters and
    all-gathers along the sequence exactly where the forward gathers and
    scatters. Everything is fixed by program order, so the result is
    deterministic.

    Cost model. The cost of a combination is the sum, over the operands and
    the layouts asked of its results that it would redistribute (each
    (value, layout) once, and zero for a redistribution already planned), of
    the per-rank seconds of the redistribution: `planRedistribution` +
    `estimateRedistributeCost` (ring all-gather, reduce-scatter, all-reduce,
    all-to-all bytes divided by the bandwidth of the axis that carries them;
    with the default equal bandwidths, bytes per rank). A new Partial result
    is charged the reduce-scatter it will need (per partial axis, onto its
    first dim the axis divides, or an all-reduce). A hint on a result is
    charged where it shards (and where a partial result must be reduced to
    it); its replicated axes often only say that the values it came from
    lack the dim (labels carry no vocabulary to the logits), so a result
    sharded there is not charged a gather. A choice that would
    redistribute a parameter (or its cast to the compute type, under mixed
    precision) on one of the `stationary-param-axes`, or an
    input on one of the `stationary-input-axes`, is refused: the pipeline
    names "tp" for parameters when tensor parallelism is on (the weights stay
    sharded, the activations move, as in Megatron) and the data and context
    parallel axes for inputs (no rank computes on another rank's tokens).
    Memory and latency are not modeled: on tiny activations (fewer tokens
    than a weight has rows) moving an activation can be cheaper than
    gathering a weight, and is chosen. So FSDP's all-gather
    of a weight is chosen over gathering activations when the weight is
    smaller, a gradient that comes out Partial over the batch axes is
    reduce-scattered (FSDP) or all-reduced (DDP) once because the optimizer
    update meets it with the parameter's placement, and Megatron's
    column/row matmul pair needs no redistribution between the two matmuls.

    With `remarks=true`, every op that needs an operand redistributed emits a
    remark with its choice per mesh axis and the cost of every alternative
    on that axis.

    Errors: an op without a sharding rule in a function that is placed, a
    function with more than one block, placements naming an unknown mesh,
    an `axis-bandwidth` list whose length differs from the mesh's axis
    count or with a non-positive entry, a `stationary-param-axes` or
    `stationary-input-axes` entry that is not an axis of the mesh.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Emit a remark explaining the choice of every op that needs an "
           "operand redistributed">,
    ListOption<"axisBandwidth", "axis-bandwidth", "double",
               "Bytes per second one rank sends over each mesh axis, in mesh "
               "axis order (default: equal on every axis)">,
    ListOption<"stationaryParamAxes", "stationary-param-axes", "std::string",
               "Mesh axes on which parameters (arguments with titan.role = "
               "\"param\") are never redistributed: the computation follows "
               "their sharding there (tensor parallelism)">,
    ListOption<"stationaryInputAxes", "stationary-input-axes", "std::string",
               "Mesh axes on which the model's inputs (arguments with "
               "titan.role = \"input\") are never redistributed: each rank "
               "computes on its own part of the batch (data and context "
               "parallelism)">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

def MaterializeRedistributesPass : Pass<"titan-materialize-redistributes",
                                        "::mlir::ModuleOp"> {
  let summary = "Makes the changes of placement propagation decided explicit";
  let description = [{
    For every op with `titan.operand_placements` (written by
    `titan-propagate-placements`), every operand whose placements differ
    from the ones the op needs is replaced by a `titan.redistribute` of it,
    and the attribute is removed; every returned value whose placements
    differ from the function result's `titan.placements` (pinned by the
    plan) is redistributed too. A redistribution of a value to a layout is
    created once, right after the value's definition (after the earlier
    redistributes of it), and shared by every use that needs it. With
    `remarks=true`, each redistribute emits a remark: the layouts, the
    bytes per rank (cost model) and which operand or result needs it.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", "false",
           "Emit a remark for every inserted redistribute">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def SetGradientReduceDtypePass : Pass<"titan-set-gradient-reduce-dtype",
                                      "::mlir::ModuleOp"> {
  let summary = "Reduces parameter gradients across ranks in a wider float "
                "type (mixed precision's reduce dtype)";
  let description = [{
    Under mixed precision the backward computes a parameter's gradient in
    the compute type (bf16) and the optimizer reads it widened to the
    parameter's float32. Propagation reduces the partial sums across the
    data-parallel ranks where they are cheapest, before the widening. This
    pass moves the widening before the reduction, as FSDP2's
    `MixedPrecisionPolicy(reduce_dtype=float32)` (torchtitan's
    `mixed_precision_reduce = "float32"`) does: for each
    `titan.cast` to `dtype` of `@train_step` read only by the optimizer
    (clipping, AdamW) or returned whose input is, through single-use
    reshapes and transposes, the single use of a `titan.redistribute` that
    sums a Partial value of a narrower float type, the summed value is cast
    instead (a Partial value stays Partial: the widening is exact), the
    redistribution and the views move `dtype` elements, and the old cast
    goes. Under pure bf16 training (torchtitan's `training.dtype =
    "bfloat16"`) the optimizer reads the gradient in bf16 itself: a
    redistribution that sums a Partial value of a narrower float type
    whose result is, through single-use views, read only by the optimizer
    or returned is widened the same way and its result cast back to the
    narrow type after the views, as FSDP2 casts the gradient it reduced in
    `reduce_dtype` back to the parameter's dtype. Run after
    `titan-materialize-redistributes`.

    Example (FSDP over `fsdp`):

    ```mlir
    // before (%g is P on "fsdp")
    %r = titan.redistribute %g to <@mesh, [S(0)]> : tensor<64x64xbf16>
    %w = titan.cast %r : tensor<64x64xbf16> to tensor<64x64xf32>
    // after
    %c = titan.cast %g : tensor<64x64xbf16> to tensor<64x64xf32>
    %w = titan.redistribute %c to <@mesh, [S(0)]> : tensor<64x64xf32>
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", "\"f32\"",
           "The float type gradients are reduced in (f32 or f64)">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def MarkIdRangesPass : Pass<"titan-mark-id-ranges", "::mlir::ModuleOp"> {
  let summary = "Records the valid range of integer inputs that index tables";
  let description = [{
    An integer function argument that reaches, through ops that only move
    data (reshape, transpose, slice, broadcast_in_dim, concat), the ids of a
    `titan.embedding` or `titan.embedding_grad` or the labels of a
    `titan.cross_entropy` or `titan.cross_entropy_grad` gets
    `titan.id_range = array<i64: 0, rows>` (the table's rows, the logits'
    vocabulary), with the loss's `ignore_index` as a third element when
    only losses read it. Where it indexes several tables, the ranges
    intersect (an ignore index survives only if every use ignores it).

    Kernels do not check their indices, and once the vocabulary is sharded
    (vocab-parallel embedding, loss parallel) an id outside it falls in no
    rank's shard and would be silently dropped; so the runtime checks every
    batch it reads against this range, and titan-eval every input.
    Arguments whose range is already marked keep it.
  }];
}

def FuseRmsNormPass : Pass<"titan-fuse-rms-norm"> {
  let summary = "Recognizes RMSNorm written with elementwise ops";
  let description = [{
    Models write RMSNorm by hand (Llama's
    `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight`), so
    the importer sees a multiply, a mean, an add, an rsqrt, broadcasts and
    two more multiplies. This pass replaces

    ```
    mul(mul(x, broadcast(rsqrt(add(reduce_mean(mul(x, x), [last], keepdim),
                                   eps)))),
        broadcast(w))
    ```

    (any operand order; `eps` a positive scalar constant, possibly cast or
    broadcast; `w` of the size of the last dim) with one
    `titan.rms_norm x, w eps`, whose fused VJP (`titan.rms_norm_grad`) and
    sharding rule (the normalized dim whole, the others parallel) later
    passes use. Ops of the old form that no longer have users are erased.

    The mixed-precision form, where a bf16 or f16 `x` is normalized in
    float32 and narrowed back before the weight scales it (torchtitan's and
    Hugging Face's `self._norm(x.float()).type_as(x) * self.weight`), i.e.
    `mul(cast(mul(cast(x), ...)), broadcast(w))`, fuses the same way: the
    fused op computes in float32 and rounds once to `x`'s type, where the
    explicit form rounds the normalized value before the product too (the
    difference is within one unit in the last place; torch.compile's fused
    kernels round once as well).
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def FuseRopePass : Pass<"titan-fuse-rope"> {
  let summary = "Recognizes rotary position embedding written as a complex "
                "multiply";
  let description = [{
    torchtitan's Llama rotates queries and keys with complex numbers
    (`view_as_real(view_as_complex(x.float().reshape(..., -1, 2)) *
    freqs_cis).flatten(3).type_as(x)`), which the importer turns into a
    reshape of x into pairs, slices of their real and imaginary parts, four
    multiplies by the broadcast real and imaginary tables, a subtract, an
    add and a concat of the parts back. This pass replaces

    ```
    reshape(concat(reshape(a c - b s), reshape(a s + b c), last dim))
    ```

    (products and the sum in any operand order), where `a` and `b` are the
    parts of the pairs of one x [batch, seq, heads, head_dim] and `c` and
    `s` are [seq, head_dim / 2] tables broadcast over batch and heads, with
    one `titan.rope x, c, s interleaved`. Its VJP is a rope by `-s` (the
    explicit form's keeps the f32 parts of x for the backward's multiplies:
    two f32 copies of q and k per layer) and it is one loop nest in a
    kernel instead of six.

    Mixed precision: a bf16 or f16 x widened before the rotation and the
    result narrowed back to x's type right after (`.float()` ...
    `.type_as(x)`) fuse into one rope of the narrow x, which computes in the
    tables' f32 and rounds once, as the explicit form does.

    Left alone: tables that depend on a parameter (the fused op has no
    gradient for them), tables that vary along batch or heads, and the
    rotate-half form (`x cos + rotate_half(x) sin` with [seq, head_dim]
    tables: the fused op needs both halves of each table row equal, which
    the compiler cannot see of a buffer). Ops of the old form that no longer
    have users are erased.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def FuseLossCastPass : Pass<"titan-fuse-loss-cast"> {
  let summary = "Lets the loss and its gradient read and write narrow logits";
  let description = [{
    Under mixed precision the logits are bf16 and the loss is computed on
    their float32 widening (torchtitan's `cross_entropy(pred.float(), ...)`,
    or a model that returns `logits.float()`), so the training step
    materializes an f32 copy of the logits for the loss and an f32
    gradient that the cast's VJP narrows back: two [tokens, vocab] tensors
    of 4 bytes per entry (8 GiB each for Llama 3 at 16k tokens). This pass
    replaces

    ```
    cross_entropy(cast(x) to f32, labels)
    cast(cross_entropy_grad(cast(x) to f32, labels, g)) to x's type
    ```

    (x bf16 or f16) with `cross_entropy(x, labels)` and
    `cross_entropy_grad(x, labels, g)`: both compute in float32 (the loss's
    cotangent's type; the runtime's and the compiled kernels widen each
    element as they read it) and the gradient rounds once to x's type, as
    the explicit form does. A gradient with another user than the narrowing
    cast keeps the f32 form. It runs on the training step, after
    titan-build-train-step.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def FuseAttentionPass : Pass<"titan-fuse-attention"> {
  let summary = "Recognizes scaled dot-product attention written with "
                "matmuls and softmax";
  let description = [{
    Models written in plain PyTorch compute attention explicitly (Llama's
    `softmax(q @ k^T / sqrt(d) + triu(full(-inf), 1)) @ v`, GPT-2's
    `masked_fill(tril(ones) == 0, -inf)`, `where(mask, scores, -inf)`), which
    the importer turns into matmuls, a scale or division, a mask built from
    iotas, constants, compares and selects, and a softmax. This pass replaces

    ```
    matmul(softmax(chain(matmul(q, k^T)), last dim), v)
    ```

    with one `titan.attention q, k, v [causal] scale s`, whose runtime kernel
    never materializes the [batch, heads, seq, seq] scores and skips the
    masked blocks, and whose VJP (`titan.attention_grad`) recomputes them.

    - `chain` is any sequence of: `titan.scale`, a multiplication by or a
      division by a compile-time scalar (their product is `s`, which must be
      positive), a mask, `max(x, -inf)`, casts that change no type
      (`.float()` and `.type_as` on f32), and reshapes that keep the last
      two dims (the heads folded into or out of the batch: OPT's
      `view(b, h, t, s)` for the mask and back). A mask is `add(x, m)` with `m` 0
      or -inf at every element, `select(c, -inf, x)` or `select(c, x,
      -inf)`; here -inf stands also for any finite value <= -3e38 (Hugging
      Face's `torch.finfo(dtype).min` of f32 or bf16, which hides a score
      of magnitude below 1e38 exactly as -inf does: its probability is 0 in
      f32), where `m` and
      `c` are computed at compile time from iotas, constants and buffers
      whose value the importer recorded by diagonals (`titan.diagonals`:
      nanoGPT's `tril` buffer, sliced to the sequence) with elementwise,
      compare, select, broadcast, reshape, transpose and slice ops,
      evaluated with the rounding of their element types; it must hide
      exactly the keys after each query (`causal`) or nothing. Any other
      mask (another offset, a sliding window, padding, a runtime mask) is
      left alone.
    - q, k^T and v may come through transposes (the matmuls' transpose flags
      included); q, k and v become [batch, heads, seq, head_dim], with a
      transpose where they are not, and must have one shape and one element
      type. Rank-3 attention, [batch * heads, seq, head_dim] as
      nn.MultiheadAttention computes it, is fused with one head per batch
      entry (reshapes to and from [batch * heads, 1, seq, head_dim]).
      Scores of q and k with the heads folded into the batch, whose
      probabilities multiply a v of [batch, heads, seq, head_dim] (GPT-NeoX's
      baddbmm of `q.view(b * h, t, d)`), read q and k before the fold.
      GPTBigCode's multi-query attention, q [batch, seq * heads, head_dim]
      (the heads folded into the queries) against one K and V head, the
      scores viewed [batch, seq, heads, seq] for the mask and the softmax,
      is fused with q as [batch, heads, seq, head_dim] and one KV head. A
      `titan.scale` of q or k before the product (nn.MultiheadAttention
      scales q) is part of `s`: the fused op applies it to the float32
      scores instead of rounding the scaled q. No real cast may lie on the way (the explicit form's roundings
      would be lost), but for mixed precision's: bf16 or f16 scores widened
      once before the softmax and the probabilities narrowed once after it
      (`softmax((scores + mask).float()).type_as(q)`), or bf16 or f16 q and
      k widened before the product (Phi's `q.to(torch.float32) @
      k.to(torch.float32).transpose(2, 3)`; the pass moves a widening after
      a transpose of it so the product reads it directly) and the
      probabilities narrowed once after the softmax; the fused op computes
      in float32 and rounds its output once, as PyTorch's
      `scaled_dot_product_attention` (torchtitan's attention) does, where
      the explicit form also rounds the scores and the probabilities. When k
      and v are both Llama's `repeat_kv` of the same number of
      KV heads (broadcast_in_dim of a size-1 dim after the heads, reshape
      merging it into them), attention reads the KV heads before the repeat
      (grouped-query attention).
    - The scores, every value of the chain and the probabilities have no
      other user; otherwise nothing is fused.

    Ops of the old form that no longer have users are erased.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

//===----------------------------------------------------------------------===//
// The executable program: kernels, memory, runtime calls
//===----------------------------------------------------------------------===//

def NormalizeCollectivesPass : Pass<"titan-normalize-collectives",
                                    "::mlir::ModuleOp"> {
  let summary = "Makes every collective move contiguous chunks";
  let description = [{
    The runtime's collectives work on contiguous buffers whose chunks are in
    group order (all_gather concatenates whole buffers, reduce_scatter hands
    out leading chunks, all_to_all exchanges leading chunks). A collective
    on another dim of a tensor whose leading dims are not all 1 is rewritten
    into the collective on dim 0 of a reshaped tensor plus the transposes
    that move its chunks into place, e.g. `all_gather dim 1` of `[a, b, c]`
    over `g` ranks becomes an all_gather of `[1, a*b*c]`... viewed as
    `[g, a, b, c]`, transposed to `[a, g, b, c]` and reshaped to
    `[a, g*b, c]`. The transposes are ordinary ops that titan-fuse-kernels
    fuses with their neighbours; the program computes the same values.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def FuseAddendsPass : Pass<"titan-fuse-addends"> {
  let summary = "Adds a sum's other term in the op that computes one term";
  let description = [{
    `add(x, matmul(a, b))` reads the product once more than it must: the
    GEMM writes it, an elementwise kernel reads it and x and writes the sum.
    This pass gives the matmul x as its addend (`titan.matmul ... plus x`),
    which both runtimes add in the GEMM (cuBLASLt's C with beta = 1,
    OpenBLAS's beta = 1; rounded once), and drops the add: a transformer
    block's two residual adds, and the backward's sums of products (the
    input cotangent of q, k and v, of the SwiGLU's two input projections).
    RMSNorm's input cotangent takes an addend the same way
    (`titan.rms_norm_grad ... plus x`): the residual stream's gradient,
    which the backward adds to each norm's input cotangent.
    titan-plan-memory computes the sum in x's buffer when x is read last
    there.

    It applies when the term (or its one reshape) is read only by the add,
    in the add's block, and x is defined before the op that computes the
    term (so that the op reads it where it stands: nothing moves), unless x
    is a `titan.broadcast_in_dim` or a constant: a linear layer's bias
    broadcast over the rows stays in the add's kernel, which reads the
    vector, rather than being written out whole for the GEMM to read. When
    both terms qualify the later op adds the earlier term, and adds are
    visited in program order, so that a sum of three products is two fused
    GEMMs. On a rank's program (after titan-spmdize): an addend and a
    sharded contraction dim do not mix.

    Example:

    ```mlir
    %p = titan.matmul %a, %w transpose_rhs : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    %s = titan.add %x, %p : tensor<8x32xf32>
    // becomes
    %s = titan.matmul %a, %w transpose_rhs plus %x : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    ```
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def FoldMatmulBatchPass : Pass<"titan-fold-matmul-batch"> {
  let summary = "Computes a batch-summed matmul as one product over the "
                "batch's rows";
  let description = [{
    The gradient of a weight shared by every batch entry (`x @ W^T` with x
    [batch, seq, K]) is built as a batched product per entry, summed over
    the batch: `reduce_sum(matmul(dy, x, transpose_lhs), batch dims)`, since
    on the global program merging batch and seq would lose a sequence
    sharding (context parallelism). On a rank's program every tensor is
    local, so this pass replaces the sum with one product over the rows of
    all entries, `matmul(reshape(dy), reshape(x), transpose_lhs)` with
    reshape [batch..., rows, N] -> [batch x rows, N] (a view), as PyTorch's
    linear backward computes it: no [batch, N, K] intermediate, no
    reduction kernel (a weight-sized copy for a batch of one), and the sum
    over the batch accumulates in the GEMM's f32 instead of rounding each
    entry's product.

    It applies when the product has no other user, its operands have the
    same batch dims and only the lhs is transposed (its rows are the
    contracted dim, so that the rows of consecutive entries are adjacent),
    and the sum is over exactly the batch dims with the product's element
    type.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def KeepParamCopiesPass
    : Pass<"titan-keep-param-copies", "::mlir::ModuleOp"> {
  let summary = "Keeps the forward's narrow copies of the parameters as "
                "state that AdamW writes";
  let description = [{
    Under mixed precision every step casts each float32 parameter to the
    type the forward computes in (bf16) before its first use: a kernel
    that reads 4 and writes 2 bytes per parameter, again under activation
    checkpointing, while AdamW has just read and written the same parameter
    at the end of the previous step. On a rank's program this pass gives
    each parameter `<fqn>` whose casts to one narrower float type T are
    read, and whose AdamW update the function returns (`param.<fqn>`), an
    argument `copy.<fqn>` of type T (role `param_copy`): the casts read it
    instead, and the AdamW also returns its update rounded to T (its
    `copy` result, returned as `copy.<fqn>` after `param.<fqn>`), which
    the memory plan puts in the argument's place, like a moment. Not kept:
    the copy of a table only embedding lookups read (they cast the rows
    they gather), and of a shard FSDP gathers (its cast moves 1/N of the
    gather's bytes, and the copy would be held all step, where memory is
    what sharding is for).

    The values are the same: every cast of the argument is the rounding of
    the parameter the step starts from, which the previous step's AdamW
    wrote. The runtime fills the copies from the parameters whenever it
    loads them (initialization, a checkpoint, Hugging Face weights); the
    copies are not checkpointed. A rank holds 2 more bytes per bf16
    parameter in its state and moves 4 fewer per use per step (2 written by
    AdamW for 6 read and written by each cast); the casts' transient
    buffers are gone from the arena.

    Example:

    ```mlir
    func.func @train_step(%w: tensor<4x4xf32> {titan.name = "w", titan.role = "param"}, ...) {
      %c = titan.cast %w : tensor<4x4xf32> -> tensor<4x4xbf16>
      ...
      %p, %m, %v = titan.adamw %w, ...
      return %loss, %p, %m, %v
    }
    // becomes
    func.func @train_step(%w: tensor<4x4xf32> {titan.name = "w", titan.role = "param"}, ...,
                          %wc: tensor<4x4xbf16> {titan.name = "copy.w", titan.role = "param_copy"}) {
      ... (%wc where %c was read)
      %p, %m, %v, %pc = titan.adamw %w, ... copy tensor<4x4xbf16>
      return %loss, %p, %pc, %m, %v
    }
    ```
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def FuseKernelsPass : Pass<"titan-fuse-kernels", "::mlir::ModuleOp"> {
  let summary = "Groups elementwise, reduction and shape ops into kernels";
  let description = [{
    Splits every function into host ops, which the runtime executes
    (`titan.matmul`, `titan.attention`, `titan.attention_grad`,
    `titan.embedding_grad`, the collectives, `titan.reshape`, which is
    free on a contiguous buffer, and the ops of `runtime-ops`), and fusible
    ops (everything else), and
    outlines groups of fusible ops into kernel functions
    (`func.func private @kernel_N`, marked `titan.kernel`) called by
    `titan.launch`.

    Groups are formed from the last op backwards: an op joins the group of
    its users when all of its users are in that group, or are that group and
    the function's return (the kernel then returns it after its root's
    results: AdamW's moments, which the parameter's update reads, come out
    of the update's kernel), so only a group's last op (its root) has
    results used by other ops and a group can be launched where its root
    was, with no cycle between groups. An op that one group reads and
    that the function returns only cast (a bf16 parameter's moments,
    which its AdamW computes in f32 and stores rounded) joins that group
    with its casts, which the kernel returns. A reduction
    (reduce_sum, reduce_max, reduce_mean) always roots a group of its own
    (its producers join it): its result is small, and chains of independent
    reductions (a gradient norm over every parameter) would otherwise make
    one huge kernel instead of a few shared ones. A `titan.reshape` that
    one group alone reads joins it too, so that the kernel computes its
    producer in the layout its consumer reads (GPT-2's q plus c_attn's
    bias, viewed [b, t, h, d] and transposed to [b, h, t, d], in one pass
    instead of two); read by a host op, several groups or the return, it
    stays a view. Ops that only
    create or move data (splat constants, iotas, broadcasts, slices) are
    instead copied into every group that uses them (and materialized by a
    kernel of their own only for host ops and results). So is an
    elementwise op of a tensor that only kernels use, several of them, when
    recomputing it in each is cheaper: it reads at most one operand of its
    shape (others are scalars, broadcasts, iotas or splats), so each user
    reads that operand instead of its result and the op's own pass over
    memory is saved, which must outweigh what the users read more of a
    wider operand (N users of a cast from `in` to `out` bytes per element:
    N * (in - out) <= in + out). A gradient scaled by the clipping
    coefficient is recomputed in both of AdamW's moment updates. Groups
    with identical bodies share one kernel. First, each `titan.adamw` the
    runtime does not execute is expanded into the elementwise ops its
    description spells out (the step's f64 scalars built once, before the
    first of them), which then fuse like any others: one kernel per
    parameter reads the gradient, parameter and moments once and writes
    the three updates in place. And an embedding of a cast table that
    reads at most half of its rows gathers them from the table and casts
    them (exact: the cast is elementwise), so that its kernel does not
    cast the whole table (a bf16 copy of the embedding under mixed
    precision) to read a batch's rows.

    After the siblings, an elementwise group joins the group whose root
    computes one of its inputs when that root has other results read
    elsewhere (so it could not join the elementwise group), the input is
    read by the group alone and the group's other inputs are computed
    before the root: the root's kernel computes the group as an epilogue
    and returns only the root's results read outside it (LayerNorm's
    backward adds its input gradient to the residual cotangent and writes
    the sum, not the gradient, where an add kernel read both again).

    `runtime-ops` names ops that the runtime executes with its own kernels
    instead (host ops like `titan.matmul`): `rms_norm` (`titan.rms_norm`
    and `titan.rms_norm_grad`, as `titanrt_rms_norm(_grad)`) and
    `cross_entropy` (`titan.cross_entropy` and `titan.cross_entropy_grad`,
    as `titanrt_cross_entropy(_grad)`) and `adamw` (`titan.adamw`, as
    one runtime call for all of a rank's parameters once titan-fuse-adamw
    has run: on a GPU one launch at the GPU's bandwidth, where the compiled
    kernels of the expanded update reach less), and `squared_norm`: the
    per-tensor `titan.reduce_sum` of `titan.mul(x, x)` (x f32, or a bf16
    tensor widened) that one tree of scalar adds sums, the gradients'
    squared global norm of clipping (on each rank, before the all-reduce of
    a sharded gradient's part), become one `titan.squared_norm` of their
    tensors (`titanrt_squared_norm`: two launches on a GPU where each
    gradient took a reduction kernel of its own). On a
    GPU the runtime's kernels
    take fewer passes over the rows (the loss's maximum, sum of
    exponentials and label logit in one online pass; RMSNorm's statistic
    and output in one launch) and sum RMSNorm's weight gradient in
    coalesced partials instead of one block per column, so titan-compile
    names all four for `--backend=cuda`. Only ops of the types
    the runtime functions take are taken out: f32 or bf16 data and
    weights, i64 or i32 labels, an f32 loss, f32 parameters with f32 or
    bf16 gradients; the others stay fusible (or are expanded). An
    unknown name is an error that lists the known ones.

    Then sibling groups become one kernel (`merge-siblings`, on by
    default): elementwise groups over one shape that read a common input of
    that shape, when the later ones read nothing computed after the
    earliest one's root, are launched there as one kernel whose loop nests
    titan-lower-kernels makes one, reading the common input once (SwiGLU's
    two gradients both read the product's gradient and the gate: 5 passes
    over [tokens, ffn] tensors instead of 7).
  }];
  let options = [
    ListOption<"runtimeOps", "runtime-ops", "std::string",
               "Ops the runtime executes instead of kernels: rms_norm, "
               "cross_entropy, adamw, squared_norm">,
    Option<"mergeSiblings", "merge-siblings", "bool", /*default=*/"true",
           "Launch elementwise groups that read a common input as one "
           "kernel">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

def ConvertTitanToLinalgPass : Pass<"titan-convert-to-linalg",
                                    "::mlir::func::FuncOp"> {
  let summary = "Converts titan's fusible ops to linalg, tensor, arith and math";
  let description = [{
    Rewrites the elementwise, reduction, normalization, shape, embedding,
    RoPE and cross-entropy ops of titan into `linalg.generic` (and
    `tensor` ops for slices, pads and concatenation) on tensors, with the
    semantics of titan's reference interpreter (the same accumulation types
    and numerically stable forms), so that upstream elementwise fusion,
    bufferization and loop lowering compile them. Runs on kernel functions
    (titan-fuse-kernels); an op it cannot convert in a function marked
    `titan.kernel` is an error that names it.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def StepInBackwardPass : Pass<"titan-step-in-backward", "::mlir::ModuleOp"> {
  let summary = "Steps each parameter's AdamW as soon as its gradient is "
                "complete (optimizer.early_step_in_backward)";
  let description = [{
    torchtitan's `optimizer.early_step_in_backward` steps each parameter's
    optimizer from a hook that runs when the parameter's gradient is
    accumulated, so the gradient is freed in the backward instead of living
    to its end (there is no gradient clipping then: `titan-build-train-step`
    builds the step without it). On `@train_step`, this pass moves each
    `titan.adamw` up to right after the last op it must follow: the ops that
    define its operands (the gradient, after its reduction across the
    data-parallel ranks, and the step's scalars) and every op that reads the
    state the step overwrites, directly or through a reshape (the parameter,
    under FSDP the last all-gather of its shard; the moments; and, where
    AdamW writes the forward's bf16 copy, the copy). The ops right before
    the step that compute an operand for it alone (what
    `titan-sink-to-first-use` sank to it: the gradient's view, or its
    product) move up with it; collectives stay where the schedule put them.
    `titan-plan-memory` then updates the state in place there and frees the
    gradient. Nothing moves down. Run after the schedule (`titan-sink-to-first-use`
    would sink the steps to the return, which reads their results), before
    `titan-fuse-adamw` with `adjacent-only`.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def FuseAdamWPass : Pass<"titan-fuse-adamw"> {
  let summary = "Makes the runtime's AdamW steps of a rank one call";
  let description = [{
    After titan-fuse-kernels, each `titan.adamw` left to the runtime
    (`runtime-ops` adamw, the CUDA backend's default) would be a runtime
    call of its own: on a GPU one launch per parameter, each reading the
    step's scalars again (147 for a 16-layer Llama). This pass replaces the
    `titan.adamw` ops of a block that share `lr`, `step`, `grad_scale` and
    the hyperparameters with one `titan.fused_adamw` where the last of them
    stands: one `titanrt_fused_adamw` call, which the CUDA backend runs as
    one launch over every parameter's chunks (as
    `torch.optim.AdamW(fused=True)`) and the CPU backend as one parallel
    loop per parameter. The arithmetic of each element is unchanged.

    A step moves to the last one only when nothing before that reads its
    results (the updated parameter, moments or copy); a step whose results
    are read earlier ends the group, and the steps after it form the next
    one. With `adjacent-only` a group is a run of steps with no other op
    between them, so no step moves. titan-plan-memory then sees every gradient of a group live until
    the group's call (they are, already, when a clipping norm reads them
    all first).

    Example:

    ```mlir
    %p0n, %m0n, %v0n = titan.adamw %p0, %g0, %m0, %v0 lr %lr step %s betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<64xf32>, tensor<64xf32>
    %p1n, %m1n, %v1n = titan.adamw %p1, %g1, %m1, %v1 lr %lr step %s betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<8x64xf32>, tensor<8x64xbf16>
    // becomes
    %p:2, %m:2, %v:2 = titan.fused_adamw params(%p0, %p1) grads(%g0, %g1) exp_avgs(%m0, %m1) exp_avg_sqs(%v0, %v1) lr %lr step %s betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<64xf32>, tensor<8x64xf32> grads tensor<64xf32>, tensor<8x64xbf16>
    ```
  }];
  let options = [
    Option<"adjacentOnly", "adjacent-only", "bool", "false",
           "Fuse only steps with no other op between them, which stay "
           "where they are (titan-step-in-backward's steps)">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def LowerKernelsPass : Pass<"titan-lower-kernels", "::mlir::ModuleOp"> {
  let summary = "Compiles kernel functions to loops on memrefs";
  let description = [{
    Compiles every function marked `titan.kernel` (and only those: the host
    function keeps its tensors until titan-plan-memory) through
    titan-convert-to-linalg, elementwise fusion and one-shot bufferization
    into a function on memrefs in destination-passing style: one memref
    argument per input, then one per result, then one per buffer the kernel
    needs internally (its scratch, planned by titan-plan-memory instead of
    allocated). Elementwise fusion also takes a producer that the kernel
    returns besides feeding one consumer, or that one consumer reads through
    several operands: the fused loop nest yields its value too, so a kernel
    of several results (AdamW's update and moments) is one loop nest. Each
    kernel records in `titan.in_place` which inputs each result may
    overwrite: every input that the kernel reads only at the element it
    writes, in the loop nest that writes the result.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect"];
}

def PlanMemoryPass : Pass<"titan-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Gives every value of a rank a static place in memory";
  let description = [{
    Plans the memory of `@train_step` after titan-lower-kernels: arguments
    with role param, state or buffer get consecutive places in the `state`
    region, inputs in the `inputs` region; every other value, and the
    scratch of kernels and runtime calls, gets an offset in the `arena` from
    a liveness analysis: a value lives from its definition to its last use
    (a reshape is a view of its operand and extends its lifetime), buffers
    whose lifetimes do not overlap share memory, and a kernel result reuses
    the buffer of an input that dies there when the kernel allows it
    (`titan.in_place`). Offsets are chosen best-fit, largest buffers first
    (as XLA's and TFLite's planners do), aligned to 64 bytes. A result that
    updates a state argument (`param.<fqn>`, `exp_avg.<fqn>`, ...) is placed
    in that argument's buffer when the argument is dead by then, so the
    optimizer updates the state in place; otherwise it is copied there at
    the end of the step.

    Every op result gets `titan.buffers`, function arguments and results
    `titan.buffer`, calls that need scratch `titan.scratch`, and the
    function `titan.memory_plan`: the bytes of each region, the peak of the
    arena and the op where it peaks. The runtime allocates exactly these
    regions, and nothing else while it steps.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "Alignment of every buffer in bytes">,
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect"];
}

def LowerToRuntimePass : Pass<"titan-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lowers the planned program to calls into libtitanrt";
  let description = [{
    Turns the planned `@train_step` into
    `llvm.func @titan_program_step(ctx, arena, state, inputs) -> i32`: each
    host op becomes a call of its runtime function (titanrt.def) and each
    `titan.launch` a call of its kernel, on pointers into the regions at the
    planned offsets; a non-zero status returns at once. A collective marked
    `titan.async` is preceded by `titanrt_start(ctx, handle)` (handles
    numbered in program order), which queues it on its communicator's
    communication thread, and its `titan.wait` becomes
    `titanrt_wait(ctx, handle)`. Kernels are lowered
    to the LLVM dialect with the bare-pointer calling convention, the step
    function is kept unoptimized (`optnone`, `noinline`: compile time stays
    linear in the program's size) while kernels are optimized. With
    `target=cuda` each kernel is instead a host function of the same
    signature that launches its loop nests on the GPU (on the stream
    `titanrt_cuda_stream()` returns), compiled into one `gpu.binary`
    holding a fatbin (docs/cuda-backend.md, "The compiler's kernels on the
    GPU"); the step calls it exactly as it calls a CPU kernel. The program
    description (titanrt.h, docs/runtime.md) becomes the global
    `titan_program_description`, and `main` hands both to the runtime's
    `titanrt_main`. Only LLVM dialect ops (and, for CUDA, the
    `gpu.binary`) remain.

    The options are the defaults the executable runs with (its command line
    overrides them): the training config's learning rate, number of steps
    and seed, and its learning-rate schedule (`[lr_scheduler]`, computed as
    torchtitan does over the config's number of steps,
    include/titan/Config/LrSchedule.h).

    Communicators are numbered in order of first use, after those
    `communicators` lists: the programs of the pipeline ranks of one job
    are given the same list (every axis set any of them uses), so a
    communicator two of them share has one number in both (the runtime
    connects and watches communicators by number).

    A job with validation (`[validation] enable`) links two programs into
    one executable: the training step, lowered with `validation=linked`
    (its `main` hands `titanrt_main` the validation program's step and
    description too), and the validation step (titan-build-train-step's
    `evaluate`), lowered with `validation=program`: its step and
    description are `titan_validation_step` and
    `titan_validation_description`, every other symbol it defines is
    prefixed `titan_validation.` (its kernels do not clash with the
    training program's), and it has no `main`.
  }];
  let options = [
    Option<"validation", "validation", "std::string", "\"none\"",
           "none (a program alone), linked (a training program whose main "
           "also hands the runtime the validation program) or program (the "
           "validation program of one)">,
    Option<"learningRate", "lr", "double", "8e-4",
           "Learning rate the executable passes each step by default">,
    Option<"steps", "steps", "int64_t", "1",
           "Number of steps the executable runs by default">,
    Option<"seed", "seed", "int64_t", "0",
           "Seed of the initialization when no checkpoint is loaded">,
    Option<"scheduleSteps", "lr-total-steps", "int64_t", "-1",
           "Steps the learning-rate schedule spans (< 0: steps)">,
    Option<"warmupSteps", "lr-warmup-steps", "int64_t", "0",
           "Steps of linear learning-rate warmup">,
    Option<"decayRatio", "lr-decay-ratio", "double", "0",
           "Share of the steps over which the learning rate decays (< 0: "
           "all steps after the warmup)">,
    Option<"decayType", "lr-decay-type", "std::string", "\"linear\"",
           "Shape of the decay: linear, sqrt or cosine">,
    Option<"minLrFactor", "lr-min-factor", "double", "0",
           "Factor of the learning rate the decay ends at">,
    ListOption<"communicators", "communicators", "std::string",
               "Mesh axes of the first communicators, in order, each as "
               "names joined by '+' (fsdp+tp): the programs of the pipeline "
               "ranks number the communicators they share alike">,
    Option<"target", "target", "std::string", "\"cpu\"",
           "Where the kernels run: cpu (loops in the executable) or cuda "
           "(launches of a fatbin on the rank's CUDA stream)">,
    Option<"cudaToolkit", "cuda-toolkit", "std::string", "\"\"",
           "CUDA toolkit whose ptxas compiles the kernels for target=cuda "
           "(empty: the one found when titan was built, else "
           "/usr/local/cuda)">,
    Option<"cudaChip", "cuda-chip", "std::string", "\"sm_90\"",
           "GPU architecture of the kernels' fatbin for target=cuda">,
    Option<"cudaBinary", "cuda-binary", "std::string", "\"fatbin\"",
           "What the gpu.binary holds for target=cuda: fatbin (what an "
           "executable loads) or ptx (the device code's PTX assembly, to "
           "read; no executable can load it)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // TITAN_PASSES
