// rms_norm, layer_norm, softmax and log_softmax.
// RUN: %python %S/Inputs/oracle.py gen normalization %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check normalization %t

func.func @main(%x: tensor<2x3x16xf32> {titan.name = "x"},
                %w: tensor<16xf32> {titan.name = "w"},
                %b: tensor<16xf32> {titan.name = "b"})
    -> (tensor<2x3x16xf32> {titan.name = "rms_norm"},
        tensor<2x3x16xf32> {titan.name = "layer_norm"},
        tensor<2x3x16xf32> {titan.name = "softmax_last"},
        tensor<2x3x16xf32> {titan.name = "softmax_mid"},
        tensor<2x3x16xf32> {titan.name = "log_softmax"}) {
  %0 = titan.rms_norm %x, %w eps 1.000000e-05 : tensor<2x3x16xf32>, tensor<16xf32>
  %1 = titan.layer_norm %x, %w, %b eps 1.000000e-05 : tensor<2x3x16xf32>, tensor<16xf32>
  %2 = titan.softmax %x dim 2 : tensor<2x3x16xf32>
  %3 = titan.softmax %x dim 1 : tensor<2x3x16xf32>
  %4 = titan.log_softmax %x dim 2 : tensor<2x3x16xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>
}
