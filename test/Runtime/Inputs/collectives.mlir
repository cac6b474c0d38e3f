// A partitioned program of every collective on a 2-rank mesh, on dims that
// titan-normalize-collectives rewrites (all_gather and reduce_scatter on
// dim 1, all_to_all from dim 1 to dim 0); x is sharded over the ranks.
titan.mesh @mesh ["tp"=2]
func.func @train_step(%x: tensor<4x6xf32> {titan.name = "x", titan.role = "input", titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<4x12xf32> {titan.name = "gathered"}, tensor<4x3xf32> {titan.name = "scattered"}, tensor<4x6xf32> {titan.name = "max"}, tensor<i64> {titan.name = "index"}, tensor<8x3xf32> {titan.name = "exchanged"}, tensor<4x6xf32> {titan.name = "root1"}) {
  %g = titan.all_gather %x on @mesh ["tp"] dim 1 : tensor<4x6xf32> -> tensor<4x12xf32>
  %rs = titan.reduce_scatter %x on @mesh ["tp"] dim 1 sum : tensor<4x6xf32> -> tensor<4x3xf32>
  %ar = titan.all_reduce %x on @mesh ["tp"] max : tensor<4x6xf32>
  %i = titan.axis_index on @mesh ["tp"] : tensor<i64>
  %a = titan.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<4x6xf32> -> tensor<8x3xf32>
  %b = titan.broadcast %x on @mesh ["tp"] root 1 : tensor<4x6xf32>
  return %g, %rs, %ar, %i, %a, %b : tensor<4x12xf32>, tensor<4x3xf32>, tensor<4x6xf32>, tensor<i64>, tensor<8x3xf32>, tensor<4x6xf32>
}
