//===- CudnnAttention.cpp - attention through cuDNN's fused SDPA ----------===//

#include "cuda/CudnnAttention.h"

#include "cuda/Arguments.h"
#include "cuda/CudaStatus.h"
#include "cuda/CudnnGraph.h"

#include <limits>
#include <vector>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// The unique ids of the graphs' tensors that the variant pack binds; the
/// virtual tensors take ids from kFirstVirtual on.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kOut,
  kStats,
  kScale,
  kNegativeInfinity,
  kOne,
  kGradOut,
  kGradQ,
  kGradK,
  kGradV,
  kRowSum,
  kGradQAccumulator,
  kFirstVirtual = 100,
};

/// The shapes of the graphs' tensors.
struct Layout {
  int64_t b, hq, hk, s, d;
  explicit Layout(const AttentionShape &shape)
      : b(shape.batch), hq(shape.qHeads), hk(shape.kvHeads), s(shape.seq),
        d(shape.headDim) {}
  /// [b, heads, s, d] (q, k, v, their gradients, out).
  CudnnShape perHead(int64_t heads) const {
    return {{b, heads, s, d}, {heads * s * d, s * d, d, 1}};
  }
  /// The same seen transposed, [b, heads, d, s] (K^T, V^T).
  CudnnShape perHeadTransposed(int64_t heads) const {
    return {{b, heads, d, s}, {heads * s * d, s * d, 1, d}};
  }
  /// [b, hq, s, s]: a score per query and key.
  CudnnShape scores() const {
    return {{b, hq, s, s}, {hq * s * s, s * s, s, 1}};
  }
  /// The scores seen transposed (P^T, dS^T).
  CudnnShape scoresTransposed() const {
    return {{b, hq, s, s}, {hq * s * s, s * s, 1, s}};
  }
  /// [b, hq, s, 1]: a value per query row (lse, rowsum).
  CudnnShape rows() const { return {{b, hq, s, 1}, {hq * s, s, 1, 1}}; }
};

constexpr cudnnDataType_t kIo = CUDNN_DATA_BFLOAT16, kF32 = CUDNN_DATA_FLOAT;

/// `scores` with -inf where the causal mask hides a key: S (the forward's
/// scaled scores) or S - lse (the backward's).
cudnnBackendDescriptor_t applyCausalMask(CudnnGraphBuilder &graph,
                                         const Layout &l,
                                         cudnnBackendDescriptor_t scores) {
  cudnnBackendDescriptor_t row =
      graph.apply(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, l.scores(),
                  scores, nullptr, kF32, /*axis=*/2);
  cudnnBackendDescriptor_t column =
      graph.apply(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, l.scores(),
                  scores, nullptr, kF32, /*axis=*/3);
  cudnnBackendDescriptor_t visible =
      graph.apply(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, l.scores(), row,
                  column, CUDNN_DATA_BOOLEAN);
  cudnnBackendDescriptor_t masked = graph.intermediate(kF32, l.scores());
  graph.pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores,
                  graph.scalar(kNegativeInfinity), visible, masked);
  return masked;
}

/// The forward: O = softmax(scale Q K^T (+ mask)) V and Stats = each row's
/// natural log-sum-exp.
void buildForward(CudnnGraphBuilder &graph, const Layout &l, bool causal) {
  cudnnBackendDescriptor_t q = graph.tensor(kQ, kIo, l.perHead(l.hq));
  cudnnBackendDescriptor_t kT =
      graph.tensor(kK, kIo, l.perHeadTransposed(l.hk));
  cudnnBackendDescriptor_t v = graph.tensor(kV, kIo, l.perHead(l.hk));
  cudnnBackendDescriptor_t out = graph.tensor(kOut, kIo, l.perHead(l.hq));
  cudnnBackendDescriptor_t stats = graph.tensor(kStats, kF32, l.rows());

  cudnnBackendDescriptor_t scores = graph.product(q, kT, kF32, l.scores());
  cudnnBackendDescriptor_t scaled = graph.apply(
      CUDNN_POINTWISE_MUL, kF32, l.scores(), scores, graph.scalar(kScale));
  if (causal)
    scaled = applyCausalMask(graph, l, scaled);
  cudnnBackendDescriptor_t rowMax =
      graph.reduce(CUDNN_REDUCE_TENSOR_MAX, scaled, kF32, l.rows());
  cudnnBackendDescriptor_t shifted =
      graph.apply(CUDNN_POINTWISE_SUB, kF32, l.scores(), scaled, rowMax);
  cudnnBackendDescriptor_t exponentials =
      graph.apply(CUDNN_POINTWISE_EXP, kF32, l.scores(), shifted);
  cudnnBackendDescriptor_t rowSum =
      graph.reduce(CUDNN_REDUCE_TENSOR_ADD, exponentials, kF32, l.rows());
  cudnnBackendDescriptor_t logSum =
      graph.apply(CUDNN_POINTWISE_LOG, kF32, l.rows(), rowSum);
  graph.pointwise(CUDNN_POINTWISE_ADD, rowMax, logSum, nullptr, stats);
  // The probabilities in bf16, as P V's A operand.
  cudnnBackendDescriptor_t probabilities =
      graph.apply(CUDNN_POINTWISE_DIV, kIo, l.scores(), exponentials, rowSum);
  graph.matmul(probabilities, v, out);
}

