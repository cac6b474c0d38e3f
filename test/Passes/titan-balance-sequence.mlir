// RUN: titan-opt %s --split-input-file --titan-balance-sequence=ways=2 | FileCheck %s
// RUN: titan-opt %s --split-input-file --titan-balance-sequence=ways=4 | FileCheck %s --check-prefix=FOUR
// RUN: titan-opt %s --split-input-file --titan-balance-sequence=ways=1 | FileCheck %s --check-prefix=OFF
// Balancing twice changes nothing.
// RUN: titan-opt %s --split-input-file --titan-balance-sequence=ways=2 > %t.1
// RUN: titan-opt %t.1 --split-input-file --titan-balance-sequence=ways=2 > %t.2
// RUN: diff %t.1 %t.2
// The balanced program, given the same natural-order inputs (titan-eval
// permutes the marked ones and restores the marked results), computes the
// same values.
// RUN: rm -rf %t.d && %python %S/Inputs/balance_inputs.py %t.d/in
// RUN: titan-eval %s --entry=causal_sum --inputs=%t.d/in --outputs=%t.d/natural
// RUN: titan-eval %t.1 --entry=causal_sum --inputs=%t.d/in --outputs=%t.d/balanced
// RUN: %python %S/../Import/Inputs/compare_npy.py %t.d/balanced/out.npy %t.d/natural/out.npy --rtol 1e-6 | FileCheck %s --check-prefix=SAME

// A causal "attention" over a sequence of 8 with position-dependent
// weights: the sequence is cut into 4 chunks of 2 stored 0, 3, 1, 2, so
// that a contiguous split over 2 ranks gives rank 0 chunks 0 and 3 and rank
// 1 chunks 1 and 2 (equal causal work). Positions enter through the slice
// of the table and the two iotas of the mask: each is permuted right after
// it is made (along every dim that indexes the sequence; an iota only along
// the dim it counts, as it is the same along the others); the tokens and
// the output are marked as stored permuted.

// CHECK-LABEL: func.func @causal_sum(
// CHECK-SAME: titan.name = "tokens", titan.role = "input", titan.sequence_order = array<i64: 1, 0, 3, 1, 2>
// CHECK-SAME: -> (tensor<2x8x4xf32> {titan.name = "out", titan.sequence_order = array<i64: 1, 0, 3, 1, 2>})
// CHECK: %[[F:.*]] = titan.slice %arg1 [0, 0] to [8, 4]
// CHECK-NEXT: %[[F0:.*]] = titan.slice %[[F]] [0, 0] to [2, 4]
// CHECK-NEXT: %[[F3:.*]] = titan.slice %[[F]] [6, 0] to [8, 4]
// CHECK-NEXT: %[[F1:.*]] = titan.slice %[[F]] [2, 0] to [4, 4]
// CHECK-NEXT: %[[F2:.*]] = titan.slice %[[F]] [4, 0] to [6, 4]
// CHECK-NEXT: %[[FP:.*]] = titan.concat %[[F0]], %[[F3]], %[[F1]], %[[F2]] dim 0
// CHECK-NEXT: titan.broadcast_in_dim %[[FP]]
// CHECK: titan.iota dim 0 : tensor<8x8xf32>
// CHECK: %[[IP:.*]] = titan.concat {{.*}} dim 0
// CHECK-NEXT: titan.iota dim 1 : tensor<8x8xf32>
// CHECK: %[[JP:.*]] = titan.concat {{.*}} dim 1
// CHECK-NEXT: titan.compare ge, %[[IP]], %[[JP]]
// Splat constants and broadcast dims are the same at every position.
// CHECK-NEXT: titan.constant dense<1.000000e+00>
// CHECK-NEXT: titan.constant dense<0.000000e+00>
// CHECK-NEXT: titan.select
// CHECK-NEXT: titan.broadcast_in_dim

// Four ranks: 8 chunks of 1, rank r holding chunks r and 7 - r.
// FOUR: titan.sequence_order = array<i64: 1, 0, 7, 1, 6, 2, 5, 3, 4>

// OFF-NOT: titan.sequence_order
// OFF-NOT: titan.concat

// SAME: match: [2, 8, 4]

