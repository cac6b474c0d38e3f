// A tensor-parallel plan that names none of the model's parameters (the
// built-in plan is torchtitan's Llama names) leaves every weight whole on
// each "tp" rank: a warning says so and how to give the model's names; a
// rule that matches nothing (a typo) is named. Without tensor parallelism
// the plan is unused and nothing is said.
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=2 tp=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=2 tp=2 plan=%S/Inputs/partial-plan.toml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TYPO
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=2" -o /dev/null 2>&1 | FileCheck %s --allow-empty --check-prefix=NOTP

func.func @train_step(
    %q: tensor<8x8xf32> {titan.name = "blocks.0.q.weight", titan.role = "param"},
    %o: tensor<8x8xf32> {titan.name = "blocks.0.o.weight", titan.role = "param"},
    %tokens: tensor<4x4xi64> {titan.name = "tokens", titan.role = "input"})
    -> (tensor<8x8xf32> {titan.name = "param.blocks.0.q.weight"}) {
  return %q : tensor<8x8xf32>
}

// NONE: warning: tensor parallelism over 2 ranks, but no parameter of the model matches a rule of the built-in plan (torchtitan's Llama names): every weight stays whole on each rank; name the model's parameters in [parallelism] tp_plan (docs/config.md)
// NONE-NOT: warning
// TYPO: warning: rule 'block.*.o.weight' of '{{.*}}partial-plan.toml' matches no parameter of the model
// TYPO-NOT: warning
// NOTP-NOT: warning
