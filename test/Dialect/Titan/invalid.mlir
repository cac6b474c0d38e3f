// RUN: titan-opt %s -split-input-file -verify-diagnostics

func.func @binary_types(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "titan.add"(%a, %b) : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @binary_int(%a: tensor<4xi32>) {
  // Division is of floats only (integer tensors divide in float32).
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = titan.div %a, %a : tensor<4xi32>
  return
}

// -----

func.func @unary_types(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "titan.exp"(%a) : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @gelu_approximate(%a: tensor<4xf32>) {
  // expected-error @+1 {{unknown approximate 'erf', expected one of: none, tanh}}
  %0 = titan.gelu %a approximate erf : tensor<4xf32>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+2 {{'titan.constant' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'titan.constant' op failed to infer returned types}}
  %0 = "titan.constant"() <{value = dense<0.0> : tensor<4xf32>}> : () -> tensor<2xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = titan.cast %a : tensor<4xf32> to tensor<8xbf16>
  return
}

// -----

func.func @iota_dim() {
  // expected-error @+1 {{dim 2 is out of range for a rank-2 tensor}}
  %0 = titan.iota dim 2 : tensor<4x4xi64>
  return
}

// -----

func.func @compare_predicate(%a: tensor<4xf32>) {
  // expected-error @+1 {{unknown predicate 'olt', expected one of: eq, ne, lt, le, gt, ge}}
  %0 = titan.compare olt, %a, %a : tensor<4xf32> -> tensor<4xi1>
  return
}

// -----

func.func @compare_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = titan.compare lt, %a, %a : tensor<4xf32> -> tensor<2xi1>
  return
}

// -----

func.func @select_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{all of {on_true, on_false, result} have same type}}
  %0 = "titan.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @select_shape(%c: tensor<8xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = titan.select %c, %a, %a : tensor<8xi1>, tensor<4xf32>
  return
}

// -----

func.func @reduce_dim_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dim 2 is out of range for a rank-2 tensor}}
  %0 = titan.reduce_sum %x dims [2] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_unsorted(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dims [1, 0] must be sorted in increasing order}}
  %0 = titan.reduce_max %x dims [1, 0] : tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_duplicate(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dims [1, 1] name dim 1 more than once}}
  %0 = titan.reduce_mean %x dims [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{expected result type 'tensor<4x1xf32>', got 'tensor<4xf32>'}}
  %0 = titan.reduce_sum %x dims [1] keepdim : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dim 2 is out of range for a rank-2 tensor}}
  %0 = titan.softmax %x dim 2 : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dim 5 is out of range for a rank-2 tensor}}
  %0 = titan.log_softmax %x dim 5 : tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_eps(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got 0.000000e+00}}
  %0 = titan.rms_norm %x, %w eps 0.0 : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_norm_weight(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{expected weight type 'tensor<8xf32>', got 'tensor<4xf32>'}}
  %0 = titan.rms_norm %x, %w eps 1.0e-5 : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @rms_norm_scalar(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{expects input of rank >= 1, got 'tensor<f32>'}}
  %0 = titan.rms_norm %x, %w eps 1.0e-5 : tensor<f32>, tensor<1xf32>
  return
}

// -----

func.func @layer_norm_weight_type(%x: tensor<4x8xf32>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{expected weight type 'tensor<8xf32>', got 'tensor<8xbf16>'}}
  %0 = titan.layer_norm %x, %w, %w eps 1.0e-5 : tensor<4x8xf32>, tensor<8xbf16>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{all of {weight, bias} have same type}}
  %0 = "titan.layer_norm"(%x, %w, %b) {eps = 1.0e-5 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_eps(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive and finite, got -1.000000e+00}}
  %0 = titan.layer_norm %x, %w, %w eps -1.0 : tensor<4x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{expects lhs of rank >= 2, got 'tensor<8xf32>'}}
  %0 = titan.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%a: tensor<2x3x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{expects rhs of rank 2 or of lhs's rank 4, got 'tensor<3x8x4xf32>'}}
  %0 = titan.matmul %a, %b : tensor<2x3x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x3x4x4xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x4xbf16>) {
  // expected-error @+1 {{operand element types differ: 'f32' and 'bf16'}}
  %0 = titan.matmul %a, %b : tensor<4x8xf32>, tensor<8x4xbf16> -> tensor<4x4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{contraction dims differ: lhs has 8, rhs has 4}}
  %0 = titan.matmul %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{batch dim 0 differs: lhs has 2, rhs has 3}}
  %0 = titan.matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<2x4x8xf32>, %b: tensor<16x8xf32>) {
  // expected-error @+1 {{expected result type 'tensor<2x4x16xf32>', got 'tensor<2x4x8xf32>'}}
  %0 = titan.matmul %a, %b transpose_rhs : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @matmul_addend_type(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %h: tensor<4x2xbf16>) {
  // expected-error @+1 {{failed to verify that addend has the result's type}}
  %0 = "titan.matmul"(%a, %b, %h) : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<4x2xbf16>) -> tensor<4x2xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<16xf32>, %ids: tensor<4xi64>) {
  // expected-error @+1 {{expects table of rank 2, got 'tensor<16xf32>'}}
  %0 = titan.embedding %t, %ids : tensor<16xf32>, tensor<4xi64> -> tensor<4x16xf32>
  return
}