func.func @causal_sum(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                      %table: tensor<16x4xf32> {titan.name = "freqs", titan.role = "buffer"},
                      %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"})
    -> (tensor<2x8x4xf32> {titan.name = "out"}) {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %f = titan.slice %table [0, 0] to [8, 4] step [1, 1] : tensor<16x4xf32> -> tensor<8x4xf32>
  %fb = titan.broadcast_in_dim %f dims [1, 2] : tensor<8x4xf32> -> tensor<2x8x4xf32>
  %xr = titan.mul %x, %fb : tensor<2x8x4xf32>
  %i = titan.iota dim 0 : tensor<8x8xf32>
  %j = titan.iota dim 1 : tensor<8x8xf32>
  %keep = titan.compare ge, %i, %j : tensor<8x8xf32> -> tensor<8x8xi1>
  %one = titan.constant dense<1.0> : tensor<8x8xf32>
  %zero = titan.constant dense<0.0> : tensor<8x8xf32>
  %mask = titan.select %keep, %one, %zero : tensor<8x8xi1>, tensor<8x8xf32>
  %mb = titan.broadcast_in_dim %mask dims [1, 2] : tensor<8x8xf32> -> tensor<2x8x8xf32>
  %y = titan.matmul %mb, %xr : tensor<2x8x8xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  %h = titan.add %y, %xr : tensor<2x8x4xf32>
  return %h : tensor<2x8x4xf32>
}

// The sequence merged with the batch (`x.view(-1, dim)`, as OPT's MLP
// reads it) and split again: the labels, which meet the sequence only after
// the split, are the sequence too (the model's [batch, seq] inputs are one
// sequence), and are stored permuted like the tokens.
// CHECK-LABEL: func.func @merged
// CHECK-SAME: titan.name = "tokens", titan.role = "input", titan.sequence_order = array<i64: 1, 0, 3, 1, 2>
// CHECK-SAME: titan.name = "labels", titan.role = "input", titan.sequence_order = array<i64: 1, 0, 3, 1, 2>
func.func @merged(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                  %labels: tensor<2x8xi64> {titan.name = "labels", titan.role = "input"},
                  %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"})
    -> (tensor<f32> {titan.name = "loss"}) {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %rows = titan.reshape %x : tensor<2x8x4xf32> -> tensor<16x4xf32>
  %t = titan.tanh %rows : tensor<16x4xf32>
  %back = titan.reshape %t : tensor<16x4xf32> -> tensor<2x8x4xf32>
  %logits = titan.matmul %back, %emb transpose_rhs : tensor<2x8x4xf32>, tensor<32x4xf32> -> tensor<2x8x32xf32>
  %loss = titan.cross_entropy %logits, %labels : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// The gradient of a position table sliced to the sequence: the pad that
// places it at the table's start reads the sequence back in its natural
// order (stored chunks 0, 3, 1, 2 of 2 positions: natural chunk n is stored
// chunk 0, 2, 3, 1).
// CHECK-LABEL: func.func @table_gradient
// CHECK-DAG: %[[C0:.*]] = titan.slice %[[G:[^ ]*]] [0, 0, 0] to [1, 2, 4]
// CHECK-DAG: %[[C3:.*]] = titan.slice %[[G]] [0, 2, 0] to [1, 4, 4]
// CHECK-DAG: %[[C1:.*]] = titan.slice %[[G]] [0, 4, 0] to [1, 6, 4]
// CHECK-DAG: %[[C2:.*]] = titan.slice %[[G]] [0, 6, 0] to [1, 8, 4]
// CHECK: %[[NATURAL:.*]] = titan.concat %[[C0]], %[[C1]], %[[C2]], %[[C3]] dim 1
// CHECK: titan.pad %[[NATURAL]] [0, 0, 0] step [1, 1, 1] : tensor<1x8x4xf32> -> tensor<1x16x4xf32>
func.func @table_gradient(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                          %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"})
    -> (tensor<1x16x4xf32> {titan.name = "grad.positions"}) {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %g = titan.reduce_sum %x dims [0] keepdim : tensor<2x8x4xf32> -> tensor<1x8x4xf32>
  %table = titan.pad %g [0, 0, 0] step [1, 1, 1] : tensor<1x8x4xf32> -> tensor<1x16x4xf32>
  return %table : tensor<1x16x4xf32>
}

// A router over the flattened tokens: the experts' iota (along dim 1) is the
// same at every token, so it stays as it is although dim 0 merges the
// sequence with the batch.
// CHECK-LABEL: func.func @experts_of_merged_tokens
// CHECK: %[[EXPERTS:.*]] = titan.iota dim 1 : tensor<16x4xi64>
// CHECK-NEXT: titan.compare eq, %{{.*}}, %[[EXPERTS]]
func.func @experts_of_merged_tokens(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                                    %emb: tensor<32x4xf32> {titan.name = "emb", titan.role = "param"}) -> tensor<16x4xi1> {
  %x = titan.embedding %emb, %tokens : tensor<32x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  %rows = titan.reshape %tokens : tensor<2x8xi64> -> tensor<16x1xi64>
  %chosen = titan.broadcast_in_dim %rows dims [0, 1] : tensor<16x1xi64> -> tensor<16x4xi64>
  %experts = titan.iota dim 1 : tensor<16x4xi64>
  %hot = titan.compare eq, %chosen, %experts : tensor<16x4xi64> -> tensor<16x4xi1>
  return %hot : tensor<16x4xi1>
}
