// RUN: titan-opt %s --split-input-file --titan-propagate-placements --titan-materialize-redistributes | FileCheck %s
// Determinism: a second run prints the same IR, and running the pass on its
// own output changes nothing.
// RUN: titan-opt %s --split-input-file --titan-propagate-placements --titan-materialize-redistributes > %t.1
// RUN: titan-opt %s --split-input-file --titan-propagate-placements --titan-materialize-redistributes > %t.2
// RUN: diff %t.1 %t.2
// RUN: titan-opt %s --split-input-file --titan-propagate-placements --titan-materialize-redistributes | titan-opt --split-input-file --titan-propagate-placements --titan-materialize-redistributes > %t.3
// RUN: titan-opt %t.1 --split-input-file --titan-propagate-placements --titan-materialize-redistributes > %t.4
// RUN: diff %t.3 %t.4

// FSDP: parameters, moments and the batch are S(0) on "fsdp" (the train
// step of embedding -> linear -> cross-entropy as titan-build-train-step
// writes it). The forward needs every weight whole: one all-gather per
// parameter, reused by the backward matmul. The weight gradients come out
// P(sum) over the batch axis; AdamW meets them with the moments' S(0), so
// each is reduce-scattered once (not all-reduced, not once per use). The
// loss, pinned R by the plan, is all-reduced.

// CHECK-LABEL: func.func @fsdp(
// CHECK-SAME: titan.name = "lr", titan.placements = #titan.placements<@mesh, [R]>
// CHECK-SAME: -> (tensor<f32> {titan.name = "loss", titan.placements = #titan.placements<@mesh, [R]>}, tensor<32x16xf32> {titan.name = "param.emb", titan.placements = #titan.placements<@mesh, [S(0)]>}
// CHECK: %[[W_FULL:.*]] = titan.redistribute %arg1 to <@mesh, [R]> {titan.placements = [#titan.placements<@mesh, [R]>]}
// CHECK-NEXT: %[[EMB_FULL:.*]] = titan.redistribute %arg0 to <@mesh, [R]>
// CHECK-NEXT: %[[X:.*]] = titan.embedding %[[EMB_FULL]], %arg6 {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
// CHECK-NEXT: titan.matmul %[[X]], %[[W_FULL]] transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
// CHECK-NOT: titan.redistribute
// CHECK: %[[LOSS:.*]] = titan.cross_entropy %{{.*}} {titan.placements = [#titan.placements<@mesh, [P(sum)]>]}
// CHECK-NEXT: %[[LOSS_R:.*]] = titan.redistribute %[[LOSS]] to <@mesh, [R]>
// CHECK-NOT: titan.redistribute
// CHECK: titan.matmul %{{.*}}, %[[W_FULL]] {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
// CHECK-NOT: titan.redistribute
// CHECK: %[[DW:.*]] = titan.matmul %{{.*}} transpose_lhs {titan.placements = [#titan.placements<@mesh, [P(sum)]>]}
// CHECK-NEXT: %[[DW_S:.*]] = titan.redistribute %[[DW]] to <@mesh, [S(0)]>
// CHECK-NEXT: %[[DEMB:.*]] = titan.embedding_grad %arg6, %{{.*}} {titan.placements = [#titan.placements<@mesh, [P(sum)]>]}
// CHECK-NEXT: %[[DEMB_S:.*]] = titan.redistribute %[[DEMB]] to <@mesh, [S(0)]>
// CHECK-NOT: titan.redistribute
// CHECK: titan.mul %[[DEMB_S]], %[[DEMB_S]] {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
// CHECK-NOT: titan.redistribute
// CHECK: titan.mul %[[DW_S]], %[[DW_S]] {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
// CHECK-NOT: titan.redistribute
// CHECK: return %[[LOSS_R]]

