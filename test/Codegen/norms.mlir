// RUN: titan-opt %s --titan-convert-to-linalg | FileCheck %s

// Norms over the last dim: per-row reductions, then one elementwise generic
// that reads them through the row projection and recomputes the per-row
// scale rsqrt(sum / D + eps) inline; column sums (weight gradients) reduce
// over the rows. Sums accumulate in f64 and are rounded to f32 where they
// are read (column sums by an elementwise generic of their own).

// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[COL3:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW2:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[COL2:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>

// rms_norm: one reduction and one elementwise generic.
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8xf32>, %[[W:.*]]: tensor<8xf32>)
// CHECK-DAG: %[[D:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f64) outs(%{{.*}} : tensor<2x3xf64>)
// CHECK: %[[SS:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ROW3]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<2x3x8xf32>) outs(%[[INIT]] : tensor<2x3xf64>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f64):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[IN]], %[[IN]] : f32
// CHECK-NEXT: %[[SQW:.*]] = arith.extf %[[SQ]] : f32 to f64
// CHECK-NEXT: arith.addf %[[ACC]], %[[SQW]] : f64
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[COL3]], #[[ROW3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[W]], %[[SS]] :
// CHECK-NEXT: ^bb0(%[[XI:.*]]: f32, %[[WI:.*]]: f32, %[[SW:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.truncf %[[SW]] : f64 to f32
// CHECK-NEXT: %[[MS:.*]] = arith.divf %[[S]], %[[D]] : f32
// CHECK-NEXT: %[[V:.*]] = arith.addf %[[MS]], %[[EPS]] : f32
// CHECK-NEXT: %[[SC:.*]] = math.rsqrt %[[V]] : f32
// CHECK-NEXT: %[[N:.*]] = arith.mulf %[[XI]], %[[SC]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[N]], %[[WI]] : f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @rms_norm(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %0 = titan.rms_norm %x, %w eps 1.0e-05 : tensor<2x3x8xf32>, tensor<8xf32>
  return %0 : tensor<2x3x8xf32>
}

// layer_norm: sum, sum of squared deviations (two passes, biased
// variance), elementwise; bf16 statistics accumulate in f64 and are
// computed on in f32.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4xf64>)
// CHECK: %[[DEV:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]} ins(%{{.*}}, %[[SUM]] : tensor<4x8xbf16>, tensor<4xf64>) outs(%{{.*}} : tensor<4xf64>)
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[COL2]], #[[COL2]], #[[ROW2]], #[[ROW2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[SUM]], %[[DEV]] : tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<4xf64>, tensor<4xf64>)
// CHECK: math.rsqrt
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @layer_norm(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = titan.layer_norm %x, %w, %b eps 1.0e-05 : tensor<4x8xbf16>, tensor<8xbf16>
  return %0 : tensor<4x8xbf16>
}

// rms_norm_grad: per row sum(x^2) and sum(dy w x) in one generic, dx, and
// dw reduced over the rows (in f64, then rounded to f32).
// CHECK-LABEL: func.func @rms_norm_grad
// CHECK: %[[ROWS:.*]]:2 = linalg.generic {indexing_maps = [#[[ID2]], #[[COL2]], #[[ID2]], #[[ROW2]], #[[ROW2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<4xf64>, tensor<4xf64>)
// CHECK: %[[DX:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[COL2]], #[[ID2]], #[[ROW2]], #[[ROW2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]} ins({{.*}}, %[[ROWS]]#0, %[[ROWS]]#1 :
// CHECK: %[[DW64:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ROW2]], #[[COL2]]], iterator_types = ["reduction", "parallel"]} ins({{.*}}, %[[ROWS]]#0 :
// CHECK-SAME: outs(%{{.*}} : tensor<8xf64>)
// CHECK: %[[DW:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[DW64]] : tensor<8xf64>) outs(%{{.*}} : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[T:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: arith.truncf %[[T]] : f64 to f32
// CHECK: return %[[DX]], %[[DW]]
func.func @rms_norm_grad(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %dx, %dw = titan.rms_norm_grad %x, %w, %dy eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  return %dx, %dw : tensor<4x8xf32>, tensor<8xf32>
}

// layer_norm_grad: the two moments, per row sum(g) and sum(g xhat), dx, and
// dw, db reduced over the rows in one generic (in f64), each then rounded to
// f32 by an elementwise generic.
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<4xf64>)
// CHECK: %[[DEV:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<4xf64>)
// CHECK: %[[G:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<4xf64>, tensor<4xf64>)
// CHECK: %[[DX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[SUM]], %[[DEV]], %[[G]]#0, %[[G]]#1 :
// CHECK: %[[P:.*]]:2 = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]} ins(%{{.*}}, %{{.*}}, %[[SUM]], %[[DEV]] :
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<8xf64>, tensor<8xf64>)
// CHECK: %[[DW:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[P]]#0 : tensor<8xf64>) outs(%{{.*}} : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[T:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: arith.truncf %[[T]] : f64 to f32
// CHECK: %[[DB:.*]] = linalg.generic {indexing_maps = [#[[ID1]], #[[ID1]]], iterator_types = ["parallel"]} ins(%[[P]]#1 : tensor<8xf64>) outs(%{{.*}} : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[T:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: arith.truncf %[[T]] : f64 to f32
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @layer_norm_grad(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dw, %db = titan.layer_norm_grad %x, %w, %dy eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32>
  return %dx, %dw, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}
