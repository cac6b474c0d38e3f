// RUN: titan-opt %s --split-input-file --titan-reshard-after-forward=policy=always | FileCheck %s
// RUN: titan-opt %s --split-input-file --titan-reshard-after-forward=policy=never | FileCheck %s --check-prefix=NEVER
// RUN: titan-opt %s --split-input-file --titan-reshard-after-forward | FileCheck %s --check-prefix=NEVER
// RUN: titan-opt %s --split-input-file --titan-reshard-after-forward=policy=default | FileCheck %s --check-prefix=DEFAULT
// RUN: titan-opt %s --split-input-file --titan-reshard-after-forward=policy=always | FileCheck %s --check-prefix=MIXED
// RUN: not titan-opt %s --split-input-file --titan-reshard-after-forward=policy=sometimes 2>&1 | FileCheck %s --check-prefix=BAD

// The forward gathers w over fsdp and reads it, directly and through a
// reshape; the backward reads both. With policy=always, the gather and the
// reshape are cloned (phase backward, titan.recompute) right before the
// first backward op, which reads the clones; the forward's gather is read
// only by the forward. The gather of x (an input, not a parameter) and the
// second parameter's gather, which the backward does not read, stay as
// they are.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]] = titan.all_gather %arg0 on @mesh ["fsdp"] dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[R:.*]] = titan.reshape %[[G]] : tensor<4x4xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[X:.*]] = titan.all_gather %arg2
// CHECK-NEXT: %[[V:.*]] = titan.all_gather %arg1
// CHECK-NEXT: %[[Y:.*]] = titan.matmul %[[X]], %[[G]]
// CHECK-NEXT: %[[Z:.*]] = titan.matmul %[[Y]], %[[V]]
// CHECK-NEXT: %[[G2:.*]] = titan.all_gather %arg0 on @mesh ["fsdp"] dim 0 {titan.recompute} : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[R2:.*]] = titan.reshape %[[G2]] {titan.recompute} : tensor<4x4xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[D:.*]] = titan.matmul %[[Z]], %[[G2]] transpose_rhs
// CHECK-NEXT: %[[S:.*]] = titan.add %[[R2]], %[[R2]]
// CHECK-NEXT: return %[[D]], %[[S]], %[[R]]

// NEVER-NOT: titan.recompute

// BAD: error: titan-reshard-after-forward: unknown policy 'sometimes' (expected never, default or always)

