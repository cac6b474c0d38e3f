/*===- titanrt.h - the C ABI between compiled programs and libtitanrt -----===*\
|*                                                                            *|
|* The one contract between titan's code generator and its runtime. A        *|
|* compiled rank program is straight-line code that calls the functions      *|
|* listed in titanrt.def (GEMMs, attention, collectives, ...) with pointers  *|
|* into memory the runtime allocated from the program's plan. Every such     *|
|* function returns a titanrt_status; a non-zero status stops the step and   *|
|* titanrt_last_error() says why.                                            *|
|*                                                                            *|
|* Pure C so that the generated code (LLVM IR built from titanrt.def) and    *|
|* any backend can be checked against it; test/unit/Runtime/AbiTest.cpp      *|
|* checks that every entry of titanrt.def has this header's prototype and    *|
|* links.                                                                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TITAN_RUNTIME_TITANRT_H
#define TITAN_RUNTIME_TITANRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Status, element types, reductions
 *===----------------------------------------------------------------------===*/

/// The result of a runtime call: TITANRT_OK or one of the error codes below.
typedef int32_t titanrt_status;

enum {
  TITANRT_OK = 0,
  /// A caller error: a shape, dtype, communicator or id out of range.
  TITANRT_ERROR_INVALID_ARGUMENT = 1,
  /// A collective or point-to-point transfer failed (a peer died, a timeout).
  TITANRT_ERROR_COMMUNICATION = 2,
  /// Reading or writing a file failed.
  TITANRT_ERROR_IO = 3,
  /// The operation is not supported by this backend (e.g. a dtype).
  TITANRT_ERROR_UNSUPPORTED = 4,
  /// A bug in titan.
  TITANRT_ERROR_INTERNAL = 5,
};

/// Element types: the one enum shared by the code generator, the runtime and
/// the program description.
typedef enum titanrt_dtype {
  TITANRT_F32 = 0,
  TITANRT_F64 = 1,
  TITANRT_BF16 = 2,
  TITANRT_F16 = 3,
  TITANRT_I64 = 4,
  TITANRT_I32 = 5,
  TITANRT_BOOL = 6,
} titanrt_dtype;

/// Reductions of collectives (titan's #titan.reduce kinds). AVG is the sum
/// divided by the group size.
typedef enum titanrt_reduce {
  TITANRT_SUM = 0,
  TITANRT_AVG = 1,
  TITANRT_MAX = 2,
  TITANRT_MIN = 3,
} titanrt_reduce;

/// The runtime state of one rank: its communicators, threads, backend and
/// last error. Opaque to compiled code.
typedef struct titanrt_context titanrt_context;

/// The message of the last failed call on `ctx` ("" if none). Valid until
/// the next call on `ctx`.
const char *titanrt_last_error(const titanrt_context *ctx);

/*===----------------------------------------------------------------------===*
 * Compute (called by compiled code; listed in titanrt.def)
 *
 * Tensors are dense and row-major. `dtype` is a titanrt_dtype. The CPU
 * backend supports TITANRT_F32, TITANRT_BF16 and TITANRT_F16 (computed on
 * float32 copies, rounded once), and TITANRT_F64 where noted.
 *===----------------------------------------------------------------------===*/

/// C[i] = op(A[i]) * op(B[i]) (+ addend[i]) for i < batch, where op
/// transposes its matrix when the flag is set. A[i] is m x k (k x m when
/// transposed), B[i] is k x n (n x k when transposed), C[i] and the
/// optional `addend` (null: none) are m x n; the sum is rounded to `dtype`
/// once. `addend` may be `c` (computed in place) but must not otherwise
/// overlap it. With `b_shared`, B is one matrix used by every batch (a
/// weight). Also F64.
titanrt_status titanrt_matmul(titanrt_context *ctx, int32_t dtype,
                              const void *a, const void *b, const void *addend,
                              void *c, int64_t batch, int64_t m, int64_t n,
                              int64_t k, int32_t transpose_a,
                              int32_t transpose_b, int32_t b_shared);

