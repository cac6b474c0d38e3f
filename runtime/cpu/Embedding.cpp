//===- Embedding.cpp - titanrt_embedding_grad, titanrt_check_ids ----------===//
//
// The scatter-add out[ids[i]] += grad[i], parallel over column ranges of the
// table: each thread zeroes and accumulates its columns of every row, in
// the order of the ids. No two threads touch one element, the work is even
// however the ids repeat, and every element is summed in the same order for
// any number of threads (bitwise equal results).
//
//===----------------------------------------------------------------------===//

#include "cpu/Arguments.h"
#include "cpu/CpuKernels.h"
#include "cpu/Widen.h"

#include <algorithm>

using namespace titan::rt;
using namespace titan::rt::cpu;

namespace {

/// The bytes of a cache line: column ranges are multiples of it, so that two
/// threads share a line only where a row's start is not aligned to one.
constexpr int64_t kCacheLine = 64;

/// titanrt_embedding_grad on checked arguments, ids validated.
template <typename T, typename Id>
void scatterAdd(ThreadPool &pool, const Id *ids, const T *grad, T *out,
                int64_t numIds, int64_t vocab, int64_t dim) {
  int64_t lineElements = kCacheLine / int64_t(sizeof(T));
  int64_t threads = pool.getNumThreads();
  int64_t columns = (dim + threads - 1) / threads;
  columns = (columns + lineElements - 1) / lineElements * lineElements;
  pool.parallelFor(dim, columns, [&](int64_t begin, int64_t end) {
    for (int64_t row = 0; row < vocab; ++row)
      std::fill(out + row * dim + begin, out + row * dim + end, T(0));
    for (int64_t i = 0; i < numIds; ++i) {
      T *target = out + int64_t(ids[i]) * dim;
      const T *source = grad + i * dim;
      for (int64_t column = begin; column < end; ++column)
        target[column] += source[column];
    }
  });
}

/// The index of the first of `numIds` ids outside [0, bound), or -1.
template <typename Id>
int64_t firstOutside(const Id *ids, int64_t numIds, int64_t bound) {
  for (int64_t i = 0; i < numIds; ++i)
    if (ids[i] < 0 || ids[i] >= bound)
      return i;
  return -1;
}

/// Checks the ids, then runs the scatter-add for the element type.
template <typename Id>
Status embeddingGradWithIds(ThreadPool &pool, int32_t dtype, const Id *ids,
                            const void *grad, void *out, int64_t numIds,
                            int64_t vocab, int64_t dim) {
  if (int64_t i = firstOutside(ids, numIds, vocab); i >= 0)
    return Status::invalidArgument(
        "embedding_grad: id " + std::to_string(ids[i]) + " at position " +
        std::to_string(i) + " is outside the table's [0, " +
        std::to_string(vocab) +
        "): titan checks the ids of the inputs when it reads them and "
        "those a model computes before its lookups (titan.check_ids), "
        "so a program that gets here skipped a check");
  if (isNarrowFloat(dtype)) {
    std::vector<float> wideGrad = widen(pool, dtype, grad, numIds * dim);
    std::vector<float> wideOut(vocab * dim);
    scatterAdd(pool, ids, wideGrad.data(), wideOut.data(), numIds, vocab, dim);
    narrow(pool, dtype, wideOut, out);
  } else if (dtype == TITANRT_F32)
    scatterAdd(pool, ids, static_cast<const float *>(grad),
               static_cast<float *>(out), numIds, vocab, dim);
  else
    scatterAdd(pool, ids, static_cast<const double *>(grad),
               static_cast<double *>(out), numIds, vocab, dim);
  return Status::success();
}

/// Whether `idsDtype` is one ids may have; an error of `op` otherwise.
Status checkIdsDtype(const char *op, int32_t idsDtype) {
  if (idsDtype != TITANRT_I64 && idsDtype != TITANRT_I32)
    return Status::invalidArgument(std::string(op) + ": ids_dtype " +
                                   dtypeName(idsDtype) +
                                   " is neither i64 nor i32");
  return Status::success();
}

} // namespace

Status cpu::findIdOutside(int32_t idsDtype, const void *ids, int64_t numIds,
                          int64_t bound, int64_t &position, int64_t &id) {
  const char *op = "check_ids";
  TITANRT_RETURN_IF_ERROR(checkIdsDtype(op, idsDtype));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "num_ids", numIds));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "ids", ids, {numIds}));
  if (idsDtype == TITANRT_I64) {
    const auto *wide = static_cast<const int64_t *>(ids);
    position = firstOutside(wide, numIds, bound);
    id = position >= 0 ? wide[position] : 0;
  } else {
    const auto *narrow = static_cast<const int32_t *>(ids);
    position = firstOutside(narrow, numIds, bound);
    id = position >= 0 ? narrow[position] : 0;
  }
  return Status::success();
}

Status cpu::embeddingGrad(ThreadPool &pool, int32_t dtype, int32_t idsDtype,
                          const void *ids, const void *grad, void *out,
                          int64_t numIds, int64_t vocab, int64_t dim) {
  const char *op = "embedding_grad";
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, dtype, /*allowF64=*/true));
  TITANRT_RETURN_IF_ERROR(checkIdsDtype(op, idsDtype));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "num_ids", numIds));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "vocab", vocab));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "dim", dim));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "ids", ids, {numIds}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "grad", grad, {numIds, dim}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "out", out, {vocab, dim}));
  if (idsDtype == TITANRT_I64)
    return embeddingGradWithIds(pool, dtype, static_cast<const int64_t *>(ids),
                                grad, out, numIds, vocab, dim);
  return embeddingGradWithIds(pool, dtype, static_cast<const int32_t *>(ids),
                              grad, out, numIds, vocab, dim);
}
