// RUN: titan-opt %s --titan-balance-sequence=ways=2 | FileCheck %s

// Dropout on [b, t, c] and on its transpose [b, c, t] with c == t: CSE made
// one value of both dropouts' element positions. Each random_uniform gets a
// copy of its own, permuted along its own sequence dim: dim 1 for the
// first, dim 2 for the second (stored chunk order 0, 3, 1, 2 of 4 chunks of
// 2), each in the one iota that counts along it.
// CHECK-LABEL: func.func @shared_positions
// CHECK: titan.iota dim 1
// CHECK: titan.concat {{.*}} dim 1 :
// CHECK-NOT: titan.concat
// CHECK: %[[C0:.*]] = titan.add
// CHECK-NEXT: titan.random_uniform %[[C0]] stream 0
// CHECK-NOT: titan.concat {{.*}} dim 1 :
// CHECK: titan.iota dim 2
// CHECK: titan.concat {{.*}} dim 2 :
// CHECK-NOT: titan.concat
// CHECK: %[[C1:.*]] = titan.add
// CHECK-NEXT: titan.random_uniform %[[C1]] stream 1
func.func @shared_positions(%tokens: tensor<2x8xi64> {titan.name = "tokens", titan.role = "input"},
                            %emb: tensor<32x8xf32> {titan.name = "emb", titan.role = "param"}) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>) {
  %x = titan.embedding %emb, %tokens : tensor<32x8xf32>, tensor<2x8xi64> -> tensor<2x8x8xf32>
  %rows = titan.iota dim 1 : tensor<2x8x8xi64>
  %eight = titan.constant dense<8> : tensor<2x8x8xi64>
  %scaled = titan.mul %rows, %eight : tensor<2x8x8xi64>
  %cols = titan.iota dim 2 : tensor<2x8x8xi64>
  %positions = titan.add %scaled, %cols : tensor<2x8x8xi64>
  %u0 = titan.random_uniform %positions stream 0 : tensor<2x8x8xi64> -> tensor<2x8x8xf32>
  %y0 = titan.mul %x, %u0 : tensor<2x8x8xf32>
  %t = titan.transpose %x [0, 2, 1] : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %u1 = titan.random_uniform %positions stream 1 : tensor<2x8x8xi64> -> tensor<2x8x8xf32>
  %y1 = titan.mul %t, %u1 : tensor<2x8x8xf32>
  return %y0, %y1 : tensor<2x8x8xf32>, tensor<2x8x8xf32>
}
