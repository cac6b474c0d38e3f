// RUN: titan-opt %s -canonicalize | FileCheck %s

// CHECK-LABEL: func.func @constant_dedup
// CHECK-NEXT: %[[C:.*]] = titan.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT: return %[[C]], %[[C]]
func.func @constant_dedup() -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = titan.constant dense<1.0> : tensor<4xf32>
  %1 = titan.constant dense<1.0> : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @scale_by_one
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[S:.*]] = titan.scale %[[X]] by 2.000000e+00
// CHECK-NEXT: return %[[X]], %[[S]]
func.func @scale_by_one(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = titan.scale %x by 1.0 : tensor<4xf32>
  %1 = titan.scale %x by 2.0 : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @cast_to_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NEXT: return %[[X]]
func.func @cast_to_same_type(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = titan.cast %x : tensor<4xbf16> to tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// CHECK-LABEL: func.func @select_folds
// CHECK-SAME: (%[[C:.*]]: tensor<4xi1>, %[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[A]], %[[A]], %[[B]]
func.func @select_folds(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = titan.select %c, %a, %a : tensor<4xi1>, tensor<4xf32>
  %true = titan.constant dense<true> : tensor<4xi1>
  %1 = titan.select %true, %a, %b : tensor<4xi1>, tensor<4xf32>
  %false = titan.constant dense<false> : tensor<4xi1>
  %2 = titan.select %false, %a, %b : tensor<4xi1>, tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @reshape_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = titan.reshape %[[X]] : tensor<4x8xf32> -> tensor<32xf32>
// CHECK-NEXT: return %[[X]], %[[X]], %[[R]]
func.func @reshape_folds(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<32xf32>) {
  %0 = titan.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = titan.reshape %x : tensor<4x8xf32> -> tensor<2x16xf32>
  %2 = titan.reshape %1 : tensor<2x16xf32> -> tensor<4x8xf32>
  %3 = titan.reshape %1 : tensor<2x16xf32> -> tensor<32xf32>
  return %0, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<32xf32>
}

// CHECK-LABEL: func.func @transpose_folds
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = titan.transpose %[[X]] [2, 1, 0] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT: return %[[X]], %[[X]], %[[T]]
func.func @transpose_folds(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>) {
  %0 = titan.transpose %x [0, 1, 2] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %1 = titan.transpose %x [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %2 = titan.transpose %1 [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  %3 = titan.transpose %1 [1, 0, 2] : tensor<3x4x2xf32> -> tensor<4x3x2xf32>
  return %0, %2, %3 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>
}

// CHECK-LABEL: func.func @slice_whole
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[S:.*]] = titan.slice %[[X]] [0, 0] to [4, 8] step [1, 2]
// CHECK-NEXT: return %[[X]], %[[S]]
func.func @slice_whole(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>) {
  %0 = titan.slice %x [0, 0] to [4, 8] step [1, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = titan.slice %x [0, 0] to [4, 8] step [1, 2] : tensor<4x8xf32> -> tensor<4x4xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x4xf32>
}

// A slice of a slice reads the input once: rows 2 + 3 + 2k (k < 4: rows
// 5, 7, 9, 11) and columns 1 + 3 (1 + 2k) (k < 2: columns 4, 10).
// CHECK-LABEL: func.func @slice_of_slice
// CHECK-SAME: (%[[X:.*]]: tensor<16x20xf32>)
// CHECK-NEXT: %[[S:.*]] = titan.slice %[[X]] [5, 4] to [12, 11] step [2, 6] : tensor<16x20xf32> -> tensor<4x2xf32>
// CHECK-NEXT: return %[[S]]
func.func @slice_of_slice(%x: tensor<16x20xf32>) -> tensor<4x2xf32> {
  %0 = titan.slice %x [2, 1] to [14, 19] step [1, 3] : tensor<16x20xf32> -> tensor<12x6xf32>
  %1 = titan.slice %0 [3, 1] to [11, 5] step [2, 2] : tensor<12x6xf32> -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @concat_single(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = titan.concat %x dim 1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @broadcast_in_dim_identity
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>)
// CHECK-NEXT: %[[B:.*]] = titan.broadcast_in_dim %[[X]] dims [1, 0]
// CHECK-NEXT: return %[[X]], %[[B]]
func.func @broadcast_in_dim_identity(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = titan.broadcast_in_dim %x dims [0, 1] : tensor<4x4xf32> -> tensor<4x4xf32>
  %1 = titan.broadcast_in_dim %x dims [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
}

titan.mesh @mesh ["fsdp"=4, "tp"=2]

// Redistributing to the placements the producer gave is a no-op.
// CHECK-LABEL: func.func @same_placements
func.func @same_placements(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // CHECK: %[[A:.*]] = titan.redistribute %{{.*}} to <@mesh, [S(0), R]>
  // CHECK-NOT: titan.redistribute
  // CHECK: return %[[A]]
  %0 = titan.redistribute %x to <@mesh, [S(0), R]> : tensor<8x4xf32>
  %1 = titan.redistribute %0 to <@mesh, [S(0), R]> : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// Only the last layout of a chain matters; the intermediate one disappears.
// CHECK-LABEL: func.func @chain
func.func @chain(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // CHECK-NEXT: %[[B:.*]] = titan.redistribute %arg0 to <@mesh, [R, S(1)]>
  // CHECK-NEXT: return %[[B]]
  %0 = titan.redistribute %x to <@mesh, [S(0), R]> : tensor<8x4xf32>
  %1 = titan.redistribute %0 to <@mesh, [R, S(1)]> : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// An intermediate layout that has other users stays.
// CHECK-LABEL: func.func @shared
func.func @shared(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  // CHECK-DAG: %[[A:.*]] = titan.redistribute %arg0 to <@mesh, [S(0), R]>
  // CHECK-DAG: %[[B:.*]] = titan.redistribute %arg0 to <@mesh, [R, S(1)]>
  // CHECK: return %[[A]], %[[B]]
  %0 = titan.redistribute %x to <@mesh, [S(0), R]> : tensor<8x4xf32>
  %1 = titan.redistribute %0 to <@mesh, [R, S(1)]> : tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}

// The sum of two all-reduces of one group is one all-reduce of the sum;
// not for max, other axes, or an all-reduce used twice.
titan.mesh @xy ["x"=2, "y"=2]
// CHECK-LABEL: func.func @merge_all_reduces(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<f32>, %[[B:[a-z0-9]+]]: tensor<f32>, %[[C:[a-z0-9]+]]: tensor<f32>
// CHECK-NEXT: %[[AB:.*]] = titan.add %[[A]], %[[B]]
// CHECK-NEXT: %[[ABC:.*]] = titan.add %[[AB]], %[[C]]
// CHECK-NEXT: %[[R:.*]] = titan.all_reduce %[[ABC]] on @xy ["x"] sum
// CHECK-NEXT: return %[[R]]
func.func @merge_all_reduces(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>) -> tensor<f32> {
  %ra = titan.all_reduce %a on @xy ["x"] sum : tensor<f32>
  %rb = titan.all_reduce %b on @xy ["x"] sum : tensor<f32>
  %rc = titan.all_reduce %c on @xy ["x"] sum : tensor<f32>
  %s = titan.add %ra, %rb : tensor<f32>
  %t = titan.add %s, %rc : tensor<f32>
  return %t : tensor<f32>
}
// A running sum of replicated and all-reduced terms (gradient clipping's
// squared norm) keeps one all-reduce.
// CHECK-LABEL: func.func @running_sum(
// CHECK-COUNT-1: titan.all_reduce
// CHECK-NOT: titan.all_reduce
// CHECK: return
func.func @running_sum(%r: tensor<f32>, %a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>) -> tensor<f32> {
  %ra = titan.all_reduce %a on @xy ["x"] sum : tensor<f32>
  %s1 = titan.add %r, %ra : tensor<f32>
  %rb = titan.all_reduce %b on @xy ["x"] sum : tensor<f32>
  %s2 = titan.add %s1, %rb : tensor<f32>
  %rc = titan.all_reduce %c on @xy ["x"] sum : tensor<f32>
  %s3 = titan.add %s2, %rc : tensor<f32>
  return %s3 : tensor<f32>
}
// CHECK-LABEL: func.func @keep_all_reduces(
// CHECK-COUNT-4: titan.all_reduce
func.func @keep_all_reduces(%a: tensor<f32>, %b: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %ma = titan.all_reduce %a on @xy ["x"] max : tensor<f32>
  %mb = titan.all_reduce %b on @xy ["x"] max : tensor<f32>
  %m = titan.add %ma, %mb : tensor<f32>
  %xa = titan.all_reduce %a on @xy ["x"] sum : tensor<f32>
  %yb = titan.all_reduce %b on @xy ["y"] sum : tensor<f32>
  %n = titan.add %xa, %yb : tensor<f32>
  %o = titan.add %xa, %n : tensor<f32>
  return %m, %n, %o : tensor<f32>, tensor<f32>, tensor<f32>
}
