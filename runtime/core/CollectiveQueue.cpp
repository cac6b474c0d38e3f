//===- CollectiveQueue.cpp - one call of a communicator as data -----------===//

#include "core/CollectiveQueue.h"

namespace titan::rt {

bool CollectiveCall::canBeAsynchronous() const {
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllReduce:
  case CollectiveKind::AllToAll:
  case CollectiveKind::Broadcast:
    return true;
  case CollectiveKind::Barrier:
  case CollectiveKind::Send:
  case CollectiveKind::Recv:
    return false;
  }
  return false;
}

int64_t CollectiveCall::getTracedBytes() const {
  if (kind == CollectiveKind::AllReduce ||
      kind == CollectiveKind::ReduceScatter)
    return size * static_cast<int64_t>(dtypeSize(dtype));
  return size;
}

Status CollectiveCall::run(Communicator &communicator) const {
  switch (kind) {
  case CollectiveKind::AllGather:
    return communicator.allGather(in, out, size);
  case CollectiveKind::ReduceScatter:
    return communicator.reduceScatter(dtype, reduce, in, out, size);
  case CollectiveKind::AllReduce:
    return communicator.allReduce(dtype, reduce, in, out, size);
  case CollectiveKind::AllToAll:
    return communicator.allToAll(in, out, size);
  case CollectiveKind::Broadcast:
    return communicator.broadcast(member, in, out, size);
  case CollectiveKind::Barrier:
    return communicator.barrier();
  case CollectiveKind::Send:
    return communicator.send(member, tag, in, size);
  case CollectiveKind::Recv:
    return communicator.recv(member, tag, out, size);
  }
  return Status::internal("unknown communication operation");
}

} // namespace titan::rt
