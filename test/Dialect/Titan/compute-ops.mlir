// RUN: titan-opt %s | titan-opt | FileCheck %s
// RUN: titan-opt %s --mlir-print-op-generic | titan-opt | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: titan.add %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = titan.add %a, %b : tensor<4x8xf32>
  // CHECK: titan.sub %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %1 = titan.sub %0, %b : tensor<4x8xf32>
  // CHECK: titan.mul %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %2 = titan.mul %1, %b : tensor<4x8xf32>
  // CHECK: titan.div %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %3 = titan.div %2, %b : tensor<4x8xf32>
  // CHECK: titan.max %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %4 = titan.max %3, %b : tensor<4x8xf32>
  // CHECK: titan.neg %{{.*}} : tensor<4x8xf32>
  %5 = titan.neg %4 : tensor<4x8xf32>
  // CHECK: titan.exp %{{.*}} : tensor<4x8xf32>
  %6 = titan.exp %5 : tensor<4x8xf32>
  // CHECK: titan.log %{{.*}} : tensor<4x8xf32>
  %7 = titan.log %6 : tensor<4x8xf32>
  // CHECK: titan.sqrt %{{.*}} : tensor<4x8xf32>
  %8 = titan.sqrt %7 : tensor<4x8xf32>
  // CHECK: titan.rsqrt %{{.*}} : tensor<4x8xf32>
  %9 = titan.rsqrt %8 : tensor<4x8xf32>
  // CHECK: titan.tanh %{{.*}} : tensor<4x8xf32>
  %10 = titan.tanh %9 : tensor<4x8xf32>
  // CHECK: titan.sigmoid %{{.*}} : tensor<4x8xf32>
  %11 = titan.sigmoid %10 : tensor<4x8xf32>
  // CHECK: titan.silu %{{.*}} : tensor<4x8xf32>
  %12 = titan.silu %11 : tensor<4x8xf32>
  // CHECK: titan.cos %{{.*}} : tensor<4x8xf32>
  %13 = titan.cos %12 : tensor<4x8xf32>
  // CHECK: titan.sin %{{.*}} : tensor<4x8xf32>
  %14 = titan.sin %13 : tensor<4x8xf32>
  // CHECK: titan.gelu %{{.*}} approximate tanh : tensor<4x8xf32>
  %15 = titan.gelu %14 approximate tanh : tensor<4x8xf32>
  // CHECK: titan.gelu %{{.*}} approximate none : tensor<4x8xf32>
  %16 = titan.gelu %15 approximate none : tensor<4x8xf32>
  // CHECK: titan.scale %{{.*}} by 1.250000e-01 : tensor<4x8xf32>
  %17 = titan.scale %16 by 0.125 : tensor<4x8xf32>
  // CHECK: titan.erf %{{.*}} : tensor<4x8xf32>
  %18 = titan.erf %17 : tensor<4x8xf32>
  return %18 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @elementwise_types
func.func @elementwise_types(%a: tensor<2xbf16>, %b: tensor<2xf16>, %c: tensor<2xf64>) -> (tensor<2xbf16>, tensor<2xf16>, tensor<2xf64>) {
  // CHECK: titan.mul %{{.*}}, %{{.*}} : tensor<2xbf16>
  %0 = titan.mul %a, %a : tensor<2xbf16>
  // CHECK: titan.exp %{{.*}} : tensor<2xf16>
  %1 = titan.exp %b : tensor<2xf16>
  // CHECK: titan.add %{{.*}}, %{{.*}} : tensor<2xf64>
  %2 = titan.add %c, %c : tensor<2xf64>
  return %0, %1, %2 : tensor<2xbf16>, tensor<2xf16>, tensor<2xf64>
}