/// A gradient of a KV head's tensor from the query heads' products: the
/// product itself when every query head has its own KV head, else the
/// per-query-head products summed over each group.
void groupedProduct(CudnnGraphBuilder &graph, const Layout &l,
                    cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                    cudnnBackendDescriptor_t gradient) {
  if (l.hq == l.hk) {
    graph.matmul(a, b, gradient);
    return;
  }
  graph.reduction(CUDNN_REDUCE_TENSOR_ADD,
                  graph.product(a, b, kIo, l.perHead(l.hq)), gradient);
}

/// The backward from the forward's output and log-sum-exp.
void buildBackward(CudnnGraphBuilder &graph, const Layout &l, bool causal) {
  cudnnBackendDescriptor_t q = graph.tensor(kQ, kIo, l.perHead(l.hq));
  cudnnBackendDescriptor_t kT =
      graph.tensor(kK, kIo, l.perHeadTransposed(l.hk));
  cudnnBackendDescriptor_t vT =
      graph.tensor(kV, kIo, l.perHeadTransposed(l.hk));
  cudnnBackendDescriptor_t out = graph.tensor(kOut, kIo, l.perHead(l.hq));
  cudnnBackendDescriptor_t gradOut =
      graph.tensor(kGradOut, kIo, l.perHead(l.hq));
  cudnnBackendDescriptor_t stats = graph.tensor(kStats, kF32, l.rows());
  cudnnBackendDescriptor_t gradQ = graph.tensor(kGradQ, kIo, l.perHead(l.hq));
  cudnnBackendDescriptor_t gradK = graph.tensor(kGradK, kIo, l.perHead(l.hk));
  cudnnBackendDescriptor_t gradV = graph.tensor(kGradV, kIo, l.perHead(l.hk));
  cudnnBackendDescriptor_t scale = graph.scalar(kScale);

  // rowsum(dO * O): one f32 per query row, in titan's workspace (the
  // product's strides are cudnn-frontend's).
  cudnnBackendDescriptor_t gradTimesOut = graph.apply(
      CUDNN_POINTWISE_MUL, kF32,
      {{l.b, l.hq, l.s, l.d}, {l.hq * l.s * l.d, l.s * l.d, l.hq * l.d, 1}},
      gradOut, out);
  cudnnBackendDescriptor_t rowSumPartial =
      graph.reduce(CUDNN_REDUCE_TENSOR_ADD, gradTimesOut, kF32, l.rows());
  cudnnBackendDescriptor_t rowSum = graph.tensor(kRowSum, kF32, l.rows());
  graph.pointwise(CUDNN_POINTWISE_MUL, rowSumPartial, graph.scalar(kOne),
                  nullptr, rowSum);

  // P = exp(scale Q K^T - lse), masked.
  cudnnBackendDescriptor_t scores = graph.product(q, kT, kF32, l.scores());
  cudnnBackendDescriptor_t scaled =
      graph.apply(CUDNN_POINTWISE_MUL, kF32, l.scores(), scores, scale);
  cudnnBackendDescriptor_t shifted =
      graph.apply(CUDNN_POINTWISE_SUB, kF32, l.scores(), scaled, stats);
  if (causal)
    shifted = applyCausalMask(graph, l, shifted);
  cudnnBackendDescriptor_t probabilities =
      graph.apply(CUDNN_POINTWISE_EXP, kF32, l.scores(), shifted);

  // dV = P^T dO.
  groupedProduct(graph, l, graph.view(probabilities, kIo, l.scoresTransposed()),
                 gradOut, gradV);

  // dS = P (dO V^T - rowsum) scale.
  cudnnBackendDescriptor_t gradP = graph.product(gradOut, vT, kF32, l.scores());
  cudnnBackendDescriptor_t centered =
      graph.apply(CUDNN_POINTWISE_SUB, kF32, l.scores(), gradP, rowSum);
  cudnnBackendDescriptor_t weighted = graph.apply(
      CUDNN_POINTWISE_MUL, kF32, l.scores(), centered, probabilities);
  cudnnBackendDescriptor_t gradScores =
      graph.apply(CUDNN_POINTWISE_MUL, kF32, l.scores(), weighted, scale);

  // dK = dS^T Q.
  groupedProduct(graph, l, graph.view(gradScores, kIo, l.scoresTransposed()), q,
                 gradK);

  // dQ = dS K, accumulated in f32, then rounded.
  cudnnBackendDescriptor_t k = graph.view(kT, kIo, l.perHead(l.hk));
  cudnnBackendDescriptor_t gradQAccumulator =
      graph.tensor(kGradQAccumulator, kF32, l.perHead(l.hq));
  graph.matmul(gradScores, k, gradQAccumulator);
  graph.pointwise(CUDNN_POINTWISE_IDENTITY, gradQAccumulator, nullptr, nullptr,
                  gradQ);
}

