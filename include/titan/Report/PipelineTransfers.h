//===- PipelineTransfers.h - do the pipeline ranks' messages match -*- C++
//-*-===//
//
// The programs of a pipeline's ranks exchange activations, their gradients,
// the loss and shared parameters with `titan.send` and `titan.recv` over
// the "pp" axis. The runtimes never block a send; Gloo matches a receive
// with the oldest message of its sender and tag, NCCL (which has no tags)
// with the oldest message of its sender. The programs therefore run to
// their end on both when every receive finds, first among the messages
// its sender has sent it and it has not received, one of its tag and
// type, and every message is received. titan-compile checks this over all
// pipeline ranks' programs before it writes them: a mismatch, which would
// leave the job waiting for a message until its timeout (or NCCL
// delivering the wrong tensor), is a compile error that names the ops.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_REPORT_PIPELINETRANSFERS_H
#define TITAN_REPORT_PIPELINETRANSFERS_H

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
};

/// The transfers between pipeline ranks of `step` (a pipeline rank's
/// @train_step), in the order the rank runs them. Fails, with an error at
/// the op, on a transfer inside a nested region (an order the check cannot
/// follow).
FailureOr<SmallVector<PipelineTransfer, 0>>
readPipelineTransfers(func::FuncOp step);

/// Checks that the programs of pipeline ranks 0 .. n - 1 (`ranks[r]`: rank
/// r's transfers in order) run to their end when sends never block and a
/// receive takes the oldest message its peer sent it: every peer is
/// another rank of the pipeline and every tag fits the runtimes' 32 bits,
/// every receive's message has the tag and type it expects, and every
/// message is received. Emits an error naming the first mismatch (with
/// notes at the ops involved) and fails otherwise.
LogicalResult
verifyPipelineTransfers(ArrayRef<SmallVector<PipelineTransfer, 0>> ranks);

} // namespace mlir::titan

#endif // TITAN_REPORT_PIPELINETRANSFERS_H
