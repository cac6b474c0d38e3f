// RUN: titan-opt %s --titan-lower-kernels | FileCheck %s

// Kernels become loop nests on memrefs in destination-passing style: inputs,
// then one buffer per result, then the buffers the kernel needs inside (the
// rms_norm's row sums) as scratch parameters; nothing is allocated. The host
// function keeps its tensors. Elementwise producers fuse into one loop nest
// (exp then scale). titan.in_place pairs an input with the output parameter
// that may share its buffer: every element of the output reads only the same
// element of the input, and nothing reads the input afterwards (the norm's
// reduction reads it before).

// CHECK-LABEL: func.func @train_step
// CHECK: titan.launch @kernel_scale(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>

// A kernel that returns values its root reads too (an AdamW update and its
// moments) is one loop nest writing every result (linalg's fusion keeps the
// producers' results for the return): each input is read once, and any of
// them may be any result's buffer.
// CHECK-LABEL: func.func private @kernel_adam
// CHECK-SAME: (%[[G:.*]]: memref<4x8xf32>, %[[M:.*]]: memref<4x8xf32>, %[[P:.*]]: memref<4x8xf32>, %[[P1:.*]]: memref<4x8xf32>, %[[M1:.*]]: memref<4x8xf32>)
// CHECK-SAME: titan.in_place = array<i64: 0, 3, 1, 3, 2, 3, 0, 4, 1, 4, 2, 4>
// CHECK: linalg.generic {{.*}} ins(%[[P]], %[[M]], %[[G]] : {{.*}}) outs(%[[M1]], %[[P1]] : {{.*}})
// CHECK-NOT: linalg.generic
// CHECK: return

// Every input read at the element written may be the output's buffer: both
// of AdamW's moment update (beta * m + (1 - beta) * g), in input order.
// CHECK-LABEL: func.func private @kernel_moment
// CHECK-SAME: titan.in_place = array<i64: 0, 2, 1, 2>

// CHECK-LABEL: func.func private @kernel_scale
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK-SAME: titan.in_place = array<i64: 0, 1>
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} ins(%[[X]] : memref<4x8xf32>) outs(%[[OUT]] : memref<4x8xf32>)
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return

// CHECK-LABEL: func.func private @kernel_norm
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[W:.*]]: memref<8xf32>, %[[OUT:.*]]: memref<4x8xf32>, %[[SUMS:.*]]: memref<4xf64>)
// CHECK-SAME: titan.in_place = array<i64: 0, 2>
// CHECK-NOT: memref.alloc
// CHECK: linalg.fill {{.*}} outs(%[[SUMS]] : memref<4xf64>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[X]] : memref<4x8xf32>) outs(%[[SUMS]] : memref<4xf64>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[W]], %[[SUMS]] : {{.*}}) outs(%[[OUT]] : memref<4x8xf32>)
// CHECK: math.rsqrt

// Bufferization keeps the selected slices (%t) in the output buffer while
// the kernel runs: the output has another writer, so no input may share it,
// although %x is read elementwise by the last loop nest.
// CHECK-LABEL: func.func private @kernel_scratch_output
// CHECK-SAME: titan.in_place = array<i64>
// CHECK: outs(%arg3 : memref<4x4xf32>)
// CHECK: ins(%arg3, %arg2

// A result that reads its input through a transpose cannot overwrite it.
// CHECK-LABEL: func.func private @kernel_transpose
// CHECK-SAME: titan.in_place = array<i64>

// A widening cast that several consumers read is computed again inside each
// of them instead of filling an f32 buffer: the bf16 loss reads its logits
// for the row maxima, the sums of exponentials and the target's logit, and
// needs no f32 copy of them (the only scratch is the per-row statistics).
// CHECK-LABEL: func.func private @kernel_loss
// CHECK-SAME: (%[[LOGITS:.*]]: memref<2x4x16xbf16>, %[[LABELS:.*]]: memref<2x4xi64>, %[[LOSS:.*]]: memref<f32>, %{{.*}}: memref<2x4xf32>, %{{.*}}: memref<2x4xf64>, %{{.*}}: memref<i64>, %{{.*}}: memref<f64>)
// CHECK-NOT: memref<2x4x16xf32>
// CHECK: return

