// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=4 tp=2 sequence-parallel=true" | FileCheck %s
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=4 tp=2" | FileCheck %s --check-prefix=NOSP
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=2 sequence-parallel=true" | FileCheck %s --check-prefix=NOTP

// Sequence parallelism asks for the norms' outputs [batch, seq, dim] to be
// split along the sequence over "tp" (a hint for titan-propagate-placements).
func.func @forward(%x: tensor<4x8x16xf32> {titan.name = "tokens_embedded", titan.role = "input"},
                   %w: tensor<16xf32> {titan.name = "norm.weight", titan.role = "param"})
    -> (tensor<4x8x16xf32> {titan.name = "logits"}) {
  %0 = titan.rms_norm %x, %w eps 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>
  return %0 : tensor<4x8x16xf32>
}

// CHECK: titan.rms_norm {{.*}} {titan.placements = [#titan.placements<@mesh, [R, S(0), R, S(1)]>]}
// NOSP-NOT: titan.rms_norm {{.*}}titan.placements
// NOTP-NOT: titan.rms_norm {{.*}}titan.placements
