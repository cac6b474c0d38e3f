// FSDP on 4 simulated ranks: the weight is sharded S(0) and all-gathered
// before use; the batch is sharded S(0); the weight gradient dy^T x is
// reduce-scattered back to S(0). Also all_reduce avg and max.
// RUN: %python %S/Inputs/oracle.py gen fsdp %t
// RUN: titan-eval %s --entry=main --ranks=4 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check fsdp %t

titan.mesh @mesh ["fsdp"=4]

func.func @main(
    %w: tensor<2x4xf32> {titan.name = "layers.0.w", titan.placements = #titan.placements<@mesh, [S(0)]>},
    %x: tensor<2x4xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(0)]>},
    %dy: tensor<2x8xf32> {titan.name = "dy", titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<2x8xf32> {titan.name = "y", titan.placements = #titan.placements<@mesh, [S(0)]>},
        tensor<2x4xf32> {titan.name = "grad_w", titan.placements = #titan.placements<@mesh, [S(0)]>},
        tensor<2x8xf32> {titan.name = "dy_avg"},
        tensor<2x8xf32> {titan.name = "dy_max"}) {
  %full = titan.all_gather %w on @mesh ["fsdp"] dim 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  %y = titan.matmul %x, %full transpose_rhs : tensor<2x4xf32>, tensor<8x4xf32> -> tensor<2x8xf32>
  %g = titan.matmul %dy, %x transpose_lhs : tensor<2x8xf32>, tensor<2x4xf32> -> tensor<8x4xf32>
  %gw = titan.reduce_scatter %g on @mesh ["fsdp"] dim 0 sum : tensor<8x4xf32> -> tensor<2x4xf32>
  %avg = titan.all_reduce %dy on @mesh ["fsdp"] avg : tensor<2x8xf32>
  %max = titan.all_reduce %dy on @mesh ["fsdp"] max : tensor<2x8xf32>
  return %y, %gw, %avg, %max : tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}
