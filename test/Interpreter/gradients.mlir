// The backward-only ops against torch autograd of the forward ops: GELU
// (both forms), RMSNorm (also with an addend, here dy itself), LayerNorm, embedding (repeated ids), causal GQA and
// scaled attention (from the forward's output and log-sum-exp),
// cross-entropy with ignored labels, and strided padding (the VJP of a
// strided slice).
// RUN: %python %S/Inputs/gradients.py gen gradients %t
// RUN: titan-eval %s --entry=main --inputs=%t --outputs=%t/out
// RUN: %python %S/Inputs/gradients.py check gradients %t

func.func @main(%x: tensor<2x3x8xf32> {titan.name = "x"},
                %w: tensor<8xf32> {titan.name = "w"},
                %dy: tensor<2x3x8xf32> {titan.name = "dy"},
                %ids: tensor<2x3xi64> {titan.name = "ids"},
                %dh: tensor<2x3x4xf32> {titan.name = "dh"},
                %q: tensor<2x4x5x8xf32> {titan.name = "q"},
                %k: tensor<2x2x5x8xf32> {titan.name = "k"},
                %v: tensor<2x2x5x8xf32> {titan.name = "v"},
                %do: tensor<2x4x5x8xf32> {titan.name = "do"},
                %logits: tensor<6x7xf32> {titan.name = "logits"},
                %labels: tensor<6xi64> {titan.name = "labels"},
                %dloss: tensor<f32> {titan.name = "dloss"},
                %s: tensor<2x3xf32> {titan.name = "s"})
    -> (tensor<2x3x8xf32> {titan.name = "gelu_none"},
        tensor<2x3x8xf32> {titan.name = "gelu_tanh"},
        tensor<2x3x8xf32> {titan.name = "rms_dx"},
        tensor<8xf32> {titan.name = "rms_dw"},
        tensor<2x3x8xf32> {titan.name = "ln_dx"},
        tensor<8xf32> {titan.name = "ln_dw"},
        tensor<8xf32> {titan.name = "ln_db"},
        tensor<7x4xf32> {titan.name = "dtable"},
        tensor<2x4x5x8xf32> {titan.name = "dq"},
        tensor<2x2x5x8xf32> {titan.name = "dk"},
        tensor<2x2x5x8xf32> {titan.name = "dv"},
        tensor<2x4x5x8xf32> {titan.name = "dq_s"},
        tensor<2x2x5x8xf32> {titan.name = "dk_s"},
        tensor<2x2x5x8xf32> {titan.name = "dv_s"},
        tensor<6x7xf32> {titan.name = "dlogits"},
        tensor<5x6xf32> {titan.name = "padded"},
        tensor<2x3x8xf32> {titan.name = "rms_dx_plus"}) {
  %g0 = titan.gelu_grad %x, %dy approximate none : tensor<2x3x8xf32>
  %g1 = titan.gelu_grad %x, %dy approximate tanh : tensor<2x3x8xf32>
  %rx, %rw = titan.rms_norm_grad %x, %w, %dy eps 1.0e-5 : tensor<2x3x8xf32>, tensor<8xf32>
  %lx, %lw, %lb = titan.layer_norm_grad %x, %w, %dy eps 1.0e-5 : tensor<2x3x8xf32>, tensor<8xf32>
  %dt = titan.embedding_grad %ids, %dh : tensor<2x3xi64>, tensor<2x3x4xf32> -> tensor<7x4xf32>
  %o, %lse = titan.attention %q, %k, %v causal : tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>
  %dq, %dk, %dv = titan.attention_grad %q, %k, %v, %o, %lse, %do causal : tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>
  %o1, %lse1 = titan.attention %q, %k, %v scale 0.5 : tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>
  %dq1, %dk1, %dv1 = titan.attention_grad %q, %k, %v, %o1, %lse1, %do scale 0.5 : tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>
  %dl = titan.cross_entropy_grad %logits, %labels, %dloss : tensor<6x7xf32>, tensor<6xi64>, tensor<f32>
  %p = titan.pad %s [1, 0] step [2, 2] : tensor<2x3xf32> -> tensor<5x6xf32>
  %rxp, %rwp = titan.rms_norm_grad %x, %w, %dy plus %dy eps 1.0e-5 : tensor<2x3x8xf32>, tensor<8xf32>
  return %g0, %g1, %rx, %rw, %lx, %lw, %lb, %dt, %dq, %dk, %dv, %dq1, %dk1, %dv1, %dl, %p, %rxp
      : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<7x4xf32>, tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<6x7xf32>, tensor<5x6xf32>, tensor<2x3x8xf32>
}
