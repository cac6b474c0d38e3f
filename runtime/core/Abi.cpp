//===- Abi.cpp - the C entry points compiled code calls -------------------===//
//
// Each function of titanrt.def: checks what only the context can check (the
// communicator index, a titanrt_start that no collective followed),
// dispatches to the context's compute backend or the communicator (through the
// context's AsyncCollectives, which runs a collective inline or queues it), and
// turns a failed Status into its code and titanrt_last_error().
//
//===----------------------------------------------------------------------===//

#include "core/Context.h"

#include <cstddef>
#include <vector>

using namespace titan::rt;

namespace {

/// The communicator `comm` of `ctx`, or null after recording the error.
Communicator *getCommunicator(titanrt_context *ctx, int32_t comm,
                              const char *operation) {
  if (comm < 0 || comm >= static_cast<int32_t>(ctx->communicators.size())) {
    ctx->fail(Status::invalidArgument(
        std::string(operation) + ": communicator " + std::to_string(comm) +
        " does not exist (the program has " +
        std::to_string(ctx->communicators.size()) + ")" +
        ctx->async.consumePendingStart()));
    return nullptr;
  }
  return ctx->communicators[comm].get();
}

/// titanrt_check_ids' error: `id` at `position` of the rank's `numIds` ids
/// lies outside the `bound` rows of `table`.
Status computedIdOutside(const char *table, int64_t bound, int64_t id,
                         int64_t position, int64_t numIds) {
  bool named = table && *table;
  std::string what =
      "the model computed " + std::string(named ? "id " : "index ") +
      std::to_string(id) + " (element " + std::to_string(position) + " of " +
      std::to_string(numIds) + " on this rank) " +
      (named ? "to look up a row of '" + std::string(table) + "', which has " +
                   std::to_string(bound) + " rows"
             : "into a dim of size " + std::to_string(bound) +
                   " (torch.gather, index_select or tensor[...] of a "
                   "computed tensor)");
  if (id < 0)
    return Status::invalidArgument(
        what + ": a negative index; titan's lookups need indices in [0, " +
        std::to_string(bound) +
        ") (PyTorch counts a negative tensor[...] index from the end, "
        "titan only a constant one): make it non-negative in the model "
        "(e.g. ids % " +
        std::to_string(bound) + ")");
  if (!named)
    return Status::invalidArgument(
        what + ": past the dim's end, where PyTorch raises an index error "
               "too");
  return Status::invalidArgument(
      what + ": indices the model computes (e.g. positions from a cumsum) "
             "reach past the table at this input; use a shorter sequence (a "
             "smaller training.seq_len) or a model built with a longer "
             "table");
}

/// Runs `call` on communicator `comm` of `ctx`: queued on its communication
/// thread after a titanrt_start, else inline.
titanrt_status communicate(titanrt_context *ctx, int32_t comm,
                           const CollectiveCall &call) {
  Communicator *c = getCommunicator(ctx, comm, getCollectiveName(call.kind));
  if (!c)
    return TITANRT_ERROR_INVALID_ARGUMENT;
  return ctx->finish(ctx->async.run(ctx->tracer, comm, *c, call));
}

/// Whether a titanrt_start was not followed by a collective, `operation`
/// coming instead; then records the error (which consumes the start).
bool failsPendingStart(titanrt_context *ctx, const char *operation) {
  if (!ctx->async.hasPendingStart())
    return false;
  ctx->fail(ctx->async.checkNoPendingStart(operation));
  return true;
}

} // namespace

