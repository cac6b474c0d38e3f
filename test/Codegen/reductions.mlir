// RUN: titan-opt %s --titan-convert-to-linalg | FileCheck %s

// Reductions: a linalg.fill of the identity, then one generic with the
// reduced dims as reduction iterators; keepdim adds a unit parallel loop per
// reduced dim so that every map stays a projection (no reshape). Sums
// accumulate in f64 and are rounded to the element type by an elementwise
// generic; maxima stay in the element type.

// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW3:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[KEEPIN:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d4)>
// CHECK-DAG: #[[KEEPOUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW2:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @sum
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x4xf64>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f64) outs(%[[E]] : tensor<2x4xf64>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ROW3]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<2x4xf64>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f64):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[IN]] : f32 to f64
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[W]] : f64
// CHECK-NEXT: linalg.yield %[[S]] : f64
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[SUM]] : tensor<2x4xf64>) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK-NEXT: ^bb0(%[[T:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: %[[F:.*]] = arith.truncf %[[T]] : f64 to f32
// CHECK-NEXT: linalg.yield %[[F]] : f32
// CHECK: return %[[R]]
func.func @sum(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %0 = titan.reduce_sum %x dims [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @max_keepdim
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x3x1xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NINF]] : f32) outs(%[[E]] : tensor<1x3x1xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[KEEPIN]], #[[KEEPOUT]]], iterator_types = ["parallel", "reduction", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<1x3x1xf32>)
// CHECK: arith.maximumf
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[R]]
func.func @max_keepdim(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = titan.reduce_max %x dims [0, 2] keepdim : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// bf16 sums accumulate in f64 (bf16 -> f32 -> f64); the mean rounds the sum
// to f32, divides in f32 and rounds to bf16 once.
// CHECK-LABEL: func.func @mean_bf16
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f64) outs(%{{.*}} : tensor<2xf64>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<2xf64>)
// CHECK: %[[W:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT: arith.extf %[[W]] : f32 to f64
// CHECK-NEXT: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: %[[MEAN:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[SUM]] : tensor<2xf64>) outs(%{{.*}} : tensor<2xbf16>)
// CHECK-NEXT: ^bb0(%[[S:.*]]: f64, %{{.*}}: bf16):
// CHECK-NEXT: %[[S32:.*]] = arith.truncf %[[S]] : f64 to f32
// CHECK-NEXT: %[[D:.*]] = arith.divf %[[S32]], %[[COUNT]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[D]] : f32 to bf16
// CHECK: return %[[MEAN]]
func.func @mean_bf16(%x: tensor<2x3xbf16>) -> tensor<2xbf16> {
  %0 = titan.reduce_mean %x dims [1] : tensor<2x3xbf16> -> tensor<2xbf16>
  return %0 : tensor<2xbf16>
}

// Stable softmax along a middle dim: max (in f32), sum of exp(x - max) (in
// f64), then exp(x - max) / sum with the sum rounded to f32.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ROW3]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]] : tensor<2x3x4xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ROW3]], #[[ROW3]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[X]], %[[MAX]] : tensor<2x3x4xf32>, tensor<2x4xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[M:.*]]: f32, %[[ACC:.*]]: f64):
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[IN]], %[[M]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT: %[[EW:.*]] = arith.extf %[[E]] : f32 to f64
// CHECK-NEXT: arith.addf %[[ACC]], %[[EW]] : f64
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ROW3]], #[[ROW3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[MAX]], %[[SUM]] :
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[M:.*]]: f32, %[[ZW:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: %[[Z:.*]] = arith.truncf %[[ZW]] : f64 to f32
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[IN]], %[[M]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT: %[[P:.*]] = arith.divf %[[E]], %[[Z]] : f32
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = titan.softmax %x dim 1 : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ROW2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-NEXT: ^bb0(%[[IN:.*]]: bf16, %[[M:.*]]: f32, %[[ZW:.*]]: f64, %{{.*}}: bf16):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: %[[Z:.*]] = arith.truncf %[[ZW]] : f64 to f32
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[W]], %[[M]] : f32
// CHECK-NEXT: %[[L:.*]] = math.log %[[Z]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.subf %[[D]], %[[L]] : f32
// CHECK-NEXT: arith.truncf %[[S]] : f32 to bf16
func.func @log_softmax(%x: tensor<2x4xbf16>) -> tensor<2x4xbf16> {
  %0 = titan.log_softmax %x dim 1 : tensor<2x4xbf16>
  return %0 : tensor<2x4xbf16>
}
