// bf16 and f16 storage: values round to their type after every op, as torch
// does for bfloat16/float16 tensors on the CPU.
// RUN: %python %S/Inputs/oracle.py gen low_precision %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check low_precision %t

func.func @main(%x: tensor<4x8xf32> {titan.name = "x"},
                %y: tensor<4x8xbf16> {titan.name = "y"},
                %h: tensor<4x8xf16> {titan.name = "h"})
    -> (tensor<4x8xbf16> {titan.name = "x_bf16"},
        tensor<4x8xbf16> {titan.name = "sum_bf16"},
        tensor<4x8xf16> {titan.name = "mul_f16"},
        tensor<4x8xf32> {titan.name = "back_f32"}) {
  %0 = titan.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %1 = titan.add %0, %y : tensor<4x8xbf16>
  %2 = titan.mul %h, %h : tensor<4x8xf16>
  %3 = titan.cast %1 : tensor<4x8xbf16> to tensor<4x8xf32>
  return %0, %1, %2, %3 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xf32>
}
