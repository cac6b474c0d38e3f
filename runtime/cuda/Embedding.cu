//===- Embedding.cu - embedding lookup and its deterministic gradient -----===//
//
// The lookup copies one row per id (rowLaunch over the ids). The gradient
// sums the rows of `grad` whose ids are equal; instead of atomics (whose
// order, and so whose float sums, change from run to run) or a sort, it is
// a stable counting scatter:
//   1. histogram  one thread per position: counts[id] += 1 (integer
//                 atomics: the counts do not depend on their order);
//   2. scan       one block: exclusive prefix sums of the counts give each
//                 id's first slot (offsets) and a copy to advance (cursors);
//   3. scatter    one block, 1024 positions per round in order: a
//                 position's slot is its id's cursor plus the number of
//                 earlier positions of the round with the same id, then
//                 each id's cursor advances by its count in the round;
//                 so each id's positions end up in increasing order;
//   4. reduce     one block per vocabulary row: the sum of its positions'
//                 gradient rows in that order, in f32 (zero for ids that
//                 do not occur).
// The result is bitwise the same on every run. The row kernels (the lookup
// and the reduce) move 8 columns per thread and access where the dimension
// is a multiple of 8 and the tensors 16-byte aligned, one otherwise.
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

#include <climits>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// One looked-up row per block, V columns per thread at a time.
template <int V, typename T>
__global__ void __launch_bounds__(1024)
    embeddingForwardKernel(const T *table, const void *ids, bool ids64, T *out,
                           int64_t vocab, int64_t dim) {
  const int64_t position = blockIdx.x;
  const int64_t id = loadId(ids, position, ids64);
  const bool valid = id >= 0 && id < vocab;
  T *outRow = out + position * dim;
  for (int64_t c = int64_t(threadIdx.x) * V; c < dim;
       c += int64_t(blockDim.x) * V) {
    float values[V] = {};
    if (valid)
      loadFloats<V>(table + id * dim + c, values);
    storeFloats<V>(outRow + c, values);
  }
}

/// `first` = the smallest position whose id lies outside [0, bound) (left
/// as it was, ULLONG_MAX, when none does), grid-stride over the ids.
__global__ void findIdOutsideKernel(const void *ids, bool ids64, int64_t numIds,
                                    int64_t bound, unsigned long long *first) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < numIds;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t id = loadId(ids, i, ids64);
    if (id < 0 || id >= bound)
      atomicMin(first, static_cast<unsigned long long>(i));
  }
}

/// counts[id] += 1 for every id in range, one thread per position.
__global__ void embeddingHistogramKernel(const void *ids, bool ids64,
                                         int64_t numIds, int64_t vocab,
                                         int32_t *counts) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < numIds;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t id = loadId(ids, i, ids64);
    if (id >= 0 && id < vocab)
      atomicAdd(&counts[id], 1);
  }
}

/// Turns counts[0, vocab) into exclusive offsets (and cursors), and sets
/// offsets[vocab] to the total. Each thread scans a contiguous range.
__global__ void __launch_bounds__(1024)
    embeddingScanKernel(int32_t *offsets, int32_t *cursors, int64_t vocab) {
  __shared__ int32_t sums[1024];
  const int64_t perThread = ceilDiv(vocab, blockDim.x);
  const int64_t begin = min(vocab, int64_t(threadIdx.x) * perThread);
  const int64_t end = min(vocab, begin + perThread);
  int32_t local = 0;
  for (int64_t v = begin; v < end; ++v)
    local += offsets[v];
  sums[threadIdx.x] = local;
  __syncthreads();
  // Inclusive scan of the threads' sums (Hillis-Steele).
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    int32_t add = threadIdx.x >= stride ? sums[threadIdx.x - stride] : 0;
    __syncthreads();
    sums[threadIdx.x] += add;
    __syncthreads();
  }
  int32_t running = threadIdx.x > 0 ? sums[threadIdx.x - 1] : 0;
  for (int64_t v = begin; v < end; ++v) {
    const int32_t count = offsets[v];
    offsets[v] = running;
    cursors[v] = running;
    running += count;
  }
  if (threadIdx.x == blockDim.x - 1)
    offsets[vocab] = sums[threadIdx.x];
}

