//===- BucketCollectives.cpp - one collective per unit --------------------===//
//
// Implements titan-bucket-collectives (see passes/Passes.td for the
// contract).
//
//===----------------------------------------------------------------------===//

#include "NormalizeCollectives.h"
#include "PassDevice.h"
#include "Segments.h"

#include "titan/CostModel/CollectiveTime.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::titan {
#define GEN_PASS_DEF_BUCKETCOLLECTIVESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// A collective the pass may put into a bucket.
struct Candidate {
  Operation *op = nullptr;
  /// Where it stands, the position after its operand's def (0 for an
  /// argument) and the position of its first reader.
  int64_t position = 0, ready = 0, need = 0;
  /// The segment it belongs to: its first reader's for a gather, its
  /// operand's for a reduction.
  int64_t unit = 0;
};

/// Collectives that become one.
struct Bucket {
  SmallVector<Operation *> members;
  /// Ops computing the members' operands that move to the bucket.
  SmallVector<Operation *> producers;
  /// The bucket stands before the op at this position.
  int64_t issue = 0;
  /// The earliest first reader of a member's result.
  int64_t need = 0;
  int64_t bytes = 0;
};

/// Whether `op` is a gather: issued where its result is needed (a result
/// larger than its operand); reductions are issued where their operand is
/// there.
bool isGather(Operation *op) { return isa<AllGatherOp>(op); }

/// The operand of `op` with the reshapes in front of it looked through.
Value skipReshapes(Value value) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>())
    value = reshape.getInput();
  return value;
}

/// Whether the pass may bucket `op`.
bool isBucketable(Operation *op) {
  if (!isa<AllGatherOp, ReduceScatterOp, AllReduceOp>(op) ||
      op->hasAttr(TitanDialect::kAsyncAttrName) || isPipelineTransfer(op) ||
      op->getResult(0).use_empty())
    return false;
  // On contiguous chunks, as titan-normalize-collectives leaves them.
  Value input = op->getOperand(0);
  auto type = cast<RankedTensorType>(input.getType());
  if (!type.hasStaticShape())
    return false;
  if (auto gather = dyn_cast<AllGatherOp>(op);
      gather && !chunksAreContiguous(type.getShape(), gather.getGatherDim()))
    return false;
  if (auto scatter = dyn_cast<ReduceScatterOp>(op);
      scatter && !chunksAreContiguous(type.getShape(), scatter.getScatterDim()))
    return false;
  Operation *source = skipReshapes(input).getDefiningOp();
  return !isa_and_nonnull<CollectiveOpInterface>(source);
}

/// Whether `a` and `b` can be one collective: the same kind over the same
/// group, reduction and element type, both or neither recomputed clones, of
/// the same microbatch.
bool areCompatible(Operation *a, Operation *b) {
  auto type = [](Operation *op) {
    return cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
  };
  return a->getName() == b->getName() &&
         a->getAttr("mesh") == b->getAttr("mesh") &&
         a->getAttr("axes") == b->getAttr("axes") &&
         a->getAttr("reduce") == b->getAttr("reduce") && type(a) == type(b) &&
         a->hasAttr(TitanDialect::kRecomputeAttrName) ==
             b->hasAttr(TitanDialect::kRecomputeAttrName) &&
         a->getAttr(TitanDialect::kMicrobatchAttrName) ==
             b->getAttr(TitanDialect::kMicrobatchAttrName);
}

/// The all_reduce that reads `op`'s result through reshapes read by
/// nothing else (HSDP's reduction over the replicas of a gradient), with
/// those reshapes appended to `views`, or null.
AllReduceOp getChainedAllReduce(Operation *op,
                                SmallVectorImpl<Operation *> &views) {
  Value value = op->getResult(0);
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (auto reduce = dyn_cast<AllReduceOp>(user))
      return reduce->hasAttr(TitanDialect::kAsyncAttrName) ? AllReduceOp()
                                                           : reduce;
    if (!isa<ReshapeOp>(user))
      return AllReduceOp();
    views.push_back(user);
    value = user->getResult(0);
  }
  return AllReduceOp();
}

