// RUN: titan-opt %s --titan-convert-to-linalg | FileCheck %s

// Broadcasts and transposes are copies through an indexing map (fusion
// folds them into their consumers); slices, pads and concatenations are
// tensor slice ops.

// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1, d2) -> (d2, 0)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[PERM:.*]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>

// Operand dim 0 is result dim 2; operand dim 1 has size 1 and is broadcast
// along result dim 1, so it reads index 0.
// CHECK-LABEL: func.func @broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<5x1xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3x4x5xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[BCAST]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]] : tensor<5x1xf32>) outs(%[[E]] : tensor<3x4x5xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
// CHECK: return %[[R]]
func.func @broadcast(%x: tensor<5x1xf32>) -> tensor<3x4x5xf32> {
  %0 = titan.broadcast_in_dim %x dims [2, 1] : tensor<5x1xf32> -> tensor<3x4x5xf32>
  return %0 : tensor<3x4x5xf32>
}

// Result dim d is input dim permutation[d]: the input is read through the
// inverse permutation.
// CHECK-LABEL: func.func @transpose
// CHECK: linalg.generic {indexing_maps = [#[[PERM]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<3x4x2xf32>)
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = titan.transpose %x [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  return %0 : tensor<3x4x2xf32>
}

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<8x6xf32>)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][1, 0] [3, 5] [2, 1] : tensor<8x6xf32> to tensor<3x5xf32>
// CHECK: return %[[S]]
func.func @slice(%x: tensor<8x6xf32>) -> tensor<3x5xf32> {
  %0 = titan.slice %x [1, 0] to [7, 5] step [2, 1] : tensor<8x6xf32> -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// The inverse of the slice above.
// CHECK-LABEL: func.func @pad
// CHECK-SAME: (%[[X:.*]]: tensor<3x5xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x6xf32>
// CHECK: %[[Z:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<8x6xf32>)
// CHECK: %[[R:.*]] = tensor.insert_slice %[[X]] into %[[Z]][1, 0] [3, 5] [2, 1] : tensor<3x5xf32> into tensor<8x6xf32>
// CHECK: return %[[R]]
func.func @pad(%x: tensor<3x5xf32>) -> tensor<8x6xf32> {
  %0 = titan.pad %x [1, 0] step [2, 1] : tensor<3x5xf32> -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xi64>, %[[B:.*]]: tensor<2x5xi64>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x8xi64>
// CHECK: %[[P:.*]] = tensor.insert_slice %[[A]] into %[[E]][0, 0] [2, 3] [1, 1]
// CHECK: %[[R:.*]] = tensor.insert_slice %[[B]] into %[[P]][0, 3] [2, 5] [1, 1]
// CHECK: return %[[R]]
func.func @concat(%a: tensor<2x3xi64>, %b: tensor<2x5xi64>) -> tensor<2x8xi64> {
  %0 = titan.concat %a, %b dim 1 : (tensor<2x3xi64>, tensor<2x5xi64>) -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}
