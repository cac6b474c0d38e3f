// RUN: titan-opt %s --split-input-file --titan-redistribute-to-collectives | FileCheck %s
// RUN: titan-opt %s --split-input-file --titan-redistribute-to-collectives | titan-opt --split-input-file --verify-each | FileCheck %s

// Each step of the placement algebra's plan becomes one collective over one
// mesh axis, in the plan's order; local steps slice and select on the rank's
// coordinate.

titan.mesh @mesh ["dp"=2, "tp"=4]

// CHECK-LABEL: func.func @gather_then_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[R:.*]] = titan.all_reduce %[[X]] on @mesh ["tp"] sum : tensor<4x8xf32>
// CHECK: %[[G:.*]] = titan.all_gather %[[R]] on @mesh ["dp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NOT: titan.local_redistribute
// CHECK: return %[[G]]
func.func @gather_then_reduce(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %0 = titan.local_redistribute %x of tensor<8x8xf32> from <@mesh, [S(0), P(sum)]> to <@mesh, [R, R]> : tensor<4x8xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

titan.mesh @mesh ["dp"=2, "tp"=4]

// A partial sum scattered onto the dim FSDP shards; a shard moved to another
// dim.
// CHECK-LABEL: func.func @scatter_and_all_to_all
// CHECK: titan.reduce_scatter %{{.*}} on @mesh ["dp"] dim 0 sum : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: titan.all_to_all %{{.*}} on @mesh ["tp"] split 1 concat 0 : tensor<8x8xf32> -> tensor<32x2xf32>
func.func @scatter_and_all_to_all(%g: tensor<8x8xf32>, %a: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<32x2xf32>) {
  %0 = titan.local_redistribute %g of tensor<8x8xf32> from <@mesh, [P(sum), R]> to <@mesh, [S(0), R]> : tensor<8x8xf32> -> tensor<4x8xf32>
  %1 = titan.local_redistribute %a of tensor<32x8xf32> from <@mesh, [R, S(0)]> to <@mesh, [R, S(1)]> : tensor<8x8xf32> -> tensor<32x2xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<32x2xf32>
}

// -----

titan.mesh @mesh ["tp"=2]

// R -> S keeps the rank's chunk: both chunks sliced, selected by the
// coordinate (last chunk first). R -> P(sum) keeps the value on
// coordinate 0 and zero elsewhere.
// CHECK-LABEL: func.func @local_steps
// CHECK: %[[I:.*]] = titan.axis_index on @mesh ["tp"] : tensor<i64>
// CHECK: %[[LAST:.*]] = titan.slice %{{.*}} [2, 0] to [4, 3] step [1, 1] : tensor<4x3xf32> -> tensor<2x3xf32>
// CHECK: %[[FIRST:.*]] = titan.slice %{{.*}} [0, 0] to [2, 3] step [1, 1] : tensor<4x3xf32> -> tensor<2x3xf32>
// CHECK: titan.compare eq, %[[I]]
// CHECK: titan.select %{{.*}}, %[[FIRST]], %[[LAST]]
// CHECK: %[[J:.*]] = titan.axis_index on @mesh ["tp"] : tensor<i64>
// CHECK: titan.compare eq, %[[J]]
// CHECK: %[[Z:.*]] = titan.constant dense<0.000000e+00> : tensor<4x3xf32>
// CHECK: titan.select %{{.*}}, %{{.*}}, %[[Z]]
func.func @local_steps(%x: tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %0 = titan.local_redistribute %x of tensor<4x3xf32> from <@mesh, [R]> to <@mesh, [S(0)]> : tensor<4x3xf32> -> tensor<2x3xf32>
  %1 = titan.local_redistribute %x of tensor<4x3xf32> from <@mesh, [R]> to <@mesh, [P(sum)]> : tensor<4x3xf32> -> tensor<4x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<4x3xf32>
}