// -----

func.func @embedding_result(%t: tensor<16x8xf32>, %ids: tensor<2x4xi64>) {
  // expected-error @+1 {{expected result type 'tensor<2x4x8xf32>', got 'tensor<2x4x16xf32>'}}
  %0 = titan.embedding %t, %ids : tensor<16x8xf32>, tensor<2x4xi64> -> tensor<2x4x16xf32>
  return
}

// -----

func.func @random_uniform_shape(%c: tensor<4xi64>) {
  // expected-error @+1 {{result shape must equal the counters' shape}}
  %0 = titan.random_uniform %c stream 0 : tensor<4xi64> -> tensor<8xf32>
  return
}

// -----

func.func @random_uniform_counters(%c: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 64-bit signless integer values}}
  %0 = titan.random_uniform %c stream 0 : tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

func.func @check_ids_bound(%ids: tensor<4xi64>) {
  // expected-error @+1 {{bound 0 must be at least 1: a table without rows has no valid id}}
  %0 = titan.check_ids %ids below 0 of "t" : tensor<4xi64>
  return
}

// -----

func.func @check_ids_type(%ids: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = titan.check_ids %ids below 4 of "t" : tensor<4xf32>
  return
}

// -----

func.func @embedding_ids(%t: tensor<16x8xf32>, %ids: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = titan.embedding %t, %ids : tensor<16x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @rope_style(%x: tensor<2x4x2x8xf32>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{unknown style 'complex', expected one of: interleaved, half}}
  %0 = titan.rope %x, %c, %c complex : tensor<2x4x2x8xf32>, tensor<4x4xf32>
  return
}

// -----

func.func @rope_rank(%x: tensor<4x2x8xf32>, %c: tensor<4x4xf32>) {
  // expected-error @+1 {{expects input of rank 4, got 'tensor<4x2x8xf32>'}}
  %0 = titan.rope %x, %c, %c half : tensor<4x2x8xf32>, tensor<4x4xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<2x4x2x7xf32>, %c: tensor<4x3xf32>) {
  // expected-error @+1 {{head_dim 7 must be even}}
  %0 = titan.rope %x, %c, %c half : tensor<2x4x2x7xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @rope_table(%x: tensor<2x4x2x8xbf16>, %c: tensor<4x8xf32>) {
  // expected-error @+1 {{expected cos/sin table type 'tensor<4x4xf32>', got 'tensor<4x8xf32>'}}
  %0 = titan.rope %x, %c, %c interleaved : tensor<2x4x2x8xbf16>, tensor<4x8xf32>
  return
}

// -----

func.func @rope_sin(%x: tensor<2x4x2x8xf32>, %c: tensor<4x4xf32>, %s: tensor<4x4xbf16>) {
  // expected-error @+1 {{all of {cos, sin} have same type}}
  %0 = "titan.rope"(%x, %c, %s) {style = "half"} : (tensor<2x4x2x8xf32>, tensor<4x4xf32>, tensor<4x4xbf16>) -> tensor<2x4x2x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<2x4x16xf32>, %kv: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{expects q of rank 4, got 'tensor<2x4x16xf32>'}}
  %0:2 = titan.attention %q, %kv, %kv : tensor<2x4x16xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @attention_kv_rank(%q: tensor<2x4x16x8xf32>, %kv: tensor<4x16x8xf32>) {
  // expected-error @+1 {{expects k and v of rank 4, got 'tensor<4x16x8xf32>'}}
  %0:2 = titan.attention %q, %kv, %kv : tensor<2x4x16x8xf32>, tensor<4x16x8xf32>
  return
}

// -----

func.func @attention_types(%q: tensor<2x4x16x8xf32>, %kv: tensor<2x4x16x8xbf16>) {
  // expected-error @+1 {{element types differ: q has 'f32', k and v have 'bf16'}}
  %0:2 = titan.attention %q, %kv, %kv : tensor<2x4x16x8xf32>, tensor<2x4x16x8xbf16>
  return
}

// -----

func.func @attention_heads(%q: tensor<2x6x16x8xf32>, %kv: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{4 kv heads do not divide 6 q heads}}
  %0:2 = titan.attention %q, %kv, %kv causal : tensor<2x6x16x8xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @attention_seq(%q: tensor<2x8x16x8xf32>, %kv: tensor<2x4x32x8xf32>) {
  // expected-error @+1 {{expected k and v type 'tensor<2x4x16x8xf32>', got 'tensor<2x4x32x8xf32>'}}
  %0:2 = titan.attention %q, %kv, %kv : tensor<2x8x16x8xf32>, tensor<2x4x32x8xf32>
  return
}

// -----

func.func @attention_v(%q: tensor<2x8x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x4xf32>) {
  // expected-error @+1 {{all of {k, v} have same type}}
  %0:2 = "titan.attention"(%q, %k, %v) : (tensor<2x8x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x4xf32>) -> (tensor<2x8x16x8xf32>, tensor<2x8x16xf32>)
  return
}

// -----

func.func @attention_lse(%q: tensor<2x8x16x8xbf16>, %kv: tensor<2x4x16x8xbf16>) {
  // expected-error @+1 {{failed to verify that lse is q's [batch, q_heads, seq] in f32 (f64 for f64 q)}}
  %0:2 = "titan.attention"(%q, %kv, %kv) : (tensor<2x8x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>) -> (tensor<2x8x16x8xbf16>, tensor<2x8x16xbf16>)
  return
}

// -----

func.func @attention_scale(%q: tensor<2x8x16x8xf32>, %kv: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{scale must be positive and finite, got -5.000000e-01}}
  %0:2 = titan.attention %q, %kv, %kv scale -0.5 : tensor<2x8x16x8xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @cross_entropy_labels(%l: tensor<8x16xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{expected labels type 'tensor<8xi64>', got 'tensor<4xi64>'}}
  %0 = titan.cross_entropy %l, %y : tensor<8x16xf32>, tensor<4xi64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_rank(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+1 {{expects logits of rank >= 1, got 'tensor<f32>'}}
  %0 = titan.cross_entropy %l, %y : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_result(%l: tensor<8x16xbf16>, %y: tensor<8xi64>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float or 64-bit float values}}
  %0 = titan.cross_entropy %l, %y : tensor<8x16xbf16>, tensor<8xi64> -> tensor<bf16>
  return
}

