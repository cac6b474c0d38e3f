// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s
// RUN: not titan-opt %s --titan-lower-to-runtime 2>&1 | FileCheck %s --check-prefix=UNPLANNED
// RUN: not titan-opt %s --titan-lower-to-runtime="lr-decay-type=exponential" 2>&1 | FileCheck %s --check-prefix=DECAY
// DECAY: error: titan-lower-to-runtime: unknown learning-rate decay type 'exponential' (linear, sqrt or cosine)
// RUN: not titan-opt %s --titan-lower-to-runtime="target=rocm" 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: titan-lower-to-runtime: unknown target 'rocm' (cpu or cuda)
// RUN: not titan-opt %s --titan-lower-to-runtime="target=cuda cuda-binary=cubin" 2>&1 | FileCheck %s --check-prefix=BINARY
// BINARY: error: titan-lower-to-runtime: unknown cuda-binary 'cubin' (fatbin or ptx)
// RUN: not titan-opt %s --titan-lower-to-runtime="validation=eval" 2>&1 | FileCheck %s --check-prefix=VALIDATION
// VALIDATION: error: titan-lower-to-runtime: unknown validation 'eval' (none, linked or program)

// A job with validation links two programs into one executable. The
// validation program's step and description take their own names, every
// other symbol it defines is prefixed (its kernels link beside the
// training step's), and it has no main; the runtime's functions keep their
// names.
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime="validation=program" | FileCheck %s --check-prefix=PROGRAM
// PROGRAM-NOT: @titan_program_
// PROGRAM: llvm.func @titan_validation.kernel_add(
// PROGRAM: llvm.func @titan_validation.kernel_exp(
// PROGRAM: llvm.func @titan_validation_step(
// PROGRAM: llvm.call @titanrt_all_gather(
// PROGRAM: llvm.call @titan_validation.kernel_exp(
// PROGRAM: llvm.call @titan_validation.kernel_add(
// PROGRAM: llvm.func @titanrt_all_gather(
// PROGRAM: llvm.mlir.global external constant @titan_validation_description("titan-program 1
// PROGRAM-NOT: @main
// PROGRAM-NOT: @titan_program_
// The training program's main hands the runtime both programs; without
// validation, two null pointers.
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime="validation=linked" | FileCheck %s --check-prefix=LINKED
// LINKED: llvm.mlir.global external constant @titan_validation_description() {addr_space = 0 : i32} : i8
// LINKED: llvm.func @titan_validation_step(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LINKED-LABEL: llvm.func @main(
// LINKED: %[[TEXT:.*]] = llvm.mlir.addressof @titan_program_description
// LINKED: %[[STEP:.*]] = llvm.mlir.addressof @titan_program_step
// LINKED: %[[VTEXT:.*]] = llvm.mlir.addressof @titan_validation_description
// LINKED: %[[VSTEP:.*]] = llvm.mlir.addressof @titan_validation_step
// LINKED: llvm.call @titanrt_main(%{{.*}}, %{{.*}}, %[[TEXT]], %[[STEP]], %[[VTEXT]], %[[VSTEP]])

// `communicators` numbers the listed axis sets first (the pipeline ranks'
// programs share a numbering): an unused one keeps its number, one over an
// axis the mesh lacks is an error.
// RUN: not titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime="communicators=tp+tp2,tp" 2>&1 | FileCheck %s --check-prefix=SHARED-BAD
// SHARED-BAD: error: communicator 0 is over axis 'tp2', which the job's mesh does not have
// RUN: not titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime="communicators=tp+tp" 2>&1 | FileCheck %s --check-prefix=SHARED-TWICE
// SHARED-TWICE: error: communicator 0 names axis 'tp' twice
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime="communicators=dp,dp+tp" | FileCheck %s --check-prefix=SHARED
// SHARED: @titan_program_description("{{.*}}\0Acomm 0 dp\0Acomm 1 dp tp\0Acomm 2 tp\0Aarg

// The planned step becomes @titan_program_step(ctx, arena, state, inputs):
// pointers into the regions at the planned offsets, a runtime call per host
// op whose status returns at once when it is not 0, a call per kernel (the
// AdamW-like update of w runs in place over w's state buffer), and the
// program description (without the checkpoint plan, which the executable
// reads from OUT/checkpoint-plan.txt) and main. Only LLVM dialect ops remain.