/// Scaled dot-product attention with grouped KV heads (titan.attention):
/// q and out are [batch, q_heads, seq, head_dim], k and v [batch, kv_heads,
/// seq, head_dim]; query head h reads KV head h / (q_heads / kv_heads).
/// out = softmax(q k^T * scale (+ causal mask)) v, computed blockwise
/// without a [seq, seq] matrix; with `causal`, blocks above the diagonal
/// are skipped. `lse` (f32 [batch, q_heads, seq]) receives each query row's
/// log-sum-exp (natural) of its visible scaled scores, for the backward.
titanrt_status titanrt_attention(titanrt_context *ctx, int32_t dtype,
                                 const void *q, const void *k, const void *v,
                                 void *out, float *lse, int64_t batch,
                                 int64_t q_heads, int64_t kv_heads, int64_t seq,
                                 int64_t head_dim, int32_t causal,
                                 double scale);

/// The bytes of workspace titanrt_attention_grad needs (the compiler plans
/// it in the rank's arena): one f32 per query row, rowsum(grad * out).
static inline int64_t titanrt_attention_grad_workspace_bytes(int64_t batch,
                                                             int64_t q_heads,
                                                             int64_t seq) {
  return batch * q_heads * seq * (int64_t)sizeof(float);
}

/// The cotangents dq, dk, dv of titanrt_attention given its results `out`
/// and `lse` and grad = d out (titan.attention_grad), shapes as there. The
/// probabilities are recomputed blockwise from q, k and lse (no second
/// forward); dk and dv sum over the query heads that read each KV head.
/// `workspace` holds titanrt_attention_grad_workspace_bytes bytes.
titanrt_status
titanrt_attention_grad(titanrt_context *ctx, int32_t dtype, const void *q,
                       const void *k, const void *v, const void *out,
                       const float *lse, const void *grad, void *dq, void *dk,
                       void *dv, void *workspace, int64_t batch,
                       int64_t q_heads, int64_t kv_heads, int64_t seq,
                       int64_t head_dim, int32_t causal, double scale);

/// Checks the ids a lookup reads (titan.check_ids): every one of the
/// `num_ids` ids (`ids_dtype` TITANRT_I64 or TITANRT_I32) must lie in [0,
/// bound), the rows of `table` (its name, for the message; may be empty).
/// The first one outside is a TITANRT_ERROR_INVALID_ARGUMENT that names
/// it, its position and the table. Waits for the ids (on a GPU, a
/// synchronization of the compute stream).
titanrt_status titanrt_check_ids(titanrt_context *ctx, int32_t ids_dtype,
                                 const void *ids, int64_t num_ids,
                                 int64_t bound, const char *table);

/// The cotangent of an embedding table (titan.embedding_grad): out [vocab,
/// dim] = 0, then out[ids[i]] += grad[i] for i < num_ids. `ids_dtype` is
/// TITANRT_I64 or TITANRT_I32; an id outside [0, vocab) is an
/// TITANRT_ERROR_INVALID_ARGUMENT naming it.
titanrt_status titanrt_embedding_grad(titanrt_context *ctx, int32_t dtype,
                                      int32_t ids_dtype, const void *ids,
                                      const void *grad, void *out,
                                      int64_t num_ids, int64_t vocab,
                                      int64_t dim);

/// The rows whose partial weight gradients titanrt_rms_norm_grad keeps
/// apart: row r adds to partial r mod min(rows, this), a function of the
/// shape only, so that the weight gradient is bitwise reproducible.
enum { TITANRT_RMS_NORM_GRAD_PARTIALS = 256 };

/// y = x * rsqrt(mean(x^2, -1) + eps) * weight over `rows` rows of `cols`
/// elements (titan.rms_norm): x and y of `dtype`, weight [cols] of
/// `weight_dtype`, both TITANRT_F32 or TITANRT_BF16; math in float32, y
/// rounded once.
titanrt_status titanrt_rms_norm(titanrt_context *ctx, int32_t dtype,
                                int32_t weight_dtype, const void *x,
                                const void *weight, void *y, int64_t rows,
                                int64_t cols, double eps);

/// The bytes of workspace titanrt_rms_norm_grad needs: a float32 partial
/// weight gradient [cols] per TITANRT_RMS_NORM_GRAD_PARTIALS rows.
static inline int64_t titanrt_rms_norm_grad_workspace_bytes(int64_t rows,
                                                            int64_t cols) {
  int64_t most = TITANRT_RMS_NORM_GRAD_PARTIALS;
  int64_t partials = rows < most ? rows : most;
  return partials * cols * (int64_t)sizeof(float);
}

