// RUN: titan-opt %s --titan-fold-matmul-batch --split-input-file | FileCheck %s

// A weight's gradient as the matmul VJP builds it, batch summed with the
// dims kept: one product over the rows of both batch entries (the
// reshapes back to the kept dims and to the weight's shape fold away).
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[DY:.*]]: tensor<2x8x6xbf16>, %[[X:.*]]: tensor<2x8x4xbf16>)
// CHECK-NEXT: %[[A:.*]] = titan.reshape %[[DY]] : tensor<2x8x6xbf16> -> tensor<16x6xbf16>
// CHECK-NEXT: %[[B:.*]] = titan.reshape %[[X]] : tensor<2x8x4xbf16> -> tensor<16x4xbf16>
// CHECK-NEXT: %[[P:.*]] = titan.matmul %[[A]], %[[B]] transpose_lhs : tensor<16x6xbf16>, tensor<16x4xbf16> -> tensor<6x4xbf16>
// CHECK-NEXT: return %[[P]]
func.func @weight_gradient(%dy: tensor<2x8x6xbf16>, %x: tensor<2x8x4xbf16>) -> tensor<6x4xbf16> {
  %p = titan.matmul %dy, %x transpose_lhs : tensor<2x8x6xbf16>, tensor<2x8x4xbf16> -> tensor<2x6x4xbf16>
  %s = titan.reduce_sum %p dims [0] keepdim : tensor<2x6x4xbf16> -> tensor<1x6x4xbf16>
  %w = titan.reshape %s : tensor<1x6x4xbf16> -> tensor<6x4xbf16>
  return %w : tensor<6x4xbf16>
}

// -----

// Two batch dims summed without keepdim.
// CHECK-LABEL: func.func @two_batch_dims
// CHECK-NEXT: titan.reshape %{{.*}} : tensor<2x3x5x6xf32> -> tensor<30x6xf32>
// CHECK-NEXT: titan.reshape %{{.*}} : tensor<2x3x5x4xf32> -> tensor<30x4xf32>
// CHECK-NEXT: %[[P:.*]] = titan.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<30x6xf32>, tensor<30x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: return %[[P]]
func.func @two_batch_dims(%dy: tensor<2x3x5x6xf32>, %x: tensor<2x3x5x4xf32>) -> tensor<6x4xf32> {
  %p = titan.matmul %dy, %x transpose_lhs : tensor<2x3x5x6xf32>, tensor<2x3x5x4xf32> -> tensor<2x3x6x4xf32>
  %s = titan.reduce_sum %p dims [0, 1] : tensor<2x3x6x4xf32> -> tensor<6x4xf32>
  return %s : tensor<6x4xf32>
}

// -----

// Left alone: the batched product has another user; the rows are not the
// contracted dim (no transpose_lhs: the entries' contracted columns are not
// adjacent); the sum is over a matrix dim too.
// CHECK-LABEL: func.func @product_used
// CHECK: titan.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<2x8x6xf32>, tensor<2x8x4xf32> -> tensor<2x6x4xf32>
// CHECK: titan.reduce_sum
func.func @product_used(%dy: tensor<2x8x6xf32>, %x: tensor<2x8x4xf32>) -> (tensor<6x4xf32>, tensor<2x6x4xf32>) {
  %p = titan.matmul %dy, %x transpose_lhs : tensor<2x8x6xf32>, tensor<2x8x4xf32> -> tensor<2x6x4xf32>
  %s = titan.reduce_sum %p dims [0] : tensor<2x6x4xf32> -> tensor<6x4xf32>
  return %s, %p : tensor<6x4xf32>, tensor<2x6x4xf32>
}

// CHECK-LABEL: func.func @rows_not_contracted
// CHECK: titan.matmul %{{.*}}, %{{.*}} : tensor<2x6x8xf32>, tensor<2x8x4xf32> -> tensor<2x6x4xf32>
// CHECK: titan.reduce_sum
func.func @rows_not_contracted(%a: tensor<2x6x8xf32>, %x: tensor<2x8x4xf32>) -> tensor<6x4xf32> {
  %p = titan.matmul %a, %x : tensor<2x6x8xf32>, tensor<2x8x4xf32> -> tensor<2x6x4xf32>
  %s = titan.reduce_sum %p dims [0] : tensor<2x6x4xf32> -> tensor<6x4xf32>
  return %s : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @not_the_batch
// CHECK: titan.matmul
// CHECK: titan.reduce_sum %{{.*}} dims [0, 1]
func.func @not_the_batch(%dy: tensor<2x8x6xf32>, %x: tensor<2x8x4xf32>) -> tensor<4xf32> {
  %p = titan.matmul %dy, %x transpose_lhs : tensor<2x8x6xf32>, tensor<2x8x4xf32> -> tensor<2x6x4xf32>
  %s = titan.reduce_sum %p dims [0, 1] : tensor<2x6x4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// The product is built where the batched one was, not where the sum stands
// (titan-sink-to-first-use moves the sum down to its reader): the
// operands are not held until there.
// CHECK-LABEL: func.func @sum_moved_down
// CHECK: %[[P:.*]] = titan.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<16x6xf32>, tensor<16x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: %[[E:.*]] = titan.exp
// CHECK-NEXT: return %[[P]], %[[E]]
func.func @sum_moved_down(%dy: tensor<2x8x6xf32>, %x: tensor<2x8x4xf32>) -> (tensor<6x4xf32>, tensor<2x8x4xf32>) {
  %p = titan.matmul %dy, %x transpose_lhs : tensor<2x8x6xf32>, tensor<2x8x4xf32> -> tensor<2x6x4xf32>
  %e = titan.exp %x : tensor<2x8x4xf32>
  %s = titan.reduce_sum %p dims [0] : tensor<2x6x4xf32> -> tensor<6x4xf32>
  return %s, %e : tensor<6x4xf32>, tensor<2x8x4xf32>
}
