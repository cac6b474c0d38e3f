// REQUIRES: cuda
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime=target=cuda | FileCheck %s
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime="target=cuda cuda-binary=ptx" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// A sum over a whole tensor of at least 64 x 256 values (a gradient's
// squared norm) runs on a grid in two launches: 32768 values are 32 blocks
// of 256 threads, each thread folding 4 consecutive values (read with one
// 16-byte load: 4 values of f32 make 16 bytes) and each block writing its
// block's total into the device global @titan_partials_f64 (the f64
// accumulator's type), then one block of 32 threads combines the 32
// partials in a fixed order into the output; between the accumulator's
// fill and its rounding to f32 (one thread each). No float atomics: the
// result does not depend on the blocks' timing.

// CHECK: llvm.mlir.global private @titan_partials_f64() {{.*}} : !llvm.array<1024 x f64>
// CHECK-LABEL: llvm.func @kernel_reduce_sum(
// CHECK-NEXT: %[[STREAM:.*]] = llvm.call @titanrt_cuda_stream()
// CHECK-DAG: %[[BLOCKS:.*]] = llvm.mlir.constant(32 : index) : i64
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// CHECK-DAG: %[[THREADS:.*]] = llvm.mlir.constant(256 : index) : i64
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_kernel blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[ONE]], %[[ONE]], %[[ONE]]) : i64 args(%{{.*}} : !llvm.ptr)
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_kernel_0 blocks in (%[[BLOCKS]], %[[ONE]], %[[ONE]]) threads in (%[[THREADS]], %[[ONE]], %[[ONE]]) : i64 args(%{{.*}} : !llvm.ptr)
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_kernel_1 blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[BLOCKS]], %[[ONE]], %[[ONE]]) : i64 args(%{{.*}} : !llvm.ptr)
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_kernel_2 blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[ONE]], %[[ONE]], %[[ONE]]) : i64 args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr)
// CHECK-NEXT: llvm.return
// CHECK: gpu.binary @titan_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">

// PTX-LABEL: .entry kernel_reduce_sum_kernel_0(
// PTX-NOT: ld.global.nc.b32
// PTX: ld.global.nc.v4.b32
// PTX-NOT: ld.global.nc.b32
// PTX: bar.sync

titan.mesh @mesh ["dp"=1]
func.func @train_step(%x: tensor<128x256xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<f32> {titan.name = "total"}) {
  %t = titan.reduce_sum %x dims [0, 1] : tensor<128x256xf32> -> tensor<f32>
  return %t : tensor<f32>
}
