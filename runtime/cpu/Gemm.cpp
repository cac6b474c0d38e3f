//===- Gemm.cpp - titanrt_matmul on OpenBLAS ------------------------------===//
//
// Row-major GEMMs through cblas_sgemm / cblas_dgemm (bf16 and f16 on
// float32 copies: Debian's OpenBLAS has no cblas_sbgemm). The pool's threads
// are the only compute threads: OpenBLAS is set to run single-threaded, and
// each matmul is cut into tasks (a batch entry times a panel of C's rows or
// columns) that the pool's threads run, one single-threaded GEMM each.
// OpenBLAS's own threads would otherwise keep spinning after each GEMM while
// the pool's workers run the next kernel, and two thread sets on the same
// cores oversubscribe them. With a shared B and no transpose of A, the batch
// is folded into M (one GEMM over batch * m rows). On CPUs Debian's OpenBLAS
// does not know, its AVX-512 or AVX2 kernels are chosen instead of the SSE3
// fallback (selectBlasKernels).
//
//===----------------------------------------------------------------------===//

#include "cpu/Arguments.h"
#include "cpu/CpuKernels.h"
#include "cpu/Widen.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string_view>

using namespace titan::rt;
using namespace titan::rt::cpu;

namespace {

/// Rows or columns of C per panel are a multiple of this (whole register
/// tiles of OpenBLAS's kernels).
constexpr int64_t kPanelAlign = 16;

/// The least work a thread is given, in floating-point operations (about 50
/// us): a smaller GEMM is not split, smaller batch entries are grouped, since
/// waking a thread costs about as much.
constexpr int64_t kMinTaskFlops = int64_t(1) << 22;

/// The least bytes of an addend a thread copies into C.
constexpr int64_t kMinCopyBytes = int64_t(1) << 20;

} // namespace

// OpenBLAS's DYNAMIC_ARCH entry points (exported by Debian's build, not in
// its headers): the core it chose, and choosing again.
extern "C" char *openblas_get_corename(void);
extern "C" void gotoblas_dynamic_init(void);
extern "C" void gotoblas_dynamic_quit(void);

namespace {

/// Debian's OpenBLAS (0.3.21) does not recognize CPUs newer than it and
/// falls back to its SSE3 kernels ("Prescott"), 5x slower than the AVX-512
/// or AVX2 ones on those CPUs. Unless the user chose with
/// OPENBLAS_CORETYPE, choose again for what this CPU supports.
void selectBlasKernels() {
  const char *core = openblas_get_corename();
  if (std::getenv("OPENBLAS_CORETYPE") || !core ||
      std::string_view(core) != "Prescott")
    return;
  const char *better = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : nullptr;
  if (!better)
    return;
  setenv("OPENBLAS_CORETYPE", better, /*overwrite=*/0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
}

/// Makes OpenBLAS single-threaded with the best kernels for this CPU, once
/// per process.
void useSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] {
    selectBlasKernels();
    openblas_set_num_threads(1);
  });
}

/// One row-major GEMM C = op(A) op(B) + beta C, C m x n.
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
          float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
              ldb, beta, c, ldc);
}

/// One row-major GEMM C = op(A) op(B) + beta C, C m x n.
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const double *a, int64_t lda, const double *b, int64_t ldb,
          double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b,
              ldb, beta, c, ldc);
}

