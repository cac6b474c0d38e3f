// RUN: titan-opt %s --titan-fuse-addends --split-input-file | FileCheck %s

// A residual add: the block's input is the output projection's addend, in
// either operand order; the adds are gone.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xbf16>, %[[A:.*]]: tensor<2x8x32xbf16>, %[[W:.*]]: tensor<16x32xbf16>)
// CHECK-NEXT: %[[S:.*]] = titan.matmul %[[A]], %[[W]] transpose_rhs plus %[[X]] : tensor<2x8x32xbf16>, tensor<16x32xbf16> -> tensor<2x8x16xbf16>
// CHECK-NEXT: %[[T:.*]] = titan.matmul %[[A]], %[[W]] transpose_rhs plus %[[S]] : tensor<2x8x32xbf16>, tensor<16x32xbf16> -> tensor<2x8x16xbf16>
// CHECK-NEXT: return %[[T]]
func.func @residual(%x: tensor<2x8x16xbf16>, %a: tensor<2x8x32xbf16>, %w: tensor<16x32xbf16>) -> tensor<2x8x16xbf16> {
  %p = titan.matmul %a, %w transpose_rhs : tensor<2x8x32xbf16>, tensor<16x32xbf16> -> tensor<2x8x16xbf16>
  %s = titan.add %x, %p : tensor<2x8x16xbf16>
  %q = titan.matmul %a, %w transpose_rhs : tensor<2x8x32xbf16>, tensor<16x32xbf16> -> tensor<2x8x16xbf16>
  %t = titan.add %q, %s : tensor<2x8x16xbf16>
  return %t : tensor<2x8x16xbf16>
}

// -----

// The input cotangent of q, k and v: a sum of three products is two fused
// GEMMs, each adding the one before it.
// CHECK-LABEL: func.func @three_products
// CHECK-NEXT: %[[P1:.*]] = titan.matmul %arg0, %arg1 : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[P2:.*]] = titan.matmul %arg0, %arg2 plus %[[P1]] : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[P3:.*]] = titan.matmul %arg0, %arg3 plus %[[P2]] : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[P3]]
func.func @three_products(%dy: tensor<8x4xf32>, %wq: tensor<4x16xf32>, %wk: tensor<4x16xf32>, %wv: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %1 = titan.matmul %dy, %wq : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %2 = titan.matmul %dy, %wk : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %3 = titan.matmul %dy, %wv : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %s = titan.add %2, %1 : tensor<8x16xf32>
  %t = titan.add %s, %3 : tensor<8x16xf32>
  return %t : tensor<8x16xf32>
}

// -----

// The add reads the product through a reshape (a view): the addend is
// viewed in the product's shape before the matmul, and the sum viewed back.
// CHECK-LABEL: func.func @through_reshape
// CHECK-SAME: (%[[G:.*]]: tensor<1x4x6xf32>, %[[DY:.*]]: tensor<16x4xf32>, %[[X:.*]]: tensor<16x6xf32>)
// CHECK-NEXT: %[[V:.*]] = titan.reshape %[[G]] : tensor<1x4x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT: %[[P:.*]] = titan.matmul %[[DY]], %[[X]] transpose_lhs plus %[[V]] : tensor<16x4xf32>, tensor<16x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT: %[[R:.*]] = titan.reshape %[[P]] : tensor<4x6xf32> -> tensor<1x4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @through_reshape(%g: tensor<1x4x6xf32>, %dy: tensor<16x4xf32>, %x: tensor<16x6xf32>) -> tensor<1x4x6xf32> {
  %p = titan.matmul %dy, %x transpose_lhs : tensor<16x4xf32>, tensor<16x6xf32> -> tensor<4x6xf32>
  %r = titan.reshape %p : tensor<4x6xf32> -> tensor<1x4x6xf32>
  %s = titan.add %g, %r : tensor<1x4x6xf32>
  return %s : tensor<1x4x6xf32>
}

// -----

// The residual stream's cotangent: each norm's input cotangent adds the
// running sum (the later norm adds the earlier one's result). A norm whose
// weight gradient is read elsewhere still takes the addend; the add of its
// weight gradient is no input cotangent and stays.
// CHECK-LABEL: func.func @residual_gradient
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xbf16>, %[[W:.*]]: tensor<16xbf16>, %[[DY:.*]]: tensor<2x8x16xbf16>, %[[G:.*]]: tensor<2x8x16xbf16>)
// CHECK-NEXT: %[[D1:.*]], %[[W1:.*]] = titan.rms_norm_grad %[[X]], %[[W]], %[[DY]] plus %[[G]] eps
// CHECK-NEXT: %[[D2:.*]], %[[W2:.*]] = titan.rms_norm_grad %[[X]], %[[W]], %[[D1]] plus %[[D1]] eps
// CHECK-NEXT: %[[SW:.*]] = titan.add %[[W1]], %[[W2]]
// CHECK-NEXT: return %[[D2]], %[[SW]]
func.func @residual_gradient(%x: tensor<2x8x16xbf16>, %w: tensor<16xbf16>, %dy: tensor<2x8x16xbf16>, %g: tensor<2x8x16xbf16>) -> (tensor<2x8x16xbf16>, tensor<16xbf16>) {
  %d1, %w1 = titan.rms_norm_grad %x, %w, %dy eps 1.0e-5 : tensor<2x8x16xbf16>, tensor<16xbf16>
  %s1 = titan.add %g, %d1 : tensor<2x8x16xbf16>
  %d2, %w2 = titan.rms_norm_grad %x, %w, %s1 eps 1.0e-5 : tensor<2x8x16xbf16>, tensor<16xbf16>
  %s2 = titan.add %d2, %s1 : tensor<2x8x16xbf16>
  %sw = titan.add %w1, %w2 : tensor<16xbf16>
  return %s2, %sw : tensor<2x8x16xbf16>, tensor<16xbf16>
}

// -----

// Left alone: the product has another reader; the other term is computed
// after the matmul (the matmul would have to move); the product's reshape
// has another reader; neither term is a product; the other term is a bias
// broadcast over the rows, or a constant (the add's kernel expands them as
// it reads).
// CHECK-LABEL: func.func @not_fused
// CHECK-COUNT-6: titan.add
// CHECK-NOT: plus
func.func @not_fused(%a: tensor<8x4xf32>, %w: tensor<4x16xf32>, %x: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %p = titan.matmul %a, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %s = titan.add %x, %p : tensor<8x16xf32>
  %q = titan.matmul %a, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %later = titan.exp %x : tensor<8x16xf32>
  %t = titan.add %q, %later : tensor<8x16xf32>
  %m = titan.matmul %a, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %v = titan.reshape %m : tensor<8x16xf32> -> tensor<128xf32>
  %flat = titan.reshape %x : tensor<8x16xf32> -> tensor<128xf32>
  %u = titan.add %flat, %v : tensor<128xf32>
  %e = titan.add %x, %later : tensor<8x16xf32>
  %bias = titan.broadcast_in_dim %b dims [1] : tensor<16xf32> -> tensor<8x16xf32>
  %m2 = titan.matmul %a, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %biased = titan.add %m2, %bias : tensor<8x16xf32>
  %one = titan.constant dense<1.0> : tensor<8x16xf32>
  %m3 = titan.matmul %a, %w : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  %shifted = titan.add %one, %m3 : tensor<8x16xf32>
  return %s, %p, %t, %u, %v, %e, %biased, %shifted : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
