// RUN: titan-opt %s --titan-fuse-rms-norm | FileCheck %s

// Llama's hand-written RMSNorm as the importer emits it.
// CHECK-LABEL: func.func @llama_rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[N:.*]] = titan.rms_norm %[[X]], %[[W]] eps 9.9999997473787516E-6 : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[N]]
func.func @llama_rms_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %eps64 = titan.constant dense<1.000000e-05> : tensor<f64>
  %sq = titan.mul %x, %x : tensor<2x4x8xf32>
  %mean = titan.reduce_mean %sq dims [2] keepdim : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %eps32 = titan.cast %eps64 : tensor<f64> to tensor<f32>
  %eps = titan.broadcast_in_dim %eps32 dims [] : tensor<f32> -> tensor<2x4x1xf32>
  %sum = titan.add %mean, %eps : tensor<2x4x1xf32>
  %inv = titan.rsqrt %sum : tensor<2x4x1xf32>
  %binv = titan.broadcast_in_dim %inv dims [0, 1, 2] : tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  %normed = titan.mul %x, %binv : tensor<2x4x8xf32>
  %bw = titan.broadcast_in_dim %w dims [2] : tensor<8xf32> -> tensor<2x4x8xf32>
  %y = titan.mul %normed, %bw : tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// Operand order does not matter.
// CHECK-LABEL: func.func @swapped
// CHECK: titan.rms_norm %{{.*}}, %{{.*}} eps 9.9999999747524271E-7
// CHECK-NOT: titan.rsqrt
func.func @swapped(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %sq = titan.mul %x, %x : tensor<4x8xf32>
  %mean = titan.reduce_mean %sq dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = titan.constant dense<1.000000e-06> : tensor<4x1xf32>
  %sum = titan.add %eps, %mean : tensor<4x1xf32>
  %inv = titan.rsqrt %sum : tensor<4x1xf32>
  %binv = titan.broadcast_in_dim %inv dims [0, 1] : tensor<4x1xf32> -> tensor<4x8xf32>
  %normed = titan.mul %binv, %x : tensor<4x8xf32>
  %bw = titan.broadcast_in_dim %w dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  %y = titan.mul %bw, %normed : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Mixed precision: a bf16 x normalized in f32 and narrowed back before the
// bf16 weight scales it (`self._norm(x.float()).type_as(x) * self.weight`).
// CHECK-LABEL: func.func @mixed_precision
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<8xbf16>)
// CHECK-NEXT: %[[N:.*]] = titan.rms_norm %[[X]], %[[W]] eps 9.9999999747524271E-7 : tensor<4x8xbf16>, tensor<8xbf16>
// CHECK-NEXT: return %[[N]]
func.func @mixed_precision(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %xf = titan.cast %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %sq = titan.mul %xf, %xf : tensor<4x8xf32>
  %mean = titan.reduce_mean %sq dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = titan.constant dense<1.000000e-06> : tensor<4x1xf32>
  %sum = titan.add %mean, %eps : tensor<4x1xf32>
  %inv = titan.rsqrt %sum : tensor<4x1xf32>
  %binv = titan.broadcast_in_dim %inv dims [0, 1] : tensor<4x1xf32> -> tensor<4x8xf32>
  %normed = titan.mul %xf, %binv : tensor<4x8xf32>
  %narrow = titan.cast %normed : tensor<4x8xf32> to tensor<4x8xbf16>
  %bw = titan.broadcast_in_dim %w dims [1] : tensor<8xbf16> -> tensor<4x8xbf16>
  %y = titan.mul %narrow, %bw : tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// Not fused: the narrowed value is not the widened input's type (f16 x,
// bf16 result).
// CHECK-LABEL: func.func @mixed_types
// CHECK-NOT: titan.rms_norm
// CHECK: return
func.func @mixed_types(%x: tensor<4x8xf16>, %w: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %xf = titan.cast %x : tensor<4x8xf16> to tensor<4x8xf32>
  %sq = titan.mul %xf, %xf : tensor<4x8xf32>
  %mean = titan.reduce_mean %sq dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = titan.constant dense<1.000000e-06> : tensor<4x1xf32>
  %sum = titan.add %mean, %eps : tensor<4x1xf32>
  %inv = titan.rsqrt %sum : tensor<4x1xf32>
  %binv = titan.broadcast_in_dim %inv dims [0, 1] : tensor<4x1xf32> -> tensor<4x8xf32>
  %normed = titan.mul %xf, %binv : tensor<4x8xf32>
  %narrow = titan.cast %normed : tensor<4x8xf32> to tensor<4x8xbf16>
  %bw = titan.broadcast_in_dim %w dims [1] : tensor<8xbf16> -> tensor<4x8xbf16>
  %y = titan.mul %narrow, %bw : tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// Not an RMSNorm: the mean is over the wrong dim, the squared value is not
// the normalized one, or the epsilon is not a constant.
// CHECK-LABEL: func.func @not_rms_norm
// CHECK-NOT: titan.rms_norm
// CHECK: return
func.func @not_rms_norm(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>, %w: tensor<8xf32>, %e: tensor<4x1xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %bw = titan.broadcast_in_dim %w dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  // Squares %z but normalizes %x.
  %sq = titan.mul %z, %z : tensor<4x8xf32>
  %mean = titan.reduce_mean %sq dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = titan.constant dense<1.000000e-06> : tensor<4x1xf32>
  %sum = titan.add %mean, %eps : tensor<4x1xf32>
  %inv = titan.rsqrt %sum : tensor<4x1xf32>
  %binv = titan.broadcast_in_dim %inv dims [0, 1] : tensor<4x1xf32> -> tensor<4x8xf32>
  %normed = titan.mul %x, %binv : tensor<4x8xf32>
  %y = titan.mul %normed, %bw : tensor<4x8xf32>
  // A runtime epsilon.
  %sq2 = titan.mul %x, %x : tensor<4x8xf32>
  %mean2 = titan.reduce_mean %sq2 dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %sum2 = titan.add %mean2, %e : tensor<4x1xf32>
  %inv2 = titan.rsqrt %sum2 : tensor<4x1xf32>
  %binv2 = titan.broadcast_in_dim %inv2 dims [0, 1] : tensor<4x1xf32> -> tensor<4x8xf32>
  %normed2 = titan.mul %x, %binv2 : tensor<4x8xf32>
  %y2 = titan.mul %normed2, %bw : tensor<4x8xf32>
  return %y, %y2 : tensor<4x8xf32>, tensor<4x8xf32>
}
