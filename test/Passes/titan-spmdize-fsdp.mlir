// FSDP on 2 ranks: the batch and the weight are sharded on dim 0; the weight
// is all-gathered for the forward matmul, the weight gradient (a contraction
// over the sharded batch, so P(sum)) is reduce-scattered back to the weight's
// shards and an SGD step updates them. Scalar statistics over the sharded
// batch are P(sum) / P(avg) and all-reduced. The spmdized program on 2 ranks
// gives the global program's outputs.
// RUN: %python %S/Inputs/spmdize_numerics.py gen %t x:8x16 w:32x16
// RUN: titan-eval %s --entry=main --ranks=1 --inputs=%t --outputs=%t/ref
// RUN: titan-opt %s --titan-spmdize --titan-redistribute-to-collectives -o %t/spmd.mlir
// RUN: titan-eval %t/spmd.mlir --entry=main --ranks=2 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/spmdize_numerics.py compare %t/ref %t/out
// RUN: FileCheck %s < %t/spmd.mlir

titan.mesh @mesh ["fsdp"=2]

// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:.*]]: tensor<4x16xf32> {titan.name = "x"
// CHECK-SAME: %[[W:.*]]: tensor<16x16xf32> {titan.name = "w"
// CHECK: %[[WF:.*]] = titan.all_gather %[[W]] on @mesh ["fsdp"] dim 0 : tensor<16x16xf32> -> tensor<32x16xf32>
// CHECK: titan.matmul %[[X]], %[[WF]] transpose_rhs : tensor<4x16xf32>, tensor<32x16xf32> -> tensor<4x32xf32>
// CHECK: %[[GW:.*]] = titan.matmul {{.*}} transpose_lhs : tensor<4x32xf32>, tensor<4x16xf32> -> tensor<32x16xf32>
// CHECK: titan.reduce_scatter %[[GW]] on @mesh ["fsdp"] dim 0 sum : tensor<32x16xf32> -> tensor<16x16xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["fsdp"] sum : tensor<f32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["fsdp"] avg : tensor<32xf32>
func.func @main(
    %x: tensor<8x16xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(0)]>},
    %w: tensor<32x16xf32> {titan.name = "w", titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<32x16xf32> {titan.name = "w_new", titan.placements = #titan.placements<@mesh, [S(0)]>},
        tensor<8x32xf32> {titan.name = "y", titan.placements = #titan.placements<@mesh, [S(0)]>},
        tensor<f32> {titan.name = "loss", titan.placements = #titan.placements<@mesh, [R]>},
        tensor<32xf32> {titan.name = "mean", titan.placements = #titan.placements<@mesh, [R]>}) {
  %wf = titan.redistribute %w to <@mesh, [R]> : tensor<32x16xf32>
  %y = titan.matmul %x, %wf transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %dy = titan.tanh %y {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x32xf32>
  %gw = titan.matmul %dy, %x transpose_lhs {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<8x32xf32>, tensor<8x16xf32> -> tensor<32x16xf32>
  %gws = titan.redistribute %gw to <@mesh, [S(0)]> : tensor<32x16xf32>
  %step = titan.scale %gws by 1.000000e-01 {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<32x16xf32>
  %w_new = titan.sub %w, %step {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<32x16xf32>
  %sq = titan.mul %y, %y {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x32xf32>
  %lp = titan.reduce_sum %sq dims [0, 1] {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<8x32xf32> -> tensor<f32>
  %loss = titan.redistribute %lp to <@mesh, [R]> : tensor<f32>
  %mp = titan.reduce_mean %y dims [0] {titan.placements = [#titan.placements<@mesh, [P(avg)]>]} : tensor<8x32xf32> -> tensor<32xf32>
  %mean = titan.redistribute %mp to <@mesh, [R]> : tensor<32xf32>
  return %w_new, %y, %loss, %mean : tensor<32x16xf32>, tensor<8x32xf32>, tensor<f32>, tensor<32xf32>
}
