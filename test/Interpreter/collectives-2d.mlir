// A 2x2 mesh on 4 simulated ranks: group order of multi-axis collectives
// (row-major over the named axes, in the order named), all_to_all from S(0)
// to S(1), broadcast from a root, and an exchange built from send/recv.
// RUN: %python %S/Inputs/oracle.py gen mesh2d %t
// RUN: titan-eval %s --entry=main --ranks=4 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/oracle.py check mesh2d %t

titan.mesh @mesh ["dp"=2, "tp"=2]

func.func @main(
    %x: tensor<2x4xf32> {titan.name = "x", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>},
    %z: tensor<4x4xf32> {titan.name = "z", titan.placements = #titan.placements<@mesh, [R, S(0)]>},
    %y: tensor<2x3xf32> {titan.name = "y", titan.placements = #titan.placements<@mesh, [S(0), R]>})
    -> (tensor<8x4xf32> {titan.name = "gather_dp_tp"},
        tensor<8x4xf32> {titan.name = "gather_tp_dp"},
        tensor<8x2xf32> {titan.name = "all_to_all", titan.placements = #titan.placements<@mesh, [R, S(1)]>},
        tensor<2x3xf32> {titan.name = "broadcast"},
        tensor<2x3xf32> {titan.name = "from_dp0"},
        tensor<2x3xf32> {titan.name = "from_dp1"}) {
  %0 = titan.all_gather %x on @mesh ["dp", "tp"] dim 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  %1 = titan.all_gather %x on @mesh ["tp", "dp"] dim 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  %2 = titan.all_to_all %z on @mesh ["tp"] split 1 concat 0 : tensor<4x4xf32> -> tensor<8x2xf32>
  %3 = titan.broadcast %y on @mesh ["dp"] root 1 : tensor<2x3xf32>
  titan.send %y on @mesh ["dp"] peer 0 tag 7 : tensor<2x3xf32>
  titan.send %y on @mesh ["dp"] peer 1 tag 7 : tensor<2x3xf32>
  %4 = titan.recv on @mesh ["dp"] peer 0 tag 7 : tensor<2x3xf32>
  %5 = titan.recv on @mesh ["dp"] peer 1 tag 7 : tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
