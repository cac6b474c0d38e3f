// A train-step slice on a 2D mesh ["dp"=2, "tp"=2] (4 ranks): the batch
// sharded over "dp", a vocab-parallel embedding over "tp" and its cotangent
// (each rank scatter-adds the rows of its vocab shard), RMSNorm and its
// cotangents (the weight's P(sum) over the batch), and cross-entropy over the
// sharded batch with ignored labels, whose per-rank counts differ: the loss
// is each rank's mean weighted by its share of the counted labels (P(avg) and
// P(sum) forms), and the logits' cotangent is rescaled to the global count.
// The spmdized program on 4 ranks gives the global program's outputs.
// RUN: %python %S/Inputs/spmdize_numerics.py gen %t tokens:4x8:i64:16 labels:4x8:i64:4 emb:16x8 norm:8 out:16x8
// RUN: titan-eval %s --entry=main --ranks=1 --inputs=%t --outputs=%t/ref
// RUN: titan-opt %s --titan-spmdize --titan-redistribute-to-collectives -o %t/spmd.mlir
// RUN: titan-eval %t/spmd.mlir --entry=main --ranks=4 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/spmdize_numerics.py compare %t/ref %t/out
// RUN: FileCheck %s < %t/spmd.mlir

titan.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @main
// CHECK: titan.embedding {{.*}} : tensor<8x8xf32>, tensor<2x8xi64> -> tensor<2x8x8xf32>
// CHECK: titan.cross_entropy {{.*}} ignore_index 1 : tensor<2x8x16xf32>, tensor<2x8xi64> -> tensor<f32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["dp"] sum : tensor<f32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["dp"] avg : tensor<f32>
// CHECK: titan.cross_entropy_grad {{.*}} ignore_index 1 : tensor<2x8x16xf32>, tensor<2x8xi64>, tensor<f32>
// CHECK: titan.embedding_grad {{.*}} : tensor<2x8xi64>, tensor<2x8x8xf32> -> tensor<8x8xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["dp"] sum : tensor<8x8xf32>
func.func @main(
    %tokens: tensor<4x8xi64> {titan.name = "tokens", titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %labels: tensor<4x8xi64> {titan.name = "labels", titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %emb: tensor<16x8xf32> {titan.name = "emb", titan.placements = #titan.placements<@mesh, [R, S(0)]>},
    %norm: tensor<8xf32> {titan.name = "norm", titan.placements = #titan.placements<@mesh, [R, R]>},
    %out: tensor<16x8xf32> {titan.name = "out", titan.placements = #titan.placements<@mesh, [R, R]>})
    -> (tensor<f32> {titan.name = "loss", titan.placements = #titan.placements<@mesh, [R, R]>},
        tensor<f32> {titan.name = "loss_from_sum", titan.placements = #titan.placements<@mesh, [R, R]>},
        tensor<16x8xf32> {titan.name = "grad_out", titan.placements = #titan.placements<@mesh, [R, R]>},
        tensor<8xf32> {titan.name = "grad_norm", titan.placements = #titan.placements<@mesh, [R, R]>},
        tensor<16x8xf32> {titan.name = "grad_emb", titan.placements = #titan.placements<@mesh, [R, S(0)]>}) {
  %hp = titan.embedding %emb, %tokens {titan.placements = [#titan.placements<@mesh, [S(0), P(sum)]>]} : tensor<16x8xf32>, tensor<4x8xi64> -> tensor<4x8x8xf32>
  %h = titan.redistribute %hp to <@mesh, [S(0), R]> : tensor<4x8x8xf32>
  %x = titan.rms_norm %h, %norm eps 1.000000e-05 {titan.placements = [#titan.placements<@mesh, [S(0), R]>]} : tensor<4x8x8xf32>, tensor<8xf32>
  %logits = titan.matmul %x, %out transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), R]>]} : tensor<4x8x8xf32>, tensor<16x8xf32> -> tensor<4x8x16xf32>
  %lp = titan.cross_entropy %logits, %labels ignore_index 1 {titan.placements = [#titan.placements<@mesh, [P(avg), R]>]} : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<f32>
  %ls = titan.cross_entropy %logits, %labels ignore_index 1 {titan.placements = [#titan.placements<@mesh, [P(sum), R]>]} : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<f32>
  %loss_from_sum = titan.redistribute %ls to <@mesh, [R, R]> : tensor<f32>
  %loss = titan.redistribute %lp to <@mesh, [R, R]> : tensor<f32>
  %one = titan.constant {titan.placements = [#titan.placements<@mesh, [R, R]>]} dense<1.0> : tensor<f32>
  %dlogits = titan.cross_entropy_grad %logits, %labels, %one ignore_index 1 {titan.placements = [#titan.placements<@mesh, [S(0), R]>]} : tensor<4x8x16xf32>, tensor<4x8xi64>, tensor<f32>
  %dx = titan.matmul %dlogits, %out {titan.placements = [#titan.placements<@mesh, [S(0), R]>]} : tensor<4x8x16xf32>, tensor<16x8xf32> -> tensor<4x8x8xf32>
  %dl2 = titan.reshape %dlogits {titan.placements = [#titan.placements<@mesh, [S(0), R]>]} : tensor<4x8x16xf32> -> tensor<32x16xf32>
  %x2 = titan.reshape %x {titan.placements = [#titan.placements<@mesh, [S(0), R]>]} : tensor<4x8x8xf32> -> tensor<32x8xf32>
  %gout = titan.matmul %dl2, %x2 transpose_lhs {titan.placements = [#titan.placements<@mesh, [P(sum), R]>]} : tensor<32x16xf32>, tensor<32x8xf32> -> tensor<16x8xf32>
  %grad_out = titan.redistribute %gout to <@mesh, [R, R]> : tensor<16x8xf32>
  %dh, %dw = titan.rms_norm_grad %h, %norm, %dx eps 1.000000e-05 {titan.placements = [#titan.placements<@mesh, [S(0), R]>, #titan.placements<@mesh, [P(sum), R]>]} : tensor<4x8x8xf32>, tensor<8xf32>
  %grad_norm = titan.redistribute %dw to <@mesh, [R, R]> : tensor<8xf32>
  %gemb = titan.embedding_grad %tokens, %dh {titan.placements = [#titan.placements<@mesh, [P(sum), S(0)]>]} : tensor<4x8xi64>, tensor<4x8x8xf32> -> tensor<16x8xf32>
  %grad_emb = titan.redistribute %gemb to <@mesh, [R, S(0)]> : tensor<16x8xf32>
  return %loss, %loss_from_sum, %grad_out, %grad_norm, %grad_emb : tensor<f32>, tensor<f32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>
}
