// RUN: titan-opt %s --titan-convert-to-linalg | FileCheck %s

// One parallel generic: the element, its partner in the rotated pair and
// the pair's cos and sin, each through an affine map of the head_dim loop;
// x c - partner s for the first of a pair, x c + partner s for the second.

// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ODD:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3 - (d3 mod 2) * 2 + 1)>
// CHECK-DAG: #[[PAIR:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3 floordiv 2)>
// CHECK-DAG: #[[HALF:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, (d3 + 4) mod 8)>
// CHECK-DAG: #[[HALFPAIR:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3 mod 4)>

// Pairs (2j, 2j+1); bf16 input with f32 tables computes in f32.
// CHECK-LABEL: func.func @interleaved
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x3x8xbf16>, %[[COS:.*]]: tensor<4x4xf32>, %[[SIN:.*]]: tensor<4x4xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ODD]], #[[PAIR]], #[[PAIR]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[X]], %[[X]], %[[COS]], %[[SIN]] :
// CHECK-NEXT: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[C:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT: %[[AW:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT: %[[BW:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT: %[[D:.*]] = linalg.index 3 : index
// CHECK-NEXT: %[[PARITY:.*]] = arith.remui %[[D]], %[[C2]] : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[PARITY]], %[[C0]] : index
// CHECK-NEXT: %[[OWN:.*]] = arith.mulf %[[AW]], %[[C]] : f32
// CHECK-NEXT: %[[OTHER:.*]] = arith.mulf %[[BW]], %[[S]] : f32
// CHECK-NEXT: %[[SECOND:.*]] = arith.addf %[[OWN]], %[[OTHER]] : f32
// CHECK-NEXT: %[[FIRSTV:.*]] = arith.subf %[[OWN]], %[[OTHER]] : f32
// CHECK-NEXT: %[[V:.*]] = arith.select %[[FIRST]], %[[FIRSTV]], %[[SECOND]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[T]] : bf16
// CHECK: return %[[R]]
func.func @interleaved(%x: tensor<2x4x3x8xbf16>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) -> tensor<2x4x3x8xbf16> {
  %0 = titan.rope %x, %cos, %sin interleaved : tensor<2x4x3x8xbf16>, tensor<4x4xf32>
  return %0 : tensor<2x4x3x8xbf16>
}

// Pairs (j, j + 4).
// CHECK-LABEL: func.func @half
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: linalg.generic {indexing_maps = [#[[ID4]], #[[HALF]], #[[HALFPAIR]], #[[HALFPAIR]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK: %[[D:.*]] = linalg.index 3 : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi ult, %[[D]], %[[C4]] : index
// CHECK: arith.select %[[FIRST]]
func.func @half(%x: tensor<2x4x3x8xf32>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) -> tensor<2x4x3x8xf32> {
  %0 = titan.rope %x, %cos, %sin half : tensor<2x4x3x8xf32>, tensor<4x4xf32>
  return %0 : tensor<2x4x3x8xf32>
}