/// The ids a pass's variant pack binds.
std::vector<int64_t> boundUids(AttentionPass pass, bool causal) {
  std::vector<int64_t> uids =
      pass == AttentionPass::Forward
          ? std::vector<int64_t>{kQ, kK, kV, kOut, kStats, kScale}
          : std::vector<int64_t>{kQ,
                                 kK,
                                 kV,
                                 kOut,
                                 kGradOut,
                                 kStats,
                                 kScale,
                                 kOne,
                                 kGradQ,
                                 kGradK,
                                 kGradV,
                                 kRowSum,
                                 kGradQAccumulator};
  if (causal)
    uids.push_back(kNegativeInfinity);
  return uids;
}

/// Builds the graph of `pass` for `shape`.
Status buildGraph(CudnnGraphBuilder &builder, AttentionPass pass,
                  const AttentionShape &shape, cudnnHandle_t handle,
                  CudnnDescriptor &graph) {
  const Layout layout(shape);
  if (pass == AttentionPass::Forward)
    buildForward(builder, layout, shape.causal);
  else
    buildBackward(builder, layout, shape.causal);
  return builder.finish(handle, graph);
}

/// Why cuDNN cannot take a call of `shape` whatever its engines: a head
/// dimension its fused attention does not support.
Status checkCudnnShape(const AttentionShape &shape) {
  if (shape.headDim % 8 != 0 || shape.headDim > 128)
    return Status::unsupported(
        "cuDNN's fused attention takes head dimensions that are multiples "
        "of 8 up to 128, not " +
        std::to_string(shape.headDim));
  return Status::success();
}

/// "attention_grad [1 x 16/8 heads x 2048 x 128, causal]".
std::string describe(AttentionPass pass, const AttentionShape &shape) {
  return std::string(pass == AttentionPass::Forward ? "attention"
                                                    : "attention_grad") +
         " [" + std::to_string(shape.batch) + " x " +
         std::to_string(shape.qHeads) + "/" + std::to_string(shape.kvHeads) +
         " heads x " + std::to_string(shape.seq) + " x " +
         std::to_string(shape.headDim) + (shape.causal ? ", causal]" : "]");
}

/// Rounds `bytes` up to 256.
int64_t alignUp(int64_t bytes) { return (bytes + 255) / 256 * 256; }

} // namespace

namespace titan::rt::cuda {

struct CudnnAttentionPlan {
  explicit CudnnAttentionPlan(const CudnnLibrary &library)
      : builder(library, kFirstVirtual) {}

  CudnnGraphBuilder builder;
  CudnnDescriptor graph;
  CudnnDescriptor plan;
  /// cuDNN's workspace, then (the backward) the f32 dQ accumulator.
  int64_t workspaceBytes = 0;
  int64_t accumulatorOffset = 0;
  std::vector<int64_t> uids;
};

} // namespace titan::rt::cuda

