// RUN: titan-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'titan.mesh' op has axis "tp" more than once}}
titan.mesh @mesh ["tp"=2, "tp"=2]

// -----

// expected-error @+1 {{'titan.mesh' op axis "fsdp" must have a positive size, got 0}}
titan.mesh @mesh ["fsdp"=0]

// -----

// expected-error @+1 {{'titan.mesh' op has an axis with an empty name}}
titan.mesh @mesh [""=2]

// -----

// expected-error @+1 {{'titan.mesh' op needs at least one axis}}
titan.mesh @mesh []

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown placement 'Q', expected R, S(<dim>) or P(<reduce>)}}
  %0 = titan.redistribute %x to <@mesh, [Q]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{shard dim must be non-negative, got -1}}
  %0 = titan.redistribute %x to <@mesh, [S(-1)]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown partial reduction 'prod', expected sum, avg, max or min}}
  %0 = titan.redistribute %x to <@mesh, [P(prod)]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.redistribute' op expected 2 placements (one per axis of mesh @mesh), got 1}}
  %0 = titan.redistribute %x to <@mesh, [S(0)]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'titan.redistribute' op placement S(2) on mesh axis "tp" shards dim 2 of a rank-2 tensor}}
  %0 = titan.redistribute %x to <@mesh, [S(0), S(2)]> : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.redistribute' op refers to unknown mesh @nowhere}}
  %0 = titan.redistribute %x to <@nowhere, [R]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
// expected-error @+1 {{argument #0: placements refer to unknown mesh @other}}
func.func @f(%x: tensor<8xf32> {titan.placements = #titan.placements<@other, [R]>}) {
  return
}

// -----

titan.mesh @mesh ["fsdp"=4]
// expected-error @+1 {{argument #0: expected 'titan.placements' to be a #titan.placements attribute, got "S(0)"}}
func.func @f(%x: tensor<8xf32> {titan.placements = "S(0)"}) {
  return
}

// -----

titan.mesh @mesh ["fsdp"=4]
// expected-error @+1 {{result #0: expected 1 placements (one per axis of mesh @mesh), got 2}}
func.func @f(%x: tensor<8xf32>) -> (tensor<8xf32> {titan.placements = #titan.placements<@mesh, [R, R]>}) {
  return %x : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
// expected-error @+1 {{argument #0: placements can only be attached to ranked tensors, got 'f32'}}
func.func @f(%x: f32 {titan.placements = #titan.placements<@mesh, [R]>}) {
  return
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.placements' has 2 entries but the op has 1 results}}
  %0 = titan.add %x, %x {titan.placements = [#titan.placements<@mesh, [R]>, #titan.placements<@mesh, [R]>]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.placements' must be an array with one #titan.placements per result}}
  %0 = titan.add %x, %x {titan.placements = #titan.placements<@mesh, [R]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{result #0: placement S(1) on mesh axis "fsdp" shards dim 1 of a rank-1 tensor}}
  %0 = titan.add %x, %x {titan.placements = [#titan.placements<@mesh, [S(1)]>]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown titan attribute 'titan.sharding'}}
  %0 = titan.add %x, %x {titan.sharding = 1} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'titan.all_gather' op names axis "dp" that mesh @mesh does not have}}
  %0 = titan.all_gather %x on @mesh ["dp"] dim 0 : tensor<8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'titan.all_gather' op names axis "fsdp" more than once}}
  %0 = titan.all_gather %x on @mesh ["fsdp", "fsdp"] dim 0 : tensor<8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.all_reduce' op needs at least one mesh axis}}
  %0 = titan.all_reduce %x on @mesh [] sum : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.all_reduce' op refers to unknown mesh @mesh}}
  %0 = titan.all_reduce %x on @mesh ["tp"] sum : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'titan.all_gather' op expected result type 'tensor<32xf32>', got 'tensor<16xf32>'}}
  %0 = titan.all_gather %x on @mesh ["fsdp"] dim 0 : tensor<8xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'titan.all_gather' op gather_dim 1 is out of range for a rank-1 tensor}}
  %0 = titan.all_gather %x on @mesh ["fsdp"] dim 1 : tensor<8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<32xbf16> {
  // expected-error @+1 {{'titan.all_gather' op result element type 'bf16' differs from operand element type 'f32'}}
  %0 = titan.all_gather %x on @mesh ["fsdp"] dim 0 : tensor<8xf32> -> tensor<32xbf16>
  return %0 : tensor<32xbf16>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<10xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'titan.reduce_scatter' op scatter_dim 0 has size 10, which the group of 4 ranks does not divide}}
  %0 = titan.reduce_scatter %x on @mesh ["fsdp"] dim 0 sum : tensor<10xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{unknown reduction 'prod', expected sum, avg, max or min}}
  %0 = titan.reduce_scatter %x on @mesh ["fsdp"] dim 0 prod : tensor<8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xi64>) -> tensor<8xi64> {
  // expected-error @+1 {{'titan.all_reduce' op cannot average integer tensors}}
  %0 = titan.all_reduce %x on @mesh ["tp"] avg : tensor<8xi64>
  return %0 : tensor<8xi64>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'titan.all_to_all' op split_dim and concat_dim must differ, both are 0}}
  %0 = titan.all_to_all %x on @mesh ["tp"] split 0 concat 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8x3xf32>) -> tensor<16x1xf32> {
  // expected-error @+1 {{'titan.all_to_all' op split_dim 1 has size 3, which the group of 2 ranks does not divide}}
  %0 = titan.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<8x3xf32> -> tensor<16x1xf32>
  return %0 : tensor<16x1xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.broadcast' op root 2 is not a rank of the group of 2}}
  %0 = titan.broadcast %x on @mesh ["tp"] root 2 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'titan.send' op needs exactly one mesh axis, got 2}}
  titan.send %x on @mesh ["fsdp", "tp"] peer 1 tag 0 : tensor<8xf32>
  return
}

// -----

titan.mesh @mesh ["pp"=2, "tp"=2]
func.func @f() -> tensor<8xf32> {
  // expected-error @+1 {{'titan.recv' op peer 2 is not a coordinate of axis "pp" of size 2}}
  %0 = titan.recv on @mesh ["pp"] peer 2 tag 0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{argument #0: 'titan.name' must be a non-empty string}}
func.func @f(%x: tensor<8xf32> {titan.name = ""}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'titan.role' must be "param", "buffer" or "input"}}
func.func @f(%x: tensor<8xf32> {titan.role = "weight"}) {
  return
}

// -----

// expected-error @+1 {{unknown titan result attribute 'titan.role'}}
func.func @f(%x: tensor<8xf32>) -> (tensor<8xf32> {titan.role = "param"}) {
  return %x : tensor<8xf32>
}
