// RUN: titan-opt %s --titan-plan-memory --split-input-file | FileCheck %s
// RUN: not titan-opt %s --split-input-file --titan-plan-memory=alignment=48 2>&1 | FileCheck %s --check-prefix=ALIGN

// Arguments get the state (param, state, buffer) and inputs regions in
// order. In the arena: %a is computed in place over nothing (its inputs are
// not in the arena), %b in place over %a (dead there), the reshape is a view
// of %b's buffer, whose lifetime it extends to the exp_avg update (op 4).
// The reduction's scratch and the loss overlap that buffer in time, so they
// go above it, largest first, aligned to 64 bytes; the peak is op 3 (256 +
// 16 + 4 bytes live). The updates of exp_avg.w and w are computed in place
// over their arguments, which are last read there: the optimizer writes the
// state directly.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %arg0: tensor<64xf32> {titan.buffer = #titan.buffer<state[0, 256]>
// CHECK-SAME: %arg1: tensor<64xf32> {titan.buffer = #titan.buffer<state[256, 256]>
// CHECK-SAME: %arg2: tensor<64xf32> {titan.buffer = #titan.buffer<inputs[0, 256]>
// CHECK-SAME: -> (tensor<f32> {titan.buffer = #titan.buffer<arena[320, 4]>, titan.name = "loss"}, tensor<64xf32> {titan.buffer = #titan.buffer<state[0, 256]>, titan.name = "param.w"}, tensor<64xf32> {titan.buffer = #titan.buffer<state[256, 256]>, titan.name = "exp_avg.w"})
// CHECK-SAME: titan.memory_plan = {arena_bytes = 384 : i64, input_bytes = 256 : i64, peak_collective_bytes = 0 : i64, peak_live_bytes = 276 : i64, peak_op = "titan.launch @sum", peak_op_index = 3 : i64, state_bytes = 512 : i64}
// CHECK: %[[A:.*]] = titan.launch @ew(%arg2, %arg0) {titan.buffers = [#titan.buffer<arena[0, 256]>]}
// CHECK: %[[B:.*]] = titan.launch @ew(%[[A]], %arg0) {titan.buffers = [#titan.buffer<arena[0, 256]>]}
// CHECK: %[[R:.*]] = titan.reshape %[[B]] {titan.buffers = [#titan.buffer<arena[0, 256]>]}
// CHECK: titan.launch @sum(%[[R]]) {titan.buffers = [#titan.buffer<arena[320, 4]>], titan.scratch = [#titan.buffer<arena[256, 16]>]}
// CHECK: %[[M:.*]] = titan.launch @ew(%arg1, %[[B]]) {titan.buffers = [#titan.buffer<state[256, 256]>]}
// CHECK: titan.launch @ew(%arg0, %[[M]]) {titan.buffers = [#titan.buffer<state[0, 256]>]}
func.func private @ew(memref<64xf32>, memref<64xf32>, memref<64xf32>) attributes {titan.kernel, titan.in_place = array<i64: 0, 2>}
func.func private @sum(memref<8x8xf32>, memref<f32>, memref<4xf32>) attributes {titan.kernel, titan.in_place = array<i64>}
func.func @train_step(%w: tensor<64xf32> {titan.name = "w", titan.role = "param"},
                      %m: tensor<64xf32> {titan.name = "exp_avg.w", titan.role = "state"},
                      %x: tensor<64xf32> {titan.name = "x", titan.role = "input"})
    -> (tensor<f32> {titan.name = "loss"}, tensor<64xf32> {titan.name = "param.w"}, tensor<64xf32> {titan.name = "exp_avg.w"}) {
  %a = titan.launch @ew(%x, %w) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %b = titan.launch @ew(%a, %w) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %r = titan.reshape %b : tensor<64xf32> -> tensor<8x8xf32>
  %loss = titan.launch @sum(%r) : (tensor<8x8xf32>) -> tensor<f32>
  %m2 = titan.launch @ew(%m, %b) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %w2 = titan.launch @ew(%w, %m2) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %loss, %w2, %m2 : tensor<f32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// A kernel that cannot work in place (no titan.in_place pair) gets a new
// buffer; buffers whose lifetimes do not overlap share memory (%c and %out
// reuse %a's place, the update %b's). The update of w is computed while w
// is still read later, so it stays in the arena and its result's place (the
// state) tells the lowering to copy it there at the end.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<64xf32> {titan.buffer = #titan.buffer<state[0, 256]>, titan.name = "param.w"}, tensor<64xf32> {titan.buffer = #titan.buffer<arena[0, 256]>, titan.name = "out"})
// CHECK-SAME: arena_bytes = 512
// CHECK-SAME: peak_live_bytes = 512
// CHECK: %[[A:.*]] = titan.launch @copy(%arg0) {titan.buffers = [#titan.buffer<arena[0, 256]>]}
// CHECK: %[[B:.*]] = titan.launch @copy(%[[A]]) {titan.buffers = [#titan.buffer<arena[256, 256]>]}
// CHECK: %[[C:.*]] = titan.launch @copy(%[[B]]) {titan.buffers = [#titan.buffer<arena[0, 256]>]}
// CHECK: %[[U:.*]] = titan.launch @copy(%[[C]]) {titan.buffers = [#titan.buffer<arena[256, 256]>]}
// CHECK: titan.launch @copy(%arg0) {titan.buffers = [#titan.buffer<arena[0, 256]>]}
func.func private @copy(memref<64xf32>, memref<64xf32>) attributes {titan.kernel, titan.in_place = array<i64>}
func.func @train_step(%w: tensor<64xf32> {titan.name = "w", titan.role = "param"})
    -> (tensor<64xf32> {titan.name = "param.w"}, tensor<64xf32> {titan.name = "out"}) {
  %a = titan.launch @copy(%w) : (tensor<64xf32>) -> tensor<64xf32>
  %b = titan.launch @copy(%a) : (tensor<64xf32>) -> tensor<64xf32>
  %c = titan.launch @copy(%b) : (tensor<64xf32>) -> tensor<64xf32>
  %update = titan.launch @copy(%c) : (tensor<64xf32>) -> tensor<64xf32>
  %out = titan.launch @copy(%w) : (tensor<64xf32>) -> tensor<64xf32>
  return %update, %out : tensor<64xf32>, tensor<64xf32>
}

// -----

// A moment update whose kernel takes the gradient first may still write
// over the moment, its other in-place input, which it reads last: the
// optimizer updates the state directly instead of copying it there.

// CHECK-LABEL: func.func @moment
// CHECK-SAME: -> (tensor<64xf32> {titan.buffer = #titan.buffer<state[0, 256]>, titan.name = "exp_avg.w"})
// CHECK-SAME: arena_bytes = 0
// CHECK: titan.launch @update(%arg1, %arg0) {titan.buffers = [#titan.buffer<state[0, 256]>]}
func.func private @update(memref<64xf32>, memref<64xf32>, memref<64xf32>) attributes {titan.kernel, titan.in_place = array<i64: 0, 2, 1, 2>}
func.func @moment(%m: tensor<64xf32> {titan.name = "exp_avg.w", titan.role = "state"},
                  %g: tensor<64xf32> {titan.name = "g", titan.role = "input"})
    -> (tensor<64xf32> {titan.name = "exp_avg.w"}) {
  %m2 = titan.launch @update(%g, %m) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %m2 : tensor<64xf32>
}

// -----

// The backward of attention needs a workspace of one f32 row statistic per
// query row (rowsum(grad * out)): 2 * 4 * 8 * 4 = 256 bytes of scratch.

// CHECK-LABEL: func.func @attention
// CHECK: titan.attention_grad {{.*}}titan.scratch = [#titan.buffer<arena[{{[0-9]+}}, 256]>]
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %o: tensor<2x4x8x16xf32>, %lse: tensor<2x4x8xf32>, %g: tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  %dq, %dk, %dv = titan.attention_grad %q, %k, %v, %o, %lse, %g causal : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>
  return %dq, %dk, %dv : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// -----

// A GEMM with an addend writes its sum over the addend when the addend is
// last read there (%s over %a's buffer; %t over %s's), but never over a
// buffer it also reads as a factor (%u reads %t as its lhs too, so it gets
// a buffer of its own).

// CHECK-LABEL: func.func @matmul_addend
// CHECK: %[[A:.*]] = titan.launch @copy(%arg0) {titan.buffers = [#titan.buffer<arena[0, 64]>]}
// CHECK: %[[S:.*]] = titan.matmul %arg0, %arg1 plus %[[A]] {titan.buffers = [#titan.buffer<arena[0, 64]>]}
// CHECK: %[[T:.*]] = titan.matmul %arg0, %arg1 plus %[[S]] {titan.buffers = [#titan.buffer<arena[0, 64]>]}
// CHECK: titan.matmul %[[T]], %arg1 plus %[[T]] {titan.buffers = [#titan.buffer<arena[64, 64]>]}
func.func private @copy(memref<4x4xf32>, memref<4x4xf32>) attributes {titan.kernel, titan.in_place = array<i64>}
func.func @matmul_addend(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = titan.launch @copy(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = titan.matmul %x, %w plus %a : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %t = titan.matmul %x, %w plus %s : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %u = titan.matmul %t, %w plus %t : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %u : tensor<4x4xf32>
}

// ALIGN: error: titan-plan-memory: alignment must be a power of two, got 48
