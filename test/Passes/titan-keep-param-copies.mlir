// RUN: titan-opt %s --titan-keep-param-copies --split-input-file | FileCheck %s

// A mixed-precision step: the weight's two casts to bf16 (its forward
// use, and its clone recomputed in the backward) read the new argument
// copy.w, which AdamW writes with the update and the step returns after
// param.w. The norm weight, read in f32 only, keeps no copy.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x4xf32> {titan.name = "w", titan.role = "param"}
// CHECK-SAME: %[[WC:[^:]*]]: tensor<4x4xbf16> {titan.name = "copy.w", titan.role = "param_copy"})
// CHECK-SAME: -> (tensor<f32> {titan.name = "loss"}, tensor<4x4xf32> {titan.name = "param.w"}, tensor<4x4xbf16> {titan.name = "copy.w"}, tensor<4xf32> {titan.name = "param.n"}, tensor<4x4xf32> {titan.name = "exp_avg.w"}
// CHECK-NOT: titan.cast %[[W]]
// CHECK: titan.matmul %{{.*}}, %[[WC]] transpose_rhs
// CHECK: titan.matmul %{{.*}}, %[[WC]] :
// CHECK: %[[P:[^,]*]], %[[M:[^,]*]], %[[V:[^,]*]], %[[C:[^ ]*]] = titan.adamw %[[W]], %{{.*}} : tensor<4x4xf32>, tensor<4x4xbf16> copy tensor<4x4xbf16>
// CHECK-NEXT: %[[PN:[^,]*]], %[[MN:[^,]*]], %[[VN:[^ ]*]] = titan.adamw %{{.*}} : tensor<4xf32>, tensor<4xf32>{{$}}
// CHECK-NEXT: return %{{.*}}, %[[P]], %[[C]], %[[PN]], %[[M]], %[[MN]], %[[V]], %[[VN]] :
func.func @train_step(%w: tensor<4x4xf32> {titan.name = "w", titan.role = "param"},
                      %n: tensor<4xf32> {titan.name = "n", titan.role = "param"},
                      %mw: tensor<4x4xf32> {titan.name = "exp_avg.w", titan.role = "state"},
                      %mn: tensor<4xf32> {titan.name = "exp_avg.n", titan.role = "state"},
                      %vw: tensor<4x4xf32> {titan.name = "exp_avg_sq.w", titan.role = "state"},
                      %vn: tensor<4xf32> {titan.name = "exp_avg_sq.n", titan.role = "state"},
                      %x: tensor<4x4xbf16> {titan.name = "x", titan.role = "input"},
                      %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
                      %step: tensor<f32> {titan.name = "step", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"}, tensor<4x4xf32> {titan.name = "param.w"},
        tensor<4xf32> {titan.name = "param.n"}, tensor<4x4xf32> {titan.name = "exp_avg.w"},
        tensor<4xf32> {titan.name = "exp_avg.n"}, tensor<4x4xf32> {titan.name = "exp_avg_sq.w"},
        tensor<4xf32> {titan.name = "exp_avg_sq.n"}) {
  %wb = titan.cast %w : tensor<4x4xf32> to tensor<4x4xbf16>
  %y = titan.matmul %x, %wb transpose_rhs : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %y32 = titan.cast %y : tensor<4x4xbf16> to tensor<4x4xf32>
  %loss = titan.reduce_sum %y32 dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
  %wb2 = titan.cast %w {titan.recompute} : tensor<4x4xf32> to tensor<4x4xbf16>
  %dx = titan.matmul %y, %wb2 : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %gw = titan.matmul %dx, %x transpose_lhs : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16>
  %gn = titan.reduce_sum %y32 dims [0] : tensor<4x4xf32> -> tensor<4xf32>
  %p, %m, %v = titan.adamw %w, %gw, %mw, %vw lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<4x4xf32>, tensor<4x4xbf16>
  %pn, %mn2, %vn2 = titan.adamw %n, %gn, %mn, %vn lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<4xf32>, tensor<4xf32>
  return %loss, %p, %pn, %m, %mn2, %v, %vn2 : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>
}

// -----

// Left alone: a parameter whose update the step does not return (it would
// not persist, nor would the copy), a widening cast (no narrower copy to
// keep), a parameter cast to two narrow types, and an embedding table (its
// lookup casts the rows it reads).
// CHECK-LABEL: func.func @not_copied
// CHECK-NOT: param_copy
// CHECK-NOT: copy tensor
// CHECK: return
func.func @not_copied(%w: tensor<4xf32> {titan.name = "w", titan.role = "param"},
                      %u: tensor<4xbf16> {titan.name = "u", titan.role = "param"},
                      %t: tensor<4xf32> {titan.name = "t", titan.role = "param"},
                      %e: tensor<8x4xf32> {titan.name = "e", titan.role = "param"},
                      %ids: tensor<2xi64> {titan.name = "tokens", titan.role = "input"},
                      %m: tensor<4xf32> {titan.name = "exp_avg.w", titan.role = "state"},
                      %me: tensor<8x4xf32> {titan.name = "exp_avg.e", titan.role = "state"},
                      %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
                      %step: tensor<f32> {titan.name = "step", titan.role = "input"})
    -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf64> {titan.name = "loss"}, tensor<4xf16>, tensor<4xbf16>,
        tensor<4xf32> {titan.name = "param.t"}, tensor<2x4xbf16>, tensor<8x4xf32> {titan.name = "param.e"}) {
  %wb = titan.cast %w : tensor<4xf32> to tensor<4xbf16>
  %p, %m2, %v2 = titan.adamw %w, %m, %m, %m lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<4xf32>, tensor<4xf32>
  %ud = titan.cast %u : tensor<4xbf16> to tensor<4xf64>
  %th = titan.cast %t : tensor<4xf32> to tensor<4xf16>
  %tb = titan.cast %t : tensor<4xf32> to tensor<4xbf16>
  %pt, %mt, %vt = titan.adamw %t, %m, %m, %m lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<4xf32>, tensor<4xf32>
  %eb = titan.cast %e : tensor<8x4xf32> to tensor<8x4xbf16>
  %h = titan.embedding %eb, %ids : tensor<8x4xbf16>, tensor<2xi64> -> tensor<2x4xbf16>
  %pe, %me2, %ve = titan.adamw %e, %me, %me, %me lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<8x4xf32>, tensor<8x4xf32>
  return %wb, %p, %ud, %th, %tb, %pt, %h, %pe : tensor<4xbf16>, tensor<4xf32>, tensor<4xf64>, tensor<4xf16>, tensor<4xbf16>, tensor<4xf32>, tensor<2x4xbf16>, tensor<8x4xf32>
}

