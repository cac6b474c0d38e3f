// RUN: titan-opt %s --titan-bucket-collectives | FileCheck %s
// RUN: titan-opt %s --titan-bucket-collectives=max-bytes=100 | FileCheck %s --check-prefix=SMALL
// RUN: titan-opt %s --titan-bucket-collectives | titan-opt --titan-bucket-collectives | FileCheck %s
// With a device, a bucket stays where the cost model predicts it faster.
// The round test device: each bucket saves one ring step of 2 us (groups
// of 2) and its copies (a few hundred bytes) cost 1 us of op
// overhead, so every bucket stays. A device of 50 us per op: no bucket pays,
// the program is left as it is. A device that is not one: its name.
// RUN: titan-opt %s --titan-bucket-collectives=device=%S/../Spmd/Inputs/round-device.toml | FileCheck %s
// RUN: titan-opt %s --titan-bucket-collectives=device=%S/Inputs/costly-copy-device.toml > %t.costly.mlir
// RUN: titan-opt %s | diff - %t.costly.mlir
// RUN: not titan-opt %s --titan-bucket-collectives=device=nosuch 2>&1 | FileCheck %s --check-prefix=NODEVICE
// NODEVICE: error: titan-bucket-collectives: device 'nosuch': device 'nosuch' is neither a bundled device

// One block under HSDP (fsdp 2 x dp_replicate 2). The forward's two
// parameter gathers become one, issued where the first stood; the second
// parameter's bf16 cast moves with it. The activation gather, computed in
// the block, stays alone. The backward's two gradient reduce-scatters
// become one after the second gradient, each operand viewed as its two
// chunks [2, n] and concatenated along dim 1; their all_reduces over the
// replicas become one all_reduce of the bucket. Each result is cut right
// before its first reader. max-bytes=100 keeps the 64-byte operands
// apart.

#f = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0.mlp">[unknown]])
#b = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.0.mlp">[unknown]])
#o = loc(fused<"titan.phase.optimizer">[unknown])

// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[E:.*]] = titan.exp %arg2
// CHECK-NEXT: %[[C1:.*]] = titan.cast %arg1 : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK-NEXT: %[[F0:.*]] = titan.reshape %arg0 : tensor<2x8xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[F1:.*]] = titan.reshape %[[C1]] : tensor<2x8xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[J:.*]] = titan.concat %[[F0]], %[[F1]] dim 0
// CHECK-NEXT: %[[G:.*]] = titan.all_gather %[[J]] on @mesh ["fsdp"] dim 0 : tensor<32xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[M:.*]] = titan.reshape %[[G]] : tensor<64xf32> -> tensor<2x32xf32>
// CHECK-NEXT: %[[P0:.*]] = titan.slice %[[M]] [0, 0] to [2, 16]
// CHECK-NEXT: %[[W0:.*]] = titan.reshape %[[P0]] : tensor<2x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[H0:.*]] = titan.matmul %[[E]], %[[W0]]
// CHECK-NEXT: %[[P1:.*]] = titan.slice %[[M]] [0, 16] to [2, 32]
// CHECK-NEXT: %[[W1:.*]] = titan.reshape %[[P1]] : tensor<2x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[H1:.*]] = titan.matmul %[[H0]], %[[W1]]
// CHECK-NEXT: titan.all_gather %[[H1]] on @mesh ["fsdp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[Q1:.*]] = titan.slice %{{.*}} [4, 0] to [8, 8]
// CHECK-NEXT: %[[R0:.*]] = titan.reshape %{{.*}} : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[R1:.*]] = titan.reshape %[[Q1]] : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %[[K:.*]] = titan.concat %[[R0]], %[[R1]] dim 1 : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x32xf32>
// CHECK-NEXT: %[[KF:.*]] = titan.reshape %[[K]] : tensor<2x32xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[RS:.*]] = titan.reduce_scatter %[[KF]] on @mesh ["fsdp"] dim 0 sum : tensor<64xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[AR:.*]] = titan.all_reduce %[[RS]] on @mesh ["dp_replicate"] avg : tensor<32xf32>
// CHECK-NEXT: %[[S0:.*]] = titan.slice %[[AR]] [0] to [16]
// CHECK-NEXT: %[[U0:.*]] = titan.reshape %[[S0]] : tensor<16xf32> -> tensor<2x8xf32>
// CHECK-NEXT: titan.add %arg0, %[[U0]]
// CHECK-NEXT: titan.cast %arg1
// CHECK-NEXT: %[[S1:.*]] = titan.slice %[[AR]] [16] to [32]
// CHECK-NOT: titan.all_reduce
// CHECK-NOT: titan.reduce_scatter
// CHECK: return

// SMALL-COUNT-3: titan.all_gather
// SMALL-COUNT-2: titan.reduce_scatter
// SMALL-COUNT-2: titan.all_reduce

titan.mesh @mesh ["dp_replicate"=2, "fsdp"=2]
func.func @train_step(%w0: tensor<2x8xf32> {titan.name = "w0", titan.role = "param"},
                      %w1: tensor<2x8xbf16> {titan.name = "w1", titan.role = "param"},
                      %x: tensor<4x8xf32> {titan.name = "x", titan.role = "input"})
    -> (tensor<2x8xf32> {titan.name = "param.w0"}, tensor<2x8xf32> {titan.name = "param.w1"}) {
  %e = titan.exp %x : tensor<4x8xf32> loc(#f)
  %g0 = titan.all_gather %w0 on @mesh ["fsdp"] dim 0 : tensor<2x8xf32> -> tensor<4x8xf32> loc(#f)
  %h0 = titan.matmul %e, %g0 transpose_rhs : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32> loc(#f)
  %c1 = titan.cast %w1 : tensor<2x8xbf16> to tensor<2x8xf32> loc(#f)
  %g1 = titan.all_gather %c1 on @mesh ["fsdp"] dim 0 : tensor<2x8xf32> -> tensor<4x8xf32> loc(#f)
  %h1 = titan.matmul %h0, %g1 : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc(#f)
  %a = titan.all_gather %h1 on @mesh ["fsdp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32> loc(#f)
  %d0 = titan.exp %a : tensor<8x8xf32> loc(#b)
  %q0 = titan.slice %d0 [0, 0] to [4, 8] step [1, 1] : tensor<8x8xf32> -> tensor<4x8xf32> loc(#b)
  %rs0 = titan.reduce_scatter %q0 on @mesh ["fsdp"] dim 0 sum : tensor<4x8xf32> -> tensor<2x8xf32> loc(#b)
  %d1 = titan.exp %d0 : tensor<8x8xf32> loc(#b)
  %q1 = titan.slice %d1 [4, 0] to [8, 8] step [1, 1] : tensor<8x8xf32> -> tensor<4x8xf32> loc(#b)
  %rs1 = titan.reduce_scatter %q1 on @mesh ["fsdp"] dim 0 sum : tensor<4x8xf32> -> tensor<2x8xf32> loc(#b)
  %ar0 = titan.all_reduce %rs0 on @mesh ["dp_replicate"] avg : tensor<2x8xf32> loc(#o)
  %u0 = titan.add %w0, %ar0 : tensor<2x8xf32> loc(#o)
  %ar1 = titan.all_reduce %rs1 on @mesh ["dp_replicate"] avg : tensor<2x8xf32> loc(#o)
  %w1f = titan.cast %w1 : tensor<2x8xbf16> to tensor<2x8xf32> loc(#o)
  %u1 = titan.add %w1f, %ar1 : tensor<2x8xf32> loc(#o)
  return %u0, %u1 : tensor<2x8xf32>, tensor<2x8xf32>
}
