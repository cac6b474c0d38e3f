// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=rms_norm,cross_entropy" | FileCheck %s --check-prefix=HOST
// RUN: titan-opt %s --titan-fuse-kernels | FileCheck %s --check-prefix=FUSED
// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=rms_norm,cross_entropy" --titan-lower-kernels --titan-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=rms_norm,cross_entropy" --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s --check-prefix=CALLS
// RUN: not titan-opt %s --titan-fuse-kernels="runtime-ops=rms_norm,layer_norm" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// With runtime-ops, RMSNorm and cross-entropy (and their cotangents) of the
// types the runtime's functions take stay host ops: bf16 data and weight,
// f32 logits with i64 labels. The f64 RMSNorm is not one of them
// and goes into a kernel with the op that reads it; the residual add that
// feeds the bf16 norm is a kernel of its own. Without the option every one
// of them is fused.

// HOST-LABEL: func.func @train_step
// HOST: %[[H:.*]] = titan.launch @kernel_add(%arg0)
// HOST: titan.rms_norm %[[H]], %arg1 eps
// HOST: titan.rms_norm_grad %[[H]], %arg1, %arg2 eps
// HOST: titan.cross_entropy %arg3, %arg4 ignore_index 3
// HOST: titan.cross_entropy_grad %arg3, %arg4, %arg5 ignore_index 3
// HOST: titan.launch @kernel_neg(%arg6, %arg7)
// HOST-LABEL: func.func private @kernel_neg
// HOST: titan.rms_norm
// HOST: titan.neg

// FUSED-LABEL: func.func @train_step
// FUSED-NOT: titan.rms_norm
// FUSED-NOT: titan.cross_entropy
// FUSED: return

// The scratch the runtime's functions need: the RMSNorm backward's partial
// weight gradients, min(rows, 256) x cols f32 = 8 x 8 x 4 bytes; the
// cross-entropy's four f32 per row and two scalars, (4 x 8 + 2) x 4 bytes.
// PLAN: titan.rms_norm_grad {{.*}}titan.scratch = [#titan.buffer<arena[{{[0-9]+}}, 256]>]
// PLAN: titan.cross_entropy {{.*}}titan.scratch = [#titan.buffer<arena[{{[0-9]+}}, 136]>]
// PLAN: titan.cross_entropy_grad {{.*}}titan.scratch = [#titan.buffer<arena[{{[0-9]+}}, 136]>]

// Each is a call of its runtime function: dtypes (bf16 = 2, f32 = 0,
// i64 = 4), pointers, the rows and columns, eps or ignore_index.
// CALLS: llvm.call @kernel_add
// CALLS-NEXT: %[[BF16:.*]] = llvm.mlir.constant(2 : i32)
// CALLS-NEXT: %[[WBF16:.*]] = llvm.mlir.constant(2 : i32)
// CALLS: %[[ROWS:.*]] = llvm.mlir.constant(8 : i64)
// CALLS-NEXT: %[[COLS:.*]] = llvm.mlir.constant(8 : i64)
// CALLS-NEXT: %[[EPS:.*]] = llvm.mlir.constant(1.000000e-05 : f64)
// CALLS-NEXT: llvm.call @titanrt_rms_norm(%{{.*}}, %[[BF16]], %[[WBF16]], %{{.*}}, %{{.*}}, %{{.*}}, %[[ROWS]], %[[COLS]], %[[EPS]]) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, f64) -> i32
// No addend: the fourth pointer is null.
// CALLS: %[[NOADDEND:.*]] = llvm.mlir.zero : !llvm.ptr
// CALLS: llvm.call @titanrt_rms_norm_grad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NOADDEND]], %{{.*}}) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, f64) -> i32
// CALLS: ^bb{{[0-9]+}}:
// CALLS-NEXT: %[[LF32:.*]] = llvm.mlir.constant(0 : i32)
// CALLS-NEXT: %[[I64:.*]] = llvm.mlir.constant(4 : i32)
// CALLS: %[[LROWS:.*]] = llvm.mlir.constant(8 : i64)
// CALLS-NEXT: %[[VOCAB:.*]] = llvm.mlir.constant(16 : i64)
// CALLS-NEXT: %[[IGNORE:.*]] = llvm.mlir.constant(3 : i64)
// CALLS-NEXT: llvm.call @titanrt_cross_entropy(%{{.*}}, %[[LF32]], %[[I64]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LROWS]], %[[VOCAB]], %[[IGNORE]]) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
// CALLS: llvm.call @titanrt_cross_entropy_grad({{.*}}) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32

// UNKNOWN: error: titan-fuse-kernels: unknown runtime op 'layer_norm' (runtime-ops takes rms_norm, cross_entropy, adamw, squared_norm)

titan.mesh @mesh ["dp"=1]
func.func @train_step(%x: tensor<2x4x8xbf16> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %w: tensor<8xbf16> {titan.name = "w", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %dy: tensor<2x4x8xbf16> {titan.name = "dy", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %logits: tensor<8x16xf32> {titan.name = "logits", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %labels: tensor<8xi64> {titan.name = "labels", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %dloss: tensor<f32> {titan.name = "dloss", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %x64: tensor<4x8xf64> {titan.name = "x64", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %w64: tensor<8xf64> {titan.name = "w64", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<2x4x8xbf16> {titan.name = "y"}, tensor<2x4x8xbf16> {titan.name = "dx"},
        tensor<8xbf16> {titan.name = "dw"}, tensor<f32> {titan.name = "loss"},
        tensor<8x16xf32> {titan.name = "dlogits"}, tensor<4x8xf64> {titan.name = "y64"}) {
  %h = titan.add %x, %x : tensor<2x4x8xbf16>
  %y = titan.rms_norm %h, %w eps 1.000000e-05 : tensor<2x4x8xbf16>, tensor<8xbf16>
  %dx, %dw = titan.rms_norm_grad %h, %w, %dy eps 1.000000e-05 : tensor<2x4x8xbf16>, tensor<8xbf16>
  %loss = titan.cross_entropy %logits, %labels ignore_index 3 : tensor<8x16xf32>, tensor<8xi64> -> tensor<f32>
  %dlogits = titan.cross_entropy_grad %logits, %labels, %dloss ignore_index 3 : tensor<8x16xf32>, tensor<8xi64>, tensor<f32>
  %n64 = titan.rms_norm %x64, %w64 eps 1.000000e-05 : tensor<4x8xf64>, tensor<8xf64>
  %y64 = titan.neg %n64 : tensor<4x8xf64>
  return %y, %dx, %dw, %loss, %dlogits, %y64 : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<f32>, tensor<8x16xf32>, tensor<4x8xf64>
}
