// Embedding lookup and cross-entropy with the default and a custom
// ignore_index, against torch.nn.functional.
// RUN: %python %S/Inputs/oracle.py gen loss %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check loss %t

func.func @main(%table: tensor<11x4xf32> {titan.name = "tok_embeddings.weight"},
                %tokens: tensor<2x5xi64> {titan.name = "tokens"},
                %logits: tensor<2x5x11xf32> {titan.name = "logits"},
                %labels: tensor<2x5xi64> {titan.name = "labels"},
                %labels32: tensor<10xi32> {titan.name = "labels32"})
    -> (tensor<2x5x4xf32> {titan.name = "embedded"},
        tensor<f32> {titan.name = "loss"},
        tensor<f32> {titan.name = "loss_ignore3"}) {
  %0 = titan.embedding %table, %tokens : tensor<11x4xf32>, tensor<2x5xi64> -> tensor<2x5x4xf32>
  %1 = titan.cross_entropy %logits, %labels : tensor<2x5x11xf32>, tensor<2x5xi64> -> tensor<f32>
  %flat = titan.reshape %logits : tensor<2x5x11xf32> -> tensor<10x11xf32>
  %2 = titan.cross_entropy %flat, %labels32 ignore_index 3 : tensor<10x11xf32>, tensor<10xi32> -> tensor<f32>
  return %0, %1, %2 : tensor<2x5x4xf32>, tensor<f32>, tensor<f32>
}
