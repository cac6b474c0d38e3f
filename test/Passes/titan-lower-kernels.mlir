// RUN: titan-opt %s --titan-lower-kernels | FileCheck %s

// Kernels become loop nests on memrefs in destination-passing style: inputs,
// then one buffer per result, then the buffers the kernel needs inside (the
// rms_norm's row sums) as scratch parameters; nothing is allocated. The host
// function keeps its tensors. Elementwise producers fuse into one loop nest
// (exp then scale). titan.in_place pairs an input with the output parameter
// that may share its buffer: every element of the output reads only the same
// element of the input, and nothing reads the input afterwards (the norm's
// reduction reads it before).

// CHECK-LABEL: func.func @train_step
// CHECK: titan.launch @kernel_scale(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>

// CHECK-LABEL: func.func private @kernel_scale
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK-SAME: titan.in_place = array<i64: 0, 1>
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} ins(%[[X]] : memref<4x8xf32>) outs(%[[OUT]] : memref<4x8xf32>)
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return

// CHECK-LABEL: func.func private @kernel_norm
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[W:.*]]: memref<8xf32>, %[[OUT:.*]]: memref<4x8xf32>, %[[SUMS:.*]]: memref<4xf32>)
// CHECK-SAME: titan.in_place = array<i64: 0, 2>
// CHECK-NOT: memref.alloc
// CHECK: linalg.fill {{.*}} outs(%[[SUMS]] : memref<4xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[X]] : memref<4x8xf32>) outs(%[[SUMS]] : memref<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[W]], %[[SUMS]] : {{.*}}) outs(%[[OUT]] : memref<4x8xf32>)
// CHECK: math.rsqrt

// A result that reads its input through a transpose cannot overwrite it.
// CHECK-LABEL: func.func private @kernel_transpose
// CHECK-SAME: titan.in_place = array<i64>
func.func @train_step(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) {
  %a = titan.launch @kernel_scale(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = titan.launch @kernel_norm(%a, %w) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = titan.constant dense<1.0> : tensor<8x8xf32>
  %t = titan.launch @kernel_transpose(%s) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %a, %n, %t : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}
func.func private @kernel_scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {titan.kernel} {
  %0 = titan.exp %x : tensor<4x8xf32>
  %1 = titan.scale %0 by 2.0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
func.func private @kernel_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> attributes {titan.kernel} {
  %0 = titan.rms_norm %x, %w eps 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}
func.func private @kernel_transpose(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {titan.kernel} {
  %0 = titan.transpose %x [1, 0] : tensor<8x8xf32> -> tensor<8x8xf32>
  %1 = titan.neg %0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
