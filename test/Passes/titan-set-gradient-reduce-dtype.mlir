// RUN: titan-opt %s --split-input-file --titan-set-gradient-reduce-dtype | FileCheck %s
// RUN: titan-opt %s --split-input-file --titan-set-gradient-reduce-dtype=dtype=f64 | FileCheck %s --check-prefix=F64
// RUN: not titan-opt %s --split-input-file --titan-set-gradient-reduce-dtype=dtype=bf16 2>&1 | FileCheck %s --check-prefix=BAD

titan.mesh @mesh ["fsdp"=2]

// A bf16 weight gradient, partial over fsdp, reduce-scattered and widened
// for AdamW (through a reshape): the sum is widened first and the
// reduce-scatter and the reshape move f32. A partial activation gradient
// that the backward keeps using in bf16, and a widened gradient that the
// backward (not the optimizer) reads, keep their bf16 reductions.

// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[W:.*]] = titan.cast %arg0 {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<1x4x4xbf16> to tensor<1x4x4xf32>
// CHECK-NEXT: %[[R:.*]] = titan.redistribute %[[W]] to <@mesh, [S(1)]> : tensor<1x4x4xf32>
// CHECK-NEXT: %[[V:.*]] = titan.reshape %[[R]] : tensor<1x4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[M:.*]] = titan.mul %[[V]], %arg2
// CHECK-NEXT: %[[A:.*]] = titan.redistribute %arg1 to <@mesh, [R]> : tensor<4x4xbf16>
// CHECK-NEXT: %[[N:.*]] = titan.neg %[[A]]
// CHECK-NEXT: %[[B:.*]] = titan.redistribute %arg3 to <@mesh, [R]> : tensor<4x4xbf16>
// CHECK-NEXT: %[[C:.*]] = titan.cast %[[B]] : tensor<4x4xbf16> to tensor<4x4xf32>
// CHECK-NEXT: %[[E:.*]] = titan.exp %[[C]]
// CHECK-NEXT: return %[[M]], %[[N]], %[[E]]

// F64-LABEL: func.func @train_step
// F64-NOT: tensor<1x4x4xf64>
// F64: titan.redistribute %arg0 to <@mesh, [S(1)]> : tensor<1x4x4xbf16>

// BAD: error: titan-set-gradient-reduce-dtype: dtype 'bf16' is not a float type gradients can be reduced in (expected f32 or f64)
func.func @train_step(
    %g: tensor<1x4x4xbf16> {titan.placements = #titan.placements<@mesh, [P(sum)]>},
    %a: tensor<4x4xbf16> {titan.placements = #titan.placements<@mesh, [P(sum)]>},
    %m: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
    %b: tensor<4x4xbf16> {titan.placements = #titan.placements<@mesh, [P(sum)]>})
    -> (tensor<4x4xf32>, tensor<4x4xbf16>, tensor<4x4xf32>) {
  %r = titan.redistribute %g to <@mesh, [S(1)]> : tensor<1x4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  %v = titan.reshape %r : tensor<1x4x4xbf16> -> tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  %w = titan.cast %v : tensor<4x4xbf16> to tensor<4x4xf32> loc(fused<"titan.phase.backward">[unknown])
  %u = titan.mul %w, %m : tensor<4x4xf32> loc(fused<"titan.phase.optimizer">[unknown])
  %ra = titan.redistribute %a to <@mesh, [R]> : tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  %n = titan.neg %ra : tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  %rb = titan.redistribute %b to <@mesh, [R]> : tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  %c = titan.cast %rb : tensor<4x4xbf16> to tensor<4x4xf32> loc(fused<"titan.phase.backward">[unknown])
  %e = titan.exp %c : tensor<4x4xf32> loc(fused<"titan.phase.backward">[unknown])
  return %u, %n, %e : tensor<4x4xf32>, tensor<4x4xbf16>, tensor<4x4xf32>
}

// -----

titan.mesh @mesh ["fsdp"=2]

// Pure bf16 training: AdamW reads the bf16 gradient itself. The sum is
// widened first, the reduce-scatter and the transpose move f32, and the
// reduced shard is cast back to bf16 for the optimizer; an f64 reduction
// moves f64 the same way. A partial bf16 value the backward reads keeps
// its bf16 reduction.

// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[W:.*]] = titan.cast %arg0 {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<4x4xbf16> to tensor<4x4xf32>
// CHECK-NEXT: %[[R:.*]] = titan.redistribute %[[W]] to <@mesh, [S(0)]> : tensor<4x4xf32>
// CHECK-NEXT: %[[T:.*]] = titan.transpose %[[R]] {{.*}}: tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[N:.*]] = titan.cast %[[T]] {titan.placements = [#titan.placements<@mesh, [S(1)]>]} : tensor<4x4xf32> to tensor<4x4xbf16>
// CHECK-NEXT: %[[U:.*]] = titan.mul %[[N]], %arg2
// CHECK-NEXT: %[[A:.*]] = titan.redistribute %arg1 to <@mesh, [R]> : tensor<4x4xbf16>
// CHECK-NEXT: %[[E:.*]] = titan.neg %[[A]]
// CHECK-NEXT: return %[[U]], %[[E]]

// F64-LABEL: func.func @train_step
// F64: titan.redistribute {{.*}} : tensor<4x4xf64>
// F64: titan.cast {{.*}} : tensor<4x4xf64> to tensor<4x4xbf16>
func.func @train_step(
    %g: tensor<4x4xbf16> {titan.placements = #titan.placements<@mesh, [P(sum)]>},
    %a: tensor<4x4xbf16> {titan.placements = #titan.placements<@mesh, [P(sum)]>},
    %m: tensor<4x4xbf16> {titan.placements = #titan.placements<@mesh, [S(1)]>})
    -> (tensor<4x4xbf16>, tensor<4x4xbf16>) {
  %r = titan.redistribute %g to <@mesh, [S(0)]> : tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  %t = titan.transpose %r [1, 0] {titan.placements = [#titan.placements<@mesh, [S(1)]>]} : tensor<4x4xbf16> -> tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  %u = titan.mul %t, %m : tensor<4x4xbf16> loc(fused<"titan.phase.optimizer">[unknown])
  %ra = titan.redistribute %a to <@mesh, [R]> : tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  %n = titan.neg %ra : tensor<4x4xbf16> loc(fused<"titan.phase.backward">[unknown])
  return %u, %n : tensor<4x4xbf16>, tensor<4x4xbf16>
}
