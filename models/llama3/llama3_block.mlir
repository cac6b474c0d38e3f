// One Llama 3 transformer block in the titan dialect, annotated with the
// placements of torchtitan's FSDP 2 x TP 2 plan (with sequence parallelism):
//
//   mesh ["fsdp"=2, "tp"=2]; batch 2, seq 64, dim 256, 16 query heads and
//   4 KV heads of 16, FFN 768.
//
// - parameters are FSDP-sharded on dim 0 over "fsdp"; wq/wk/wv and w1/w3 are
//   column-parallel (S(0) over "tp"), wo and w2 row-parallel (S(1) over "tp"),
//   norms are replicated over "tp";
// - the FSDP all-gather of each weight is a redistribute from [S(0), ...] to
//   [R, ...]; sequence parallelism gathers the normalized activations along
//   the sequence before the column-parallel matmuls and reduce-scatters the
//   row-parallel outputs back to S(1).
//
// tools/scripts/main.sh prints it verified by titan-opt.

titan.mesh @mesh ["fsdp"=2, "tp"=2]

func.func @llama3_block(
    %x: tensor<2x64x256xf32> {titan.name = "h", titan.role = "input", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>},
    %cos: tensor<64x8xf32> {titan.name = "rope.cos", titan.role = "buffer", titan.placements = #titan.placements<@mesh, [R, R]>},
    %sin: tensor<64x8xf32> {titan.name = "rope.sin", titan.role = "buffer", titan.placements = #titan.placements<@mesh, [R, R]>},
    %attn_norm: tensor<256xf32> {titan.name = "layers.0.attention_norm.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %wq: tensor<256x256xf32> {titan.name = "layers.0.attention.wq.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
    %wk: tensor<64x256xf32> {titan.name = "layers.0.attention.wk.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
    %wv: tensor<64x256xf32> {titan.name = "layers.0.attention.wv.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
    %wo: tensor<256x256xf32> {titan.name = "layers.0.attention.wo.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>},
    %ffn_norm: tensor<256xf32> {titan.name = "layers.0.ffn_norm.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), R]>},
    %w1: tensor<768x256xf32> {titan.name = "layers.0.feed_forward.w1.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), S(0)]>},
    %w2: tensor<256x768xf32> {titan.name = "layers.0.feed_forward.w2.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>},
    %w3: tensor<768x256xf32> {titan.name = "layers.0.feed_forward.w3.weight", titan.role = "param", titan.placements = #titan.placements<@mesh, [S(0), S(0)]>})
    -> (tensor<2x64x256xf32> {titan.name = "h_out", titan.placements = #titan.placements<@mesh, [S(0), S(1)]>}) {
  // FSDP: gather the parameters over "fsdp" (they stay TP-sharded).
  %attn_norm_g = titan.redistribute %attn_norm to <@mesh, [R, R]> : tensor<256xf32>
  %wq_g = titan.redistribute %wq to <@mesh, [R, S(0)]> : tensor<256x256xf32>
  %wk_g = titan.redistribute %wk to <@mesh, [R, S(0)]> : tensor<64x256xf32>
  %wv_g = titan.redistribute %wv to <@mesh, [R, S(0)]> : tensor<64x256xf32>
  %wo_g = titan.redistribute %wo to <@mesh, [R, S(1)]> : tensor<256x256xf32>

  // Attention. The norm runs on the sequence shard; its output is gathered
  // along the sequence for the column-parallel projections.
  %n1 = titan.rms_norm %x, %attn_norm_g eps 1.000000e-05 {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<2x64x256xf32>, tensor<256xf32>
  %n1_g = titan.redistribute %n1 to <@mesh, [S(0), R]> : tensor<2x64x256xf32>
  %q = titan.matmul %n1_g, %wq_g transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x256xf32>, tensor<256x256xf32> -> tensor<2x64x256xf32>
  %k = titan.matmul %n1_g, %wk_g transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x256xf32>, tensor<64x256xf32> -> tensor<2x64x64xf32>
  %v = titan.matmul %n1_g, %wv_g transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x256xf32>, tensor<64x256xf32> -> tensor<2x64x64xf32>
  %q4 = titan.reshape %q {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x256xf32> -> tensor<2x64x16x16xf32>
  %k4 = titan.reshape %k {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x64xf32> -> tensor<2x64x4x16xf32>
  %v4 = titan.reshape %v {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x64xf32> -> tensor<2x64x4x16xf32>
  %qr = titan.rope %q4, %cos, %sin interleaved {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x16x16xf32>, tensor<64x8xf32>
  %kr = titan.rope %k4, %cos, %sin interleaved {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x4x16xf32>, tensor<64x8xf32>
  %qt = titan.transpose %qr [0, 2, 1, 3] {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<2x64x16x16xf32> -> tensor<2x16x64x16xf32>
  %kt = titan.transpose %kr [0, 2, 1, 3] {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<2x64x4x16xf32> -> tensor<2x4x64x16xf32>
  %vt = titan.transpose %v4 [0, 2, 1, 3] {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<2x64x4x16xf32> -> tensor<2x4x64x16xf32>
  %attn, %lse = titan.attention %qt, %kt, %vt causal {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>, #titan.placements<@mesh, [S(0), S(1)]>]} : tensor<2x16x64x16xf32>, tensor<2x4x64x16xf32>
  %attn_t = titan.transpose %attn [0, 2, 1, 3] {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x16x64x16xf32> -> tensor<2x64x16x16xf32>
  %attn_f = titan.reshape %attn_t {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x16x16xf32> -> tensor<2x64x256xf32>
  // Row-parallel output projection: partial sums, reduce-scattered along
  // the sequence.
  %o = titan.matmul %attn_f, %wo_g transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), P(sum)]>]} : tensor<2x64x256xf32>, tensor<256x256xf32> -> tensor<2x64x256xf32>
  %o_s = titan.redistribute %o to <@mesh, [S(0), S(1)]> : tensor<2x64x256xf32>
  %h = titan.add %x, %o_s {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<2x64x256xf32>

  // SwiGLU feed-forward, the same pattern.
  %ffn_norm_g = titan.redistribute %ffn_norm to <@mesh, [R, R]> : tensor<256xf32>
  %w1_g = titan.redistribute %w1 to <@mesh, [R, S(0)]> : tensor<768x256xf32>
  %w2_g = titan.redistribute %w2 to <@mesh, [R, S(1)]> : tensor<256x768xf32>
  %w3_g = titan.redistribute %w3 to <@mesh, [R, S(0)]> : tensor<768x256xf32>
  %n2 = titan.rms_norm %h, %ffn_norm_g eps 1.000000e-05 {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<2x64x256xf32>, tensor<256xf32>
  %n2_g = titan.redistribute %n2 to <@mesh, [S(0), R]> : tensor<2x64x256xf32>
  %gate = titan.matmul %n2_g, %w1_g transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x256xf32>, tensor<768x256xf32> -> tensor<2x64x768xf32>
  %up = titan.matmul %n2_g, %w3_g transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x256xf32>, tensor<768x256xf32> -> tensor<2x64x768xf32>
  %act = titan.silu %gate {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x768xf32>
  %mix = titan.mul %act, %up {titan.placements = [#titan.placements<@mesh, [S(0), S(2)]>]} : tensor<2x64x768xf32>
  %down = titan.matmul %mix, %w2_g transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0), P(sum)]>]} : tensor<2x64x768xf32>, tensor<256x768xf32> -> tensor<2x64x256xf32>
  %down_s = titan.redistribute %down to <@mesh, [S(0), S(1)]> : tensor<2x64x256xf32>
  %out = titan.add %h, %down_s {titan.placements = [#titan.placements<@mesh, [S(0), S(1)]>]} : tensor<2x64x256xf32>
  return %out : tensor<2x64x256xf32>
}
