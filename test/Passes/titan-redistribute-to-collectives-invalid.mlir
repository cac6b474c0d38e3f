// RUN: titan-opt %s --split-input-file --titan-redistribute-to-collectives -verify-diagnostics

titan.mesh @mesh ["dp"=2]

func.func @integer_partial(%x: tensor<4xi64>) -> tensor<2xi64> {
  // expected-error @+1 {{cannot reduce-scatter a partial 'tensor<4xi64>': titan.reduce_scatter takes floating-point tensors}}
  %0 = titan.local_redistribute %x of tensor<4xi64> from <@mesh, [P(sum)]> to <@mesh, [S(0)]> : tensor<4xi64> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
