// RUN: titan-opt %s --titan-build-train-step -split-input-file -verify-diagnostics

// expected-error @+1 {{titan-build-train-step: no function @forward (import a model with titan-compile first)}}
module {
  func.func @model(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// expected-error @+1 {{titan-build-train-step: @forward must return a tensor of logits [batch, seq, vocab] (floating point), optionally followed by scalar losses to add to the cross-entropy, it returns 'tensor<2x4xf32>'; make the model's forward return the logits (and its auxiliary losses) only}}
func.func @forward(%w: tensor<4x4xf32> {titan.role = "param"},
                   %tokens: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"}) -> tensor<2x4xf32> {
  %0 = titan.embedding %w, %tokens : tensor<4x4xf32>, tensor<2x4xi64> -> tensor<2x4x4xf32>
  %1 = titan.reduce_sum %0 dims [2] : tensor<2x4x4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{titan-build-train-step: @forward has 2 model inputs (#1, mask); a language model takes the token ids only: trace the model with the token ids alone (torch.jit.trace(model, (input_ids,))), or script it with the other inputs Optional and None by default}}
func.func @forward(%w: tensor<4x4xf32> {titan.role = "param"},
                   %tokens: tensor<2x4xi64> {titan.role = "input"},
                   %mask: tensor<2x4xi64> {titan.name = "mask", titan.role = "input"}) -> tensor<2x4x4xf32> {
  %0 = titan.embedding %w, %tokens : tensor<4x4xf32>, tensor<2x4xi64> -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

// expected-error @+1 {{titan-build-train-step: @forward must take token ids of shape [2, 4] (the batch and sequence dims of its logits)}}
func.func @forward(%w: tensor<4x4xf32> {titan.role = "param"},
                   %tokens: tensor<8xi64> {titan.role = "input"}) -> tensor<2x4x4xf32> {
  %0 = titan.embedding %w, %tokens : tensor<4x4xf32>, tensor<8xi64> -> tensor<8x4xf32>
  %1 = titan.reshape %0 : tensor<8x4xf32> -> tensor<2x4x4xf32>
  return %1 : tensor<2x4x4xf32>
}

// -----

// An op without a VJP rule between a parameter and the loss.
titan.mesh @mesh ["dp"=2]
func.func @forward(%w: tensor<4x4xf32> {titan.role = "param"},
                   %tokens: tensor<2x4xi64> {titan.role = "input"}) -> tensor<2x4x4xf32> {
  %0 = titan.embedding %w, %tokens : tensor<4x4xf32>, tensor<2x4xi64> -> tensor<2x4x4xf32>
  // expected-error @+1 {{titan-build-train-step: 'titan.all_reduce' has no VJP rule, but it lies between a parameter and the loss; implement DifferentiableOpInterface::buildVJP for it (dialects/titan/ComputeGradients.cpp)}}
  %1 = titan.all_reduce %0 on @mesh ["dp"] sum : tensor<2x4x4xf32>
  return %1 : tensor<2x4x4xf32>
}

// -----

// Attention's log-sum-exp is for its backward alone: a loss that depends on
// it has no gradient.
func.func @forward(%w: tensor<4x4xf32> {titan.role = "param"},
                   %tokens: tensor<2x4xi64> {titan.role = "input"}) -> tensor<2x4x4xf32> {
  %0 = titan.embedding %w, %tokens : tensor<4x4xf32>, tensor<2x4xi64> -> tensor<2x4x4xf32>
  %1 = titan.reshape %0 : tensor<2x4x4xf32> -> tensor<2x1x4x4xf32>
  // expected-error @+2 {{'titan.attention' op has no VJP for its log-sum-exp result (lse): only titan.attention_grad may read it}}
  // expected-error @+1 {{titan-build-train-step: the VJP rule of 'titan.attention' failed}}
  %2:2 = titan.attention %1, %1, %1 causal : tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>
  %3 = titan.reshape %2#1 : tensor<2x1x4xf32> -> tensor<2x4xf32>
  %4 = titan.broadcast_in_dim %3 dims [0, 1] : tensor<2x4xf32> -> tensor<2x4x4xf32>
  %5 = titan.add %0, %4 : tensor<2x4x4xf32>
  return %5 : tensor<2x4x4xf32>
}

// -----

// Results after the logits must be scalar losses: router logits are not.
// expected-error @+1 {{titan-build-train-step: @forward must return a tensor of logits [batch, seq, vocab] (floating point), optionally followed by scalar losses to add to the cross-entropy, it returns 'tensor<2x4x4xf32>', 'tensor<2x4x2xf32>'; make the model's forward return the logits (and its auxiliary losses) only}}
func.func @forward(%w: tensor<4x4xf32> {titan.role = "param"},
                   %r: tensor<4x2xf32> {titan.role = "param"},
                   %tokens: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"}) -> (tensor<2x4x4xf32>, tensor<2x4x2xf32>) {
  %0 = titan.embedding %w, %tokens : tensor<4x4xf32>, tensor<2x4xi64> -> tensor<2x4x4xf32>
  %1 = titan.matmul %0, %r : tensor<2x4x4xf32>, tensor<4x2xf32> -> tensor<2x4x2xf32>
  return %0, %1 : tensor<2x4x4xf32>, tensor<2x4x2xf32>
}
