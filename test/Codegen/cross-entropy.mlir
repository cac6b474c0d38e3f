// RUN: titan-opt %s --titan-convert-to-linalg | FileCheck %s

// Stable row statistics (max in f32, sum of exp(x - max) accumulated in
// f64); the loss reduces over the rows into a 0-d f64 sum and an i64 count
// of the rows not ignored, and divides in f32 (0 / 0 = NaN when every label
// is ignored); the gradient is one elementwise generic, zero on ignored
// rows. f64 sums are rounded to f32 where they are read.

// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[ALL1:.*]] = affine_map<(d0) -> ()>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<() -> ()>
// CHECK-DAG: #[[ALL2:.*]] = affine_map<(d0, d1) -> ()>

// CHECK-LABEL: func.func @loss
// CHECK-SAME: (%[[LOGITS:.*]]: tensor<6x32xbf16>, %[[LABELS:.*]]: tensor<6xi64>)
// CHECK-DAG: %[[IGNORE:.*]] = arith.constant -100 : i64
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[FZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[DZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[LOGITS]] : tensor<6x32xbf16>) outs(%{{.*}} : tensor<6xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[LOGITS]], %[[MAX]] :
// CHECK-SAME: outs(%{{.*}} : tensor<6xf64>)
// CHECK: math.exp
// CHECK-NEXT: arith.extf %{{.*}} : f32 to f64
// CHECK-NEXT: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: %[[COUNT_INIT:.*]] = linalg.fill ins(%[[ZERO]] : i64) outs(%{{.*}} : tensor<i64>)
// CHECK: %[[TOTAL_INIT:.*]] = linalg.fill ins(%[[DZERO]] : f64) outs(%{{.*}} : tensor<f64>)
// CHECK: %[[RED:.*]]:2 = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]], #[[ID1]], #[[ALL1]], #[[ALL1]]], iterator_types = ["reduction"]} ins(%[[LABELS]], %[[MAX]], %[[SUM]] : tensor<6xi64>, tensor<6xf32>, tensor<6xf64>) outs(%[[COUNT_INIT]], %[[TOTAL_INIT]] : tensor<i64>, tensor<f64>)
// CHECK-NEXT: ^bb0(%[[L:.*]]: i64, %[[M:.*]]: f32, %[[ZW:.*]]: f64, %[[CNT:.*]]: i64, %[[TOT:.*]]: f64):
// CHECK-NEXT: %[[COUNTED:.*]] = arith.cmpi ne, %[[L]], %[[IGNORE]] : i64
// CHECK-NEXT: %[[ONE:.*]] = arith.extui %[[COUNTED]] : i1 to i64
// CHECK-NEXT: %[[NEWCNT:.*]] = arith.addi %[[CNT]], %[[ONE]] : i64
// CHECK-NEXT: %[[SAFE:.*]] = arith.select %[[COUNTED]], %[[L]], %[[ZERO]] : i64
// CHECK-NEXT: %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[J:.*]] = arith.index_cast %[[SAFE]] : i64 to index
// CHECK-NEXT: %[[PICK:.*]] = tensor.extract %[[LOGITS]][%[[I]], %[[J]]] : tensor<6x32xbf16>
// CHECK-NEXT: %[[PICKW:.*]] = arith.extf %[[PICK]] : bf16 to f32
// CHECK-NEXT: %[[Z:.*]] = arith.truncf %[[ZW]] : f64 to f32
// CHECK-NEXT: %[[LOGZ:.*]] = math.log %[[Z]] : f32
// CHECK-NEXT: %[[LSE:.*]] = arith.addf %[[M]], %[[LOGZ]] : f32
// CHECK-NEXT: %[[NLL:.*]] = arith.subf %[[LSE]], %[[PICKW]] : f32
// CHECK-NEXT: %[[TERM:.*]] = arith.select %[[COUNTED]], %[[NLL]], %[[FZERO]] : f32
// CHECK-NEXT: %[[TERMW:.*]] = arith.extf %[[TERM]] : f32 to f64
// CHECK-NEXT: %[[NEWTOT:.*]] = arith.addf %[[TOT]], %[[TERMW]] : f64
// CHECK-NEXT: linalg.yield %[[NEWCNT]], %[[NEWTOT]] : i64, f64
// CHECK: %[[LOSS:.*]] = linalg.generic {indexing_maps = [#[[SCALAR]], #[[SCALAR]], #[[SCALAR]]], iterator_types = []} ins(%[[RED]]#1, %[[RED]]#0 : tensor<f64>, tensor<i64>)
// CHECK-NEXT: ^bb0(%[[TW:.*]]: f64, %[[C:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[TW]] : f64 to f32
// CHECK-NEXT: %[[CF:.*]] = arith.sitofp %[[C]] : i64 to f32
// CHECK-NEXT: arith.divf %[[T]], %[[CF]] : f32
// CHECK: return %[[LOSS]]
func.func @loss(%logits: tensor<6x32xbf16>, %labels: tensor<6xi64>) -> tensor<f32> {
  %0 = titan.cross_entropy %logits, %labels : tensor<6x32xbf16>, tensor<6xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @loss_grad
// CHECK-SAME: (%[[LOGITS:.*]]: tensor<6x32xf32>, %[[LABELS:.*]]: tensor<6xi32>, %[[G:.*]]: tensor<f32>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[IGNORE:.*]] = arith.constant 0 : i32
// CHECK: %[[COUNT:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ALL1]]], iterator_types = ["reduction"]} ins(%[[LABELS]] : tensor<6xi32>) outs(%{{.*}} : tensor<i64>)
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<6xf64>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW]], #[[ROW]], #[[ROW]], #[[ALL2]], #[[ALL2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[LOGITS]], %[[LABELS]], %[[MAX]], %[[SUM]], %[[G]], %[[COUNT]] : tensor<6x32xf32>, tensor<6xi32>, tensor<6xf32>, tensor<6xf64>, tensor<f32>, tensor<i64>)
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: i32, %{{.*}}: f32, %[[ZW:.*]]: f64, %{{.*}}: f32, %{{.*}}: i64, %{{.*}}: f32):
// CHECK-NEXT: arith.truncf %[[ZW]] : f64 to f32
// CHECK: arith.maxsi %{{.*}}, %[[ONE]] : i64
// CHECK: %[[COL:.*]] = linalg.index 1 : index
// CHECK: arith.index_cast %[[COL]] : index to i32
// CHECK: arith.cmpi ne, %{{.*}}, %[[IGNORE]] : i32
// CHECK: return %[[R]]
func.func @loss_grad(%logits: tensor<6x32xf32>, %labels: tensor<6xi32>, %g: tensor<f32>) -> tensor<6x32xf32> {
  %0 = titan.cross_entropy_grad %logits, %labels, %g ignore_index 0 : tensor<6x32xf32>, tensor<6xi32>, tensor<f32>
  return %0 : tensor<6x32xf32>
}
