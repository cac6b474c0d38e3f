// RUN: titan-opt %s --split-input-file --titan-balance-sequence=ways=2 -verify-diagnostics

// Without equal chunks the sequence stays in order (uneven shards).
// expected-remark@+1 {{sequence length 6 of @indivisible is not divisible by 2 x 2 = 4 chunks: context parallelism keeps the natural order (uneven contiguous shards, causal attention work not balanced across ranks); choose a seq_len that is a multiple of 4 to balance it}}
func.func @indivisible(%tokens: tensor<2x6xi64> {titan.name = "tokens", titan.role = "input"},
                       %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<2x6x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x6xi64> -> tensor<2x6x4xf32>
  return %x : tensor<2x6x4xf32>
}

// -----

// Shifting the sequence inside the model reads positions.
func.func @shift(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                 %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<2x7x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  // expected-error@+1 {{'titan.slice' op depends on positions along the sequence (dim 1), which load-balanced context parallelism permutes; keep the sequence whole in the model or set context_parallel_degree = 1}}
  %y = titan.slice %x [0, 1, 0] to [2, 8, 4] step [1, 1, 1] : tensor<2x8x4xf32> -> tensor<2x7x4xf32>
  return %y : tensor<2x7x4xf32>
}

// -----

func.func @concat(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                  %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<2x16x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  // expected-error@+1 {{'titan.concat' op depends on positions along the sequence (dim 1)}}
  %y = titan.concat %x, %x dim 1 : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x16x4xf32>
  return %y : tensor<2x16x4xf32>
}

// -----

func.func @pad(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
               %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<2x10x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  // expected-error@+1 {{'titan.pad' op depends on positions along the sequence (dim 1)}}
  %y = titan.pad %x [0, 1, 0] step [1, 1, 1] : tensor<2x8x4xf32> -> tensor<2x10x4xf32>
  return %y : tensor<2x10x4xf32>
}

// -----

// Splitting the sequence into blocks of positions reads positions too.
func.func @split(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                 %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<2x2x4x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  // expected-error@+1 {{'titan.reshape' op depends on positions along the sequence (dim 1)}}
  %y = titan.reshape %x : tensor<2x8x4xf32> -> tensor<2x2x4x4xf32>
  return %y : tensor<2x2x4x4xf32>
}

// -----

// Causal attention masks by stored position; a non-causal one (the second)
// does not depend on the order of the sequence.
func.func @causal_attention(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                            %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<2x1x8x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %q = titan.reshape %x : tensor<2x8x4xf32> -> tensor<2x1x8x4xf32>
  %full, %full_lse = titan.attention %q, %q, %q : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>
  // expected-error@+1 {{'titan.attention' op depends on positions along the sequence (dim 2)}}
  %y, %y_lse = titan.attention %full, %q, %q causal : tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>
  return %y : tensor<2x1x8x4xf32>
}

// -----

titan.mesh @mesh ["x"=2]
func.func @no_rule(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                   %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<2x8x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  // expected-error@+1 {{'titan.all_reduce' op has no sharding rule; titan-balance-sequence cannot tell its sequence dims}}
  %y = titan.all_reduce %x on @mesh ["x"] sum : tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// expected-error@+1 {{'func.func' op has a dynamic sequence length, which context parallelism cannot split; give the input a static seq_len}}
func.func @dynamic(%tokens: tensor<2x?xi64> {titan.name = "tokens", titan.role = "input"}) {
  return
}

// -----

// Positions of a dim that merges the sequence with the batch (dropout after
// x.view(-1, dim)) would need the permutation inside the merge.
func.func @merged_positions(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                            %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<16x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %rows = titan.reshape %x : tensor<2x8x4xf32> -> tensor<16x4xf32>
  // expected-error@+1 {{'titan.iota' op depends on positions along the sequence (dim 0), which load-balanced context parallelism permutes}}
  %positions = titan.iota dim 0 : tensor<16x4xf32>
  %y = titan.add %rows, %positions : tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

// A weight over positions (a Linear(seq_len, seq_len) mixing the tokens)
// would have to be stored permuted, which parameters are not.
// expected-error@+1 {{'func.func' op argument 'mix.weight' has a dim along the sequence (weights over positions, e.g. a Linear(seq_len, ...) mixing the tokens), which load-balanced context parallelism would have to store permuted; set context_parallel_degree = 1}}
func.func @weight_over_positions(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                                 %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"},
                                 %mix: tensor<8x8xf32> {titan.name = "mix.weight", titan.role = "param"}) -> tensor<2x4x8xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %t = titan.transpose %x [0, 2, 1] : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  %y = titan.matmul %t, %mix : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// A lookup of rows along the sequence (torch.gather along it at positions
// the model computes) reads them by natural position.
func.func @gather_along_sequence(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                                 %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<2x8x4xf32> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %rows = titan.reshape %x : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %ids = titan.constant dense<3> : tensor<2x8xi64>
  %moved = titan.add %tokens, %ids : tensor<2x8xi64>
  // expected-error@+1 {{'titan.embedding' op depends on positions along the sequence (dim 0), which load-balanced context parallelism permutes}}
  %y = titan.embedding %rows, %moved : tensor<16x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}
