// RoPE in both pair layouts, with f32 tables.
// RUN: %python %S/Inputs/oracle.py gen rope %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check rope %t

func.func @main(%x: tensor<2x6x3x8xf32> {titan.name = "x"},
                %cos: tensor<6x4xf32> {titan.name = "cos"},
                %sin: tensor<6x4xf32> {titan.name = "sin"})
    -> (tensor<2x6x3x8xf32> {titan.name = "interleaved"},
        tensor<2x6x3x8xf32> {titan.name = "half"}) {
  %0 = titan.rope %x, %cos, %sin interleaved : tensor<2x6x3x8xf32>, tensor<6x4xf32>
  %1 = titan.rope %x, %cos, %sin half : tensor<2x6x3x8xf32>, tensor<6x4xf32>
  return %0, %1 : tensor<2x6x3x8xf32>, tensor<2x6x3x8xf32>
}