// A reduction over dims of extent 1 only (a batch of one) is one
// elementwise copy (+0 for a sum: torch's sum of -0 is +0), with no f64
// accumulator as large as its input.
// CHECK-LABEL: func.func private @kernel_unit_sum
// CHECK-SAME: (%[[X:.*]]: memref<1x4x8xbf16>, %[[OUT:.*]]: memref<4x8xbf16>)
// CHECK-NOT: f64
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[X]] : memref<1x4x8xbf16>) outs(%[[OUT]] : memref<4x8xbf16>)
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return
// A kernel that returns a slice of a loop nest's result computes only the
// slice (linalg's bubble-up of extract_slice): one third of a biased fused
// projection adds the bias to that third, read through subviews, with no
// scratch buffer for the whole sum.
// CHECK-LABEL: func.func private @kernel_bias_slice
// CHECK-SAME: (%[[X:.*]]: memref<2x4x24xf32>, %[[B:.*]]: memref<24xf32>, %[[OUT:.*]]: memref<2x4x8xf32>)
// CHECK-NEXT: %[[XS:.*]] = memref.subview %[[X]][0, 0, 8] [2, 4, 8] [1, 1, 1]
// CHECK-NEXT: %[[BS:.*]] = memref.subview %[[B]][8] [8] [1]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[XS]], %[[BS]] : {{.*}}) outs(%[[OUT]] : memref<2x4x8xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return

// A reshape fused into its consumer's kernel (titan-fuse-kernels) folds
// into the loop nest: the last third of the biased projection, viewed as
// [b, t, heads, head_dim] and transposed to [b, heads, t, head_dim], is
// one pass.
// CHECK-LABEL: func.func private @kernel_head_split
// CHECK-SAME: (%[[X:.*]]: memref<2x4x24xf32>, %[[B:.*]]: memref<24xf32>, %[[OUT:.*]]: memref<2x2x4x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[XS:.*]] = memref.subview %[[X]][0, 0, 16] [2, 4, 8] [1, 1, 1]
// CHECK: %[[XE:.*]] = memref.expand_shape %[[XS]] {{\[}}[0], [1], [2, 3]]
// CHECK: linalg.generic {{.*}} ins(%[[XE]], %{{.*}} : {{.*}}) outs(%[[OUT]] : memref<2x2x4x4xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return

// The inverse, in the backward: the heads' cotangents transposed back and
// collapsed to [b, t, dim] are written straight into their slots of the
// concatenation (expanded views of subviews of the result), with no
// scratch buffer and no copy.
// CHECK-LABEL: func.func private @kernel_merge_heads
// CHECK-SAME: (%[[Q:.*]]: memref<2x2x4x4xf32>, %[[K:.*]]: memref<2x2x4x4xf32>, %[[V:.*]]: memref<2x2x4x4xf32>, %[[OUT:.*]]: memref<2x4x24xf32>)
// CHECK-NOT: memref.copy
// CHECK: %[[S0:.*]] = memref.subview %[[OUT]][0, 0, 0] [2, 4, 8] [1, 1, 1]
// CHECK-NEXT: %[[E0:.*]] = memref.expand_shape %[[S0]]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[Q]] : memref<2x2x4x4xf32>) outs(%[[E0]] :
// CHECK-NOT: memref.copy
// CHECK: %[[S1:.*]] = memref.subview %[[OUT]][0, 0, 8] [2, 4, 8] [1, 1, 1]
// CHECK-NEXT: %[[E1:.*]] = memref.expand_shape %[[S1]]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[K]] : memref<2x2x4x4xf32>) outs(%[[E1]] :
// CHECK-NOT: memref.copy
// CHECK: %[[S2:.*]] = memref.subview %[[OUT]][0, 0, 16] [2, 4, 8] [1, 1, 1]
// CHECK-NEXT: %[[E2:.*]] = memref.expand_shape %[[S2]]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[V]] : memref<2x2x4x4xf32>) outs(%[[E2]] :
// CHECK-NOT: memref.copy
// CHECK: return

