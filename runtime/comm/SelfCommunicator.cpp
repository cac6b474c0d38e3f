//===- SelfCommunicator.cpp - the collectives of a group of one -----------===//

#include "comm/SelfCommunicator.h"

#include "comm/CommChecks.h"

#include <cstring>

namespace titan::rt {

namespace {

/// Copies `bytes` bytes unless `in` already is `out`.
void copy(const void *in, void *out, int64_t bytes) {
  if (in != out && bytes > 0)
    std::memmove(out, in, static_cast<size_t>(bytes));
}

} // namespace

Status SelfCommunicator::allGather(const void *in, void *out, int64_t bytes) {
  TITANRT_RETURN_IF_ERROR(checkSize(where("all_gather"), "bytes", bytes));
  copy(in, out, bytes);
  return Status::success();
}

Status SelfCommunicator::reduceScatter(titanrt_dtype dtype,
                                       titanrt_reduce reduce, const void *in,
                                       void *out, int64_t count) {
  Reduction reduction;
  TITANRT_RETURN_IF_ERROR(
      checkReduction(where("reduce_scatter"), dtype, reduce, reduction));
  TITANRT_RETURN_IF_ERROR(checkSize(where("reduce_scatter"), "count", count));
  // The reduction of one member is its value (its average too).
  copy(in, out, count * static_cast<int64_t>(reduction.elementSize));
  return Status::success();
}

Status SelfCommunicator::allReduce(titanrt_dtype dtype, titanrt_reduce reduce,
                                   const void *in, void *out, int64_t count) {
  Reduction reduction;
  TITANRT_RETURN_IF_ERROR(
      checkReduction(where("all_reduce"), dtype, reduce, reduction));
  TITANRT_RETURN_IF_ERROR(checkSize(where("all_reduce"), "count", count));
  copy(in, out, count * static_cast<int64_t>(reduction.elementSize));
  return Status::success();
}

Status SelfCommunicator::allToAll(const void *in, void *out,
                                  int64_t bytesPerPeer) {
  TITANRT_RETURN_IF_ERROR(
      checkSize(where("all_to_all"), "bytes per peer", bytesPerPeer));
  copy(in, out, bytesPerPeer);
  return Status::success();
}

Status SelfCommunicator::broadcast(int64_t root, const void *in, void *out,
                                   int64_t bytes) {
  TITANRT_RETURN_IF_ERROR(checkRoot(where("broadcast"), root, 1));
  TITANRT_RETURN_IF_ERROR(checkSize(where("broadcast"), "bytes", bytes));
  copy(in, out, bytes);
  return Status::success();
}

Status SelfCommunicator::send(int64_t peer, int64_t tag, const void *in,
                              int64_t bytes) {
  return checkPeer(where("send"), peer, tag, 0, 1);
}

Status SelfCommunicator::recv(int64_t peer, int64_t tag, void *out,
                              int64_t bytes) {
  return checkPeer(where("recv"), peer, tag, 0, 1);
}

} // namespace titan::rt