/// One block: the positions in increasing order within each id's slots.
__global__ void __launch_bounds__(1024)
    embeddingScatterKernel(const void *ids, bool ids64, int64_t numIds,
                           int64_t vocab, int32_t *cursors,
                           int32_t *positions) {
  __shared__ int64_t roundIds[1024];
  for (int64_t base = 0; base < numIds; base += blockDim.x) {
    const int64_t position = base + threadIdx.x;
    int64_t id = position < numIds ? loadId(ids, position, ids64) : -1;
    if (id >= vocab)
      id = -1;
    roundIds[threadIdx.x] = id;
    __syncthreads();
    int32_t rank = 0, count = 0;
    if (id >= 0) {
      for (unsigned t = 0; t < blockDim.x; ++t) {
        const bool same = roundIds[t] == id;
        count += same;
        rank += same && t < threadIdx.x;
      }
      positions[cursors[id] + rank] = int32_t(position);
    }
    __syncthreads(); // every cursor of this round has been read
    if (id >= 0 && rank == 0)
      cursors[id] += count;
    __syncthreads(); // the cursors advanced; roundIds may be overwritten
  }
}

/// One vocabulary row per block: the sum of its positions' gradient rows,
/// V columns per thread at a time.
template <int V, typename T>
__global__ void __launch_bounds__(1024)
    embeddingReduceKernel(const T *grad, const int32_t *offsets,
                          const int32_t *positions, T *out, int64_t dim) {
  const int64_t row = blockIdx.x;
  const int32_t begin = offsets[row], end = offsets[row + 1];
  for (int64_t c = int64_t(threadIdx.x) * V; c < dim;
       c += int64_t(blockDim.x) * V) {
    float sum[V] = {};
    for (int32_t slot = begin; slot < end; ++slot) {
      float values[V];
      loadFloats<V>(grad + int64_t(positions[slot]) * dim + c, values);
#pragma unroll
      for (int i = 0; i < V; ++i)
        sum[i] += values[i];
    }
    storeFloats<V>(out + row * dim + c, sum);
  }
}

Status checkEmbedding(const char *op, int32_t dtype, int32_t idsDtype,
                      int64_t numIds, int64_t vocab, int64_t dim) {
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, "dtype", dtype));
  TITANRT_RETURN_IF_ERROR(checkIdsDtype(op, "ids dtype", idsDtype));
  TITANRT_RETURN_IF_ERROR(
      checkExtents(op, {{"num_ids", numIds}, {"vocab", vocab}, {"dim", dim}}));
  int64_t elements;
  TITANRT_RETURN_IF_ERROR(
      checkProduct(op, {{"num_ids", numIds}, {"dim", dim}}, elements));
  return checkProduct(op, {{"vocab", vocab}, {"dim", dim}}, elements);
}

} // namespace

Status cuda::embeddingForward(cudaStream_t stream, int32_t dtype,
                              const void *table, int32_t idsDtype,
                              const void *ids, void *out, int64_t numIds,
                              int64_t vocab, int64_t dim) {
  const char *op = "embedding (CUDA)";
  TITANRT_RETURN_IF_ERROR(
      checkEmbedding(op, dtype, idsDtype, numIds, vocab, dim));
  TITANRT_RETURN_IF_ERROR(checkPointers(
      op, numIds * dim, {{"table", table}, {"ids", ids}, {"out", out}}));
  if (numIds == 0 || dim == 0)
    return Status::success();
  return withRowVector(dim, {table, out}, [&](auto vector) {
    return withFloatType(dtype, [&](auto t) {
      using T = decltype(t);
      return launchKernel(op, rowLaunch(numIds, dim), stream,
                          embeddingForwardKernel<decltype(vector)::value, T>,
                          static_cast<const T *>(table), ids,
                          idsDtype == TITANRT_I64, static_cast<T *>(out), vocab,
                          dim);
    });
  });
}

