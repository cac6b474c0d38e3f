// reshape, transpose, strided slice, concat and broadcast_in_dim on floats
// and integers; redistribute is the identity of the global program.
// RUN: %python %S/Inputs/oracle.py gen shape_ops %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check shape_ops %t

titan.mesh @mesh ["tp"=2]

func.func @main(%x: tensor<2x3x4xf32> {titan.name = "x"},
                %i: tensor<6x4xi64> {titan.name = "i"},
                %bias: tensor<4xf32> {titan.name = "bias"},
                %col: tensor<3x1xf32> {titan.name = "col"})
    -> (tensor<6x4xf32> {titan.name = "reshape"},
        tensor<4x2x3xf32> {titan.name = "transpose"},
        tensor<2x2x2xf32> {titan.name = "slice"},
        tensor<2x3x8xf32> {titan.name = "concat"},
        tensor<12x4xi64> {titan.name = "concat_int"},
        tensor<2x3x4xf32> {titan.name = "broadcast_bias"},
        tensor<2x3x4xf32> {titan.name = "broadcast_col"},
        tensor<4xf32> {titan.name = "redistribute"}) {
  %0 = titan.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = titan.transpose %x [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %2 = titan.slice %x [0, 1, 0] to [2, 3, 4] step [1, 1, 2] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  %3 = titan.concat %x, %x dim 2 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  %4 = titan.concat %i, %i dim 0 : (tensor<6x4xi64>, tensor<6x4xi64>) -> tensor<12x4xi64>
  %5 = titan.broadcast_in_dim %bias dims [2] : tensor<4xf32> -> tensor<2x3x4xf32>
  %6 = titan.broadcast_in_dim %col dims [1, 2] : tensor<3x1xf32> -> tensor<2x3x4xf32>
  %7 = titan.redistribute %bias to <@mesh, [S(0)]> : tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<2x2x2xf32>, tensor<2x3x8xf32>, tensor<12x4xi64>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>
}
