// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=1 rank=0 microbatches=2" | FileCheck %s
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=1 rank=0 microbatches=2" | FileCheck %s --check-prefix=CE
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=1 rank=0 microbatches=2" | titan-opt --split-input-file --verify-each > /dev/null
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2" 2>&1 | FileCheck %s --check-prefix=STAGES

// Gradient accumulation (training.global_batch_size) is a pipeline of one
// rank and one stage: the whole model, transformer blocks or none (this
// one has none, which two stages cannot split). Tokens [2, 4] hold one
// microbatch: the program takes both ([4, 4]), runs microbatch 0's
// forward and backward, then microbatch 1's (1F1B), sums the weight's
// gradients, divides them and the loss by 2, and updates the weight once;
// nothing is sent or received.

// CHECK-LABEL: titan.mesh @pipeline ["pp"=1]
// CHECK: func.func @train_step(%[[W:.*]]: tensor<4x4xf32> {titan.name = "w", titan.role = "param"}, %[[X:.*]]: tensor<4x4xf32> {titan.name = "tokens", titan.role = "input"}, %[[LR:.*]]: tensor<f32> {titan.name = "lr", titan.role = "input"})
// CHECK-SAME: degree = 1 : i64
// CHECK-SAME: microbatches = 2 : i64
// CHECK-SAME: stage_blocks = array<i64: 0>
// CHECK: %[[X0:.*]] = titan.slice %{{.*}} [0, 0, 0] to [1, 2, 4]
// CHECK: %[[H0:.*]] = titan.matmul %{{.*}}, %[[W]]
// CHECK: %[[L0:.*]] = titan.reduce_sum
// CHECK: %[[G0:.*]] = titan.matmul %{{.*}}, %{{.*}} transpose_lhs
// CHECK: titan.slice %{{.*}} [0, 2, 0] to [1, 4, 4]
// CHECK: %[[L1:.*]] = titan.reduce_sum
// CHECK: %[[LOSS:.*]] = titan.add %[[L0]], %[[L1]]
// CHECK: %[[G1:.*]] = titan.matmul %{{.*}}, %{{.*}} transpose_lhs
// CHECK: %[[G:.*]] = titan.add %[[G0]], %[[G1]]
// CHECK: titan.scale %[[LOSS]] by 5.000000e-01
// CHECK: %[[MEAN:.*]] = titan.scale %[[G]] by 5.000000e-01
// CHECK: %[[U:.*]] = titan.mul %[[MEAN]]
// CHECK: titan.sub %[[W]], %[[U]]
// CHECK-NOT: titan.send
// CHECK-NOT: titan.recv

// STAGES: error: titan-partition-pipeline: the model has 0 transformer blocks, fewer than the 2 pipeline stages