Status cuda::findIdOutside(cudaStream_t stream, int32_t idsDtype,
                           const void *ids, int64_t numIds, int64_t bound,
                           void *workspace, int64_t &position, int64_t &id) {
  const char *op = "check_ids (CUDA)";
  TITANRT_RETURN_IF_ERROR(checkIdsDtype(op, "ids dtype", idsDtype));
  TITANRT_RETURN_IF_ERROR(checkExtents(op, {{"num_ids", numIds}}));
  TITANRT_RETURN_IF_ERROR(
      checkPointers(op, numIds, {{"ids", ids}, {"workspace", workspace}}));
  position = -1;
  id = 0;
  if (numIds == 0)
    return Status::success();
  auto *first = static_cast<unsigned long long *>(workspace);
  const bool ids64 = idsDtype == TITANRT_I64;
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaMemsetAsync(first, 0xff, sizeof(*first), stream),
                "cudaMemsetAsync", op));
  TITANRT_RETURN_IF_ERROR(launchKernel(op, elementwiseLaunch(numIds), stream,
                                       findIdOutsideKernel, ids, ids64, numIds,
                                       bound, first));
  unsigned long long found = 0;
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpyAsync(&found, first, sizeof(found),
                                cudaMemcpyDeviceToHost, stream),
                "cudaMemcpyAsync", op));
  TITANRT_RETURN_IF_ERROR(
      checkCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", op));
  if (found == ULLONG_MAX)
    return Status::success();
  position = static_cast<int64_t>(found);
  const size_t width = ids64 ? sizeof(int64_t) : sizeof(int32_t);
  int64_t wide = 0;
  int32_t narrow = 0;
  void *value = ids64 ? static_cast<void *>(&wide) : &narrow;
  TITANRT_RETURN_IF_ERROR(checkCuda(
      cudaMemcpy(value, static_cast<const char *>(ids) + position * width,
                 width, cudaMemcpyDeviceToHost),
      "cudaMemcpy", op));
  id = ids64 ? wide : narrow;
  return Status::success();
}

Status cuda::embeddingBackward(cudaStream_t stream, int32_t dtype,
                               int32_t idsDtype, const void *ids,
                               const void *grad, void *out, void *workspace,
                               int64_t numIds, int64_t vocab, int64_t dim) {
  const char *op = "embedding_grad (CUDA)";
  TITANRT_RETURN_IF_ERROR(
      checkEmbedding(op, dtype, idsDtype, numIds, vocab, dim));
  if (numIds > INT_MAX || vocab > INT_MAX)
    return Status::unsupported(std::string(op) +
                               ": num_ids = " + std::to_string(numIds) +
                               " and vocab = " + std::to_string(vocab) +
                               " must be below 2^31; split the call");
  TITANRT_RETURN_IF_ERROR(
      checkPointers(op, vocab * dim, {{"out", out}, {"workspace", workspace}}));
  TITANRT_RETURN_IF_ERROR(
      checkPointers(op, numIds * dim, {{"ids", ids}, {"grad", grad}}));
  if (vocab == 0 || dim == 0)
    return Status::success();
  EmbeddingGradWorkspace layout = embeddingGradWorkspace(vocab);
  int32_t *base = static_cast<int32_t *>(workspace);
  int32_t *offsets = base + layout.offsets, *cursors = base + layout.cursors;
  int32_t *positions = base + layout.positions;
  EmbeddingGradLaunch launch = embeddingGradLaunch(numIds, vocab, dim);
  const bool ids64 = idsDtype == TITANRT_I64;

  TITANRT_RETURN_IF_ERROR(checkCuda(
      cudaMemsetAsync(offsets, 0, size_t(vocab + 1) * sizeof(int32_t), stream),
      "cudaMemsetAsync", op));
  if (numIds > 0)
    TITANRT_RETURN_IF_ERROR(launchKernel(op, launch.histogram, stream,
                                         embeddingHistogramKernel, ids, ids64,
                                         numIds, vocab, offsets));
  TITANRT_RETURN_IF_ERROR(launchKernel(
      op, launch.scan, stream, embeddingScanKernel, offsets, cursors, vocab));
  if (numIds > 0)
    TITANRT_RETURN_IF_ERROR(launchKernel(op, launch.scatter, stream,
                                         embeddingScatterKernel, ids, ids64,
                                         numIds, vocab, cursors, positions));
  return withRowVector(dim, {grad, out}, [&](auto vector) {
    return withFloatType(dtype, [&](auto t) {
      using T = decltype(t);
      return launchKernel(
          op, launch.reduce, stream,
          embeddingReduceKernel<decltype(vector)::value, T>,
          static_cast<const T *>(grad), static_cast<const int32_t *>(offsets),
          static_cast<const int32_t *>(positions), static_cast<T *>(out), dim);
    });
  });
}