// -----

func.func @reshape_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{changes the element count from 32 to 30}}
  %0 = titan.reshape %x : tensor<4x8xf32> -> tensor<5x6xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{changes the element type from 'f32' to 'bf16'}}
  %0 = titan.reshape %x : tensor<4x8xf32> -> tensor<32xbf16>
  return
}

// -----

func.func @transpose_size(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{permutation [0] has 1 entries for a rank-2 tensor}}
  %0 = titan.transpose %x [0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @transpose_duplicate(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dims [1, 1] name dim 1 more than once}}
  %0 = titan.transpose %x [1, 1] : tensor<4x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @transpose_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dim -1 is out of range for a rank-2 tensor}}
  %0 = titan.transpose %x [-1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{expected result type 'tensor<8x4xf32>', got 'tensor<4x8xf32>'}}
  %0 = titan.transpose %x [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_entries(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{start, limit and step need one entry per dim of the rank-2 input, got 1, 2 and 2}}
  %0 = titan.slice %x [0] to [4, 8] step [1, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_step(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{step 0 of dim 1 must be positive}}
  %0 = titan.slice %x [0, 0] to [4, 8] step [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_limit(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{slice 0:9 of dim 1 is not within 0:8}}
  %0 = titan.slice %x [0, 0] to [4, 9] step [1, 1] : tensor<4x8xf32> -> tensor<4x9xf32>
  return
}

// -----

func.func @slice_reversed(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{slice 3:2 of dim 0 is not within 0:4}}
  %0 = titan.slice %x [3, 0] to [2, 8] step [1, 1] : tensor<4x8xf32> -> tensor<0x8xf32>
  return
}

// -----

func.func @slice_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{expected result type 'tensor<2x3xf32>', got 'tensor<2x4xf32>'}}
  %0 = titan.slice %x [0, 1] to [4, 8] step [2, 3] : tensor<4x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{needs at least one operand}}
  %0 = "titan.concat"() {dim = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{dim 2 is out of range for a rank-2 tensor}}
  %0 = titan.concat %x, %x dim 2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_operand(%x: tensor<4x8xf32>, %y: tensor<2x8xf32>) {
  // expected-error @+1 {{expected operand #1 type 'tensor<4x8xf32>', got 'tensor<2x8xf32>'}}
  %0 = titan.concat %x, %y dim 1 : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_result(%x: tensor<4x8xf32>, %y: tensor<4x2xf32>) {
  // expected-error @+1 {{expected result type 'tensor<4x10xf32>', got 'tensor<4x16xf32>'}}
  %0 = titan.concat %x, %y dim 1 : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @broadcast_entries(%x: tensor<8xf32>) {
  // expected-error @+1 {{dims [0, 1] need one entry per dim of the rank-1 operand}}
  %0 = titan.broadcast_in_dim %x dims [0, 1] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_range(%x: tensor<8xf32>) {
  // expected-error @+1 {{dim 2 is out of range for a rank-2 tensor}}
  %0 = titan.broadcast_in_dim %x dims [2] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_duplicate(%x: tensor<1x8xf32>) {
  // expected-error @+1 {{dims [1, 1] name dim 1 more than once}}
  %0 = titan.broadcast_in_dim %x dims [1, 1] : tensor<1x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_size(%x: tensor<4xf32>) {
  // expected-error @+1 {{operand dim 0 of size 4 cannot broadcast to result dim 1 of size 8}}
  %0 = titan.broadcast_in_dim %x dims [1] : tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_type(%x: tensor<8xf32>) {
  // expected-error @+1 {{changes the element type from 'f32' to 'bf16'}}
  %0 = titan.broadcast_in_dim %x dims [1] : tensor<8xf32> -> tensor<4x8xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Meshes, placements, function attributes and collectives.
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'titan.mesh' op has axis "tp" more than once}}
titan.mesh @mesh ["tp"=2, "tp"=2]

// -----

// expected-error @+1 {{'titan.mesh' op axis "fsdp" must have a positive size, got 0}}
titan.mesh @mesh ["fsdp"=0]

// -----

// expected-error @+1 {{'titan.mesh' op has more than 1048576 devices (the product of its axis sizes); titan plans every rank ahead of time and supports meshes up to that size}}
titan.mesh @mesh ["a"=4294967296, "b"=4294967296]

// -----

// expected-error @+1 {{'titan.mesh' op has more than 1048576 devices}}
titan.mesh @mesh ["dp"=1024, "tp"=1025]

// -----

// expected-error @+1 {{'titan.mesh' op has an axis with an empty name}}
titan.mesh @mesh [""=2]

// -----

// expected-error @+1 {{'titan.mesh' op needs at least one axis}}
titan.mesh @mesh []

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown placement 'Q', expected R, S(<dim>) or P(<reduce>)}}
  %0 = titan.redistribute %x to <@mesh, [Q]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{shard dim must be non-negative, got -1}}
  %0 = titan.redistribute %x to <@mesh, [S(-1)]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown partial reduction 'prod', expected sum, avg, max or min}}
  %0 = titan.redistribute %x to <@mesh, [P(prod)]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.redistribute' op expected 2 placements (one per axis of mesh @mesh), got 1}}
  %0 = titan.redistribute %x to <@mesh, [S(0)]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'titan.redistribute' op placement S(2) on mesh axis "tp" shards dim 2 of a rank-2 tensor}}
  %0 = titan.redistribute %x to <@mesh, [S(0), S(2)]> : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.redistribute' op refers to unknown mesh @nowhere}}
  %0 = titan.redistribute %x to <@nowhere, [R]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
