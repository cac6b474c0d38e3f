// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 schedule=1F1B" | FileCheck %s --check-prefix=RANK0
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=1 microbatches=2 schedule=1F1B" | FileCheck %s --check-prefix=RANK1
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 schedule=GPipe" | FileCheck %s --check-prefix=GPIPE
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=1 microbatches=2 schedule=1F1B" | titan-opt --split-input-file --verify-each > /dev/null
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 schedule=2F2B" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=2" 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 stages=4 schedule=Interleaved1F1B microbatches=2" 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 stage-blocks=2,1" 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: printf '0F0,0F1,0B0,0B1\r\n1F0,1B0,1F1,1B1\r\n' > %t.csv
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 schedule-csv=%t.csv" | FileCheck %s --check-prefix=RANK0
// RUN: printf '0F0,0F1,0B0\r\n1F0,1B0,1F1,1B1\r\n' > %t-bad.csv
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 schedule-csv=%t-bad.csv" 2>&1 | FileCheck %s --check-prefix=CSV
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 schedule-csv=%t-missing.csv" 2>&1 | FileCheck %s --check-prefix=NOCSV
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 stages=4 schedule-csv=%t.csv" 2>&1 | FileCheck %s --check-prefix=CSVSTAGES
// RUN: not titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=0" 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2" | not titan-opt --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: echo "module {}" | not titan-opt --titan-partition-pipeline="degree=2" 2>&1 | FileCheck %s --check-prefix=NOSTEP

// Two blocks (layers.0 on stage 0, layers.1 on stage 1), the loss after
// them (stage 1), and an SGD-like update. Tokens [2, 4] hold one
// microbatch: the program takes both microbatches ([4, 4]) and cuts rows
// [2m, 2m + 2) for microbatch m. h0 goes to stage 1 in the forward, its
// gradient comes back in the backward; each stage sums its weight's
// gradients over the microbatches, divides by 2, and updates only its own
// weight; the loss (the mean of the microbatch losses) goes from rank 1 to
// rank 0.

// RANK0-LABEL: titan.mesh @pipeline ["pp"=2]
// RANK0: func.func @train_step(%[[W0:.*]]: tensor<4x4xf32> {titan.name = "layers.0.w", titan.role = "param"}, %[[X:.*]]: tensor<4x4xf32> {titan.name = "tokens", titan.role = "input"}, %[[LR:.*]]: tensor<f32> {titan.name = "lr", titan.role = "input"})
// RANK0-SAME: -> (tensor<f32> {titan.name = "loss"}, tensor<4x4xf32> {titan.name = "param.layers.0.w"})
// RANK0-SAME: titan.pipeline = {{{.*}}degree = 2 : i64, {{.*}}microbatches = 2 : i64, rank = 0 : i64, schedule = "{{1F1B|.*\.csv}}", {{.*}}stage_blocks = array<i64: 1, 1>
// 1F1B on rank 0: F0, F1, B0, B1.
// RANK0: %[[C0:.*]] = titan.reshape %[[X]] : tensor<4x4xf32> -> tensor<1x4x4xf32>
// RANK0: %[[S0:.*]] = titan.slice %[[C0]] [0, 0, 0] to [1, 2, 4]
// RANK0: %[[M0:.*]] = titan.reshape %[[S0]] : tensor<1x2x4xf32> -> tensor<2x4xf32>
// RANK0: %[[H00:.*]] = titan.matmul %[[M0]], %[[W0]]
// RANK0: titan.send %[[H00]] on @pipeline ["pp"] peer 1 tag 0
// RANK0: %[[S1:.*]] = titan.slice %{{.*}} [0, 2, 0] to [1, 4, 4]
// RANK0: %[[H01:.*]] = titan.matmul %{{.*}}, %[[W0]]
// RANK0: titan.send %[[H01]] on @pipeline ["pp"] peer 1 tag 64
// RANK0: %[[D0:.*]] = titan.recv on @pipeline ["pp"] peer 1 tag {{[0-9]+}} : tensor<2x4xf32>
// RANK0: %[[G0:.*]] = titan.matmul %[[M0]], %[[D0]] transpose_lhs
// RANK0: %[[D1:.*]] = titan.recv on @pipeline ["pp"] peer 1 tag {{[0-9]+}} : tensor<2x4xf32>
// RANK0: %[[G1:.*]] = titan.matmul %{{.*}}, %[[D1]] transpose_lhs
// RANK0: %[[SUM:.*]] = titan.add %[[G0]], %[[G1]]
// RANK0: %[[MEAN:.*]] = titan.scale %[[SUM]] by 5.000000e-01
// RANK0: %[[NEW:.*]] = titan.sub %[[W0]], %{{.*}}
// RANK0-NOT: layers.1.w
// The loss, from rank 1, is received after the rank's own results.
// RANK0: %[[LOSS:.*]] = titan.recv on @pipeline ["pp"] peer 1 tag {{[0-9]+}} : tensor<f32>
// RANK0-NEXT: return %[[LOSS]], %[[NEW]] : tensor<f32>, tensor<4x4xf32>