// GPT-2's causal mask: masked_fill(tril == 0, -inf).
// CHECK-LABEL: func.func @masks
func.func @masks(%scores: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xbf16>) {
  // CHECK: titan.constant dense<0xFF800000> : tensor<8x8xf32>
  %ninf = titan.constant dense<0xFF800000> : tensor<8x8xf32>
  // CHECK: titan.iota dim 0 : tensor<8x8xi64>
  %rows = titan.iota dim 0 : tensor<8x8xi64>
  // CHECK: titan.iota dim 1 : tensor<8x8xi64>
  %cols = titan.iota dim 1 : tensor<8x8xi64>
  // CHECK: titan.compare gt, %{{.*}}, %{{.*}} : tensor<8x8xi64> -> tensor<8x8xi1>
  %future = titan.compare gt, %cols, %rows : tensor<8x8xi64> -> tensor<8x8xi1>
  // CHECK: titan.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x8xi1>, tensor<8x8xf32>
  %masked = titan.select %future, %ninf, %scores : tensor<8x8xi1>, tensor<8x8xf32>
  // CHECK: titan.cast %{{.*}} : tensor<8x8xf32> to tensor<8x8xbf16>
  %low = titan.cast %masked : tensor<8x8xf32> to tensor<8x8xbf16>
  // CHECK: titan.stop_gradient %{{.*}} : tensor<8x8xbf16>
  %fixed = titan.stop_gradient %low : tensor<8x8xbf16>
  return %masked, %fixed : tensor<8x8xf32>, tensor<8x8xbf16>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x4x8xf32>) -> (tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x1x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  // CHECK: titan.reduce_sum %{{.*}} dims [0, 1] : tensor<2x4x8xf32> -> tensor<8xf32>
  %0 = titan.reduce_sum %x dims [0, 1] : tensor<2x4x8xf32> -> tensor<8xf32>
  // CHECK: titan.reduce_max %{{.*}} dims [2] keepdim : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %1 = titan.reduce_max %x dims [2] keepdim : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  // CHECK: titan.reduce_mean %{{.*}} dims [1] keepdim : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  %2 = titan.reduce_mean %x dims [1] keepdim : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  // CHECK: titan.softmax %{{.*}} dim 2 : tensor<2x4x8xf32>
  %3 = titan.softmax %x dim 2 : tensor<2x4x8xf32>
  // CHECK: titan.log_softmax %{{.*}} dim 0 : tensor<2x4x8xf32>
  %4 = titan.log_softmax %x dim 0 : tensor<2x4x8xf32>
  return %0, %1, %2, %3, %4 : tensor<8xf32>, tensor<2x4x1xf32>, tensor<2x1x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x4x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) {
  // CHECK: titan.rms_norm %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<2x4x8xbf16>, tensor<8xbf16>
  %0 = titan.rms_norm %x, %w eps 1.0e-05 : tensor<2x4x8xbf16>, tensor<8xbf16>
  // CHECK: titan.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<2x4x8xbf16>, tensor<8xbf16>
  %1 = titan.layer_norm %x, %w, %b eps 1.0e-05 : tensor<2x4x8xbf16>, tensor<8xbf16>
  return %0, %1 : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>
}