// expected-error @+1 {{argument #0: placements refer to unknown mesh @other}}
func.func @f(%x: tensor<8xf32> {titan.placements = #titan.placements<@other, [R]>}) {
  return
}

// -----

titan.mesh @mesh ["fsdp"=4]
// expected-error @+1 {{argument #0: expected 'titan.placements' to be a #titan.placements attribute, got "S(0)"}}
func.func @f(%x: tensor<8xf32> {titan.placements = "S(0)"}) {
  return
}

// -----

titan.mesh @mesh ["fsdp"=4]
// expected-error @+1 {{result #0: expected 1 placements (one per axis of mesh @mesh), got 2}}
func.func @f(%x: tensor<8xf32>) -> (tensor<8xf32> {titan.placements = #titan.placements<@mesh, [R, R]>}) {
  return %x : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
// expected-error @+1 {{argument #0: placements can only be attached to ranked tensors, got 'f32'}}
func.func @f(%x: f32 {titan.placements = #titan.placements<@mesh, [R]>}) {
  return
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.placements' has 2 entries but the op has 1 results}}
  %0 = titan.add %x, %x {titan.placements = [#titan.placements<@mesh, [R]>, #titan.placements<@mesh, [R]>]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.placements' must be an array with one #titan.placements per result}}
  %0 = titan.add %x, %x {titan.placements = #titan.placements<@mesh, [R]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{result #0: placement S(1) on mesh axis "fsdp" shards dim 1 of a rank-1 tensor}}
  %0 = titan.add %x, %x {titan.placements = [#titan.placements<@mesh, [S(1)]>]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown titan attribute 'titan.sharding'}}
  %0 = titan.add %x, %x {titan.sharding = 1} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'titan.all_gather' op names axis "dp" that mesh @mesh does not have}}
  %0 = titan.all_gather %x on @mesh ["dp"] dim 0 : tensor<8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'titan.all_gather' op names axis "fsdp" more than once}}
  %0 = titan.all_gather %x on @mesh ["fsdp", "fsdp"] dim 0 : tensor<8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.all_reduce' op needs at least one mesh axis}}
  %0 = titan.all_reduce %x on @mesh [] sum : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.all_reduce' op refers to unknown mesh @mesh}}
  %0 = titan.all_reduce %x on @mesh ["tp"] sum : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'titan.all_gather' op expected result type 'tensor<32xf32>', got 'tensor<16xf32>'}}
  %0 = titan.all_gather %x on @mesh ["fsdp"] dim 0 : tensor<8xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'titan.all_gather' op gather_dim 1 is out of range for a rank-1 tensor}}
  %0 = titan.all_gather %x on @mesh ["fsdp"] dim 1 : tensor<8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<32xbf16> {
  // expected-error @+1 {{'titan.all_gather' op result element type 'bf16' differs from operand element type 'f32'}}
  %0 = titan.all_gather %x on @mesh ["fsdp"] dim 0 : tensor<8xf32> -> tensor<32xbf16>
  return %0 : tensor<32xbf16>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<10xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'titan.reduce_scatter' op scatter_dim 0 has size 10, which the group of 4 ranks does not divide}}
  %0 = titan.reduce_scatter %x on @mesh ["fsdp"] dim 0 sum : tensor<10xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{unknown reduction 'prod', expected sum, avg, max or min}}
  %0 = titan.reduce_scatter %x on @mesh ["fsdp"] dim 0 prod : tensor<8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xi64>) -> tensor<8xi64> {
  // expected-error @+1 {{'titan.all_reduce' op cannot average integer tensors}}
  %0 = titan.all_reduce %x on @mesh ["tp"] avg : tensor<8xi64>
  return %0 : tensor<8xi64>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'titan.all_to_all' op exchanging the chunks of one dim keeps the type, but 'tensor<8x4xf32>' becomes 'tensor<4x8xf32>'}}
  %0 = titan.all_to_all %x on @mesh ["tp"] split 0 concat 0 : tensor<8x4xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8x3xf32>) -> tensor<16x1xf32> {
  // expected-error @+1 {{'titan.all_to_all' op split_dim 1 has size 3, which the group of 2 ranks does not divide}}
  %0 = titan.all_to_all %x on @mesh ["tp"] split 1 concat 0 : tensor<8x3xf32> -> tensor<16x1xf32>
  return %0 : tensor<16x1xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.broadcast' op root 2 is not a rank of the group of 2}}
  %0 = titan.broadcast %x on @mesh ["tp"] root 2 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4, "tp"=2]
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'titan.send' op needs exactly one mesh axis, got 2}}
  titan.send %x on @mesh ["fsdp", "tp"] peer 1 tag 0 : tensor<8xf32>
  return
}

