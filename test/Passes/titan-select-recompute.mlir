// RUN: titan-opt %s --titan-select-recompute=mode=full | FileCheck %s --check-prefix=FULL
// RUN: titan-opt %s --titan-select-recompute="mode=selective selective-ac-option=op" | FileCheck %s --check-prefix=OP
// RUN: titan-opt %s --titan-select-recompute="mode=selective selective-ac-option=2" | FileCheck %s --check-prefix=EVERY2
// RUN: titan-opt %s --titan-select-recompute=mode=none | FileCheck %s --check-prefix=NONE
// RUN: titan-opt %s --titan-select-recompute=mode=full | titan-opt --verify-each > /dev/null
// RUN: not titan-opt %s --titan-select-recompute=mode=sometimes 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not titan-opt %s --titan-select-recompute="mode=selective selective-ac-option=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: echo "module {}" | not titan-opt --titan-select-recompute=mode=full 2>&1 | FileCheck %s --check-prefix=NOSTEP

// Two transformer blocks (module paths layers.0 and layers.1) and a
// backward that reads h0 (block 0), h1 and a1 (block 1). a0 is block 0's
// output (block 1 reads it in the forward): every policy keeps it.

#f0 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0.mlp">[unknown]])
#f1 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.1.mlp">[unknown]])
#b = loc(fused<"titan.phase.backward">[unknown])

// Full: each block's values are recomputed from its inputs right before the
// first backward op that reads one of them; the backward reads the clones.
// FULL-LABEL: func.func @train_step
// FULL-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W0:.*]]: tensor<8x8xf32>, %[[W1:.*]]: tensor<8x8xf32>, %[[G:.*]]: tensor<4x8xf32>)
// FULL: %[[H0:.*]] = titan.matmul %[[X]], %[[W0]] :
// FULL: %[[A0:.*]] = titan.exp %[[H0]] :
// FULL: %[[H1R:.*]] = titan.matmul %[[A0]], %[[W1]] {titan.recompute}
// FULL-NEXT: %[[M1R:.*]] = titan.matmul %[[H1R]], %[[W1]] {titan.recompute}
// FULL-NEXT: %[[A1R:.*]] = titan.exp %[[M1R]] {titan.recompute}
// FULL-NEXT: %[[D1:.*]] = titan.mul %[[G]], %[[A1R]]
// FULL-NEXT: %[[D2:.*]] = titan.mul %[[D1]], %[[H1R]]
// FULL-NEXT: %[[H0R:.*]] = titan.matmul %[[X]], %[[W0]] {titan.recompute}
// FULL-NEXT: %[[D3:.*]] = titan.mul %[[D2]], %[[H0R]]
// FULL-NEXT: return %[[D2]], %[[D3]]

// Selective op (torchtitan's policy): the 1st matmul of each block (h0, h1)
// is saved, the 2nd (m1) recomputed, and what depends on it.
// OP-LABEL: func.func @train_step
// OP: %[[H0:.*]] = titan.matmul
// OP: %[[H1:.*]] = titan.matmul
// OP: %[[M1R:.*]] = titan.matmul %[[H1]], %{{.*}} {titan.recompute}
// OP-NEXT: %[[A1R:.*]] = titan.exp %[[M1R]] {titan.recompute}
// OP-NEXT: %[[D1:.*]] = titan.mul %{{.*}}, %[[A1R]]
// OP-NEXT: %[[D2:.*]] = titan.mul %[[D1]], %[[H1]]
// OP-NEXT: titan.mul %[[D2]], %[[H0]]
// OP-NOT: titan.recompute

// Every 2nd block (torchtitan counts from 1): block layers.1 only.
// EVERY2-LABEL: func.func @train_step
// EVERY2-COUNT-3: {titan.recompute}
// EVERY2: titan.mul
// EVERY2: titan.mul
// EVERY2-NOT: titan.recompute

// NONE-NOT: titan.recompute

// MODE: error: titan-select-recompute: mode 'sometimes' with selective-ac-option 'op' is not one of none, full, selective with op or a positive integer
// ZERO: error: titan-select-recompute: mode 'selective' with selective-ac-option '0' is not one of
// NOSTEP: error: titan-select-recompute: no @train_step to checkpoint (run titan-build-train-step first)

func.func @train_step(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %h0 = titan.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc(#f0)
  %a0 = titan.exp %h0 : tensor<4x8xf32> loc(#f0)
  %h1 = titan.matmul %a0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc(#f1)
  %m1 = titan.matmul %h1, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc(#f1)
  %a1 = titan.exp %m1 : tensor<4x8xf32> loc(#f1)
  %d1 = titan.mul %g, %a1 : tensor<4x8xf32> loc(#b)
  %d2 = titan.mul %d1, %h1 : tensor<4x8xf32> loc(#b)
  %d3 = titan.mul %d2, %h0 : tensor<4x8xf32> loc(#b)
  return %d2, %d3 : tensor<4x8xf32>, tensor<4x8xf32>
}