// CHECK-LABEL: func.func @matmuls
func.func @matmuls(%x: tensor<2x16x32xbf16>, %w: tensor<64x32xbf16>, %y: tensor<2x32x16xbf16>, %z: tensor<2x16x32xbf16>) -> (tensor<2x16x64xbf16>, tensor<2x16x16xbf16>, tensor<2x32x32xbf16>, tensor<2x16x16xbf16>) {
  // CHECK: titan.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x16x32xbf16>, tensor<64x32xbf16> -> tensor<2x16x64xbf16>
  %0 = titan.matmul %x, %w transpose_rhs : tensor<2x16x32xbf16>, tensor<64x32xbf16> -> tensor<2x16x64xbf16>
  // CHECK: titan.matmul %{{.*}}, %{{.*}} : tensor<2x16x32xbf16>, tensor<2x32x16xbf16> -> tensor<2x16x16xbf16>
  %1 = titan.matmul %x, %y : tensor<2x16x32xbf16>, tensor<2x32x16xbf16> -> tensor<2x16x16xbf16>
  // CHECK: titan.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<2x16x32xbf16>, tensor<2x16x32xbf16> -> tensor<2x32x32xbf16>
  %2 = titan.matmul %x, %z transpose_lhs : tensor<2x16x32xbf16>, tensor<2x16x32xbf16> -> tensor<2x32x32xbf16>
  // CHECK: titan.matmul %{{.*}}, %{{.*}} transpose_lhs transpose_rhs : tensor<2x32x16xbf16>, tensor<2x16x32xbf16> -> tensor<2x16x16xbf16>
  %3 = titan.matmul %y, %z transpose_lhs transpose_rhs : tensor<2x32x16xbf16>, tensor<2x16x32xbf16> -> tensor<2x16x16xbf16>
  return %0, %1, %2, %3 : tensor<2x16x64xbf16>, tensor<2x16x16xbf16>, tensor<2x32x32xbf16>, tensor<2x16x16xbf16>
}

// The addend's type is the result's (not printed).
// CHECK-LABEL: func.func @matmul_addend
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x32xbf16>, %[[W:.*]]: tensor<64x32xbf16>, %[[H:.*]]: tensor<2x16x64xbf16>)
// CHECK: titan.matmul %[[X]], %[[W]] transpose_rhs plus %[[H]] : tensor<2x16x32xbf16>, tensor<64x32xbf16> -> tensor<2x16x64xbf16>
func.func @matmul_addend(%x: tensor<2x16x32xbf16>, %w: tensor<64x32xbf16>, %h: tensor<2x16x64xbf16>) -> tensor<2x16x64xbf16> {
  %0 = titan.matmul %x, %w transpose_rhs plus %h : tensor<2x16x32xbf16>, tensor<64x32xbf16> -> tensor<2x16x64xbf16>
  return %0 : tensor<2x16x64xbf16>
}

// CHECK-LABEL: func.func @rounding
func.func @rounding(%a: tensor<8xi64>, %b: tensor<8xi64>, %x: tensor<8xbf16>) -> (tensor<8xi64>, tensor<8xi64>, tensor<8xbf16>, tensor<8xbf16>) {
  // CHECK: titan.rounded_div %{{.*}}, %{{.*}} : tensor<8xi64>
  %0 = titan.rounded_div %a, %b : tensor<8xi64>
  // CHECK: titan.remainder %{{.*}}, %{{.*}} truncate : tensor<8xi64>
  %1 = titan.remainder %a, %b truncate : tensor<8xi64>
  // CHECK: titan.rounded_div %{{.*}}, %{{.*}} truncate : tensor<8xbf16>
  %2 = titan.rounded_div %x, %x truncate : tensor<8xbf16>
  // CHECK: titan.remainder %{{.*}}, %{{.*}} : tensor<8xbf16>
  %3 = titan.remainder %x, %x : tensor<8xbf16>
  return %0, %1, %2, %3 : tensor<8xi64>, tensor<8xi64>, tensor<8xbf16>, tensor<8xbf16>
}