// -----

titan.mesh @mesh ["pp"=2, "tp"=2]
func.func @f() -> tensor<8xf32> {
  // expected-error @+1 {{'titan.recv' op peer 2 is not a coordinate of axis "pp" of size 2}}
  %0 = titan.recv on @mesh ["pp"] peer 2 tag 0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{argument #0: 'titan.name' must be a non-empty string}}
func.func @f(%x: tensor<8xf32> {titan.name = ""}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'titan.role' must be "param", "state", "buffer" or "input"}}
func.func @f(%x: tensor<8xf32> {titan.role = "weight"}) {
  return
}

// -----

// expected-error @+1 {{unknown titan result attribute 'titan.role'}}
func.func @f(%x: tensor<8xf32>) -> (tensor<8xf32> {titan.role = "param"}) {
  return %x : tensor<8xf32>
}

// -----

func.func @f(%x: tensor<8xf32>, %dy: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'titan.gelu_grad' op unknown approximate 'erf', expected one of: none, tanh}}
  %0 = titan.gelu_grad %x, %dy approximate erf : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @f(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x8xf32>) {
  // expected-error @+1 {{'titan.rms_norm_grad' op eps must be positive and finite, got 0.000000e+00}}
  %0, %1 = titan.rms_norm_grad %x, %w, %dy eps 0.0 : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_norm_grad_addend_type(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x8xf32>, %g: tensor<2x8xbf16>) {
  // expected-error @+1 {{failed to verify that addend has the input's type}}
  %0, %1 = "titan.rms_norm_grad"(%x, %w, %dy, %g) <{eps = 1.0e-5 : f64}> : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2x8xbf16>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x8xf32>, %w: tensor<4xf32>, %dy: tensor<2x8xf32>) {
  // expected-error @+1 {{'titan.layer_norm_grad' op expected weight type 'tensor<8xf32>', got 'tensor<4xf32>'}}
  %0, %1, %2 = titan.layer_norm_grad %x, %w, %dy eps 1.0e-5 : tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @f(%ids: tensor<2x3xi64>, %dy: tensor<2x3x4xf32>) -> tensor<16x4x1xf32> {
  // expected-error @+1 {{'titan.embedding_grad' op expects result of rank 2, got 'tensor<16x4x1xf32>'}}
  %0 = titan.embedding_grad %ids, %dy : tensor<2x3xi64>, tensor<2x3x4xf32> -> tensor<16x4x1xf32>
  return %0 : tensor<16x4x1xf32>
}

// -----

func.func @f(%ids: tensor<2x3xi64>, %dy: tensor<3x2x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'titan.embedding_grad' op expected grad type 'tensor<2x3x4xf32>', got 'tensor<3x2x4xf32>'}}
  %0 = titan.embedding_grad %ids, %dy : tensor<2x3xi64>, tensor<3x2x4xf32> -> tensor<16x4xf32>
  return %0 : tensor<16x4xf32>
}

