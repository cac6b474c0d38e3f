// RUN: titan-opt %s --titan-convert-to-linalg | mlir-opt --linalg-fuse-elementwise-ops --canonicalize --cse | FileCheck %s

// What the conversion produces fuses: broadcasts (also of size-1 dims),
// transposes, splat constants and elementwise chains fold into one generic
// per reduction boundary, each op still rounding to bf16 where it did.

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ROW1:.*]] = affine_map<(d0, d1) -> (d0, 0)>

// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[Y:.*]]: tensor<8x4xbf16>, %[[B:.*]]: tensor<8xbf16>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[T]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[B]], %[[Y]] :
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: math.exp
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.mulf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @swiglu(%x: tensor<4x8xbf16>, %y: tensor<8x4xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> attributes {titan.kernel} {
  %bb = titan.broadcast_in_dim %b dims [1] : tensor<8xbf16> -> tensor<4x8xbf16>
  %xb = titan.add %x, %bb : tensor<4x8xbf16>
  %s = titan.silu %xb : tensor<4x8xbf16>
  %t = titan.transpose %y [1, 0] : tensor<8x4xbf16> -> tensor<4x8xbf16>
  %r = titan.mul %s, %t : tensor<4x8xbf16>
  return %r : tensor<4x8xbf16>
}

// Softmax as the importer writes it by hand: the keepdim reductions'
// broadcasts back (size-1 dims read at index 0) fold into their consumers,
// with no reshape. (exp(x - max) has two users, so upstream fusion keeps it
// a generic of its own: 4 generics where titan.softmax makes 3.) The sum
// accumulates in f64; its rounding to f32 fuses into the division.
// CHECK-LABEL: func.func @softmax_by_hand
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[M:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x1xf32>)
// CHECK: arith.maximumf
// CHECK: %[[E:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW1]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[M]] : tensor<4x8xf32>, tensor<4x1xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[E]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x1xf64>)
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW1]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[E]], %[[S]] : tensor<4x8xf32>, tensor<4x1xf64>)
// CHECK: %[[Z:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK: arith.divf %{{.*}}, %[[Z]] : f32
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.collapse_shape
// CHECK: return %[[P]]
func.func @softmax_by_hand(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {titan.kernel} {
  %m = titan.reduce_max %x dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %mb = titan.broadcast_in_dim %m dims [0, 1] : tensor<4x1xf32> -> tensor<4x8xf32>
  %d = titan.sub %x, %mb : tensor<4x8xf32>
  %e = titan.exp %d : tensor<4x8xf32>
  %z = titan.reduce_sum %e dims [1] keepdim : tensor<4x8xf32> -> tensor<4x1xf32>
  %zb = titan.broadcast_in_dim %z dims [0, 1] : tensor<4x1xf32> -> tensor<4x8xf32>
  %p = titan.div %e, %zb : tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// A norm followed by a scale by a splat constant: the constant folds into
// the norm's elementwise generic (which reads the f64 sum of squares).
// CHECK-LABEL: func.func @rms_norm_scaled
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<2x3xf64>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: math.rsqrt
// CHECK: arith.mulf %{{.*}}, %[[TWO]] : f32
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill ins(%[[TWO]]
// CHECK: return %[[R]]
func.func @rms_norm_scaled(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> tensor<2x3x8xf32> attributes {titan.kernel} {
  %n = titan.rms_norm %x, %w eps 1.0e-05 : tensor<2x3x8xf32>, tensor<8xf32>
  %c = titan.constant dense<2.0> : tensor<2x3x8xf32>
  %r = titan.mul %n, %c : tensor<2x3x8xf32>
  return %r : tensor<2x3x8xf32>
}