/// The batched GEMM of titanrt_matmul on checked arguments, k > 0: C =
/// op(A) op(B), plus C's values when `accumulate`.
template <typename T>
void runMatmul(ThreadPool &pool, const T *a, const T *b, T *c, int64_t batch,
               int64_t m, int64_t n, int64_t k, bool transposeA,
               bool transposeB, bool bShared, bool accumulate) {
  const T beta = accumulate ? T(1) : T(0);
  int64_t strideA = m * k, strideB = bShared ? 0 : k * n, strideC = m * n;
  if (bShared && !transposeA && batch * m <= INT_MAX) {
    m *= batch;
    batch = 1;
  }
  int64_t lda = transposeA ? m : k, ldb = transposeB ? k : n;
  // Split the larger of C's dimensions into panels: with the batch entries,
  // a multiple of the thread count of tasks (so that they take equal
  // turns), but no panel under kMinTaskFlops; small entries are grouped
  // into chunks of at least kMinTaskFlops.
  bool splitRows = m >= n;
  int64_t extent = splitRows ? m : n;
  int64_t threads = pool.getNumThreads();
  int64_t panels = std::min(threads / std::gcd(batch, threads),
                            (extent + kPanelAlign - 1) / kPanelAlign);
  double entryFlops = 2.0 * double(m) * double(n) * double(k);
  while (panels > 1 && entryFlops / double(panels) < kMinTaskFlops)
    --panels;
  int64_t panelSize = (extent + panels - 1) / panels;
  panelSize = (panelSize + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
  panels = (extent + panelSize - 1) / panelSize;

  double taskFlops = entryFlops / double(panels);
  int64_t grain = int64_t(std::ceil(kMinTaskFlops / taskFlops));

  useSingleThreadedBlas();
  pool.parallelFor(batch * panels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t entry = task / panels;
      int64_t start = task % panels * panelSize;
      int64_t size = std::min(panelSize, extent - start);
      const T *entryA = a + entry * strideA, *entryB = b + entry * strideB;
      T *entryC = c + entry * strideC;
      if (splitRows)
        gemm(transposeA, transposeB, size, n, k,
             entryA + (transposeA ? start : start * k), lda, entryB, ldb, beta,
             entryC + start * n, n);
      else
        gemm(transposeA, transposeB, m, size, k, entryA, lda,
             entryB + (transposeB ? start * k : start), ldb, beta,
             entryC + start, n);
    }
  });
}

} // namespace

Status cpu::matmul(ThreadPool &pool, int32_t dtype, const void *a,
                   const void *b, const void *addend, void *c, int64_t batch,
                   int64_t m, int64_t n, int64_t k, bool transposeA,
                   bool transposeB, bool bShared) {
  const char *op = "matmul";
  TITANRT_RETURN_IF_ERROR(checkFloatDtype(op, dtype, /*allowF64=*/true));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "batch", batch));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "m", m));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "n", n));
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "k", k));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "a", a, {batch, m, k}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "b", b, {bShared ? 1 : batch, k, n}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "c", c, {batch, m, n}));
  using Dim = std::pair<const char *, int64_t>;
  for (auto [name, value] : {Dim{"m", m}, Dim{"n", n}, Dim{"k", k}})
    if (value > INT_MAX)
      return Status::unsupported(std::string(op) + ": " + name + " = " +
                                 std::to_string(value) +
                                 " exceeds OpenBLAS's 32-bit dimensions");
  size_t bytes = dtypeSize(dtype);
  const int64_t count = batch * m * n;
  TITANRT_RETURN_IF_ERROR(checkAddend(op, addend, c, count * int64_t(bytes)));
  const char *addendBytes = static_cast<const char *>(addend);
  if (count == 0)
    return Status::success();

  if (isNarrowFloat(dtype)) {
    std::vector<float> wideC =
        addend ? widen(pool, dtype, addend, count) : std::vector<float>(count);
    if (k > 0) {
      std::vector<float> wideA = widen(pool, dtype, a, batch * m * k);
      std::vector<float> wideB =
          widen(pool, dtype, b, (bShared ? 1 : batch) * k * n);
      runMatmul(pool, wideA.data(), wideB.data(), wideC.data(), batch, m, n, k,
                transposeA, transposeB, bShared, addend != nullptr);
    }
    narrow(pool, dtype, wideC, c);
    return Status::success();
  }
  // C starts as the addend (or, for k = 0, zeros) and the GEMM adds to it.
  if (addend && addend != c)
    pool.parallelFor(count * bytes, kMinCopyBytes,
                     [&](int64_t begin, int64_t end) {
                       std::memcpy(static_cast<char *>(c) + begin,
                                   addendBytes + begin, end - begin);
                     });
  else if (!addend && k == 0)
    std::fill_n(static_cast<char *>(c), count * bytes, 0);
  if (k == 0)
    return Status::success();
  if (dtype == TITANRT_F32)
    runMatmul(pool, static_cast<const float *>(a),
              static_cast<const float *>(b), static_cast<float *>(c), batch, m,
              n, k, transposeA, transposeB, bShared, addend != nullptr);
  else
    runMatmul(pool, static_cast<const double *>(a),
              static_cast<const double *>(b), static_cast<double *>(c), batch,
              m, n, k, transposeA, transposeB, bShared, addend != nullptr);
  return Status::success();
}