// A returned collapse is written through an expanded view of the result.
// CHECK-LABEL: func.func private @kernel_flat
// CHECK-SAME: (%[[X:.*]]: memref<2x4x24xf32>, %[[OUT:.*]]: memref<64xf32>)
// CHECK: %[[E:.*]] = memref.expand_shape %[[OUT]] {{\[}}[0, 1, 2]] output_shape [2, 4, 8]
// CHECK: linalg.generic {{.*}} outs(%[[E]] : memref<2x4x8xf32>)
// CHECK-NOT: memref.copy
// CHECK: return

// A reshape that no shape refines ([6, 4] -> [4, 6]) goes through one dim.
// CHECK-LABEL: func.func private @kernel_odd
// CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1]] : memref<6x4xf32> into memref<24xf32>
// CHECK: memref.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [4, 6] : memref<24xf32> into memref<4x6xf32>
func.func @train_step(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) {
  %a = titan.launch @kernel_scale(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = titan.launch @kernel_norm(%a, %w) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = titan.constant dense<1.0> : tensor<8x8xf32>
  %t = titan.launch @kernel_transpose(%s) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %m = titan.launch @kernel_moment(%a, %n) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %p:2 = titan.launch @kernel_adam(%a, %m, %n) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return %p#0, %p#1, %t : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}
func.func private @kernel_adam(%g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %p: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {titan.kernel} {
  %0 = titan.scale %m by 0.9 : tensor<4x8xf32>
  %1 = titan.mul %g, %g : tensor<4x8xf32>
  %2 = titan.add %0, %1 : tensor<4x8xf32>
  %3 = titan.mul %2, %2 : tensor<4x8xf32>
  %4 = titan.sub %p, %3 : tensor<4x8xf32>
  return %4, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func private @kernel_moment(%g: tensor<4x8xf32>, %m: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {titan.kernel} {
  %0 = titan.scale %m by 0.9 : tensor<4x8xf32>
  %1 = titan.scale %g by 0.1 : tensor<4x8xf32>
  %2 = titan.add %0, %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
func.func private @kernel_scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {titan.kernel} {
  %0 = titan.exp %x : tensor<4x8xf32>
  %1 = titan.scale %0 by 2.0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
func.func private @kernel_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> attributes {titan.kernel} {
  %0 = titan.rms_norm %x, %w eps 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}
func.func private @kernel_scratch_output(%c: tensor<i1>, %a: tensor<8x4xf32>, %x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {titan.kernel} {
  %s1 = titan.slice %a [0, 0] to [4, 4] step [1, 1] : tensor<8x4xf32> -> tensor<4x4xf32>
  %s2 = titan.slice %a [4, 0] to [8, 4] step [1, 1] : tensor<8x4xf32> -> tensor<4x4xf32>
  %cb = titan.broadcast_in_dim %c dims [] : tensor<i1> -> tensor<4x4xi1>
  %t = titan.select %cb, %s1, %s2 : tensor<4x4xi1>, tensor<4x4xf32>
  %r = titan.mul %t, %x : tensor<4x4xf32>
  %sum = titan.reduce_sum %r dims [1] keepdim : tensor<4x4xf32> -> tensor<4x1xf32>
  %b = titan.broadcast_in_dim %sum dims [0, 1] : tensor<4x1xf32> -> tensor<4x4xf32>
  %y = titan.sub %x, %b : tensor<4x4xf32>
  %z = titan.mul %t, %y : tensor<4x4xf32>
  return %z : tensor<4x4xf32>
}
func.func private @kernel_transpose(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {titan.kernel} {
  %0 = titan.transpose %x [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %1 = titan.neg %0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
func.func private @kernel_loss(%logits: tensor<2x4x16xbf16>, %labels: tensor<2x4xi64>) -> tensor<f32> attributes {titan.kernel} {
  %0 = titan.cross_entropy %logits, %labels : tensor<2x4x16xbf16>, tensor<2x4xi64> -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @kernel_unit_sum(%x: tensor<1x4x8xbf16>) -> tensor<4x8xbf16> attributes {titan.kernel} {
  %0 = titan.reduce_sum %x dims [0] : tensor<1x4x8xbf16> -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}
func.func @heads(%x: tensor<2x4x24xf32>, %b: tensor<24xf32>, %q: tensor<2x2x4x4xf32>, %k: tensor<2x2x4x4xf32>, %v: tensor<2x2x4x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4x4xf32>, tensor<2x4x24xf32>) {
  %s = titan.launch @kernel_bias_slice(%x, %b) : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x4x8xf32>
  %h = titan.launch @kernel_head_split(%x, %b) : (tensor<2x4x24xf32>, tensor<24xf32>) -> tensor<2x2x4x4xf32>
  %c = titan.launch @kernel_merge_heads(%q, %k, %v) : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x4x24xf32>
  return %s, %h, %c : tensor<2x4x8xf32>, tensor<2x2x4x4xf32>, tensor<2x4x24xf32>
}
func.func private @kernel_bias_slice(%x: tensor<2x4x24xf32>, %b: tensor<24xf32>) -> tensor<2x4x8xf32> attributes {titan.kernel} {
  %bb = titan.broadcast_in_dim %b dims [2] : tensor<24xf32> -> tensor<2x4x24xf32>
  %y = titan.add %x, %bb : tensor<2x4x24xf32>
  %s = titan.slice %y [0, 0, 8] to [2, 4, 16] step [1, 1, 1] : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}
func.func private @kernel_head_split(%x: tensor<2x4x24xf32>, %b: tensor<24xf32>) -> tensor<2x2x4x4xf32> attributes {titan.kernel} {
  %bb = titan.broadcast_in_dim %b dims [2] : tensor<24xf32> -> tensor<2x4x24xf32>
  %y = titan.add %x, %bb : tensor<2x4x24xf32>
  %s = titan.slice %y [0, 0, 16] to [2, 4, 24] step [1, 1, 1] : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %r = titan.reshape %s : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %t = titan.transpose %r [0, 2, 1, 3] : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  return %t : tensor<2x2x4x4xf32>
}
func.func private @kernel_merge_heads(%q: tensor<2x2x4x4xf32>, %k: tensor<2x2x4x4xf32>, %v: tensor<2x2x4x4xf32>) -> tensor<2x4x24xf32> attributes {titan.kernel} {
  %tq = titan.transpose %q [0, 2, 1, 3] : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %rq = titan.reshape %tq : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %tk = titan.transpose %k [0, 2, 1, 3] : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %rk = titan.reshape %tk : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %tv = titan.transpose %v [0, 2, 1, 3] : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
  %rv = titan.reshape %tv : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %c = titan.concat %rq, %rk, %rv dim 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
  return %c : tensor<2x4x24xf32>
}
func.func @reshapes(%x: tensor<2x4x24xf32>, %y: tensor<6x4xf32>) -> (tensor<64xf32>, tensor<6x4xf32>) {
  %a = titan.launch @kernel_flat(%x) : (tensor<2x4x24xf32>) -> tensor<64xf32>
  %b = titan.launch @kernel_odd(%y) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return %a, %b : tensor<64xf32>, tensor<6x4xf32>
}
func.func private @kernel_flat(%x: tensor<2x4x24xf32>) -> tensor<64xf32> attributes {titan.kernel} {
  %s = titan.slice %x [0, 0, 8] to [2, 4, 16] step [1, 1, 1] : tensor<2x4x24xf32> -> tensor<2x4x8xf32>
  %r = titan.reshape %s : tensor<2x4x8xf32> -> tensor<64xf32>
  %n = titan.neg %r : tensor<64xf32>
  return %n : tensor<64xf32>
}
func.func private @kernel_odd(%y: tensor<6x4xf32>) -> tensor<6x4xf32> attributes {titan.kernel} {
  %e = titan.exp %y : tensor<6x4xf32>
  %r = titan.reshape %e : tensor<6x4xf32> -> tensor<4x6xf32>
  %t = titan.transpose %r [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
  return %t : tensor<6x4xf32>
}