Status cuda::planAttentionForDevice(const CudnnLibrary &library,
                                    AttentionPass pass,
                                    const AttentionShape &shape,
                                    const std::string &deviceJson) {
  TITANRT_RETURN_IF_ERROR(checkCudnnShape(shape));
  CudnnDescriptor device;
  TITANRT_RETURN_IF_ERROR(describeCudnnDevice(library, deviceJson, device));
  CudnnAttentionPlan planned(library);
  TITANRT_RETURN_IF_ERROR(
      buildGraph(planned.builder, pass, shape, nullptr, planned.graph));
  int64_t workspaceBytes = 0;
  return planCudnnGraph(library, planned.graph, nullptr, &device, planned.plan,
                        workspaceBytes);
}

CudnnAttention::~CudnnAttention() {
  plans.clear();
  if (handle)
    library->destroy(handle);
}

Status CudnnAttention::create(std::unique_ptr<CudnnAttention> &attention,
                              cudaStream_t stream) {
  std::unique_ptr<CudnnAttention> created(new CudnnAttention);
  TITANRT_RETURN_IF_ERROR(loadCudnn(created->library));
  const CudnnLibrary &library = *created->library;
  TITANRT_RETURN_IF_ERROR(
      library.check(library.create(&created->handle), "cudnnCreate"));
  TITANRT_RETURN_IF_ERROR(library.check(
      library.setStream(created->handle, stream), "cudnnSetStream"));
  created->stream = stream;
  attention = std::move(created);
  return Status::success();
}

CudnnAttention::Key CudnnAttention::keyOf(AttentionPass pass,
                                          const AttentionShape &shape) {
  return {int(pass), shape.batch,   shape.qHeads, shape.kvHeads,
          shape.seq, shape.headDim, shape.causal};
}

Status CudnnAttention::prepare(AttentionPass pass,
                               const AttentionShape &shape) {
  const Key key = keyOf(pass, shape);
  if (plans.count(key))
    return Status::success();
  auto failed = failures.find(key);
  if (failed != failures.end())
    return failed->second;

  auto planned = std::make_unique<CudnnAttentionPlan>(*library);
  int64_t cudnnBytes = 0;
  Status status = checkCudnnShape(shape);
  if (status.ok())
    status = buildGraph(planned->builder, pass, shape, handle, planned->graph);
  if (status.ok())
    status = planCudnnGraph(*library, planned->graph, handle, nullptr,
                            planned->plan, cudnnBytes);
  if (!status.ok()) {
    status = Status(status.getCode(), "cuDNN has no plan for " +
                                          describe(pass, shape) + ": " +
                                          status.getMessage());
    failures.emplace(key, status);
    return status;
  }
  planned->workspaceBytes = alignUp(cudnnBytes);
  if (pass == AttentionPass::Backward) {
    planned->accumulatorOffset = planned->workspaceBytes;
    planned->workspaceBytes += alignUp(shape.batch * shape.qHeads * shape.seq *
                                       shape.headDim * int64_t(sizeof(float)));
  }
  planned->uids = boundUids(pass, shape.causal);
  plans.emplace(key, std::move(planned));
  return Status::success();
}

Status CudnnAttention::reserveWorkspace(int64_t bytes) {
  if (bytes <= workspace.getBytes())
    return Status::success();
  return workspace.allocate(bytes, "cuDNN attention's workspace");
}

namespace {

/// What masked scores are set to: -inf, or the lowest float for cuDNN
/// before 9.10, whose softmax engines prefer it.
float maskValue(const CudnnLibrary &library) {
  return library.version < 91000 ? std::numeric_limits<float>::lowest()
                                 : -std::numeric_limits<float>::infinity();
}

/// Runs `plan` with the tensors of `pointers` (in the plan's uid order,
/// by uid) and the workspace.
Status execute(const CudnnLibrary &library, cudnnHandle_t handle,
               const CudnnAttentionPlan &plan,
               const std::map<int64_t, void *> &pointers, void *workspace,
               const char *op) {
  std::vector<void *> data;
  for (int64_t uid : plan.uids)
    data.push_back(pointers.at(uid));
  CudnnDescriptor pack;
  TITANRT_RETURN_IF_ERROR(
      pack.create(library, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  TITANRT_RETURN_IF_ERROR(library.check(
      library.setAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                           CUDNN_TYPE_INT64, int64_t(plan.uids.size()),
                           plan.uids.data()),
      "cudnnBackendSetAttribute", std::string(op) + "'s tensor ids"));
  TITANRT_RETURN_IF_ERROR(library.check(
      library.setAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                           CUDNN_TYPE_VOID_PTR, int64_t(data.size()),
                           data.data()),
      "cudnnBackendSetAttribute", std::string(op) + "'s tensors"));
  TITANRT_RETURN_IF_ERROR(library.check(
      library.setAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                           CUDNN_TYPE_VOID_PTR, 1, &workspace),
      "cudnnBackendSetAttribute", std::string(op) + "'s workspace"));
  TITANRT_RETURN_IF_ERROR(library.check(library.finalize(pack.get()),
                                        "cudnnBackendFinalize",
                                        std::string(op) + "'s variant pack"));
  return library.check(library.execute(handle, plan.plan.get(), pack.get()),
                       "cudnnBackendExecute", op);
}

} // namespace

