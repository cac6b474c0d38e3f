// RUN: titan-opt %s --titan-fuse-attention | FileCheck %s
// RUN: titan-opt %s --titan-fuse-attention > %t.mlir

// The fused program computes what the explicit one computes.
// RUN: rm -rf %t.d && %python %S/Inputs/attention_inputs.py %t.d/in
// RUN: for f in llama gpt2 where_times_scale literal_mask tiled_heads buffer_mask hf_finfo_min multihead neox opt bigcode; do \
// RUN:   titan-eval %s --entry=$f --inputs=%t.d/in --outputs=%t.d/explicit/$f && \
// RUN:   titan-eval %t.mlir --entry=$f --inputs=%t.d/in --outputs=%t.d/fused/$f && \
// RUN:   %python %S/../Import/Inputs/compare_npy.py %t.d/fused/$f %t.d/explicit/$f --rtol 1e-6 || exit 1; \
// RUN: done | FileCheck %s --check-prefix=SAME
// SAME-COUNT-11: match out: [2, 8, 16]

// Llama: GQA heads repeated by repeat_kv, scores divided by sqrt(head_dim),
// triu(full(-inf), 1) added, softmax between .float() and .type_as() on f32.
// CHECK-LABEL: func.func @llama
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x4x4xf32> {{.*}}, %[[K:[^:]*]]: tensor<2x8x2x4xf32> {{.*}}, %[[V:[^:]*]]: tensor<2x8x2x4xf32>
// CHECK-DAG: %[[QT:.*]] = titan.transpose %[[Q]] [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
// CHECK-DAG: %[[KT:.*]] = titan.transpose %[[K]] [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
// CHECK-DAG: %[[VT:.*]] = titan.transpose %[[V]] [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
// CHECK: %[[O:.*]], %{{.*}} = titan.attention %[[QT]], %[[KT]], %[[VT]] causal scale 5.000000e-01 : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>
// CHECK-NEXT: titan.transpose %[[O]] [0, 2, 1, 3]
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @llama(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                 %k: tensor<2x8x2x4xf32> {titan.name = "k"},
                 %v: tensor<2x8x2x4xf32> {titan.name = "v"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %zero = titan.constant dense<0.000000e+00> : tensor<8x8xf32>
  %one = titan.constant dense<1.000000e+00> : tensor<8x8xf64>
  %ninf = titan.constant dense<0xFF800000> : tensor<8x8xf32>
  %sqrtd = titan.constant dense<2.000000e+00> : tensor<f32>
  %k5 = titan.reshape %k : tensor<2x8x2x4xf32> -> tensor<2x8x2x1x4xf32>
  %kb = titan.broadcast_in_dim %k5 dims [0, 1, 2, 3, 4] : tensor<2x8x2x1x4xf32> -> tensor<2x8x2x2x4xf32>
  %kr = titan.reshape %kb : tensor<2x8x2x2x4xf32> -> tensor<2x8x4x4xf32>
  %v5 = titan.reshape %v : tensor<2x8x2x4xf32> -> tensor<2x8x2x1x4xf32>
  %vb = titan.broadcast_in_dim %v5 dims [0, 1, 2, 3, 4] : tensor<2x8x2x1x4xf32> -> tensor<2x8x2x2x4xf32>
  %vr = titan.reshape %vb : tensor<2x8x2x2x4xf32> -> tensor<2x8x4x4xf32>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %vr [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %kr [0, 2, 3, 1] : tensor<2x8x4x4xf32> -> tensor<2x4x4x8xf32>
  %s = titan.matmul %qt, %kt : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %d = titan.broadcast_in_dim %sqrtd dims [] : tensor<f32> -> tensor<2x4x8x8xf32>
  %sd = titan.div %s, %d : tensor<2x4x8x8xf32>
  %rows = titan.iota dim 0 : tensor<8x8xf64>
  %cols = titan.iota dim 1 : tensor<8x8xf64>
  %diff = titan.sub %cols, %rows : tensor<8x8xf64>
  %above = titan.compare ge, %diff, %one : tensor<8x8xf64> -> tensor<8x8xi1>
  %mask = titan.select %above, %ninf, %zero : tensor<8x8xi1>, tensor<8x8xf32>
  %mb = titan.broadcast_in_dim %mask dims [2, 3] : tensor<8x8xf32> -> tensor<2x4x8x8xf32>
  %masked = titan.add %sd, %mb : tensor<2x4x8x8xf32>
  %f = titan.cast %masked : tensor<2x4x8x8xf32> to tensor<2x4x8x8xf32>
  %p = titan.softmax %f dim 3 : tensor<2x4x8x8xf32>
  %pt = titan.cast %p : tensor<2x4x8x8xf32> to tensor<2x4x8x8xf32>
  %o = titan.matmul %pt, %vt : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// GPT-2: masked_fill(tril(ones(bool)).logical_not(), -inf) after a scale
// (rounded to f32, as titan.scale multiplies by it).
// CHECK-LABEL: func.func @gpt2
// CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 0.70710676908493042 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @gpt2(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
                %v: tensor<2x8x4x4xf32> {titan.name = "v4"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %ninf = titan.constant dense<0xFF800000> : tensor<2x4x8x8xf32>
  %false = titan.constant dense<false> : tensor<8x8xi1>
  %true = titan.constant dense<true> : tensor<8x8xi1>
  %zero = titan.constant dense<0.000000e+00> : tensor<8x8xf64>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %k [0, 2, 3, 1] : tensor<2x8x4x4xf32> -> tensor<2x4x4x8xf32>
  %s = titan.matmul %qt, %kt : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %ss = titan.scale %s by 0.70710678118654757 : tensor<2x4x8x8xf32>
  %rows = titan.iota dim 0 : tensor<8x8xf64>
  %cols = titan.iota dim 1 : tensor<8x8xf64>
  %diff = titan.sub %cols, %rows : tensor<8x8xf64>
  %lower = titan.compare le, %diff, %zero : tensor<8x8xf64> -> tensor<8x8xi1>
  %tril = titan.select %lower, %true, %false : tensor<8x8xi1>, tensor<8x8xi1>
  %hidden = titan.compare eq, %tril, %false : tensor<8x8xi1> -> tensor<8x8xi1>
  %hb = titan.broadcast_in_dim %hidden dims [2, 3] : tensor<8x8xi1> -> tensor<2x4x8x8xi1>
  %masked = titan.select %hb, %ninf, %ss : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = titan.softmax %masked dim 3 : tensor<2x4x8x8xf32>
  %o = titan.matmul %p, %vt : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// torch.where(i >= j, scores, -inf) with integer iotas, the scale as a
// multiplication by a constant, k read transposed by the matmul: nothing to
// transpose for attention.
// CHECK-LABEL: func.func @where_times_scale
// CHECK: %[[QT:.*]] = titan.transpose %{{.*}} [0, 2, 1, 3]
// CHECK: %[[KT:.*]] = titan.transpose %{{.*}} [0, 2, 1, 3]
// CHECK: %[[VT:.*]] = titan.transpose %{{.*}} [0, 2, 1, 3]
// CHECK-NEXT: titan.attention %[[QT]], %[[KT]], %[[VT]] causal scale 2.500000e-01
// CHECK-NOT: titan.transpose %{{.*}} [0, 2, 3, 1]
// CHECK: return
func.func @where_times_scale(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                             %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
                             %v: tensor<2x8x4x4xf32> {titan.name = "v4"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %c = titan.constant dense<2.500000e-01> : tensor<2x4x8x8xf32>
  %ninf = titan.constant dense<0xFF800000> : tensor<2x4x8x8xf32>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %k [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %s = titan.matmul %qt, %kt transpose_rhs : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x8xf32>
  %ss = titan.mul %c, %s : tensor<2x4x8x8xf32>
  %rows = titan.iota dim 0 : tensor<8x8xi64>
  %cols = titan.iota dim 1 : tensor<8x8xi64>
  %visible = titan.compare ge, %rows, %cols : tensor<8x8xi64> -> tensor<8x8xi1>
  %vb = titan.broadcast_in_dim %visible dims [2, 3] : tensor<8x8xi1> -> tensor<2x4x8x8xi1>
  %masked = titan.select %vb, %ss, %ninf : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = titan.softmax %masked dim 3 : tensor<2x4x8x8xf32>
  %o = titan.matmul %p, %vt : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// A literal causal mask [1, 1, seq, seq] and no scale.
// CHECK-LABEL: func.func @literal_mask
// CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 1.000000e+00
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @literal_mask(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                        %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
                        %v: tensor<2x8x4x4xf32> {titan.name = "v4"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %tril = titan.constant dense<[[[[true, false, false, false, false, false, false, false], [true, true, false, false, false, false, false, false], [true, true, true, false, false, false, false, false], [true, true, true, true, false, false, false, false], [true, true, true, true, true, false, false, false], [true, true, true, true, true, true, false, false], [true, true, true, true, true, true, true, false], [true, true, true, true, true, true, true, true]]]]> : tensor<1x1x8x8xi1>
  %ninf = titan.constant dense<0xFF800000> : tensor<2x4x8x8xf32>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %k [0, 2, 3, 1] : tensor<2x8x4x4xf32> -> tensor<2x4x4x8xf32>
  %s = titan.matmul %qt, %kt : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %tb = titan.broadcast_in_dim %tril dims [0, 1, 2, 3] : tensor<1x1x8x8xi1> -> tensor<2x4x8x8xi1>
  %masked = titan.select %tb, %s, %ninf : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = titan.softmax %masked dim 3 : tensor<2x4x8x8xf32>
  %o = titan.matmul %p, %vt : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// No mask (a bidirectional encoder); the KV heads are tiled (torch.repeat:
// head h reads KV head h % 2), which is not GQA's grouping, so attention
// reads the tiled heads.
// CHECK-LABEL: func.func @tiled_heads
// CHECK: %[[KR:.*]] = titan.reshape %{{.*}} : tensor<2x8x2x2x4xf32> -> tensor<2x8x4x4xf32>
// CHECK: %[[KT:.*]] = titan.transpose %[[KR]] [0, 2, 1, 3]
// CHECK: titan.attention %{{.*}}, %[[KT]], %{{.*}} scale 5.000000e-01 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
// CHECK-NOT: causal
// CHECK: return
func.func @tiled_heads(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                       %k: tensor<2x8x2x4xf32> {titan.name = "k"},
                       %v: tensor<2x8x2x4xf32> {titan.name = "v"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %kb = titan.broadcast_in_dim %k dims [0, 1, 3, 4] : tensor<2x8x2x4xf32> -> tensor<2x8x2x2x4xf32>
  %kr = titan.reshape %kb : tensor<2x8x2x2x4xf32> -> tensor<2x8x4x4xf32>
  %vb = titan.broadcast_in_dim %v dims [0, 1, 3, 4] : tensor<2x8x2x4xf32> -> tensor<2x8x2x2x4xf32>
  %vr = titan.reshape %vb : tensor<2x8x2x2x4xf32> -> tensor<2x8x4x4xf32>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %vr [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %kr [0, 2, 3, 1] : tensor<2x8x4x4xf32> -> tensor<2x4x4x8xf32>
  %s = titan.matmul %qt, %kt : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %ss = titan.scale %s by 5.000000e-01 : tensor<2x4x8x8xf32>
  %p = titan.softmax %ss dim 3 : tensor<2x4x8x8xf32>
  %o = titan.matmul %p, %vt : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// nanoGPT: the causal mask is a registered buffer, tril(ones(block_size,
// block_size)) [1, 1, 16, 16], whose diagonals the importer recorded;
// sliced to the sequence and applied with masked_fill(bias == 0, -inf).
// The buffer is not read any more.
// CHECK-LABEL: func.func @buffer_mask
// CHECK-NOT: titan.slice
// CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @buffer_mask(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                       %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
                       %v: tensor<2x8x4x4xf32> {titan.name = "v4"},
                       %bias: tensor<1x1x16x16xf32> {titan.name = "bias", titan.role = "buffer",
                                                     titan.diagonals = dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]> : tensor<31xf32>})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %ninf = titan.constant dense<0xFF800000> : tensor<2x4x8x8xf32>
  %zero = titan.constant dense<0.000000e+00> : tensor<1x1x8x8xf32>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %k [0, 2, 3, 1] : tensor<2x8x4x4xf32> -> tensor<2x4x4x8xf32>
  %s = titan.matmul %qt, %kt : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %ss = titan.scale %s by 5.000000e-01 : tensor<2x4x8x8xf32>
  %sliced = titan.slice %bias [0, 0, 0, 0] to [1, 1, 8, 8] step [1, 1, 1, 1] : tensor<1x1x16x16xf32> -> tensor<1x1x8x8xf32>
  %hidden = titan.compare eq, %sliced, %zero : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xi1>
  %hb = titan.broadcast_in_dim %hidden dims [0, 1, 2, 3] : tensor<1x1x8x8xi1> -> tensor<2x4x8x8xi1>
  %masked = titan.select %hb, %ninf, %ss : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = titan.softmax %masked dim 3 : tensor<2x4x8x8xf32>
  %o = titan.matmul %p, %vt : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// Hugging Face's eager attention: an additive mask of finfo(f32).min
// above the diagonal and 0 elsewhere, then torch.max(scores,
// finfo(f32).min).
// CHECK-LABEL: func.func @hf_finfo_min
// CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
// CHECK-NOT: titan.softmax
// CHECK-NOT: titan.max
// CHECK: return
func.func @hf_finfo_min(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                        %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
                        %v: tensor<2x8x4x4xf32> {titan.name = "v4"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %min = titan.constant dense<0xFF7FFFFF> : tensor<8x8xf32>
  %min4 = titan.constant dense<0xFF7FFFFF> : tensor<2x4x8x8xf32>
  %zero = titan.constant dense<0.000000e+00> : tensor<8x8xf32>
  %one = titan.constant dense<1.000000e+00> : tensor<8x8xf64>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %k [0, 2, 3, 1] : tensor<2x8x4x4xf32> -> tensor<2x4x4x8xf32>
  %s = titan.matmul %qt, %kt : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %ss = titan.scale %s by 5.000000e-01 : tensor<2x4x8x8xf32>
  // mask.masked_fill_(cond < (cond + 1).view(n, 1), 0) on full(min).
  %cols = titan.iota dim 1 : tensor<8x8xf64>
  %rows = titan.iota dim 0 : tensor<8x8xf64>
  %next = titan.add %rows, %one : tensor<8x8xf64>
  %visible = titan.compare lt, %cols, %next : tensor<8x8xf64> -> tensor<8x8xi1>
  %mask = titan.select %visible, %zero, %min : tensor<8x8xi1>, tensor<8x8xf32>
  %mb = titan.broadcast_in_dim %mask dims [2, 3] : tensor<8x8xf32> -> tensor<2x4x8x8xf32>
  %masked = titan.add %ss, %mb : tensor<2x4x8x8xf32>
  %floored = titan.max %masked, %min4 : tensor<2x4x8x8xf32>
  %p = titan.softmax %floored dim 3 : tensor<2x4x8x8xf32>
  %o = titan.matmul %p, %vt : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// nn.MultiheadAttention: heads folded into the batch ([batch * heads, seq,
// head_dim]), q scaled before the product, the mask
// (nn.Transformer.generate_square_subsequent_mask) added by baddbmm. The
// attention sees one head per batch entry.
// CHECK-LABEL: func.func @multihead
// (The reshapes to and from [8, 8, 4] fold into the new ones.)
// CHECK: %[[Q:.*]] = titan.reshape %{{.*}} : tensor<2x4x8x4xf32> -> tensor<8x1x8x4xf32>
// CHECK: %[[O:.*]], %{{.*}} = titan.attention %[[Q]], %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<8x1x8x4xf32>, tensor<8x1x8x4xf32>
// CHECK-NEXT: titan.reshape %[[O]] : tensor<8x1x8x4xf32> -> tensor<2x4x8x4xf32>
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @multihead(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                     %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
                     %v: tensor<2x8x4x4xf32> {titan.name = "v4"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %zero = titan.constant dense<0.000000e+00> : tensor<8x8xf32>
  %ninf = titan.constant dense<0xFF800000> : tensor<8x8xf32>
  %one = titan.constant dense<1.000000e+00> : tensor<8x8xf64>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %k [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %q3 = titan.reshape %qt : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %k3 = titan.reshape %kt : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %v3 = titan.reshape %vt : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %qs = titan.scale %q3 by 5.000000e-01 : tensor<8x8x4xf32>
  %kT = titan.transpose %k3 [0, 2, 1] : tensor<8x8x4xf32> -> tensor<8x4x8xf32>
  %s = titan.matmul %qs, %kT : tensor<8x8x4xf32>, tensor<8x4x8xf32> -> tensor<8x8x8xf32>
  %rows = titan.iota dim 0 : tensor<8x8xf64>
  %cols = titan.iota dim 1 : tensor<8x8xf64>
  %diff = titan.sub %cols, %rows : tensor<8x8xf64>
  %above = titan.compare ge, %diff, %one : tensor<8x8xf64> -> tensor<8x8xi1>
  %mask = titan.select %above, %ninf, %zero : tensor<8x8xi1>, tensor<8x8xf32>
  %mb = titan.broadcast_in_dim %mask dims [1, 2] : tensor<8x8xf32> -> tensor<8x8x8xf32>
  %masked = titan.add %s, %mb : tensor<8x8x8xf32>
  %p = titan.softmax %masked dim 2 : tensor<8x8x8xf32>
  %o = titan.matmul %p, %v3 : tensor<8x8x8xf32>, tensor<8x8x4xf32> -> tensor<8x8x4xf32>
  %o4 = titan.reshape %o : tensor<8x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o4 [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// GPT-NeoX: the scores of q and k with the heads folded into the batch
// (baddbmm of zeros with alpha), unfolded to [batch, heads, seq, seq] for
// `torch.where(causal, scores, finfo.min)`; the output product is
// [batch, heads, ...]. Attention reads q and k with their batch dims.
// CHECK-LABEL: func.func @neox
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x8x4x4xf32>
// CHECK: %[[QT:.*]] = titan.transpose %[[Q]] [0, 2, 1, 3]
// CHECK: %[[O:.*]], %{{.*}} = titan.attention %[[QT]], %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @neox(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
                %v: tensor<2x8x4x4xf32> {titan.name = "v4"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %zeros = titan.constant dense<0.000000e+00> : tensor<8x8x8xf32>
  %min = titan.constant dense<0xFF7FFFFF> : tensor<2x4x8x8xf32>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %k [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %q3 = titan.reshape %qt : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %k3 = titan.reshape %kt : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %kT = titan.transpose %k3 [0, 2, 1] : tensor<8x8x4xf32> -> tensor<8x4x8xf32>
  %s = titan.matmul %q3, %kT : tensor<8x8x4xf32>, tensor<8x4x8xf32> -> tensor<8x8x8xf32>
  %ss = titan.scale %s by 5.000000e-01 : tensor<8x8x8xf32>
  %sz = titan.add %ss, %zeros : tensor<8x8x8xf32>
  %s4 = titan.reshape %sz : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  %rows = titan.iota dim 0 : tensor<8x8xi64>
  %cols = titan.iota dim 1 : tensor<8x8xi64>
  %causal = titan.compare le, %cols, %rows : tensor<8x8xi64> -> tensor<8x8xi1>
  %cb = titan.broadcast_in_dim %causal dims [2, 3] : tensor<8x8xi1> -> tensor<2x4x8x8xi1>
  %masked = titan.select %cb, %s4, %min : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = titan.softmax %masked dim 3 : tensor<2x4x8x8xf32>
  %o = titan.matmul %p, %vt : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// OPT: heads folded into the batch, q scaled, the scores unfolded to
// [batch, heads, seq, seq] to add the finfo.min mask and take
// torch.max(scores, finfo.min), folded again for the softmax and the
// product with v. The attention sees one head per batch entry.
// CHECK-LABEL: func.func @opt
// CHECK: %[[O:.*]], %{{.*}} = titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<8x1x8x4xf32>, tensor<8x1x8x4xf32>
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @opt(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
               %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
               %v: tensor<2x8x4x4xf32> {titan.name = "v4"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %zero = titan.constant dense<0.000000e+00> : tensor<8x8xf32>
  %min = titan.constant dense<0xFF7FFFFF> : tensor<8x8xf32>
  %min4 = titan.constant dense<0xFF7FFFFF> : tensor<2x4x8x8xf32>
  %qt = titan.transpose %q [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %kt = titan.transpose %k [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %vt = titan.transpose %v [0, 2, 1, 3] : tensor<2x8x4x4xf32> -> tensor<2x4x8x4xf32>
  %q3 = titan.reshape %qt : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %k3 = titan.reshape %kt : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %v3 = titan.reshape %vt : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %qs = titan.scale %q3 by 5.000000e-01 : tensor<8x8x4xf32>
  %kT = titan.transpose %k3 [0, 2, 1] : tensor<8x8x4xf32> -> tensor<8x4x8xf32>
  %s = titan.matmul %qs, %kT : tensor<8x8x4xf32>, tensor<8x4x8xf32> -> tensor<8x8x8xf32>
  %s4 = titan.reshape %s : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  %rows = titan.iota dim 0 : tensor<8x8xi64>
  %cols = titan.iota dim 1 : tensor<8x8xi64>
  %visible = titan.compare le, %cols, %rows : tensor<8x8xi64> -> tensor<8x8xi1>
  %mask = titan.select %visible, %zero, %min : tensor<8x8xi1>, tensor<8x8xf32>
  %mb = titan.broadcast_in_dim %mask dims [2, 3] : tensor<8x8xf32> -> tensor<2x4x8x8xf32>
  %masked = titan.add %s4, %mb : tensor<2x4x8x8xf32>
  %floored = titan.max %masked, %min4 : tensor<2x4x8x8xf32>
  %s3 = titan.reshape %floored : tensor<2x4x8x8xf32> -> tensor<8x8x8xf32>
  %p = titan.softmax %s3 dim 2 : tensor<8x8x8xf32>
  %o = titan.matmul %p, %v3 : tensor<8x8x8xf32>, tensor<8x8x4xf32> -> tensor<8x8x4xf32>
  %o4 = titan.reshape %o : tensor<8x8x4xf32> -> tensor<2x4x8x4xf32>
  %ot = titan.transpose %o4 [0, 2, 1, 3] : tensor<2x4x8x4xf32> -> tensor<2x8x4x4xf32>
  %out = titan.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// Phi under mixed precision: bf16 q and k widened before the product (k
// widened, then transposed), the float32 scores masked and softmaxed, the
// probabilities narrowed to bf16 for the product with v. The widening moves
// after k's transpose, and the attention reads the bf16 q and k (the fused
// op computes their scores in float32 alike).
// CHECK-LABEL: func.func @phi_widened
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x4x8x4xbf16> {{.*}}, %[[K:[^:]*]]: tensor<2x4x8x4xbf16> {{.*}}, %[[V:[^:]*]]: tensor<2x4x8x4xbf16>
// CHECK: %[[O:.*]], %{{.*}} = titan.attention %[[Q]], %[[K]], %[[V]] causal scale 5.000000e-01 : tensor<2x4x8x4xbf16>, tensor<2x4x8x4xbf16>
// CHECK-NOT: titan.softmax
// CHECK: return %[[O]]
func.func @phi_widened(%q: tensor<2x4x8x4xbf16> {titan.name = "qb"},
                       %k: tensor<2x4x8x4xbf16> {titan.name = "kb"},
                       %v: tensor<2x4x8x4xbf16> {titan.name = "vb"})
    -> (tensor<2x4x8x4xbf16> {titan.name = "out"}) {
  %zero = titan.constant dense<0.000000e+00> : tensor<8x8xf32>
  %ninf = titan.constant dense<0xFF800000> : tensor<8x8xf32>
  %qf = titan.cast %q : tensor<2x4x8x4xbf16> to tensor<2x4x8x4xf32>
  %kf = titan.cast %k : tensor<2x4x8x4xbf16> to tensor<2x4x8x4xf32>
  %kT = titan.transpose %kf [0, 1, 3, 2] : tensor<2x4x8x4xf32> -> tensor<2x4x4x8xf32>
  %s = titan.matmul %qf, %kT : tensor<2x4x8x4xf32>, tensor<2x4x4x8xf32> -> tensor<2x4x8x8xf32>
  %ss = titan.scale %s by 5.000000e-01 : tensor<2x4x8x8xf32>
  %rows = titan.iota dim 0 : tensor<8x8xi64>
  %cols = titan.iota dim 1 : tensor<8x8xi64>
  %above = titan.compare gt, %cols, %rows : tensor<8x8xi64> -> tensor<8x8xi1>
  %mask = titan.select %above, %ninf, %zero : tensor<8x8xi1>, tensor<8x8xf32>
  %mb = titan.broadcast_in_dim %mask dims [2, 3] : tensor<8x8xf32> -> tensor<2x4x8x8xf32>
  %masked = titan.add %ss, %mb : tensor<2x4x8x8xf32>
  %p = titan.softmax %masked dim 3 : tensor<2x4x8x8xf32>
  %pb = titan.cast %p : tensor<2x4x8x8xf32> to tensor<2x4x8x8xbf16>
  %o = titan.matmul %pb, %v : tensor<2x4x8x8xbf16>, tensor<2x4x8x4xbf16> -> tensor<2x4x8x4xbf16>
  return %o : tensor<2x4x8x4xbf16>
}

// GPTBigCode's multi-query attention: q [batch, seq, heads * head_dim]
// viewed [batch, seq * heads, head_dim] (the heads folded into the
// queries), one K and V head, the scores viewed [batch, seq, heads, seq]
// for the causal mask (a [1, seq, 1, seq] where) and the softmax, folded
// again for the product with v. Attention reads q as [batch, heads, seq,
// head_dim] and k, v as one KV head.
// CHECK-LABEL: func.func @bigcode
// CHECK: %[[O:.*]], %{{.*}} = titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<2x4x8x4xf32>, tensor<2x1x8x4xf32>
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @bigcode(%q: tensor<2x8x4x4xf32> {titan.name = "q"},
                   %k: tensor<2x8x4x4xf32> {titan.name = "k4"},
                   %v: tensor<2x8x4x4xf32> {titan.name = "v4"})
    -> (tensor<2x8x16xf32> {titan.name = "out"}) {
  %min = titan.constant dense<0xFF7FFFFF> : tensor<2x8x4x8xf32>
  %q3 = titan.reshape %q : tensor<2x8x4x4xf32> -> tensor<2x32x4xf32>
  %k1 = titan.slice %k [0, 0, 0, 0] to [2, 8, 1, 4] step [1, 1, 1, 1] : tensor<2x8x4x4xf32> -> tensor<2x8x1x4xf32>
  %v1 = titan.slice %v [0, 0, 0, 0] to [2, 8, 1, 4] step [1, 1, 1, 1] : tensor<2x8x4x4xf32> -> tensor<2x8x1x4xf32>
  %k3 = titan.reshape %k1 : tensor<2x8x1x4xf32> -> tensor<2x8x4xf32>
  %v3 = titan.reshape %v1 : tensor<2x8x1x4xf32> -> tensor<2x8x4xf32>
  %kT = titan.transpose %k3 [0, 2, 1] : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  %s = titan.matmul %q3, %kT : tensor<2x32x4xf32>, tensor<2x4x8xf32> -> tensor<2x32x8xf32>
  %ss = titan.scale %s by 5.000000e-01 : tensor<2x32x8xf32>
  %s4 = titan.reshape %ss : tensor<2x32x8xf32> -> tensor<2x8x4x8xf32>
  %rows = titan.iota dim 0 : tensor<8x8xi64>
  %cols = titan.iota dim 1 : tensor<8x8xi64>
  %causal = titan.compare le, %cols, %rows : tensor<8x8xi64> -> tensor<8x8xi1>
  %c4 = titan.reshape %causal : tensor<8x8xi1> -> tensor<1x8x1x8xi1>
  %cb = titan.broadcast_in_dim %c4 dims [0, 1, 2, 3] : tensor<1x8x1x8xi1> -> tensor<2x8x4x8xi1>
  %masked = titan.select %cb, %s4, %min : tensor<2x8x4x8xi1>, tensor<2x8x4x8xf32>
  %p = titan.softmax %masked dim 3 : tensor<2x8x4x8xf32>
  %p3 = titan.reshape %p : tensor<2x8x4x8xf32> -> tensor<2x32x8xf32>
  %o = titan.matmul %p3, %v3 : tensor<2x32x8xf32>, tensor<2x8x4xf32> -> tensor<2x32x4xf32>
  %out = titan.reshape %o : tensor<2x32x4xf32> -> tensor<2x8x16xf32>
  return %out : tensor<2x8x16xf32>
}

// Buffer masks that are not causal stay explicit: the tril buffer sliced
// one row down (each query sees one key ahead) or with a stride, and a
// sliding-window buffer (keys more than 3 back hidden too).
// CHECK-LABEL: func.func @buffer_not_causal
// CHECK-NOT: titan.attention
// CHECK: return
func.func @buffer_not_causal(%qt: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x8xf32>,
                             %vt: tensor<1x2x8x4xf32>,
                             %tril: tensor<1x1x16x16xf32> {titan.role = "buffer", titan.diagonals = dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]> : tensor<31xf32>},
                             %window: tensor<1x1x16x16xf32> {titan.role = "buffer", titan.diagonals = dense<[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]> : tensor<31xf32>})
    -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %ninf = titan.constant dense<0xFF800000> : tensor<1x2x8x8xf32>
  %zero = titan.constant dense<0.000000e+00> : tensor<1x1x8x8xf32>
  // One row down.
  %m1 = titan.slice %tril [0, 0, 1, 0] to [1, 1, 9, 8] step [1, 1, 1, 1] : tensor<1x1x16x16xf32> -> tensor<1x1x8x8xf32>
  %h1 = titan.compare eq, %m1, %zero : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xi1>
  %b1 = titan.broadcast_in_dim %h1 dims [0, 1, 2, 3] : tensor<1x1x8x8xi1> -> tensor<1x2x8x8xi1>
  %s1 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a1 = titan.select %b1, %ninf, %s1 : tensor<1x2x8x8xi1>, tensor<1x2x8x8xf32>
  %p1 = titan.softmax %a1 dim 3 : tensor<1x2x8x8xf32>
  %o1 = titan.matmul %p1, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // Every other key: key j of the slice is key 2j of the buffer.
  %m2 = titan.slice %tril [0, 0, 0, 0] to [1, 1, 8, 16] step [1, 1, 1, 2] : tensor<1x1x16x16xf32> -> tensor<1x1x8x8xf32>
  %h2 = titan.compare eq, %m2, %zero : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xi1>
  %b2 = titan.broadcast_in_dim %h2 dims [0, 1, 2, 3] : tensor<1x1x8x8xi1> -> tensor<1x2x8x8xi1>
  %s2 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a2 = titan.select %b2, %ninf, %s2 : tensor<1x2x8x8xi1>, tensor<1x2x8x8xf32>
  %p2 = titan.softmax %a2 dim 3 : tensor<1x2x8x8xf32>
  %o2 = titan.matmul %p2, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // Sliding window.
  %m3 = titan.slice %window [0, 0, 0, 0] to [1, 1, 8, 8] step [1, 1, 1, 1] : tensor<1x1x16x16xf32> -> tensor<1x1x8x8xf32>
  %h3 = titan.compare eq, %m3, %zero : tensor<1x1x8x8xf32> -> tensor<1x1x8x8xi1>
  %b3 = titan.broadcast_in_dim %h3 dims [0, 1, 2, 3] : tensor<1x1x8x8xi1> -> tensor<1x2x8x8xi1>
  %s3 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a3 = titan.select %b3, %ninf, %s3 : tensor<1x2x8x8xi1>, tensor<1x2x8x8xf32>
  %p3 = titan.softmax %a3 dim 3 : tensor<1x2x8x8xf32>
  %o3 = titan.matmul %p3, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  return %o1, %o2, %o3 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// Masks that are not the causal mask stay explicit: a sliding window (keys
// more than 3 back hidden too), triu(-inf, 2) (one key ahead visible),
// triu(-inf, 0) (the diagonal hidden), a mask that depends on the head, a
// finite "-inf", a mask computed at run time.
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: titan.attention
// CHECK: return
func.func @not_causal(%qt: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x8xf32>,
                      %vt: tensor<1x2x8x4xf32>, %runtime: tensor<8x8xf32>)
    -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>,
        tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %zero = titan.constant dense<0.000000e+00> : tensor<8x8xf32>
  %ninf = titan.constant dense<0xFF800000> : tensor<8x8xf32>
  %one = titan.constant dense<1.000000e+00> : tensor<8x8xf64>
  %two = titan.constant dense<2.000000e+00> : tensor<8x8xf64>
  %zero64 = titan.constant dense<0.000000e+00> : tensor<8x8xf64>
  %minus4 = titan.constant dense<-4.000000e+00> : tensor<8x8xf64>
  %rows = titan.iota dim 0 : tensor<8x8xf64>
  %cols = titan.iota dim 1 : tensor<8x8xf64>
  %diff = titan.sub %cols, %rows : tensor<8x8xf64>
  // Sliding window.
  %ahead = titan.compare ge, %diff, %one : tensor<8x8xf64> -> tensor<8x8xi1>
  %far = titan.compare le, %diff, %minus4 : tensor<8x8xf64> -> tensor<8x8xi1>
  %m1a = titan.select %far, %ninf, %zero : tensor<8x8xi1>, tensor<8x8xf32>
  %m1 = titan.select %ahead, %ninf, %m1a : tensor<8x8xi1>, tensor<8x8xf32>
  %b1 = titan.broadcast_in_dim %m1 dims [2, 3] : tensor<8x8xf32> -> tensor<1x2x8x8xf32>
  %s1 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a1 = titan.add %s1, %b1 : tensor<1x2x8x8xf32>
  %p1 = titan.softmax %a1 dim 3 : tensor<1x2x8x8xf32>
  %o1 = titan.matmul %p1, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // triu(-inf, 2).
  %ahead2 = titan.compare ge, %diff, %two : tensor<8x8xf64> -> tensor<8x8xi1>
  %m2 = titan.select %ahead2, %ninf, %zero : tensor<8x8xi1>, tensor<8x8xf32>
  %b2 = titan.broadcast_in_dim %m2 dims [2, 3] : tensor<8x8xf32> -> tensor<1x2x8x8xf32>
  %s2 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a2 = titan.add %s2, %b2 : tensor<1x2x8x8xf32>
  %p2 = titan.softmax %a2 dim 3 : tensor<1x2x8x8xf32>
  %o2 = titan.matmul %p2, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // triu(-inf, 0).
  %ahead0 = titan.compare ge, %diff, %zero64 : tensor<8x8xf64> -> tensor<8x8xi1>
  %m3 = titan.select %ahead0, %ninf, %zero : tensor<8x8xi1>, tensor<8x8xf32>
  %b3 = titan.broadcast_in_dim %m3 dims [2, 3] : tensor<8x8xf32> -> tensor<1x2x8x8xf32>
  %s3 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a3 = titan.add %s3, %b3 : tensor<1x2x8x8xf32>
  %p3 = titan.softmax %a3 dim 3 : tensor<1x2x8x8xf32>
  %o3 = titan.matmul %p3, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // Causal for head 0 only: the head index is compared too.
  %heads = titan.iota dim 1 : tensor<1x2x8x8xf64>
  %headOne = titan.constant dense<1.000000e+00> : tensor<1x2x8x8xf64>
  %isHeadOne = titan.compare eq, %heads, %headOne : tensor<1x2x8x8xf64> -> tensor<1x2x8x8xi1>
  %causal = titan.broadcast_in_dim %ahead dims [2, 3] : tensor<8x8xi1> -> tensor<1x2x8x8xi1>
  %hide = titan.select %isHeadOne, %isHeadOne, %causal : tensor<1x2x8x8xi1>, tensor<1x2x8x8xi1>
  %ninf4 = titan.constant dense<0xFF800000> : tensor<1x2x8x8xf32>
  %s4 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a4 = titan.select %hide, %ninf4, %s4 : tensor<1x2x8x8xi1>, tensor<1x2x8x8xf32>
  %p4 = titan.softmax %a4 dim 3 : tensor<1x2x8x8xf32>
  %o4 = titan.matmul %p4, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // A finite mask value.
  %big = titan.constant dense<-1.000000e+09> : tensor<8x8xf32>
  %m5 = titan.select %ahead, %big, %zero : tensor<8x8xi1>, tensor<8x8xf32>
  %b5 = titan.broadcast_in_dim %m5 dims [2, 3] : tensor<8x8xf32> -> tensor<1x2x8x8xf32>
  %s5 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a5 = titan.add %s5, %b5 : tensor<1x2x8x8xf32>
  %p5 = titan.softmax %a5 dim 3 : tensor<1x2x8x8xf32>
  %o5 = titan.matmul %p5, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // A runtime mask.
  %b6 = titan.broadcast_in_dim %runtime dims [2, 3] : tensor<8x8xf32> -> tensor<1x2x8x8xf32>
  %s6 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %a6 = titan.add %s6, %b6 : tensor<1x2x8x8xf32>
  %p6 = titan.softmax %a6 dim 3 : tensor<1x2x8x8xf32>
  %o6 = titan.matmul %p6, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  return %o1, %o2, %o3, %o4, %o5, %o6 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>,
      tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// Mixed precision: bf16 scores widened to f32 for the softmax and the
// probabilities narrowed back (`softmax((scores + mask).float()).type_as(q)`).
// CHECK-LABEL: func.func @mixed_precision
// CHECK: titan.attention %{{.*}}, %{{.*}}, %{{.*}} causal scale 5.000000e-01 : tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>
// CHECK-NOT: titan.softmax
// CHECK: return
func.func @mixed_precision(%qh: tensor<1x2x8x4xbf16>, %kh: tensor<1x2x4x8xbf16>,
                           %vh: tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xbf16> {
  %zero = titan.constant dense<0.000000e+00> : tensor<8x8xbf16>
  %ninf = titan.constant dense<0xFF80> : tensor<8x8xbf16>
  %one = titan.constant dense<1.000000e+00> : tensor<8x8xf64>
  %rows = titan.iota dim 0 : tensor<8x8xf64>
  %cols = titan.iota dim 1 : tensor<8x8xf64>
  %diff = titan.sub %cols, %rows : tensor<8x8xf64>
  %ahead = titan.compare ge, %diff, %one : tensor<8x8xf64> -> tensor<8x8xi1>
  %m = titan.select %ahead, %ninf, %zero : tensor<8x8xi1>, tensor<8x8xbf16>
  %b = titan.broadcast_in_dim %m dims [2, 3] : tensor<8x8xbf16> -> tensor<1x2x8x8xbf16>
  %s = titan.matmul %qh, %kh : tensor<1x2x8x4xbf16>, tensor<1x2x4x8xbf16> -> tensor<1x2x8x8xbf16>
  %h = titan.scale %s by 5.000000e-01 : tensor<1x2x8x8xbf16>
  %a = titan.add %h, %b : tensor<1x2x8x8xbf16>
  %f = titan.cast %a : tensor<1x2x8x8xbf16> to tensor<1x2x8x8xf32>
  %p = titan.softmax %f dim 3 : tensor<1x2x8x8xf32>
  %n = titan.cast %p : tensor<1x2x8x8xf32> to tensor<1x2x8x8xbf16>
  %o = titan.matmul %n, %vh : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>
  return %o : tensor<1x2x8x4xbf16>
}

// Not attention as titan.attention computes it: the softmax over the query
// dim, the scores or the probabilities also used elsewhere, a scale only
// known at run time, a negative scale, more than one conversion on the way
// (bf16 scores widened to f32 and then to f64).
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: titan.attention
// CHECK: return
func.func @not_attention(%qt: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x8xf32>,
                         %vt: tensor<1x2x8x4xf32>, %scale: tensor<1x2x8x8xf32>,
                         %qh: tensor<1x2x8x4xbf16>, %kh: tensor<1x2x4x8xbf16>,
                         %vh: tensor<1x2x8x4xbf16>)
    -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x8xf32>,
        tensor<1x2x8x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>,
        tensor<1x2x8x4xf32>, tensor<1x2x8x4xbf16>) {
  // Softmax over dim 2.
  %s1 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %p1 = titan.softmax %s1 dim 2 : tensor<1x2x8x8xf32>
  %o1 = titan.matmul %p1, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // The scores returned too.
  %s2 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %p2 = titan.softmax %s2 dim 3 : tensor<1x2x8x8xf32>
  %o2 = titan.matmul %p2, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // The probabilities returned too.
  %s3 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %p3 = titan.softmax %s3 dim 3 : tensor<1x2x8x8xf32>
  %o3 = titan.matmul %p3, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // A runtime scale.
  %s4 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %d4 = titan.div %s4, %scale : tensor<1x2x8x8xf32>
  %p4 = titan.softmax %d4 dim 3 : tensor<1x2x8x8xf32>
  %o4 = titan.matmul %p4, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // A negative scale.
  %s5 = titan.matmul %qt, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x8x8xf32>
  %n5 = titan.scale %s5 by -5.000000e-01 : tensor<1x2x8x8xf32>
  %p5 = titan.softmax %n5 dim 3 : tensor<1x2x8x8xf32>
  %o5 = titan.matmul %p5, %vt : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
  // bf16 scores widened twice (to f32, then f64) before the softmax.
  %s6 = titan.matmul %qh, %kh : tensor<1x2x8x4xbf16>, tensor<1x2x4x8xbf16> -> tensor<1x2x8x8xbf16>
  %f6 = titan.cast %s6 : tensor<1x2x8x8xbf16> to tensor<1x2x8x8xf32>
  %g6 = titan.cast %f6 : tensor<1x2x8x8xf32> to tensor<1x2x8x8xf64>
  %p6 = titan.softmax %g6 dim 3 : tensor<1x2x8x8xf64>
  %h6 = titan.cast %p6 : tensor<1x2x8x8xf64> to tensor<1x2x8x8xbf16>
  %o6 = titan.matmul %h6, %vh : tensor<1x2x8x8xbf16>, tensor<1x2x8x4xbf16> -> tensor<1x2x8x4xbf16>
  return %o1, %o2, %s2, %o3, %p3, %o4, %o5, %o6 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x8xf32>,
      tensor<1x2x8x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xbf16>
}
