// RUN: titan-opt %s --split-input-file --titan-decompose-collective-matmul=chunks=2 | FileCheck %s
// RUN: titan-opt %s --split-input-file --titan-normalize-collectives --canonicalize --titan-decompose-collective-matmul=chunks=2 | FileCheck %s
// RUN: titan-opt %s --split-input-file --titan-decompose-collective-matmul=chunks=2 --titan-decompose-collective-matmul=chunks=2 --titan-schedule-overlap | FileCheck %s
// RUN: titan-opt %s --split-input-file --titan-decompose-collective-matmul=chunks=4 | FileCheck %s --check-prefix=FOUR
// RUN: titan-opt %s --split-input-file --titan-decompose-collective-matmul=chunks=3 | FileCheck %s --check-prefix=WHOLE
// RUN: titan-opt %s --split-input-file --titan-decompose-collective-matmul=axis=fsdp | FileCheck %s --check-prefix=WHOLE
// RUN: titan-opt %s --split-input-file --titan-decompose-collective-matmul | FileCheck %s --check-prefix=COST
// RUN: titan-opt %s --split-input-file --titan-decompose-collective-matmul=device=h200 | FileCheck %s --check-prefix=H200

// One transformer block under TP 2 with sequence parallelism: the
// normalized activation is all-gathered along the sequence before the
// column-parallel matmuls (wq, wk), their product feeds the row-parallel
// wo, whose output is reduce-scattered back onto the sequence; the backward
// reads the whole gathered activation (the weight gradient's matmul).
//
// In 2 chunks of 4 rows of each rank's 8: both chunks' all-gathers are
// issued where the whole one was (normalized onto contiguous chunks);
// where the gathered activation is first read, the step waits for chunk 0
// and computes its rows of wq and wk, then chunk 1's; the whole activation
// is joined for the backward. The cone of the reduce-scatter (mul, wo) is
// computed chunk by chunk from the matmuls' chunks themselves (never joined),
// each chunk reduce-scattered as soon as it is computed, and the two
// halves are waited for and joined where the residual add reads them. The
// same comes out of the normalized program, running the pass twice changes
// nothing more, and titan-schedule-overlap leaves the chunks as they are.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[N:.*]] = titan.exp %arg0
// CHECK-NEXT: %[[S0:.*]] = titan.slice %[[N]] [0, 0, 0] to [2, 4, 16]
// CHECK-NEXT: %[[U0:.*]] = titan.reshape %[[S0]] : tensor<2x4x16xf32> -> tensor<1x2x4x16xf32>
// CHECK-NEXT: %[[G0:.*]] = titan.all_gather %[[U0]] on @mesh ["tp"] dim 0 {titan.async} : tensor<1x2x4x16xf32> -> tensor<2x2x4x16xf32>
// CHECK-NEXT: %[[S1:.*]] = titan.slice %[[N]] [0, 4, 0] to [2, 8, 16]
// CHECK-NEXT: %[[U1:.*]] = titan.reshape %[[S1]]
// CHECK-NEXT: %[[G1:.*]] = titan.all_gather %[[U1]] on @mesh ["tp"] dim 0 {titan.async}
// CHECK-NEXT: %[[W0:.*]] = titan.wait %[[G0]] : tensor<2x2x4x16xf32>
// CHECK-NEXT: %[[T0:.*]] = titan.transpose %[[W0]] [1, 0, 2, 3]
// CHECK-NEXT: %[[C0:.*]] = titan.reshape %[[T0]] : tensor<2x2x4x16xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[Q0:.*]] = titan.matmul %[[C0]], %arg1 transpose_rhs : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x8xf32>
// CHECK-NEXT: %[[K0:.*]] = titan.matmul %[[C0]], %arg2 transpose_rhs
// CHECK-NEXT: %[[W1:.*]] = titan.wait %[[G1]]
// CHECK-NEXT: %[[T1:.*]] = titan.transpose %[[W1]] [1, 0, 2, 3]
// CHECK-NEXT: %[[C1:.*]] = titan.reshape %[[T1]]
// CHECK-NEXT: %[[Q1:.*]] = titan.matmul %[[C1]], %arg1 transpose_rhs
// CHECK-NEXT: %[[K1:.*]] = titan.matmul %[[C1]], %arg2 transpose_rhs
// CHECK-NEXT: %[[B0:.*]] = titan.reshape %[[C0]] : tensor<2x8x16xf32> -> tensor<2x2x4x16xf32>
// CHECK-NEXT: %[[B1:.*]] = titan.reshape %[[C1]]
// CHECK-NEXT: %[[J:.*]] = titan.concat %[[B0]], %[[B1]] dim 2 : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x8x16xf32>
// CHECK-NEXT: %[[GATHERED:.*]] = titan.reshape %[[J]] : tensor<2x2x8x16xf32> -> tensor<2x16x16xf32>
// CHECK-NEXT: %[[H0:.*]] = titan.mul %[[Q0]], %[[K0]] : tensor<2x8x8xf32>
// CHECK-NEXT: %[[O0:.*]] = titan.matmul %[[H0]], %arg3 transpose_rhs : tensor<2x8x8xf32>, tensor<16x8xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[P0:.*]] = titan.reshape %[[O0]] : tensor<2x8x16xf32> -> tensor<2x2x4x16xf32>
// CHECK-NEXT: %[[F0:.*]] = titan.transpose %[[P0]] [1, 0, 2, 3]
// CHECK-NEXT: %[[R0:.*]] = titan.reduce_scatter %[[F0]] on @mesh ["tp"] dim 0 sum {titan.async} : tensor<2x2x4x16xf32> -> tensor<1x2x4x16xf32>
// CHECK-NEXT: %[[H1:.*]] = titan.mul %[[Q1]], %[[K1]]
// CHECK-NEXT: %[[O1:.*]] = titan.matmul %[[H1]], %arg3 transpose_rhs
// CHECK-NEXT: titan.reshape %[[O1]]
// CHECK-NEXT: titan.transpose
// CHECK-NEXT: %[[R1:.*]] = titan.reduce_scatter %{{.*}} on @mesh ["tp"] dim 0 sum {titan.async}
// CHECK-NEXT: %[[V0:.*]] = titan.wait %[[R0]] : tensor<1x2x4x16xf32>
// CHECK-NEXT: %[[L0:.*]] = titan.reshape %[[V0]] : tensor<1x2x4x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[V1:.*]] = titan.wait %[[R1]]
// CHECK-NEXT: %[[L1:.*]] = titan.reshape %[[V1]]
// CHECK-NEXT: %[[R:.*]] = titan.concat %[[L0]], %[[L1]] dim 1 : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[Y:.*]] = titan.add %arg0, %[[R]]
// CHECK-NEXT: %[[DW:.*]] = titan.matmul %[[GATHERED]], %arg4 transpose_lhs
// CHECK-NEXT: return %[[Y]], %[[DW]]