class BucketCollectivesPass
    : public titan::impl::BucketCollectivesPassBase<BucketCollectivesPass> {
public:
  using BucketCollectivesPassBase::BucketCollectivesPassBase;

  void runOnOperation() override {
    auto function = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!function || !function.getBody().hasOneBlock())
      return;
    Segments segments(function.getBody().front());
    SmallVector<Bucket> buckets = formBuckets(segments);
    if (!deviceName.empty()) {
      FailureOr<DeviceDescription> device = loadPassDevice(
          function.getLoc(), "titan-bucket-collectives", deviceName);
      if (failed(device))
        return signalPassFailure();
      llvm::erase_if(buckets, [&](const Bucket &bucket) {
        return !paysOff(bucket, *device);
      });
    }
    // Where each bucket stands: the op at its position, or the first after
    // it that no bucket moves (moved producers stand elsewhere then).
    llvm::SmallPtrSet<Operation *, 16> moving;
    for (const Bucket &bucket : buckets)
      moving.insert(bucket.producers.begin(), bucket.producers.end());
    SmallVector<Operation *> anchors;
    for (const Bucket &bucket : buckets) {
      Operation *anchor = segments.getOp(bucket.issue);
      while (moving.contains(anchor))
        anchor = anchor->getNextNode();
      anchors.push_back(anchor);
    }
    SmallVector<Operation *> erased;
    for (auto [bucket, anchor] : llvm::zip(buckets, anchors))
      materialize(bucket, anchor, segments, erased);
    for (Operation *op : erased)
      op->erase();
  }

private:
  /// Whether the cost model of `device` predicts `bucket` faster than its
  /// members: the seconds of the members' collectives less those of one
  /// collective of all their bytes, against copying its operands in and
  /// its results out.
  bool paysOff(const Bucket &bucket, const DeviceDescription &device);
  /// The buckets of two or more collectives, in program order of their
  /// first member.
  SmallVector<Bucket> formBuckets(const Segments &segments);
  /// Grows the buckets of `group` (compatible collectives of one unit,
  /// ordered by where they can be issued) into `buckets`.
  void grow(ArrayRef<Candidate> group, const Segments &segments,
            SmallVectorImpl<Bucket> &buckets);
  /// Whether `bytes` more fit a bucket of `bucket` bytes.
  bool fits(int64_t bucket, int64_t bytes) const {
    return maxBytes <= 0 || bucket + bytes <= maxBytes;
  }
  /// Builds the bucket's collective and the members' results cut from it;
  /// appends the ops to erase once every bucket is built.
  void materialize(const Bucket &bucket, Operation *anchor,
                   const Segments &segments,
                   SmallVectorImpl<Operation *> &erased);
};

