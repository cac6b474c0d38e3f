// RUN: titan-opt %s --titan-fuse-kernels=merge-siblings=false --split-input-file | FileCheck %s
// (Siblings launched as one kernel: titan-fuse-kernels-siblings.mlir.)

// Host ops (matmul, collectives) stay; everything else goes into
// kernels. An op joins the group of its users when they are all in one
// group (silu into the reduction); a value used by two groups is a kernel
// of its own when it reads two tensors of its shape (%y: recomputing it
// would read both in each user); broadcasts are copied into every kernel
// that reads them; identical groups share one kernel (the two bias adds).
// A reshape read by a host op stays a view of its operand (%r, which the
// matmul reads); one that one group alone reads joins it (%v, in the
// neg's kernel), so that the kernel reads its input in the layout it has.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[H:.*]] = titan.matmul %arg0, %arg1
// CHECK: %[[Y:.*]] = titan.launch @[[ADD2:kernel_add_0]](%[[H]], %arg0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = titan.launch @[[SUM:kernel_reduce_sum]](%[[Y]]) : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK: %[[G:.*]] = titan.all_reduce %[[S]]
// CHECK: %[[Z:.*]] = titan.launch @[[MUL:kernel_mul]](%[[Y]], %arg2)
// CHECK: %[[Z2:.*]] = titan.launch @[[ADD:kernel_add]](%[[H]], %arg2)
// CHECK: %[[R:.*]] = titan.reshape %[[Z2]] : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK: %[[M:.*]] = titan.matmul %[[R]], %arg0
// CHECK: %[[U:.*]] = titan.launch @[[NEG:kernel_neg]](%[[M]]) : (tensor<8x8xf32>) -> tensor<4x16xf32>
// CHECK: %[[Z3:.*]] = titan.launch @[[ADD]](%arg0, %arg2)
// CHECK: return %[[U]], %[[G]], %[[Z]], %[[Z3]]
// CHECK-NOT: titan.add
// CHECK: func.func private @[[ADD]](%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8xf32>) -> tensor<4x8xf32> attributes {titan.kernel}
// CHECK: func.func private @[[NEG]](%{{.*}}: tensor<8x8xf32>) -> tensor<4x16xf32> attributes {titan.kernel}
// CHECK-NEXT: titan.reshape %{{.*}} : tensor<8x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: titan.neg
// CHECK-NEXT: return
// CHECK: func.func private @[[MUL]](%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8xf32>) -> tensor<4x8xf32> attributes {titan.kernel}
// CHECK-LABEL: func.func private @kernel_reduce_sum
// CHECK-NEXT: titan.silu
// CHECK-NEXT: titan.reduce_sum
// CHECK-NEXT: return
// CHECK: func.func private @[[ADD2]](%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {titan.kernel}
titan.mesh @mesh ["tp"=2]
func.func @train_step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> (tensor<4x16xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %h = titan.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %bb = titan.broadcast_in_dim %b dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  %y = titan.add %h, %x : tensor<4x8xf32>
  %a = titan.silu %y : tensor<4x8xf32>
  %s = titan.reduce_sum %a dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  %g = titan.all_reduce %s on @mesh ["tp"] sum : tensor<4xf32>
  %z = titan.mul %y, %bb : tensor<4x8xf32>
  %z2 = titan.add %h, %bb : tensor<4x8xf32>
  %r = titan.reshape %z2 : tensor<4x8xf32> -> tensor<8x4xf32>
  %m = titan.matmul %r, %x : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %v = titan.reshape %m : tensor<8x8xf32> -> tensor<4x16xf32>
  %u = titan.neg %v : tensor<4x16xf32>
  %z3 = titan.add %x, %bb : tensor<4x8xf32>
  return %u, %g, %z, %z3 : tensor<4x16xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An elementwise op that reads one tensor of its shape and is used by
// several kernels only is recomputed in each: each reads %g instead of %s,
// and %s's own kernel is saved (a gradient scaled by the clipping
// coefficient, which both AdamW moments read). A scalar (%c) is
// materialized once, not recomputed for every element. A narrowing cast
// read by two kernels is recomputed (2 * (4 - 2) <= 4 + 2 bytes), by four
// it is materialized (4 * (4 - 2) > 4 + 2): its users would read more f32
// than the cast's own pass saves.

// CHECK-LABEL: func.func @recompute
// CHECK: %[[C:.*]] = titan.launch @{{kernel_sqrt.*}}(%arg1) : (tensor<f32>) -> tensor<f32>
// CHECK: titan.launch @[[MOMENT:kernel_add.*]](%arg2, %arg0, %[[C]])
// CHECK: titan.launch @[[SECOND:kernel_add.*]](%arg3, %arg0, %[[C]])
// CHECK: %[[B:.*]] = titan.launch @kernel_cast(%arg0) : (tensor<64xf32>) -> tensor<64xbf16>
// CHECK-COUNT-4: titan.launch @{{.*}}(%[[B]]) : (tensor<64xbf16>) -> tensor<64xbf16>
// CHECK: titan.launch @[[NEGCAST:kernel_neg.*]](%arg0) : (tensor<64xf32>) -> tensor<64xbf16>
// CHECK: titan.launch @[[EXPCAST:kernel_exp.*]](%arg0) : (tensor<64xf32>) -> tensor<64xbf16>
// CHECK: func.func private @[[EXPCAST]](
// CHECK-NEXT: titan.cast
// CHECK-NEXT: titan.exp
// CHECK: func.func private @[[NEGCAST]](
// CHECK-NEXT: titan.cast
// CHECK-NEXT: titan.neg
// CHECK: func.func private @[[SECOND]](
// CHECK-NEXT: titan.scale %{{.*}} by 0.98
// CHECK-NEXT: titan.broadcast_in_dim
// CHECK-NEXT: %[[S:.*]] = titan.mul
// CHECK-NEXT: titan.mul %[[S]], %[[S]]
// CHECK-NEXT: titan.add
// CHECK: func.func private @[[MOMENT]](
// CHECK-NEXT: titan.scale %{{.*}} by 9.0
// CHECK-NEXT: titan.broadcast_in_dim
// CHECK-NEXT: titan.mul
// CHECK-NEXT: titan.scale %{{.*}} by 1.0
// CHECK-NEXT: titan.add
func.func @recompute(%g: tensor<64xf32>, %norm: tensor<f32>, %m: tensor<64xf32>, %v: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>) {
  %c = titan.sqrt %norm : tensor<f32>
  %cb = titan.broadcast_in_dim %c dims [] : tensor<f32> -> tensor<64xf32>
  %s = titan.mul %g, %cb : tensor<64xf32>
  %m0 = titan.scale %m by 0.9 : tensor<64xf32>
  %m1 = titan.scale %s by 0.1 : tensor<64xf32>
  %m2 = titan.add %m0, %m1 : tensor<64xf32>
  %v0 = titan.scale %v by 0.99 : tensor<64xf32>
  %v1 = titan.mul %s, %s : tensor<64xf32>
  %v2 = titan.add %v0, %v1 : tensor<64xf32>
  %b = titan.cast %g : tensor<64xf32> to tensor<64xbf16>
  %b1 = titan.neg %b : tensor<64xbf16>
  %b2 = titan.exp %b : tensor<64xbf16>
  %b3 = titan.sqrt %b : tensor<64xbf16>
  %b4 = titan.tanh %b : tensor<64xbf16>
  %n = titan.cast %g : tensor<64xf32> to tensor<64xbf16>
  %n1 = titan.neg %n : tensor<64xbf16>
  %n2 = titan.exp %n : tensor<64xbf16>
  return %m2, %v2, %b1, %b2, %b3, %b4, %n1, %n2 : tensor<64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<64xbf16>
}

// -----

// An op that one group uses and the function returns joins the group: the
// kernel returns it after the root (AdamW's moments, which the parameter's
// update reads, in the update's kernel: one pass over the parameter, its
// gradient and moments). Used by a host op too, it stays a kernel of its
// own (%h2).

// CHECK-LABEL: func.func @returned
// CHECK: %[[U:.*]]:3 = titan.launch @[[UPDATE:kernel_sub]](%arg1, %arg0, %arg2, %arg3) : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK: %[[H:.*]] = titan.launch @{{.*}}(%arg0)
// CHECK: titan.matmul
// CHECK: return %[[U]]#0, %[[U]]#1, %[[U]]#2, %[[H]]
// CHECK: func.func private @[[UPDATE]]({{.*}}) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) attributes {titan.kernel}
// CHECK: %[[M:.*]] = titan.add
// CHECK: %[[V:.*]] = titan.add
// CHECK: %[[P:.*]] = titan.sub
// CHECK-NEXT: return %[[P]], %[[M]], %[[V]]
func.func @returned(%g: tensor<64xf32>, %m: tensor<64xf32>, %v: tensor<64xf32>, %p: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %m0 = titan.scale %m by 0.9 : tensor<64xf32>
  %g1 = titan.scale %g by 0.1 : tensor<64xf32>
  %m1 = titan.add %m0, %g1 : tensor<64xf32>
  %v0 = titan.scale %v by 0.99 : tensor<64xf32>
  %g2 = titan.mul %g, %g : tensor<64xf32>
  %v1 = titan.add %v0, %g2 : tensor<64xf32>
  %d = titan.div %m1, %v1 : tensor<64xf32>
  %p1 = titan.sub %p, %d : tensor<64xf32>
  %h = titan.exp %g : tensor<64xf32>
  %h2 = titan.reshape %h : tensor<64xf32> -> tensor<8x8xf32>
  %mm = titan.matmul %h2, %h2 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %p1, %m1, %v1, %h : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// A splat constant is copied into the kernels that read it, and
// materialized by a kernel of its own for a host op; a dense constant is
// never copied.

// CHECK-LABEL: func.func @constants
// CHECK: %[[C:.*]] = titan.launch @[[SPLAT:.*]]() : () -> tensor<4x8xf32>
// CHECK: %[[M:.*]] = titan.matmul %[[C]], %arg1
// CHECK: %[[E:.*]] = titan.launch @[[ADD:.*]](%[[M]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[D:.*]] = titan.launch @[[DENSE:.*]]() : () -> tensor<2xf32>
// CHECK: return %[[E]], %[[D]]
// CHECK: func.func private @[[DENSE]]() -> tensor<2xf32> attributes {titan.kernel}
// CHECK: func.func private @[[ADD]](%{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {titan.kernel}
// CHECK-NEXT: titan.constant dense<2.000000e+00> : tensor<4x8xf32>
// CHECK-NEXT: titan.add
// CHECK: func.func private @[[SPLAT]]() -> tensor<4x8xf32> attributes {titan.kernel}
func.func @constants(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<2xf32>) {
  %two = titan.constant dense<2.0> : tensor<4x8xf32>
  %m = titan.matmul %two, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %e = titan.add %m, %two : tensor<4x8xf32>
  %d = titan.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %e, %d : tensor<4x8xf32>, tensor<2xf32>
}

// -----

// A slice both materialized (read by a collective) and copied into the
// add's kernel (through the pad): the sub it reads has users in two groups,
// so it is materialized by a kernel of its own, which both read. (The sub
// once joined only the slice's group, and the add's kernel read a value
// that no longer existed.)
// CHECK-LABEL: func.func @copied_and_materialized
// CHECK: %[[SUB:.*]] = titan.launch @kernel_sub(%arg0, %arg1)
// CHECK: %[[SLICE:.*]] = titan.launch @kernel_slice(%[[SUB]])
// CHECK: titan.all_to_all %[[SLICE]]
// CHECK: titan.launch @kernel_add(%[[SUB]], %{{.*}})
titan.mesh @mesh ["fsdp"=2]
func.func @copied_and_materialized(%g: tensor<2x32x16xf32>, %h: tensor<2x32x16xf32>) -> tensor<2x32x16xf32> {
  %prod = titan.mul %g, %h : tensor<2x32x16xf32>
  %diff = titan.sub %g, %prod : tensor<2x32x16xf32>
  %tail = titan.slice %diff [0, 1, 0] to [2, 32, 16] step [1, 1, 1] : tensor<2x32x16xf32> -> tensor<2x31x16xf32>
  %moved = titan.all_to_all %tail on @mesh ["fsdp"] split 2 concat 0 : tensor<2x31x16xf32> -> tensor<4x31x8xf32>
  %placed = titan.pad %tail [0, 0, 0] step [1, 1, 1] : tensor<2x31x16xf32> -> tensor<2x32x16xf32>
  %padded = titan.pad %moved [0, 1, 0] step [1, 1, 1] : tensor<4x31x8xf32> -> tensor<4x32x8xf32>
  %back = titan.all_to_all %padded on @mesh ["fsdp"] split 0 concat 2 : tensor<4x32x8xf32> -> tensor<2x32x16xf32>
  %sum = titan.add %placed, %back : tensor<2x32x16xf32>
  return %sum : tensor<2x32x16xf32>
}

// -----

// An embedding of a cast table (a parameter cast to bf16 under mixed
// precision) that reads at most half of its rows gathers them from the
// f32 table and casts them: its kernel does not cast the whole table. The
// cast stays for its other reader (a tied output projection). A lookup of
// more than half the rows (%wide) reads the cast table as it is.
// CHECK-LABEL: func.func @gathered_rows
// CHECK: %[[CAST:.*]] = titan.launch @kernel_cast_0(%arg0) : (tensor<64x8xf32>) -> tensor<64x8xbf16>
// CHECK: %[[ROWS:.*]] = titan.launch @kernel_cast(%arg0, %arg1) : (tensor<64x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xbf16>
// CHECK: titan.matmul %[[ROWS]], %[[CAST]] transpose_rhs
// CHECK: titan.launch @kernel_embedding(%arg3, %arg2) : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xbf16>
// CHECK: func.func private @kernel_embedding
// CHECK-NEXT: titan.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: titan.embedding %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<3xi64> -> tensor<3x8xbf16>
// CHECK: func.func private @kernel_cast(%{{.*}}: tensor<64x8xf32>, %{{.*}}: tensor<2x4xi64>) -> tensor<2x4x8xbf16>
// CHECK-NEXT: titan.embedding %{{.*}}, %{{.*}} : tensor<64x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
// CHECK-NEXT: titan.cast %{{.*}} : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
func.func @gathered_rows(%table: tensor<64x8xf32>, %ids: tensor<2x4xi64>, %few: tensor<3xi64>, %small: tensor<4x8xf32>) -> (tensor<2x4x64xbf16>, tensor<3x8xbf16>) {
  %t = titan.cast %table : tensor<64x8xf32> to tensor<64x8xbf16>
  %h = titan.embedding %t, %ids : tensor<64x8xbf16>, tensor<2x4xi64> -> tensor<2x4x8xbf16>
  %logits = titan.matmul %h, %t transpose_rhs : tensor<2x4x8xbf16>, tensor<64x8xbf16> -> tensor<2x4x64xbf16>
  %s = titan.cast %small : tensor<4x8xf32> to tensor<4x8xbf16>
  %wide = titan.embedding %s, %few : tensor<4x8xbf16>, tensor<3xi64> -> tensor<3x8xbf16>
  return %logits, %wide : tensor<2x4x64xbf16>, tensor<3x8xbf16>
}

// -----

// An elementwise consumer of a root with other results read elsewhere
// joins the root's kernel as an epilogue when its other inputs are
// computed before the root: LayerNorm's input gradient is added to the
// residual cotangent exp(%res) in the norm's kernel, which returns the sum
// (read by an all-reduce and the next norm's kernel) and the weight
// gradient (an all-reduce reads it) but neither the input gradient (the
// add alone reads it) nor the unused bias gradient. The
// second norm's input gradient is added to %late, an all-reduce issued
// after that norm: the add stays a kernel of its own.
// CHECK-LABEL: func.func @epilogue
// CHECK: %[[N:.*]]:2 = titan.launch @[[NORM:kernel_layer_norm_grad_0]](%arg3, %arg0, %arg1, %arg2) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>)
// CHECK: titan.all_reduce %[[N]]#0
// CHECK: titan.all_reduce %[[N]]#1
// CHECK: %[[M:.*]]:3 = titan.launch @kernel_layer_norm_grad(%arg0, %arg1, %[[N]]#1) : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: %[[LATE:.*]] = titan.all_reduce %arg3
// CHECK: titan.launch @kernel_add(%[[M]]#0, %[[LATE]])
// CHECK: func.func private @[[NORM]]
// CHECK-NEXT: %[[E:.*]] = titan.exp
// CHECK-NEXT: %[[DX:.*]], %[[DW:.*]], %{{.*}} = titan.layer_norm_grad
// CHECK-NEXT: %[[SUM:.*]] = titan.add %[[DX]], %[[E]]
// CHECK-NEXT: return %[[DW]], %[[SUM]]
titan.mesh @mesh ["dp"=2]
func.func @epilogue(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>, %res: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>) {
  %r = titan.exp %res : tensor<4x8xf32>
  %dx, %dw, %db = titan.layer_norm_grad %x, %w, %dy eps 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>
  %gw = titan.all_reduce %dw on @mesh ["dp"] sum : tensor<8xf32>
  %sum = titan.add %dx, %r : tensor<4x8xf32>
  %gs = titan.all_reduce %sum on @mesh ["dp"] sum : tensor<4x8xf32>
  %dx2, %dw2, %db2 = titan.layer_norm_grad %x, %w, %sum eps 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>
  %gw2 = titan.all_reduce %dw2 on @mesh ["dp"] sum : tensor<8xf32>
  %late = titan.all_reduce %res on @mesh ["dp"] sum : tensor<4x8xf32>
  %sum2 = titan.add %dx2, %late : tensor<4x8xf32>
  return %sum2, %gw, %gw2, %gs : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>
}