// CHECK-LABEL: func.func @llama_block_parts
func.func @llama_block_parts(%table: tensor<128x64xf32>, %tokens: tensor<2x16xi64>, %xq: tensor<2x16x4x16xbf16>, %cos: tensor<16x8xf32>, %sin: tensor<16x8xf32>, %q: tensor<2x4x16x16xbf16>, %kv: tensor<2x2x16x16xbf16>, %logits: tensor<32x128xf32>, %labels: tensor<32xi64>) -> (tensor<2x16x64xf32>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x4x16x16xbf16>, tensor<2x4x16xf32>, tensor<f32>, tensor<f32>) {
  // CHECK: titan.embedding %{{.*}}, %{{.*}} : tensor<128x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
  %h = titan.embedding %table, %tokens : tensor<128x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
  // CHECK: titan.random_uniform %{{.*}} stream 3 : tensor<2x16xi64> -> tensor<2x16xf32>
  %u = titan.random_uniform %tokens stream 3 : tensor<2x16xi64> -> tensor<2x16xf32>
  // CHECK: titan.random_uniform %{{.*}} stream 3 seed 42 step %{{.*}} : tensor<2x16xi64> -> tensor<2x16xf32>
  %s = titan.constant dense<3.0> : tensor<f32>
  %u1 = titan.random_uniform %tokens stream 3 seed 42 step %s : tensor<2x16xi64> -> tensor<2x16xf32>
  // CHECK: titan.check_ids %{{.*}} below 128 of "tok_embeddings.weight" : tensor<2x16xi64>
  %checked = titan.check_ids %tokens below 128 of "tok_embeddings.weight" : tensor<2x16xi64>
  // CHECK: titan.rope %{{.*}}, %{{.*}}, %{{.*}} interleaved : tensor<2x16x4x16xbf16>, tensor<16x8xf32>
  %r0 = titan.rope %xq, %cos, %sin interleaved : tensor<2x16x4x16xbf16>, tensor<16x8xf32>
  // CHECK: titan.rope %{{.*}}, %{{.*}}, %{{.*}} half : tensor<2x16x4x16xbf16>, tensor<16x8xf32>
  %r1 = titan.rope %xq, %cos, %sin half : tensor<2x16x4x16xbf16>, tensor<16x8xf32>
  // CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal : tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>
  %a0, %lse0 = titan.attention %q, %kv, %kv causal : tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>
  // CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} scale 2.500000e-01 : tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>
  %a1, %lse1 = titan.attention %q, %kv, %kv scale 0.25 : tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>
  // CHECK: titan.cross_entropy %{{.*}}, %{{.*}} : tensor<32x128xf32>, tensor<32xi64> -> tensor<f32>
  %l0 = titan.cross_entropy %logits, %labels : tensor<32x128xf32>, tensor<32xi64> -> tensor<f32>
  // CHECK: titan.cross_entropy %{{.*}}, %{{.*}} ignore_index 0 : tensor<32x128xf32>, tensor<32xi64> -> tensor<f32>
  %l1 = titan.cross_entropy %logits, %labels ignore_index 0 : tensor<32x128xf32>, tensor<32xi64> -> tensor<f32>
  return %h, %r0, %r1, %a0, %lse1, %l0, %l1 : tensor<2x16x64xf32>, tensor<2x16x4x16xbf16>, tensor<2x16x4x16xbf16>, tensor<2x4x16x16xbf16>, tensor<2x4x16xf32>, tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x16x64xf32>, %bias: tensor<64xf32>, %ids: tensor<4x6xi32>) -> (tensor<2x4x16x16xf32>, tensor<2x8x64xf32>, tensor<2x32x64xf32>, tensor<2x16x64xf32>, tensor<6x4xi32>) {
  // CHECK: titan.reshape %{{.*}} : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %0 = titan.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  // CHECK: titan.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %1 = titan.transpose %0 [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  // CHECK: titan.slice %{{.*}} [0, 1, 0] to [2, 16, 64] step [1, 2, 1] : tensor<2x16x64xf32> -> tensor<2x8x64xf32>
  %2 = titan.slice %x [0, 1, 0] to [2, 16, 64] step [1, 2, 1] : tensor<2x16x64xf32> -> tensor<2x8x64xf32>
  // CHECK: titan.concat %{{.*}}, %{{.*}} dim 1 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x32x64xf32>
  %3 = titan.concat %x, %x dim 1 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x32x64xf32>
  // CHECK: titan.broadcast_in_dim %{{.*}} dims [2] : tensor<64xf32> -> tensor<2x16x64xf32>
  %4 = titan.broadcast_in_dim %bias dims [2] : tensor<64xf32> -> tensor<2x16x64xf32>
  // CHECK: titan.transpose %{{.*}} [1, 0] : tensor<4x6xi32> -> tensor<6x4xi32>
  %5 = titan.transpose %ids [1, 0] : tensor<4x6xi32> -> tensor<6x4xi32>
  return %1, %2, %3, %4, %5 : tensor<2x4x16x16xf32>, tensor<2x8x64xf32>, tensor<2x32x64xf32>, tensor<2x16x64xf32>, tensor<6x4xi32>
}

