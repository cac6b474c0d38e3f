// reduce_sum, reduce_max and reduce_mean with and without keepdim.
// RUN: %python %S/Inputs/oracle.py gen reductions %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check reductions %t

func.func @main(%x: tensor<3x4x5xf32> {titan.name = "x"})
    -> (tensor<5xf32> {titan.name = "sum01"},
        tensor<3x1x5xf32> {titan.name = "max1_keep"},
        tensor<3x4x1xf32> {titan.name = "mean2_keep"},
        tensor<4xf32> {titan.name = "mean02"},
        tensor<f32> {titan.name = "sum_all"}) {
  %0 = titan.reduce_sum %x dims [0, 1] : tensor<3x4x5xf32> -> tensor<5xf32>
  %1 = titan.reduce_max %x dims [1] keepdim : tensor<3x4x5xf32> -> tensor<3x1x5xf32>
  %2 = titan.reduce_mean %x dims [2] keepdim : tensor<3x4x5xf32> -> tensor<3x4x1xf32>
  %3 = titan.reduce_mean %x dims [0, 2] : tensor<3x4x5xf32> -> tensor<4xf32>
  %4 = titan.reduce_sum %x dims [0, 1, 2] : tensor<3x4x5xf32> -> tensor<f32>
  return %0, %1, %2, %3, %4 : tensor<5xf32>, tensor<3x1x5xf32>, tensor<3x4x1xf32>, tensor<4xf32>, tensor<f32>
}
