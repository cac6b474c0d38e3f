// Elementwise arithmetic and unary math against torch (float64 oracle).
// RUN: %python %S/Inputs/oracle.py gen elementwise %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check elementwise %t

func.func @main(%a: tensor<4x8xf32> {titan.name = "a"},
                %b: tensor<4x8xf32> {titan.name = "b"},
                %p: tensor<4x8xf32> {titan.name = "p"})
    -> (tensor<4x8xf32> {titan.name = "add"}, tensor<4x8xf32> {titan.name = "sub"},
        tensor<4x8xf32> {titan.name = "mul"}, tensor<4x8xf32> {titan.name = "div"},
        tensor<4x8xf32> {titan.name = "max"}, tensor<4x8xf32> {titan.name = "neg"},
        tensor<4x8xf32> {titan.name = "exp"}, tensor<4x8xf32> {titan.name = "log"},
        tensor<4x8xf32> {titan.name = "sqrt"}, tensor<4x8xf32> {titan.name = "rsqrt"},
        tensor<4x8xf32> {titan.name = "tanh"}, tensor<4x8xf32> {titan.name = "sigmoid"},
        tensor<4x8xf32> {titan.name = "silu"}, tensor<4x8xf32> {titan.name = "cos"},
        tensor<4x8xf32> {titan.name = "sin"}, tensor<4x8xf32> {titan.name = "gelu"},
        tensor<4x8xf32> {titan.name = "gelu_tanh"}, tensor<4x8xf32> {titan.name = "scale"}) {
  %0 = titan.add %a, %b : tensor<4x8xf32>
  %1 = titan.sub %a, %b : tensor<4x8xf32>
  %2 = titan.mul %a, %b : tensor<4x8xf32>
  %3 = titan.div %a, %p : tensor<4x8xf32>
  %4 = titan.max %a, %b : tensor<4x8xf32>
  %5 = titan.neg %a : tensor<4x8xf32>
  %6 = titan.exp %a : tensor<4x8xf32>
  %7 = titan.log %p : tensor<4x8xf32>
  %8 = titan.sqrt %p : tensor<4x8xf32>
  %9 = titan.rsqrt %p : tensor<4x8xf32>
  %10 = titan.tanh %a : tensor<4x8xf32>
  %11 = titan.sigmoid %a : tensor<4x8xf32>
  %12 = titan.silu %a : tensor<4x8xf32>
  %13 = titan.cos %a : tensor<4x8xf32>
  %14 = titan.sin %a : tensor<4x8xf32>
  %15 = titan.gelu %a approximate none : tensor<4x8xf32>
  %16 = titan.gelu %a approximate tanh : tensor<4x8xf32>
  %17 = titan.scale %a by 0.125 : tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<4x8xf32>, tensor<4x8xf32>
}
