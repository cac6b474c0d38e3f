// Uneven shards and partial inputs: a global [5, 4] tensor sharded S(0) on 2
// ranks gives them 3 and 2 rows (torch.chunk), which a dynamic local dim
// holds; a P(sum) input keeps its value on coordinate 0 and zeros elsewhere,
// so an all_reduce recovers it.
// RUN: %python %S/Inputs/oracle.py gen uneven %t
// RUN: titan-eval %s --entry=main --ranks=2 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check uneven %t

titan.mesh @mesh ["dp"=2]

func.func @main(
    %x: tensor<?x4xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(0)]>},
    %p: tensor<3xf32> {titan.name = "p", titan.placements = #titan.placements<@mesh, [P(sum)]>})
    -> (tensor<?x4xf32> {titan.name = "doubled", titan.placements = #titan.placements<@mesh, [S(0)]>},
        tensor<3xf32> {titan.name = "reduced"},
        tensor<3xf32> {titan.name = "partial", titan.placements = #titan.placements<@mesh, [P(sum)]>}) {
  %0 = titan.scale %x by 2.000000e+00 : tensor<?x4xf32>
  %1 = titan.all_reduce %p on @mesh ["dp"] sum : tensor<3xf32>
  return %0, %1, %p : tensor<?x4xf32>, tensor<3xf32>, tensor<3xf32>
}
