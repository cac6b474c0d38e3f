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

#endif // TITAN_PASSES
