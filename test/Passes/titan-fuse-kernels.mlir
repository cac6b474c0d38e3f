// RUN: titan-opt %s --titan-fuse-kernels --split-input-file | FileCheck %s

// Host ops (matmul, collectives, reshape) stay; everything else goes into
// kernels. An op joins the group of its users when they are all in one
// group (silu into the reduction); a value used by two groups is a kernel
// of its own (%y); broadcasts are copied into every kernel that reads them;
// identical groups share one kernel (the two bias adds).

// CHECK-LABEL: func.func @train_step
// CHECK: %[[H:.*]] = titan.matmul %arg0, %arg1
// CHECK: %[[Y:.*]] = titan.launch @[[ADD:kernel_add]](%[[H]], %arg2) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = titan.launch @[[SUM:kernel_reduce_sum]](%[[Y]]) : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK: %[[G:.*]] = titan.all_reduce %[[S]]
// CHECK: %[[Z:.*]] = titan.launch @[[MUL:kernel_mul]](%[[Y]], %arg2)
// CHECK: %[[Z2:.*]] = titan.launch @[[ADD]](%[[H]], %arg2)
// CHECK: %[[R:.*]] = titan.reshape %[[Z2]]
// CHECK: %[[U:.*]] = titan.launch @[[NEG:kernel_neg]](%[[R]])
// CHECK: return %[[U]], %[[G]], %[[Z]]
// CHECK-NOT: titan.add
// CHECK-DAG: func.func private @[[NEG]](%{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {titan.kernel}
// CHECK-DAG: func.func private @[[ADD]](%[[A0:.*]]: tensor<4x8xf32>, %[[A1:.*]]: tensor<8xf32>) -> tensor<4x8xf32> attributes {titan.kernel}
// CHECK-DAG: func.func private @[[MUL]](%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8xf32>) -> tensor<4x8xf32> attributes {titan.kernel}
// CHECK-LABEL: func.func private @kernel_reduce_sum
// CHECK-NEXT: titan.silu
// CHECK-NEXT: titan.reduce_sum
// CHECK-NEXT: return
titan.mesh @mesh ["tp"=2]
func.func @train_step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) {
  %h = titan.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %bb = titan.broadcast_in_dim %b dims [1] : tensor<8xf32> -> tensor<4x8xf32>
  %y = titan.add %h, %bb : tensor<4x8xf32>
  %a = titan.silu %y : tensor<4x8xf32>
  %s = titan.reduce_sum %a dims [1] : tensor<4x8xf32> -> tensor<4xf32>
  %g = titan.all_reduce %s on @mesh ["tp"] sum : tensor<4xf32>
  %z = titan.mul %y, %bb : tensor<4x8xf32>
  %z2 = titan.add %h, %bb : tensor<4x8xf32>
  %r = titan.reshape %z2 : tensor<4x8xf32> -> tensor<4x8xf32>
  %u = titan.neg %r : tensor<4x8xf32>
  return %u, %g, %z : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>
}

// -----

// A splat constant is copied into the kernels that read it, and
// materialized by a kernel of its own for a host op; a dense constant is
// never copied.

// CHECK-LABEL: func.func @constants
// CHECK: %[[C:.*]] = titan.launch @[[SPLAT:.*]]() : () -> tensor<4x8xf32>
// CHECK: %[[M:.*]] = titan.matmul %[[C]], %arg1
// CHECK: %[[E:.*]] = titan.launch @[[ADD:.*]](%[[M]]) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[D:.*]] = titan.launch @[[DENSE:.*]]() : () -> tensor<2xf32>
// CHECK: return %[[E]], %[[D]]
// CHECK: func.func private @[[DENSE]]() -> tensor<2xf32> attributes {titan.kernel}
// CHECK: func.func private @[[ADD]](%{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {titan.kernel}
// CHECK-NEXT: titan.constant dense<2.000000e+00> : tensor<4x8xf32>
// CHECK-NEXT: titan.add
// CHECK: func.func private @[[SPLAT]]() -> tensor<4x8xf32> attributes {titan.kernel}
func.func @constants(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<2xf32>) {
  %two = titan.constant dense<2.0> : tensor<4x8xf32>
  %m = titan.matmul %two, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %e = titan.add %m, %two : tensor<4x8xf32>
  %d = titan.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %e, %d : tensor<4x8xf32>, tensor<2xf32>
}