SmallVector<Bucket>
BucketCollectivesPass::formBuckets(const Segments &segments) {
  // Compatible candidates of one unit, in program order.
  SmallVector<SmallVector<Candidate>> groups;
  for (int64_t at = 0; at < segments.getNumOps(); ++at) {
    Operation *op = segments.getOp(at);
    if (!isBucketable(op))
      continue;
    Candidate candidate;
    candidate.op = op;
    candidate.position = at;
    candidate.need = segments.getNumOps();
    for (Operation *user : op->getResult(0).getUsers())
      candidate.need = std::min(candidate.need, segments.getPosition(user));
    if (Operation *def = op->getOperand(0).getDefiningOp())
      candidate.ready = segments.getPosition(def) + 1;
    candidate.unit = segments.getSegment(
        isGather(op) ? candidate.need
                     : std::max<int64_t>(candidate.ready - 1, 0));
    // Only what can run behind other work, as parameters and gradients
    // can: a gather whose operand is there before its unit starts, a
    // reduction whose result is read after its unit ends. (Activations of
    // tensor, sequence or context parallelism are needed where computed.)
    SmallVector<Operation *> producers;
    int64_t start = segments.getStart(candidate.unit);
    bool deferrable =
        isGather(op)
            ? collectMovableProducers(op, start, segments, producers) <= start
            : candidate.need >= segments.getStart(candidate.unit + 1);
    if (!deferrable)
      continue;
    auto group = llvm::find_if(groups, [&](ArrayRef<Candidate> group) {
      return group.front().unit == candidate.unit &&
             areCompatible(group.front().op, op);
    });
    if (group == groups.end())
      groups.push_back({candidate});
    else
      group->push_back(candidate);
  }
  SmallVector<Bucket> buckets;
  for (MutableArrayRef<Candidate> group : groups) {
    // Reductions in the order their operands are there.
    if (!isGather(group.front().op))
      llvm::stable_sort(group, [](const Candidate &a, const Candidate &b) {
        return a.ready < b.ready;
      });
    grow(group, segments, buckets);
  }
  llvm::erase_if(
      buckets, [](const Bucket &bucket) { return bucket.members.size() < 2; });
  llvm::sort(buckets, [&](const Bucket &a, const Bucket &b) {
    return segments.getPosition(a.members.front()) <
           segments.getPosition(b.members.front());
  });
  return buckets;
}

bool BucketCollectivesPass::paysOff(const Bucket &bucket,
                                    const DeviceDescription &device) {
  Operation *front = bucket.members.front();
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      front, cast<FlatSymbolRefAttr>(front->getAttr("mesh")));
  const int64_t perNode =
      ranksPerNode ? int64_t(ranksPerNode) : device.ranksPerNode;
  double separate = 0, bytesSent = 0, copied = 0;
  const LinkDescription *link = nullptr;
  for (Operation *member : bucket.members) {
    auto collective = cast<CollectiveOpInterface>(member);
    CollectiveTime time =
        predictCollectiveTime(collective, mesh, device, perNode);
    separate += time.seconds;
    link = time.link;
    bytesSent += collective.getBytesSentPerRank();
    copied += double(getStaticByteSize(member->getOperand(0).getType()) +
                     getStaticByteSize(member->getResult(0).getType()));
  }
  if (!link)
    return false;
  auto collective = cast<CollectiveOpInterface>(front);
  const double together =
      predictCollectiveSeconds(*link, collective.getCollectiveKind(),
                               collective.getGroupSize(), bytesSent);
  return separate - together > predictCopySeconds(device, copied);
}

void BucketCollectivesPass::grow(ArrayRef<Candidate> group,
                                 const Segments &segments,
                                 SmallVectorImpl<Bucket> &buckets) {
  bool gathers = isGather(group.front().op);
  bool open = false;
  for (const Candidate &candidate : group) {
    int64_t bytes = getStaticByteSize(candidate.op->getOperand(0).getType());
    if (open && fits(buckets.back().bytes, bytes)) {
      Bucket &bucket = buckets.back();
      SmallVector<Operation *> producers;
      // A gather is issued where the first member stands: a later one
      // joins when its operand is there or computed by ops that can move
      // there. A reduction is issued once the last member's operand is
      // computed: a member joins when no member's result is read before.
      int64_t issue = std::max(bucket.issue, candidate.ready);
      int64_t need = std::min(bucket.need, candidate.need);
      bool joins =
          gathers ? collectMovableProducers(candidate.op, bucket.issue,
                                            segments, producers) <= bucket.issue
                  : need >= issue;
      if (joins) {
        bucket.members.push_back(candidate.op);
        bucket.producers.append(producers);
        if (!gathers)
          bucket.issue = issue;
        bucket.need = need;
        bucket.bytes += bytes;
        continue;
      }
    }
    Bucket bucket;
    bucket.members = {candidate.op};
    bucket.issue = gathers ? candidate.position : candidate.ready;
    bucket.need = candidate.need;
    bucket.bytes = bytes;
    buckets.push_back(std::move(bucket));
    open = true;
  }
}