titan.mesh @mesh ["fsdp"=2]
func.func @fsdp(
    %emb: tensor<32x16xf32> {titan.name = "emb", titan.placements = #titan.placements<@mesh, [S(0)]>, titan.role = "param"},
    %w: tensor<32x16xf32> {titan.name = "w", titan.placements = #titan.placements<@mesh, [S(0)]>, titan.role = "param"},
    %m_emb: tensor<32x16xf32> {titan.name = "exp_avg.emb", titan.placements = #titan.placements<@mesh, [S(0)]>, titan.role = "state"},
    %m_w: tensor<32x16xf32> {titan.name = "exp_avg.w", titan.placements = #titan.placements<@mesh, [S(0)]>, titan.role = "state"},
    %v_emb: tensor<32x16xf32> {titan.name = "exp_avg_sq.emb", titan.placements = #titan.placements<@mesh, [S(0)]>, titan.role = "state"},
    %v_w: tensor<32x16xf32> {titan.name = "exp_avg_sq.w", titan.placements = #titan.placements<@mesh, [S(0)]>, titan.role = "state"},
    %tokens: tensor<8x32xi64> {titan.name = "tokens", titan.placements = #titan.placements<@mesh, [S(0)]>, titan.role = "input"},
    %labels: tensor<8x32xi64> {titan.name = "labels", titan.placements = #titan.placements<@mesh, [S(0)]>, titan.role = "input"},
    %lr: tensor<f32> {titan.name = "lr", titan.role = "input"},
    %step: tensor<f32> {titan.name = "step", titan.role = "input"}
    ) -> (tensor<f32> {titan.name = "loss", titan.placements = #titan.placements<@mesh, [R]>},
        tensor<32x16xf32> {titan.name = "param.emb"},
        tensor<32x16xf32> {titan.name = "param.w"},
        tensor<32x16xf32> {titan.name = "exp_avg.emb"},
        tensor<32x16xf32> {titan.name = "exp_avg.w"},
        tensor<32x16xf32> {titan.name = "exp_avg_sq.emb"},
        tensor<32x16xf32> {titan.name = "exp_avg_sq.w"}) {
  %0 = titan.embedding %emb, %tokens : tensor<32x16xf32>, tensor<8x32xi64> -> tensor<8x32x16xf32>
  %1 = titan.matmul %0, %w transpose_rhs : tensor<8x32x16xf32>, tensor<32x16xf32> -> tensor<8x32x32xf32>
  %2 = titan.reshape %1 : tensor<8x32x32xf32> -> tensor<256x32xf32>
  %3 = titan.reshape %labels : tensor<8x32xi64> -> tensor<256xi64>
  %4 = titan.cross_entropy %2, %3 : tensor<256x32xf32>, tensor<256xi64> -> tensor<f32>
  %5 = titan.constant dense<1.000000e+00> : tensor<f32>
  %6 = titan.cross_entropy_grad %2, %3, %5 : tensor<256x32xf32>, tensor<256xi64>, tensor<f32>
  %7 = titan.reshape %6 : tensor<256x32xf32> -> tensor<8x32x32xf32>
  %8 = titan.matmul %7, %w : tensor<8x32x32xf32>, tensor<32x16xf32> -> tensor<8x32x16xf32>
  %9 = titan.reshape %0 : tensor<8x32x16xf32> -> tensor<256x16xf32>
  %10 = titan.reshape %7 : tensor<8x32x32xf32> -> tensor<256x32xf32>
  %11 = titan.matmul %10, %9 transpose_lhs : tensor<256x32xf32>, tensor<256x16xf32> -> tensor<32x16xf32>
  %12 = titan.embedding_grad %tokens, %8 : tensor<8x32xi64>, tensor<8x32x16xf32> -> tensor<32x16xf32>
  %13 = titan.cast %lr : tensor<f32> to tensor<f64>
  %14 = titan.constant dense<1.000000e+00> : tensor<f64>
  %15 = titan.cast %step : tensor<f32> to tensor<f64>
  %16 = titan.add %15, %14 : tensor<f64>
  %17 = titan.scale %13 by 1.000000e-01 : tensor<f64>
  %18 = titan.constant dense<1.000000e+00> : tensor<f64>
  %19 = titan.sub %18, %17 : tensor<f64>
  %20 = titan.scale %16 by -0.10536051565782628 : tensor<f64>
  %21 = titan.exp %20 : tensor<f64>
  %22 = titan.constant dense<1.000000e+00> : tensor<f64>
  %23 = titan.sub %22, %21 : tensor<f64>
  %24 = titan.div %13, %23 : tensor<f64>
  %25 = titan.scale %16 by -0.051293294387550578 : tensor<f64>
  %26 = titan.exp %25 : tensor<f64>
  %27 = titan.constant dense<1.000000e+00> : tensor<f64>
  %28 = titan.sub %27, %26 : tensor<f64>
  %29 = titan.sqrt %28 : tensor<f64>
  %30 = titan.cast %19 : tensor<f64> to tensor<f32>
  %31 = titan.broadcast_in_dim %30 dims [] : tensor<f32> -> tensor<32x16xf32>
  %32 = titan.mul %emb, %31 : tensor<32x16xf32>
  %33 = titan.scale %12 by 0.099999999999999978 : tensor<32x16xf32>
  %34 = titan.scale %m_emb by 9.000000e-01 : tensor<32x16xf32>
  %35 = titan.add %34, %33 : tensor<32x16xf32>
  %36 = titan.mul %12, %12 : tensor<32x16xf32>
  %37 = titan.scale %36 by 0.050000000000000044 : tensor<32x16xf32>
  %38 = titan.scale %v_emb by 0.94999999999999996 : tensor<32x16xf32>
  %39 = titan.add %38, %37 : tensor<32x16xf32>
  %40 = titan.constant dense<9.99999993E-9> : tensor<32x16xf32>
  %41 = titan.cast %29 : tensor<f64> to tensor<f32>
  %42 = titan.broadcast_in_dim %41 dims [] : tensor<f32> -> tensor<32x16xf32>
  %43 = titan.sqrt %39 : tensor<32x16xf32>
  %44 = titan.div %43, %42 : tensor<32x16xf32>
  %45 = titan.add %44, %40 : tensor<32x16xf32>
  %46 = titan.cast %24 : tensor<f64> to tensor<f32>
  %47 = titan.broadcast_in_dim %46 dims [] : tensor<f32> -> tensor<32x16xf32>
  %48 = titan.div %35, %45 : tensor<32x16xf32>
  %49 = titan.mul %48, %47 : tensor<32x16xf32>
  %50 = titan.sub %32, %49 : tensor<32x16xf32>
  %51 = titan.cast %19 : tensor<f64> to tensor<f32>
  %52 = titan.broadcast_in_dim %51 dims [] : tensor<f32> -> tensor<32x16xf32>
  %53 = titan.mul %w, %52 : tensor<32x16xf32>
  %54 = titan.scale %11 by 0.099999999999999978 : tensor<32x16xf32>
  %55 = titan.scale %m_w by 9.000000e-01 : tensor<32x16xf32>
  %56 = titan.add %55, %54 : tensor<32x16xf32>
  %57 = titan.mul %11, %11 : tensor<32x16xf32>
  %58 = titan.scale %57 by 0.050000000000000044 : tensor<32x16xf32>
  %59 = titan.scale %v_w by 0.94999999999999996 : tensor<32x16xf32>
  %60 = titan.add %59, %58 : tensor<32x16xf32>
  %61 = titan.constant dense<9.99999993E-9> : tensor<32x16xf32>
  %62 = titan.cast %29 : tensor<f64> to tensor<f32>
  %63 = titan.broadcast_in_dim %62 dims [] : tensor<f32> -> tensor<32x16xf32>
  %64 = titan.sqrt %60 : tensor<32x16xf32>
  %65 = titan.div %64, %63 : tensor<32x16xf32>
  %66 = titan.add %65, %61 : tensor<32x16xf32>
  %67 = titan.cast %24 : tensor<f64> to tensor<f32>
  %68 = titan.broadcast_in_dim %67 dims [] : tensor<f32> -> tensor<32x16xf32>
  %69 = titan.div %56, %66 : tensor<32x16xf32>
  %70 = titan.mul %69, %68 : tensor<32x16xf32>
  %71 = titan.sub %53, %70 : tensor<32x16xf32>
  return %4, %50, %71, %35, %56, %39, %60 : tensor<f32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>
}

// -----

// DDP: parameters and moments replicated, the batch S(0) on "dp". The
// forward needs no communication; the weight gradient is P(sum) and is
// all-reduced once, because the update meets it with the replicated
// parameter and moments.

titan.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @ddp(
// CHECK-SAME: %arg0: tensor<16x32xf32> {titan.placements = #titan.placements<@mesh, [R]>}
// CHECK-SAME: -> (tensor<8x4x16xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}, tensor<16x32xf32> {titan.placements = #titan.placements<@mesh, [R]>}
func.func @ddp(%w: tensor<16x32xf32>, %m: tensor<16x32xf32>, %v: tensor<16x32xf32>,
               %x: tensor<8x4x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
               %dy: tensor<8x4x16xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<8x4x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  // CHECK-NOT: titan.redistribute
  // CHECK: titan.matmul %arg3, %arg0 transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
  %y = titan.matmul %x, %w transpose_rhs : tensor<8x4x32xf32>, tensor<16x32xf32> -> tensor<8x4x16xf32>
  %dy2 = titan.reshape %dy : tensor<8x4x16xf32> -> tensor<32x16xf32>
  %x2 = titan.reshape %x : tensor<8x4x32xf32> -> tensor<32x32xf32>
  // CHECK: %[[G:.*]] = titan.matmul %{{.*}} transpose_lhs {titan.placements = [#titan.placements<@mesh, [P(sum)]>]}
  // CHECK-NEXT: %[[G_R:.*]] = titan.redistribute %[[G]] to <@mesh, [R]>
  // CHECK-NOT: titan.redistribute
  %g = titan.matmul %dy2, %x2 transpose_lhs : tensor<32x16xf32>, tensor<32x32xf32> -> tensor<16x32xf32>
  // CHECK: titan.scale %[[G_R]] by {{.*}} {titan.placements = [#titan.placements<@mesh, [R]>]}
  %g1 = titan.scale %g by 1.000000e-01 : tensor<16x32xf32>
  %m1 = titan.scale %m by 9.000000e-01 : tensor<16x32xf32>
  %m2 = titan.add %m1, %g1 : tensor<16x32xf32>
  // CHECK: titan.mul %[[G_R]], %[[G_R]]
  %gg = titan.mul %g, %g : tensor<16x32xf32>
  %v1 = titan.add %v, %gg : tensor<16x32xf32>
  %u = titan.div %m2, %v1 : tensor<16x32xf32>
  %w1 = titan.sub %w, %u : tensor<16x32xf32>
  // CHECK: return
  return %y, %w1, %m2, %v1 : tensor<8x4x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// Megatron tensor parallel MLP on "tp": w1 and w3 column-wise (S(0) of the
// [out, in] weight), w2 row-wise (S(1)). The hidden activations stay
// sharded S(2) between the matmuls with no redistribute; the row-parallel
// matmul leaves P(sum), reduced once (all-reduce) into the residual add.

// CHECK-LABEL: func.func @mlp(
// CHECK-NOT: titan.redistribute
// CHECK: titan.matmul %arg0, %arg1 transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(2)]>]}
// CHECK-NOT: titan.redistribute
// CHECK: titan.mul %{{.*}} {titan.placements = [#titan.placements<@mesh, [S(2)]>]}
// CHECK-NOT: titan.redistribute
// CHECK: %[[Y:.*]] = titan.matmul %{{.*}}, %arg3 transpose_rhs {titan.placements = [#titan.placements<@mesh, [P(sum)]>]}
// CHECK-NEXT: %[[Y_R:.*]] = titan.redistribute %[[Y]] to <@mesh, [R]>
// CHECK-NEXT: titan.add %arg0, %[[Y_R]] {titan.placements = [#titan.placements<@mesh, [R]>]}
// CHECK-NOT: titan.redistribute
titan.mesh @mesh ["tp"=2]
func.func @mlp(%x: tensor<2x8x32xf32> {titan.placements = #titan.placements<@mesh, [R]>},
               %w1: tensor<64x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
               %w3: tensor<64x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
               %w2: tensor<32x64xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>})
    -> (tensor<2x8x32xf32> {titan.placements = #titan.placements<@mesh, [R]>}) {
  %h1 = titan.matmul %x, %w1 transpose_rhs : tensor<2x8x32xf32>, tensor<64x32xf32> -> tensor<2x8x64xf32>
  %g = titan.silu %h1 : tensor<2x8x64xf32>
  %h3 = titan.matmul %x, %w3 transpose_rhs : tensor<2x8x32xf32>, tensor<64x32xf32> -> tensor<2x8x64xf32>
  %h = titan.mul %g, %h3 : tensor<2x8x64xf32>
  %y = titan.matmul %h, %w2 transpose_rhs : tensor<2x8x64xf32>, tensor<32x64xf32> -> tensor<2x8x32xf32>
  %r = titan.add %x, %y : tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// The same MLP with sequence parallelism: the input and the result are
// sharded on the sequence dim. One all-gather of the input (shared by both
// column-parallel matmuls), one reduce-scatter of the row-parallel partial
// sum onto the sequence dim.

// CHECK-LABEL: func.func @mlp_sp(
// CHECK: %[[X:.*]] = titan.redistribute %arg0 to <@mesh, [R]>
// CHECK-NOT: titan.redistribute
// CHECK: titan.matmul %[[X]], %arg1 transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(2)]>]}
// CHECK-NOT: titan.redistribute
// CHECK: titan.matmul %[[X]], %arg2 transpose_rhs
// CHECK-NOT: titan.redistribute
// CHECK: %[[Y:.*]] = titan.matmul %{{.*}}, %arg3 transpose_rhs {titan.placements = [#titan.placements<@mesh, [P(sum)]>]}
// CHECK-NEXT: %[[Y_S:.*]] = titan.redistribute %[[Y]] to <@mesh, [S(1)]>
// CHECK-NEXT: titan.add %arg0, %[[Y_S]] {titan.placements = [#titan.placements<@mesh, [S(1)]>]}
// CHECK-NOT: titan.redistribute
titan.mesh @mesh ["tp"=2]
func.func @mlp_sp(%x: tensor<2x8x32xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>},
               %w1: tensor<64x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
               %w3: tensor<64x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
               %w2: tensor<32x64xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>})
    -> (tensor<2x8x32xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>}) {
  %h1 = titan.matmul %x, %w1 transpose_rhs : tensor<2x8x32xf32>, tensor<64x32xf32> -> tensor<2x8x64xf32>
  %g = titan.silu %h1 : tensor<2x8x64xf32>
  %h3 = titan.matmul %x, %w3 transpose_rhs : tensor<2x8x32xf32>, tensor<64x32xf32> -> tensor<2x8x64xf32>
  %h = titan.mul %g, %h3 : tensor<2x8x64xf32>
  %y = titan.matmul %h, %w2 transpose_rhs : tensor<2x8x64xf32>, tensor<32x64xf32> -> tensor<2x8x32xf32>
  %r = titan.add %x, %y : tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// -----

// Conflicts resolved by cost: the activation and the weight of a matmul are
// sharded on the same axis by different factors (batch vs output features);
// the cheaper of the two all-gathers wins. With a small weight the weight is
// gathered (FSDP); with a large one the activation is gathered and the
// output stays sharded on its feature dim.

titan.mesh @mesh ["x"=2]
// CHECK-LABEL: func.func @small_weight(
// CHECK: %[[W:.*]] = titan.redistribute %arg1 to <@mesh, [R]>
// CHECK-NEXT: titan.matmul %arg0, %[[W]] transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
func.func @small_weight(%x: tensor<64x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                        %w: tensor<16x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> tensor<64x16xf32> {
  %y = titan.matmul %x, %w transpose_rhs : tensor<64x32xf32>, tensor<16x32xf32> -> tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}
// CHECK-LABEL: func.func @large_weight(
// CHECK: %[[X:.*]] = titan.redistribute %arg0 to <@mesh, [R]>
// CHECK-NEXT: titan.matmul %[[X]], %arg1 transpose_rhs {titan.placements = [#titan.placements<@mesh, [S(1)]>]}
func.func @large_weight(%x: tensor<4x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                        %w: tensor<256x32xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> tensor<4x256xf32> {
  %y = titan.matmul %x, %w transpose_rhs : tensor<4x32xf32>, tensor<256x32xf32> -> tensor<4x256xf32>
  return %y : tensor<4x256xf32>
}

// -----

// Two consumers that want one value with different layouts, and a pinned
// function result: the returned value must be R, which makes its two
// sharded uses free local slices (R -> S) rather than an all-to-all between
// them. Each redistribution is created once, right after the definition.

titan.mesh @mesh ["x"=2]
// CHECK-LABEL: func.func @two_consumers(
// CHECK-SAME: -> (tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}, tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>}, tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [R]>})
// CHECK: %[[E:.*]] = titan.exp %arg0 {titan.placements = [#titan.placements<@mesh, [R]>]}
// CHECK-NEXT: %[[E0:.*]] = titan.redistribute %[[E]] to <@mesh, [S(0)]>
// CHECK-NEXT: %[[E1:.*]] = titan.redistribute %[[E]] to <@mesh, [S(1)]>
// CHECK-NEXT: %[[A:.*]] = titan.add %[[E0]], %arg1 {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
// CHECK-NEXT: %[[B:.*]] = titan.add %[[E1]], %arg2 {titan.placements = [#titan.placements<@mesh, [S(1)]>]}
// CHECK-NEXT: return %[[A]], %[[B]], %[[E]]
func.func @two_consumers(%a: tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [R]>},
                         %b: tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                         %c: tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>})
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32> {titan.placements = #titan.placements<@mesh, [R]>}) {
  %e = titan.exp %a : tensor<8x8xf32>
  %x = titan.add %e, %b : tensor<8x8xf32>
  %y = titan.add %e, %c : tensor<8x8xf32>
  return %x, %y, %e : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A value shared by consumers that want it sharded differently (AdamW's
// broadcast scalars are shared by the updates of column- and row-wise
// weights): its producer decides after both consumers asked, and computes
// it replicated, so that both get free local slices instead of one
// all-to-all between the two layouts.

titan.mesh @mesh ["tp"=2]
// CHECK-LABEL: func.func @shared_broadcast(
// CHECK: %[[C:.*]] = titan.broadcast_in_dim %arg2 dims [] {titan.placements = [#titan.placements<@mesh, [R]>]}
// CHECK-NEXT: %[[C0:.*]] = titan.redistribute %[[C]] to <@mesh, [S(0)]>
// CHECK-NEXT: %[[C1:.*]] = titan.redistribute %[[C]] to <@mesh, [S(1)]>
// CHECK-NEXT: titan.mul %arg0, %[[C0]] {titan.placements = [#titan.placements<@mesh, [S(0)]>]}
// CHECK-NEXT: titan.mul %arg1, %[[C1]] {titan.placements = [#titan.placements<@mesh, [S(1)]>]}
func.func @shared_broadcast(%a: tensor<64x64xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>},
                            %b: tensor<64x64xf32> {titan.placements = #titan.placements<@mesh, [S(1)]>},
                            %s: tensor<f32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %c = titan.broadcast_in_dim %s dims [] : tensor<f32> -> tensor<64x64xf32>
  %x = titan.mul %a, %c : tensor<64x64xf32>
  %y = titan.mul %b, %c : tensor<64x64xf32>
  return %x, %y : tensor<64x64xf32>, tensor<64x64xf32>
}
