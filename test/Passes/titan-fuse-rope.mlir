// RUN: titan-opt %s --titan-fuse-rope --split-input-file | FileCheck %s

// torchtitan's complex RoPE in f32 as the importer emits it
// (view_as_complex(x.reshape(..., -1, 2)) * freqs_cis, view_as_real,
// flatten): the tables are slices of the real and imaginary freqs_cis
// buffers, viewed as [1, seq, 1, pairs] and broadcast.
// CHECK-LABEL: func.func @complex_f32
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x3x8xf32>, %[[RE:.*]]: tensor<16x4xf32> {titan.role = "buffer"}, %[[IM:.*]]: tensor<16x4xf32> {titan.role = "buffer"})
// CHECK-NEXT: %[[C:.*]] = titan.slice %[[RE]] [0, 0] to [4, 4]
// CHECK-NEXT: %[[S:.*]] = titan.slice %[[IM]] [0, 0] to [4, 4]
// CHECK-NEXT: %[[R:.*]] = titan.rope %[[X]], %[[C]], %[[S]] interleaved : tensor<2x4x3x8xf32>, tensor<4x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @complex_f32(%x: tensor<2x4x3x8xf32>,
    %re: tensor<16x4xf32> {titan.role = "buffer"},
    %im: tensor<16x4xf32> {titan.role = "buffer"}) -> tensor<2x4x3x8xf32> {
  %c0 = titan.slice %re [0, 0] to [4, 4] step [1, 1] : tensor<16x4xf32> -> tensor<4x4xf32>
  %s0 = titan.slice %im [0, 0] to [4, 4] step [1, 1] : tensor<16x4xf32> -> tensor<4x4xf32>
  %pairs = titan.reshape %x : tensor<2x4x3x8xf32> -> tensor<2x4x3x4x2xf32>
  %b1 = titan.slice %pairs [0, 0, 0, 0, 1] to [2, 4, 3, 4, 2] step [1, 1, 1, 1, 1] : tensor<2x4x3x4x2xf32> -> tensor<2x4x3x4x1xf32>
  %b = titan.reshape %b1 : tensor<2x4x3x4x1xf32> -> tensor<2x4x3x4xf32>
  %a1 = titan.slice %pairs [0, 0, 0, 0, 0] to [2, 4, 3, 4, 1] step [1, 1, 1, 1, 1] : tensor<2x4x3x4x2xf32> -> tensor<2x4x3x4x1xf32>
  %a = titan.reshape %a1 : tensor<2x4x3x4x1xf32> -> tensor<2x4x3x4xf32>
  %c4 = titan.reshape %c0 : tensor<4x4xf32> -> tensor<1x4x1x4xf32>
  %s4 = titan.reshape %s0 : tensor<4x4xf32> -> tensor<1x4x1x4xf32>
  %c = titan.broadcast_in_dim %c4 dims [0, 1, 2, 3] : tensor<1x4x1x4xf32> -> tensor<2x4x3x4xf32>
  %s = titan.broadcast_in_dim %s4 dims [0, 1, 2, 3] : tensor<1x4x1x4xf32> -> tensor<2x4x3x4xf32>
  %bs = titan.mul %b, %s : tensor<2x4x3x4xf32>
  %ac = titan.mul %a, %c : tensor<2x4x3x4xf32>
  %real = titan.sub %ac, %bs : tensor<2x4x3x4xf32>
  %bc = titan.mul %b, %c : tensor<2x4x3x4xf32>
  %as = titan.mul %a, %s : tensor<2x4x3x4xf32>
  %imag = titan.add %as, %bc : tensor<2x4x3x4xf32>
  %real1 = titan.reshape %real : tensor<2x4x3x4xf32> -> tensor<2x4x3x4x1xf32>
  %imag1 = titan.reshape %imag : tensor<2x4x3x4xf32> -> tensor<2x4x3x4x1xf32>
  %rotated = titan.concat %real1, %imag1 dim 4 : (tensor<2x4x3x4x1xf32>, tensor<2x4x3x4x1xf32>) -> tensor<2x4x3x4x2xf32>
  %y = titan.reshape %rotated : tensor<2x4x3x4x2xf32> -> tensor<2x4x3x8xf32>
  return %y : tensor<2x4x3x8xf32>
}

// -----

