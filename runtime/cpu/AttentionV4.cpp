//===- AttentionV4.cpp - the attention kernels for x86-64-v4 --------------===//
//
// AttentionKernels.inc compiled with -march=x86-64-v4 (CMakeLists.txt):
// 16-lane vectors, one AVX-512 register each. x86-64 only.
//
//===----------------------------------------------------------------------===//

#define TITAN_ATTENTION_KERNELS attentionKernelsV4
#include "cpu/AttentionKernels.inc"
