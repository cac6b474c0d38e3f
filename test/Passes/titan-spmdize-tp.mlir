// Tensor parallelism on 2 ranks: a vocab-parallel embedding (masked local
// lookup, P(sum), all-reduced), a Megatron SwiGLU MLP (w1/w3 column-parallel,
// w2 row-parallel, all-reduce) and the same partial output reduce-scattered
// along the sequence (sequence parallel). The spmdized program on 2 ranks
// gives the global program's outputs.
// RUN: %python %S/Inputs/spmdize_numerics.py gen %t tokens:2x8:i64:64 tok_embeddings:64x16 w1:32x16 w3:32x16 w2:16x32 norm:16
// RUN: titan-eval %s --entry=main --ranks=1 --inputs=%t --outputs=%t/ref
// RUN: titan-opt %s --titan-spmdize --titan-redistribute-to-collectives -o %t/spmd.mlir
// RUN: titan-eval %t/spmd.mlir --entry=main --ranks=2 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/spmdize_numerics.py compare %t/ref %t/out
// RUN: FileCheck %s < %t/spmd.mlir

titan.mesh @mesh ["tp"=2]

// CHECK-LABEL: func.func @main
// CHECK-SAME: tensor<32x16xf32> {titan.name = "tok_embeddings"
// CHECK-SAME: tensor<16x16xf32> {titan.name = "w1"
// CHECK-SAME: tensor<16x16xf32> {titan.name = "w2"
// CHECK-SAME: -> (tensor<2x8x16xf32> {titan.name = "out"
// CHECK-SAME: tensor<2x4x16xf32> {titan.name = "out_sp"
// CHECK: titan.axis_index on @mesh ["tp"]
// CHECK: titan.embedding {{.*}} : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["tp"] sum : tensor<2x8x16xf32>
// CHECK: titan.matmul {{.*}} -> tensor<2x8x16xf32>
// CHECK: titan.matmul {{.*}} -> tensor<2x8x16xf32>
// CHECK: titan.matmul {{.*}} : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
// CHECK: titan.all_reduce {{.*}} on @mesh ["tp"] sum : tensor<2x8x16xf32>
// CHECK: titan.reduce_scatter {{.*}} on @mesh ["tp"] dim 1 sum : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
func.func @main(
    %tokens: tensor<2x8xi64> {titan.name = "tokens", titan.placements = #titan.placements<@mesh, [R]>},
    %emb: tensor<64x16xf32> {titan.name = "tok_embeddings", titan.placements = #titan.placements<@mesh, [S(0)]>},
    %w1: tensor<32x16xf32> {titan.name = "w1", titan.placements = #titan.placements<@mesh, [S(0)]>},
    %w3: tensor<32x16xf32> {titan.name = "w3", titan.placements = #titan.placements<@mesh, [S(0)]>},
    %w2: tensor<16x32xf32> {titan.name = "w2", titan.placements = #titan.placements<@mesh, [S(1)]>},
    %norm: tensor<16xf32> {titan.name = "norm", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<2x8x16xf32> {titan.name = "out", titan.placements = #titan.placements<@mesh, [R]>},
        tensor<2x8x16xf32> {titan.name = "out_sp", titan.placements = #titan.placements<@mesh, [S(1)]>}) {
  %hp = titan.embedding %emb, %tokens {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<64x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  %h = titan.redistribute %hp to <@mesh, [R]> : tensor<2x8x16xf32>
  %x = titan.rms_norm %h, %norm eps 1.000000e-05 {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<2x8x16xf32>, tensor<16xf32>
  %a = titan.matmul %x, %w1 transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(2)]>]} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %b = titan.matmul %x, %w3 transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(2)]>]} : tensor<2x8x16xf32>, tensor<32x16xf32> -> tensor<2x8x32xf32>
  %s = titan.silu %a {titan.placements = [#titan.placements<@mesh, [S(2)]>]} : tensor<2x8x32xf32>
  %g = titan.mul %s, %b {titan.placements = [#titan.placements<@mesh, [S(2)]>]} : tensor<2x8x32xf32>
  %o = titan.matmul %g, %w2 transpose_rhs {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<2x8x32xf32>, tensor<16x32xf32> -> tensor<2x8x16xf32>
  %y = titan.redistribute %o to <@mesh, [R]> : tensor<2x8x16xf32>
  %out = titan.add %h, %y {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<2x8x16xf32>
  %y_sp = titan.redistribute %o to <@mesh, [S(1)]> : tensor<2x8x16xf32>
  return %out, %y_sp : tensor<2x8x16xf32>, tensor<2x8x16xf32>
}