// -----

func.func @f(%q: tensor<1x4x8x16xf32>, %kv: tensor<1x3x8x16xf32>, %lse: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'titan.attention_grad' op 3 kv heads do not divide 4 q heads}}
  %0, %1, %2 = titan.attention_grad %q, %kv, %kv, %q, %lse, %q : tensor<1x4x8x16xf32>, tensor<1x3x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x8x16xf32>, %kv: tensor<1x2x8x16xf32>, %lse: tensor<1x4x8xf32>) {
  // expected-error @+1 {{'titan.attention_grad' op scale must be positive and finite, got -1.000000e+00}}
  %0, %1, %2 = titan.attention_grad %q, %kv, %kv, %q, %lse, %q scale -1.0 : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x8x16xf32>, %kv: tensor<1x2x8x16xf32>, %lse: tensor<1x4x16xf32>) {
  // expected-error @+1 {{'titan.attention_grad' op failed to verify that lse is q's [batch, q_heads, seq] in f32 (f64 for f64 q)}}
  %0:3 = "titan.attention_grad"(%q, %kv, %kv, %q, %lse, %q) : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x16xf32>, tensor<1x4x8x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

func.func @f(%logits: tensor<4x8xf32>, %labels: tensor<8xi64>, %g: tensor<f32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'titan.cross_entropy_grad' op expected labels type 'tensor<4xi64>', got 'tensor<8xi64>'}}
  %0 = titan.cross_entropy_grad %logits, %labels, %g : tensor<4x8xf32>, tensor<8xi64>, tensor<f32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @f(%logits: tensor<4x8xbf16>, %labels: tensor<4xi64>, %g: tensor<f64>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{'titan.cross_entropy_grad' op has an f64 loss for 'tensor<4x8xbf16>' logits; only f64 logits give an f64 loss}}
  %0 = titan.cross_entropy_grad %logits, %labels, %g : tensor<4x8xbf16>, tensor<4xi64>, tensor<f64>
  return %0 : tensor<4x8xbf16>
}

// -----

func.func @f(%logits: tensor<4x8xf32>, %labels: tensor<4xi64>) -> tensor<f64> {
  // expected-error @+1 {{'titan.cross_entropy' op has an f64 loss for 'tensor<4x8xf32>' logits; only f64 logits give an f64 loss}}
  %0 = titan.cross_entropy %logits, %labels : tensor<4x8xf32>, tensor<4xi64> -> tensor<f64>
  return %0 : tensor<f64>
}

// -----

func.func @f(%x: tensor<4x3xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'titan.pad' op start and step need one entry per dim of the rank-2 input, got 2 and 1}}
  %0 = titan.pad %x [0, 0] step [1] : tensor<4x3xf32> -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

func.func @f(%x: tensor<4x3xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'titan.pad' op step 0 of dim 0 must be positive}}
  %0 = titan.pad %x [0, 0] step [0, 1] : tensor<4x3xf32> -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

func.func @f(%x: tensor<4x3xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'titan.pad' op start -1 of dim 1 must not be negative}}
  %0 = titan.pad %x [0, -1] step [1, 1] : tensor<4x3xf32> -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

