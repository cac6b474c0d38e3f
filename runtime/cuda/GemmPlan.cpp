//===- GemmPlan.cpp - titan's row-major GEMMs as cuBLASLt sees them -------===//

#include "cuda/GemmPlan.h"

#include <algorithm>
#include <climits>
#include <string>
#include <tuple>

using namespace titan::rt;
using namespace titan::rt::cuda;

bool cuda::hasBias(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::Bias || epilogue == GemmEpilogue::ReluBias ||
         epilogue == GemmEpilogue::GeluBias;
}

Status cuda::checkGemmProblem(const char *op, const GemmProblem &problem) {
  using Extent = std::pair<const char *, int64_t>;
  for (auto [name, value] :
       {Extent{"batch", problem.batch}, Extent{"m", problem.m},
        Extent{"n", problem.n}, Extent{"k", problem.k}})
    if (value < 0)
      return Status::invalidArgument(std::string(op) + ": " + name + " = " +
                                     std::to_string(value) + " is negative");
  if (problem.batch > INT_MAX)
    return Status::unsupported(std::string(op) +
                               ": batch = " + std::to_string(problem.batch) +
                               " exceeds cuBLASLt's 32-bit batch count; "
                               "split the call");
  // Every operand's element count, with the batch, must fit int64.
  int64_t elements;
  for (auto [name, rows, cols] : {std::tuple{"a", problem.m, problem.k},
                                  std::tuple{"b", problem.k, problem.n},
                                  std::tuple{"c", problem.m, problem.n}})
    if (__builtin_mul_overflow(rows, cols, &elements) ||
        __builtin_mul_overflow(elements, problem.batch, &elements))
      return Status::invalidArgument(std::string(op) + ": " + name +
                                     " has more than 2^63 elements");
  return Status::success();
}

GemmPlan cuda::planGemm(const GemmProblem &problem) {
  const int64_t m = problem.m, n = problem.n, k = problem.k;
  GemmPlan plan;
  plan.foldedBatch =
      problem.bShared && !problem.transposeA && problem.batch > 1;
  int64_t rowsOfA = plan.foldedBatch ? problem.batch * m : m;
  plan.batch = plan.foldedBatch ? 1 : problem.batch;
  plan.m = n;
  plan.n = rowsOfA;
  plan.k = k;

  // A' is titan's B: row-major k x n is column-major n x k (B^T, as wanted);
  // row-major n x k (transposed B) is column-major k x n, transposed back.
  plan.transposeA = problem.transposeB;
  plan.a.rows = problem.transposeB ? k : n;
  plan.a.cols = problem.transposeB ? n : k;
  plan.a.ld = std::max<int64_t>(plan.a.rows, 1);
  plan.a.batchStride = problem.bShared ? 0 : k * n;

  // B' is titan's A: row-major m x k is column-major k x m (A^T); row-major
  // k x m (transposed A) is column-major m x k, transposed back.
  plan.transposeB = problem.transposeA;
  plan.b.rows = problem.transposeA ? rowsOfA : k;
  plan.b.cols = problem.transposeA ? k : rowsOfA;
  plan.b.ld = std::max<int64_t>(plan.b.rows, 1);
  plan.b.batchStride = plan.foldedBatch ? 0 : m * k;

  // D is titan's C: row-major m x n is column-major n x m.
  plan.d.rows = n;
  plan.d.cols = rowsOfA;
  plan.d.ld = std::max<int64_t>(n, 1);
  plan.d.batchStride = plan.foldedBatch ? 0 : m * n;
  return plan;
}
