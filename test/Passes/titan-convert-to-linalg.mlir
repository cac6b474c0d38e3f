// RUN: titan-opt %s --titan-convert-to-linalg --split-input-file --verify-diagnostics | FileCheck %s

// A kernel of representative ops: every titan op becomes linalg, tensor,
// arith or math on tensors of the same types (but for sums, which
// accumulate in f64); results go into tensor.empty, never into an input.
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<8xbf16>, %[[IDS:.*]]: tensor<4xi64>, %[[T:.*]]: tensor<16x8xbf16>)
// CHECK-SAME: attributes {titan.kernel}
// CHECK-NOT: titan.
// CHECK: %[[EMB:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<4xi64>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK: tensor.extract %[[T]]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[EMB]] : tensor<4x8xbf16>, tensor<4x8xbf16>)
// CHECK: arith.addf
// CHECK: %[[SS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[SUM]] : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4xf64>)
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: %[[NORM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%[[SUM]], %[[W]], %[[SS]] : tensor<4x8xbf16>, tensor<8xbf16>, tensor<4xf64>)
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: math.rsqrt
// CHECK: %[[GELU:.*]] = linalg.generic {{.*}} ins(%[[NORM]] : tensor<4x8xbf16>)
// CHECK: math.erf
// CHECK: %[[SLICE:.*]] = tensor.extract_slice %[[GELU]][0, 1] [4, 4] [1, 2]
// CHECK-NOT: titan.
// CHECK: return %[[SLICE]]
func.func @kernel(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %ids: tensor<4xi64>, %table: tensor<16x8xbf16>) -> tensor<4x4xbf16> attributes {titan.kernel} {
  %e = titan.embedding %table, %ids : tensor<16x8xbf16>, tensor<4xi64> -> tensor<4x8xbf16>
  %h = titan.add %x, %e : tensor<4x8xbf16>
  %n = titan.rms_norm %h, %w eps 1.0e-05 : tensor<4x8xbf16>, tensor<8xbf16>
  %g = titan.gelu %n approximate none : tensor<4x8xbf16>
  %s = titan.slice %g [0, 1] to [4, 8] step [1, 2] : tensor<4x8xbf16> -> tensor<4x4xbf16>
  return %s : tensor<4x4xbf16>
}

// -----

// Outside a kernel, ops without a conversion stay (the host function keeps
// matmul for the runtime); those with one are converted.
// CHECK-LABEL: func.func @host
// CHECK: linalg.generic
// CHECK: titan.matmul
func.func @host(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %e = titan.exp %a : tensor<4x8xf32>
  %m = titan.matmul %e, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %m : tensor<4x2xf32>
}

// -----

// A kernel may not hold an op the conversion does not know.
func.func @kernel_with_matmul(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> attributes {titan.kernel} {
  // expected-error @+1 {{'titan.matmul' op cannot be converted to linalg: a kernel ('titan.kernel') may only hold elementwise, reduction, normalization, shape, embedding, RoPE and cross-entropy ops with static shapes}}
  %m = titan.matmul %a, %b : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %m : tensor<4x2xf32>
}

// -----

// Nor an op with a dynamic shape.
func.func @kernel_with_dynamic_shape(%a: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {titan.kernel} {
  // expected-error @+1 {{'titan.exp' op cannot be converted to linalg}}
  %e = titan.exp %a : tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}
