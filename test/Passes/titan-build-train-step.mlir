// RUN: titan-opt %s --titan-build-train-step="max-norm=1.0 emit-grads=true beta1=0.9 beta2=0.95 weight-decay=0.1" | FileCheck %s
// RUN: titan-opt %s --titan-build-train-step | FileCheck %s --check-prefix=NOCLIP
// RUN: titan-opt %s --titan-build-train-step --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=PHASE
// RUN: titan-opt %s --titan-build-train-step="evaluate=true" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=EVAL

// A tiny language model: embedding -> RMSNorm -> output projection.
func.func @forward(%emb: tensor<16x8xf32> {titan.name = "tok_embeddings.weight", titan.role = "param"},
                   %norm: tensor<8xf32> {titan.name = "norm.weight", titan.role = "param"},
                   %out: tensor<16x8xf32> {titan.name = "output.weight", titan.role = "param"},
                   %tokens: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"})
    -> (tensor<2x4x16xf32> {titan.name = "logits"}) {
  %h = titan.embedding %emb, %tokens : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %n = titan.rms_norm %h, %norm eps 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>
  %logits = titan.matmul %n, %out transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// Every op of the step is stamped with its phase in its location: the
// forward up to the loss, the VJPs, then AdamW.
// PHASE-LABEL: func.func @train_step
// PHASE: titan.embedding {{.*}} loc(fused<"titan.phase.forward">
// PHASE: titan.cross_entropy {{.*}} loc(fused<"titan.phase.forward">
// PHASE: titan.cross_entropy_grad {{.*}} loc(fused<"titan.phase.backward">
// PHASE: titan.embedding_grad {{.*}} loc(fused<"titan.phase.backward">
// PHASE: titan.adamw {{.*}} loc(fused<"titan.phase.optimizer"
// PHASE-NOT: titan.phase.backward
// PHASE-NOT: titan.phase.forward
// PHASE: return

// A validation step (`evaluate`): the forward and the loss on the
// parameters alone, every op in the forward phase.
// EVAL-LABEL: func.func @train_step(
// EVAL-SAME: %[[EMB:[a-z0-9]+]]: tensor<16x8xf32> {titan.name = "tok_embeddings.weight", titan.role = "param"}
// EVAL-SAME: tensor<8xf32> {titan.name = "norm.weight", titan.role = "param"}
// EVAL-SAME: tensor<16x8xf32> {titan.name = "output.weight", titan.role = "param"}
// EVAL-SAME: %[[TOKENS:[a-z0-9]+]]: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"}
// EVAL-SAME: %[[LABELS:[a-z0-9]+]]: tensor<2x4xi64> {titan.name = "labels", titan.role = "input"}
// EVAL-SAME: -> (tensor<f32> {titan.name = "loss"})
// EVAL-NEXT: titan.embedding %[[EMB]], %[[TOKENS]] {{.*}} loc(fused<"titan.phase.forward">
// EVAL-NEXT: titan.rms_norm {{.*}} loc(fused<"titan.phase.forward">
// EVAL-NEXT: titan.matmul {{.*}} loc(fused<"titan.phase.forward">
// EVAL-NEXT: %[[LOSS:.*]] = titan.cross_entropy %{{.*}}, %[[LABELS]] {{.*}} loc(fused<"titan.phase.forward">
// EVAL-NEXT: return %[[LOSS]] : tensor<f32>

// The signature: params, moments, tokens, labels, lr, step; named results.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[EMB:[a-z0-9]+]]: tensor<16x8xf32> {titan.name = "tok_embeddings.weight", titan.role = "param"}
// CHECK-SAME: %[[NORM:[a-z0-9]+]]: tensor<8xf32> {titan.name = "norm.weight", titan.role = "param"}
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: tensor<16x8xf32> {titan.name = "output.weight", titan.role = "param"}
// CHECK-SAME: %[[M_EMB:[a-z0-9]+]]: tensor<16x8xf32> {titan.name = "exp_avg.tok_embeddings.weight", titan.role = "state"}
// CHECK-SAME: {titan.name = "exp_avg_sq.output.weight", titan.role = "state"}
// CHECK-SAME: %[[TOKENS:[a-z0-9]+]]: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"}
// CHECK-SAME: %[[LABELS:[a-z0-9]+]]: tensor<2x4xi64> {titan.name = "labels", titan.role = "input"}
// CHECK-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {titan.name = "lr", titan.role = "input"}
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<f32> {titan.name = "step", titan.role = "input"}
// CHECK-SAME: -> (tensor<f32> {titan.name = "loss"}, tensor<16x8xf32> {titan.name = "param.tok_embeddings.weight"}
// CHECK-SAME: tensor<16x8xf32> {titan.name = "exp_avg.tok_embeddings.weight"}
// CHECK-SAME: tensor<16x8xf32> {titan.name = "grad.output.weight"}, tensor<f32> {titan.name = "grad_norm"})

// The forward program, then the loss over the [batch, seq] tokens as they
// are (not flattened, so that a split sequence stays split).
// CHECK: %[[H:.*]] = titan.embedding %[[EMB]], %[[TOKENS]]
// CHECK: %[[N:.*]] = titan.rms_norm %[[H]], %[[NORM]]
// CHECK: %[[LOGITS:.*]] = titan.matmul %[[N]], %[[OUT]] transpose_rhs
// CHECK-NOT: titan.reshape %[[LOGITS]]
// CHECK: %[[LOSS:.*]] = titan.cross_entropy %[[LOGITS]], %[[LABELS]] : tensor<2x4x16xf32>, tensor<2x4xi64> -> tensor<f32>

// The backward program, in reverse order of the forward.
// CHECK: %[[SEED:.*]] = titan.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DL3:.*]] = titan.cross_entropy_grad %[[LOGITS]], %[[LABELS]], %[[SEED]]
// CHECK: %[[DN:.*]] = titan.matmul %[[DL3]], %[[OUT]] : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
// CHECK: titan.matmul %[[DL3]], %[[N]] transpose_lhs
// CHECK: %[[DH:.*]], %[[DNORM:.*]] = titan.rms_norm_grad %[[H]], %[[NORM]], %[[DN]]
// CHECK: %[[DEMB:.*]] = titan.embedding_grad %[[TOKENS]], %[[DH]] : tensor<2x4xi64>, tensor<2x4x8xf32> -> tensor<16x8xf32>

// Global-norm clipping: min(1, max_norm / (norm + 1e-6)).
// CHECK: %[[NORM2:.*]] = titan.sqrt %{{.*}} : tensor<f32>
// CHECK: titan.add %[[NORM2]], %{{.*}} : tensor<f32>
// CHECK: titan.max
// CHECK: %[[COEF:.*]] = titan.neg

// AdamW: one titan.adamw per parameter, the clipping coefficient its
// grad_scale, the moments updated from their state arguments.
// CHECK: %[[NEWEMB:[a-z_0-9]+]], %[[NEWM:[a-z_0-9]+]], %{{.*}} = titan.adamw %[[EMB]], %[[DEMB]], %[[M_EMB]], %{{.*}} lr %[[LR]] step %[[STEP]] grad_scale %[[COEF]] betas 9.000000e-01, 0.94999999999999996 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<16x8xf32>, tensor<16x8xf32>{{$}}
// CHECK-COUNT-2: titan.adamw
// The returned gradients are the clipped ones.
// CHECK: %[[BCOEF:.*]] = titan.broadcast_in_dim %[[COEF]] dims [] : tensor<f32> -> tensor<16x8xf32>
// CHECK: titan.mul %[[DEMB]], %[[BCOEF]]
// The norm before clipping is the last result.
// CHECK: return %[[LOSS]], %[[NEWEMB]], {{.*}}, %[[NEWM]], {{.*}}, %[[NORM2]] :

// Without max-norm there is no clipping, and no grad.* or grad_norm
// results.
// NOCLIP-LABEL: func.func @train_step
// NOCLIP-NOT: titan.max
// NOCLIP: titan.adamw {{.*}} lr %{{.*}} step %{{.*}} betas
// NOCLIP-NOT: grad.
// NOCLIP-NOT: grad_norm
// NOCLIP: return
