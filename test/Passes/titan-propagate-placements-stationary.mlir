// RUN: titan-opt %s --split-input-file --titan-propagate-placements --titan-materialize-redistributes | FileCheck %s --check-prefix=FREE
// RUN: titan-opt %s --split-input-file --titan-propagate-placements="stationary-param-axes=tp stationary-input-axes=dp" --titan-materialize-redistributes | FileCheck %s

// Stationary axes: tensor parallelism keeps the weights sharded over "tp"
// and data parallelism keeps each rank on its own tokens over "dp", even
// where moving them is the cheaper redistribution.

// The weight is small next to the activation, so by bytes alone gathering
// the weight is cheaper than gathering the activation's sequence. With "tp"
// stationary for parameters the weight stays column-sharded and the
// activation is gathered instead (Megatron's column-parallel matmul).

titan.mesh @mesh ["dp"=1, "tp"=2]
// FREE-LABEL: func.func @column_parallel(
// FREE: titan.redistribute %arg1 to <@mesh, [R, R]>
// CHECK-LABEL: func.func @column_parallel(
// CHECK: %[[X:.*]] = titan.redistribute %arg0 to <@mesh, [R, R]>
// CHECK-NEXT: titan.matmul %[[X]], %arg1 transpose_rhs {titan.placements = [#titan.placements<@mesh, [R, S(2)]>]}
// CHECK-NOT: titan.redistribute %arg1
func.func @column_parallel(
    %x: tensor<8x64x32xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R, S(1)]>},
    %w: tensor<16x32xf32> {titan.name = "w", titan.role = "param", titan.placements = #titan.placements<@mesh, [R, S(0)]>})
    -> tensor<8x64x16xf32> {
  %y = titan.matmul %x, %w transpose_rhs : tensor<8x64x32xf32>, tensor<16x32xf32> -> tensor<8x64x16xf32>
  return %y : tensor<8x64x16xf32>
}

// -----

// Few tokens and a large weight: by bytes alone gathering the tokens' batch
// over "dp" is cheaper than all-reducing the weight's gradient-sized
// partial product. With "dp" stationary for inputs each rank keeps its own
// batch and the weight is gathered (FSDP).

titan.mesh @mesh ["dp"=2, "tp"=1]
// FREE-LABEL: func.func @data_parallel(
// FREE: titan.redistribute %arg0 to <@mesh, [R, R]>
// CHECK-LABEL: func.func @data_parallel(
// CHECK: %[[W:.*]] = titan.redistribute %arg1 to <@mesh, [R, R]>
// CHECK-NEXT: titan.matmul %arg0, %[[W]] transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), R]>]}
// CHECK-NOT: titan.redistribute %arg0
func.func @data_parallel(
    %x: tensor<4x32xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %w: tensor<256x32xf32> {titan.name = "w", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), R]>})
    -> tensor<4x256xf32> {
  %y = titan.matmul %x, %w transpose_rhs : tensor<4x32xf32>, tensor<256x32xf32> -> tensor<4x256xf32>
  return %y : tensor<4x256xf32>
}