/// The cotangents of titanrt_rms_norm given grad = d y (titan.rms_norm_grad):
/// dx = r * (g - x * r^2 * mean(g * x, -1)) with g = grad * weight and
/// r = rsqrt(mean(x^2, -1) + eps), recomputed; dweight (of `weight_dtype`)
/// = the sum over rows of grad * x * r, in float32, bitwise reproducible.
/// An optional `addend` (null: none; like x) is added to dx before it is
/// rounded; it may be dx (computed in place) but must not otherwise overlap
/// it. `workspace` holds titanrt_rms_norm_grad_workspace_bytes bytes.
titanrt_status titanrt_rms_norm_grad(titanrt_context *ctx, int32_t dtype,
                                     int32_t weight_dtype, const void *x,
                                     const void *weight, const void *grad,
                                     const void *addend, void *dx,
                                     void *dweight, void *workspace,
                                     int64_t rows, int64_t cols, double eps);

/// The bytes of workspace titanrt_cross_entropy and
/// titanrt_cross_entropy_grad need: four float32 per row (statistics of the
/// row: its maximum, sum of exponentials, label's logit, log-sum-exp) and
/// two scalars (the rows counted, the loss).
static inline int64_t titanrt_cross_entropy_workspace_bytes(int64_t rows) {
  return (4 * rows + 2) * (int64_t)sizeof(float);
}

/// loss (a float32 scalar) = the mean over rows whose label is not
/// `ignore_index` of logsumexp(logits[row]) - logits[row, label]
/// (titan.cross_entropy; NaN when every label is ignored, as PyTorch):
/// logits [rows, vocab] of `dtype` (TITANRT_F32 or TITANRT_BF16), labels
/// [rows] of `labels_dtype` (TITANRT_I64 or TITANRT_I32). A label outside
/// [0, vocab) other than `ignore_index` is the caller's error (titan's data
/// loader rejects such tokens): the CPU backend reports it as an invalid
/// argument, a GPU reads its logit as 0. `workspace` holds
/// titanrt_cross_entropy_workspace_bytes bytes.
titanrt_status titanrt_cross_entropy(titanrt_context *ctx, int32_t dtype,
                                     int32_t labels_dtype, const void *logits,
                                     const void *labels, void *loss,
                                     void *workspace, int64_t rows,
                                     int64_t vocab, int64_t ignore_index);

/// dlogits[row] = grad * (softmax(logits[row]) - onehot(label)) / count for
/// rows not ignored, 0 for the others (titan.cross_entropy_grad): `grad` is
/// the float32 cotangent of titanrt_cross_entropy's loss, count the rows not
/// ignored; the softmax's statistics are recomputed. dlogits may be logits.
/// `workspace` holds titanrt_cross_entropy_workspace_bytes bytes.
titanrt_status titanrt_cross_entropy_grad(
    titanrt_context *ctx, int32_t dtype, int32_t labels_dtype,
    const void *logits, const void *labels, const void *grad, void *dlogits,
    void *workspace, int64_t rows, int64_t vocab, int64_t ignore_index);

/// One parameter's operands of titanrt_fused_adamw (titan.fused_adamw):
/// param, exp_avg and exp_avg_sq are of `param_dtype` (TITANRT_F32, or
/// TITANRT_BF16 in pure bf16 training), `numel` elements; grad is of
/// `grad_dtype` (TITANRT_F32 or TITANRT_BF16); the updates go to
/// param_out, exp_avg_out and exp_avg_sq_out (of `param_dtype`, each the
/// same buffer as its input or not overlapping it) and, unless
/// param_copy_out is null (always for a bf16 parameter), param_out rounded
/// to bfloat16 (nearest even) to param_copy_out: the copy the next step's
/// forward reads (titan.adamw's new_param_copy).
typedef struct titanrt_adamw_tensor {
  const void *param;
  const void *grad;
  const void *exp_avg;
  const void *exp_avg_sq;
  void *param_out;
  void *exp_avg_out;
  void *exp_avg_sq_out;
  void *param_copy_out;
  int64_t numel;
  int32_t grad_dtype;
  int32_t param_dtype;
} titanrt_adamw_tensor;

