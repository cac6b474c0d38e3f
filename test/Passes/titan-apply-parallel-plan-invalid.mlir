// RUN: not titan-opt %s --titan-apply-parallel-plan="world-size=6 tp=4" 2>&1 | FileCheck %s --check-prefix=WORLD
// RUN: not titan-opt %s --titan-apply-parallel-plan="world-size=8 dp-shard=2 tp=2" 2>&1 | FileCheck %s --check-prefix=PRODUCT
// RUN: not titan-opt %s --titan-apply-parallel-plan="world-size=2 tp=2 plan=%S/Inputs/missing.toml" 2>&1 | FileCheck %s --check-prefix=NOPLAN
// RUN: not titan-opt %s --titan-apply-parallel-plan="world-size=2 tp=2 plan=%S/Inputs/bad-plan.toml" 2>&1 | FileCheck %s --check-prefix=BADPLAN

func.func @train_step(
    %wq: tensor<8x8xf32> {titan.name = "layers.0.attention.wq.weight", titan.role = "param"},
    %tokens: tensor<4x4xi64> {titan.name = "tokens", titan.role = "input"})
    -> (tensor<8x8xf32> {titan.name = "param.layers.0.attention.wq.weight"}) {
  return %wq : tensor<8x8xf32>
}

// WORLD: error: titan-apply-parallel-plan: the world size 6 is not divisible by data_parallel_replicate_degree=1 x context_parallel_degree=1 x tensor_parallel_degree=4 = 4, so data_parallel_shard_degree=-1 has no value
// WORLD-NOT: see current operation
// PRODUCT: error: titan-apply-parallel-plan: data_parallel_replicate_degree=1 x data_parallel_shard_degree=2 x context_parallel_degree=1 x tensor_parallel_degree=2 = 4, but the world size is 8; the degrees must multiply to the world size
// NOPLAN: error: titan-apply-parallel-plan: cannot read plan '{{.*}}missing.toml': No such file or directory
// BADPLAN: error: titan-apply-parallel-plan: {{.*}}bad-plan.toml:3: placement 'P(sum)' must be S(<dim>) or R
