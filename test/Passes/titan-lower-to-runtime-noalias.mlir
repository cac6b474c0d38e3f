// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime=target=cuda | FileCheck %s --check-prefix=CUDA
// REQUIRES: cuda

// titan.in_place lists the inputs each result may overwrite; the lowering
// keeps only the pairs that the memory plan used in some launch, so every
// other kernel parameter stays `noalias` (loads the compiler may reorder
// and, on a GPU, read through the non-coherent cache). The negation of an
// input (the inputs region, which no result overwrites) shares nothing;
// the exponential of a matmul's result is computed over it, in place.

// CHECK: llvm.func @kernel_exp(%arg0: !llvm.ptr {llvm.align = 256 : i64}, %arg1: !llvm.ptr {llvm.align = 256 : i64}) attributes {{{.*}}titan.in_place = array<i64: 0, 1>
// CHECK: llvm.func @kernel_neg(%arg0: !llvm.ptr {llvm.align = 256 : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = 256 : i64, llvm.noalias}) attributes {{{.*}}titan.in_place = array<i64>
// CUDA-DAG: llvm.func @kernel_exp(%arg0: !llvm.ptr {llvm.align = 256 : i64}, %arg1: !llvm.ptr {llvm.align = 256 : i64})
// CUDA-DAG: llvm.func @kernel_neg(%arg0: !llvm.ptr {llvm.align = 256 : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = 256 : i64, llvm.noalias})

titan.mesh @mesh ["dp"=1]
func.func @train_step(%x: tensor<64xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %w: tensor<8x8xf32> {titan.name = "w", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<64xf32> {titan.name = "y"}, tensor<8x8xf32> {titan.name = "z"}) {
  %y = titan.neg %x : tensor<64xf32>
  %m = titan.matmul %w, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %z = titan.exp %m : tensor<8x8xf32>
  return %y, %z : tensor<64xf32>, tensor<8x8xf32>
}