Status CudnnAttention::forward(const AttentionShape &shape, const void *q,
                               const void *k, const void *v, void *out,
                               float *lse) {
  const char *op = "attention (cuDNN)";
  int64_t rows;
  TITANRT_RETURN_IF_ERROR(checkAttentionCall(op, TITANRT_BF16, shape, rows));
  TITANRT_RETURN_IF_ERROR(checkPointers(
      op, rows, {{"q", q}, {"k", k}, {"v", v}, {"out", out}, {"lse", lse}}));
  if (rows == 0)
    return Status::success();
  TITANRT_RETURN_IF_ERROR(prepare(AttentionPass::Forward, shape));
  const CudnnAttentionPlan &plan =
      *plans.at(keyOf(AttentionPass::Forward, shape));
  TITANRT_RETURN_IF_ERROR(reserveWorkspace(plan.workspaceBytes));
  float scale = float(shape.scale);
  float negativeInfinity = maskValue(*library);
  const std::map<int64_t, void *> pointers = {
      {kQ, const_cast<void *>(q)},
      {kK, const_cast<void *>(k)},
      {kV, const_cast<void *>(v)},
      {kOut, out},
      {kStats, lse},
      {kScale, &scale},
      {kNegativeInfinity, &negativeInfinity}};
  return execute(*library, handle, plan, pointers, workspace.get(), op);
}

Status CudnnAttention::backward(const AttentionShape &shape, const void *q,
                                const void *k, const void *v, const void *out,
                                const void *grad, const float *lse, void *dq,
                                void *dk, void *dv, void *rowSums) {
  const char *op = "attention_grad (cuDNN)";
  int64_t rows;
  TITANRT_RETURN_IF_ERROR(checkAttentionCall(op, TITANRT_BF16, shape, rows));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, rows,
                                        {{"q", q},
                                         {"k", k},
                                         {"v", v},
                                         {"out", out},
                                         {"dout", grad},
                                         {"lse", lse},
                                         {"dq", dq},
                                         {"dk", dk},
                                         {"dv", dv},
                                         {"workspace", rowSums}}));
  if (rows == 0)
    return Status::success();
  TITANRT_RETURN_IF_ERROR(prepare(AttentionPass::Backward, shape));
  const CudnnAttentionPlan &plan =
      *plans.at(keyOf(AttentionPass::Backward, shape));
  TITANRT_RETURN_IF_ERROR(reserveWorkspace(plan.workspaceBytes));
  float scale = float(shape.scale), one = 1.0f;
  float negativeInfinity = maskValue(*library);
  char *accumulator = workspace.as<char>() + plan.accumulatorOffset;
  // cuDNN 9.6 and newer clear the dQ accumulator themselves.
  if (library->version < 90600)
    TITANRT_RETURN_IF_ERROR(checkCuda(
        cudaMemsetAsync(accumulator, 0,
                        size_t(plan.workspaceBytes - plan.accumulatorOffset),
                        stream),
        "cudaMemsetAsync", "cuDNN attention's dQ accumulator"));
  const std::map<int64_t, void *> pointers = {
      {kQ, const_cast<void *>(q)},
      {kK, const_cast<void *>(k)},
      {kV, const_cast<void *>(v)},
      {kOut, const_cast<void *>(out)},
      {kGradOut, const_cast<void *>(grad)},
      {kStats, const_cast<float *>(lse)},
      {kScale, &scale},
      {kOne, &one},
      {kGradQ, dq},
      {kGradK, dk},
      {kGradV, dv},
      {kRowSum, rowSums},
      {kGradQAccumulator, workspace.as<char>() + plan.accumulatorOffset},
      {kNegativeInfinity, &negativeInfinity}};
  return execute(*library, handle, plan, pointers, workspace.get(), op);
}
