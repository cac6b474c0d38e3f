// RUN: titan-opt %s --titan-schedule-overlap | FileCheck %s
// RUN: titan-opt %s --titan-schedule-overlap | titan-opt --titan-schedule-overlap | FileCheck %s

// HSDP: block 2's gradient is reduce-scattered over fsdp and the result
// all-reduced over the replicas. The all-reduce (with the reshape before
// it) is deferred to where the reduce-scatter is waited for at the latest,
// the start of the segment after next (block 0's backward): the
// reduce-scatter runs behind block 1's backward, and the all-reduce,
// issued there, behind block 0's, waited for before the optimizer reads
// it. Running the pass twice changes nothing more.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]] = titan.mul
// CHECK-NEXT: %[[RS:.*]] = titan.reduce_scatter %[[G]] on @mesh ["fsdp"] dim 0 sum {titan.async}
// CHECK-NEXT: %[[D1:.*]] = titan.exp
// CHECK-NEXT: %[[E1:.*]] = titan.exp %[[D1]]
// CHECK-NEXT: %[[W:.*]] = titan.wait %[[RS]] : tensor<4x8xf32>
// CHECK-NEXT: %[[V:.*]] = titan.reshape %[[W]] : tensor<4x8xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[AR:.*]] = titan.all_reduce %[[V]] on @mesh ["dp_replicate"] sum {titan.async}
// CHECK-NEXT: %[[D0:.*]] = titan.exp %[[E1]]
// CHECK-NEXT: titan.exp %[[D0]]
// CHECK-NEXT: %[[WAR:.*]] = titan.wait %[[AR]] : tensor<32xf32>
// CHECK-NEXT: titan.reshape %[[WAR]]
// CHECK-NOT: titan.wait

#b2 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.2.mlp">[unknown]])
#b1 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.1.mlp">[unknown]])
#b0 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.0.mlp">[unknown]])
#o = loc(fused<"titan.phase.optimizer">[unknown])
titan.mesh @mesh ["dp_replicate"=2, "fsdp"=2]
func.func @train_step(%w: tensor<4x8xf32> {titan.name = "w", titan.role = "param"},
                      %x: tensor<8x8xf32> {titan.name = "x", titan.role = "input"})
    -> (tensor<4x8xf32> {titan.name = "param.w"}, tensor<8x8xf32> {titan.name = "dx"}) {
  %d2 = titan.exp %x : tensor<8x8xf32> loc(#b2)
  %g2 = titan.mul %d2, %x : tensor<8x8xf32> loc(#b2)
  %rs = titan.reduce_scatter %g2 on @mesh ["fsdp"] dim 0 sum : tensor<8x8xf32> -> tensor<4x8xf32> loc(#b2)
  %v = titan.reshape %rs : tensor<4x8xf32> -> tensor<32xf32> loc(#b2)
  %ar = titan.all_reduce %v on @mesh ["dp_replicate"] sum : tensor<32xf32> loc(#b2)
  %d1 = titan.exp %d2 : tensor<8x8xf32> loc(#b1)
  %e1 = titan.exp %d1 : tensor<8x8xf32> loc(#b1)
  %d0 = titan.exp %e1 : tensor<8x8xf32> loc(#b0)
  %e0 = titan.exp %d0 : tensor<8x8xf32> loc(#b0)
  %g = titan.reshape %ar : tensor<32xf32> -> tensor<4x8xf32> loc(#o)
  %u = titan.add %w, %g : tensor<4x8xf32> loc(#o)
  return %u, %e0 : tensor<4x8xf32>, tensor<8x8xf32>
}
