//===- DeviceSupport.cuh - device helpers of the CUDA kernels --*- CUDA -*-===//
//
// Element conversions (bf16 and f32 I/O, f32 math, bf16 pairs in one
// register, 8 elements in 16-byte accesses), the element type of a dtype code,
// warp and block reductions with a fixed order (so that results are bitwise
// reproducible), the (max, sum of exp) pairs of online softmaxes, and ids of
// either integer type.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_DEVICESUPPORT_CUH
#define TITAN_RUNTIME_CUDA_DEVICESUPPORT_CUH

#include "titan/Runtime/titanrt.h"

#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>

namespace titan::rt::cuda {

/// The 16-bit brain float of CUDA (titan's TITANRT_BF16).
using bf16 = __nv_bfloat16;

/// An element's value in f32 (the kernels' math type).
__device__ __forceinline__ float toFloat(float value) { return value; }
__device__ __forceinline__ float toFloat(bf16 value) {
  return __bfloat162float(value);
}

/// `value` in T, rounded to nearest even for bf16.
template <typename T> __device__ __forceinline__ T fromFloat(float value);
template <> __device__ __forceinline__ float fromFloat<float>(float value) {
  return value;
}
template <> __device__ __forceinline__ bf16 fromFloat<bf16>(float value) {
  return __float2bfloat16_rn(value);
}

/// The register of two bf16 values, `low` in the low half (the layout of a
/// tensor-core operand's pair, Mma.cuh).
__device__ __forceinline__ uint32_t packBf16(bf16 low, bf16 high) {
  const __nv_bfloat162 pair = __halves2bfloat162(low, high);
  uint32_t bits;
  memcpy(&bits, &pair, sizeof(bits));
  return bits;
}

/// The register of two floats rounded to bf16 (nearest even).
__device__ __forceinline__ uint32_t packBf16(float low, float high) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
  uint32_t bits;
  memcpy(&bits, &pair, sizeof(bits));
  return bits;
}

/// body(bf16()) for TITANRT_BF16, body(float()) for any other dtype (the
/// launchers check theirs first): a launcher's element type.
/// Loads the `V` consecutive elements at `p` as floats: one element, or
/// (V = 8) with 16-byte accesses, one for bf16 and two for f32, where `p`
/// must be 16-byte aligned. The vectorized row kernels read with V = 8.
template <int V, typename T>
__device__ __forceinline__ void loadFloats(const T *p, float (&out)[V]) {
  if constexpr (V == 1) {
    out[0] = toFloat(*p);
  } else {
    static_assert(V * sizeof(T) % 16 == 0, "whole 16-byte accesses");
    const uint4 *source = reinterpret_cast<const uint4 *>(p);
#pragma unroll
    for (int i = 0; i < int(V * sizeof(T) / 16); ++i) {
      const uint4 raw = source[i];
      const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (sizeof(T) == 4) {
          memcpy(&out[4 * i + j], &words[j], sizeof(float));
        } else {
          // A bf16 is the high half of the f32 with its bits; the element
          // at the lower address is the word's low half.
          const uint32_t low = words[j] << 16, high = words[j] & 0xffff0000u;
          memcpy(&out[8 * i + 2 * j], &low, sizeof(float));
          memcpy(&out[8 * i + 2 * j + 1], &high, sizeof(float));
        }
      }
    }
  }
}

/// Stores `V` floats as consecutive elements of T at `p` (rounded to
/// nearest even for bf16), with 16-byte accesses when V = 8.
template <int V, typename T>
__device__ __forceinline__ void storeFloats(T *p, const float (&in)[V]) {
  if constexpr (V == 1) {
    *p = fromFloat<T>(in[0]);
  } else {
    static_assert(V * sizeof(T) % 16 == 0, "whole 16-byte accesses");
    uint4 *target = reinterpret_cast<uint4 *>(p);
#pragma unroll
    for (int i = 0; i < int(V * sizeof(T) / 16); ++i) {
      uint32_t words[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (sizeof(T) == 4)
          memcpy(&words[j], &in[4 * i + j], sizeof(float));
        else
          words[j] = packBf16(in[8 * i + 2 * j], in[8 * i + 2 * j + 1]);
      }
      target[i] = make_uint4(words[0], words[1], words[2], words[3]);
    }
  }
}

template <typename Body> auto withFloatType(int32_t dtype, Body &&body) {
  if (dtype == TITANRT_BF16)
    return body(bf16());
  return body(float());
}

/// Element `index` of an id buffer of i64 (`ids64`) or i32.
__device__ __forceinline__ int64_t loadId(const void *ids, int64_t index,
                                          bool ids64) {
  return ids64 ? static_cast<const int64_t *>(ids)[index]
               : int64_t(static_cast<const int32_t *>(ids)[index]);
}

/// The sum of `value` over the warp's 32 lanes, returned to every lane (a
/// fixed butterfly order).
__device__ __forceinline__ float warpSum(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

/// The maximum of `value` over the warp's 32 lanes, returned to every lane.
__device__ __forceinline__ float warpMax(float value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

/// The sum of `value` over the block (blockDim.x a multiple of 32, at most
/// 1024), returned to every thread. `scratch` holds 32 floats; the call
/// synchronizes the block, so it can be reused right after.
__device__ __forceinline__ float blockSum(float value, float *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  value = warpSum(value);
  __syncthreads(); // the scratch's previous readers are done
  if (lane == 0)
    scratch[warp] = value;
  __syncthreads();
  value = lane < warps ? scratch[lane] : 0.0f;
  return warpSum(value);
}

/// The maximum of `value` over the block, as blockSum.
__device__ __forceinline__ float blockMax(float value, float *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  value = warpMax(value);
  __syncthreads();
  if (lane == 0)
    scratch[warp] = value;
  __syncthreads();
  value = lane < warps ? scratch[lane] : -INFINITY;
  return warpMax(value);
}

/// An online softmax's running maximum and sum of exp(x - max).
struct MaxSum {
  float max;
  float sum;
};

/// Adds element `x` to `state` (an x of -inf, a masked element, adds
/// nothing).
__device__ __forceinline__ void accumulate(MaxSum &state, float x) {
  if (x > state.max) {
    state.sum = state.sum * __expf(state.max - x) + 1.0f;
    state.max = x;
  } else if (x != -INFINITY) {
    state.sum += __expf(x - state.max);
  }
}

/// The union of two partial states (either may be empty: max = -inf).
__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  float max = fmaxf(a.max, b.max);
  if (max == -INFINITY)
    return {max, 0.0f};
  return {max, a.sum * __expf(a.max - max) + b.sum * __expf(b.max - max)};
}

/// The union of every thread's state over the block, as blockSum
/// (`scratch` holds 64 floats).
__device__ __forceinline__ MaxSum blockCombine(MaxSum state, float *scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    MaxSum other = {__shfl_xor_sync(0xffffffffu, state.max, offset),
                    __shfl_xor_sync(0xffffffffu, state.sum, offset)};
    state = combine(state, other);
  }
  __syncthreads();
  if (lane == 0) {
    scratch[warp] = state.max;
    scratch[32 + warp] = state.sum;
  }
  __syncthreads();
  state = lane < warps ? MaxSum{scratch[lane], scratch[32 + lane]}
                       : MaxSum{-INFINITY, 0.0f};
  for (int offset = 16; offset > 0; offset /= 2) {
    MaxSum other = {__shfl_xor_sync(0xffffffffu, state.max, offset),
                    __shfl_xor_sync(0xffffffffu, state.sum, offset)};
    state = combine(state, other);
  }
  return state;
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_DEVICESUPPORT_CUH