/// One AdamW step of each of the `count` parameters of `tensors` (a table
/// in host memory, read during the call), all sharing lr, step (float32
/// scalars in the step's memory), grad_scale (unless null, a float32 every
/// gradient is multiplied by first: the clipping coefficient) and the
/// hyperparameters. With t = step + 1, decay = 1 - lr * weight_decay,
/// step_size = lr / (1 - beta1^t) and c = sqrt(1 - beta2^t) computed in
/// double and rounded to float32, every element computes in float32 (a
/// bf16 parameter's and moments' values widened, the three results rounded
/// to bf16 once, to nearest even, as torch's fused AdamW):
///   m = exp_avg * beta1 + g * (1 - beta1)
///   v = exp_avg_sq * beta2 + (g * g) * (1 - beta2)
///   param_out = param * decay - (m / (sqrt(v) / c + eps)) * step_size
/// (torch.optim.AdamW; the order of titan.adamw's expansion). No tensor's
/// outputs may overlap another tensor's operands. A GPU backend runs every
/// parameter in one launch.
titanrt_status titanrt_fused_adamw(titanrt_context *ctx,
                                   const titanrt_adamw_tensor *tensors,
                                   int64_t count, const void *lr,
                                   const void *step, const void *grad_scale,
                                   double beta1, double beta2, double eps,
                                   double weight_decay);

/// One tensor of titanrt_squared_norm: `numel` elements of `dtype`
/// (TITANRT_F32 or TITANRT_BF16) at `data`.
typedef struct titanrt_norm_tensor {
  const void *data;
  int64_t numel;
  int32_t dtype;
} titanrt_norm_tensor;

/// *out (float32, in the step's memory) = the sum of x * x over every
/// element x of the `count` tensors of `tensors` (a table in host memory,
/// read during the call), each element widened to float32 and squared in
/// float32, the squares summed in double in an order fixed by the sizes
/// alone (the same bits for any number of threads or blocks), the total
/// rounded to float32 (titan.squared_norm: the gradients' squared global
/// norm of clipping). A GPU backend reads every tensor in one launch.
titanrt_status titanrt_squared_norm(titanrt_context *ctx,
                                    const titanrt_norm_tensor *tensors,
                                    int64_t count, void *out);

/// Copies `bytes` bytes from `in` to `out` in the step's memory (buffers that
/// do not overlap): a step result that ends where it was not computed, such
/// as a state update that could not be computed in place. Code compiled for
/// the CPU copies by itself; on a GPU the memory is the device's, so the
/// copy is the backend's (queued on its stream).
titanrt_status titanrt_copy(titanrt_context *ctx, const void *in, void *out,
                            int64_t bytes);

/*===----------------------------------------------------------------------===*
 * Communication (called by compiled code; listed in titanrt.def)
 *
 * `comm` indexes the communicators of the program description: one per set
 * of mesh axes the program communicates over. A rank's group is the ranks
 * whose mesh coordinates differ from its own only on those axes, ordered
 * row-major over the axes (the first named axis outer); chunks are in group
 * order. Buffers are contiguous; `in` and `out` may be equal only for
 * all_reduce and broadcast.
 *===----------------------------------------------------------------------===*/

/// out = the concatenation of every group member's `bytes` bytes of `in`, in
/// group order (out holds group_size * bytes).
titanrt_status titanrt_all_gather(titanrt_context *ctx, int32_t comm,
                                  const void *in, void *out, int64_t bytes);

/// in holds group_size * count elements; out (count elements) = chunk
/// `group rank` of the elementwise reduction of every member's `in`.
titanrt_status titanrt_reduce_scatter(titanrt_context *ctx, int32_t comm,
                                      int32_t dtype, int32_t reduce,
                                      const void *in, void *out, int64_t count);

/// out (count elements) = the elementwise reduction of every member's in.
titanrt_status titanrt_all_reduce(titanrt_context *ctx, int32_t comm,
                                  int32_t dtype, int32_t reduce, const void *in,
                                  void *out, int64_t count);

/// in and out hold group_size chunks of `bytes_per_peer` bytes: chunk j of
/// in goes to member j, chunk j of out comes from member j.
titanrt_status titanrt_all_to_all(titanrt_context *ctx, int32_t comm,
                                  const void *in, void *out,
                                  int64_t bytes_per_peer);