// 1F1B on rank 1 (the last stage): F0, B0, F1, B1.
// RANK1: func.func @train_step(%[[W1:.*]]: tensor<4x4xf32> {titan.name = "layers.1.w", titan.role = "param"}, %[[X:.*]]: tensor<4x4xf32> {titan.name = "tokens", titan.role = "input"}, %[[LR:.*]]: tensor<f32> {titan.name = "lr", titan.role = "input"})
// RANK1: %[[A0:.*]] = titan.recv on @pipeline ["pp"] peer 0 tag 0 : tensor<2x4xf32>
// RANK1: %[[H10:.*]] = titan.matmul %[[A0]], %[[W1]]
// RANK1: %[[L0:.*]] = titan.reduce_sum
// RANK1: %[[DH0:.*]] = titan.scale %[[H10]] by 2.000000e+00
// The input gradient is sent before the weight gradient is computed.
// RANK1: %[[DA0:.*]] = titan.matmul %[[DH0]], %[[W1]] transpose_rhs
// RANK1: titan.send %[[DA0]] on @pipeline ["pp"] peer 0
// RANK1: titan.matmul %[[A0]], %[[DH0]] transpose_lhs
// RANK1: %[[A1:.*]] = titan.recv on @pipeline ["pp"] peer 0 tag 64 : tensor<2x4xf32>
// RANK1: %[[L1:.*]] = titan.reduce_sum
// RANK1: %[[LS:.*]] = titan.add %[[L0]], %[[L1]]
// RANK1: %[[LOSS:.*]] = titan.scale %[[LS]] by 5.000000e-01
// RANK1: titan.send %[[LOSS]] on @pipeline ["pp"] peer 0
// RANK1: return %[[LOSS]], %{{.*}} : tensor<f32>, tensor<4x4xf32>

// GPipe on rank 0: both forwards, then both backwards (in microbatch order).
// GPIPE: titan.send {{.*}} tag 0 :
// GPIPE-NEXT: titan.reshape
// GPIPE: titan.send {{.*}} tag 64 :
// GPIPE: titan.recv

// SCHEDULE: error: titan-partition-pipeline: unknown pipeline schedule '2F2B': the known schedules are 1F1B, Interleaved1F1B, GPipe, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble (case does not matter)
// RANK: error: titan-partition-pipeline: rank 2 is not a rank of a pipeline of 2
// BLOCKS: error: titan-partition-pipeline: the model has 2 transformer blocks, fewer than the 4 pipeline stages
// SPLIT: error: titan-partition-pipeline: stage-blocks must give 2 non-negative block counts adding up to the model's 2 blocks
// CSV: error: titan-partition-pipeline: {{.*}}-bad.csv: rank 0: stage 0 microbatch 1 has no backward: it needs one B, or one I and one W
// NOCSV: error: titan-partition-pipeline: cannot read the schedule CSV '{{.*}}-missing.csv': No such file or directory
// CSVSTAGES: error: titan-partition-pipeline: the schedule in '{{.*}}.csv' runs 2 stages, but the model is cut into 4 (pipeline_parallel_schedule, layers_per_stage or module_fqns_per_model_part must agree with the CSV)
// MICRO: error: titan-partition-pipeline: microbatches must be at least 1, got 0
// TWICE: error: titan-partition-pipeline: the module already has a symbol @pipeline
// NOSTEP: error: titan-partition-pipeline: no @train_step to partition

