// RUN: titan-opt %s --titan-select-recompute=mode=full | FileCheck %s --check-prefix=FULL
// RUN: titan-opt %s --titan-select-recompute="mode=selective selective-ac-option=op" | FileCheck %s --check-prefix=OP
// RUN: titan-opt %s --titan-select-recompute="mode=selective selective-ac-option=2" | FileCheck %s --check-prefix=EVERY2
// RUN: titan-opt %s --titan-select-recompute=mode=none | FileCheck %s --check-prefix=NONE
// RUN: titan-opt %s --titan-select-recompute=mode=full | titan-opt --verify-each > /dev/null
// RUN: not titan-opt %s --titan-select-recompute=mode=sometimes 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not titan-opt %s --titan-select-recompute="mode=selective selective-ac-option=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: echo "module {}" | not titan-opt --titan-select-recompute=mode=full 2>&1 | FileCheck %s --check-prefix=NOSTEP
// RUN: titan-opt %s --titan-select-recompute="mode=memory_budget memory-budget=0" | FileCheck %s --check-prefix=FULL
// RUN: titan-opt %s --titan-select-recompute="mode=memory_budget memory-budget=1" | FileCheck %s --check-prefix=ALL
// RUN: titan-opt %s --titan-select-recompute="mode=auto kept-bytes=128" | FileCheck %s --check-prefix=AUTO
// RUN: titan-opt %s --titan-select-recompute="mode=auto kept-bytes=128" | titan-opt --verify-each > /dev/null
// RUN: not titan-opt %s --titan-select-recompute=mode=auto 2>&1 | FileCheck %s --check-prefix=NOBYTES
// RUN: not titan-opt %s --titan-select-recompute="mode=memory_budget memory-budget=2" 2>&1 | FileCheck %s --check-prefix=FRACTION
// RUN: not titan-opt %s --titan-select-recompute="mode=auto kept-bytes=0 device=tpu" 2>&1 | FileCheck %s --check-prefix=DEVICE

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

// A budget of everything no checkpointing keeps (h0, h1, a1: 3 x 128
// bytes) recomputes nothing; the choice is written on the step.
// ALL: func.func @train_step
// ALL-SAME: titan.recompute_plan = {budget_mib = 3.662109375E-4 : f64, kept_mib = 3.662109375E-4 : f64, recompute_seconds = 0.000000e+00 : f64, solver = "optimal: 2 blocks in 2 classes, {{[0-9]+}} choices, {{.*}} s"}
// ALL-NOT: {titan.recompute}

// Room for one value (128 bytes): keeping a1 spares its exp and the matmul
// m1 (keeping h1 or m1 would still recompute the exp, keeping h0 all of
// block 1), so block 1 recomputes only h1, block 0 h0.
// AUTO: func.func @train_step
// AUTO-SAME: kept_mib = 1.220703125E-4
// AUTO: titan.exp
// AUTO: %[[A1:.*]] = titan.exp
// AUTO: %[[D1:.*]] = titan.mul %{{.*}}, %[[A1]]
// AUTO-NEXT: %[[H1R:.*]] = titan.matmul %{{.*}}, %{{.*}} {titan.recompute}
// AUTO-NEXT: %[[D2:.*]] = titan.mul %[[D1]], %[[H1R]]
// AUTO-NEXT: %[[H0R:.*]] = titan.matmul %{{.*}}, %{{.*}} {titan.recompute}
// AUTO-NEXT: titan.mul %[[D2]], %[[H0R]]
// AUTO-NOT: {titan.recompute}

// MODE: error: titan-select-recompute: mode 'sometimes' is not one of none, full, selective, memory_budget, auto
// ZERO: error: titan-select-recompute: selective-ac-option '0' is neither op nor a positive integer
// NOBYTES: error: titan-select-recompute: mode auto needs kept-bytes, the bytes per rank to keep for the backward (titan-compile derives it from [activation_checkpoint] memory_budget_gib)
// FRACTION: error: titan-select-recompute: memory-budget 2.00 is not a fraction in [0, 1]
// DEVICE: error: titan-select-recompute: device 'tpu': {{.*}}
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
