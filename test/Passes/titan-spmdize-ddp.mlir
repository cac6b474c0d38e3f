// DDP on 4 ranks: replicated weights, the batch (token ids) sharded on dim 0;
// the weight gradients (contractions and reductions over the sharded batch,
// so P(sum)) are all-reduced before the SGD step, which every rank then
// computes alike. The spmdized program on 4 ranks gives the global program's
// outputs.
// RUN: %python %S/Inputs/spmdize_numerics.py gen %t tokens:8x4:i64:32 emb:32x16 w:16x16 b:16
// RUN: titan-eval %s --entry=main --ranks=1 --inputs=%t --outputs=%t/ref
// RUN: titan-opt %s --titan-spmdize --titan-redistribute-to-collectives -o %t/spmd.mlir
// RUN: titan-eval %t/spmd.mlir --entry=main --ranks=4 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/spmdize_numerics.py compare %t/ref %t/out
// RUN: FileCheck %s < %t/spmd.mlir

titan.mesh @mesh ["dp"=4]

// CHECK-LABEL: func.func @main
// CHECK-SAME: tensor<2x4xi64> {titan.name = "tokens"
// CHECK-SAME: tensor<32x16xf32> {titan.name = "emb"
// CHECK: titan.embedding {{.*}} : tensor<32x16xf32>, tensor<2x4xi64> -> tensor<2x4x16xf32>
// CHECK: titan.broadcast_in_dim {{.*}} dims [2] : tensor<16xf32> -> tensor<2x4x16xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["dp"] sum : tensor<16x16xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["dp"] sum : tensor<16xf32>
// CHECK-NOT: titan.all_gather
// CHECK: return
func.func @main(
    %tokens: tensor<8x4xi64> {titan.name = "tokens", titan.placements = #titan.placements<@mesh, [S(0)]>},
    %emb: tensor<32x16xf32> {titan.name = "emb", titan.placements = #titan.placements<@mesh, [R]>},
    %w: tensor<16x16xf32> {titan.name = "w", titan.placements = #titan.placements<@mesh, [R]>},
    %b: tensor<16xf32> {titan.name = "b", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<16x16xf32> {titan.name = "w_new", titan.placements = #titan.placements<@mesh, [R]>},
        tensor<16xf32> {titan.name = "b_new", titan.placements = #titan.placements<@mesh, [R]>},
        tensor<8x4x16xf32> {titan.name = "y", titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  %h = titan.embedding %emb, %tokens {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<32x16xf32>, tensor<8x4xi64> -> tensor<8x4x16xf32>
  %hw = titan.matmul %h, %w transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x4x16xf32>, tensor<16x16xf32> -> tensor<8x4x16xf32>
  %bb = titan.broadcast_in_dim %b dims [2] {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<16xf32> -> tensor<8x4x16xf32>
  %y = titan.add %hw, %bb {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x4x16xf32>
  %dy = titan.sigmoid %y {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x4x16xf32>
  %dy2 = titan.reshape %dy {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x4x16xf32> -> tensor<32x16xf32>
  %h2 = titan.reshape %h {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x4x16xf32> -> tensor<32x16xf32>
  %gw = titan.matmul %dy2, %h2 transpose_lhs {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<32x16xf32>, tensor<32x16xf32> -> tensor<16x16xf32>
  %gb = titan.reduce_sum %dy dims [0, 1] {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<8x4x16xf32> -> tensor<16xf32>
  %gw_r = titan.redistribute %gw to <@mesh, [R]> : tensor<16x16xf32>
  %gb_r = titan.redistribute %gb to <@mesh, [R]> : tensor<16xf32>
  %sw = titan.scale %gw_r by 1.000000e-02 {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<16x16xf32>
  %w_new = titan.sub %w, %sw {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<16x16xf32>
  %sb = titan.scale %gb_r by 1.000000e-02 {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<16xf32>
  %b_new = titan.sub %b, %sb {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<16xf32>
  return %w_new, %b_new, %y : tensor<16x16xf32>, tensor<16xf32>, tensor<8x4x16xf32>
}
