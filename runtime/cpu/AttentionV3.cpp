//===- AttentionV3.cpp - the attention kernels for x86-64-v3 --------------===//
//
// AttentionKernels.inc compiled with -march=x86-64-v3 (CMakeLists.txt):
// 8-lane vectors, one AVX2 register each. On other architectures, for the
// compiler's default target.
//
//===----------------------------------------------------------------------===//

#define TITAN_ATTENTION_KERNELS attentionKernelsV3
#include "cpu/AttentionKernels.inc"
