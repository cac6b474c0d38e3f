// titan.adamw (with and without a clipping coefficient and weight decay)
// against torch.optim.AdamW's step from the same state.
// RUN: %python %S/Inputs/oracle.py gen adamw %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check adamw %t
// titan-fuse-kernels' expansion (fused into kernels, which the interpreter
// runs op by op) computes the op's values bitwise.
// RUN: titan-opt %s --titan-fuse-kernels -o %t/expanded.mlir
// RUN: titan-eval %t/expanded.mlir --entry=main --inputs=%t --outputs=%t/expanded
// RUN: %python %S/../Import/Inputs/compare_npy.py %t/expanded %t/out --rtol 0 | FileCheck %s
// CHECK-COUNT-6: match {{[a-z_]+}}: [4, 8] max_rel_err=0 rtol=0.0

func.func @main(%p: tensor<4x8xf32> {titan.name = "p"},
                %g: tensor<4x8xf32> {titan.name = "g"},
                %m: tensor<4x8xf32> {titan.name = "m"},
                %v: tensor<4x8xf32> {titan.name = "v"},
                %lr: tensor<f32> {titan.name = "lr"},
                %step: tensor<f32> {titan.name = "step"},
                %clip: tensor<f32> {titan.name = "clip"})
    -> (tensor<4x8xf32> {titan.name = "p_clipped"},
        tensor<4x8xf32> {titan.name = "m_clipped"},
        tensor<4x8xf32> {titan.name = "v_clipped"},
        tensor<4x8xf32> {titan.name = "p"},
        tensor<4x8xf32> {titan.name = "m"},
        tensor<4x8xf32> {titan.name = "v"}) {
  %0:3 = titan.adamw %p, %g, %m, %v lr %lr step %step grad_scale %clip betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, tensor<4x8xf32>
  %1:3 = titan.adamw %p, %g, %m, %v lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.0 : tensor<4x8xf32>, tensor<4x8xf32>
  return %0#0, %0#1, %0#2, %1#0, %1#1, %1#2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