/// out = `in` of the member at group index `root` (bytes bytes).
titanrt_status titanrt_broadcast(titanrt_context *ctx, int32_t comm,
                                 int64_t root, const void *in, void *out,
                                 int64_t bytes);

/// Sends `bytes` bytes of `in` to group index `peer` (a one-axis
/// communicator), matched by the peer's titanrt_recv with the same tag.
titanrt_status titanrt_send(titanrt_context *ctx, int32_t comm, int64_t peer,
                            int64_t tag, const void *in, int64_t bytes);

/// Receives `bytes` bytes into `out` from group index `peer`.
titanrt_status titanrt_recv(titanrt_context *ctx, int32_t comm, int64_t peer,
                            int64_t tag, void *out, int64_t bytes);

/// Writes this rank's index in its group of `comm` into the 0-d tensor
/// `out` of `dtype` (TITANRT_I64 or TITANRT_I32) (titan.axis_index).
titanrt_status titanrt_axis_index(titanrt_context *ctx, int32_t comm,
                                  int32_t dtype, void *out);

/*===----------------------------------------------------------------------===*
 * Asynchronous collectives (called by compiled code; listed in titanrt.def)
 *
 * A collective issued after titanrt_start runs on a communication thread of
 * its communicator while the program computes; titanrt_wait is where the
 * program first needs its result. Each communicator runs its operations in
 * the order the program issued them: a synchronous call on a communicator
 * (a collective without titanrt_start, send, recv, axis_index) first waits
 * for the asynchronous collectives issued on it before. A program that
 * never calls titanrt_start runs every collective on the calling thread.
 * The runtime waits for every asynchronous collective after each step
 * (whether or not it failed); a handle's result is forgotten then.
 *===----------------------------------------------------------------------===*/

/// Makes the next call of a collective (titanrt_all_gather,
/// titanrt_reduce_scatter, titanrt_all_reduce, titanrt_all_to_all,
/// titanrt_broadcast) asynchronous under `handle` (>= 0): the collective is
/// queued on its communicator's communication thread and that call returns
/// TITANRT_OK at once; its buffers must stay untouched until
/// titanrt_wait(ctx, handle) returns. Errors (TITANRT_ERROR_INVALID_ARGUMENT,
/// naming the handle): a negative handle; a handle still in flight
/// (started, not yet waited for); a titanrt_start not followed by a
/// collective, which fails the runtime call that comes instead (this one,
/// titanrt_wait, send, recv, axis_index or a compute call). A handle may be
/// started again once it was waited for.
titanrt_status titanrt_start(titanrt_context *ctx, int64_t handle);

/// Blocks until the collective started under `handle` completes; returns
/// its status (its message, naming the handle, in titanrt_last_error). A
/// handle never started, or already waited for, is a
/// TITANRT_ERROR_INVALID_ARGUMENT.
titanrt_status titanrt_wait(titanrt_context *ctx, int64_t handle);

/*===----------------------------------------------------------------------===*
 * The compiled program and the executable's entry
 *===----------------------------------------------------------------------===*/

/// The step function of a compiled program (`titan_program_step` in the
/// generated object): reads the parameters, optimizer state and buffers in
/// `state` and the batch, learning rate and step number in `inputs`,
/// computes in `arena`, and leaves the updated state in `state` and the
/// other results (the loss) where the program description says.
typedef titanrt_status (*titanrt_step_function)(titanrt_context *ctx,
                                                uint8_t *arena, uint8_t *state,
                                                uint8_t *inputs);

/// The whole life of a rank process (called by the `main` the code
/// generator emits): parses the command line, reads the program description
/// (text naming the mesh, the communicators, the memory regions and every
/// argument and result with its place: docs/runtime.md), connects to the
/// other ranks, allocates the regions, loads or initializes the state, runs
/// the training steps and saves the checkpoint. Returns the process's exit
/// status. A job with validation passes its validation program too
/// (`validation_description`, `validation_step`: the loss of a held-out
/// batch on the same state and arena, docs/training-jobs.md); both are null
/// otherwise.
int32_t titanrt_main(int32_t argc, char **argv, const char *description,
                     titanrt_step_function step,
                     const char *validation_description,
                     titanrt_step_function validation_step);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // TITAN_RUNTIME_TITANRT_H
