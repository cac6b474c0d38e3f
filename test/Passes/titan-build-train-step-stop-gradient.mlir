// RUN: titan-opt %s --titan-build-train-step="emit-grads=true" | FileCheck %s

// A stop_gradient passes its input's values but no cotangent: the output
// projection reads the embedding through one, so no gradient reaches the
// embedding table (no embedding_grad). As torch.optim.AdamW skips a
// parameter whose .grad is None, the table gets no titan.adamw: the step
// returns it and its moments as they are (the arguments themselves), and a
// zero gradient; output.weight's is a product, updated by the one AdamW.
// Once the gradients are built no stop_gradient is left, in the step or in
// the forward.
func.func @forward(%emb: tensor<16x8xf32> {titan.name = "tok_embeddings.weight", titan.role = "param"},
                   %out: tensor<16x8xf32> {titan.name = "output.weight", titan.role = "param"},
                   %tokens: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"})
    -> (tensor<2x4x16xf32> {titan.name = "logits"}) {
  %h = titan.embedding %emb, %tokens : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %fixed = titan.stop_gradient %h : tensor<2x4x8xf32>
  %logits = titan.matmul %fixed, %out transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// CHECK-NOT: titan.stop_gradient
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[EMB:[a-z0-9]+]]: tensor<16x8xf32> {titan.name = "tok_embeddings.weight"
// CHECK-SAME: %[[AVG:[a-z0-9]+]]: tensor<16x8xf32> {titan.name = "exp_avg.tok_embeddings.weight"
// CHECK-SAME: %[[AVGSQ:[a-z0-9]+]]: tensor<16x8xf32> {titan.name = "exp_avg_sq.tok_embeddings.weight"
// CHECK-NOT: titan.stop_gradient
// CHECK-NOT: titan.embedding_grad
// CHECK: %[[GRAD:.*]] = titan.reshape
// CHECK: %[[NEW:[a-z_0-9]+]], %[[NEWAVG:[a-z_0-9]+]], %[[NEWAVGSQ:[a-z_0-9]+]] = titan.adamw %arg1, %[[GRAD]]
// CHECK-NOT: titan.adamw
// CHECK: %[[ZERO:.*]] = titan.constant dense<0.000000e+00> : tensor<16x8xf32>
// CHECK-NOT: titan.stop_gradient
// CHECK-NOT: titan.adamw
// CHECK: return %{{[0-9]+}}, %[[EMB]], %[[NEW]], %[[AVG]], %[[NEWAVG]], %[[AVGSQ]], %[[NEWAVGSQ]], %[[ZERO]], %[[GRAD]] :
