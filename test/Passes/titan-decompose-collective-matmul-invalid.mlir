// RUN: titan-opt %s --titan-decompose-collective-matmul=axis=tensor -verify-diagnostics
// RUN: not titan-opt %s --titan-decompose-collective-matmul=device=h100 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not titan-opt %s --titan-decompose-collective-matmul=max-chunks=0 2>&1 | FileCheck %s --check-prefix=CHUNKS

// An axis the mesh does not have names the mesh's axes.
// expected-error @+1 {{titan-decompose-collective-matmul: axis 'tensor' is not an axis of mesh @mesh (fsdp, tp)}}
titan.mesh @mesh ["fsdp"=2, "tp"=2]
func.func @train_step(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  return %x : tensor<2x8xf32>
}

// An unknown device names the bundled ones.
// DEVICE: error: titan-decompose-collective-matmul: device 'h100': device 'h100' is neither a bundled device ({{.*}}h100-sxm{{.*}}) (did you mean 'h100-sxm'?) nor a readable device file

// CHUNKS: error: titan-decompose-collective-matmul: max-chunks = 0 must be at least 1
