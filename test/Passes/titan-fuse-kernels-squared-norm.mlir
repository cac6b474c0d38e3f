// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=squared_norm" | FileCheck %s
// RUN: titan-opt %s --titan-fuse-kernels | FileCheck %s --check-prefix=COMPILED
// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=squared_norm" --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s --check-prefix=CALLS

// With runtime-ops=squared_norm, the squared sums that one tree of scalar
// adds adds up become one titan.squared_norm of their tensors (a bf16
// gradient widened for its square is read as it is): the replicated
// gradients' terms (%g0, %g1) in the outer sum, the sharded ones' (%g4,
// %g5) under their all-reduce. A term that is not a square (%g2 summed)
// stays a kernel added to the norm; a square read by nothing but the
// return (%g3) stays compiled.
// CHECK-LABEL: func.func @train_step
// CHECK-DAG: %[[NORM:.*]] = titan.squared_norm %arg0, %arg1 : tensor<16x8xbf16>, tensor<8xf32>
// CHECK-DAG: %[[SHARDED:.*]] = titan.squared_norm %arg4, %arg5 : tensor<8xf32>, tensor<4xbf16>
// CHECK-DAG: %[[REDUCED:.*]] = titan.all_reduce %[[SHARDED]] on @mesh ["dp"] sum : tensor<f32>
// CHECK-DAG: %[[PLAIN:.*]] = titan.launch @kernel_reduce_sum{{.*}}(%arg2)
// CHECK-DAG: %[[SQUARE:.*]] = titan.launch @kernel_reduce_sum{{.*}}(%arg3)
// CHECK: %[[TOTAL:.*]] = titan.launch @kernel_add{{.*}}(%[[PLAIN]], %[[REDUCED]], %[[NORM]])
// CHECK: return %[[TOTAL]], %[[SQUARE]]
// CHECK-NOT: titan.squared_norm

// Without the option every square is a reduction kernel.
// COMPILED-LABEL: func.func @train_step
// COMPILED-NOT: titan.squared_norm
// COMPILED-COUNT-6: titan.launch @kernel_reduce_sum

// The call: a table of the two tensors (data, elements, dtype: bf16 = 2).
// CALLS: llvm.func @titan_program_step
// CALLS-COUNT-2: llvm.alloca %{{.*}} x !llvm.struct<(ptr, i64, i32)> {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CALLS: %[[ELEMENTS:.*]] = llvm.mlir.constant(128 : i64) : i64
// CALLS-NEXT: %[[BF16:.*]] = llvm.mlir.constant(2 : i32) : i32
// CALLS-NEXT: llvm.getelementptr %[[TABLE:.*]][0, 0]
// CALLS: llvm.store %[[ELEMENTS]], %{{.*}} : i64, !llvm.ptr
// CALLS: llvm.store %[[BF16]], %{{.*}} : i32, !llvm.ptr
// CALLS: %[[COUNT:.*]] = llvm.mlir.constant(2 : i64) : i64
// CALLS: llvm.call @titanrt_squared_norm(%arg0, %[[TABLE]], %[[COUNT]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> i32
// CALLS: llvm.call @titanrt_squared_norm(

titan.mesh @mesh ["dp"=2]
func.func @train_step(%g0: tensor<16x8xbf16> {titan.name = "g0", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %g1: tensor<8xf32> {titan.name = "g1", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %g2: tensor<8xf32> {titan.name = "g2", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %g3: tensor<4xf32> {titan.name = "g3", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %g4: tensor<8xf32> {titan.name = "g4", titan.role = "input", titan.placements = #titan.placements<@mesh, [S(0)]>},
                      %g5: tensor<4xbf16> {titan.name = "g5", titan.role = "input", titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<f32> {titan.name = "norm"}, tensor<f32> {titan.name = "square"}) {
  %w0 = titan.cast %g0 : tensor<16x8xbf16> to tensor<16x8xf32>
  %m0 = titan.mul %w0, %w0 : tensor<16x8xf32>
  %s0 = titan.reduce_sum %m0 dims [0, 1] : tensor<16x8xf32> -> tensor<f32>
  %m1 = titan.mul %g1, %g1 : tensor<8xf32>
  %s1 = titan.reduce_sum %m1 dims [0] : tensor<8xf32> -> tensor<f32>
  %s2 = titan.reduce_sum %g2 dims [0] : tensor<8xf32> -> tensor<f32>
  %m3 = titan.mul %g3, %g3 : tensor<4xf32>
  %s3 = titan.reduce_sum %m3 dims [0] : tensor<4xf32> -> tensor<f32>
  %m4 = titan.mul %g4, %g4 : tensor<8xf32>
  %s4 = titan.reduce_sum %m4 dims [0] : tensor<8xf32> -> tensor<f32>
  %w5 = titan.cast %g5 : tensor<4xbf16> to tensor<4xf32>
  %m5 = titan.mul %w5, %w5 : tensor<4xf32>
  %s5 = titan.reduce_sum %m5 dims [0] : tensor<4xf32> -> tensor<f32>
  %p = titan.add %s4, %s5 : tensor<f32>
  %r = titan.all_reduce %p on @mesh ["dp"] sum : tensor<f32>
  %a = titan.add %s0, %s2 : tensor<f32>
  %b = titan.add %a, %s1 : tensor<f32>
  %c = titan.add %b, %r : tensor<f32>
  return %c, %s3 : tensor<f32>, tensor<f32>
}
