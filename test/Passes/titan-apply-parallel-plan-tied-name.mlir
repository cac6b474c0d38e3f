// A tensor-parallel rule that names a tied parameter by its other name
// (lm_head.weight, tied to embed.weight: one argument, named by the first)
// matches no parameter; the warning says which parameter the name is and
// that rules name it by its first name (the module's titan.state_dict).
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=2 tp=2 plan=%S/Inputs/tied-name-plan.toml" -o /dev/null 2>&1 | FileCheck %s

module attributes {titan.state_dict = {lm_head.weight = "embed.weight"}} {
  func.func @train_step(
      %embed: tensor<16x8xf32> {titan.name = "embed.weight", titan.role = "param"},
      %q: tensor<8x8xf32> {titan.name = "blocks.0.q.weight", titan.role = "param"},
      %tokens: tensor<4x4xi64> {titan.name = "tokens", titan.role = "input"})
      -> (tensor<8x8xf32> {titan.name = "param.blocks.0.q.weight"}) {
    return %q : tensor<8x8xf32>
  }
}

// CHECK: warning: rule 'lm_head.weight' of '{{.*}}tied-name-plan.toml' matches no parameter of the model: 'lm_head.weight' is another name of the tied parameter 'embed.weight'; rules place a tied parameter by that first name
// CHECK-NOT: warning
