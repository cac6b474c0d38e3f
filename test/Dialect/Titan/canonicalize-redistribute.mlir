// RUN: titan-opt %s -canonicalize | FileCheck %s

titan.mesh @mesh ["fsdp"=4, "tp"=2]

// Redistributing to the placements the producer gave is a no-op.
// CHECK-LABEL: func.func @same_placements
func.func @same_placements(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // CHECK: %[[A:.*]] = titan.redistribute %{{.*}} to <@mesh, [S(0), R]>
  // CHECK-NOT: titan.redistribute
  // CHECK: return %[[A]]
  %0 = titan.redistribute %x to <@mesh, [S(0), R]> : tensor<8x4xf32>
  %1 = titan.redistribute %0 to <@mesh, [S(0), R]> : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// Only the last layout of a chain matters; the intermediate one disappears.
// CHECK-LABEL: func.func @chain
func.func @chain(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // CHECK-NEXT: %[[B:.*]] = titan.redistribute %arg0 to <@mesh, [R, S(1)]>
  // CHECK-NEXT: return %[[B]]
  %0 = titan.redistribute %x to <@mesh, [S(0), R]> : tensor<8x4xf32>
  %1 = titan.redistribute %0 to <@mesh, [R, S(1)]> : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// An intermediate layout that has other users stays.
// CHECK-LABEL: func.func @shared
func.func @shared(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  // CHECK-DAG: %[[A:.*]] = titan.redistribute %arg0 to <@mesh, [S(0), R]>
  // CHECK-DAG: %[[B:.*]] = titan.redistribute %arg0 to <@mesh, [R, S(1)]>
  // CHECK: return %[[A]], %[[B]]
  %0 = titan.redistribute %x to <@mesh, [S(0), R]> : tensor<8x4xf32>
  %1 = titan.redistribute %0 to <@mesh, [R, S(1)]> : tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}