#f = loc(fused<"titan.phase.forward">[fused<"titan.module.proj">[unknown]])
#fl = loc(fused<"titan.phase.forward">[unknown])
#b = loc(fused<"titan.phase.backward">[fused<"titan.module.proj">[unknown]])
#bl = loc(fused<"titan.phase.backward">[unknown])
#o = loc(fused<"titan.phase.optimizer">[fused<"titan.module.proj">[unknown]])
func.func @train_step(
    %w: tensor<4x4xf32> {titan.name = "w", titan.role = "param"},
    %x: tensor<2x4xf32> {titan.name = "tokens", titan.role = "input"},
    %lr: tensor<f32> {titan.name = "lr", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"},
        tensor<4x4xf32> {titan.name = "param.w"}) {
  %h = titan.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#f)
  %sq = titan.mul %h, %h : tensor<2x4xf32> loc(#fl)
  %loss = titan.reduce_sum %sq dims [0, 1] : tensor<2x4xf32> -> tensor<f32> loc(#fl)
  %dh = titan.scale %h by 2.0 : tensor<2x4xf32> loc(#bl)
  %gw = titan.matmul %x, %dh transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32> loc(#b)
  %l = titan.broadcast_in_dim %lr dims [] : tensor<f32> -> tensor<4x4xf32> loc(#o)
  %u = titan.mul %gw, %l : tensor<4x4xf32> loc(#o)
  %n = titan.sub %w, %u : tensor<4x4xf32> loc(#o)
  return %loss, %n : tensor<f32>, tensor<4x4xf32>
}

// -----

// A cross-entropy counts by its microbatch's share of the step's labels:
// each microbatch's labels not ignore_index are counted (before the first
// microbatch runs), the weight of microbatch m is 2 x count_m / max(total,
// 1), its loss is weighted (0 without labels: its mean is NaN) and so is
// the cotangent of its gradient; after the sums' division by 2 the loss
// and the gradient are the means over all the step's labels.

// CE-LABEL: func.func @train_step({{.*}}titan.name = "labels"
// CE: %[[LABELS0:.*]] = titan.reshape %{{.*}} : tensor<1x2xi64> -> tensor<2xi64>
// CE: %[[IGN0:.*]] = titan.constant dense<7> : tensor<2xi64>
// CE: %[[VALID0:.*]] = titan.compare ne, %[[LABELS0]], %[[IGN0]]
// CE: %[[ONES0:.*]] = titan.cast %[[VALID0]]
// CE: %[[COUNT0:.*]] = titan.reduce_sum %[[ONES0]]
// CE: titan.slice %{{.*}} [0, 2] to [1, 4]
// CE: %[[LABELS1:.*]] = titan.reshape %{{.*}} : tensor<1x2xi64> -> tensor<2xi64>
// CE: %[[COUNT1:.*]] = titan.reduce_sum
// CE: %[[TOTAL:.*]] = titan.add %[[COUNT0]], %[[COUNT1]]
// CE: %[[ATLEAST:.*]] = titan.max %[[TOTAL]], %{{.*}}
// CE: %[[SHARE0:.*]] = titan.div %[[COUNT0]], %[[ATLEAST]]
// CE: %[[W0:.*]] = titan.scale %[[SHARE0]] by 2.000000e+00
// CE: %[[SHARE1:.*]] = titan.div %[[COUNT1]], %[[ATLEAST]]
// CE: %[[W1:.*]] = titan.scale %[[SHARE1]] by 2.000000e+00
// CE: %[[MEAN0:.*]] = titan.cross_entropy %{{.*}}, %[[LABELS0]] ignore_index 7
// CE: %[[WEIGHTED0:.*]] = titan.mul %[[MEAN0]], %[[W0]]
// CE: %[[SOME0:.*]] = titan.compare gt, %[[COUNT0]]
// CE: %[[LOSS0:.*]] = titan.select %[[SOME0]], %[[WEIGHTED0]]
// CE: %[[COT0:.*]] = titan.mul %{{.*}}, %[[W0]]
// CE: titan.cross_entropy_grad %{{.*}}, %[[LABELS0]], %[[COT0]] ignore_index 7
// CE: %[[MEAN1:.*]] = titan.cross_entropy %{{.*}}, %[[LABELS1]] ignore_index 7
// CE: %[[WEIGHTED1:.*]] = titan.mul %[[MEAN1]], %[[W1]]
// CE: %[[LOSS1:.*]] = titan.select %{{.*}}, %[[WEIGHTED1]]
// CE: %[[LOSS:.*]] = titan.add %[[LOSS0]], %[[LOSS1]]
// CE: %[[COT1:.*]] = titan.mul %{{.*}}, %[[W1]]
// CE: titan.cross_entropy_grad %{{.*}}, %[[LABELS1]], %[[COT1]] ignore_index 7
// CE: titan.scale %[[LOSS]] by 5.000000e-01

#cf = loc(fused<"titan.phase.forward">[fused<"titan.module.proj">[unknown]])
#cfl = loc(fused<"titan.phase.forward">[unknown])
#cb = loc(fused<"titan.phase.backward">[fused<"titan.module.proj">[unknown]])
#cbl = loc(fused<"titan.phase.backward">[unknown])
#co = loc(fused<"titan.phase.optimizer">[fused<"titan.module.proj">[unknown]])
func.func @train_step(
    %w: tensor<4x8xf32> {titan.name = "w", titan.role = "param"},
    %x: tensor<2x4xf32> {titan.name = "tokens", titan.role = "input"},
    %labels: tensor<2xi64> {titan.name = "labels", titan.role = "input"},
    %lr: tensor<f32> {titan.name = "lr", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"},
        tensor<4x8xf32> {titan.name = "param.w"}) {
  %logits = titan.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32> loc(#cf)
  %loss = titan.cross_entropy %logits, %labels ignore_index 7 : tensor<2x8xf32>, tensor<2xi64> -> tensor<f32> loc(#cfl)
  %one = titan.constant dense<1.0> : tensor<f32> loc(#cbl)
  %dlogits = titan.cross_entropy_grad %logits, %labels, %one ignore_index 7 : tensor<2x8xf32>, tensor<2xi64>, tensor<f32> loc(#cbl)
  %gw = titan.matmul %x, %dlogits transpose_lhs : tensor<2x4xf32>, tensor<2x8xf32> -> tensor<4x8xf32> loc(#cb)
  %l = titan.broadcast_in_dim %lr dims [] : tensor<f32> -> tensor<4x8xf32> loc(#co)
  %u = titan.mul %gw, %l : tensor<4x8xf32> loc(#co)
  %n = titan.sub %w, %u : tensor<4x8xf32> loc(#co)
  return %loss, %n : tensor<f32>, tensor<4x8xf32>
}
