// Tensor parallelism on 2 simulated ranks: a row-parallel matmul whose
// partial sums are all-reduced equals the single-rank matmul; the same
// partial sums returned as P(sum), and a column-parallel matmul returned as
// S(1), assemble to it too.
// RUN: %python %S/Inputs/oracle.py gen tp %t
// RUN: titan-eval %s --entry=main --ranks=2 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check tp %t

titan.mesh @mesh ["tp"=2]

func.func @main(
    %x: tensor<4x4xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(1)]>},
    %w: tensor<6x4xf32> {titan.name = "w", titan.placements = #titan.placements<@mesh, [S(1)]>},
    %x_full: tensor<4x8xf32> {titan.name = "x_full"},
    %w_col: tensor<3x8xf32> {titan.name = "w_col", titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<4x6xf32> {titan.name = "row_parallel"},
        tensor<4x6xf32> {titan.name = "row_partial", titan.placements = #titan.placements<@mesh, [P(sum)]>},
        tensor<4x3xf32> {titan.name = "col_parallel", titan.placements = #titan.placements<@mesh, [S(1)]>}) {
  %partial = titan.matmul %x, %w transpose_rhs : tensor<4x4xf32>, tensor<6x4xf32> -> tensor<4x6xf32>
  %sum = titan.all_reduce %partial on @mesh ["tp"] sum : tensor<4x6xf32>
  %col = titan.matmul %x_full, %w_col transpose_rhs : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  return %sum, %partial, %col : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x3xf32>
}