// Mixed precision (x.float() ... .type_as(x)): one rope of the bf16 input
// with the f32 tables, which computes in f32 and rounds once. Operands in
// other orders, and [seq, pairs] tables broadcast without a reshape.
// CHECK-LABEL: func.func @mixed_precision_swapped
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x2x8xbf16>, %[[C:.*]]: tensor<4x4xf32>, %[[S:.*]]: tensor<4x4xf32>)
// CHECK-NEXT: %[[R:.*]] = titan.rope %[[X]], %[[C]], %[[S]] interleaved : tensor<1x4x2x8xbf16>, tensor<4x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @mixed_precision_swapped(%xb: tensor<1x4x2x8xbf16>, %c0: tensor<4x4xf32>, %s0: tensor<4x4xf32>) -> tensor<1x4x2x8xbf16> {
  %x = titan.cast %xb : tensor<1x4x2x8xbf16> to tensor<1x4x2x8xf32>
  %pairs = titan.reshape %x : tensor<1x4x2x8xf32> -> tensor<1x4x2x4x2xf32>
  %a1 = titan.slice %pairs [0, 0, 0, 0, 0] to [1, 4, 2, 4, 1] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %a = titan.reshape %a1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %b1 = titan.slice %pairs [0, 0, 0, 0, 1] to [1, 4, 2, 4, 2] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %b = titan.reshape %b1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %c = titan.broadcast_in_dim %c0 dims [1, 3] : tensor<4x4xf32> -> tensor<1x4x2x4xf32>
  %s = titan.broadcast_in_dim %s0 dims [1, 3] : tensor<4x4xf32> -> tensor<1x4x2x4xf32>
  %ca = titan.mul %c, %a : tensor<1x4x2x4xf32>
  %sb = titan.mul %s, %b : tensor<1x4x2x4xf32>
  %real = titan.sub %ca, %sb : tensor<1x4x2x4xf32>
  %cb = titan.mul %c, %b : tensor<1x4x2x4xf32>
  %sa = titan.mul %s, %a : tensor<1x4x2x4xf32>
  %imag = titan.add %cb, %sa : tensor<1x4x2x4xf32>
  %real1 = titan.reshape %real : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %imag1 = titan.reshape %imag : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %rotated = titan.concat %real1, %imag1 dim 4 : (tensor<1x4x2x4x1xf32>, tensor<1x4x2x4x1xf32>) -> tensor<1x4x2x4x2xf32>
  %y = titan.reshape %rotated : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x8xf32>
  %yb = titan.cast %y : tensor<1x4x2x8xf32> to tensor<1x4x2x8xbf16>
  return %yb : tensor<1x4x2x8xbf16>
}

// -----

// The widened result has another user: the rope stays in f32 and the
// narrowing cast reads it.
// CHECK-LABEL: func.func @widened_result_kept
// CHECK: %[[X:.*]] = titan.cast %{{.*}} : tensor<1x4x2x8xbf16> to tensor<1x4x2x8xf32>
// CHECK-NEXT: %[[R:.*]] = titan.rope %[[X]], %{{.*}}, %{{.*}} interleaved : tensor<1x4x2x8xf32>, tensor<4x4xf32>
// CHECK-NEXT: %[[N:.*]] = titan.cast %[[R]] : tensor<1x4x2x8xf32> to tensor<1x4x2x8xbf16>
// CHECK-NEXT: return %[[N]], %[[R]]
func.func @widened_result_kept(%xb: tensor<1x4x2x8xbf16>, %c0: tensor<4x4xf32>, %s0: tensor<4x4xf32>) -> (tensor<1x4x2x8xbf16>, tensor<1x4x2x8xf32>) {
  %x = titan.cast %xb : tensor<1x4x2x8xbf16> to tensor<1x4x2x8xf32>
  %pairs = titan.reshape %x : tensor<1x4x2x8xf32> -> tensor<1x4x2x4x2xf32>
  %a1 = titan.slice %pairs [0, 0, 0, 0, 0] to [1, 4, 2, 4, 1] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %a = titan.reshape %a1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %b1 = titan.slice %pairs [0, 0, 0, 0, 1] to [1, 4, 2, 4, 2] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %b = titan.reshape %b1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %c = titan.broadcast_in_dim %c0 dims [1, 3] : tensor<4x4xf32> -> tensor<1x4x2x4xf32>
  %s = titan.broadcast_in_dim %s0 dims [1, 3] : tensor<4x4xf32> -> tensor<1x4x2x4xf32>
  %ac = titan.mul %a, %c : tensor<1x4x2x4xf32>
  %bs = titan.mul %b, %s : tensor<1x4x2x4xf32>
  %real = titan.sub %ac, %bs : tensor<1x4x2x4xf32>
  %as = titan.mul %a, %s : tensor<1x4x2x4xf32>
  %bc = titan.mul %b, %c : tensor<1x4x2x4xf32>
  %imag = titan.add %as, %bc : tensor<1x4x2x4xf32>
  %real1 = titan.reshape %real : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %imag1 = titan.reshape %imag : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %rotated = titan.concat %real1, %imag1 dim 4 : (tensor<1x4x2x4x1xf32>, tensor<1x4x2x4x1xf32>) -> tensor<1x4x2x4x2xf32>
  %y = titan.reshape %rotated : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x8xf32>
  %yb = titan.cast %y : tensor<1x4x2x8xf32> to tensor<1x4x2x8xbf16>
  return %yb, %y : tensor<1x4x2x8xbf16>, tensor<1x4x2x8xf32>
}

