// End to end with titan-propagate-placements: an FSDP train step (embedding
// -> linear -> cross-entropy, its VJP and AdamW, as titan-build-train-step
// writes it) with only the arguments placed; propagation inserts the
// redistributions, titan-spmdize lowers them, and the program on 2 ranks
// gives the single-device step's loss and updated parameters and moments.
// RUN: %python %S/Inputs/spmdize_numerics.py gen %t emb:32x16 w:32x16 exp_avg.emb:32x16 exp_avg.w:32x16 exp_avg_sq.emb:32x16:abs exp_avg_sq.w:32x16:abs tokens:8x32:i64:32 labels:8x32:i64:32 lr:scalar:abs step:scalar:abs
// RUN: titan-eval %s --entry=fsdp --ranks=1 --inputs=%t --outputs=%t/ref
// RUN: titan-opt %s --titan-propagate-placements --titan-materialize-redistributes --titan-spmdize --titan-redistribute-to-collectives -o %t/spmd.mlir
// RUN: titan-eval %t/spmd.mlir --entry=fsdp --ranks=2 --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/spmdize_numerics.py compare %t/ref %t/out
// RUN: FileCheck %s < %t/spmd.mlir

// One all-gather per parameter, one reduce-scatter per gradient, the loss and
// the label count all-reduced.
// CHECK-LABEL: func.func @fsdp
// CHECK-COUNT-2: titan.all_gather
// CHECK-NOT: titan.all_gather
// CHECK-COUNT-2: titan.reduce_scatter
// CHECK-NOT: titan.all_gather
// CHECK-NOT: titan.reduce_scatter
// CHECK: return

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
