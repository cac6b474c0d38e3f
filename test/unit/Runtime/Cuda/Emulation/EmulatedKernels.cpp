//===- EmulatedKernels.cpp - the CUDA kernels compiled for emulation ------===//
//
// runtime/cuda's kernels other than attention (AttentionEmulationTest.cpp
// includes those), compiled by the host compiler under EmulatedCuda.h for
// CudaEmulationTest: RMSNorm, RoPE, SwiGLU, softmax, cross-entropy,
// embedding, the fused AdamW and the squared norm, with their launchers.
//
//===----------------------------------------------------------------------===//

#include "EmulatedCuda.h"

// The kernels' static shared arrays: one per kernel instance, which the
// threads of the one block running share.
#undef __shared__
#define __shared__ static

#include "AdamW.cu"
#include "CrossEntropy.cu"
#include "Embedding.cu"
#include "RmsNorm.cu"
#include "Rope.cu"
#include "Softmax.cu"
#include "SquaredNorm.cu"
#include "SwiGlu.cu"
