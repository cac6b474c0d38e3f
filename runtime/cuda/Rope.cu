//===- Rope.cu - rotary position embedding, forward and backward ----------===//
//
// One thread per rotated pair (elementwiseLaunch, grid-stride): pair j of
// head h at position s of batch entry b is, in x [batch, seq, heads,
// headDim] with H = headDim / 2, the elements (2j, 2j + 1) of the head
// (interleaved) or (j, j + H) (half), as lib/Codegen/TitanToLinalg/Rope.cpp
// lowers titan.rope for the CPU. The backward is the same rotation by the
// opposite angle (the rotation's transpose). Each thread reads its pair
// before writing it, so the output may be the input.
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// One rotated pair per thread; `sinSign` -1 rotates backwards.
template <typename T, typename W>
__global__ void ropeKernel(const T *x, const W *cosTable, const W *sinTable,
                           T *out, int64_t pairs, int64_t seq, int64_t heads,
                           int64_t half, bool interleaved, float sinSign) {
  for (int64_t pair = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       pair < pairs; pair += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = pair % half;
    const int64_t head = pair / half; // (b * seq + s) * heads + h
    const int64_t position = head / heads % seq;
    const int64_t first = head * 2 * half + (interleaved ? 2 * j : j);
    const int64_t second = first + (interleaved ? 1 : half);
    const float c = toFloat(cosTable[position * half + j]);
    const float s = sinSign * toFloat(sinTable[position * half + j]);
    const float a = toFloat(x[first]), b = toFloat(x[second]);
    out[first] = fromFloat<T>(a * c - b * s);
    out[second] = fromFloat<T>(a * s + b * c);
  }
}

Status rope(const char *op, cudaStream_t stream, int32_t dtype,
            int32_t tableDtype, const void *x, const void *cos, const void *sin,
            void *out, int64_t batch, int64_t seq, int64_t heads,
            int64_t headDim, RopeStyle style, float sinSign) {
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "table dtype", tableDtype));
  TITANRT_RETURN_IF_ERROR(checkExtents(op, {{"batch", batch},
                                            {"seq", seq},
                                            {"heads", heads},
                                            {"head_dim", headDim}}));
  if (headDim % 2 != 0)
    return Status::invalidArgument(std::string(op) + ": head_dim = " +
                                   std::to_string(headDim) + " is odd");
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(checkProduct(
      op,
      {{"batch", batch}, {"seq", seq}, {"heads", heads}, {"head_dim", headDim}},
      elements));
  TITANRT_RETURN_IF_ERROR(checkPointers(
      op, elements, {{"input", x}, {"cos", cos}, {"sin", sin}, {"out", out}}));
  if (elements == 0)
    return Status::success();
  const int64_t pairs = elements / 2;
  LaunchConfig config = elementwiseLaunch(pairs);
  return withFloatType(dtype, [&](auto t) {
    return withFloatType(tableDtype, [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      return launchKernel(
          op, config, stream, ropeKernel<T, W>, static_cast<const T *>(x),
          static_cast<const W *>(cos), static_cast<const W *>(sin),
          static_cast<T *>(out), pairs, seq, heads, headDim / 2,
          style == RopeStyle::Interleaved, sinSign);
    });
  });
}

} // namespace

Status cuda::ropeForward(cudaStream_t stream, int32_t dtype, int32_t tableDtype,
                         const void *x, const void *cos, const void *sin,
                         void *out, int64_t batch, int64_t seq, int64_t heads,
                         int64_t headDim, RopeStyle style) {
  return rope("rope (CUDA)", stream, dtype, tableDtype, x, cos, sin, out, batch,
              seq, heads, headDim, style, 1.0f);
}

Status cuda::ropeBackward(cudaStream_t stream, int32_t dtype,
                          int32_t tableDtype, const void *dout, const void *cos,
                          const void *sin, void *dx, int64_t batch, int64_t seq,
                          int64_t heads, int64_t headDim, RopeStyle style) {
  return rope("rope_grad (CUDA)", stream, dtype, tableDtype, dout, cos, sin, dx,
              batch, seq, heads, headDim, style, -1.0f);
}
