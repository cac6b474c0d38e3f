// RUN: titan-opt %s --titan-fuse-kernels | FileCheck %s --check-prefix=FUSED
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory | FileCheck %s --check-prefix=PLANNED
// RUN: titan-opt %s --titan-fuse-kernels --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s

// A check of computed ids (titan.check_ids) is a host op: it joins no
// kernel, so the ids' kernel and the lookup's stay apart around it.
// FUSED: %[[IDS:.*]] = titan.launch @kernel_add(%arg0)
// FUSED-NEXT: %[[CHECKED:.*]] = titan.check_ids %[[IDS]] below 10 of "pos.weight"
// FUSED-NEXT: titan.launch @kernel_embedding(%arg1, %[[CHECKED]])

// Its result is a view of the ids: the same place, no copy.
// PLANNED: titan.launch @kernel_add(%arg0) {titan.buffers = [#titan.buffer<arena[256, 128]>]}
// PLANNED-NEXT: titan.check_ids {{.*}} {titan.buffers = [#titan.buffer<arena[256, 128]>]}

// It becomes titanrt_check_ids(ctx, i64, the ids, 16 ids, 10 rows, the
// table's name), whose failed status returns from the step before the
// lookup reads the ids.
// CHECK: llvm.mlir.global external constant @titan_check_ids_table_0("pos.weight\00")
// CHECK: llvm.call @kernel_add
// CHECK: %[[NAME:.*]] = llvm.mlir.addressof @titan_check_ids_table_0
// CHECK: %[[TEXT:.*]] = llvm.getelementptr %[[NAME]][0, 0]
// CHECK: %[[I64:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK: %[[OFFSET:.*]] = llvm.mlir.constant(256 : i64) : i64
// CHECK: %[[IDS:.*]] = llvm.getelementptr %arg1[%[[OFFSET]]]
// CHECK: %[[COUNT:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK: %[[BOUND:.*]] = llvm.mlir.constant(10 : i64) : i64
// CHECK: %[[STATUS:.*]] = llvm.call @titanrt_check_ids(%arg0, %[[I64]], %[[IDS]], %[[COUNT]], %[[BOUND]], %[[TEXT]])
// CHECK: llvm.icmp "ne" %[[STATUS]]
// CHECK: llvm.cond_br
// CHECK: llvm.call @kernel_embedding

titan.mesh @mesh ["dp"=1]
func.func @train_step(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %pos: tensor<10x4xf32> {titan.name = "pos.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<2x8x4xf32> {titan.name = "h"}) {
  %one = titan.constant dense<1> : tensor<2x8xi64>
  %ids = titan.add %tokens, %one : tensor<2x8xi64>
  %checked = titan.check_ids %ids below 10 of "pos.weight" : tensor<2x8xi64>
  %h = titan.embedding %pos, %checked : tensor<10x4xf32>, tensor<2x8xi64> -> tensor<2x8x4xf32>
  return %h : tensor<2x8x4xf32>
}
