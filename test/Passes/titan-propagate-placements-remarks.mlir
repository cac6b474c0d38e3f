// RUN: titan-opt %s --split-input-file --titan-propagate-placements=remarks=true --titan-materialize-redistributes=remarks=true -verify-diagnostics -o /dev/null
// RUN: titan-opt %s --split-input-file --titan-propagate-placements="remarks=true axis-bandwidth=1e9" --titan-materialize-redistributes=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=BW

// Propagation: one remark per op that needs an operand redistributed, with
// its choice and the cost of every alternative on each mesh axis (bytes per
// rank at equal bandwidths, seconds with axis-bandwidth). Materialization:
// one remark per inserted redistribute, with the layouts, the bytes per rank
// and who needs it.

titan.mesh @mesh ["x"=2]
func.func @small_weight(%x: tensor<64x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                        %w: tensor<16x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<64x16xf32>, tensor<16xf32> {titan.placements = #titan.placements<@mesh, [R]>}) {
  // expected-remark@+4 {{redistributes an operand: axis "x": shard operand #0 dim 0 (parallel) (1024 B) over shard operand #1 dim 0 (parallel) (4096 B) over replicate (5120 B)}}
  // expected-remark@+3 {{[S(0)] -> [R] (1024 bytes per rank) for operand #1 of 'titan.matmul'}}
  // BW: remark: redistributes an operand: axis "x": shard operand #0 dim 0 (parallel) (1.024e-06 s) over shard operand #1 dim 0 (parallel) (4.096e-06 s) over replicate (5.120e-06 s)
  // BW: remark: [S(0)] -> [R] (1024 bytes per rank) for operand #1 of 'titan.matmul'
  %y = titan.matmul %x, %w transpose_rhs : tensor<64x32xf32>, tensor<16x32xf32> -> tensor<64x16xf32>
  %s = titan.reduce_sum %y dims [0] : tensor<64x16xf32> -> tensor<16xf32>
  // expected-remark@+2 {{[P(sum)] -> [R] (64 bytes per rank) for result #1 of the function: pinned by the plan}}
  // BW: remark: [P(sum)] -> [R] (64 bytes per rank) for result #1 of the function: pinned by the plan
  return %y, %s : tensor<64x16xf32>, tensor<16xf32>
}

// -----

// Megatron MLP: the only redistribute is the all-reduce of the row-parallel
// matmul's partial sum, needed by the residual add (which cannot add a
// partial to a replicated value without reducing it).

titan.mesh @mesh ["tp"=2]
func.func @mlp(%x: tensor<2x8x32xf32> {titan.placements = #titan.placements<@mesh, [R]>},
               %w1: tensor<64x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
               %w2: tensor<32x64xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>})
    -> tensor<2x8x32xf32> {
  %h = titan.matmul %x, %w1 transpose_rhs : tensor<2x8x32xf32>, tensor<64x32xf32> -> tensor<2x8x64xf32>
  %g = titan.silu %h : tensor<2x8x64xf32>
  %y = titan.matmul %g, %w2 transpose_rhs : tensor<2x8x64xf32>, tensor<32x64xf32> -> tensor<2x8x32xf32>
  // expected-remark@+2 {{redistributes an operand: axis "tp": replicate (2048 B)}}
  // expected-remark@+1 {{[P(sum)] -> [R] (2048 bytes per rank) for operand #1 of 'titan.add'}}
  %r = titan.add %x, %y : tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}
