// RUN: titan-opt %s --titan-fuse-kernels | FileCheck %s
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime > /dev/null

// A lookup reads its table's rows at the ids, not element by element: a
// table the step computes and views as rows (a gather from an activation,
// x * 2 viewed [b * t, d]) is materialized by a kernel of its own and the
// lookup's kernel reads the view (fused through the view, the table's loop
// nest would not dominate the rows the lookup extracts). The ids'
// arithmetic still fuses into the lookup; a table computed as it is (a
// cast parameter) still fuses too (titan-fuse-kernels.mlir,
// @gathered_rows).
// CHECK-LABEL: func.func @train_step
// CHECK: %[[TABLE:.*]] = titan.launch @kernel_scale(%arg0)
// CHECK-NEXT: %[[ROWS:.*]] = titan.reshape %[[TABLE]] : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: titan.launch @kernel_tanh(%arg1, %[[ROWS]])
// CHECK-LABEL: func.func private @kernel_tanh
// CHECK: titan.add
// CHECK: titan.embedding

titan.mesh @mesh ["dp"=1]
func.func @train_step(%x: tensor<2x4x8xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %ids: tensor<2x4xi64> {titan.name = "ids", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<2x4x8xf32> {titan.name = "y"}) {
  %doubled = titan.scale %x by 2.0 : tensor<2x4x8xf32>
  %rows = titan.reshape %doubled : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %one = titan.constant dense<1> : tensor<2x4xi64>
  %next = titan.add %ids, %one : tensor<2x4xi64>
  %picked = titan.embedding %rows, %next : tensor<8x8xf32>, tensor<2x4xi64> -> tensor<2x4x8xf32>
  %y = titan.tanh %picked : tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