titan.mesh @mesh ["fsdp"=2]
func.func @train_step(
    %w: tensor<2x4xf32> {titan.name = "w", titan.role = "param"},
    %v: tensor<2x4xf32> {titan.name = "v", titan.role = "param"},
    %x: tensor<2x4xf32> {titan.name = "x", titan.role = "input"})
    -> (tensor<4x4xf32>, tensor<16xf32>, tensor<16xf32>) {
  %g = titan.all_gather %w on @mesh ["fsdp"] dim 0 : tensor<2x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %r = titan.reshape %g : tensor<4x4xf32> -> tensor<16xf32> loc(fused<"titan.phase.forward">[unknown])
  %xg = titan.all_gather %x on @mesh ["fsdp"] dim 0 : tensor<2x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %vg = titan.all_gather %v on @mesh ["fsdp"] dim 0 : tensor<2x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %y = titan.matmul %xg, %g : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %z = titan.matmul %y, %vg : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %d = titan.matmul %z, %g transpose_rhs : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.backward">[unknown])
  %s = titan.add %r, %r : tensor<16xf32> loc(fused<"titan.phase.backward">[unknown])
  return %d, %s, %r : tensor<4x4xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// torchtitan's default: the blocks of layers.* reshard except the last
// (layers.1); the root's parameter (norm.weight) stays gathered. The first
// function above has no blocks: nothing changes there.
// DEFAULT-LABEL: func.func @train_step
// DEFAULT-NOT: titan.recompute
// DEFAULT-LABEL: func.func @train_step
// DEFAULT: %[[G0:.*]] = titan.all_gather %arg0
// DEFAULT: %[[G1:.*]] = titan.all_gather %arg1
// DEFAULT: %[[GN:.*]] = titan.all_gather %arg2
// DEFAULT: %[[G0R:.*]] = titan.all_gather %arg0 on @mesh ["fsdp"] dim 0 {titan.recompute}
// DEFAULT-NEXT: titan.matmul %{{.*}}, %[[G0R]] transpose_rhs
// DEFAULT-NEXT: titan.matmul %{{.*}}, %[[G1]] transpose_rhs
// DEFAULT-NEXT: titan.mul %{{.*}}, %[[GN]]
// DEFAULT-NOT: titan.recompute

titan.mesh @mesh ["fsdp"=2]
func.func @train_step(
    %w0: tensor<2x4xf32> {titan.name = "layers.0.w", titan.role = "param"},
    %w1: tensor<2x4xf32> {titan.name = "layers.1.w", titan.role = "param"},
    %n: tensor<2x4xf32> {titan.name = "norm.weight", titan.role = "param"},
    %x: tensor<4x4xf32> {titan.name = "x", titan.role = "input"})
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %g0 = titan.all_gather %w0 on @mesh ["fsdp"] dim 0 : tensor<2x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %g1 = titan.all_gather %w1 on @mesh ["fsdp"] dim 0 : tensor<2x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %gn = titan.all_gather %n on @mesh ["fsdp"] dim 0 : tensor<2x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %y0 = titan.matmul %x, %g0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %y1 = titan.matmul %y0, %g1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %yn = titan.mul %y1, %gn : tensor<4x4xf32> loc(fused<"titan.phase.forward">[unknown])
  %d0 = titan.matmul %yn, %g0 transpose_rhs : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.backward">[unknown])
  %d1 = titan.matmul %yn, %g1 transpose_rhs : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32> loc(fused<"titan.phase.backward">[unknown])
  %dn = titan.mul %yn, %gn : tensor<4x4xf32> loc(fused<"titan.phase.backward">[unknown])
  return %d0, %d1, %dn : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Mixed precision: the forward casts the shard to bf16 and gathers the
// cast; the backward casts the float32 shard and gathers again (the bf16
// shard is not kept either).
// MIXED: %[[C:.*]] = titan.cast %arg0 : tensor<2x4xf32> to tensor<2x4xbf16>
// MIXED-NEXT: %[[G:.*]] = titan.all_gather %[[C]] on @mesh ["fsdp"] dim 0 : tensor<2x4xbf16> -> tensor<4x4xbf16>
// MIXED-NEXT: %[[Y:.*]] = titan.matmul %arg1, %[[G]]
// MIXED-NEXT: %[[C2:.*]] = titan.cast %arg0 {titan.recompute} : tensor<2x4xf32> to tensor<2x4xbf16>
// MIXED-NEXT: %[[G2:.*]] = titan.all_gather %[[C2]] on @mesh ["fsdp"] dim 0 {titan.recompute} : tensor<2x4xbf16> -> tensor<4x4xbf16>
// MIXED-NEXT: titan.matmul %[[Y]], %[[G2]] transpose_rhs

titan.mesh @mesh ["fsdp"=2]
func.func @train_step(
    %w: tensor<2x4xf32> {titan.name = "w", titan.role = "param"},
    %x: tensor<4x4xbf16> {titan.name = "x", titan.role = "input"})
    -> tensor<4x4xbf16> {
  %c = titan.cast %w : tensor<2x4xf32> to tensor<2x4xbf16> loc(fused<"titan.phase.forward">[unknown])
  %g = titan.all_gather %c on @mesh ["fsdp"] dim 0 : tensor<2x4xbf16> -> tensor<4x4xbf16> loc(fused<"titan.phase.forward">[unknown])
  %y = titan.matmul %x, %g : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc(fused<"titan.phase.forward">[unknown])
  %d = titan.matmul %y, %g transpose_rhs : tensor<4x4xbf16>, tensor<4x4xbf16> -> tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  return %d : tensor<4x4xbf16>
}