// -----

// Left alone: a table computed from a parameter (titan.rope has no
// gradient for its tables), a table that varies along the heads, one angle
// broadcast everywhere, and the conjugate rotation (a c + b s, a s - b c).
// CHECK-LABEL: func.func @trainable_table
// CHECK-NOT: titan.rope
// CHECK: titan.concat
func.func @trainable_table(%x: tensor<1x4x2x8xf32>, %theta: tensor<4x4xf32> {titan.role = "param"}) -> tensor<1x4x2x8xf32> {
  %c0 = titan.cos %theta : tensor<4x4xf32>
  %s0 = titan.sin %theta : tensor<4x4xf32>
  %pairs = titan.reshape %x : tensor<1x4x2x8xf32> -> tensor<1x4x2x4x2xf32>
  %a1 = titan.slice %pairs [0, 0, 0, 0, 0] to [1, 4, 2, 4, 1] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %a = titan.reshape %a1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %b1 = titan.slice %pairs [0, 0, 0, 0, 1] to [1, 4, 2, 4, 2] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %b = titan.reshape %b1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %c = titan.broadcast_in_dim %c0 dims [1, 3] : tensor<4x4xf32> -> tensor<1x4x2x4xf32>
  %s = titan.broadcast_in_dim %s0 dims [1, 3] : tensor<4x4xf32> -> tensor<1x4x2x4xf32>
  %ac = titan.mul %a, %c : tensor<1x4x2x4xf32>
  %bs = titan.mul %b, %s : tensor<1x4x2x4xf32>
  %real = titan.sub %ac, %bs : tensor<1x4x2x4xf32>
  %as = titan.mul %a, %s : tensor<1x4x2x4xf32>
  %bc = titan.mul %b, %c : tensor<1x4x2x4xf32>
  %imag = titan.add %as, %bc : tensor<1x4x2x4xf32>
  %real1 = titan.reshape %real : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %imag1 = titan.reshape %imag : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %rotated = titan.concat %real1, %imag1 dim 4 : (tensor<1x4x2x4x1xf32>, tensor<1x4x2x4x1xf32>) -> tensor<1x4x2x4x2xf32>
  %y = titan.reshape %rotated : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x8xf32>
  return %y : tensor<1x4x2x8xf32>
}

// CHECK-LABEL: func.func @table_per_head
// CHECK-NOT: titan.rope
// CHECK: titan.concat
func.func @table_per_head(%x: tensor<1x4x2x8xf32>, %c0: tensor<4x2x4xf32>, %s0: tensor<4x2x4xf32>) -> tensor<1x4x2x8xf32> {
  %pairs = titan.reshape %x : tensor<1x4x2x8xf32> -> tensor<1x4x2x4x2xf32>
  %a1 = titan.slice %pairs [0, 0, 0, 0, 0] to [1, 4, 2, 4, 1] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %a = titan.reshape %a1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %b1 = titan.slice %pairs [0, 0, 0, 0, 1] to [1, 4, 2, 4, 2] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %b = titan.reshape %b1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %c = titan.broadcast_in_dim %c0 dims [1, 2, 3] : tensor<4x2x4xf32> -> tensor<1x4x2x4xf32>
  %s = titan.broadcast_in_dim %s0 dims [1, 2, 3] : tensor<4x2x4xf32> -> tensor<1x4x2x4xf32>
  %ac = titan.mul %a, %c : tensor<1x4x2x4xf32>
  %bs = titan.mul %b, %s : tensor<1x4x2x4xf32>
  %real = titan.sub %ac, %bs : tensor<1x4x2x4xf32>
  %as = titan.mul %a, %s : tensor<1x4x2x4xf32>
  %bc = titan.mul %b, %c : tensor<1x4x2x4xf32>
  %imag = titan.add %as, %bc : tensor<1x4x2x4xf32>
  %real1 = titan.reshape %real : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %imag1 = titan.reshape %imag : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %rotated = titan.concat %real1, %imag1 dim 4 : (tensor<1x4x2x4x1xf32>, tensor<1x4x2x4x1xf32>) -> tensor<1x4x2x4x2xf32>
  %y = titan.reshape %rotated : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x8xf32>
  return %y : tensor<1x4x2x8xf32>
}

