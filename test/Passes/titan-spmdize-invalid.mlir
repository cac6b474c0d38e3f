// RUN: titan-opt %s --titan-spmdize --split-input-file --verify-diagnostics

titan.mesh @mesh ["dp"=2]

// expected-error @+1 {{argument #0: dim 0 is dynamic and sharded over mesh axis "dp"; titan-spmdize needs static sizes for sharded dims}}
func.func @dynamic(%x: tensor<?x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  return
}

// -----

titan.mesh @mesh ["cp"=2]

func.func @context_parallel(%q: tensor<1x2x8x4xf32> {titan.placements = #titan.placements<@mesh, [S(2)]>}) {
  // expected-error @+1 {{'titan.attention' op operand #0 has dim 2 sharded over mesh axis "cp", but the op needs that dim whole on every rank (a need_replication factor of its sharding rule); redistribute it to replicate that dim first}}
  %0:2 = titan.attention %q, %q, %q causal {titan.placements = [#titan.placements<@mesh, [S(2)]>, #titan.placements<@mesh, [S(2)]>]} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
  return
}

// -----

titan.mesh @mesh ["tp"=2]

func.func @loss_parallel(%logits: tensor<4x16xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>},
                         %labels: tensor<4xi64> {titan.placements = #titan.placements<@mesh, [R]>}) {
  // expected-error @+1 {{'titan.cross_entropy' op result #0 is R on mesh axis "tp", but the op's sharding rule (shard operand #0 dim 1 (reduction) there) makes it P(sum)}}
  %0 = titan.cross_entropy %logits, %labels {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<4x16xf32>, tensor<4xi64> -> tensor<f32>
  return
}

// -----

titan.mesh @mesh ["tp"=2]

func.func @softmax(%x: tensor<4x16xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>}) {
  // expected-error @+1 {{'titan.softmax' op operand #0 has dim 1 sharded over mesh axis "tp", but the op needs that dim whole on every rank (a need_replication factor of its sharding rule); redistribute it to replicate that dim first}}
  %0 = titan.softmax %x dim 1 {titan.placements = [#titan.placements<@mesh, [S(1)]>]} : tensor<4x16xf32>
  return
}

// -----

titan.mesh @mesh ["tp"=2]

func.func @rms_norm(%x: tensor<4x16xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>},
                    %w: tensor<16xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  // expected-error @+1 {{'titan.rms_norm' op operand #0 has dim 1 sharded over mesh axis "tp", but the op needs that dim whole on every rank (a need_replication factor of its sharding rule); redistribute it to replicate that dim first}}
  %0 = titan.rms_norm %x, %w eps 1.0e-05 {titan.placements = [#titan.placements<@mesh, [S(1)]>]} : tensor<4x16xf32>, tensor<16xf32>
  return
}

// -----

titan.mesh @mesh ["tp"=2]

func.func @embedding_result(%t: tensor<16x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                            %ids: tensor<3xi64> {titan.placements = #titan.placements<@mesh, [R]>}) {
  // expected-error @+1 {{'titan.embedding' op result #0 is R on mesh axis "tp", but the op's sharding rule (shard operand #0 dim 0 (reduction) there) makes it P(sum)}}
  %0 = titan.embedding %t, %ids {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<16x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return
}

// -----

titan.mesh @mesh ["tp"=2]

func.func @embedding_ids(%t: tensor<16x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                         %ids: tensor<4xi64> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  // expected-error @+1 {{'titan.embedding' op operand #1 is S(0) on mesh axis "tp", but the op's sharding rule (shard operand #0 dim 0 (reduction) there) makes it R}}
  %0 = titan.embedding %t, %ids {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<16x4xf32>, tensor<4xi64> -> tensor<4x4xf32>
  return
}

// -----

titan.mesh @mesh ["tp"=2]

func.func @reshape(%x: tensor<4x6xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>}) {
  // expected-error @+1 {{'titan.reshape' op operand #0 has dim 1 sharded over mesh axis "tp", but its factor is an inner part of a dim of another operand or result, whose shards would not be contiguous; redistribute it to replicate that dim first}}
  %0 = titan.reshape %x {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<4x6xf32> -> tensor<24xf32>
  return
}

// -----

titan.mesh @mesh ["tp"=2]

func.func @elementwise(%a: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                       %b: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>}) {
  // expected-error @+1 {{'titan.add' op operand #1 is S(1) on mesh axis "tp", but the op's sharding rule (shard operand #0 dim 0 (parallel) there) makes it S(0)}}
  %0 = titan.add %a, %b {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<4x4xf32>
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @reduce(%x: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  // expected-error @+1 {{'titan.reduce_max' op result #0 is P(sum) on mesh axis "dp", but the op's sharding rule (shard operand #0 dim 0 (reduction) there) makes it P(max)}}
  %0 = titan.reduce_max %x dims [0] {titan.placements = [#titan.placements<@mesh, [P(sum)]>]} : tensor<4x4xf32> -> tensor<4xf32>
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @concat(%x: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  // expected-error @+1 {{'titan.concat' op operand #0 has dim 0 sharded over mesh axis "dp", but the op needs that dim whole on every rank (a need_replication factor of its sharding rule); redistribute it to replicate that dim first}}
  %0 = titan.concat %x, %x dim 0 {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @slice(%x: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  // expected-error @+1 {{'titan.slice' op operand #0 has dim 0 sharded over mesh axis "dp", but the op needs that dim whole on every rank (a need_replication factor of its sharding rule); redistribute it to replicate that dim first}}
  %0 = titan.slice %x [0, 0] to [2, 4] step [1, 1] {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<4x4xf32> -> tensor<2x4xf32>
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @collective(%x: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [P(sum)]>}) {
  // expected-error @+1 {{'titan.all_reduce' is an op of the local program; the global program communicates through titan.redistribute only}}
  %0 = titan.all_reduce %x on @mesh ["dp"] sum {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<4x4xf32>
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @returned(%x: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [P(sum)]>})
    -> (tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [R]>}) {
  // expected-error @+1 {{returns a value placed as #titan.placements<@mesh, [P(sum)]> as result #0, declared as #titan.placements<@mesh, [R]>; redistribute it before returning}}
  return %x : tensor<4x4xf32>
}

// -----

titan.mesh @mesh ["dp"=2]

func.func private @opaque(tensor<4x4xf32>) -> tensor<4x4xf32>

func.func @unknown_op(%x: tensor<4x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  // expected-error @+1 {{'func.call' op has no sharding rule, so titan-spmdize computes it only on replicated values, but a value is S(0) on mesh axis "dp"; redistribute it to R or give the op a rule}}
  %0 = func.call @opaque(%x) {titan.placements = [#titan.placements<@mesh, [S(0)]>]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @loss_not_partial(%logits: tensor<4x16xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                            %labels: tensor<4xi64> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  // expected-error @+1 {{'titan.cross_entropy' op result #0 is R on mesh axis "dp", but the op's sharding rule (shard operand #0 dim 0 (reduction) there) makes it P(sum)}}
  %0 = titan.cross_entropy %logits, %labels {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<4x16xf32>, tensor<4xi64> -> tensor<f32>
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @norm_grad(%x: tensor<4x8xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                     %w: tensor<8xf32> {titan.placements = #titan.placements<@mesh, [R]>}) {
  // expected-error @+1 {{'titan.rms_norm_grad' op result #1 is R on mesh axis "dp", but the op's sharding rule (shard operand #0 dim 0 (reduction) there) makes it P(sum)}}
  %dx, %dw = titan.rms_norm_grad %x, %w, %x eps 1.0e-05 {titan.placements = [#titan.placements<@mesh, [S(0)]>, #titan.placements<@mesh, [R]>]} : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @pad(%x: tensor<4x8xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>}) {
  // expected-error @+1 {{'titan.pad' op operand #0 has dim 1 sharded over mesh axis "dp", but the op needs that dim whole on every rank (a need_replication factor of its sharding rule); redistribute it to replicate that dim first}}
  %0 = titan.pad %x [0, 0] step [1, 2] {titan.placements = [#titan.placements<@mesh, [S(1)]>]} : tensor<4x8xf32> -> tensor<4x16xf32>
  return
}

// -----

titan.mesh @a ["dp"=2]
titan.mesh @b ["dp"=2]

// A function is partitioned over one mesh.
// expected-error @+1 {{argument #1: placements on mesh @b in a function placed on mesh @a; titan-spmdize partitions a function over one mesh}}
func.func @two_meshes(%x: tensor<4xf32> {titan.placements = #titan.placements<@a, [S(0)]>},
                      %y: tensor<4xf32> {titan.placements = #titan.placements<@b, [S(0)]>}) {
  return
}