// Dynamic dims are accepted where sizes cannot be checked statically.
// CHECK-LABEL: func.func @dynamic
func.func @dynamic(%x: tensor<?x16x32xf32>, %w: tensor<32x64xf32>) -> tensor<?x16x64xf32> {
  // CHECK: titan.matmul %{{.*}}, %{{.*}} : tensor<?x16x32xf32>, tensor<32x64xf32> -> tensor<?x16x64xf32>
  %0 = titan.matmul %x, %w : tensor<?x16x32xf32>, tensor<32x64xf32> -> tensor<?x16x64xf32>
  return %0 : tensor<?x16x64xf32>
}

// CHECK-LABEL: func.func @dynamic_model_ops
func.func @dynamic_model_ops(%x: tensor<?x?x4x16xbf16>, %cos: tensor<?x8xf32>, %q: tensor<?x4x?x16xf32>, %kv: tensor<?x2x?x16xf32>, %v: tensor<?xf32>, %m: tensor<?x8xf32>, %ids: tensor<?x?xi64>, %t: tensor<128x64xf32>) -> (tensor<?x?x4x16xbf16>, tensor<?x4x?x16xf32>, tensor<4x?xf32>, tensor<?x16xf32>, tensor<8xf32>, tensor<?x?x64xf32>, tensor<?xf32>) {
  // CHECK: titan.rope %{{.*}}, %{{.*}}, %{{.*}} half : tensor<?x?x4x16xbf16>, tensor<?x8xf32>
  %0 = titan.rope %x, %cos, %cos half : tensor<?x?x4x16xbf16>, tensor<?x8xf32>
  // CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>
  %1, %lse = titan.attention %q, %kv, %kv causal : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>
  // CHECK: titan.broadcast_in_dim %{{.*}} dims [1] : tensor<?xf32> -> tensor<4x?xf32>
  %2 = titan.broadcast_in_dim %v dims [1] : tensor<?xf32> -> tensor<4x?xf32>
  // CHECK: titan.concat %{{.*}}, %{{.*}} dim 1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x16xf32>
  %3 = titan.concat %m, %m dim 1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x16xf32>
  // CHECK: titan.reduce_sum %{{.*}} dims [0] : tensor<?x8xf32> -> tensor<8xf32>
  %4 = titan.reduce_sum %m dims [0] : tensor<?x8xf32> -> tensor<8xf32>
  // CHECK: titan.embedding %{{.*}}, %{{.*}} : tensor<128x64xf32>, tensor<?x?xi64> -> tensor<?x?x64xf32>
  %5 = titan.embedding %t, %ids : tensor<128x64xf32>, tensor<?x?xi64> -> tensor<?x?x64xf32>
  // CHECK: titan.reshape %{{.*}} : tensor<?x8xf32> -> tensor<?xf32>
  %6 = titan.reshape %m : tensor<?x8xf32> -> tensor<?xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<?x?x4x16xbf16>, tensor<?x4x?x16xf32>, tensor<4x?xf32>, tensor<?x16xf32>, tensor<8xf32>, tensor<?x?x64xf32>, tensor<?xf32>
}