#f0 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0">[unknown]])
#f1 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.1">[unknown]])
#fl = loc(fused<"titan.phase.forward">[unknown])
#b0 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.0">[unknown]])
#b1 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.1">[unknown]])
#bl = loc(fused<"titan.phase.backward">[unknown])
#o0 = loc(fused<"titan.phase.optimizer">[fused<"titan.module.layers.0">[unknown]])
#o1 = loc(fused<"titan.phase.optimizer">[fused<"titan.module.layers.1">[unknown]])
func.func @train_step(
    %w0: tensor<4x4xf32> {titan.name = "layers.0.w", titan.role = "param"},
    %w1: tensor<4x4xf32> {titan.name = "layers.1.w", titan.role = "param"},
    %x: tensor<2x4xf32> {titan.name = "tokens", titan.role = "input"},
    %lr: tensor<f32> {titan.name = "lr", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"},
        tensor<4x4xf32> {titan.name = "param.layers.0.w"},
        tensor<4x4xf32> {titan.name = "param.layers.1.w"}) {
  %h0 = titan.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#f0)
  %h1 = titan.matmul %h0, %w1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#f1)
  %sq = titan.mul %h1, %h1 : tensor<2x4xf32> loc(#fl)
  %loss = titan.reduce_sum %sq dims [0, 1] : tensor<2x4xf32> -> tensor<f32> loc(#fl)
  %dh1 = titan.scale %h1 by 2.0 : tensor<2x4xf32> loc(#bl)
  %gw1 = titan.matmul %h0, %dh1 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32> loc(#b1)
  %dh0 = titan.matmul %dh1, %w1 transpose_rhs : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#b1)
  %gw0 = titan.matmul %x, %dh0 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32> loc(#b0)
  %l0 = titan.broadcast_in_dim %lr dims [] : tensor<f32> -> tensor<4x4xf32> loc(#o0)
  %u0 = titan.mul %gw0, %l0 : tensor<4x4xf32> loc(#o0)
  %n0 = titan.sub %w0, %u0 : tensor<4x4xf32> loc(#o0)
  %l1 = titan.broadcast_in_dim %lr dims [] : tensor<f32> -> tensor<4x4xf32> loc(#o1)
  %u1 = titan.mul %gw1, %l1 : tensor<4x4xf32> loc(#o1)
  %n1 = titan.sub %w1, %u1 : tensor<4x4xf32> loc(#o1)
  return %loss, %n0, %n1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A weight both stages read (tied, as GPT-2's embedding and output
// projection): each rank keeps it, sums its own part of the gradient over
// the microbatches, and the two parts are exchanged once per step and
// added in rank order, so both ranks apply the same update.
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=0 microbatches=2 schedule=GPipe" 2>&1 | FileCheck %s --check-prefix=TIED0
// RUN: titan-opt %s --split-input-file --titan-partition-pipeline="degree=2 rank=1 microbatches=2 schedule=GPipe" 2>&1 | FileCheck %s --check-prefix=TIED1
// TIED0: func.func @train_step(%[[W:.*]]: tensor<4x4xf32> {titan.name = "tied.w", titan.role = "param"}
// TIED0: %[[SUM0:.*]] = titan.add %{{.*}}, %{{.*}} : tensor<4x4xf32>
// TIED0: %[[PART0:.*]] = titan.scale %[[SUM0]] by 5.000000e-01 : tensor<4x4xf32>
// TIED0: titan.send %[[PART0]] on @pipeline ["pp"] peer 1 tag [[TAG:[0-9]+]]
// TIED0-NEXT: %[[PART1:.*]] = titan.recv on @pipeline ["pp"] peer 1 tag [[TAG]]
// TIED0-NEXT: %[[GRAD:.*]] = titan.add %[[PART0]], %[[PART1]]
// TIED0: %[[LOSS:.*]] = titan.recv on @pipeline ["pp"] peer 1 tag 1610612736 : tensor<f32>
// TIED0-NEXT: return %[[LOSS]], {{.*}} : tensor<f32>, tensor<4x4xf32>
// TIED1: func.func @train_step(%[[W:.*]]: tensor<4x4xf32> {titan.name = "tied.w", titan.role = "param"}
// TIED1: %[[PART1:.*]] = titan.scale %{{.*}} by 5.000000e-01 : tensor<4x4xf32>
// TIED1: titan.send %[[PART1]] on @pipeline ["pp"] peer 0 tag [[TAG:[0-9]+]]
// TIED1-NEXT: %[[PART0:.*]] = titan.recv on @pipeline ["pp"] peer 0 tag [[TAG]]
// TIED1-NEXT: %[[GRAD:.*]] = titan.add %[[PART0]], %[[PART1]]
// TIED1: return {{.*}} : tensor<f32>, tensor<4x4xf32>
// Under 1F1B too, both ranks exchange the sums (the tied gradient's parts)
// before the results, in the order of the step: rank 1 sends the loss
// after the exchange, and rank 0 receives it after its own results (NCCL,
// which has no tags, matches a receive with the sender's oldest message).
// RANK0: titan.send %{{.*}} on @pipeline ["pp"] peer 1 tag [[PART:[0-9]+]] : tensor<4x4xf32>
// RANK0-NEXT: titan.recv on @pipeline ["pp"] peer 1 tag [[PART]] : tensor<4x4xf32>
// RANK0: %[[TIEDLOSS:.*]] = titan.recv on @pipeline ["pp"] peer 1 tag 1610612736 : tensor<f32>
// RANK0-NEXT: return %[[TIEDLOSS]], %{{.*}} : tensor<f32>, tensor<4x4xf32>
// RANK1: titan.send %{{.*}} on @pipeline ["pp"] peer 0 tag [[PART:[0-9]+]] : tensor<4x4xf32>
// RANK1-NEXT: titan.recv on @pipeline ["pp"] peer 0 tag [[PART]] : tensor<4x4xf32>
// RANK1: titan.send %{{.*}} on @pipeline ["pp"] peer 0 tag 1610612736 : tensor<f32>

#tf0 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0">[unknown]])
#tf1 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.1">[unknown]])
#tfl = loc(fused<"titan.phase.forward">[unknown])
#tb0 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.0">[unknown]])
#tb1 = loc(fused<"titan.phase.backward">[fused<"titan.module.layers.1">[unknown]])
#tbl = loc(fused<"titan.phase.backward">[unknown])
#to = loc(fused<"titan.phase.optimizer">[fused<"titan.module.tied">[unknown]])
func.func @train_step(
    %w: tensor<4x4xf32> {titan.name = "tied.w", titan.role = "param"},
    %x: tensor<2x4xf32> {titan.name = "tokens", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"},
        tensor<4x4xf32> {titan.name = "param.tied.w"}) {
  %h0 = titan.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#tf0)
  %h1 = titan.matmul %h0, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#tf1)
  %loss = titan.reduce_sum %h1 dims [0, 1] : tensor<2x4xf32> -> tensor<f32> loc(#tfl)
  %one = titan.constant dense<1.0> : tensor<2x4xf32> loc(#tbl)
  %dh1 = titan.mul %one, %h1 : tensor<2x4xf32> loc(#tbl)
  %g1 = titan.matmul %h0, %dh1 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32> loc(#tb1)
  %dh0 = titan.matmul %dh1, %w transpose_rhs : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32> loc(#tb1)
  %g0 = titan.matmul %x, %dh0 transpose_lhs : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32> loc(#tb0)
  %g = titan.add %g1, %g0 : tensor<4x4xf32> loc(#tb0)
  %n = titan.sub %w, %g : tensor<4x4xf32> loc(#to)
  return %loss, %n : tensor<f32>, tensor<4x4xf32>
}