// 4 chunks of 2 rows: 4 of each, the first chunk's rows 0-1.
// FOUR-LABEL: func.func @train_step
// FOUR-COUNT-4: titan.all_gather {{.*}} {titan.async} : tensor<1x2x2x16xf32> -> tensor<2x2x2x16xf32>
// FOUR-COUNT-4: titan.reduce_scatter {{.*}} {titan.async} : tensor<2x2x2x16xf32> -> tensor<1x2x2x16xf32>
// FOUR-COUNT-4: titan.wait
// FOUR: titan.concat {{.*}} dim 1 : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x2x16xf32>) -> tensor<2x8x16xf32>

// 3 chunks do not divide 8 rows, and the fsdp axis has no collective
// matmul: the program stays as it was.
// WHOLE-LABEL: func.func @train_step
// WHOLE-NOT: titan.async
// WHOLE: titan.all_gather %{{.*}} on @mesh ["tp"] dim 1 :
// WHOLE: titan.reduce_scatter %{{.*}} on @mesh ["tp"] dim 1 sum :
// WHOLE-NOT: titan.async

// The cost model leaves these small collectives whole on either device
// (each chunk would pay the collective's latency again)...
// COST-LABEL: func.func @train_step
// COST-NOT: titan.async
// COST: // -----
// H200-LABEL: func.func @train_step
// H200-NOT: titan.async
// H200: // -----

