// REQUIRES: cuda
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime=target=cuda | FileCheck %s
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s --check-prefix=CPU

// A state update computed outside its argument's place (here by the
// runtime's matmul, into the arena) is copied there when the step returns.
// A GPU program's regions are the device's, so the copy is the runtime's
// titanrt_copy (cudaMemcpyAsync on the compute stream), never a host
// memcpy; compiled for the CPU the step copies by itself.

// CHECK: llvm.func @titan_program_step(%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: !llvm.ptr, %[[STATE:.*]]: !llvm.ptr, %[[INPUTS:.*]]: !llvm.ptr)
// CHECK: llvm.call @titanrt_matmul
// CHECK: %[[FROM:.*]] = llvm.getelementptr %[[ARENA]]
// CHECK: %[[TO:.*]] = llvm.getelementptr %[[STATE]]
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK: llvm.call @titanrt_copy(%[[CTX]], %[[FROM]], %[[TO]], %[[BYTES]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> i32
// CHECK-NOT: llvm.intr.memcpy
// CHECK: llvm.func @titanrt_copy(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> i32

// CPU-LABEL: llvm.func @titan_program_step
// CPU: llvm.call @titanrt_matmul
// CPU: "llvm.intr.memcpy"(%{{.*}}, %{{.*}}, %{{.*}}) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CPU-NOT: titanrt_copy

titan.mesh @mesh ["dp"=1]
func.func @train_step(%w: tensor<8x8xf32> {titan.name = "w", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %x: tensor<8x8xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<8x8xf32> {titan.name = "param.w"}) {
  %v = titan.matmul %x, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %v : tensor<8x8xf32>
}