// Backward-only ops emitted by the VJP rules.
// CHECK-LABEL: func.func @backward
func.func @backward(%x: tensor<2x16x64xf32>, %w: tensor<64xf32>, %dy: tensor<2x16x64xf32>, %tokens: tensor<2x16xi64>, %q: tensor<2x4x16x16xbf16>, %kv: tensor<2x2x16x16xbf16>, %lse: tensor<2x4x16xf32>, %logits: tensor<32x128xf32>, %labels: tensor<32xi64>, %dloss: tensor<f32>, %s: tensor<2x8x64xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64xf32>, tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>, tensor<2x2x16x16xbf16>, tensor<2x4x16x16xbf16>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<2x16x64xf32>) {
  // CHECK: titan.gelu_grad %{{.*}}, %{{.*}} approximate tanh : tensor<2x16x64xf32>
  %g = titan.gelu_grad %x, %dy approximate tanh : tensor<2x16x64xf32>
  // CHECK: titan.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32>
  %rx, %rw = titan.rms_norm_grad %x, %w, %dy eps 1.0e-5 : tensor<2x16x64xf32>, tensor<64xf32>
  // CHECK: titan.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} plus %{{.*}} eps 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32>
  %px, %pw = titan.rms_norm_grad %x, %w, %dy plus %x eps 1.0e-5 : tensor<2x16x64xf32>, tensor<64xf32>
  // CHECK: titan.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32>
  %lx, %lw, %lb = titan.layer_norm_grad %x, %w, %dy eps 1.0e-5 : tensor<2x16x64xf32>, tensor<64xf32>
  // CHECK: titan.embedding_grad %{{.*}}, %{{.*}} : tensor<2x16xi64>, tensor<2x16x64xf32> -> tensor<128x64xf32>
  %dt = titan.embedding_grad %tokens, %dy : tensor<2x16xi64>, tensor<2x16x64xf32> -> tensor<128x64xf32>
  // CHECK: titan.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal : tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>
  %dq, %dk, %dv = titan.attention_grad %q, %kv, %kv, %q, %lse, %q causal : tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>
  // CHECK: titan.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale 2.500000e-01 : tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>
  %dq1, %dk1, %dv1 = titan.attention_grad %q, %kv, %kv, %q, %lse, %q scale 0.25 : tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>
  // CHECK: titan.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x128xf32>, tensor<32xi64>, tensor<f32>
  %dl0 = titan.cross_entropy_grad %logits, %labels, %dloss : tensor<32x128xf32>, tensor<32xi64>, tensor<f32>
  // CHECK: titan.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index 0 : tensor<32x128xf32>, tensor<32xi64>, tensor<f32>
  %dl1 = titan.cross_entropy_grad %logits, %labels, %dloss ignore_index 0 : tensor<32x128xf32>, tensor<32xi64>, tensor<f32>
  // CHECK: titan.pad %{{.*}} [0, 1, 0] step [1, 2, 1] : tensor<2x8x64xf32> -> tensor<2x16x64xf32>
  %p = titan.pad %s [0, 1, 0] step [1, 2, 1] : tensor<2x8x64xf32> -> tensor<2x16x64xf32>
  return %g, %rx, %rw, %lx, %lw, %lb, %dt, %dq, %dk, %dv, %dq1, %dl0, %dl1, %p : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64xf32>, tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<2x4x16x16xbf16>, tensor<2x2x16x16xbf16>, tensor<2x2x16x16xbf16>, tensor<2x4x16x16xbf16>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<2x16x64xf32>
}

// A cross-entropy of f64 logits is f64.
// CHECK-LABEL: func.func @f64_loss
func.func @f64_loss(%logits: tensor<4x8xf64>, %labels: tensor<4xi64>) -> tensor<f64> {
  // CHECK: titan.cross_entropy %{{.*}}, %{{.*}} : tensor<4x8xf64>, tensor<4xi64> -> tensor<f64>
  %0 = titan.cross_entropy %logits, %labels : tensor<4x8xf64>, tensor<4xi64> -> tensor<f64>
  return %0 : tensor<f64>
}

