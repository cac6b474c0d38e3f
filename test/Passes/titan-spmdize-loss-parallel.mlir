// Loss parallel on a 2D mesh ["dp"=2, "tp"=2] (4 ranks): the output
// projection is sharded on the vocab over "tp", so the logits are S(last);
// cross-entropy takes its softmax statistics from all-reduces (max, sum of
// exp) over "tp", reads each target logit on the rank that holds it and
// counts the logsumexp on coordinate 0, so the loss is P(sum) over "tp"; the
// batch over "dp" is weighted by the all-reduced label counts (ignored labels
// make them differ). Its cotangent is the softmax minus the one-hot of the
// labels in the rank's shard. A mean over a sharded dim that is P(sum) is the
// local mean over the ranks. The spmdized program on 4 ranks gives the
// global program's outputs.
// RUN: %python %S/Inputs/spmdize_numerics.py gen %t x:4x8x8 labels:4x8:i64:4 out:16x8
// RUN: titan-eval %s --entry=main --ranks=1 --inputs=%t --outputs=%t/ref
// RUN: titan-opt %s --titan-spmdize --titan-redistribute-to-collectives -o %t/spmd.mlir
// RUN: titan-eval %t/spmd.mlir --entry=main --ranks=4 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/spmdize_numerics.py compare %t/ref %t/out
// RUN: FileCheck %s < %t/spmd.mlir

titan.mesh @mesh ["dp"=2, "tp"=2]

// The logits are never gathered.
// CHECK-LABEL: func.func @main
// CHECK-NOT: titan.all_gather
// CHECK: titan.matmul {{.*}} -> tensor<2x8x8xf32>
// CHECK: titan.reduce_max {{.*}} dims [2] keepdim : tensor<2x8x8xf32> -> tensor<2x8x1xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["tp"] max : tensor<2x8x1xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["tp"] sum : tensor<2x8x1xf32>
// CHECK-NOT: titan.all_gather
// CHECK: return
func.func @main(
    %x: tensor<4x8x8xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %labels: tensor<4x8xi64> {titan.name = "labels", titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %out: tensor<16x8xf32> {titan.name = "out", titan.placements = #titan.placements<@mesh, [R, S(0)]>})
    -> (tensor<f32> {titan.name = "loss", titan.placements = #titan.placements<@mesh, [R, R]>},
        tensor<4x8x8xf32> {titan.name = "grad_x", titan.placements = #titan.placements<@mesh, [S(0), R]>},
        tensor<4x8x1xf32> {titan.name = "mean", titan.placements = #titan.placements<@mesh, [S(0), R]>}) {
  %logits = titan.matmul %x, %out transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<4x8x8xf32>, tensor<16x8xf32> -> tensor<4x8x16xf32>
  %lp = titan.cross_entropy %logits, %labels ignore_index 1 {titan.placements = [#titan.placements<@mesh, [P(sum), P(sum)]>]} : tensor<4x8x16xf32>, tensor<4x8xi64> -> tensor<f32>
  %loss = titan.redistribute %lp to <@mesh, [R, R]> : tensor<f32>
  %one = titan.constant {titan.placements = [#titan.placements<@mesh, [R, R]>]} dense<1.0> : tensor<f32>
  %dlogits = titan.cross_entropy_grad %logits, %labels, %one ignore_index 1 {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<4x8x16xf32>, tensor<4x8xi64>, tensor<f32>
  %dxp = titan.matmul %dlogits, %out {titan.placements = [#titan.placements<@mesh, [S(0), P(sum)]>]} : tensor<4x8x16xf32>, tensor<16x8xf32> -> tensor<4x8x8xf32>
  %grad_x = titan.redistribute %dxp to <@mesh, [S(0), R]> : tensor<4x8x8xf32>
  %mp = titan.reduce_mean %logits dims [2] keepdim {titan.placements = [#titan.placements<@mesh, [S(0), P(sum)]>]} : tensor<4x8x16xf32> -> tensor<4x8x1xf32>
  %mean = titan.redistribute %mp to <@mesh, [S(0), R]> : tensor<4x8x1xf32>
  return %loss, %grad_x, %mean : tensor<f32>, tensor<4x8x8xf32>, tensor<4x8x1xf32>
}
