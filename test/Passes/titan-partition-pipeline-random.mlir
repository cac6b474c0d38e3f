// RUN: titan-opt %s --titan-partition-pipeline="degree=2 rank=0 microbatches=2" -verify-diagnostics

// A rank's program computes what does not depend on the microbatch once for
// all of them: dropout's random numbers would be the same for every
// microbatch, so a step that draws them is refused.
func.func @train_step(%step: tensor<f32> {titan.name = "step", titan.role = "input"}) -> tensor<2x4xf32> {
  %positions = titan.iota dim 1 : tensor<2x4xi64>
  // expected-error @+1 {{dropout in training mode under pipeline parallelism is not supported yet (every microbatch would drop the same elements); set the model's dropout to 0, export it in eval mode, or train without pipeline_parallel_degree}}
  %u = titan.random_uniform %positions stream 0 seed 42 step %step : tensor<2x4xi64> -> tensor<2x4xf32>
  return %u : tensor<2x4xf32>
}
