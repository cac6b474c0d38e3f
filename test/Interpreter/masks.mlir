// iota, compare, select, constant and cast: GPT-2's causal mask built from
// index tensors, plus conversions between element types.
// RUN: %python %S/Inputs/oracle.py gen masks %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check masks %t

func.func @main(%scores: tensor<5x5xf32> {titan.name = "scores"},
                %a: tensor<5x5xf32> {titan.name = "a"},
                %b: tensor<5x5xf32> {titan.name = "b"})
    -> (tensor<5x5xf32> {titan.name = "masked"},
        tensor<5x5xi1> {titan.name = "lt"}, tensor<5x5xi1> {titan.name = "ge"},
        tensor<5x5xi1> {titan.name = "eq"}, tensor<5x5xi1> {titan.name = "ne"},
        tensor<5x5xi32> {titan.name = "to_i32"}, tensor<5x5xf64> {titan.name = "to_f64"},
        tensor<5x5xf32> {titan.name = "iota_f32"}, tensor<2x3xf32> {titan.name = "constant"}) {
  %rows = titan.iota dim 0 : tensor<5x5xi64>
  %cols = titan.iota dim 1 : tensor<5x5xi64>
  %future = titan.compare gt, %cols, %rows : tensor<5x5xi64> -> tensor<5x5xi1>
  %ninf = titan.constant dense<0xFF800000> : tensor<5x5xf32>
  %masked = titan.select %future, %ninf, %scores : tensor<5x5xi1>, tensor<5x5xf32>
  %lt = titan.compare lt, %a, %b : tensor<5x5xf32> -> tensor<5x5xi1>
  %ge = titan.compare ge, %a, %b : tensor<5x5xf32> -> tensor<5x5xi1>
  %eq = titan.compare eq, %a, %a : tensor<5x5xf32> -> tensor<5x5xi1>
  %ne = titan.compare ne, %a, %b : tensor<5x5xf32> -> tensor<5x5xi1>
  %scaled = titan.scale %a by 1.000000e+01 : tensor<5x5xf32>
  %i32 = titan.cast %scaled : tensor<5x5xf32> to tensor<5x5xi32>
  %f64 = titan.cast %a : tensor<5x5xf32> to tensor<5x5xf64>
  %fi = titan.iota dim 1 : tensor<5x5xf32>
  %c = titan.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]]> : tensor<2x3xf32>
  return %masked, %lt, %ge, %eq, %ne, %i32, %f64, %fi, %c : tensor<5x5xf32>, tensor<5x5xi1>, tensor<5x5xi1>, tensor<5x5xi1>, tensor<5x5xi1>, tensor<5x5xi32>, tensor<5x5xf64>, tensor<5x5xf32>, tensor<2x3xf32>
}
