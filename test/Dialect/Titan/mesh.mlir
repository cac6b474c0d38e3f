// RUN: titan-opt %s | titan-opt | FileCheck %s
// RUN: titan-opt %s --mlir-print-op-generic | titan-opt | FileCheck %s

// CHECK: titan.mesh @mesh ["dp_replicate"=1, "fsdp"=4, "cp"=1, "tp"=2]
titan.mesh @mesh ["dp_replicate"=1, "fsdp"=4, "cp"=1, "tp"=2]
// CHECK: titan.mesh @world ["pp"=2, "fsdp"=8]
titan.mesh @world ["pp"=2, "fsdp"=8]

// CHECK-LABEL: func.func @placements
// CHECK-SAME: {titan.placements = #titan.placements<@mesh, [R, S(0), R, S(1)]>}
// CHECK-SAME: -> (tensor<16x8xf32> {titan.placements = #titan.placements<@mesh, [R, S(0), R, S(0)]>})
func.func @placements(%w: tensor<16x8xf32> {titan.placements = #titan.placements<@mesh, [R, S(0), R, S(1)]>})
    -> (tensor<16x8xf32> {titan.placements = #titan.placements<@mesh, [R, S(0), R, S(0)]>}) {
  // CHECK: titan.add {{.*}} {titan.placements = [#titan.placements<@mesh, [P(sum), P(avg), P(max), P(min)]>]}
  %0 = titan.add %w, %w {titan.placements = [#titan.placements<@mesh, [P(sum), P(avg), P(max), P(min)]>]} : tensor<16x8xf32>
  // CHECK: titan.redistribute %{{.*}} to <@mesh, [R, S(0), R, S(0)]> : tensor<16x8xf32>
  %1 = titan.redistribute %0 to <@mesh, [R, S(0), R, S(0)]> : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// Integer and bf16 tensors can be redistributed too.
// CHECK-LABEL: func.func @types
func.func @types(%ids: tensor<4x64xi64>, %x: tensor<4x64x256xbf16>) -> (tensor<4x64xi64>, tensor<4x64x256xbf16>) {
  // CHECK: titan.redistribute %{{.*}} to <@mesh, [R, S(0), S(1), R]> : tensor<4x64xi64>
  %0 = titan.redistribute %ids to <@mesh, [R, S(0), S(1), R]> : tensor<4x64xi64>
  // CHECK: titan.redistribute %{{.*}} to <@mesh, [R, S(0), S(1), S(2)]> : tensor<4x64x256xbf16>
  %1 = titan.redistribute %x to <@mesh, [R, S(0), S(1), S(2)]> : tensor<4x64x256xbf16>
  return %0, %1 : tensor<4x64xi64>, tensor<4x64x256xbf16>
}

// Names and roles of function arguments and results.
// CHECK-LABEL: func.func @named
// CHECK-SAME: (%{{.*}}: tensor<16x8xf32> {titan.name = "layers.0.attention.wq.weight", titan.role = "param"}, %{{.*}}: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"})
// CHECK-SAME: -> (tensor<16x8xf32> {titan.name = "logits"})
func.func @named(%w: tensor<16x8xf32> {titan.name = "layers.0.attention.wq.weight", titan.role = "param"},
                 %t: tensor<2x4xi64> {titan.name = "tokens", titan.role = "input"})
    -> (tensor<16x8xf32> {titan.name = "logits"}) {
  return %w : tensor<16x8xf32>
}
