// RUN: titan-opt %s --titan-fuse-kernels --split-input-file | FileCheck %s
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --split-input-file | FileCheck %s --check-prefix=LOOPS
// RUN: titan-opt %s --titan-fuse-kernels=merge-siblings=false --split-input-file | FileCheck %s --check-prefix=APART

// SwiGLU's backward: the gradients of silu(a) * b, db = dh * silu(a) and
// da = (dh * b) * silu'(a), are two elementwise groups over one shape that
// both read dh and a. They are launched as one kernel where the first
// was (the host op between them reads db), with both results; the gate's
// ops, which both read, are computed once in it; its loop nests become one
// that reads dh, b and a once.
// CHECK-LABEL: func.func @swiglu_grad
// CHECK-NEXT: %[[K:.*]]:2 = titan.launch @[[KERNEL:kernel_mul]](%arg0, %arg2, %arg1) : (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>)
// CHECK-NEXT: %[[X:.*]] = titan.matmul %[[K]]#0, %arg3
// CHECK-NEXT: return %[[X]], %[[K]]#1
// CHECK: func.func private @[[KERNEL]]
// CHECK-COUNT-1: titan.silu
// CHECK-NOT: titan.silu
// CHECK: return

// LOOPS-LABEL: func.func private @kernel_mul
// LOOPS-SAME: (%[[DH:.*]]: memref<4x8xbf16>, %[[B:.*]]: memref<4x8xbf16>, %[[A:.*]]: memref<4x8xbf16>, %[[DB:.*]]: memref<4x8xbf16>, %[[DA:.*]]: memref<4x8xbf16>)
// LOOPS: linalg.generic {{.*}} ins(%[[DH]], %[[B]], %[[A]] : {{.*}}) outs(%[[DA]], %[[DB]] : {{.*}})
// LOOPS-NOT: linalg.generic
// LOOPS: return

// Without merge-siblings, two kernels.
// APART-LABEL: func.func @swiglu_grad
// APART-COUNT-2: titan.launch
func.func @swiglu_grad(%dh: tensor<4x8xbf16>, %a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %s = titan.silu %a : tensor<4x8xbf16>
  %db = titan.mul %dh, %s : tensor<4x8xbf16>
  %x = titan.matmul %db, %w : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %g = titan.mul %dh, %b : tensor<4x8xbf16>
  %sg = titan.sigmoid %a : tensor<4x8xbf16>
  %t = titan.mul %s, %sg : tensor<4x8xbf16>
  %u = titan.sub %s, %t : tensor<4x8xbf16>
  %v = titan.add %sg, %u : tensor<4x8xbf16>
  %da = titan.mul %g, %v : tensor<4x8xbf16>
  return %x, %da : tensor<4x8xbf16>, tensor<4x8xbf16>
}

// -----

// Not merged: the second group reads what a host op computes from the
// first's result (it could not be launched with it), a group that reads
// the common input broadcast (another shape), and a reduction.
// CHECK-LABEL: func.func @not_siblings
// CHECK-COUNT-4: titan.launch
// CHECK-NOT: titan.launch
// CHECK: return
func.func @not_siblings(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %r: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %e = titan.exp %x : tensor<4x8xf32>
  %y = titan.matmul %e, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %z = titan.add %x, %y : tensor<4x8xf32>
  %rb = titan.broadcast_in_dim %r dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  %n = titan.mul %rb, %rb : tensor<4x8xf32>
  %sq = titan.mul %x, %x : tensor<4x8xf32>
  %s = titan.reduce_sum %sq dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %y, %z, %n, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}

// -----

// A slice a host op reads (materialized, a kernel of its own) and a
// sibling copies: the second compare's group, merged into the first's and
// launched before the second slice's kernel, computes that slice itself
// from %a rather than reading the later kernel's result (BART's source and
// target halves looked up in one padded table, under FSDP: "operand #0
// does not dominate this use").
// CHECK-LABEL: func.func @copied_slice_launched_later
// CHECK-NEXT: %[[X:.*]] = titan.launch @kernel_slice{{.*}}(%arg0)
// CHECK-NEXT: %[[GX:.*]] = titan.all_gather %[[X]]
// CHECK-NEXT: %[[C:.*]]:2 = titan.launch @kernel_compare(%arg0, %arg1) : (tensor<2x32xi64>, tensor<2x16xi64>) -> (tensor<2x16xi1>, tensor<2x16xi1>)
// CHECK-NEXT: %[[Y:.*]] = titan.launch @kernel_slice{{.*}}(%arg0)
// CHECK-NEXT: %[[GY:.*]] = titan.all_gather %[[Y]]
// CHECK-NEXT: return %[[GX]], %[[C]]#0, %[[GY]], %[[C]]#1
titan.mesh @mesh ["dp"=2]
func.func @copied_slice_launched_later(%a: tensor<2x32xi64>, %s: tensor<2x16xi64>) -> (tensor<4x16xi64>, tensor<2x16xi1>, tensor<4x16xi64>, tensor<2x16xi1>) {
  %x = titan.slice %a [0, 0] to [2, 16] step [1, 1] : tensor<2x32xi64> -> tensor<2x16xi64>
  %gx = titan.all_gather %x on @mesh ["dp"] dim 0 : tensor<2x16xi64> -> tensor<4x16xi64>
  %cx = titan.compare eq, %x, %s : tensor<2x16xi64> -> tensor<2x16xi1>
  %y = titan.slice %a [0, 16] to [2, 32] step [1, 1] : tensor<2x32xi64> -> tensor<2x16xi64>
  %gy = titan.all_gather %y on @mesh ["dp"] dim 0 : tensor<2x16xi64> -> tensor<4x16xi64>
  %cy = titan.compare eq, %y, %s : tensor<2x16xi64> -> tensor<2x16xi1>
  return %gx, %cx, %gy, %cy : tensor<4x16xi64>, tensor<2x16xi1>, tensor<4x16xi64>, tensor<2x16xi1>
}
