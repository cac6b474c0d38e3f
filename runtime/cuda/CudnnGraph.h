//===- CudnnGraph.h - operation graphs of cuDNN's graph API -----*- C++ -*-===//
//
// What the CUDA backend's cuDNN graphs (CudnnAttention.h) are built and
// planned with: a builder of tensors and operations over cuDNN's backend
// descriptors (every descriptor kept alive with the builder, the first
// failure kept and reported by finish()), and the planning of a finished
// graph: cuDNN's heuristics rank the engines, the first whose execution
// plan finalizes (compiles) is taken. Planning takes a handle on a GPU, or
// a described device (CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR) without one.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_CUDNNGRAPH_H
#define TITAN_RUNTIME_CUDA_CUDNNGRAPH_H

#include "cuda/CudnnLibrary.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace titan::rt::cuda {

/// cuDNN's alignment of every tensor the builder makes (the memory plan
/// aligns buffers to at least this; the backend checks the pointers before
/// choosing cuDNN).
constexpr int64_t kCudnnAlignment = 16;

/// The extents and strides of a tensor of a graph, outermost first.
struct CudnnShape {
  std::array<int64_t, 4> dims, strides;
};

/// Builds one operation graph from tensors and operations. The first
/// failure sticks: the calls after it do nothing and finish() returns it,
/// naming the step.
class CudnnGraphBuilder {
public:
  /// A builder whose virtual tensors take ids from `firstVirtualUid` on
  /// (the caller's bound tensors use ids below it).
  CudnnGraphBuilder(const CudnnLibrary &library, int64_t firstVirtualUid)
      : library(library), nextVirtual(firstVirtualUid) {}

  /// A tensor of `type` and `shape` that the variant pack binds to `uid`,
  /// or (`isVirtual`) one that lives only inside the fused kernel.
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t type,
                                  const CudnnShape &shape,
                                  bool isVirtual = false);

  /// A virtual tensor with the next free id.
  cudnnBackendDescriptor_t intermediate(cudnnDataType_t type,
                                        const CudnnShape &shape);

  /// An f32 scalar passed by value (a host pointer in the variant pack).
  cudnnBackendDescriptor_t scalar(int64_t uid);

  /// y = mode(x, b, t) elementwise (b and t broadcast; null when the mode
  /// takes fewer operands), computed in `precision`; `axis` for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                 cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                 cudnnBackendDescriptor_t y,
                 cudnnDataType_t precision = CUDNN_DATA_FLOAT,
                 int64_t axis = -1);

  /// c = a b over the last two dimensions (batched over the others), f32
  /// accumulation.
  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
              cudnnBackendDescriptor_t c);

  /// y = reduce(x) over the dimensions where y's extent is smaller.
  void reduction(cudnnReduceTensorOp_t reduce, cudnnBackendDescriptor_t x,
                 cudnnBackendDescriptor_t y);

  /// y is x seen with other dimensions and strides (a transpose).
  void reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y);

  /// The same operations into a new intermediate of `type` and `shape`,
  /// which they return: apply (pointwise), product (matmul), reduce
  /// (reduction) and view (reshape).
  cudnnBackendDescriptor_t apply(cudnnPointwiseMode_t mode,
                                 cudnnDataType_t type, const CudnnShape &shape,
                                 cudnnBackendDescriptor_t x,
                                 cudnnBackendDescriptor_t b = nullptr,
                                 cudnnDataType_t precision = CUDNN_DATA_FLOAT,
                                 int64_t axis = -1);
  cudnnBackendDescriptor_t product(cudnnBackendDescriptor_t a,
                                   cudnnBackendDescriptor_t b,
                                   cudnnDataType_t type,
                                   const CudnnShape &shape);
  cudnnBackendDescriptor_t reduce(cudnnReduceTensorOp_t reduce,
                                  cudnnBackendDescriptor_t x,
                                  cudnnDataType_t type,
                                  const CudnnShape &shape);
  cudnnBackendDescriptor_t view(cudnnBackendDescriptor_t x,
                                cudnnDataType_t type, const CudnnShape &shape);

  /// The operation graph of everything added (on `handle`, which may be
  /// null for planning without a GPU), or the first failure.
  Status finish(cudnnHandle_t handle, CudnnDescriptor &graph);

private:
  /// A new descriptor of `type` kept in `pool` (null after a failure).
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type,
                                std::vector<CudnnDescriptor> &pool,
                                const char *what);

  /// Sets attribute `name` of `desc` (nothing after a failure).
  void set(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const void *values);

  /// Sets attribute `name` of `desc` to the descriptor `value`.
  void setDescriptor(cudnnBackendDescriptor_t desc,
                     cudnnBackendAttributeName_t name,
                     cudnnBackendDescriptor_t value);

  /// Finalizes `desc` (`what` names it in a failure).
  void finalize(cudnnBackendDescriptor_t desc, const char *what);

  const CudnnLibrary &library;
  Status status;
  int64_t nextVirtual;
  std::vector<CudnnDescriptor> tensors, descriptors, operations;
};

/// The first engine configuration (cuDNN's heuristics mode A, then its
/// fallback list) whose execution plan for `graph` finalizes, and its
/// workspace; the last failure if none does. On `handle`, or (null
/// handle) for `deviceProperties`.
Status planCudnnGraph(const CudnnLibrary &library, const CudnnDescriptor &graph,
                      cudnnHandle_t handle,
                      const CudnnDescriptor *deviceProperties,
                      CudnnDescriptor &plan, int64_t &workspaceBytes);

/// The device that `json` describes (cuDNN's JSON form of a device's
/// properties, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION), for planning
/// without a GPU.
Status describeCudnnDevice(const CudnnLibrary &library, const std::string &json,
                           CudnnDescriptor &device);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_CUDNNGRAPH_H