// CHECK-NOT: titan.mesh
// CHECK-NOT: func.func
// CHECK: llvm.func @titan_program_step(%[[CTX:.*]]: !llvm.ptr, %[[ARENA:.*]]: !llvm.ptr, %[[STATE:.*]]: !llvm.ptr, %[[INPUTS:.*]]: !llvm.ptr) -> i32 attributes {no_inline, optimize_none}
// Pointers are computed where they are used (a region base plus the
// planned offset), so none lives across the step.
// CHECK: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[W:.*]] = llvm.getelementptr %[[STATE]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[FULL:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}]
// CHECK-NEXT: llvm.mlir.constant(128 : i64)
// CHECK-NEXT: %[[STATUS:.*]] = llvm.call @titanrt_all_gather(%[[CTX]], %{{.*}}, %[[W]], %[[FULL]], %{{.*}}) : (!llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i64) -> i32
// CHECK: %[[FAILED:.*]] = llvm.icmp "ne" %[[STATUS]]
// CHECK: llvm.cond_br %[[FAILED]], ^[[FAIL:.*]](%[[STATUS]] : i32), ^
// CHECK: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[X:.*]] = llvm.getelementptr %[[INPUTS]][%{{.*}}]
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[FULL2:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}]
// No addend: a null pointer.
// CHECK-NEXT: %[[NONE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.constant(256 : i64)
// CHECK-NEXT: %[[Y:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}]
// CHECK: llvm.call @titanrt_matmul(%[[CTX]], %{{.*}}, %[[X]], %[[FULL2]], %[[NONE]], %[[Y]], %{{.*}}) : (!llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i32, i32, i32) -> i32
// CHECK: llvm.mlir.constant(256 : i64)
// CHECK-NEXT: %[[Y1:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}]
// CHECK-NEXT: llvm.mlir.constant(256 : i64)
// CHECK-NEXT: %[[Y2:.*]] = llvm.getelementptr %[[ARENA]][%{{.*}}]
// CHECK-NEXT: llvm.call @kernel_exp(%[[Y1]], %[[Y2]])
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[W1:.*]] = llvm.getelementptr %[[STATE]][%{{.*}}]
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[W2:.*]] = llvm.getelementptr %[[STATE]][%{{.*}}]
// CHECK-NEXT: llvm.call @kernel_add(%[[W1]], %[[W2]])
// Results already where the signature places them are not copied.
// CHECK-NOT: llvm.intr.memcpy
// CHECK: llvm.return %{{.*}} : i32
// CHECK: ^[[FAIL]](%[[CODE:.*]]: i32):
// CHECK-NEXT: llvm.return %[[CODE]] : i32
// CHECK: llvm.func @titanrt_all_gather(!llvm.ptr, i32, !llvm.ptr, !llvm.ptr, i64) -> i32
// CHECK: llvm.mlir.global external constant @titan_program_description("titan-program 1\0Amesh dp=1 tp=2\0Aregions arena=320 state=128 inputs=64\0Adefaults lr=8.000000000e-04 steps=1 seed=0\0Alr_schedule warmup=0 stable=2 decay=0 type=linear min=0.00000000000000000e+00\0Acomm 0 tp\0Aarg 0 w param f32 [4,8] state 0 128\0Aarg 1 x input f32 [2,8] inputs 0 64\0Aglobal x [2,8]\0Abox x 0 [0,0] [2,8]\0Abox x 1 [0,0] [2,8]\0Aresult 0 y f32 [2,8] arena 256 64\0Aresult 1 param.w f32 [4,8] state 0 128\0Aend\0A\00")
// CHECK-LABEL: llvm.func @main(%{{.*}}: i32, %{{.*}}: !llvm.ptr) -> i32
// CHECK: %[[NULL1:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[NULL2:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call @titanrt_main(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NULL1]], %[[NULL2]])

// UNPLANNED: error: titan-lower-to-runtime needs a planned @train_step (titan-plan-memory)

titan.mesh @mesh ["dp"=1, "tp"=2]
func.func @train_step(%w: tensor<4x8xf32> {titan.name = "w", titan.role = "param", titan.placements = #titan.placements<@mesh, [R, S(0)]>},
                      %x: tensor<2x8xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [R, R]>})
    -> (tensor<2x8xf32> {titan.name = "y"}, tensor<4x8xf32> {titan.name = "param.w"}) {
  %full = titan.all_gather %w on @mesh ["tp"] dim 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %y = titan.matmul %x, %full : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  %e = titan.exp %y : tensor<2x8xf32>
  %u = titan.scale %w by 0.5 : tensor<4x8xf32>
  %v = titan.add %u, %w : tensor<4x8xf32>
  return %e, %v : tensor<2x8xf32>, tensor<4x8xf32>
}
