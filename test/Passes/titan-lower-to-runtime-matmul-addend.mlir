// RUN: titan-opt %s --titan-plan-memory --titan-lower-to-runtime | FileCheck %s

// titanrt_matmul's addend pointer: none for a plain product (null), the
// product's own buffer when the sum is computed in place over it (%s over
// %a, which dies there), and the input's place otherwise (%t reads x as a
// factor too, so it is written elsewhere).

// CHECK: llvm.func @titan_program_step(%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: !llvm.ptr, %[[STATE:.*]]: !llvm.ptr, %[[INPUTS:.*]]: !llvm.ptr)
// CHECK: llvm.getelementptr %[[STATE]]
// CHECK-NEXT: %[[NONE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[A:.*]] = llvm.getelementptr %[[ARENA]]
// CHECK: llvm.call @titanrt_matmul(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[NONE]], %[[A]],
// CHECK: llvm.getelementptr %[[STATE]]
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[ADDEND:.*]] = llvm.getelementptr %[[ARENA]]
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[S:.*]] = llvm.getelementptr %[[ARENA]]
// CHECK: llvm.call @titanrt_matmul(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[ADDEND]], %[[S]],
// CHECK: llvm.getelementptr %[[STATE]]
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[X:.*]] = llvm.getelementptr %[[INPUTS]]
// CHECK-NEXT: llvm.mlir.constant(256 : i64)
// CHECK-NEXT: %[[T:.*]] = llvm.getelementptr %[[ARENA]]
// CHECK: llvm.call @titanrt_matmul(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[X]], %[[T]],

titan.mesh @mesh ["dp"=1]
func.func @train_step(%w: tensor<8x8xf32> {titan.name = "w", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %x: tensor<8x8xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<8x8xf32> {titan.name = "s"}, tensor<8x8xf32> {titan.name = "t"}) {
  %a = titan.matmul %x, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %s = titan.matmul %x, %w plus %a : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %t = titan.matmul %x, %w plus %x : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %s, %t : tensor<8x8xf32>, tensor<8x8xf32>
}
