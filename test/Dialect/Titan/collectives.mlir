// RUN: titan-opt %s | titan-opt | FileCheck %s
// RUN: titan-opt %s --mlir-print-op-generic | titan-opt | FileCheck %s

titan.mesh @mesh ["fsdp"=4, "tp"=2]

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // CHECK: titan.all_gather %{{.*}} on @mesh ["fsdp", "tp"] dim 0 : tensor<16x8xf32> -> tensor<128x8xf32>
  %0 = titan.all_gather %x on @mesh ["fsdp", "tp"] dim 0 : tensor<16x8xf32> -> tensor<128x8xf32>
  // CHECK: titan.reduce_scatter %{{.*}} on @mesh ["fsdp"] dim 0 sum : tensor<128x8xf32> -> tensor<32x8xf32>
  %1 = titan.reduce_scatter %0 on @mesh ["fsdp"] dim 0 sum : tensor<128x8xf32> -> tensor<32x8xf32>
  // CHECK: titan.all_reduce %{{.*}} on @mesh ["tp"] avg : tensor<32x8xf32>
  %2 = titan.all_reduce %1 on @mesh ["tp"] avg : tensor<32x8xf32>
  // CHECK: titan.all_reduce %{{.*}} on @mesh ["fsdp", "tp"] max : tensor<32x8xf32>
  %3 = titan.all_reduce %2 on @mesh ["fsdp", "tp"] max : tensor<32x8xf32>
  // CHECK: titan.all_to_all %{{.*}} on @mesh ["tp"] split 0 concat 1 : tensor<32x8xf32> -> tensor<16x16xf32>
  %4 = titan.all_to_all %3 on @mesh ["tp"] split 0 concat 1 : tensor<32x8xf32> -> tensor<16x16xf32>
  // Exchanging the chunks of one dim in place keeps the type.
  // CHECK: titan.all_to_all %{{.*}} on @mesh ["tp"] split 0 concat 0 : tensor<16x16xf32> -> tensor<16x16xf32>
  %exchanged = titan.all_to_all %4 on @mesh ["tp"] split 0 concat 0 : tensor<16x16xf32> -> tensor<16x16xf32>
  // CHECK: titan.broadcast %{{.*}} on @mesh ["tp"] root 1 : tensor<16x16xf32>
  %5 = titan.broadcast %exchanged on @mesh ["tp"] root 1 : tensor<16x16xf32>
  // CHECK: titan.send %{{.*}} on @mesh ["fsdp"] peer 3 tag 1 : tensor<16x16xf32>
  titan.send %5 on @mesh ["fsdp"] peer 3 tag 1 : tensor<16x16xf32>
  // CHECK: titan.recv on @mesh ["fsdp"] peer 0 tag 1 : tensor<16x8xf32>
  %6 = titan.recv on @mesh ["fsdp"] peer 0 tag 1 : tensor<16x8xf32>
  // CHECK: titan.axis_index on @mesh ["tp"] : tensor<i64>
  %7 = titan.axis_index on @mesh ["tp"] : tensor<i64>
  // CHECK: titan.axis_index on @mesh ["fsdp", "tp"] : tensor<i32>
  %8 = titan.axis_index on @mesh ["fsdp", "tp"] : tensor<i32>
  return %6 : tensor<16x8xf32>
}
