//===- PipelineTransfers.h - the pipeline ranks' messages --------*- C++
//-*-===//
//
// The programs of a pipeline's ranks exchange activations, their gradients,
// the loss and shared parameters with `titan.send` and `titan.recv` over
// the "pp" axis. The runtimes run them differently:
//
// - Gloo never blocks a send, and matches a receive with the oldest message
//   of its sender and tag;
// - NCCL has no tags: it matches a receive with the sender's oldest
//   message. titan's NCCL communicator holds a rank's sends until its next
//   receive and runs them with it in one group (its last sends in a group
//   of their own at the step's end); the rank's stream runs one group at a
//   time until each of its transfers completed, and a transfer completes
//   only together with the one it matches, in the group its peer runs
//   (docs/nccl.md).
//
// orderPipelineTransfers orders the ranks' transfers so that both run them
// to their end; verifyPipelineTransfers checks it (titan-compile, over all
// pipeline ranks' programs): a mismatch, which would leave the job waiting
// for a message until its timeout (or NCCL delivering one tensor for
// another), is a compile error that names the ops.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_PIPELINETRANSFERS_H
#define TITAN_DIALECT_PIPELINETRANSFERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::titan {

/// One `titan.send` or `titan.recv` of a pipeline rank's program.
struct PipelineTransfer {
  bool isSend = false;
  /// The pipeline rank sent to or received from, and the message's tag.
  int64_t peer = 0;
  int64_t tag = 0;
  /// The tensor type sent or expected.
  Type type;
  Location loc;
  /// The op, while its program exists.
  Operation *op = nullptr;
};

/// The transfers between pipeline ranks of `step` (a pipeline rank's
/// @train_step), in the order the rank runs them. Fails, with an error at
/// the op, on a transfer inside a nested region (an order the check cannot
/// follow).
FailureOr<SmallVector<PipelineTransfer, 0>>
readPipelineTransfers(func::FuncOp step);

/// Checks that the programs of pipeline ranks 0 .. n - 1 (`ranks[r]`: rank
/// r's transfers in order) run to their end on Gloo, and with `nccl` on
/// NCCL too: every peer is another rank of the pipeline and every tag fits
/// the runtimes' 32 bits; every receive's message, the oldest its peer
/// sent it and it did not receive, has the tag and type it expects; every
/// message is received; and (`nccl`) NCCL's groups do not wait for each
/// other. Emits an error naming the first mismatch (with notes at the ops
/// involved) and fails otherwise.
LogicalResult
verifyPipelineTransfers(ArrayRef<SmallVector<PipelineTransfer, 0>> ranks,
                        bool nccl);

/// Moves the transfers of the pipeline ranks' programs (`steps[r]`: rank
/// r's @train_step, straight-line, every rank's) so that they run on Gloo
/// and NCCL, as each rank's program builder needs them, alike on every
/// rank: a receive up to right before the one of its sender's next message
/// where it came after it (each rank receives a peer's messages in the
/// order the peer sends them; the rank waited there for the later message
/// anyway), then, while NCCL's groups would wait for each other, a waiting
/// group's send down past the group's receive, with the later sends of the
/// group to the same peer. Leaves what it cannot order for
/// verifyPipelineTransfers to report.
void orderPipelineTransfers(ArrayRef<func::FuncOp> steps);

} // namespace mlir::titan

#endif // TITAN_DIALECT_PIPELINETRANSFERS_H