// -----

// FSDP: the shard's cast is gathered (through a view); the shard keeps no
// copy (the cast is 1/N of the gather's bytes, and a copy would be held
// all step).
titan.mesh @mesh ["fsdp"=2]

// CHECK-LABEL: func.func @fsdp_shard
// CHECK-NOT: param_copy
// CHECK: titan.cast %arg0
// CHECK: titan.adamw {{.*}} : tensor<2x4xf32>, tensor<2x4xf32>{{$}}
func.func @fsdp_shard(%w: tensor<2x4xf32> {titan.name = "w", titan.role = "param"},
                      %m: tensor<2x4xf32> {titan.name = "exp_avg.w", titan.role = "state"},
                      %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
                      %step: tensor<f32> {titan.name = "step", titan.role = "input"})
    -> (tensor<4x4xbf16>, tensor<2x4xf32> {titan.name = "param.w"}) {
  %wb = titan.cast %w : tensor<2x4xf32> to tensor<2x4xbf16>
  %flat = titan.reshape %wb : tensor<2x4xbf16> -> tensor<8xbf16>
  %g = titan.all_gather %flat on @mesh ["fsdp"] dim 0 : tensor<8xbf16> -> tensor<16xbf16>
  %full = titan.reshape %g : tensor<16xbf16> -> tensor<4x4xbf16>
  %p, %m2, %v2 = titan.adamw %w, %m, %m, %m lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<2x4xf32>, tensor<2x4xf32>
  return %full, %p : tensor<4x4xbf16>, tensor<2x4xf32>
}
