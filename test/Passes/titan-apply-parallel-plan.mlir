// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=8 dp-replicate=2 tp=2" | FileCheck %s
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=4" | FileCheck %s --check-prefix=FSDP
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=3" | FileCheck %s --check-prefix=UNEVEN
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=2 dp-shard=1 dp-replicate=2" | FileCheck %s --check-prefix=DDP
// RUN: titan-opt %s --titan-apply-parallel-plan="world-size=2 dp-shard=1 tp=2 plan=%S/Inputs/rowwise-output.toml" | FileCheck %s --check-prefix=PLAN

// A train step as titan-build-train-step writes it (body elided).
func.func @train_step(
    %emb: tensor<16x8xf32> {titan.name = "tok_embeddings.weight", titan.role = "param"},
    %wq: tensor<8x8xf32> {titan.name = "layers.0.attention.wq.weight", titan.role = "param"},
    %wo: tensor<8x8xf32> {titan.name = "layers.0.attention.wo.weight", titan.role = "param"},
    %norm: tensor<8xf32> {titan.name = "norm.weight", titan.role = "param"},
    %scale: tensor<f32> {titan.name = "scale", titan.role = "param"},
    %out: tensor<16x8xf32> {titan.name = "output.weight", titan.role = "param"},
    %m_wo: tensor<8x8xf32> {titan.name = "exp_avg.layers.0.attention.wo.weight", titan.role = "state"},
    %cos: tensor<4x2xf32> {titan.name = "freqs_cis.real", titan.role = "buffer"},
    %tokens: tensor<4x4xi64> {titan.name = "tokens", titan.role = "input"},
    %labels: tensor<4x4xi64> {titan.name = "labels", titan.role = "input"},
    %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
    %step: tensor<f32> {titan.name = "step", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"},
        tensor<8x8xf32> {titan.name = "param.layers.0.attention.wo.weight"},
        tensor<8x8xf32> {titan.name = "grad.layers.0.attention.wo.weight"}) {
  %loss = titan.constant dense<0.0> : tensor<f32>
  return %loss, %wo, %wo : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// HSDP x TP: dp_replicate 2, fsdp 8 / (2 * 2) = 2, tp 2.
// CHECK: titan.mesh @mesh ["dp_replicate"=2, "fsdp"=2, "cp"=1, "tp"=2]
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: "tok_embeddings.weight", titan.placements = #titan.placements<@mesh, [R, S(1), R, S(0)]>
// CHECK-SAME: "layers.0.attention.wq.weight", titan.placements = #titan.placements<@mesh, [R, S(1), R, S(0)]>
// CHECK-SAME: "layers.0.attention.wo.weight", titan.placements = #titan.placements<@mesh, [R, S(0), R, S(1)]>
// CHECK-SAME: "norm.weight", titan.placements = #titan.placements<@mesh, [R, S(0), R, R]>
// CHECK-SAME: "output.weight", titan.placements = #titan.placements<@mesh, [R, S(1), R, S(0)]>
// CHECK-SAME: "exp_avg.layers.0.attention.wo.weight", titan.placements = #titan.placements<@mesh, [R, S(0), R, S(1)]>
// CHECK-SAME: "freqs_cis.real", titan.placements = #titan.placements<@mesh, [R, R, R, R]>
// CHECK-SAME: "tokens", titan.placements = #titan.placements<@mesh, [S(0), S(0), R, R]>
// CHECK-SAME: "labels", titan.placements = #titan.placements<@mesh, [S(0), S(0), R, R]>
// CHECK-SAME: "lr", titan.placements = #titan.placements<@mesh, [R, R, R, R]>
// CHECK-SAME: -> (tensor<f32> {titan.name = "loss", titan.placements = #titan.placements<@mesh, [R, R, R, R]>}
// CHECK-SAME: {titan.name = "param.layers.0.attention.wo.weight", titan.placements = #titan.placements<@mesh, [R, S(0), R, S(1)]>}
// CHECK-SAME: {titan.name = "grad.layers.0.attention.wo.weight", titan.placements = #titan.placements<@mesh, [R, S(0), R, S(1)]>}

// FSDP only: data_parallel_shard_degree = -1 takes the whole world.
// FSDP: titan.mesh @mesh ["dp_replicate"=1, "fsdp"=4, "cp"=1, "tp"=1]
// FSDP-SAME: {{$}}
// FSDP: "layers.0.attention.wo.weight", titan.placements = #titan.placements<@mesh, [R, S(0), R, R]>
// A 0-d parameter has no dim to shard: replicated, as under DDP.
// FSDP: "scale", titan.placements = #titan.placements<@mesh, [R, R, R, R]>
// FSDP: "tokens", titan.placements = #titan.placements<@mesh, [R, S(0), R, R]>

// Degrees that do not divide a dim shard it unevenly, as DTensor does (16
// rows over 3 ranks: 6, 6, 4).
// UNEVEN: titan.mesh @mesh ["dp_replicate"=1, "fsdp"=3, "cp"=1, "tp"=1]
// UNEVEN: tensor<16x8xf32> {titan.name = "tok_embeddings.weight", titan.placements = #titan.placements<@mesh, [R, S(0), R, R]>
// UNEVEN: "tokens", titan.placements = #titan.placements<@mesh, [R, S(0), R, R]>

// Data parallel (DDP): everything replicated but the batch.
// DDP: titan.mesh @mesh ["dp_replicate"=2, "fsdp"=1, "cp"=1, "tp"=1]
// DDP: "layers.0.attention.wo.weight", titan.placements = #titan.placements<@mesh, [R, R, R, R]>
// DDP: "tokens", titan.placements = #titan.placements<@mesh, [S(0), R, R, R]>

// A plan file replaces the default plan; unmatched parameters replicate.
// PLAN: "tok_embeddings.weight", titan.placements = #titan.placements<@mesh, [R, R, R, R]>
// PLAN: "layers.0.attention.wq.weight", titan.placements = #titan.placements<@mesh, [R, R, R, R]>
// PLAN: "layers.0.attention.wo.weight", titan.placements = #titan.placements<@mesh, [R, R, R, S(1)]>
