//===- CudnnAttention.h - attention through cuDNN's fused SDPA --*- C++ -*-===//
//
// titanrt_attention and titanrt_attention_grad in bf16 through cuDNN's
// fused flash attention: each is one operation graph of cuDNN's graph API
// in the form its SDPA engines recognize (the forward: Q K^T, the scale,
// the causal mask, a softmax that also writes each row's log-sum-exp, then
// P V; the backward: rowsum(dO * O), the probabilities recomputed from the
// forward's log-sum-exp, dV = P^T dO, dS = P (dO V^T - rowsum) scale,
// dK = dS^T Q, dQ = dS K accumulated in f32), planned once per shape and
// run on the backend's compute stream.
//
// The layouts are titan's: q and out [batch, q_heads, seq, head_dim], k
// and v [batch, kv_heads, seq, head_dim] (query head h reads KV head
// h / (q_heads / kv_heads)), lse f32 [batch, q_heads, seq] with the
// natural log-sum-exp of each row's visible scaled scores, exactly what
// titan's kernels write, so a forward of one and a backward of the other
// agree. The backward keeps rowsum(dO * O) in the workspace the compiler
// plans for titanrt_attention_grad (one f32 per query row) and its f32 dQ
// accumulator in a buffer of its own next to cuDNN's workspace.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_CUDNNATTENTION_H
#define TITAN_RUNTIME_CUDA_CUDNNATTENTION_H

#include "cuda/CudnnLibrary.h"
#include "cuda/Device.h"
#include "cuda/KernelTypes.h"

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace titan::rt::cuda {

/// A planned graph: the execution plan, the descriptors it was built from,
/// and what it needs at run time.
struct CudnnAttentionPlan;

/// Plans `pass` of a bf16 attention of `shape` for the device that
/// `deviceJson` describes (cuDNN's JSON form of a device's properties,
/// CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION), without a handle or a GPU:
/// cuDNN's heuristics pick the engines and the first that compiles the
/// graph is taken. Success means cuDNN has an engine for the graph on that
/// device. On a machine whose CUDA driver cannot load the kernel (no GPU)
/// the compiled plan fails at that last step with
/// CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER, after every check of the
/// graph has passed; the unit tests use this to check the graphs here.
Status planAttentionForDevice(const CudnnLibrary &library, AttentionPass pass,
                              const AttentionShape &shape,
                              const std::string &deviceJson);

/// cuDNN's attention on one stream: a handle, the plans made so far (one
/// per pass and shape, also those cuDNN has none for, so a shape is tried
/// once) and the workspace. Not thread-safe: one per rank.
class CudnnAttention {
public:
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  /// Loads cuDNN and creates a handle on the current device whose work
  /// goes to `stream`.
  static Status create(std::unique_ptr<CudnnAttention> &attention,
                       cudaStream_t stream);

  /// Plans `pass` for `shape` (bf16) unless that was done before: success
  /// if cuDNN has a plan for it, else why not (the same Status every time).
  Status prepare(AttentionPass pass, const AttentionShape &shape);

  /// titanrt_attention in bf16 (prepare(Forward, shape) first).
  Status forward(const AttentionShape &shape, const void *q, const void *k,
                 const void *v, void *out, float *lse);
  /// titanrt_attention_grad in bf16 (prepare(Backward, shape) first);
  /// `workspace` holds titanrt_attention_grad_workspace_bytes.
  Status backward(const AttentionShape &shape, const void *q, const void *k,
                  const void *v, const void *out, const void *grad,
                  const float *lse, void *dq, void *dk, void *dv,
                  void *workspace);

  /// The loaded library.
  const CudnnLibrary &getLibrary() const { return *library; }

private:
  CudnnAttention() = default;

  /// A plan's key: the pass and the shape's extents (the scale is a value
  /// given at run time).
  using Key =
      std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;
  static Key keyOf(AttentionPass pass, const AttentionShape &shape);

  /// Grows the workspace to `bytes` (it never shrinks).
  Status reserveWorkspace(int64_t bytes);

  const CudnnLibrary *library = nullptr;
  cudnnHandle_t handle = nullptr;
  /// The stream the handle's work goes to.
  cudaStream_t stream = nullptr;
  std::map<Key, std::unique_ptr<CudnnAttentionPlan>> plans;
  std::map<Key, Status> failures;
  DeviceBuffer workspace;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_CUDNNATTENTION_H