void BucketCollectivesPass::materialize(const Bucket &bucket, Operation *anchor,
                                        const Segments &segments,
                                        SmallVectorImpl<Operation *> &erased) {
  // The bucket carries the location of the member that decides where it
  // stands (the first gather, the reduction computed last).
  Operation *decisive = bucket.members.front();
  if (!isGather(decisive))
    for (Operation *member : bucket.members)
      if (Operation *def = member->getOperand(0).getDefiningOp();
          def && segments.getPosition(def) + 1 == bucket.issue)
        decisive = member;
  for (Operation *producer : bucket.producers)
    producer->moveBefore(anchor);
  OpBuilder builder(anchor);
  TensorBuilder b(builder, decisive->getLoc());
  auto collective = cast<CollectiveOpInterface>(decisive);
  int64_t group = collective.getGroupSize();

  // The operands, flattened (a reduce-scatter's as [group, chunk]) and
  // concatenated; each member's offset in a rank's part of the bucket.
  SmallVector<Value> pieces;
  SmallVector<int64_t> offsets, parts;
  int64_t total = 0;
  bool scatters = isa<ReduceScatterOp>(decisive);
  for (Operation *member : bucket.members) {
    Value input = member->getOperand(0);
    int64_t elements = cast<RankedTensorType>(input.getType()).getNumElements();
    int64_t part = scatters ? elements / group : elements;
    pieces.push_back(scatters ? b.reshape(input, {group, part})
                              : b.reshape(input, {part}));
    offsets.push_back(total);
    parts.push_back(part);
    total += part;
  }
  Value joined = b.concat(pieces, scatters ? 1 : 0);
  if (scatters)
    joined = b.reshape(joined, {group * total});
  Type element = cast<RankedTensorType>(joined.getType()).getElementType();
  int64_t resultSize = isGather(decisive) ? group * total : total;
  Operation *combined = builder.clone(*decisive);
  combined->setOperand(0, joined);
  combined->getResult(0).setType(RankedTensorType::get({resultSize}, element));
  if (auto gather = dyn_cast<AllGatherOp>(combined))
    gather.setGatherDim(0);
  if (auto scatter = dyn_cast<ReduceScatterOp>(combined))
    scatter.setScatterDim(0);
  Value result = combined->getResult(0);

  // HSDP: the all_reduces of every member's result (through reshapes)
  // become one of the bucket's.
  SmallVector<Operation *> chained;
  SmallVector<Operation *> chainViews;
  if (scatters)
    for (Operation *member : bucket.members) {
      AllReduceOp reduce = getChainedAllReduce(member, chainViews);
      if (!reduce || (!chained.empty() && !areCompatible(chained[0], reduce)))
        break;
      chained.push_back(reduce);
    }
  bool folds = chained.size() == bucket.members.size();
  if (folds) {
    Operation *reduce = builder.clone(*chained.front());
    reduce->setOperand(0, result);
    reduce->getResult(0).setType(result.getType());
    reduce->setLoc(decisive->getLoc());
    result = reduce->getResult(0);
  }
  if (isGather(decisive))
    result = b.reshape(result, {group, total});

  // Each member's result, cut right before its first reader.
  for (auto [index, member] : llvm::enumerate(bucket.members)) {
    Operation *replaced = folds ? chained[index] : member;
    Value old = replaced->getResult(0);
    Operation *first = nullptr;
    for (Operation *user : old.getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
    OpBuilder cutBuilder(first);
    TensorBuilder cut(cutBuilder, member->getLoc());
    Value piece = cut.slice(result, isGather(decisive) ? 1 : 0, offsets[index],
                            offsets[index] + parts[index], 1);
    old.replaceAllUsesWith(
        cut.reshape(piece, cast<RankedTensorType>(old.getType()).getShape()));
    erased.push_back(replaced);
  }
  if (folds) {
    // Users first: the reshapes between each member and its all_reduce.
    for (Operation *view : llvm::reverse(chainViews))
      erased.push_back(view);
    erased.append(bucket.members.begin(), bucket.members.end());
  }
}

} // namespace
