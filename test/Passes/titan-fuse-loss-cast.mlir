// RUN: titan-opt %s --titan-fuse-loss-cast --split-input-file | FileCheck %s

// The loss of bf16 logits widened to f32, and its gradient narrowed back
// (the cast's VJP), as titan-build-train-step writes them: both read the
// bf16 logits, and no f32 copy is left.
// CHECK-LABEL: func.func @mixed_precision_loss
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xbf16>, %[[L:.*]]: tensor<4xi64>, %[[G:.*]]: tensor<f32>)
// CHECK-NEXT: %[[LOSS:.*]] = titan.cross_entropy %[[X]], %[[L]] ignore_index 3 : tensor<4x16xbf16>, tensor<4xi64> -> tensor<f32>
// CHECK-NEXT: %[[DX:.*]] = titan.cross_entropy_grad %[[X]], %[[L]], %[[G]] ignore_index 3 {replicated_vocab} : tensor<4x16xbf16>, tensor<4xi64>, tensor<f32>
// CHECK-NEXT: return %[[LOSS]], %[[DX]]
func.func @mixed_precision_loss(%x: tensor<4x16xbf16>, %labels: tensor<4xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<4x16xbf16>) {
  %wide = titan.cast %x : tensor<4x16xbf16> to tensor<4x16xf32>
  %loss = titan.cross_entropy %wide, %labels ignore_index 3 : tensor<4x16xf32>, tensor<4xi64> -> tensor<f32>
  %dwide = titan.cross_entropy_grad %wide, %labels, %g ignore_index 3 {replicated_vocab} : tensor<4x16xf32>, tensor<4xi64>, tensor<f32>
  %dx = titan.cast %dwide : tensor<4x16xf32> to tensor<4x16xbf16>
  return %loss, %dx : tensor<f32>, tensor<4x16xbf16>
}

// -----

// Left alone: an f32 gradient another op reads too (it stays f32; the loss
// still reads the bf16 logits), and a widening to f64 (whose loss is f64).
// CHECK-LABEL: func.func @gradient_read_twice
// CHECK: %[[WIDE:.*]] = titan.cast
// CHECK-NEXT: titan.cross_entropy %arg0, %arg1 : tensor<4x16xbf16>
// CHECK-NEXT: %[[DW:.*]] = titan.cross_entropy_grad %[[WIDE]], %arg1, %arg2 : tensor<4x16xf32>
// CHECK-NEXT: titan.cast %[[DW]] : tensor<4x16xf32> to tensor<4x16xbf16>
func.func @gradient_read_twice(%x: tensor<4x16xbf16>, %labels: tensor<4xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<4x16xbf16>, tensor<4x16xf32>) {
  %wide = titan.cast %x : tensor<4x16xbf16> to tensor<4x16xf32>
  %loss = titan.cross_entropy %wide, %labels : tensor<4x16xf32>, tensor<4xi64> -> tensor<f32>
  %dwide = titan.cross_entropy_grad %wide, %labels, %g : tensor<4x16xf32>, tensor<4xi64>, tensor<f32>
  %dx = titan.cast %dwide : tensor<4x16xf32> to tensor<4x16xbf16>
  return %loss, %dx, %dwide : tensor<f32>, tensor<4x16xbf16>, tensor<4x16xf32>
}

// CHECK-LABEL: func.func @f64_loss
// CHECK: titan.cross_entropy %{{.*}}, %{{.*}} : tensor<4x16xf64>, tensor<4xi64> -> tensor<f64>
func.func @f64_loss(%x: tensor<4x16xf32>, %labels: tensor<4xi64>) -> tensor<f64> {
  %wide = titan.cast %x : tensor<4x16xf32> to tensor<4x16xf64>
  %loss = titan.cross_entropy %wide, %labels : tensor<4x16xf64>, tensor<4xi64> -> tensor<f64>
  return %loss : tensor<f64>
}
