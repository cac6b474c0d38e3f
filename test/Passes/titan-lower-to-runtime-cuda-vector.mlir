// REQUIRES: cuda
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime="target=cuda cuda-binary=ptx" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory="alignment=2" --titan-lower-to-runtime="target=cuda cuda-binary=ptx" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PACKED

// Each thread of an elementwise loop nest computes the consecutive values
// of 16 bytes of its narrowest operand (8 bf16, 4 f32), and the device
// code loads and stores them with one vector access each where every
// launch passes a pointer aligned for it: each kernel parameter is
// `llvm.align` with the largest power of two dividing its offset in its
// region in all launches (at most 256, the regions' own alignment). With
// the memory plan's 64-byte alignment every parameter is aligned: the
// negation of 4 x 64 bf16 is 32 threads of one 16-byte load and store;
// the exponential of f32 is 64 threads of 4. Three values (6 bytes) are
// one thread of one. With buffers packed at 2 bytes, the inputs after the
// 6-byte one are only 2-byte aligned: the same threads load their values
// one by one (the results, at aligned offsets of the arena, are still
// stored with one vector access).

// CHECK-LABEL: .entry kernel_neg_kernel(
// CHECK: .param .u64 .ptr .align 256 kernel_neg_kernel_param_0,
// CHECK: ld.global.nc.b16
// CHECK: st.global.b16
// CHECK-LABEL: .entry kernel_exp_kernel(
// CHECK: .param .u64 .ptr .align 64 kernel_exp_kernel_param_0,
// CHECK: ld.global.nc.v4.b32
// CHECK: st.global.v4.b32
// CHECK-LABEL: .entry kernel_neg_0_kernel(
// CHECK: .param .u64 .ptr .align 64 kernel_neg_0_kernel_param_0,
// CHECK: ld.global.nc.v4.b32
// CHECK: st.global.v4.b32
// CHECK-LABEL: llvm.func @kernel_exp(%arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = 256 : i64, llvm.noalias})
// CHECK-DAG: %[[THREADS:.*]] = llvm.mlir.constant(64 : index) : i64
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @titan_kernels::@kernel_exp_kernel blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[THREADS]], %[[ONE]], %[[ONE]])
// CHECK-LABEL: llvm.func @kernel_neg_0(%arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.noalias}, %arg1: !llvm.ptr {llvm.align = 256 : i64, llvm.noalias})
// CHECK-DAG: %[[THREADS:.*]] = llvm.mlir.constant(32 : index) : i64
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : index) : i64
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @titan_kernels::@kernel_neg_0_kernel blocks in (%[[ONE]], %[[ONE]], %[[ONE]]) threads in (%[[THREADS]], %[[ONE]], %[[ONE]])

// PACKED-LABEL: .entry kernel_exp_kernel(
// PACKED: .param .u64 .ptr .align 2 kernel_exp_kernel_param_0,
// PACKED-NOT: ld.global.nc.v4
// PACKED-COUNT-4: ld.global.nc.b32
// PACKED: st.global.v4.b32
// PACKED-LABEL: .entry kernel_neg_0_kernel(
// PACKED: .param .u64 .ptr .align 2 kernel_neg_0_kernel_param_0,
// PACKED-NOT: ld.global.nc.v4
// PACKED-COUNT-8: ld.global.nc.b16
// PACKED: st.global.v4.b32

titan.mesh @mesh ["dp"=1]
func.func @train_step(%odd: tensor<3xbf16> {titan.name = "odd", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %x: tensor<4x64xbf16> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %s: tensor<4x64xf32> {titan.name = "s", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<4x64xbf16> {titan.name = "y"}, tensor<4x64xf32> {titan.name = "z"}, tensor<3xbf16> {titan.name = "o"}) {
  %y = titan.neg %x : tensor<4x64xbf16>
  %z = titan.exp %s : tensor<4x64xf32>
  %o = titan.neg %odd : tensor<3xbf16>
  return %y, %z, %o : tensor<4x64xbf16>, tensor<4x64xf32>, tensor<3xbf16>
}
