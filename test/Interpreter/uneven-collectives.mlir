// Uneven shards (torch.chunk: 5 rows over 2 ranks are 3 and 2, then over 2
// more 2, 1 / 1, 1) through every padded collective and every masked
// reduction: the global program evaluated on one device and its per-rank
// program (titan-spmdize + titan-redistribute-to-collectives) on 4 simulated
// ranks give the same outputs. The inputs make the padding matter: every
// value of `a` is negative (a padded 0 would win a max) and the sums and
// means reduce exp(a) (a padded 0 would add exp(0) = 1).
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; r = np.random.RandomState(0); np.save('%t/a.npy', (r.rand(5, 3) - 2).astype(np.float32)); np.save('%t/b.npy', r.randn(7, 5).astype(np.float32))"
// RUN: titan-eval %s --entry=moves --inputs=%t --outputs=%t/one
// RUN: titan-opt %s --titan-spmdize --titan-redistribute-to-collectives -o %t/ranks.mlir
// RUN: titan-eval %t/ranks.mlir --entry=moves --ranks=4 --inputs=%t --outputs=%t/ranks
// RUN: %python %S/../Spmd/Inputs/compare_outputs.py %t/ranks %t/one --rtol 1e-6 | FileCheck %s
// RUN: FileCheck %s --check-prefix=IR < %t/ranks.mlir

// CHECK: match: 8 outputs

// The local program holds the largest chunk and records the global shape.
// IR: func.func @moves(%{{.*}}: tensor<5x3xf32> {titan.name = "a"}, %{{.*}}: tensor<7x3xf32> {titan.global_shape = array<i64: 7, 5>, titan.name = "b"
// IR-SAME: -> (tensor<2x3xf32> {titan.global_shape = array<i64: 5, 3>, titan.name = "nested"
// IR: titan.all_gather {{.*}} on @mesh ["tp"] dim 0 : tensor<2x3xf32> -> tensor<4x3xf32>
// IR: titan.all_gather {{.*}} on @mesh ["dp"] dim 0 : tensor<3x3xf32> -> tensor<6x3xf32>
// IR: titan.slice {{.*}} [0, 0] to [5, 3] step [1, 1] : tensor<6x3xf32> -> tensor<5x3xf32>
// IR: titan.reduce_max
// IR: titan.pad {{.*}} : tensor<7x7xf32> -> tensor<8x7xf32>
// IR: titan.reduce_scatter {{.*}} on @mesh ["dp"] dim 0 sum : tensor<8x7xf32> -> tensor<4x7xf32>

titan.mesh @mesh ["dp"=2, "tp"=2]

func.func @moves(
    %a: tensor<5x3xf32> {titan.name = "a"},
    %b: tensor<7x5xf32> {titan.name = "b", titan.placements = #titan.placements<@mesh, [S(1), R]>})
    -> (tensor<5x3xf32> {titan.name = "nested", titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
        tensor<5x3xf32> {titan.name = "gathered"},
        tensor<5x3xf32> {titan.name = "moved", titan.placements = #titan.placements<@mesh, [S(1), S(0)]>},
        tensor<3xf32> {titan.name = "sum"},
        tensor<3xf32> {titan.name = "max"},
        tensor<3xf32> {titan.name = "mean"},
        tensor<7x7xf32> {titan.name = "gram"},
        tensor<7x7xf32> {titan.name = "scattered", titan.placements = #titan.placements<@mesh, [S(0), R]>}) {
  // R -> nested S(0) S(0) (local chunks), back by two all_gathers (the inner
  // one joins pieces whose offsets depend on the outer coordinate), and
  // all_to_alls to the other dim.
  %n = titan.redistribute %a to <@mesh, [S(0), S(0)]> : tensor<5x3xf32>
  %h = titan.redistribute %n to <@mesh, [S(0), R]> : tensor<5x3xf32>
  %g = titan.redistribute %h to <@mesh, [R, R]> : tensor<5x3xf32>
  %m = titan.redistribute %n to <@mesh, [S(1), S(0)]> : tensor<5x3xf32>
  // Reductions over the uneven dim.
  %p = titan.exp %n {titan.placements = [#titan.placements<@mesh, [S(0), S(0)]>]} : tensor<5x3xf32>
  %s = titan.reduce_sum %p dims [0] {titan.placements = [#titan.placements<@mesh, [P(sum), P(sum)]>]} : tensor<5x3xf32> -> tensor<3xf32>
  %sr = titan.redistribute %s to <@mesh, [R, R]> : tensor<3xf32>
  %x = titan.reduce_max %n dims [0] {titan.placements = [#titan.placements<@mesh, [P(max), P(max)]>]} : tensor<5x3xf32> -> tensor<3xf32>
  %xr = titan.redistribute %x to <@mesh, [R, R]> : tensor<3xf32>
  %e = titan.reduce_mean %p dims [0] {titan.placements = [#titan.placements<@mesh, [P(sum), P(sum)]>]} : tensor<5x3xf32> -> tensor<3xf32>
  %er = titan.redistribute %e to <@mesh, [R, R]> : tensor<3xf32>
  // A contraction over 5 columns on 2 ranks (3 and 2) after exp, and the
  // partial result reduce-scattered onto 7 rows (4 and 3).
  %q = titan.exp %b {titan.placements = [#titan.placements<@mesh, [S(1), R]>]} : tensor<7x5xf32>
  %k = titan.matmul %q, %q transpose_rhs {titan.placements = [#titan.placements<@mesh, [P(sum), R]>]} : tensor<7x5xf32>, tensor<7x5xf32> -> tensor<7x7xf32>
  %kr = titan.redistribute %k to <@mesh, [R, R]> : tensor<7x7xf32>
  %ks = titan.redistribute %k to <@mesh, [S(0), R]> : tensor<7x7xf32>
  return %n, %g, %m, %sr, %xr, %er, %kr, %ks : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<7x7xf32>, tensor<7x7xf32>
}
