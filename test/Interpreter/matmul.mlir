// Batched matmul with transposes, a shared rank-2 rhs, an addend, and f64.
// RUN: %python %S/Inputs/oracle.py gen matmul %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check matmul %t

func.func @main(%x: tensor<2x5x8xf32> {titan.name = "x"},
                %y: tensor<2x8x3xf32> {titan.name = "y"},
                %xt: tensor<2x8x5xf32> {titan.name = "xt"},
                %yt: tensor<2x3x8xf32> {titan.name = "yt"},
                %w: tensor<6x8xf32> {titan.name = "layers.0.w"},
                %d: tensor<4x7xf64> {titan.name = "d"},
                %e: tensor<7x2xf64> {titan.name = "e"},
                %h: tensor<2x5x6xf32> {titan.name = "h"})
    -> (tensor<2x5x3xf32> {titan.name = "plain"},
        tensor<2x5x3xf32> {titan.name = "both"},
        tensor<2x5x6xf32> {titan.name = "linear"},
        tensor<4x2xf64> {titan.name = "f64"},
        tensor<2x5x6xf32> {titan.name = "linear_plus"}) {
  %0 = titan.matmul %x, %y : tensor<2x5x8xf32>, tensor<2x8x3xf32> -> tensor<2x5x3xf32>
  %1 = titan.matmul %xt, %yt transpose_lhs transpose_rhs
      : tensor<2x8x5xf32>, tensor<2x3x8xf32> -> tensor<2x5x3xf32>
  %2 = titan.matmul %x, %w transpose_rhs : tensor<2x5x8xf32>, tensor<6x8xf32> -> tensor<2x5x6xf32>
  %3 = titan.matmul %d, %e : tensor<4x7xf64>, tensor<7x2xf64> -> tensor<4x2xf64>
  %4 = titan.matmul %x, %w transpose_rhs plus %h : tensor<2x5x8xf32>, tensor<6x8xf32> -> tensor<2x5x6xf32>
  return %0, %1, %2, %3, %4 : tensor<2x5x3xf32>, tensor<2x5x3xf32>, tensor<2x5x6xf32>, tensor<4x2xf64>, tensor<2x5x6xf32>
}
