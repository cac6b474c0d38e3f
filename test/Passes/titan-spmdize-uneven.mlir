// RUN: titan-opt %s --titan-spmdize | FileCheck %s
// RUN: titan-opt %s --titan-spmdize | titan-opt --verify-each > /dev/null

// Uneven shards (torch.chunk): 5 rows over 2 ranks are 3 and 2, so every
// rank holds 3 (the last one padded) and the global shape is recorded. An op
// that reduces over the uneven dim first replaces the padding by the
// identity of its reduction, from the rank's chunk size (3 on coordinate 0,
// 2 on 1); a mean divides by the global count (the local mean of 3 scaled
// by 3/5); a loss reads labels in the padding as the ignore index.

titan.mesh @mesh ["dp"=2]

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32> {titan.global_shape = array<i64: 5, 4>, titan.placements = #titan.placements<@mesh, [S(0)]>})
// The FLOPs rank 1 spends on its padding row: a fifth of each reduction's 20.
// CHECK-SAME: attributes {titan.padding_flops = array<i64: 0, 12>}
// CHECK: %[[SHORT:.*]] = titan.constant dense<2> : tensor<i64>
// CHECK: %[[COORD:.*]] = titan.axis_index on @mesh ["dp"] : tensor<i64>
// CHECK: %[[FULL:.*]] = titan.constant dense<3> : tensor<i64>
// CHECK: %[[ZERO:.*]] = titan.constant dense<0> : tensor<i64>
// CHECK: %[[FIRST:.*]] = titan.compare eq, %[[COORD]], %[[ZERO]]
// CHECK: %[[SIZE:.*]] = titan.select %[[FIRST]], %[[FULL]], %[[SHORT]]
// CHECK: %[[ROW:.*]] = titan.iota dim 0 : tensor<3x4xi64>
// CHECK: %[[BOUND:.*]] = titan.broadcast_in_dim %[[SIZE]] dims [] : tensor<i64> -> tensor<3x4xi64>
// CHECK: %[[IN:.*]] = titan.compare lt, %[[ROW]], %[[BOUND]]
// CHECK: %[[FILL:.*]] = titan.constant dense<0.000000e+00> : tensor<3x4xf32>
// CHECK: %[[MASKED:.*]] = titan.select %[[IN]], %[[X]], %[[FILL]]
// CHECK: %[[SUM:.*]] = titan.reduce_sum %[[MASKED]] dims [0]
// CHECK: titan.constant dense<0xFF800000> : tensor<3x4xf32>
// CHECK: titan.reduce_max
// CHECK: %[[MEAN:.*]] = titan.reduce_mean
// CHECK: %[[SCALED:.*]] = titan.scale %[[MEAN]] by 6.000000e-01
// CHECK: return %[[SUM]], %{{.*}}, %[[SCALED]]
func.func @reduce(%x: tensor<5x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<4xf32> {titan.placements = #titan.placements<@mesh, [P(sum)]>},
        tensor<4xf32> {titan.placements = #titan.placements<@mesh, [P(max)]>},
        tensor<4xf32> {titan.placements = #titan.placements<@mesh, [P(sum)]>}) {
  %s = titan.reduce_sum %x dims [0] {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<5x4xf32> -> tensor<4xf32>
  %x2 = titan.reduce_max %x dims [0] {titan.placements = [#titan.placements<@mesh, [P(max)]>]} : tensor<5x4xf32> -> tensor<4xf32>
  %m = titan.reduce_mean %x dims [0] {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<5x4xf32> -> tensor<4xf32>
  return %s, %x2, %m : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Elementwise ops leave the padding where it is: no mask.
// CHECK-LABEL: func.func @elementwise
// CHECK-NEXT: titan.exp %{{.*}} : tensor<3x4xf32>
// CHECK-NEXT: return
func.func @elementwise(%x: tensor<5x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<5x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  %e = titan.exp %x {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<5x4xf32>
  return %e : tensor<5x4xf32>
}

// CHECK-LABEL: func.func @loss
// CHECK-SAME: %[[LABELS:arg[0-9]+]]: tensor<2xi64> {titan.global_shape = array<i64: 3>
// CHECK: %[[IN:.*]] = titan.compare lt
// CHECK: %[[IGNORE:.*]] = titan.constant dense<-100> : tensor<2xi64>
// CHECK: %[[KEPT:.*]] = titan.select %[[IN]], %[[LABELS]], %[[IGNORE]]
// CHECK: titan.cross_entropy %{{.*}}, %[[KEPT]]
func.func @loss(%logits: tensor<3x8xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                %labels: tensor<3xi64> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<f32> {titan.placements = #titan.placements<@mesh, [P(sum)]>}) {
  %l = titan.cross_entropy %logits, %labels {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<3x8xf32>, tensor<3xi64> -> tensor<f32>
  return %l : tensor<f32>
}