extern "C" {

const char *titanrt_last_error(const titanrt_context *ctx) {
  return ctx->lastError.c_str();
}

titanrt_status titanrt_matmul(titanrt_context *ctx, int32_t dtype,
                              const void *a, const void *b, const void *addend,
                              void *c, int64_t batch, int64_t m, int64_t n,
                              int64_t k, int32_t transpose_a,
                              int32_t transpose_b, int32_t b_shared) {
  if (failsPendingStart(ctx, "titanrt_matmul"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "matmul", "gemm");
  trace.arg("m", batch * m);
  trace.arg("n", n);
  trace.arg("k", k);
  return ctx->finish(ctx->compute->matmul(dtype, a, b, addend, c, batch, m, n,
                                          k, transpose_a, transpose_b,
                                          b_shared));
}

titanrt_status titanrt_attention(titanrt_context *ctx, int32_t dtype,
                                 const void *q, const void *k, const void *v,
                                 void *out, float *lse, int64_t batch,
                                 int64_t q_heads, int64_t kv_heads, int64_t seq,
                                 int64_t head_dim, int32_t causal,
                                 double scale) {
  if (failsPendingStart(ctx, "titanrt_attention"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "attention", "attention");
  trace.arg("seq", seq);
  trace.arg("heads", batch * q_heads);
  return ctx->finish(ctx->compute->attention(
      dtype, {batch, q_heads, kv_heads, seq, head_dim, causal != 0, scale}, q,
      k, v, out, lse));
}

titanrt_status
titanrt_attention_grad(titanrt_context *ctx, int32_t dtype, const void *q,
                       const void *k, const void *v, const void *out,
                       const float *lse, const void *grad, void *dq, void *dk,
                       void *dv, void *workspace, int64_t batch,
                       int64_t q_heads, int64_t kv_heads, int64_t seq,
                       int64_t head_dim, int32_t causal, double scale) {
  if (failsPendingStart(ctx, "titanrt_attention_grad"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "attention backward", "attention");
  trace.arg("seq", seq);
  trace.arg("heads", batch * q_heads);
  return ctx->finish(ctx->compute->attentionGrad(
      dtype, {batch, q_heads, kv_heads, seq, head_dim, causal != 0, scale}, q,
      k, v, out, lse, grad, dq, dk, dv, workspace));
}

titanrt_status titanrt_embedding_grad(titanrt_context *ctx, int32_t dtype,
                                      int32_t ids_dtype, const void *ids,
                                      const void *grad, void *out,
                                      int64_t num_ids, int64_t vocab,
                                      int64_t dim) {
  if (failsPendingStart(ctx, "titanrt_embedding_grad"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "embedding backward", "embedding");
  trace.arg("ids", num_ids);
  return ctx->finish(ctx->compute->embeddingGrad(dtype, ids_dtype, ids, grad,
                                                 out, num_ids, vocab, dim));
}

titanrt_status titanrt_check_ids(titanrt_context *ctx, int32_t ids_dtype,
                                 const void *ids, int64_t num_ids,
                                 int64_t bound, const char *table) {
  if (failsPendingStart(ctx, "titanrt_check_ids"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "id check", "embedding");
  trace.arg("ids", num_ids);
  int64_t position = -1, id = 0;
  titan::rt::Status found =
      ctx->compute->findIdOutside(ids_dtype, ids, num_ids, bound, position, id);
  if (found.ok() && position >= 0)
    found = computedIdOutside(table, bound, id, position, num_ids);
  return ctx->finish(found);
}

titanrt_status titanrt_rms_norm(titanrt_context *ctx, int32_t dtype,
                                int32_t weight_dtype, const void *x,
                                const void *weight, void *y, int64_t rows,
                                int64_t cols, double eps) {
  if (failsPendingStart(ctx, "titanrt_rms_norm"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "rms_norm", "norm");
  trace.arg("rows", rows);
  return ctx->finish(ctx->compute->rmsNorm(dtype, weight_dtype, x, weight, y,
                                           rows, cols, eps));
}

titanrt_status titanrt_rms_norm_grad(titanrt_context *ctx, int32_t dtype,
                                     int32_t weight_dtype, const void *x,
                                     const void *weight, const void *grad,
                                     const void *addend, void *dx,
                                     void *dweight, void *workspace,
                                     int64_t rows, int64_t cols, double eps) {
  if (failsPendingStart(ctx, "titanrt_rms_norm_grad"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "rms_norm backward", "norm");
  trace.arg("rows", rows);
  return ctx->finish(ctx->compute->rmsNormGrad(dtype, weight_dtype, x, weight,
                                               grad, addend, dx, dweight,
                                               workspace, rows, cols, eps));
}

titanrt_status titanrt_cross_entropy(titanrt_context *ctx, int32_t dtype,
                                     int32_t labels_dtype, const void *logits,
                                     const void *labels, void *loss,
                                     void *workspace, int64_t rows,
                                     int64_t vocab, int64_t ignore_index) {
  if (failsPendingStart(ctx, "titanrt_cross_entropy"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "cross_entropy", "loss");
  trace.arg("rows", rows);
  return ctx->finish(ctx->compute->crossEntropy(
      dtype, {rows, vocab, ignore_index, labels_dtype}, logits, labels,
      static_cast<float *>(loss), workspace));
}

titanrt_status titanrt_cross_entropy_grad(
    titanrt_context *ctx, int32_t dtype, int32_t labels_dtype,
    const void *logits, const void *labels, const void *grad, void *dlogits,
    void *workspace, int64_t rows, int64_t vocab, int64_t ignore_index) {
  if (failsPendingStart(ctx, "titanrt_cross_entropy_grad"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "cross_entropy backward", "loss");
  trace.arg("rows", rows);
  return ctx->finish(ctx->compute->crossEntropyGrad(
      dtype, {rows, vocab, ignore_index, labels_dtype}, logits, labels,
      static_cast<const float *>(grad), dlogits, workspace));
}

/// Fails unless a call's table of `count` tensors is one: count >= 0, and
/// the table not null when it has any.
static Status checkTable(const char *op, const void *table, int64_t count) {
  if (count < 0)
    return Status::invalidArgument(std::string(op) + ": count " +
                                   std::to_string(count) + " is negative");
  if (count > 0 && !table)
    return Status::invalidArgument(std::string(op) +
                                   ": the tensor table is null");
  return Status::success();
}

// The layouts the code generator builds the tables in (lowerFusedAdamW:
// eight pointers, an int64_t, two int32_t; lowerSquaredNorm: a pointer, an
// int64_t, an int32_t).
static_assert(offsetof(titanrt_adamw_tensor, numel) == 64 &&
                  offsetof(titanrt_adamw_tensor, grad_dtype) == 72 &&
                  offsetof(titanrt_adamw_tensor, param_dtype) == 76 &&
                  sizeof(titanrt_adamw_tensor) == 80,
              "titanrt_adamw_tensor's layout changed: update lowerFusedAdamW");
static_assert(offsetof(titanrt_norm_tensor, numel) == 8 &&
                  offsetof(titanrt_norm_tensor, dtype) == 16 &&
                  sizeof(titanrt_norm_tensor) == 24,
              "titanrt_norm_tensor's layout changed: update lowerSquaredNorm");

titanrt_status titanrt_fused_adamw(titanrt_context *ctx,
                                   const titanrt_adamw_tensor *tensors,
                                   int64_t count, const void *lr,
                                   const void *step, const void *grad_scale,
                                   double beta1, double beta2, double eps,
                                   double weight_decay) {
  if (failsPendingStart(ctx, "titanrt_fused_adamw"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  if (Status bad = checkTable("titanrt_fused_adamw", tensors, count); !bad.ok())
    return ctx->finish(bad);
  TraceScope trace(ctx->tracer, "adamw", "optimizer");
  trace.arg("tensors", count);
  AdamWCall call;
  call.lr = static_cast<const float *>(lr);
  call.step = static_cast<const float *>(step);
  call.gradScale = static_cast<const float *>(grad_scale);
  call.beta1 = beta1;
  call.beta2 = beta2;
  call.eps = eps;
  call.weightDecay = weight_decay;
  return ctx->finish(ctx->compute->adamW(
      std::vector<titanrt_adamw_tensor>(tensors, tensors + count), call));
}

titanrt_status titanrt_squared_norm(titanrt_context *ctx,
                                    const titanrt_norm_tensor *tensors,
                                    int64_t count, void *out) {
  if (failsPendingStart(ctx, "titanrt_squared_norm"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  if (Status bad = checkTable("titanrt_squared_norm", tensors, count);
      !bad.ok())
    return ctx->finish(bad);
  TraceScope trace(ctx->tracer, "squared_norm", "optimizer");
  trace.arg("tensors", count);
  return ctx->finish(ctx->compute->squaredNorm(
      std::vector<titanrt_norm_tensor>(tensors, tensors + count),
      static_cast<float *>(out)));
}

titanrt_status titanrt_copy(titanrt_context *ctx, const void *in, void *out,
                            int64_t bytes) {
  if (failsPendingStart(ctx, "titanrt_copy"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  TraceScope trace(ctx->tracer, "copy", "copy");
  trace.arg("bytes", bytes);
  return ctx->finish(ctx->compute->copy(in, out, bytes));
}

titanrt_status titanrt_all_gather(titanrt_context *ctx, int32_t comm,
                                  const void *in, void *out, int64_t bytes) {
  return communicate(
      ctx, comm,
      {CollectiveKind::AllGather, TITANRT_F32, TITANRT_SUM, in, out, bytes});
}

titanrt_status titanrt_reduce_scatter(titanrt_context *ctx, int32_t comm,
                                      int32_t dtype, int32_t reduce,
                                      const void *in, void *out,
                                      int64_t count) {
  return communicate(ctx, comm,
                     {CollectiveKind::ReduceScatter,
                      static_cast<titanrt_dtype>(dtype),
                      static_cast<titanrt_reduce>(reduce), in, out, count});
}

titanrt_status titanrt_all_reduce(titanrt_context *ctx, int32_t comm,
                                  int32_t dtype, int32_t reduce, const void *in,
                                  void *out, int64_t count) {
  return communicate(ctx, comm,
                     {CollectiveKind::AllReduce,
                      static_cast<titanrt_dtype>(dtype),
                      static_cast<titanrt_reduce>(reduce), in, out, count});
}

titanrt_status titanrt_all_to_all(titanrt_context *ctx, int32_t comm,
                                  const void *in, void *out,
                                  int64_t bytes_per_peer) {
  return communicate(ctx, comm,
                     {CollectiveKind::AllToAll, TITANRT_F32, TITANRT_SUM, in,
                      out, bytes_per_peer});
}

titanrt_status titanrt_broadcast(titanrt_context *ctx, int32_t comm,
                                 int64_t root, const void *in, void *out,
                                 int64_t bytes) {
  return communicate(ctx, comm,
                     {CollectiveKind::Broadcast, TITANRT_F32, TITANRT_SUM, in,
                      out, bytes, root});
}

titanrt_status titanrt_send(titanrt_context *ctx, int32_t comm, int64_t peer,
                            int64_t tag, const void *in, int64_t bytes) {
  return communicate(ctx, comm,
                     {CollectiveKind::Send, TITANRT_F32, TITANRT_SUM, in,
                      nullptr, bytes, peer, tag});
}

titanrt_status titanrt_recv(titanrt_context *ctx, int32_t comm, int64_t peer,
                            int64_t tag, void *out, int64_t bytes) {
  return communicate(ctx, comm,
                     {CollectiveKind::Recv, TITANRT_F32, TITANRT_SUM, nullptr,
                      out, bytes, peer, tag});
}

titanrt_status titanrt_axis_index(titanrt_context *ctx, int32_t comm,
                                  int32_t dtype, void *out) {
  if (failsPendingStart(ctx, "titanrt_axis_index"))
    return TITANRT_ERROR_INVALID_ARGUMENT;
  Communicator *c = getCommunicator(ctx, comm, "axis_index");
  if (!c)
    return TITANRT_ERROR_INVALID_ARGUMENT;
  // Like every synchronous use of a communicator, after its queued
  // collectives.
  ctx->async.synchronize(ctx->tracer, comm);
  if (dtype != TITANRT_I64 && dtype != TITANRT_I32)
    return ctx->fail(Status::invalidArgument(
        "axis_index: the result must be i64 or i32, not " + dtypeName(dtype)));
  return ctx->finish(ctx->compute->writeInteger(dtype, c->getRank(), out));
}

titanrt_status titanrt_start(titanrt_context *ctx, int64_t handle) {
  return ctx->finish(ctx->async.start(handle));
}

titanrt_status titanrt_wait(titanrt_context *ctx, int64_t handle) {
  return ctx->finish(ctx->async.wait(ctx->tracer, handle));
}

} // extern "C"
