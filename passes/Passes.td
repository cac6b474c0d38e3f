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
    `titan.role`), builds

    ```
    @train_step(params..., exp_avg..., exp_avg_sq..., buffers..., tokens,
                labels, lr, step)
        -> (loss, param'..., exp_avg'..., exp_avg_sq'... [, grad...])
    ```

    - loss: mean token cross-entropy of the logits `[batch, seq, vocab]`
      against `labels` `[batch, seq]`, tokens labelled `ignore-index` not
      counted (`torch.nn.functional.cross_entropy`);
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
      sqrt(1 - beta2^t) + eps)`.

    `lr` and `step` are 0-d f32 arguments (`step` counts the updates done
    before this one, so the first call passes 0). Results are named `loss`,
    `param.<fqn>`, `exp_avg.<fqn>`, `exp_avg_sq.<fqn>` and, with
    `emit-grads`, `grad.<fqn>` (the clipped gradient). `@forward` is kept.
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
  ];
  let dependentDialects = ["::mlir::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

def SpmdizePass : Pass<"titan-spmdize", "::mlir::ModuleOp"> {
  let summary = "Rewrites annotated global programs into the program of one rank";
  let description = [{
    Input: a global program whose function arguments and results carry
    `titan.placements`, whose tensor op results carry the discardable
    `titan.placements = [#titan.placements<...>, ...]` (one per result), in
    which every op other than `titan.redistribute` is computable on its
    shards and all communication is explicit in `titan.redistribute` (what
    `titan-propagate-placements` writes). A missing attribute means
    replicated, as `titan-eval` reads it. Every function with a placement on
    an argument, a result or an op is rewritten; the others are left alone.

    Output: the SPMD program every rank runs, with local shapes and explicit
    collectives:

    - types: every value gets the type of its shard (torch.chunk sizes of
      each sharded dim, several axes sharding one dim nesting in mesh-axis
      order); partial and replicated dims keep their size, element types
      stay. Function arguments and results keep all their attributes
      (names, roles, placements), so `titan-eval --ranks=N` shards the
      global inputs and assembles the global outputs;
    - `titan.redistribute` becomes the steps of the placement algebra's
      `planRedistribution`, in its order over the mesh axes, one mesh axis
      per collective: S->R `titan.all_gather`, P->R `titan.all_reduce`,
      P->S `titan.reduce_scatter`, S(i)->S(j) `titan.all_to_all`; R->S keeps
      the rank's chunk (static slices of every chunk and a select chain on
      `titan.axis_index`, exact for every element type); R->P(sum) keeps the
      value on coordinate 0 of the axis and zero elsewhere; R->P(avg|max|min)
      keeps it everywhere;
    - ops are rebuilt on local types; attributes that carry shapes are
      localized: reshape and broadcast_in_dim result shapes, slice limits
      (a sharded dim may only be sliced whole), iota and splat constants.
      A non-splat constant on a sharded dim, any constant or iota under
      P(sum) and an iota along a sharded dim are built whole and
      redistributed from R;
    - ops with a sharded reduced or contracted dim (matmul over a sharded
      k, reduce_sum over a sharded dim) compute locally and are partial,
      which their result placements must say (reduce_sum P(sum),
      reduce_max P(max), reduce_mean P(avg));
    - `titan.embedding` with the table's vocab dim sharded is a masked local
      lookup: ids are shifted by the shard's first row (axis_index times the
      local rows), ids outside the shard read row 0 and are zeroed; the
      result must be P(sum) on those axes and the ids replicated there.

    Rejected with an error that names the value or op, the dim, the mesh
    axis and the sizes: uneven shards (a sharded dim not divisible by the
    axes sharding it; there is no padding), sharded dynamic dims, a softmax,
    norm or RoPE whose normalized or rotated dim is sharded, attention with
    the sequence sharded (context parallel) and cross-entropy with the vocab
    sharded (loss parallel), "not supported yet", as are concatenation along
    a sharded dim, partial slices of a sharded dim, reshapes that would move
    elements between ranks (checked rank by rank), elementwise ops whose
    operands and result are sharded differently, reduce results whose
    placements disagree with the reduced sharded dims, ops the pass has no
    rule for on sharded values, collectives in the global program,
    redistributions between meshes and returned values whose placements
    differ from the declared result placements.
  }];
  let dependentDialects = ["::mlir::titan::TitanDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // TITAN_PASSES
