// RUN: titan-opt %s --split-input-file --titan-propagate-placements --titan-materialize-redistributes -verify-diagnostics
// RUN: not titan-opt %s --split-input-file --titan-propagate-placements="axis-bandwidth=1,2" --titan-materialize-redistributes 2>&1 | FileCheck %s --check-prefix=BW
// RUN: not titan-opt %s --split-input-file --titan-propagate-placements="stationary-param-axes=tp" --titan-materialize-redistributes 2>&1 | FileCheck %s --check-prefix=AXES

titan.mesh @mesh ["x"=2]
// BW: error: 'func.func' op axis-bandwidth has 2 entries but mesh @mesh has 1 axes
func.func @collective(%x: tensor<8xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) -> tensor<8xf32> {
  // expected-error@+1 {{'titan.all_reduce' op has no sharding rule; titan-propagate-placements cannot place its values}}
  %y = titan.all_reduce %x on @mesh ["x"] sum : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// A function without placements is not distributed and is left alone.
func.func @not_placed(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = titan.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

titan.mesh @mesh ["x"=2]
// AXES: error: 'func.func' op stationary-param-axes names axis "tp" but mesh @mesh has no such axis
func.func @unknown_axis(%x: tensor<8xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) -> tensor<8xf32> {
  %y = titan.exp %x : tensor<8xf32>
  return %y : tensor<8xf32>
}
