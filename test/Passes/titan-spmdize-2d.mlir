// A 2D mesh ["dp"=2, "tp"=2] on 4 ranks: an FSDP x TP MLP (weights sharded
// on both axes, all-gathered over "dp" only), the multi-axis transition
// [S(0), P(sum)] -> [R, S(1)] (reduce-scatter over "tp", all-gather over
// "dp"), an all-to-all [S(0), R] -> [S(1), R], R -> S (local chunk by axis
// index) and R -> P(sum) (kept on coordinate 0), a weight gradient reduced
// and scattered back to the weight's 2D shards, and rank-dependent constants
// and iotas. The spmdized program on 4 ranks gives the global program's
// outputs.
// RUN: %python %S/Inputs/spmdize_numerics.py gen %t x:8x16 w1:32x16 w2:16x32
// RUN: titan-eval %s --entry=main --ranks=1 --inputs=%t --outputs=%t/ref
// RUN: titan-opt %s --titan-spmdize --titan-redistribute-to-collectives -o %t/spmd.mlir
// RUN: titan-eval %t/spmd.mlir --entry=main --ranks=4 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/spmdize_numerics.py compare %t/ref %t/out
// RUN: FileCheck %s < %t/spmd.mlir

titan.mesh @mesh ["dp"=2, "tp"=2]

// CHECK-LABEL: func.func @main
// CHECK-SAME: tensor<4x16xf32> {titan.name = "x"
// CHECK-SAME: tensor<8x16xf32> {titan.name = "w1"
// CHECK-SAME: tensor<8x16xf32> {titan.name = "w2"
// The nested [S(0), S(0)] -> [R, S(0)] undoes the inner shard first (DTensor's
// order): gather over "tp", then "dp", then keep the "tp" chunk.
// CHECK: titan.all_gather %{{.*}} on @mesh ["tp"] dim 0 : tensor<8x16xf32> -> tensor<16x16xf32>
// CHECK: %[[W1:.*]] = titan.all_gather %{{.*}} on @mesh ["dp"] dim 0 : tensor<16x16xf32> -> tensor<32x16xf32>
// CHECK: %[[TP:.*]] = titan.axis_index on @mesh ["tp"] : tensor<i64>
// CHECK: %[[HI:.*]] = titan.slice %[[W1]] [16, 0] to [32, 16]
// CHECK: %[[LO:.*]] = titan.slice %[[W1]] [0, 0] to [16, 16]
// CHECK: %[[IS0:.*]] = titan.compare eq, %[[TP]]
// CHECK: %[[MASK:.*]] = titan.broadcast_in_dim %[[IS0]] dims [] : tensor<i1> -> tensor<16x16xi1>
// CHECK: titan.select %[[MASK]], %[[LO]], %[[HI]] : tensor<16x16xi1>, tensor<16x16xf32>
// CHECK: titan.all_gather {{.*}} on @mesh ["dp"] dim 0 : tensor<8x16xf32> -> tensor<16x16xf32>
// CHECK: titan.reduce_scatter {{.*}} on @mesh ["tp"] dim 1 sum : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK: titan.all_gather {{.*}} on @mesh ["dp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["tp"] sum : tensor<4x16xf32>
// CHECK: titan.all_to_all {{.*}} on @mesh ["dp"] split 1 concat 0 : tensor<4x16xf32> -> tensor<8x8xf32>
// CHECK: titan.reduce_scatter {{.*}} on @mesh ["dp"] dim 0 sum : tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: titan.reshape {{.*}} : tensor<4x8xf32> -> tensor<4x2x4xf32>
func.func @main(
    %x: tensor<8x16xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %w1: tensor<32x16xf32> {titan.name = "w1", titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
    %w2: tensor<16x32xf32> {titan.name = "w2", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>})
    -> (tensor<8x16xf32> {titan.name = "out_rs", titan.placements = #titan.placements<@mesh, [R, S(1)]>},
        tensor<8x16xf32> {titan.name = "out", titan.placements = #titan.placements<@mesh, [S(0), R]>},
        tensor<8x16xf32> {titan.name = "x_t", titan.placements = #titan.placements<@mesh, [S(1), R]>},
        tensor<8x16xf32> {titan.name = "x_chunk", titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
        tensor<8x16xf32> {titan.name = "x_partial", titan.placements = #titan.placements<@mesh, [S(0), P(sum)]>},
        tensor<16x32xf32> {titan.name = "w2_grad", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>},
        tensor<4x4xf32> {titan.name = "table", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>},
        tensor<8x4xf32> {titan.name = "positions", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>},
        tensor<8x4xf32> {titan.name = "ones", titan.placements = #titan.placements<@mesh, [S(0), P(sum)]>},
        tensor<8x4x4xf32> {titan.name = "x_3d", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>}) {
  %w1f = titan.redistribute %w1 to <@mesh, [R, S(0)]> : tensor<32x16xf32>
  %w2f = titan.redistribute %w2 to <@mesh, [R, S(1)]> : tensor<16x32xf32>
  %h = titan.matmul %x, %w1f transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %a = titan.gelu %h approximate none {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<8x32xf32>
  %o = titan.matmul %a, %w2f transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), P(sum)]>]} : tensor<8x32xf32>, tensor<16x32xf32> -> tensor<8x16xf32>
  %out_rs = titan.redistribute %o to <@mesh, [R, S(1)]> : tensor<8x16xf32>
  %out = titan.redistribute %o to <@mesh, [S(0), R]> : tensor<8x16xf32>
  %x_t = titan.redistribute %x to <@mesh, [S(1), R]> : tensor<8x16xf32>
  %x_chunk = titan.redistribute %x to <@mesh, [S(0), S(0)]> : tensor<8x16xf32>
  %x_partial = titan.redistribute %x to <@mesh, [S(0), P(sum)]> : tensor<8x16xf32>
  // dW2 = dO^T a with dO = out: the batch is sharded over "dp" (P(sum)) and
  // the columns of a over "tp".
  %g = titan.matmul %out, %a transpose_lhs {titan.placements = [#titan.placements<@mesh, [P(sum), S(1)]>]} : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %w2_grad = titan.redistribute %g to <@mesh, [S(0), S(1)]> : tensor<16x32xf32>
  %table = titan.constant {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %positions = titan.iota dim 0 {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<8x4xf32>
  %ones = titan.constant {titan.placements = [#titan.placements<@mesh, [S(0), P(sum)]>]} dense<1.0> : tensor<8x4xf32>
  %x_col = titan.redistribute %x to <@mesh, [S(0), S(1)]> : tensor<8x16xf32>
  %x_3d = titan.reshape %x_col {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<8x16xf32> -> tensor<8x4x4xf32>
  return %out_rs, %out, %x_t, %x_chunk, %x_partial, %w2_grad, %table, %positions, %ones, %x_3d : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x32xf32>, tensor<4x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4x4xf32>
}
