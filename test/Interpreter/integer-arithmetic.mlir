// Integer add, sub, mul, max and neg against numpy: two's complement over
// the whole range, wrapping as torch's integer tensors do (i32 to 32 bits).
// RUN: rm -rf %t && %python %S/Inputs/integer_arithmetic.py gen %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/integer_arithmetic.py check %t | FileCheck %s
// CHECK: match: 10 outputs

func.func @main(%a: tensor<2x5xi64> {titan.name = "a64"},
                %b: tensor<2x5xi64> {titan.name = "b64"},
                %c: tensor<2x5xi32> {titan.name = "a32"},
                %d: tensor<2x5xi32> {titan.name = "b32"})
    -> (tensor<2x5xi64> {titan.name = "add64"}, tensor<2x5xi64> {titan.name = "sub64"},
        tensor<2x5xi64> {titan.name = "mul64"}, tensor<2x5xi64> {titan.name = "max64"},
        tensor<2x5xi64> {titan.name = "neg64"},
        tensor<2x5xi32> {titan.name = "add32"}, tensor<2x5xi32> {titan.name = "sub32"},
        tensor<2x5xi32> {titan.name = "mul32"}, tensor<2x5xi32> {titan.name = "max32"},
        tensor<2x5xi32> {titan.name = "neg32"}) {
  %0 = titan.add %a, %b : tensor<2x5xi64>
  %1 = titan.sub %a, %b : tensor<2x5xi64>
  %2 = titan.mul %a, %b : tensor<2x5xi64>
  %3 = titan.max %a, %b : tensor<2x5xi64>
  %4 = titan.neg %a : tensor<2x5xi64>
  %5 = titan.add %c, %d : tensor<2x5xi32>
  %6 = titan.sub %c, %d : tensor<2x5xi32>
  %7 = titan.mul %c, %d : tensor<2x5xi32>
  %8 = titan.max %c, %d : tensor<2x5xi32>
  %9 = titan.neg %c : tensor<2x5xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<2x5xi64>, tensor<2x5xi64>, tensor<2x5xi64>, tensor<2x5xi64>, tensor<2x5xi64>,
      tensor<2x5xi32>, tensor<2x5xi32>, tensor<2x5xi32>, tensor<2x5xi32>, tensor<2x5xi32>
}