// CHECK-LABEL: func.func @conjugate
// CHECK-NOT: titan.rope
// CHECK: titan.concat
func.func @conjugate(%x: tensor<1x4x2x8xf32>, %c0: tensor<4x4xf32>, %s0: tensor<4x4xf32>) -> tensor<1x4x2x8xf32> {
  %pairs = titan.reshape %x : tensor<1x4x2x8xf32> -> tensor<1x4x2x4x2xf32>
  %a1 = titan.slice %pairs [0, 0, 0, 0, 0] to [1, 4, 2, 4, 1] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %a = titan.reshape %a1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %b1 = titan.slice %pairs [0, 0, 0, 0, 1] to [1, 4, 2, 4, 2] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %b = titan.reshape %b1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %c = titan.broadcast_in_dim %c0 dims [1, 3] : tensor<4x4xf32> -> tensor<1x4x2x4xf32>
  %s = titan.broadcast_in_dim %s0 dims [1, 3] : tensor<4x4xf32> -> tensor<1x4x2x4xf32>
  %ac = titan.mul %a, %c : tensor<1x4x2x4xf32>
  %bs = titan.mul %b, %s : tensor<1x4x2x4xf32>
  %real = titan.add %ac, %bs : tensor<1x4x2x4xf32>
  %as = titan.mul %a, %s : tensor<1x4x2x4xf32>
  %bc = titan.mul %b, %c : tensor<1x4x2x4xf32>
  %imag = titan.sub %as, %bc : tensor<1x4x2x4xf32>
  %real1 = titan.reshape %real : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %imag1 = titan.reshape %imag : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %rotated = titan.concat %real1, %imag1 dim 4 : (tensor<1x4x2x4x1xf32>, tensor<1x4x2x4x1xf32>) -> tensor<1x4x2x4x2xf32>
  %y = titan.reshape %rotated : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x8xf32>
  return %y : tensor<1x4x2x8xf32>
}

// CHECK-LABEL: func.func @scalar_angle
// CHECK-NOT: titan.rope
// CHECK: titan.concat
func.func @scalar_angle(%x: tensor<1x4x2x8xf32>, %c0: tensor<f32>, %s0: tensor<f32>) -> tensor<1x4x2x8xf32> {
  %pairs = titan.reshape %x : tensor<1x4x2x8xf32> -> tensor<1x4x2x4x2xf32>
  %a1 = titan.slice %pairs [0, 0, 0, 0, 0] to [1, 4, 2, 4, 1] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %a = titan.reshape %a1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %b1 = titan.slice %pairs [0, 0, 0, 0, 1] to [1, 4, 2, 4, 2] step [1, 1, 1, 1, 1] : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x4x1xf32>
  %b = titan.reshape %b1 : tensor<1x4x2x4x1xf32> -> tensor<1x4x2x4xf32>
  %c = titan.broadcast_in_dim %c0 dims [] : tensor<f32> -> tensor<1x4x2x4xf32>
  %s = titan.broadcast_in_dim %s0 dims [] : tensor<f32> -> tensor<1x4x2x4xf32>
  %ac = titan.mul %a, %c : tensor<1x4x2x4xf32>
  %bs = titan.mul %b, %s : tensor<1x4x2x4xf32>
  %real = titan.sub %ac, %bs : tensor<1x4x2x4xf32>
  %as = titan.mul %a, %s : tensor<1x4x2x4xf32>
  %bc = titan.mul %b, %c : tensor<1x4x2x4xf32>
  %imag = titan.add %as, %bc : tensor<1x4x2x4xf32>
  %real1 = titan.reshape %real : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %imag1 = titan.reshape %imag : tensor<1x4x2x4xf32> -> tensor<1x4x2x4x1xf32>
  %rotated = titan.concat %real1, %imag1 dim 4 : (tensor<1x4x2x4x1xf32>, tensor<1x4x2x4x1xf32>) -> tensor<1x4x2x4x2xf32>
  %y = titan.reshape %rotated : tensor<1x4x2x4x2xf32> -> tensor<1x4x2x8xf32>
  return %y : tensor<1x4x2x8xf32>
}
