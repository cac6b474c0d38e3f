//===- CudnnGraph.cpp - operation graphs of cuDNN's graph API -------------===//

#include "cuda/CudnnGraph.h"

using namespace titan::rt;
using namespace titan::rt::cuda;

cudnnBackendDescriptor_t CudnnGraphBuilder::tensor(int64_t uid,
                                                   cudnnDataType_t type,
                                                   const CudnnShape &shape,
                                                   bool isVirtual) {
  cudnnBackendDescriptor_t desc =
      make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, tensors, "a tensor descriptor");
  bool virtualFlag = isVirtual;
  int64_t alignment = kCudnnAlignment;
  set(desc, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  set(desc, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
      int64_t(shape.dims.size()), shape.dims.data());
  set(desc, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
      int64_t(shape.strides.size()), shape.strides.data());
  set(desc, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(desc, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  set(desc, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virtualFlag);
  finalize(desc, "a tensor");
  return desc;
}

cudnnBackendDescriptor_t
CudnnGraphBuilder::intermediate(cudnnDataType_t type, const CudnnShape &shape) {
  return tensor(nextVirtual++, type, shape, /*isVirtual=*/true);
}

cudnnBackendDescriptor_t
CudnnGraphBuilder::apply(cudnnPointwiseMode_t mode, cudnnDataType_t type,
                         const CudnnShape &shape, cudnnBackendDescriptor_t x,
                         cudnnBackendDescriptor_t b, cudnnDataType_t precision,
                         int64_t axis) {
  cudnnBackendDescriptor_t y = intermediate(type, shape);
  pointwise(mode, x, b, nullptr, y, precision, axis);
  return y;
}

cudnnBackendDescriptor_t CudnnGraphBuilder::product(cudnnBackendDescriptor_t a,
                                                    cudnnBackendDescriptor_t b,
                                                    cudnnDataType_t type,
                                                    const CudnnShape &shape) {
  cudnnBackendDescriptor_t c = intermediate(type, shape);
  matmul(a, b, c);
  return c;
}

cudnnBackendDescriptor_t CudnnGraphBuilder::reduce(cudnnReduceTensorOp_t reduce,
                                                   cudnnBackendDescriptor_t x,
                                                   cudnnDataType_t type,
                                                   const CudnnShape &shape) {
  cudnnBackendDescriptor_t y = intermediate(type, shape);
  reduction(reduce, x, y);
  return y;
}

cudnnBackendDescriptor_t CudnnGraphBuilder::view(cudnnBackendDescriptor_t x,
                                                 cudnnDataType_t type,
                                                 const CudnnShape &shape) {
  cudnnBackendDescriptor_t y = intermediate(type, shape);
  reshape(x, y);
  return y;
}

cudnnBackendDescriptor_t CudnnGraphBuilder::scalar(int64_t uid) {
  cudnnBackendDescriptor_t desc =
      make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, tensors, "a scalar descriptor");
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int64_t ones[4] = {1, 1, 1, 1}, alignment = kCudnnAlignment;
  bool byValue = true;
  set(desc, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  set(desc, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, ones);
  set(desc, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, ones);
  set(desc, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(desc, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  set(desc, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byValue);
  finalize(desc, "a scalar");
  return desc;
}

void CudnnGraphBuilder::pointwise(cudnnPointwiseMode_t mode,
                                  cudnnBackendDescriptor_t x,
                                  cudnnBackendDescriptor_t b,
                                  cudnnBackendDescriptor_t t,
                                  cudnnBackendDescriptor_t y,
                                  cudnnDataType_t precision, int64_t axis) {
  cudnnBackendDescriptor_t desc =
      make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, descriptors, "a pointwise mode");
  set(desc, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(desc, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1,
      &precision);
  if (axis >= 0)
    set(desc, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  finalize(desc, "a pointwise mode");
  cudnnBackendDescriptor_t op =
      make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, operations,
           "a pointwise operation");
  setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc);
  setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b)
    setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  if (t)
    setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
  setDescriptor(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  finalize(op, "a pointwise operation");
}

void CudnnGraphBuilder::matmul(cudnnBackendDescriptor_t a,
                               cudnnBackendDescriptor_t b,
                               cudnnBackendDescriptor_t c) {
  cudnnBackendDescriptor_t desc =
      make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, descriptors, "a matmul");
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  set(desc, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  finalize(desc, "a matmul");
  cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
                                     operations, "a matmul operation");
  setDescriptor(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  setDescriptor(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
  setDescriptor(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
  setDescriptor(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, desc);
  finalize(op, "a matmul operation");
}

void CudnnGraphBuilder::reduction(cudnnReduceTensorOp_t reduce,
                                  cudnnBackendDescriptor_t x,
                                  cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t desc =
      make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, descriptors, "a reduction");
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  set(desc, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
      1, &reduce);
  set(desc, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  finalize(desc, "a reduction");
  cudnnBackendDescriptor_t op =
      make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, operations,
           "a reduction operation");
  setDescriptor(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc);
  setDescriptor(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
  setDescriptor(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
  finalize(op, "a reduction operation");
}

void CudnnGraphBuilder::reshape(cudnnBackendDescriptor_t x,
                                cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
                                     operations, "a reshape operation");
  setDescriptor(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
  setDescriptor(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
  finalize(op, "a reshape operation");
}

Status CudnnGraphBuilder::finish(cudnnHandle_t handle, CudnnDescriptor &graph) {
  if (!status.ok())
    return status;
  TITANRT_RETURN_IF_ERROR(
      graph.create(library, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const CudnnDescriptor &op : operations)
    ops.push_back(op.get());
  if (handle)
    TITANRT_RETURN_IF_ERROR(library.check(
        library.setAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                             CUDNN_TYPE_HANDLE, 1, &handle),
        "cudnnBackendSetAttribute", "the attention graph's handle"));
  TITANRT_RETURN_IF_ERROR(library.check(
      library.setAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS,
                           CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()),
                           ops.data()),
      "cudnnBackendSetAttribute", "the attention graph's operations"));
  return library.check(library.finalize(graph.get()), "cudnnBackendFinalize",
                       "the attention graph");
}

cudnnBackendDescriptor_t
CudnnGraphBuilder::make(cudnnBackendDescriptorType_t type,
                        std::vector<CudnnDescriptor> &pool, const char *what) {
  if (!status.ok())
    return nullptr;
  CudnnDescriptor desc;
  status = desc.create(library, type);
  if (!status.ok()) {
    status = Status(status.getCode(),
                    std::string(what) + ": " + status.getMessage());
    return nullptr;
  }
  pool.push_back(std::move(desc));
  return pool.back().get();
}

void CudnnGraphBuilder::set(cudnnBackendDescriptor_t desc,
                            cudnnBackendAttributeName_t name,
                            cudnnBackendAttributeType_t type, int64_t count,
                            const void *values) {
  if (!status.ok() || !desc)
    return;
  status = library.check(library.setAttribute(desc, name, type, count, values),
                         "cudnnBackendSetAttribute",
                         "attribute " + std::to_string(int(name)));
}

void CudnnGraphBuilder::setDescriptor(cudnnBackendDescriptor_t desc,
                                      cudnnBackendAttributeName_t name,
                                      cudnnBackendDescriptor_t value) {
  set(desc, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
}

void CudnnGraphBuilder::finalize(cudnnBackendDescriptor_t desc,
                                 const char *what) {
  if (!status.ok() || !desc)
    return;
  status = library.check(library.finalize(desc), "cudnnBackendFinalize", what);
}

namespace {

/// The engine configurations cuDNN's heuristics (`mode`) rank for `graph`,
/// best first.
Status rankEngines(const CudnnLibrary &library, const CudnnDescriptor &graph,
                   cudnnBackendHeurMode_t mode,
                   const CudnnDescriptor *deviceProperties,
                   std::vector<CudnnDescriptor> &configs) {
  CudnnDescriptor heuristics;
  TITANRT_RETURN_IF_ERROR(
      heuristics.create(library, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  TITANRT_RETURN_IF_ERROR(library.check(
      library.setAttribute(heuristics.get(),
                           CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, graph.address()),
      "cudnnBackendSetAttribute", "the heuristics' graph"));
  TITANRT_RETURN_IF_ERROR(library.check(
      library.setAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE,
                           CUDNN_TYPE_HEUR_MODE, 1, &mode),
      "cudnnBackendSetAttribute", "the heuristics' mode"));
  if (deviceProperties)
    TITANRT_RETURN_IF_ERROR(library.check(
        library.setAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_DEVICEPROP,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                             deviceProperties->address()),
        "cudnnBackendSetAttribute", "the heuristics' device"));
  TITANRT_RETURN_IF_ERROR(library.check(library.finalize(heuristics.get()),
                                        "cudnnBackendFinalize",
                                        "the engine heuristics"));
  int64_t count = 0;
  TITANRT_RETURN_IF_ERROR(library.check(
      library.getAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
      "cudnnBackendGetAttribute", "the number of engine configurations"));
  configs.clear();
  configs.resize(size_t(count));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (CudnnDescriptor &config : configs) {
    TITANRT_RETURN_IF_ERROR(
        config.create(library, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(config.get());
  }
  int64_t returned = 0;
  TITANRT_RETURN_IF_ERROR(library.check(
      library.getAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                           CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                           raw.data()),
      "cudnnBackendGetAttribute", "the engine configurations"));
  configs.resize(size_t(returned));
  return Status::success();
}

} // namespace

Status cuda::planCudnnGraph(const CudnnLibrary &library,
                            const CudnnDescriptor &graph, cudnnHandle_t handle,
                            const CudnnDescriptor *deviceProperties,
                            CudnnDescriptor &plan, int64_t &workspaceBytes) {
  Status failure =
      Status::unsupported("cuDNN's heuristics offer no engine for the graph");
  for (cudnnBackendHeurMode_t mode :
       {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<CudnnDescriptor> configs;
    Status ranked =
        rankEngines(library, graph, mode, deviceProperties, configs);
    if (!ranked.ok()) {
      failure = ranked;
      continue;
    }
    for (CudnnDescriptor &config : configs) {
      CudnnDescriptor candidate;
      TITANRT_RETURN_IF_ERROR(
          candidate.create(library, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
      if (handle)
        TITANRT_RETURN_IF_ERROR(
            library.check(library.setAttribute(candidate.get(),
                                               CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                               CUDNN_TYPE_HANDLE, 1, &handle),
                          "cudnnBackendSetAttribute", "the plan's handle"));
      TITANRT_RETURN_IF_ERROR(library.check(
          library.setAttribute(
              candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, config.address()),
          "cudnnBackendSetAttribute", "the plan's engine configuration"));
      if (deviceProperties)
        TITANRT_RETURN_IF_ERROR(library.check(
            library.setAttribute(
                candidate.get(), CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, deviceProperties->address()),
            "cudnnBackendSetAttribute", "the plan's device"));
      Status finalized =
          library.check(library.finalize(candidate.get()),
                        "cudnnBackendFinalize", "the execution plan");
      if (!finalized.ok()) {
        failure = finalized;
        continue;
      }
      int64_t returned = 0;
      TITANRT_RETURN_IF_ERROR(library.check(
          library.getAttribute(candidate.get(),
                               CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                               CUDNN_TYPE_INT64, 1, &returned, &workspaceBytes),
          "cudnnBackendGetAttribute", "the plan's workspace size"));
      plan = std::move(candidate);
      return Status::success();
    }
  }
  return failure;
}

Status cuda::describeCudnnDevice(const CudnnLibrary &library,
                                 const std::string &json,
                                 CudnnDescriptor &device) {
  TITANRT_RETURN_IF_ERROR(
      device.create(library, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR));
  TITANRT_RETURN_IF_ERROR(library.check(
      library.setAttribute(device.get(),
                           CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION,
                           CUDNN_TYPE_CHAR, int64_t(json.size()), json.data()),
      "cudnnBackendSetAttribute", "the device's properties"));
  return library.check(library.finalize(device.get()), "cudnnBackendFinalize",
                       "the device's properties");
}
