// Causal GQA attention and non-causal MHA with an explicit scale against
// softmax(Q K^T * scale + mask) V, and their rows' log-sum-exp against
// logsumexp(Q K^T * scale + mask).
// RUN: %python %S/Inputs/oracle.py gen attention %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check attention %t

func.func @main(%q: tensor<2x4x6x8xf32> {titan.name = "q"},
                %k: tensor<2x2x6x8xf32> {titan.name = "k"},
                %v: tensor<2x2x6x8xf32> {titan.name = "v"},
                %k4: tensor<2x4x6x8xf32> {titan.name = "k4"},
                %v4: tensor<2x4x6x8xf32> {titan.name = "v4"})
    -> (tensor<2x4x6x8xf32> {titan.name = "causal_gqa"},
        tensor<2x4x6xf32> {titan.name = "causal_gqa_lse"},
        tensor<2x4x6x8xf32> {titan.name = "full_mha"},
        tensor<2x4x6xf32> {titan.name = "full_mha_lse"}) {
  %0, %lse0 = titan.attention %q, %k, %v causal : tensor<2x4x6x8xf32>, tensor<2x2x6x8xf32>
  %1, %lse1 = titan.attention %q, %k4, %v4 scale 0.5 : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>
  return %0, %lse0, %1, %lse1 : tensor<2x4x6x8xf32>, tensor<2x4x6xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6xf32>
}
