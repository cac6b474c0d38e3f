// RUN: titan-opt %s --split-input-file --titan-step-in-backward | FileCheck %s

// Each AdamW step moves up to right after the last op it must follow, with
// the view of its gradient that the schedule sank right before it. %w's
// gradient is complete after the first matmul, but the backward still
// reads %w itself (the input gradient), so its step follows that read.
// %n's step follows its gradient's all-reduce, which stays where it is,
// and the last reader of its moment. Nothing moves down.
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[GW:.*]] = titan.matmul %arg4, %arg5 transpose_lhs
// CHECK-NEXT: %[[DX:.*]] = titan.matmul %arg5, %arg0 transpose_rhs
// CHECK-NEXT: %[[V:.*]] = titan.reshape %[[GW]]
// CHECK-NEXT: titan.adamw %arg0, %[[V]], %arg1, %arg2
// CHECK-NEXT: %[[S:.*]] = titan.reduce_sum %[[DX]]
// CHECK-NEXT: %[[R:.*]] = titan.all_reduce %[[S]]
// CHECK-NEXT: %[[M:.*]] = titan.neg %arg7
// CHECK-NEXT: titan.adamw %arg6, %[[R]], %arg7, %arg8
// CHECK-NEXT: %[[E:.*]] = titan.exp %[[DX]]
// CHECK-NEXT: return
titan.mesh @mesh ["dp"=2]
func.func @train_step(%w: tensor<4x4xf32> {titan.name = "w", titan.role = "param"},
                      %mw: tensor<4x4xf32> {titan.name = "exp_avg.w", titan.role = "state"},
                      %vw: tensor<4x4xf32> {titan.name = "exp_avg_sq.w", titan.role = "state"},
                      %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
                      %x: tensor<8x4xf32> {titan.name = "x", titan.role = "input"},
                      %dy: tensor<8x4xf32> {titan.name = "dy", titan.role = "input"},
                      %n: tensor<4xf32> {titan.name = "n", titan.role = "param"},
                      %mn: tensor<4xf32> {titan.name = "exp_avg.n", titan.role = "state"},
                      %vn: tensor<4xf32> {titan.name = "exp_avg_sq.n", titan.role = "state"},
                      %step: tensor<f32> {titan.name = "step", titan.role = "input"})
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>) {
  %gw = titan.matmul %x, %dy transpose_lhs : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %dx = titan.matmul %dy, %w transpose_rhs : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %s = titan.reduce_sum %dx dims [0] : tensor<8x4xf32> -> tensor<4xf32>
  %r = titan.all_reduce %s on @mesh ["dp"] sum : tensor<4xf32>
  %m = titan.neg %mn : tensor<4xf32>
  %e = titan.exp %dx : tensor<8x4xf32>
  %v = titan.reshape %gw : tensor<4x4xf32> -> tensor<4x4xf32>
  %w1:3 = titan.adamw %w, %v, %mw, %vw lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<4x4xf32>, tensor<4x4xf32>
  %n1:3 = titan.adamw %n, %r, %mn, %vn lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<4xf32>, tensor<4xf32>
  return %w1#0, %w1#1, %w1#2, %n1#0, %n1#1, %n1#2, %e, %m : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>
}

// -----

// A step that writes the forward's bf16 copy of its parameter
// (titan-keep-param-copies) also follows the last read of the copy it
// replaces, here the backward's product after the gradient is complete.
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[G:.*]] = titan.neg %arg3
// CHECK-NEXT: %[[X:.*]] = titan.exp %arg4
// CHECK-NEXT: titan.adamw %arg0, %[[G]], %arg1, %arg2
// CHECK-NEXT: return
titan.mesh @mesh ["dp"=1]
func.func @train_step(%w: tensor<4xf32> {titan.name = "w", titan.role = "param"},
                      %mw: tensor<4xf32> {titan.name = "exp_avg.w", titan.role = "state"},
                      %vw: tensor<4xf32> {titan.name = "exp_avg_sq.w", titan.role = "state"},
                      %g: tensor<4xf32> {titan.name = "g", titan.role = "input"},
                      %cw: tensor<4xbf16> {titan.name = "copy.w", titan.role = "param_copy"},
                      %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
                      %step: tensor<f32> {titan.name = "step", titan.role = "input"})
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>) {
  %gn = titan.neg %g : tensor<4xf32>
  %x = titan.exp %cw : tensor<4xbf16>
  %w1:4 = titan.adamw %w, %gn, %mw, %vw lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<4xf32>, tensor<4xf32> copy tensor<4xbf16>
  return %w1#0, %w1#1, %w1#2, %w1#3, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>
}
