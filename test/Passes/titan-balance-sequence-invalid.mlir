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
