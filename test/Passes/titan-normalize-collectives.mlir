// RUN: titan-opt %s --titan-normalize-collectives | FileCheck %s

// The runtime's collectives move contiguous chunks in group order. A
// collective on a dim with non-unit dims before it becomes the collective on
// dim 0 plus the reshapes and transposes that put its chunks in place.

titan.mesh @mesh ["fsdp"=2, "tp"=4]

// all_gather dim 1 of [4, 8, 6] over 2 ranks: gather whole buffers as
// [2, 4, 8, 6], move the group dim next to dim 1, merge.
// CHECK-LABEL: func.func @gather
// CHECK: %[[U:.*]] = titan.reshape %arg0 : tensor<4x8x6xf32> -> tensor<1x4x8x6xf32>
// CHECK: %[[G:.*]] = titan.all_gather %[[U]] on @mesh ["fsdp"] dim 0 : tensor<1x4x8x6xf32> -> tensor<2x4x8x6xf32>
// CHECK: %[[T:.*]] = titan.transpose %[[G]] [1, 0, 2, 3] : tensor<2x4x8x6xf32> -> tensor<4x2x8x6xf32>
// CHECK: %[[R:.*]] = titan.reshape %[[T]] : tensor<4x2x8x6xf32> -> tensor<4x16x6xf32>
// CHECK: return %[[R]]
func.func @gather(%x: tensor<4x8x6xf32>) -> tensor<4x16x6xf32> {
  %0 = titan.all_gather %x on @mesh ["fsdp"] dim 1 : tensor<4x8x6xf32> -> tensor<4x16x6xf32>
  return %0 : tensor<4x16x6xf32>
}

// reduce_scatter dim 1 over 4 ranks: split dim 1 into [4, 2], move the
// chunks to the front, scatter whole buffers, drop the unit dim.
// CHECK-LABEL: func.func @scatter
// CHECK: %[[S:.*]] = titan.reshape %arg0 : tensor<4x8x6xf32> -> tensor<4x4x2x6xf32>
// CHECK: %[[F:.*]] = titan.transpose %[[S]] [1, 0, 2, 3] : tensor<4x4x2x6xf32> -> tensor<4x4x2x6xf32>
// CHECK: %[[RS:.*]] = titan.reduce_scatter %[[F]] on @mesh ["tp"] dim 0 sum : tensor<4x4x2x6xf32> -> tensor<1x4x2x6xf32>
// CHECK: %[[R:.*]] = titan.reshape %[[RS]] : tensor<1x4x2x6xf32> -> tensor<4x2x6xf32>
// CHECK: return %[[R]]
func.func @scatter(%x: tensor<4x8x6xf32>) -> tensor<4x2x6xf32> {
  %0 = titan.reduce_scatter %x on @mesh ["tp"] dim 1 sum : tensor<4x8x6xf32> -> tensor<4x2x6xf32>
  return %0 : tensor<4x2x6xf32>
}

// all_to_all split 1 concat 2 over 4 ranks: chunks of dim 1 to the front,
// exchange them in place, move the received chunks into dim 2.
// CHECK-LABEL: func.func @exchange
// CHECK: %[[S:.*]] = titan.reshape %arg0 : tensor<4x8x6xf32> -> tensor<4x4x2x6xf32>
// CHECK: %[[F:.*]] = titan.transpose %[[S]] [1, 0, 2, 3]
// CHECK: %[[X:.*]] = titan.all_to_all %[[F]] on @mesh ["tp"] split 0 concat 0 : tensor<4x4x2x6xf32> -> tensor<4x4x2x6xf32>
// CHECK: %[[B:.*]] = titan.transpose %[[X]] [1, 2, 0, 3] : tensor<4x4x2x6xf32> -> tensor<4x2x4x6xf32>
// CHECK: %[[R:.*]] = titan.reshape %[[B]] : tensor<4x2x4x6xf32> -> tensor<4x2x24xf32>
// CHECK: return %[[R]]
func.func @exchange(%x: tensor<4x8x6xf32>) -> tensor<4x2x24xf32> {
  %0 = titan.all_to_all %x on @mesh ["tp"] split 1 concat 2 : tensor<4x8x6xf32> -> tensor<4x2x24xf32>
  return %0 : tensor<4x2x24xf32>
}

// Chunks that are already contiguous (only unit dims before them) are left
// alone; a permutation that only moves unit dims is a reshape (the chunks
// of dim 0 of [8, 1, 6] are in front already), one that moves data is a
// transpose (received chunks of [2, 1, 6] go into dim 1).
// CHECK-LABEL: func.func @contiguous
// CHECK-NEXT: %[[G:.*]] = titan.all_gather %arg0 on @mesh ["fsdp"] dim 0 : tensor<1x8x6xf32> -> tensor<2x8x6xf32>
// CHECK-NEXT: %[[RS:.*]] = titan.reduce_scatter %arg0 on @mesh ["fsdp"] dim 1 sum : tensor<1x8x6xf32> -> tensor<1x4x6xf32>
// CHECK-NEXT: %[[S:.*]] = titan.reshape %arg1 : tensor<8x1x6xf32> -> tensor<4x2x1x6xf32>
// CHECK-NEXT: %[[X:.*]] = titan.all_to_all %[[S]] on @mesh ["tp"] split 0 concat 0
// CHECK-NEXT: %[[T:.*]] = titan.transpose %[[X]] [1, 0, 2, 3] : tensor<4x2x1x6xf32> -> tensor<2x4x1x6xf32>
// CHECK-NEXT: %[[M:.*]] = titan.reshape %[[T]] : tensor<2x4x1x6xf32> -> tensor<2x4x6xf32>
// CHECK-NEXT: return %[[G]], %[[RS]], %[[M]]
func.func @contiguous(%y: tensor<1x8x6xf32>, %z: tensor<8x1x6xf32>) -> (tensor<2x8x6xf32>, tensor<1x4x6xf32>, tensor<2x4x6xf32>) {
  %0 = titan.all_gather %y on @mesh ["fsdp"] dim 0 : tensor<1x8x6xf32> -> tensor<2x8x6xf32>
  %1 = titan.reduce_scatter %y on @mesh ["fsdp"] dim 1 sum : tensor<1x8x6xf32> -> tensor<1x4x6xf32>
  %2 = titan.all_to_all %z on @mesh ["tp"] split 0 concat 1 : tensor<8x1x6xf32> -> tensor<2x4x6xf32>
  return %0, %1, %2 : tensor<2x8x6xf32>, tensor<1x4x6xf32>, tensor<2x4x6xf32>
}
