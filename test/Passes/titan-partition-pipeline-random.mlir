// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 schedule=GPipe" -verify-diagnostics | FileCheck %s

// Dropout under pipeline parallelism: each microbatch draws its own random
// numbers, those its rows draw without pipelining. A rank's program
// computes the positions (the iotas, which do not depend on the
// microbatch) once; microbatch m adds the offset of its rows in the whole
// batch: m * 2 rows * 4 elements.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[POS:.*]] = titan.iota dim 1 : tensor<2x4xi64>
// CHECK: %[[OFF0:.*]] = titan.constant dense<0> : tensor<2xi64>
// CHECK: %[[COL0:.*]] = titan.reshape %[[OFF0]] : tensor<2xi64> -> tensor<2x1xi64>
// CHECK: %[[ALL0:.*]] = titan.broadcast_in_dim %[[COL0]]
// CHECK: %[[MOVED0:.*]] = titan.add %[[POS]], %[[ALL0]] : tensor<2x4xi64>
// CHECK: titan.random_uniform %[[MOVED0]] stream 0 seed 42 step %{{.*}} :
// CHECK: titan.send
// CHECK: %[[OFF1:.*]] = titan.constant dense<8> : tensor<2xi64>
// CHECK: %[[COL1:.*]] = titan.reshape %[[OFF1]]
// CHECK: %[[ALL1:.*]] = titan.broadcast_in_dim %[[COL1]]
// CHECK: %[[MOVED1:.*]] = titan.add %[[POS]], %[[ALL1]] : tensor<2x4xi64>
// CHECK: titan.random_uniform %[[MOVED1]] stream 0 seed 42 step %{{.*}} :
// CHECK: titan.send

#f0 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0">[unknown]])
#f1 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.1">[unknown]])
#fl = loc(fused<"titan.phase.forward">[unknown])
#b0 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.0">[unknown]])
#b1 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.1">[unknown]])
#bl = loc(fused<"titan.phase.backward">[unknown])
#o0 = loc(fused<"titan.phase.optimizer">[fused<"titan.module.layers.0">[unknown]])
#o1 = loc(fused<"titan.phase.optimizer">[fused<"titan.module.layers.1">[unknown]])
func.func @train_step(
    %w0: tensor<4x4xf32> {titan.name = "layers.0.w", titan.role = "param"},
    %w1: tensor<4x4xf32> {titan.name = "layers.1.w", titan.role = "param"},
    %x: tensor<2x4xf32> {titan.name = "tokens", titan.role = "input"},
    %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
    %step: tensor<f32> {titan.name = "step", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"},
        tensor<4x4xf32> {titan.name = "param.layers.0.w"},
        tensor<4x4xf32> {titan.name = "param.layers.1.w"}) {
  %h0 = titan.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#f0)
  %pos = titan.iota dim 1 : tensor<2x4xi64> loc(#f0)
  %u = titan.random_uniform %pos stream 0 seed 42 step %step : tensor<2x4xi64> -> tensor<2x4xf32> loc(#f0)
  %half = titan.constant dense<0.5> : tensor<2x4xf32> loc(#f0)
  %keep = titan.compare ge, %u, %half : tensor<2x4xf32> -> tensor<2x4xi1> loc(#f0)
  %zero = titan.constant dense<0.0> : tensor<2x4xf32> loc(#f0)
  %d = titan.select %keep, %h0, %zero : tensor<2x4xi1>, tensor<2x4xf32> loc(#f0)
  %h1 = titan.matmul %d, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#f1)
  %sq = titan.mul %h1, %h1 : tensor<2x4xf32> loc(#fl)
  %loss = titan.reduce_sum %sq dims [0, 1] : tensor<2x4xf32> -> tensor<f32> loc(#fl)
  %dh1 = titan.scale %h1 by 2.0 : tensor<2x4xf32> loc(#bl)
  %gw1 = titan.matmul %d, %dh1 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32> loc(#b1)
  %dd = titan.matmul %dh1, %w1 transpose_rhs : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#b1)
  %dh0 = titan.select %keep, %dd, %zero : tensor<2x4xi1>, tensor<2x4xf32> loc(#b0)
  %gw0 = titan.matmul %x, %dh0 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32> loc(#b0)
  %l0 = titan.broadcast_in_dim %lr dims [] : tensor<f32> -> tensor<4x4xf32> loc(#o0)
  %u0 = titan.mul %gw0, %l0 : tensor<4x4xf32> loc(#o0)
  %n0 = titan.sub %w0, %u0 : tensor<4x4xf32> loc(#o0)
  %l1 = titan.broadcast_in_dim %lr dims [] : tensor<f32> -> tensor<4x4xf32> loc(#o1)
  %u1 = titan.mul %gw1, %l1 : tensor<4x4xf32> loc(#o1)
  %n1 = titan.sub %w1, %u1 : tensor<4x4xf32> loc(#o1)
  return %loss, %n0, %n1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Random numbers over a tensor without the batch as its first dim (a
// weight's, DropConnect) have no rows to move with the microbatch.
#f0 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0">[unknown]])
#f1 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.1">[unknown]])
#fl = loc(fused<"titan.phase.forward">[unknown])
#b1 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.1">[unknown]])
#bl = loc(fused<"titan.phase.backward">[unknown])
#o1 = loc(fused<"titan.phase.optimizer">[fused<"titan.module.layers.1">[unknown]])
func.func @train_step(
    %w0: tensor<4x4xf32> {titan.name = "layers.0.w", titan.role = "param"},
    %w1: tensor<4x4xf32> {titan.name = "layers.1.w", titan.role = "param"},
    %x: tensor<2x4xf32> {titan.name = "tokens", titan.role = "input"},
    %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
    %step: tensor<f32> {titan.name = "step", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"},
        tensor<4x4xf32> {titan.name = "param.layers.1.w"}) {
  %pos = titan.iota dim 1 : tensor<4x4xi64> loc(#f0)
  // expected-error @+1 {{titan-partition-pipeline: random numbers (dropout, torch.rand, bernoulli_, ...) of a tensor whose first dim is not the batch are not supported under pipeline parallelism}}
  %u = titan.random_uniform %pos stream 0 seed 42 step %step : tensor<4x4xi64> -> tensor<4x4xf32>
  %w = titan.mul %w0, %u : tensor<4x4xf32> loc(#f0)
  %h0 = titan.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#f0)
  %h1 = titan.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#f1)
  %sq = titan.mul %h1, %h1 : tensor<2x4xf32> loc(#fl)
  %loss = titan.reduce_sum %sq dims [0, 1] : tensor<2x4xf32> -> tensor<f32> loc(#fl)
  %dh1 = titan.scale %h1 by 2.0 : tensor<2x4xf32> loc(#bl)
  %gw1 = titan.matmul %h0, %dh1 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32> loc(#b1)
  %l1 = titan.broadcast_in_dim %lr dims [] : tensor<f32> -> tensor<4x4xf32> loc(#o1)
  %u1 = titan.mul %gw1, %l1 : tensor<4x4xf32> loc(#o1)
  %n1 = titan.sub %w1, %u1 : tensor<4x4xf32> loc(#o1)
  return %loss, %n1 : tensor<f32>, tensor<4x4xf32>
}
