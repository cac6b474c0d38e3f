// RUN: titan-opt %s -canonicalize -split-input-file | FileCheck %s

// The cotangent of q, k and v sliced out of one projection (GPT-2's
// c_attn) is the sum of three pads that tile it: one concat.
// CHECK-LABEL: func.func @qkv_cotangent
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8xf32>, %[[K:.*]]: tensor<2x4x8xf32>, %[[V:.*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[C:.*]] = titan.concat %[[Q]], %[[K]], %[[V]] dim 2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x24xf32>
// CHECK-NEXT: return %[[C]]
func.func @qkv_cotangent(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x24xf32> {
  %pv = titan.pad %v [0, 0, 16] step [1, 1, 1] : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %pk = titan.pad %k [0, 0, 8] step [1, 1, 1] : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %pq = titan.pad %q [0, 0, 0] step [1, 1, 1] : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %0 = titan.add %pv, %pk : tensor<2x4x24xf32>
  %1 = titan.add %0, %pq : tensor<2x4x24xf32>
  return %1 : tensor<2x4x24xf32>
}

// -----

// Pads that meet only through a sum: the first two windows are not side
// by side; the last pad joins the one it touches across the inner add,
// then the first, and the concatenations flatten into one.
// CHECK-LABEL: func.func @through_sum
// CHECK-SAME: (%[[A:.*]]: tensor<4x2xbf16>, %[[B:.*]]: tensor<4x3xbf16>, %[[C:.*]]: tensor<4x1xbf16>)
// CHECK-NEXT: %[[ALL:.*]] = titan.concat %[[A]], %[[B]], %[[C]] dim 1 : (tensor<4x2xbf16>, tensor<4x3xbf16>, tensor<4x1xbf16>) -> tensor<4x6xbf16>
// CHECK-NEXT: return %[[ALL]]
func.func @through_sum(%a: tensor<4x2xbf16>, %b: tensor<4x3xbf16>, %c: tensor<4x1xbf16>) -> tensor<4x6xbf16> {
  %pa = titan.pad %a [0, 0] step [1, 1] : tensor<4x2xbf16> -> tensor<4x6xbf16>
  %pc = titan.pad %c [0, 5] step [1, 1] : tensor<4x1xbf16> -> tensor<4x6xbf16>
  %pb = titan.pad %b [0, 2] step [1, 1] : tensor<4x3xbf16> -> tensor<4x6xbf16>
  %0 = titan.add %pa, %pc : tensor<4x6xbf16>
  %1 = titan.add %0, %pb : tensor<4x6xbf16>
  return %1 : tensor<4x6xbf16>
}

// -----

// Windows side by side that do not fill the result stay a pad (of their
// concat), added to the other term of the sum.
// CHECK-LABEL: func.func @partial
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK-NEXT: %[[C:.*]] = titan.concat %[[A]], %[[B]] dim 0 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT: %[[P:.*]] = titan.pad %[[C]] [1, 0] step [1, 1] : tensor<5x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[S:.*]] = titan.add %[[X]], %[[P]]
// CHECK-NEXT: return %[[S]]
func.func @partial(%x: tensor<8x4xf32>, %a: tensor<2x4xf32>, %b: tensor<3x4xf32>) -> tensor<8x4xf32> {
  %pa = titan.pad %a [1, 0] step [1, 1] : tensor<2x4xf32> -> tensor<8x4xf32>
  %pb = titan.pad %b [3, 0] step [1, 1] : tensor<3x4xf32> -> tensor<8x4xf32>
  %0 = titan.add %x, %pb : tensor<8x4xf32>
  %1 = titan.add %0, %pa : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// -----

// Not merged: a gap between the windows, windows that differ along two
// dims, a strided pad, and a pad the function also returns.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: titan.concat
// CHECK-COUNT-4: titan.add
// CHECK-NOT: titan.concat
// CHECK: return
func.func @kept(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>, %c: tensor<2x2xf32>, %d: tensor<3x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %gap_a = titan.pad %a [0, 0] step [1, 1] : tensor<2x4xf32> -> tensor<8x4xf32>
  %gap_b = titan.pad %b [3, 0] step [1, 1] : tensor<2x4xf32> -> tensor<8x4xf32>
  %gap = titan.add %gap_a, %gap_b : tensor<8x4xf32>
  %two_a = titan.pad %a [0, 0] step [1, 1] : tensor<2x4xf32> -> tensor<8x4xf32>
  %two_c = titan.pad %c [2, 2] step [1, 1] : tensor<2x2xf32> -> tensor<8x4xf32>
  %two = titan.add %two_a, %two_c : tensor<8x4xf32>
  %strided_a = titan.pad %a [0, 0] step [1, 1] : tensor<2x4xf32> -> tensor<8x4xf32>
  %strided_d = titan.pad %d [2, 0] step [2, 1] : tensor<3x4xf32> -> tensor<8x4xf32>
  %strided = titan.add %strided_a, %strided_d : tensor<8x4xf32>
  %used_a = titan.pad %a [0, 0] step [1, 1] : tensor<2x4xf32> -> tensor<8x4xf32>
  %used_b = titan.pad %b [2, 0] step [1, 1] : tensor<2x4xf32> -> tensor<8x4xf32>
  %used = titan.add %used_a, %used_b : tensor<8x4xf32>
  return %gap, %two, %strided, %used, %used_a : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
