// RUN: titan-opt %s --titan-convert-to-linalg | FileCheck %s

// A gather: one parallel generic over [ids..., dim] reads the id through
// the projection onto the ids' loops and extracts table[id, d].

// CHECK-DAG: #[[IDS:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[TABLE:.*]]: tensor<16x8xbf16>, %[[IDS_ARG:.*]]: tensor<2x3xi32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3x8xbf16>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[IDS]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[IDS_ARG]] : tensor<2x3xi32>) outs(%[[E]] : tensor<2x3x8xbf16>)
// CHECK-NEXT: ^bb0(%[[ID:.*]]: i32, %{{.*}}: bf16):
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK-NEXT: %[[COL:.*]] = linalg.index 2 : index
// CHECK-NEXT: %[[V:.*]] = tensor.extract %[[TABLE]][%[[ROW]], %[[COL]]] : tensor<16x8xbf16>
// CHECK-NEXT: linalg.yield %[[V]] : bf16
// CHECK: return %[[R]]
func.func @embedding(%table: tensor<16x8xbf16>, %ids: tensor<2x3xi32>) -> tensor<2x3x8xbf16> {
  %0 = titan.embedding %table, %ids : tensor<16x8xbf16>, tensor<2x3xi32> -> tensor<2x3x8xbf16>
  return %0 : tensor<2x3x8xbf16>
}
