// RUN: titan-opt %s --titan-spmdize --titan-redistribute-to-collectives --split-input-file | FileCheck %s

titan.mesh @mesh ["dp"=2, "tp"=4]

// Local types of arguments, op results and results; shape attributes are
// localized: splat constants, iotas along unsharded dims, reshapes,
// broadcasts, slices of unsharded dims (a sharded dim is sliced whole).
// CHECK-LABEL: func.func @local_shapes
// CHECK-SAME: %[[X:.*]]: tensor<4x?x2xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(0), S(2)]>}
// CHECK-SAME: %[[N:.*]]: tensor<2x8xf32> {titan.placements = #titan.placements<@mesh, [S(0), S(0)]>}
// CHECK-SAME: %[[B:.*]]: tensor<2xf32> {titan.placements = #titan.placements<@mesh, [R, S(0)]>}
// CHECK-SAME: -> (tensor<4x?x2xf32> {titan.name = "y", titan.placements = #titan.placements<@mesh, [S(0), S(2)]>}, tensor<4x2x2xf32> {titan.placements = #titan.placements<@mesh, [S(0), S(2)]>}, tensor<2x4xf32> {titan.placements = #titan.placements<@mesh, [S(0), S(0)]>}, tensor<4x2xf32> {titan.placements = #titan.placements<@mesh, [S(0), S(1)]>})
func.func @local_shapes(
    %x: tensor<8x?x8xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(0), S(2)]>},
    %n: tensor<16x8xf32> {titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
    %b: tensor<8xf32> {titan.placements = #titan.placements<@mesh, [R, S(0)]>})
    -> (tensor<8x?x8xf32> {titan.name = "y", titan.placements = #titan.placements<@mesh, [S(0), S(2)]>},
        tensor<8x2x8xf32> {titan.placements = #titan.placements<@mesh, [S(0), S(2)]>},
        tensor<16x4xf32> {titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
        tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [S(0), S(1)]>}) {
  // CHECK: %[[C:.*]] = titan.constant dense<2.000000e+00> : tensor<4x2xf32>
  %c = titan.constant {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} dense<2.0> : tensor<8x8xf32>
  // CHECK: titan.iota dim 0 : tensor<8x2xf32>
  %i = titan.iota dim 0 {titan.placements = [#titan.placements<@mesh, [R, S(1)]>]} : tensor<8x8xf32>
  // CHECK: titan.add %[[C]], %{{.*}} : tensor<4x2xf32>
  %ci = titan.redistribute %i to <@mesh, [S(0), S(1)]> : tensor<8x8xf32>
  %sum = titan.add %c, %ci {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<8x8xf32>
  // CHECK: %[[Y:.*]] = titan.scale %[[X]] by 2.000000e+00 : tensor<4x?x2xf32>
  %y = titan.scale %x by 2.0 {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<8x?x8xf32>
  // CHECK: %[[BB:.*]] = titan.broadcast_in_dim %[[B]] dims [2] : tensor<2xf32> -> tensor<4x2x2xf32>
  %bb = titan.broadcast_in_dim %b dims [2] {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<8xf32> -> tensor<8x2x8xf32>
  // CHECK: %[[S:.*]] = titan.slice %[[N]] [0, 2] to [2, 6] step [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
  %s = titan.slice %n [0, 2] to [16, 6] step [1, 1] {titan.placements = [#titan.placements<@mesh, [S(0), S(0)]>]} : tensor<16x8xf32> -> tensor<16x4xf32>
  // CHECK: return %[[Y]], %[[BB]], %[[S]], %{{.*}} : tensor<4x?x2xf32>, tensor<4x2x2xf32>, tensor<2x4xf32>, tensor<4x2xf32>
  return %y, %bb, %s, %sum : tensor<8x?x8xf32>, tensor<8x2x8xf32>, tensor<16x4xf32>, tensor<8x8xf32>
}

// -----

titan.mesh @mesh ["dp"=2, "tp"=4]

// Every single-axis redistribution kind, and a transition over two axes in
// the planner's order.
// CHECK-LABEL: func.func @redistribute_kinds
// CHECK-SAME: %[[S0:[^:]*]]: tensor<4x8xf32>
// CHECK-SAME: %[[P:[^:]*]]: tensor<8x8xf32>
// CHECK-SAME: %[[R:[^:]*]]: tensor<8x8xf32>
// CHECK-SAME: %[[SP:[^:]*]]: tensor<4x8xf32>
func.func @redistribute_kinds(
    %s0: tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %p: tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [R, P(sum)]>},
    %r: tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [R, R]>},
    %sp: tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [S(0), P(sum)]>}) {
  // S -> R: all_gather.
  // CHECK: titan.all_gather %[[S0]] on @mesh ["dp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %0 = titan.redistribute %s0 to <@mesh, [R, R]> : tensor<8x8xf32>
  // S(0) -> S(1): all_to_all.
  // CHECK: titan.all_to_all %[[S0]] on @mesh ["dp"] split 1 concat 0 : tensor<4x8xf32> -> tensor<8x4xf32>
  %1 = titan.redistribute %s0 to <@mesh, [S(1), R]> : tensor<8x8xf32>
  // P -> R: all_reduce.
  // CHECK: titan.all_reduce %[[P]] on @mesh ["tp"] sum : tensor<8x8xf32>
  %2 = titan.redistribute %p to <@mesh, [R, R]> : tensor<8x8xf32>
  // P -> S: reduce_scatter.
  // CHECK: titan.reduce_scatter %[[P]] on @mesh ["tp"] dim 1 sum : tensor<8x8xf32> -> tensor<8x2xf32>
  %3 = titan.redistribute %p to <@mesh, [R, S(1)]> : tensor<8x8xf32>
  // R -> S: the chunk of the rank's coordinate, chosen by selects.
  // CHECK: %[[IDX:.*]] = titan.axis_index on @mesh ["tp"] : tensor<i64>
  // CHECK: %[[C3:.*]] = titan.slice %[[R]] [6, 0] to [8, 8] step [1, 1] : tensor<8x8xf32> -> tensor<2x8xf32>
  // CHECK: %[[C2:.*]] = titan.slice %[[R]] [4, 0] to [6, 8]
  // CHECK: %[[K2:.*]] = titan.constant dense<2> : tensor<i64>
  // CHECK: %[[E2:.*]] = titan.compare eq, %[[IDX]], %[[K2]] : tensor<i64> -> tensor<i1>
  // CHECK: %[[M2:.*]] = titan.broadcast_in_dim %[[E2]] dims [] : tensor<i1> -> tensor<2x8xi1>
  // CHECK: %[[SEL2:.*]] = titan.select %[[M2]], %[[C2]], %[[C3]]
  // CHECK: titan.slice %[[R]] [2, 0] to [4, 8]
  // CHECK: titan.select
  // CHECK: titan.slice %[[R]] [0, 0] to [2, 8]
  // CHECK: titan.select
  %4 = titan.redistribute %r to <@mesh, [R, S(0)]> : tensor<8x8xf32>
  // R -> P(sum): the value on coordinate 0, zero elsewhere.
  // CHECK: %[[IDX0:.*]] = titan.axis_index on @mesh ["dp"] : tensor<i64>
  // CHECK: %[[E0:.*]] = titan.compare eq, %[[IDX0]]
  // CHECK: %[[M0:.*]] = titan.broadcast_in_dim %[[E0]]
  // CHECK: %[[Z:.*]] = titan.constant dense<0.000000e+00> : tensor<8x8xf32>
  // CHECK: titan.select %[[M0]], %[[R]], %[[Z]] : tensor<8x8xi1>, tensor<8x8xf32>
  %5 = titan.redistribute %r to <@mesh, [P(sum), R]> : tensor<8x8xf32>
  // R -> P(max): every rank keeps the value; nothing to do.
  // CHECK-NOT: titan.axis_index
  %6 = titan.redistribute %r to <@mesh, [P(max), R]> : tensor<8x8xf32>
  // [S(0), P(sum)] -> [R, S(1)]: reduce-scatter over "tp", then all-gather
  // over "dp".
  // CHECK: %[[RS:.*]] = titan.reduce_scatter %[[SP]] on @mesh ["tp"] dim 1 sum : tensor<4x8xf32> -> tensor<4x2xf32>
  // CHECK: titan.all_gather %[[RS]] on @mesh ["dp"] dim 0 : tensor<4x2xf32> -> tensor<8x2xf32>
  %7 = titan.redistribute %sp to <@mesh, [R, S(1)]> : tensor<8x8xf32>
  // CHECK-NOT: titan.redistribute
  return
}

// -----

titan.mesh @tp ["tp"=2]

// Megatron MLP: column-parallel w1 (S(0) of [out, in]), row-parallel w2
// (S(1)); the only collective is the all-reduce of the row-parallel output.
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x16xf32>
// CHECK-SAME: %[[W1:[^:]*]]: tensor<32x16xf32>
// CHECK-SAME: %[[W2:[^:]*]]: tensor<16x32xf32>
// CHECK-SAME: -> (tensor<4x16xf32> {titan.placements = #titan.placements<@tp, [R]>})
// CHECK-NEXT: %[[H:.*]] = titan.matmul %[[X]], %[[W1]] transpose_rhs : tensor<4x16xf32>, tensor<32x16xf32> -> tensor<4x32xf32>
// CHECK-NEXT: %[[A:.*]] = titan.gelu %[[H]] approximate tanh : tensor<4x32xf32>
// CHECK-NEXT: %[[O:.*]] = titan.matmul %[[A]], %[[W2]] transpose_rhs : tensor<4x32xf32>, tensor<16x32xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[Y:.*]] = titan.all_reduce %[[O]] on @tp ["tp"] sum : tensor<4x16xf32>
// CHECK-NEXT: return %[[Y]] : tensor<4x16xf32>
func.func @megatron_mlp(
    %x: tensor<4x16xf32> {titan.placements = #titan.placements<@tp, [R]>},
    %w1: tensor<64x16xf32> {titan.placements = #titan.placements<@tp, [S(0)]>},
    %w2: tensor<16x64xf32> {titan.placements = #titan.placements<@tp, [S(1)]>})
    -> (tensor<4x16xf32> {titan.placements = #titan.placements<@tp, [R]>}) {
  %h = titan.matmul %x, %w1 transpose_rhs {titan.placements = [#titan.placements<@tp, [S(1)]>]} : tensor<4x16xf32>, tensor<64x16xf32> -> tensor<4x64xf32>
  %a = titan.gelu %h approximate tanh {titan.placements = [#titan.placements<@tp, [S(1)]>]} : tensor<4x64xf32>
  %o = titan.matmul %a, %w2 transpose_rhs {titan.placements = [#titan.placements<@tp, [P(sum)]>]} : tensor<4x64xf32>, tensor<16x64xf32> -> tensor<4x16xf32>
  %y = titan.redistribute %o to <@tp, [R]> : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]

// FSDP: the weight is all-gathered before use, its gradient (P(sum) over the
// sharded batch) reduce-scattered back to the weight's shards.
// CHECK-LABEL: func.func @fsdp
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x16xf32>
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x16xf32>
// CHECK-SAME: -> (tensor<2x32xf32> {{.*}}, tensor<8x16xf32> {{.*}})
// CHECK-NEXT: %[[WF:.*]] = titan.all_gather %[[W]] on @mesh ["fsdp"] dim 0 : tensor<8x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT: %[[Y:.*]] = titan.matmul %[[X]], %[[WF]] transpose_rhs : tensor<2x16xf32>, tensor<32x16xf32> -> tensor<2x32xf32>
// CHECK-NEXT: %[[G:.*]] = titan.matmul %[[Y]], %[[X]] transpose_lhs : tensor<2x32xf32>, tensor<2x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT: %[[GS:.*]] = titan.reduce_scatter %[[G]] on @mesh ["fsdp"] dim 0 sum : tensor<32x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[Y]], %[[GS]]
func.func @fsdp(
    %x: tensor<8x16xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
    %w: tensor<32x16xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<8x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
        tensor<32x16xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  %wf = titan.redistribute %w to <@mesh, [R]> : tensor<32x16xf32>
  %y = titan.matmul %x, %wf transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
  %g = titan.matmul %y, %x transpose_lhs {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<8x32xf32>, tensor<8x16xf32> -> tensor<32x16xf32>
  %gs = titan.redistribute %g to <@mesh, [S(0)]> : tensor<32x16xf32>
  return %y, %gs : tensor<8x32xf32>, tensor<32x16xf32>
}

// -----

titan.mesh @tp ["tp"=2]

// Vocab-parallel embedding: ids shifted by the shard's first row, looked up
// when in range, zero elsewhere (P(sum)).
// CHECK-LABEL: func.func @vocab_parallel_embedding
// CHECK-SAME: %[[T:[^:]*]]: tensor<16x4xf32>
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<3xi64>
// CHECK: %[[IDX:.*]] = titan.axis_index on @tp ["tp"] : tensor<i64>
// CHECK: %[[IDXF:.*]] = titan.cast %[[IDX]] : tensor<i64> to tensor<f64>
// CHECK: %[[OFF:.*]] = titan.scale %[[IDXF]] by 1.600000e+01 : tensor<f64>
// CHECK: %[[IDSF:.*]] = titan.cast %[[IDS]] : tensor<3xi64> to tensor<3xf64>
// CHECK: %[[OFFB:.*]] = titan.broadcast_in_dim %[[OFF]] dims [] : tensor<f64> -> tensor<3xf64>
// CHECK: %[[SH:.*]] = titan.sub %[[IDSF]], %[[OFFB]] : tensor<3xf64>
// CHECK: titan.compare ge
// CHECK: titan.compare lt
// CHECK: %[[IN:.*]] = titan.select {{.*}} : tensor<3xi1>, tensor<3xi1>
// CHECK: %[[LOC:.*]] = titan.cast {{.*}} : tensor<3xf64> to tensor<3xi64>
// CHECK: %[[ROWS:.*]] = titan.embedding %[[T]], %[[LOC]] : tensor<16x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
// CHECK: %[[MASK:.*]] = titan.broadcast_in_dim %[[IN]] dims [0] : tensor<3xi1> -> tensor<3x4xi1>
// CHECK: titan.select %[[MASK]], %[[ROWS]], %{{.*}} : tensor<3x4xi1>, tensor<3x4xf32>
func.func @vocab_parallel_embedding(
    %table: tensor<32x4xf32> {titan.placements = #titan.placements<@tp, [S(0)]>},
    %ids: tensor<3xi64> {titan.placements = #titan.placements<@tp, [R]>})
    -> (tensor<3x4xf32> {titan.placements = #titan.placements<@tp, [P(sum)]>}) {
  %h = titan.embedding %table, %ids {titan.placements = [#titan.placements<@tp, [P(sum)]>]} : tensor<32x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %h : tensor<3x4xf32>
}

// -----

// Functions without placements are left alone.
// CHECK-LABEL: func.func @unannotated
// CHECK-NEXT: titan.neg %{{.*}} : tensor<8xf32>
func.func @unannotated(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = titan.neg %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}