func.func @f(%x: tensor<4x3xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'titan.pad' op dim 0 of size 4 placed at 1 with step 3 ends at 11, beyond the result's 8}}
  %0 = titan.pad %x [1, 0] step [3, 1] : tensor<4x3xf32> -> tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

func.func @f(%x: tensor<4x3xf32>) -> tensor<8x3xf64> {
  // expected-error @+1 {{'titan.pad' op changes the element type from 'f32' to 'f64'}}
  %0 = titan.pad %x [0, 0] step [2, 1] : tensor<4x3xf32> -> tensor<8x3xf64>
  return %0 : tensor<8x3xf64>
}

// -----

// expected-error @+1 {{argument #0: 'titan.sequence_order' chunks must be a permutation of 0..3}}
func.func @f(%x: tensor<2x8xi64> {titan.sequence_order = array<i64: 1, 0, 3, 3, 2>}) {
  return
}

// -----

// expected-error @+1 {{result #0: 'titan.sequence_order': dim 1 of 'tensor<2x6xf32>' does not split into 4 equal chunks}}
func.func @f(%x: tensor<2x6xf32>) -> (tensor<2x6xf32> {titan.sequence_order = array<i64: 1, 0, 3, 1, 2>}) {
  return %x : tensor<2x6xf32>
}

// -----

// expected-error @+1 {{argument #0: 'titan.sequence_order' names dim 2 of a rank-2 tensor}}
func.func @f(%x: tensor<2x8xi64> {titan.sequence_order = array<i64: 2, 1, 0>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'titan.sequence_order' must be array<i64: dim, chunk, chunk, ...> (at least two chunks) on a ranked tensor}}
func.func @f(%x: tensor<2x8xi64> {titan.sequence_order = array<i64: 1, 0>}) {
  return
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @local_redistribute_type(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'titan.local_redistribute' op operand type 'tensor<4x8xf32>' is not the shard of 'tensor<4x8xf32>' under #titan.placements<@mesh, [S(0)]> (expected 'tensor<2x8xf32>')}}
  %0 = titan.local_redistribute %x of tensor<4x8xf32> from <@mesh, [S(0)]> to <@mesh, [R]> : tensor<4x8xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

titan.mesh @a ["dp"=2]
titan.mesh @b ["dp"=2]

func.func @local_redistribute_meshes(%x: tensor<2x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{moves a shard from mesh @a to mesh @b; both placements must name one mesh}}
  %0 = titan.local_redistribute %x of tensor<4x8xf32> from <@a, [S(0)]> to <@b, [R]> : tensor<2x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

titan.mesh @mesh ["dp"=2]

func.func @local_redistribute_dim(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{placement S(1) on mesh axis "dp" shards dim 1 of a rank-1 tensor}}
  %0 = titan.local_redistribute %x of tensor<4xf32> from <@mesh, [S(1)]> to <@mesh, [R]> : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @operand_placements(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'titan.operand_placements' has 2 entries but the op has 1 operands}}
  %0 = titan.neg %x {titan.operand_placements = [#titan.placements<@mesh, [R]>, #titan.placements<@mesh, [R]>]} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #0: 'titan.global_shape' must be array<i64> with one size >= 0 per dim of a ranked tensor}}
func.func @global_shape_rank(%x: tensor<3x4xf32> {titan.global_shape = array<i64: 5>}) {
  return
}

// -----

// expected-error @+1 {{result #0: 'titan.global_shape' must be array<i64> with one size >= 0 per dim of a ranked tensor}}
func.func @global_shape_negative(%x: tensor<3xf32>) -> (tensor<3xf32> {titan.global_shape = array<i64: -5>}) {
  return %x : tensor<3xf32>
}

// -----

// expected-error @+1 {{'titan.padding_flops' must be an array<i64> on a function}}
func.func @padding_flops() attributes {titan.padding_flops = 3 : i64} {
  return
}

// -----

func.func @recompute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'titan.recompute' must be a unit attribute}}
  %0 = titan.neg %x {titan.recompute = 1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @microbatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'titan.microbatch' must be a non-negative integer}}
  %0 = titan.neg %x {titan.microbatch = -1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @microbatch_unit(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'titan.microbatch' must be a non-negative integer}}
  %0 = titan.neg %x {titan.microbatch} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

titan.mesh @mesh ["fsdp"=4]
func.func @async_without_wait(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{the result of an asynchronous collective ('titan.async') must have one use, a titan.wait}}
  %0 = titan.all_gather %x on @mesh ["fsdp"] dim 0 {titan.async} : tensor<8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @async_compute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'titan.async' belongs on a collective with a result}}
  %0 = titan.neg %x {titan.async} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @wait_for_compute(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = titan.neg %x : tensor<4xf32>
  // expected-error @+1 {{'titan.wait' op waits for the result of a collective}}
  %1 = titan.wait %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @adamw_grad_shape(%p: tensor<4x8xf32>, %g: tensor<8x4xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{expected grad type 'tensor<4x8xf32>', got 'tensor<8x4xf32>'}}
  %0:3 = titan.adamw %p, %g, %p, %p lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @adamw_beta(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{beta2 must be in [0, 1), got 1.000000e+00}}
  %0:3 = titan.adamw %p, %p, %p, %p lr %lr step %step betas 0.9, 1.0 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @adamw_eps(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{eps must be positive and finite, got 0.000000e+00}}
  %0:3 = titan.adamw %p, %p, %p, %p lr %lr step %step betas 0.9, 0.95 eps 0.0 weight_decay 0.1 : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{weight_decay must be non-negative and finite, got -1.000000e-01}}
  %0:3 = titan.adamw %p, %p, %p, %p lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay -0.1 : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @adamw_copy_type(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{new_param_copy must have a narrower float type than the parameter's 'f32', got 'f64'}}
  %0:4 = titan.adamw %p, %p, %p, %p lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, tensor<4x8xf32> copy tensor<4x8xf64>
  return
}

// -----

func.func @adamw_copy_shape(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{expected new_param_copy type 'tensor<4x8xbf16>', got 'tensor<8x4xbf16>'}}
  %0:4 = titan.adamw %p, %p, %p, %p lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, tensor<4x8xf32> copy tensor<8x4xbf16>
  return
}

