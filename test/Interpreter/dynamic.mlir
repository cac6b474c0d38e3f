// Dynamic dims: shapes come from the inputs at run time (the importer keeps
// traced batch and sequence dims dynamic).
// RUN: %python %S/Inputs/oracle.py gen dynamic %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check dynamic %t

func.func @main(%table: tensor<10x8xf32> {titan.name = "table"},
                %tokens: tensor<?x?xi64> {titan.name = "tokens"},
                %w: tensor<8x8xf32> {titan.name = "w"},
                %v: tensor<?xf32> {titan.name = "v"})
    -> (tensor<?x?x8xf32> {titan.name = "hidden"},
        tensor<?x2x?x4xf32> {titan.name = "heads"},
        tensor<3x?xf32> {titan.name = "rows"},
        tensor<?x?x8xf32> {titan.name = "attended"},
        tensor<?xf32> {titan.name = "flat"}) {
  %h = titan.embedding %table, %tokens : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %y = titan.matmul %h, %w : tensor<?x?x8xf32>, tensor<8x8xf32> -> tensor<?x?x8xf32>
  %r = titan.reshape %y : tensor<?x?x8xf32> -> tensor<?x?x2x4xf32>
  %t = titan.transpose %r [0, 2, 1, 3] : tensor<?x?x2x4xf32> -> tensor<?x2x?x4xf32>
  %b = titan.broadcast_in_dim %v dims [1] : tensor<?xf32> -> tensor<3x?xf32>
  %a, %lse = titan.attention %t, %t, %t causal : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
  %at = titan.transpose %a [0, 2, 1, 3] : tensor<?x2x?x4xf32> -> tensor<?x?x2x4xf32>
  %ar = titan.reshape %at : tensor<?x?x2x4xf32> -> tensor<?x?x8xf32>
  %f = titan.reshape %h : tensor<?x?x8xf32> -> tensor<?xf32>
  return %h, %t, %b, %ar, %f : tensor<?x?x8xf32>, tensor<?x2x?x4xf32>, tensor<3x?xf32>, tensor<?x?x8xf32>, tensor<?xf32>
}
