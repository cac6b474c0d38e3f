// REQUIRES: cuda
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime=target=cuda | FileCheck %s
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s --check-prefix=CPU
// RUN: not titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime="target=cuda cuda-toolkit=%t/no-toolkit" 2>&1 | FileCheck %s --check-prefix=NO-TOOLKIT

// With target=cuda each kernel is a host function with the CPU kernel's
// signature (one pointer per buffer: the step calls it alike) that launches
// one GPU kernel per loop nest, in order, on titanrt_cuda_stream() and never
// synchronizes: each of the 250 threads of the elementwise kernel's one
// block computes 4 consecutive elements of its 1000 (8 bf16 results would
// be one 16-byte store, but 8 does not divide a row of 100); a reduction is one
// block per output element whose threads fold strided values of its row
// and combine them with gpu.all_reduce: the 10 row sums of 100 are 10
// blocks of 32 threads that read 4 consecutive values at a time (one
// 16-byte load; a row is 25 such steps) (between the fill and the rounding to f32, each
// 1 block of 5 threads of 2 values), the sum of all 1000 values one block of 256
// (between a fill and a rounding outside any loop nest: one thread each).
// The device code of all kernels is one gpu.binary holding a fatbin for
// sm_90; no memory access is left on the host.

// CPU-DAG: llvm.func @kernel_cast(%arg0: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias})
// CPU-DAG: llvm.func @kernel_reduce_sum_0(%arg0: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg2: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias})
// CPU-DAG: llvm.func @kernel_reduce_sum(%arg0: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg2: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias})

// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: llvm.func @kernel_reduce_sum(%arg0: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg2: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias})
// CHECK-SAME: no_inline
// CHECK-NEXT: %[[STREAM:.*]] = llvm.call @titanrt_cuda_stream() : () -> !llvm.ptr
// CHECK-DAG: %[[THREADS:.*]] = llvm.mlir.constant(256 : index) : i64
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// CHECK-NOT: llvm.load
// CHECK-NOT: llvm.store
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_kernel blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[ONE]], %[[ONE]], %[[ONE]]) : i64 args(%{{.*}} : !llvm.ptr)
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_kernel_0 blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[THREADS]], %[[ONE]], %[[ONE]]) : i64 args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr)
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_kernel_1 blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[ONE]], %[[ONE]], %[[ONE]]) : i64 args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr)
// CHECK-NEXT: llvm.return

// CHECK: gpu.binary @titan_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, properties = {{.*}}, "P\ED

// CHECK-LABEL: llvm.func @kernel_reduce_sum_0(%arg0: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg2: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias})
// CHECK-NEXT: %[[STREAM:.*]] = llvm.call @titanrt_cuda_stream()
// CHECK-DAG: %[[ROWTHREADS:.*]] = llvm.mlir.constant(32 : index) : i64
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// CHECK-DAG: %[[TEN:.*]] = llvm.mlir.constant(10 : index) : i64
// CHECK-DAG: %[[FIVE:.*]] = llvm.mlir.constant(5 : index) : i64
// CHECK-NOT: llvm.load
// CHECK-NOT: llvm.store
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_0_kernel blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[FIVE]], %[[ONE]], %[[ONE]])
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_0_kernel_{{[0-9]+}} blocks in (%[[TEN]], %[[ONE]], %[[ONE]]) threads in (%[[ROWTHREADS]], %[[ONE]], %[[ONE]])
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_reduce_sum_0_kernel_{{[0-9]+}} blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[FIVE]], %[[ONE]], %[[ONE]])
// CHECK-NEXT: llvm.return

// CHECK-LABEL: llvm.func @kernel_cast(%arg0: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = {{[0-9]+}} : i64, llvm.noalias})
// CHECK-NEXT: %[[STREAM:.*]] = llvm.call @titanrt_cuda_stream()
// CHECK-DAG: %[[THREADS:.*]] = llvm.mlir.constant(250 : index) : i64
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// CHECK-NOT: llvm.load
// CHECK-NOT: llvm.store
// CHECK: gpu.launch_func <%[[STREAM]] : !llvm.ptr> @titan_kernels::@kernel_cast_kernel blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[THREADS]], %[[ONE]], %[[ONE]]) : i64 args(%{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr)
// CHECK-NEXT: llvm.return

// CHECK: llvm.func @titanrt_cuda_stream() -> !llvm.ptr
// CHECK-LABEL: llvm.func @titan_program_step
// CHECK: llvm.call @kernel_cast(%{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK: llvm.call @kernel_reduce_sum_0(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: llvm.call @kernel_reduce_sum(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NOT: memref.
// CHECK-NOT: linalg.
// CHECK-NOT: scf.
// CHECK-NOT: mgpuStream

// NO-TOOLKIT: error: compiling kernels for CUDA needs ptxas of the CUDA toolkit, but '{{.*}}no-toolkit/bin/ptxas' is not an executable (install the CUDA toolkit, or name its folder with the cuda-toolkit option)

titan.mesh @mesh ["dp"=1]
func.func @train_step(%x: tensor<10x100xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<10x100xbf16> {titan.name = "e"}, tensor<10xf32> {titan.name = "rows"}, tensor<f32> {titan.name = "total"}) {
  %e = titan.exp %x : tensor<10x100xf32>
  %b = titan.cast %e : tensor<10x100xf32> to tensor<10x100xbf16>
  %r = titan.reduce_sum %x dims [1] : tensor<10x100xf32> -> tensor<10xf32>
  %t = titan.reduce_sum %x dims [0, 1] : tensor<10x100xf32> -> tensor<f32>
  return %b, %r, %t : tensor<10x100xbf16>, tensor<10xf32>, tensor<f32>
}