// -----

func.func @adamw_lr_type(%p: tensor<4x8xf32>, %lr: tensor<f64>, %step: tensor<f32>) {
  // expected-note @-1 {{prior use here}}
  // expected-error @+1 {{use of value '%lr' expects different type than prior uses: 'tensor<f32>' vs 'tensor<f64>'}}
  %0:3 = titan.adamw %p, %p, %p, %p lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @squared_norm_empty() {
  // expected-error @+1 {{expects at least one input}}
  %0 = "titan.squared_norm"() : () -> tensor<f32>
  return
}

// -----

func.func @fused_adamw_grads(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{expects one gradient per parameter, got 1 for 2 parameters}}
  %0:2, %1:2, %2:2 = titan.fused_adamw params(%p, %p) grads(%p) exp_avgs(%p, %p) exp_avg_sqs(%p, %p) lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, tensor<4x8xf32> grads tensor<4x8xf32>
  return
}

// -----

func.func @fused_adamw_grad_shape(%p: tensor<4x8xf32>, %g: tensor<8x4xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{expected grad type 'tensor<4x8xf32>', got 'tensor<8x4xf32>'}}
  %0:2, %1:2, %2:2 = titan.fused_adamw params(%p, %p) grads(%p, %g) exp_avgs(%p, %p) exp_avg_sqs(%p, %p) lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, tensor<4x8xf32> grads tensor<4x8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @fused_adamw_copies(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{copies 1 parameters but returns 2 copies}}
  %0:2, %1:2, %2:2, %3:2 = titan.fused_adamw params(%p, %p) grads(%p, %p) exp_avgs(%p, %p) exp_avg_sqs(%p, %p) lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 copies [0] : tensor<4x8xf32>, tensor<4x8xf32> grads tensor<4x8xf32>, tensor<4x8xf32> copies tensor<4x8xbf16>, tensor<4x8xbf16>
  return
}

// -----

func.func @fused_adamw_copied_order(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{copied must list parameter indices in increasing order, below 2, got 0}}
  %0:2, %1:2, %2:2, %3:2 = titan.fused_adamw params(%p, %p) grads(%p, %p) exp_avgs(%p, %p) exp_avg_sqs(%p, %p) lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 copies [1, 0] : tensor<4x8xf32>, tensor<4x8xf32> grads tensor<4x8xf32>, tensor<4x8xf32> copies tensor<4x8xbf16>, tensor<4x8xbf16>
  return
}

// -----

func.func @fused_adamw_copy_type(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{new_param_copy must have a narrower float type than the parameter's 'f32', got 'f64'}}
  %0:2, %1:2, %2:2, %3 = titan.fused_adamw params(%p, %p) grads(%p, %p) exp_avgs(%p, %p) exp_avg_sqs(%p, %p) lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 copies [1] : tensor<4x8xf32>, tensor<4x8xf32> grads tensor<4x8xf32>, tensor<4x8xf32> copies tensor<4x8xf64>
  return
}

// -----

func.func @fused_adamw_beta(%p: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) {
  // expected-error @+1 {{beta1 must be in [0, 1), got -1.000000e-01}}
  %0, %1, %2 = titan.fused_adamw params(%p) grads(%p) exp_avgs(%p) exp_avg_sqs(%p) lr %lr step %step betas -0.1, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32> grads tensor<4x8xf32>
  return
}

// -----

// expected-error @+1 {{argument #0: 'titan.diagonals' is on 'tensor<2x4x4xf32>', not a tensor [1, ..., 1, n, n]}}
func.func @diagonals_not_square(%x: tensor<2x4x4xf32> {titan.diagonals = dense<1.0> : tensor<7xf32>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'titan.diagonals' must be a dense 'tensor<7xf32>' (one value per diagonal of 'tensor<1x4x4xf32>')}}
func.func @diagonals_count(%x: tensor<1x4x4xf32> {titan.diagonals = dense<1.0> : tensor<6xf32>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'titan.diagonals' must be a dense 'tensor<7xi1>' (one value per diagonal of 'tensor<4x4xi1>')}}
func.func @diagonals_element_type(%x: tensor<4x4xi1> {titan.diagonals = dense<1.0> : tensor<7xf32>}) {
  return
}

// -----

func.func @add_booleans(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 64-bit signless integer or 32-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = titan.add %a, %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// expected-error @+1 {{'titan.state_dict' must be a dictionary of non-empty strings on the module}}
module attributes {titan.state_dict = {lm_head.weight = 3 : i64}} {
}

// -----

// expected-error @+1 {{'titan.state_dict' must be a dictionary of non-empty strings on the module}}
func.func @state_dict_on_a_function() attributes {titan.state_dict = {lm_head.weight = "wte"}} {
  return
}
