// RUN: titan-opt %s --titan-build-train-step="seed=7" | FileCheck %s
// RUN: titan-opt %s --titan-build-train-step | FileCheck %s --check-prefix=DEFAULT
// RUN: titan-opt %s --titan-build-train-step="evaluate=true seed=7" | FileCheck %s --check-prefix=EVAL

// The forward's random numbers (dropout) take the step's `step` argument
// and the seed option in @train_step, so that every step of every job
// draws its own; @forward keeps drawing those of step 0. The mask gets no
// gradient: the embedding's gradient is the kept rows' scaled by 2.
func.func @forward(%emb: tensor<16x8xf32> {titan.name = "tok_embeddings.weight", titan.role = "param"},
                   %out: tensor<16x8xf32> {titan.name = "output.weight", titan.role = "param"},
                   %tokens: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"})
    -> (tensor<2x4x16xf32> {titan.name = "logits"}) {
  %h = titan.embedding %emb, %tokens : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %positions = titan.iota dim 2 : tensor<2x4x8xi64>
  %u = titan.random_uniform %positions stream 0 : tensor<2x4x8xi64> -> tensor<2x4x8xf32>
  %half = titan.constant dense<0.5> : tensor<2x4x8xf32>
  %keep = titan.compare ge, %u, %half : tensor<2x4x8xf32> -> tensor<2x4x8xi1>
  %scaled = titan.scale %h by 2.0 : tensor<2x4x8xf32>
  %zero = titan.constant dense<0.0> : tensor<2x4x8xf32>
  %d = titan.select %keep, %scaled, %zero : tensor<2x4x8xi1>, tensor<2x4x8xf32>
  %logits = titan.matmul %d, %out transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @forward
// CHECK: titan.random_uniform %{{.*}} stream 0 : tensor<2x4x8xi64>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[STEP:arg[0-9]+]]: tensor<f32> {titan.name = "step", titan.role = "input"})
// CHECK: %[[U:.*]] = titan.random_uniform %{{.*}} stream 0 seed 7 step %[[STEP]] : tensor<2x4x8xi64> -> tensor<2x4x8xf32>
// CHECK: %[[KEEP:.*]] = titan.compare ge, %[[U]]
// CHECK: titan.cross_entropy
// CHECK: %[[DGRAD:.*]] = titan.select %[[KEEP]], %{{.*}}, %{{.*}} : tensor<2x4x8xi1>, tensor<2x4x8xf32>
// CHECK: %[[HGRAD:.*]] = titan.scale %[[DGRAD]] by 2.000000e+00
// CHECK: titan.embedding_grad %{{.*}}, %[[HGRAD]]
// DEFAULT-LABEL: func.func @train_step
// DEFAULT: titan.random_uniform %{{.*}} stream 0 step %{{.*}} :
// A validation step has no step argument: its random numbers are those of
// step 0, every time.
// EVAL-LABEL: func.func @train_step
// EVAL-SAME: tensor<2x4xi64> {titan.name = "labels", titan.role = "input"}) -> (tensor<f32> {titan.name = "loss"})
// EVAL-NEXT: %[[ZERO:.*]] = titan.constant dense<0.000000e+00> : tensor<f32>
// EVAL: titan.random_uniform %{{.*}} stream 0 seed 7 step %[[ZERO]] :
// EVAL: %[[LOSS:.*]] = titan.cross_entropy
// EVAL-NEXT: return %[[LOSS]]