// CHECK-LABEL: func.func @adamw
func.func @adamw(%p: tensor<16x8xf32>, %g: tensor<16x8xbf16>, %m: tensor<16x8xf32>, %v: tensor<16x8xf32>, %lr: tensor<f32>, %step: tensor<f32>, %clip: tensor<f32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  // CHECK: titan.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr %{{.*}} step %{{.*}} grad_scale %{{.*}} betas 9.000000e-01, 0.94999999999999996 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<16x8xf32>, tensor<16x8xbf16>
  %0:3 = titan.adamw %p, %g, %m, %v lr %lr step %step grad_scale %clip betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<16x8xf32>, tensor<16x8xbf16>
  // CHECK: titan.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lr %{{.*}} step %{{.*}} betas 0.000000e+00, 0.000000e+00 eps 1.000000e+00 weight_decay 0.000000e+00 : tensor<16x8xf32>, tensor<16x8xf32>
  %1:3 = titan.adamw %p, %m, %m, %v lr %lr step %step betas 0.0, 0.0 eps 1.0 weight_decay 0.0 : tensor<16x8xf32>, tensor<16x8xf32>
  // CHECK: titan.adamw {{.*}} : tensor<16x8xf32>, tensor<16x8xbf16> copy tensor<16x8xbf16>
  %2:4 = titan.adamw %p, %g, %m, %v lr %lr step %step betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<16x8xf32>, tensor<16x8xbf16> copy tensor<16x8xbf16>
  return %0#0, %1#0 : tensor<16x8xf32>, tensor<16x8xf32>
}

// CHECK-LABEL: func.func @squared_norm
func.func @squared_norm(%a: tensor<16x8xbf16>, %b: tensor<8xf32>) -> tensor<f32> {
  // CHECK: titan.squared_norm %{{.*}}, %{{.*}} : tensor<16x8xbf16>, tensor<8xf32>
  %0 = titan.squared_norm %a, %b : tensor<16x8xbf16>, tensor<8xf32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @fused_adamw
func.func @fused_adamw(%p: tensor<16x8xf32>, %g: tensor<16x8xbf16>, %q: tensor<8xf32>, %lr: tensor<f32>, %step: tensor<f32>, %clip: tensor<f32>) -> (tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xbf16>) {
  // CHECK: titan.fused_adamw params(%{{.*}}, %{{.*}}) grads(%{{.*}}, %{{.*}}) exp_avgs(%{{.*}}, %{{.*}}) exp_avg_sqs(%{{.*}}, %{{.*}}) lr %{{.*}} step %{{.*}} grad_scale %{{.*}} betas 9.000000e-01, 0.94999999999999996 eps 1.000000e-08 weight_decay 1.000000e-01 copies [0] : tensor<16x8xf32>, tensor<8xf32> grads tensor<16x8xbf16>, tensor<8xf32> copies tensor<16x8xbf16>
  %0:2, %1:2, %2:2, %3 = titan.fused_adamw params(%p, %q) grads(%g, %q) exp_avgs(%p, %q) exp_avg_sqs(%p, %q) lr %lr step %step grad_scale %clip betas 0.9, 0.95 eps 1.0e-8 weight_decay 0.1 copies [0] : tensor<16x8xf32>, tensor<8xf32> grads tensor<16x8xbf16>, tensor<8xf32> copies tensor<16x8xbf16>
  // CHECK: titan.fused_adamw params(%{{.*}}) grads(%{{.*}}) exp_avgs(%{{.*}}) exp_avg_sqs(%{{.*}}) lr %{{.*}} step %{{.*}} betas 0.000000e+00, 0.000000e+00 eps 1.000000e+00 weight_decay 0.000000e+00 : tensor<8xf32> grads tensor<8xf32>{{$}}
  %4, %5, %6 = titan.fused_adamw params(%q) grads(%q) exp_avgs(%q) exp_avg_sqs(%q) lr %lr step %step betas 0.0, 0.0 eps 1.0 weight_decay 0.0 : tensor<8xf32> grads tensor<8xf32>
  return %0#0, %4, %3 : tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xbf16>
}
