// RUN: titan-opt %s --titan-schedule-overlap | FileCheck %s
// RUN: titan-opt %s --titan-schedule-overlap=memory-budget=256 | FileCheck %s
// RUN: titan-opt %s --titan-schedule-overlap=memory-budget=200 | FileCheck %s --check-prefix=SMALL
// RUN: titan-opt %s --titan-schedule-overlap=memory-budget=191 | FileCheck %s --check-prefix=BUDGET
// RUN: titan-opt %s --titan-schedule-overlap=prefetch-depth=0 | FileCheck %s --check-prefix=BUDGET
// RUN: titan-opt %s --titan-schedule-overlap | titan-opt --titan-schedule-overlap | FileCheck %s

// Two blocks under FSDP 2 and a tensor-parallel all-reduce. Block 1's
// parameter is gathered while block 0 computes: issued after block 0's own
// gather (a communicator runs its collectives in order, and block 0 needs
// its own first), waited for right before block 1 reads it; its bf16 cast
// moves with it. Block 1's gradient is reduce-scattered while block 0's
// backward computes and waited for before the optimizer (the start of the
// segment after next). The all-reduce read by the next op stays
// synchronous: nothing would compute behind it. The prefetch keeps 192
// bytes alive early (the cast and the gathered 8x8 bf16), the deferred
// reduce-scatter 256 (its 8x8 f32 operand): a budget of 200 bytes allows
// only the prefetch, one of 191 bytes (or depth 0) leaves the program as it
// was. Running the pass twice changes nothing more.

#f0 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0.mlp">[unknown]])
#f1 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.1.mlp">[unknown]])
#b1 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.1.mlp">[unknown]])
#b0 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.0.mlp">[unknown]])
#o = loc(fused<"titan.phase.optimizer">[unknown])

// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[G0:.*]] = titan.all_gather %arg0 on @mesh ["fsdp"] dim 0 :
// CHECK-NEXT: %[[C1:.*]] = titan.cast %arg1
// CHECK-NEXT: %[[G1:.*]] = titan.all_gather %[[C1]] on @mesh ["fsdp"] dim 0 {titan.async}
// CHECK-NEXT: %[[H0:.*]] = titan.matmul %arg2, %[[G0]]
// CHECK-NEXT: %[[R0:.*]] = titan.all_reduce %[[H0]] on @mesh ["tp"] sum :
// CHECK-NEXT: %[[A0:.*]] = titan.exp %[[R0]]
// CHECK-NEXT: titan.cast %[[A0]]
// CHECK-NEXT: %[[W1:.*]] = titan.wait %[[G1]] : tensor<8x8xbf16>
// CHECK-NEXT: titan.matmul %{{.*}}, %[[W1]]
// CHECK: %[[RS:.*]] = titan.reduce_scatter %{{.*}} on @mesh ["fsdp"] dim 0 sum {titan.async}
// CHECK-NEXT: titan.exp
// CHECK-NEXT: titan.mul
// CHECK-NEXT: %[[WRS:.*]] = titan.wait %[[RS]] : tensor<4x8xf32>
// CHECK-NEXT: titan.add %arg1, %[[WRS]]
// CHECK-NOT: titan.wait

// SMALL: titan.all_gather %{{.*}} {titan.async}
// SMALL: titan.wait
// SMALL: titan.reduce_scatter %{{.*}} sum :
// SMALL-NOT: titan.wait

// BUDGET-NOT: titan.async
// BUDGET-NOT: titan.wait

titan.mesh @mesh ["fsdp"=2, "tp"=2]
func.func @train_step(%w0: tensor<4x8xf32> {titan.name = "w0", titan.role = "param"},
                      %w1: tensor<4x8xf32> {titan.name = "w1", titan.role = "param"},
                      %x: tensor<4x8xf32> {titan.name = "x", titan.role = "input"})
    -> (tensor<4x8xf32> {titan.name = "param.w0"}, tensor<4x8xf32> {titan.name = "param.w1"}) {
  %g0 = titan.all_gather %w0 on @mesh ["fsdp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32> loc(#f0)
  %h0 = titan.matmul %x, %g0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc(#f0)
  %r0 = titan.all_reduce %h0 on @mesh ["tp"] sum : tensor<4x8xf32> loc(#f0)
  %a0 = titan.exp %r0 : tensor<4x8xf32> loc(#f0)
  %c1 = titan.cast %w1 : tensor<4x8xf32> to tensor<4x8xbf16> loc(#f1)
  %g1 = titan.all_gather %c1 on @mesh ["fsdp"] dim 0 : tensor<4x8xbf16> -> tensor<8x8xbf16> loc(#f1)
  %a0c = titan.cast %a0 : tensor<4x8xf32> to tensor<4x8xbf16> loc(#f1)
  %h1 = titan.matmul %a0c, %g1 : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16> loc(#f1)
  %h1f = titan.cast %h1 : tensor<4x8xbf16> to tensor<4x8xf32> loc(#f1)
  %a1 = titan.exp %h1f : tensor<4x8xf32> loc(#f1)
  %d1 = titan.exp %a1 : tensor<4x8xf32> loc(#b1)
  %gw1 = titan.mul %d1, %a0 : tensor<4x8xf32> loc(#b1)
  %gw1f = titan.concat %gw1, %gw1 dim 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32> loc(#b1)
  %rs1 = titan.reduce_scatter %gw1f on @mesh ["fsdp"] dim 0 sum : tensor<8x8xf32> -> tensor<4x8xf32> loc(#b1)
  %d0 = titan.exp %d1 : tensor<4x8xf32> loc(#b0)
  %gw0 = titan.mul %d0, %x : tensor<4x8xf32> loc(#b0)
  %u1 = titan.add %w1, %rs1 : tensor<4x8xf32> loc(#o)
  %u0 = titan.add %w0, %gw0 : tensor<4x8xf32> loc(#o)
  return %u0, %u1 : tensor<4x8xf32>, tensor<4x8xf32>
}