#f = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0.attention">[unknown]])
#b = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.0.attention">[unknown]])
titan.mesh @mesh ["fsdp"=1, "tp"=2]
func.func @train_step(%x: tensor<2x8x16xf32> {titan.name = "x", titan.role = "input"},
                      %wq: tensor<8x16xf32> {titan.name = "wq", titan.role = "param"},
                      %wk: tensor<8x16xf32> {titan.name = "wk", titan.role = "param"},
                      %wo: tensor<16x8xf32> {titan.name = "wo", titan.role = "param"},
                      %dy: tensor<2x16x8xf32> {titan.name = "dy", titan.role = "input"})
    -> (tensor<2x8x16xf32> {titan.name = "y"}, tensor<2x16x8xf32> {titan.name = "dwq"}) {
  %n = titan.exp %x : tensor<2x8x16xf32> loc(#f)
  %g = titan.all_gather %n on @mesh ["tp"] dim 1 : tensor<2x8x16xf32> -> tensor<2x16x16xf32> loc(#f)
  %q = titan.matmul %g, %wq transpose_rhs : tensor<2x16x16xf32>, tensor<8x16xf32> -> tensor<2x16x8xf32> loc(#f)
  %k = titan.matmul %g, %wk transpose_rhs : tensor<2x16x16xf32>, tensor<8x16xf32> -> tensor<2x16x8xf32> loc(#f)
  %h = titan.mul %q, %k : tensor<2x16x8xf32> loc(#f)
  %o = titan.matmul %h, %wo transpose_rhs : tensor<2x16x8xf32>, tensor<16x8xf32> -> tensor<2x16x16xf32> loc(#f)
  %r = titan.reduce_scatter %o on @mesh ["tp"] dim 1 sum : tensor<2x16x16xf32> -> tensor<2x8x16xf32> loc(#f)
  %y = titan.add %x, %r : tensor<2x8x16xf32> loc(#f)
  %dw = titan.matmul %g, %dy transpose_lhs : tensor<2x16x16xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32> loc(#b)
  return %y, %dw : tensor<2x8x16xf32>, tensor<2x16x8xf32>
}

// -----

// ... but cuts a Llama-3-8B-sized feed-forward under TP 8 (8192 tokens,
// bf16): into 8 chunks on the CPU ranks' device, whose matmuls are slow
// next to any chunk's latency, and into 4 on an H200, where a smaller GEMM
// loses efficiency; w1 and w3 are computed chunk by chunk and SwiGLU and w2
// read their chunks (the reduce-scatter takes the all-gather's cut, whose
// chunks it need not cut again).
// COST-LABEL: func.func @train_step
// COST-COUNT-8: titan.all_gather {{.*}} {titan.async} : tensor<1x128x4096xbf16> -> tensor<1x1024x4096xbf16>
// COST-COUNT-8: titan.reduce_scatter {{.*}} {titan.async} : tensor<1x1024x4096xbf16> -> tensor<1x128x4096xbf16>
// COST-NOT: titan.slice
// COST: titan.concat
// COST-NOT: titan.concat
// H200-LABEL: func.func @train_step
// H200-COUNT-4: titan.all_gather {{.*}} {titan.async} : tensor<1x256x4096xbf16> -> tensor<1x2048x4096xbf16>
// H200-COUNT-4: titan.reduce_scatter {{.*}} {titan.async} : tensor<1x2048x4096xbf16> -> tensor<1x256x4096xbf16>

#f = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0.feed_forward">[unknown]])
titan.mesh @mesh ["fsdp"=1, "tp"=8]
func.func @train_step(%x: tensor<1x1024x4096xbf16> {titan.name = "x", titan.role = "input"},
                      %w1: tensor<7168x4096xbf16> {titan.name = "w1", titan.role = "param"},
                      %w3: tensor<7168x4096xbf16> {titan.name = "w3", titan.role = "param"},
                      %w2: tensor<4096x7168xbf16> {titan.name = "w2", titan.role = "param"})
    -> (tensor<1x1024x4096xbf16> {titan.name = "y"}) {
  %g = titan.all_gather %x on @mesh ["tp"] dim 1 : tensor<1x1024x4096xbf16> -> tensor<1x8192x4096xbf16> loc(#f)
  %a = titan.matmul %g, %w1 transpose_rhs : tensor<1x8192x4096xbf16>, tensor<7168x4096xbf16> -> tensor<1x8192x7168xbf16> loc(#f)
  %b = titan.matmul %g, %w3 transpose_rhs : tensor<1x8192x4096xbf16>, tensor<7168x4096xbf16> -> tensor<1x8192x7168xbf16> loc(#f)
  %s = titan.silu %a : tensor<1x8192x7168xbf16> loc(#f)
  %h = titan.mul %s, %b : tensor<1x8192x7168xbf16> loc(#f)
  %o = titan.matmul %h, %w2 transpose_rhs : tensor<1x8192x7168xbf16>, tensor<4096x7168xbf16> -> tensor<1x8192x4096xbf16> loc(#f)
  %r = titan.reduce_scatter %o on @mesh ["tp"] dim 1 sum : tensor<1x8192x4096xbf16> -> tensor<1x1024x4096xbf16> loc(#f)
  return %r : tensor<1x1024x4096xbf16>
}
