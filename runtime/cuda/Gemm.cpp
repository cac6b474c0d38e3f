//===- Gemm.cpp - GEMMs through cuBLASLt ----------------------------------===//

#include "cuda/Gemm.h"
#include "cuda/CudaStatus.h"

#include <string>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// The cuBLASLt descriptors of one call, destroyed with it.
struct Descriptors {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;

  Descriptors() = default;
  Descriptors(const Descriptors &) = delete;
  Descriptors &operator=(const Descriptors &) = delete;
  ~Descriptors() {
    if (preference)
      cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : {a, b, d})
      if (layout)
        cublasLtMatrixLayoutDestroy(layout);
    if (operation)
      cublasLtMatmulDescDestroy(operation);
  }
};

cudaDataType_t dataType(int32_t dtype) {
  return dtype == TITANRT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

cublasLtEpilogue_t epilogueOf(GemmEpilogue epilogue) {
  switch (epilogue) {
  case GemmEpilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case GemmEpilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case GemmEpilogue::Relu:
    return CUBLASLT_EPILOGUE_RELU;
  case GemmEpilogue::ReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case GemmEpilogue::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case GemmEpilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// The largest power of two up to 256 that divides the address of every
/// batch entry of a matrix at `pointer` (cuBLASLt's alignment preference).
uint32_t alignmentOf(const void *pointer, int64_t batchStride,
                     int64_t elementBytes) {
  uint64_t address = reinterpret_cast<uintptr_t>(pointer);
  uint64_t stride = uint64_t(batchStride * elementBytes);
  uint32_t alignment = 256;
  while (alignment > 1 && (address % alignment || stride % alignment))
    alignment /= 2;
  return alignment;
}

template <typename T>
Status setAttribute(cublasLtMatmulDesc_t operation,
                    cublasLtMatmulDescAttributes_t attribute, const T &value) {
  return checkCublas(
      cublasLtMatmulDescSetAttribute(operation, attribute, &value, sizeof(T)),
      "cublasLtMatmulDescSetAttribute");
}

template <typename T>
Status setPreference(cublasLtMatmulPreference_t preference,
                     cublasLtMatmulPreferenceAttributes_t attribute,
                     const T &value) {
  return checkCublas(cublasLtMatmulPreferenceSetAttribute(preference, attribute,
                                                          &value, sizeof(T)),
                     "cublasLtMatmulPreferenceSetAttribute");
}

Status createLayout(cublasLtMatrixLayout_t &layout, int32_t dtype,
                    const MatrixLayout &matrix, int64_t batch) {
  TITANRT_RETURN_IF_ERROR(
      checkCublas(cublasLtMatrixLayoutCreate(&layout, dataType(dtype),
                                             uint64_t(matrix.rows),
                                             uint64_t(matrix.cols), matrix.ld),
                  "cublasLtMatrixLayoutCreate"));
  if (batch == 1)
    return Status::success();
  int32_t count = int32_t(batch);
  int64_t stride = matrix.batchStride;
  TITANRT_RETURN_IF_ERROR(checkCublas(
      cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
      "cublasLtMatrixLayoutSetAttribute", "batch count"));
  return checkCublas(cublasLtMatrixLayoutSetAttribute(
                         layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                         &stride, sizeof(stride)),
                     "cublasLtMatrixLayoutSetAttribute", "batch stride");
}

Status checkArgs(const char *op, const GemmArgs &args, int32_t outputDtype) {
  if (args.dtype != TITANRT_F32 && args.dtype != TITANRT_BF16)
    return Status::unsupported(std::string(op) + ": dtype " +
                               dtypeName(args.dtype) +
                               " is not supported by the CUDA backend's "
                               "GEMMs (f32, bf16)");
  if (outputDtype != args.dtype &&
      !(args.dtype == TITANRT_BF16 && outputDtype == TITANRT_F32))
    return Status::unsupported(std::string(op) + ": a " +
                               dtypeName(args.dtype) + " GEMM cannot write " +
                               dtypeName(outputDtype) +
                               " (bf16 may write f32)");
  TITANRT_RETURN_IF_ERROR(checkGemmProblem(op, args.problem));
  const GemmProblem &p = args.problem;
  bool empty = p.batch == 0 || p.m == 0 || p.n == 0;
  if (!empty && (!args.c || (p.k > 0 && (!args.a || !args.b))))
    return Status::invalidArgument(std::string(op) +
                                   ": a, b and c must not be null");
  if (!empty && hasBias(args.epilogue) && !args.bias)
    return Status::invalidArgument(std::string(op) +
                                   ": the bias epilogue needs a bias");
  return checkAddend(op, args.addend, args.c,
                     p.batch * p.m * p.n * int64_t(dtypeSize(outputDtype)));
}

} // namespace

GemmEngine::~GemmEngine() {
  if (handle)
    cublasLtDestroy(handle);
}

Status GemmEngine::create(std::unique_ptr<GemmEngine> &engine,
                          int64_t workspaceBytes) {
  std::unique_ptr<GemmEngine> created(new GemmEngine());
  TITANRT_RETURN_IF_ERROR(
      checkCublas(cublasLtCreate(&created->handle), "cublasLtCreate"));
  TITANRT_RETURN_IF_ERROR(
      created->workspace.allocate(workspaceBytes, "the GEMM workspace"));
  engine = std::move(created);
  return Status::success();
}

Status GemmEngine::runPlan(cudaStream_t stream, const GemmArgs &args,
                           const GemmPlan &plan, const void *first,
                           const void *second, const void *input,
                           void *output) {
  const int32_t outputDtype =
      args.outputDtype < 0 ? args.dtype : args.outputDtype;
  const int64_t inBytes = int64_t(dtypeSize(args.dtype));
  const int64_t outBytes = int64_t(dtypeSize(outputDtype));
  cublasComputeType_t compute = args.allowTf32 && args.dtype == TITANRT_F32
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  cublasOperation_t opA = plan.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = plan.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint32_t epilogue = epilogueOf(args.epilogue);

  Descriptors descriptors;
  TITANRT_RETURN_IF_ERROR(checkCublas(
      cublasLtMatmulDescCreate(&descriptors.operation, compute, CUDA_R_32F),
      "cublasLtMatmulDescCreate"));
  cublasLtMatmulDesc_t operation = descriptors.operation;
  TITANRT_RETURN_IF_ERROR(
      setAttribute(operation, CUBLASLT_MATMUL_DESC_TRANSA, opA));
  TITANRT_RETURN_IF_ERROR(
      setAttribute(operation, CUBLASLT_MATMUL_DESC_TRANSB, opB));
  TITANRT_RETURN_IF_ERROR(
      setAttribute(operation, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue));
  if (hasBias(args.epilogue)) {
    int32_t biasType = dataType(outputDtype);
    TITANRT_RETURN_IF_ERROR(
        setAttribute(operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, biasType));
    TITANRT_RETURN_IF_ERROR(
        setAttribute(operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias));
  }
  TITANRT_RETURN_IF_ERROR(
      createLayout(descriptors.a, args.dtype, plan.a, plan.batch));
  TITANRT_RETURN_IF_ERROR(
      createLayout(descriptors.b, args.dtype, plan.b, plan.batch));
  TITANRT_RETURN_IF_ERROR(
      createLayout(descriptors.d, outputDtype, plan.d, plan.batch));

  uint32_t alignA = alignmentOf(first, plan.a.batchStride, inBytes);
  uint32_t alignB = alignmentOf(second, plan.b.batchStride, inBytes);
  uint32_t alignC = alignmentOf(input, plan.d.batchStride, outBytes);
  uint32_t alignD = alignmentOf(output, plan.d.batchStride, outBytes);
  std::vector<int64_t> key = {plan.m,     plan.n,          plan.k,
                              plan.batch, plan.transposeA, plan.transposeB};
  for (const MatrixLayout *layout : {&plan.a, &plan.b, &plan.d})
    key.insert(key.end(),
               {layout->rows, layout->cols, layout->ld, layout->batchStride});
  key.insert(key.end(), {args.dtype, outputDtype, int64_t(epilogue),
                         int64_t(compute), alignA, alignB, alignC, alignD});
  auto found = algorithms.find(key);
  if (found == algorithms.end()) {
    TITANRT_RETURN_IF_ERROR(
        checkCublas(cublasLtMatmulPreferenceCreate(&descriptors.preference),
                    "cublasLtMatmulPreferenceCreate"));
    cublasLtMatmulPreference_t preference = descriptors.preference;
    uint64_t workspaceBytes = uint64_t(workspace.getBytes());
    TITANRT_RETURN_IF_ERROR(setPreference(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspaceBytes));
    TITANRT_RETURN_IF_ERROR(setPreference(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignA));
    TITANRT_RETURN_IF_ERROR(setPreference(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignB));
    TITANRT_RETURN_IF_ERROR(setPreference(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignC));
    TITANRT_RETURN_IF_ERROR(setPreference(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignD));
    cublasLtMatmulHeuristicResult_t result = {};
    int returned = 0;
    TITANRT_RETURN_IF_ERROR(checkCublas(
        cublasLtMatmulAlgoGetHeuristic(
            handle, operation, descriptors.a, descriptors.b, descriptors.d,
            descriptors.d, preference, 1, &result, &returned),
        "cublasLtMatmulAlgoGetHeuristic"));
    if (returned == 0)
      return checkCublas(
          CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmulAlgoGetHeuristic",
          "no algorithm for " + std::to_string(plan.m) + "x" +
              std::to_string(plan.n) + "x" + std::to_string(plan.k) +
              ", batch " + std::to_string(plan.batch));
    found = algorithms.emplace(key, result.algo).first;
  }
  return checkCublas(
      cublasLtMatmul(handle, operation, &args.alpha, first, descriptors.a,
                     second, descriptors.b, &args.beta, input, descriptors.d,
                     output, descriptors.d, &found->second, workspace.get(),
                     size_t(workspace.getBytes()), stream),
      "cublasLtMatmul");
}

Status GemmEngine::run(cudaStream_t stream, const GemmArgs &args) {
  const char *op = "matmul (cuBLASLt)";
  const int32_t outputDtype =
      args.outputDtype < 0 ? args.dtype : args.outputDtype;
  TITANRT_RETURN_IF_ERROR(checkArgs(op, args, outputDtype));
  const GemmProblem &p = args.problem;
  if (p.batch == 0 || p.m == 0 || p.n == 0)
    return Status::success();
  const void *input = args.addend ? args.addend : args.c;
  if (p.k == 0) {
    if ((args.beta != 0.0f && args.beta != 1.0f) ||
        args.epilogue != GemmEpilogue::None)
      return Status::unsupported(std::string(op) +
                                 ": k = 0 with beta other than 0 or 1, or "
                                 "with an epilogue");
    size_t bytes = size_t(p.batch * p.m * p.n) * dtypeSize(outputDtype);
    if (args.beta == 0.0f)
      return checkCuda(cudaMemsetAsync(args.c, 0, bytes, stream),
                       "cudaMemsetAsync", "matmul with k = 0");
    if (input == args.c)
      return Status::success();
    return checkCuda(
        cudaMemcpyAsync(args.c, input, bytes, cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync", "matmul's addend with k = 0");
  }
  // cuBLASLt's A' is titan's B and its B' titan's A (GemmPlan.h).
  GemmPlan plan = planGemm(p);
  Status status = runPlan(stream, args, plan, args.b, args.a, input, args.c);
  if (status.getCode() != TITANRT_ERROR_UNSUPPORTED || plan.batch == 1 ||
      plan.a.batchStride != 0)
    return status;
  // A shared B under a transposed A is a batch stride of 0; should no
  // algorithm take it, run the batch entries one by one.
  GemmPlan single = plan;
  single.batch = 1;
  const int64_t inBytes = int64_t(dtypeSize(args.dtype));
  const int64_t outBytes = int64_t(dtypeSize(outputDtype));
  for (int64_t entry = 0; entry < plan.batch; ++entry) {
    int64_t outOffset = entry * plan.d.batchStride * outBytes;
    TITANRT_RETURN_IF_ERROR(
        runPlan(stream, args, single, args.b,
                static_cast<const char *>(args.a) +
                    entry * plan.b.batchStride * inBytes,
                static_cast<const char *>(input) + outOffset,
                static_cast<char *>(args.c) + outOffset));
  }
  return Status::success();
}

Status GemmEngine::matmul(cudaStream_t stream, int32_t dtype, const void *a,
                          const void *b, const void *addend, void *c,
                          int64_t batch, int64_t m, int64_t n, int64_t k,
                          bool transposeA, bool transposeB, bool bShared) {
  GemmArgs args;
  args.dtype = dtype;
  args.a = a;
  args.b = b;
  args.c = c;
  args.addend = addend;
  args.beta = addend ? 1.0f : 0.0f;
  args.problem = {batch, m, n, k, transposeA, transposeB, bShared};
  return run(stream, args);
}
