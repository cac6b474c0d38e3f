//===- FuseKernels.cpp - group fusible ops into kernels -------------------===//
//
// Implements titan-fuse-kernels (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Passes.h"

#include "ExpandAdamW.h"

#include "titan/Dialect/Provenance.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace mlir::titan {
#define GEN_PASS_DEF_FUSEKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The ops the runtime executes with its own kernels (runtime-ops).
struct RuntimeOps {
  bool rmsNorm = false;
  bool crossEntropy = false;
  bool adamW = false;
  bool squaredNorm = false;

  /// Whether `op` is one of them, of types the runtime functions take.
  bool contains(Operation *op) const;
};

} // namespace

bool RuntimeOps::contains(Operation *op) const {
  // The runtime's AdamW updates f32 or bf16 parameters and moments from f32
  // or bf16 gradients, and writes a bf16 copy of an f32 parameter if asked
  // to.
  if (auto adamw = dyn_cast<AdamWOp>(op)) {
    Value copy = adamw.getNewParamCopy();
    Type param = adamw.getParam().getType().getElementType();
    return adamW && (param.isF32() || param.isBF16()) &&
           (adamw.getGrad().getType().getElementType().isF32() ||
            adamw.getGrad().getType().getElementType().isBF16()) &&
           (!copy ||
            cast<RankedTensorType>(copy.getType()).getElementType().isBF16());
  }
  // The data's element type decides: the verifiers give RMSNorm's weight the
  // input's, labels are i64 or i32, and the loss of f32 or bf16 logits is
  // f32.
  bool named = (rmsNorm && isa<RmsNormOp, RmsNormGradOp>(op)) ||
               (crossEntropy && isa<CrossEntropyOp, CrossEntropyGradOp>(op));
  if (!named)
    return false;
  Type element =
      cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
  return element.isF32() || element.isBF16();
}

/// Ops the runtime executes itself: library calls (those of `runtimeOps`
/// too), communication (and the waits for asynchronous collectives), id
/// checks, and
/// reshapes (a view of a contiguous buffer; formGroups fuses those that
/// one group alone reads).
static bool isHostOp(Operation *op, const RuntimeOps &runtimeOps) {
  return isa<CollectiveOpInterface, MatmulOp, AttentionOp, AttentionGradOp,
             EmbeddingGradOp, ReshapeOp, AxisIndexOp, LaunchOp, WaitOp,
             SquaredNormOp, CheckIdsOp>(op) ||
         runtimeOps.contains(op);
}

/// Ops that go into kernels.
static bool isFusible(Operation *op, const RuntimeOps &runtimeOps) {
  return isa<TitanDialect>(op->getDialect()) && !isHostOp(op, runtimeOps) &&
         !isa<MeshOp, RedistributeOp>(op);
}

/// Ops whose result is a reduction of their input.
static bool isReduction(Operation *op) {
  return isa<ReduceSumOp, ReduceMaxOp, ReduceMeanOp>(op);
}

/// Ops that only create or move data: copied into every kernel that uses
/// them instead of being materialized once. A constant is copied only when
/// it is a splat (a dense constant would be duplicated in every kernel).
static bool isDuplicable(Operation *op) {
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    return dense && dense.isSplat();
  }
  return isa<IotaOp, BroadcastInDimOp, SliceOp>(op);
}

/// Whether elementwise `op` of a tensor, used by `numGroups` kernels and
/// nothing else, is cheaper recomputed in each of them than materialized by a
/// kernel of its own: it reads at most one operand of its shape (the others are
/// scalars or copied into the kernels), so each kernel reads that operand
/// instead of the op's result, and the op's own pass over memory (its
/// operand read and its result written once) is saved. That must outweigh
/// what the users read more when the operand is wider than the result (a
/// narrowing cast): numGroups * (operand - result) <= operand + result
/// bytes per element.
static bool isCheaperRecomputed(Operation *op, unsigned numGroups) {
  if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumResults() != 1)
    return false;
  // A scalar (AdamW's step sizes) costs nothing to materialize, and would
  // be recomputed for every element of its users.
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (result.getNumElements() <= 1)
    return false;
  Value read;
  for (Value operand : op->getOperands()) {
    auto type = cast<RankedTensorType>(operand.getType());
    // Broadcasts (of a scalar: the clipping coefficient), iotas and splats
    // read little or nothing.
    Operation *def = operand.getDefiningOp();
    if (type.getNumElements() <= 1 ||
        (def && isDuplicable(def) && !isa<SliceOp>(def)))
      continue;
    if (read)
      return false; // Two operands of its shape: more to read in each user.
    read = operand;
  }
  if (!read)
    return true;
  int64_t in = getElementByteWidth(
      cast<RankedTensorType>(read.getType()).getElementType());
  int64_t out = getElementByteWidth(result.getElementType());
  return int64_t(numGroups) * (in - out) <= in + out;
}

/// Makes each embedding of a cast table that reads at most half of its
/// rows gather them and cast them: its kernel would otherwise cast the
/// whole table to read a batch's rows (a parameter cast to bf16 under
/// mixed precision: for the Llama 3 ~1B proxy's 128256 x 2048 table, 1 GB
/// of f32 read and 525 MB of bf16 written per step for 2048 rows). The
/// cast stays for its other users (a tied output projection). Exact: a
/// cast is elementwise.
static void castGatheredRows(Block &block) {
  for (auto embedding :
       llvm::make_early_inc_range(block.getOps<EmbeddingOp>())) {
    auto cast = embedding.getTable().getDefiningOp<CastOp>();
    int64_t lookups = getStaticNumElements(embedding.getIds().getType());
    if (!cast || lookups == 0 ||
        2 * lookups > embedding.getTable().getType().getDimSize(0))
      continue;
    OpBuilder builder(embedding);
    Location loc = embedding.getLoc();
    Value table = cast.getInput();
    auto rowsType =
        embedding.getType().clone(cast.getInput().getType().getElementType());
    auto rows =
        EmbeddingOp::create(builder, loc, rowsType, table, embedding.getIds());
    auto widened = CastOp::create(builder, loc, embedding.getType(), rows);
    for (Operation *op : {rows.getOperation(), widened.getOperation()})
      op->setDiscardableAttrs(embedding->getDiscardableAttrDictionary());
    embedding.replaceAllUsesWith(widened.getResult());
    embedding.erase();
    if (cast->use_empty())
      cast.erase();
  }
}

namespace {

/// The fusion groups of one function.
struct Grouping {
  /// The group of each fusible op that is a member of one.
  DenseMap<Operation *, unsigned> groupOf;
  /// The members of each group; the first is the root (the last in program
  /// order), the others follow in reverse program order.
  SmallVector<SmallVector<Operation *>> members;
  /// For each duplicable op copied into kernels: the groups it is copied
  /// into.
  llvm::MapVector<Operation *, llvm::SmallSetVector<unsigned, 2>> copiedInto;
  /// Members other than the root that the function also returns: results of
  /// their group's kernel after the root's.
  llvm::SmallPtrSet<Operation *, 8> returned;
  /// The roots of sibling groups merged into another (mergeSiblingGroups):
  /// results of the kernel after the root's, read outside it.
  llvm::SmallSetVector<Operation *, 8> siblingRoots;
  /// The groups that took in a consumer (mergeEpilogues): their members
  /// are cloned in program order, the consumer's after the root.
  llvm::SmallDenseSet<unsigned, 8> withEpilogue;
};

/// Moves into the one other group of `userGroups` (the groups that read
/// `op`) each group that is only a cast of `op` the function returns and
/// nothing else reads (AdamW's f32 moments of a bf16 parameter, stored
/// narrowed while the update reads them in f32): that kernel narrows and
/// returns the value too, instead of a kernel that reads it again. Leaves
/// `userGroups` as the groups that read `op` then.
static void
absorbNarrowedStores(Grouping &grouping, Operation *op,
                     llvm::SmallSetVector<unsigned, 2> &userGroups) {
  auto isStore = [&](unsigned group) {
    ArrayRef<Operation *> members = grouping.members[group];
    auto store =
        members.size() == 1 ? dyn_cast<CastOp>(members.front()) : CastOp();
    return store && store.getInput().getDefiningOp() == op &&
           llvm::all_of(store->getUsers(), llvm::IsaPred<func::ReturnOp>);
  };
  SmallVector<unsigned> stores, others;
  for (unsigned group : userGroups)
    (isStore(group) ? stores : others).push_back(group);
  if (stores.empty() || others.size() != 1)
    return;
  unsigned into = others.front();
  for (unsigned group : stores) {
    Operation *store = grouping.members[group].front();
    grouping.groupOf[store] = into;
    grouping.members[into].push_back(store);
    grouping.returned.insert(store);
    grouping.members[group].clear();
  }
  // A store may follow the root: the kernel clones in program order.
  grouping.withEpilogue.insert(into);
  userGroups.clear();
  userGroups.insert(into);
}

/// Forms the groups of `block` (see the pass description).
Grouping formGroups(Block &block, const RuntimeOps &runtimeOps) {
  Grouping grouping;
  for (Operation &op : llvm::reverse(block)) {
    bool reshape = isa<ReshapeOp>(op);
    if (!reshape && !isFusible(&op, runtimeOps))
      continue;
    // The groups that use the op's results, and whether anything outside a
    // group does.
    llvm::SmallSetVector<unsigned, 2> userGroups;
    bool usedOutside = false, returned = false;
    for (Operation *user : op.getUsers()) {
      // A user both materialized (a group of its own) and copied into other
      // groups reads the op in all of them.
      bool grouped = false;
      if (auto it = grouping.groupOf.find(user); it != grouping.groupOf.end()) {
        userGroups.insert(it->second);
        grouped = true;
      }
      if (auto copy = grouping.copiedInto.find(user);
          copy != grouping.copiedInto.end()) {
        userGroups.insert(copy->second.begin(), copy->second.end());
        grouped = true;
      }
      if (grouped)
        continue;
      if (isa<func::ReturnOp>(user))
        returned = true;
      else
        usedOutside = true;
    }
    // A lookup reads its table's rows at the ids (tensor.extract), not
    // element by element in its loop nest: a table viewed as rows (a
    // gather from an activation, `x * 2` reshaped [b * t, d]) stays a view
    // of a materialized tensor, as a computation fused through the view
    // would not dominate the rows the lookup extracts. A table computed
    // as it is (a cast parameter) is computed in the lookup's kernel.
    for (OpOperand &use : op.getUses()) {
      auto lookup = dyn_cast<EmbeddingOp>(use.getOwner());
      if (reshape && lookup && use.get() == lookup.getTable())
        usedOutside = true;
    }
    // A reshape that one group alone reads joins it, so that the kernel
    // computes its producer in the layout its consumer reads (GPT-2's q
    // with c_attn's bias, viewed [b, t, h, d], then transposed to
    // [b, h, t, d]: one pass instead of two). Read elsewhere, it stays a
    // view of its operand's buffer.
    if (reshape) {
      if (!usedOutside && !returned && userGroups.size() == 1) {
        grouping.groupOf[&op] = userGroups.front();
        grouping.members[userGroups.front()].push_back(&op);
      }
      continue;
    }
    // A duplicable op is copied into every group that uses it, and is
    // materialized (a group of its own) only for users outside groups.
    if (isDuplicable(&op) && !userGroups.empty()) {
      grouping.copiedInto[&op] = userGroups;
      if (!usedOutside && !returned)
        continue;
    }
    if (!usedOutside && userGroups.size() > 1)
      absorbNarrowedStores(grouping, &op, userGroups);
    // So is an elementwise op of several groups that is cheaper recomputed
    // in each (a gradient scaled by the clipping coefficient, which both
    // of AdamW's moments read).
    if (!usedOutside && !returned && userGroups.size() > 1 &&
        isCheaperRecomputed(&op, userGroups.size())) {
      grouping.copiedInto[&op] = userGroups;
      continue;
    }
    // An op that one group uses joins it, also when the function returns
    // it (the kernel returns it too: AdamW's moments, which the parameter's
    // update reads, are computed in the update's kernel). A reduction roots
    // a kernel of its own instead: its result is small, so materializing it
    // costs nothing, while fusing chains of independent reductions (a
    // gradient norm over every parameter) would make one huge kernel
    // instead of a few shared ones.
    if (!usedOutside && userGroups.size() == 1 && !isReduction(&op) &&
        (!returned || !isDuplicable(&op))) {
      grouping.groupOf[&op] = userGroups.front();
      grouping.members[userGroups.front()].push_back(&op);
      if (returned)
        grouping.returned.insert(&op);
      continue;
    }
    grouping.groupOf[&op] = grouping.members.size();
    grouping.members.push_back({&op});
  }
  return grouping;
}

/// The values that `group`'s members read from outside it (through the ops
/// copied into it).
static llvm::SetVector<Value> getGroupInputs(const Grouping &grouping,
                                             unsigned group) {
  llvm::SetVector<Value> inputs;
  std::function<void(Value)> add = [&](Value value) {
    Operation *def = value.getDefiningOp();
    auto member = def ? grouping.groupOf.find(def) : grouping.groupOf.end();
    if (member != grouping.groupOf.end() && member->second == group)
      return;
    if (def && grouping.copiedInto.count(def) &&
        grouping.copiedInto.lookup(def).contains(group)) {
      for (Value operand : def->getOperands())
        add(operand);
      return;
    }
    inputs.insert(value);
  };
  for (Operation *member : grouping.members[group])
    for (Value operand : member->getOperands())
      add(operand);
  return inputs;
}

/// Whether every member of `group` is elementwise, of one result shaped
/// like its root's: its kernel is one loop nest over the root's elements.
static bool isElementwiseGroup(const Grouping &grouping, unsigned group) {
  ArrayRef<Operation *> members = grouping.members[group];
  Type shape = members.front()->getResult(0).getType();
  return llvm::all_of(members, [&](Operation *member) {
    return member->hasTrait<OpTrait::Elementwise>() &&
           member->getNumResults() == 1 &&
           cast<ShapedType>(member->getResult(0).getType()).getShape() ==
               cast<ShapedType>(shape).getShape();
  });
}

/// Merges elementwise groups over one shape that read a common input of
/// that shape into the earliest of them, when the later ones read nothing
/// computed after its root (where their kernel will be launched): one
/// kernel reads the input once (the two gradients of SwiGLU's product,
/// which both read the product's gradient and recompute the gate; 2 of 7
/// passes over [tokens, ffn] tensors). titan-lower-kernels makes their
/// loop nests one.
static void mergeSiblingGroups(Grouping &grouping) {
  unsigned numGroups = grouping.members.size();
  // The latest group so far that reads each input of its shape.
  DenseMap<Value, unsigned> lastReader;
  // Groups in program order of their roots (groups absorbed by another
  // while they were formed are empty).
  SmallVector<unsigned> order;
  for (unsigned group = 0; group < numGroups; ++group)
    if (!grouping.members[group].empty())
      order.push_back(group);
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return grouping.members[a].front()->isBeforeInBlock(
        grouping.members[b].front());
  });
  for (unsigned group : order) {
    ArrayRef<Operation *> members = grouping.members[group];
    if (members.empty() || !isElementwiseGroup(grouping, group))
      continue;
    auto shape = cast<ShapedType>(members.front()->getResult(0).getType());
    llvm::SetVector<Value> inputs = getGroupInputs(grouping, group);
    auto ofShape = [&](Value input) {
      return cast<ShapedType>(input.getType()).getShape() == shape.getShape();
    };
    // The latest group that reads an input in common, if every input is
    // computed before its root.
    std::optional<unsigned> target;
    for (Value input : inputs) {
      auto reader = lastReader.find(input);
      if (reader == lastReader.end() || !ofShape(input))
        continue;
      Operation *root = grouping.members[reader->second].front();
      bool movable = llvm::all_of(inputs, [&](Value input) {
        Operation *def = input.getDefiningOp();
        return !def || def->isBeforeInBlock(root);
      });
      if (movable &&
          (!target || grouping.members[*target].front()->isBeforeInBlock(root)))
        target = reader->second;
    }
    if (!target) {
      for (Value input : inputs)
        if (ofShape(input))
          lastReader[input] = group;
      continue;
    }
    // Into the target: the root becomes a sibling root, the ops copied
    // into the group are copied into the target.
    for (Operation *member : members)
      grouping.groupOf[member] = *target;
    llvm::append_range(grouping.members[*target], members);
    grouping.siblingRoots.insert(members.front());
    for (auto &[op, groups] : grouping.copiedInto)
      if (groups.remove(group))
        groups.insert(*target);
    grouping.members[group].clear();
  }
}

/// Merges an elementwise group into the group whose root computes one of
/// its inputs, when the root has other results read elsewhere (so it could
/// not join the elementwise group), that input is read by the group alone,
/// and the group's other inputs are computed before the root: the root's
/// kernel computes the group too, as an epilogue, and no longer writes
/// that input (LayerNorm's backward and the residual cotangent it is added
/// to: one pass instead of the input gradient written, then read again
/// with the residual's by an add kernel). A value another kernel computes
/// is ready where that kernel is launched.
static void mergeEpilogues(Grouping &grouping) {
  for (unsigned group = 0; group < grouping.members.size(); ++group) {
    ArrayRef<Operation *> members = grouping.members[group];
    if (members.empty() || !isElementwiseGroup(grouping, group))
      continue;
    llvm::SetVector<Value> inputs = getGroupInputs(grouping, group);
    for (Value input : inputs) {
      Operation *producer = input.getDefiningOp();
      auto target =
          producer ? grouping.groupOf.find(producer) : grouping.groupOf.end();
      if (target == grouping.groupOf.end() || target->second == group ||
          grouping.members[target->second].front() != producer ||
          producer->getNumResults() < 2 ||
          !llvm::all_of(input.getUsers(), [&](Operation *user) {
            auto it = grouping.groupOf.find(user);
            return it != grouping.groupOf.end() && it->second == group;
          }))
        continue;
      // A grouped value is computed where its group's kernel is launched.
      bool ready = llvm::all_of(inputs, [&](Value other) {
        Operation *def = other.getDefiningOp();
        if (other == input || !def)
          return true;
        auto grouped = grouping.groupOf.find(def);
        Operation *at = grouped == grouping.groupOf.end()
                            ? def
                            : grouping.members[grouped->second].front();
        return at->isBeforeInBlock(producer);
      });
      if (!ready)
        continue;
      unsigned into = target->second;
      for (Operation *member : members)
        grouping.groupOf[member] = into;
      llvm::append_range(grouping.members[into], members);
      grouping.siblingRoots.insert(members.front());
      grouping.withEpilogue.insert(into);
      for (auto &[op, groups] : grouping.copiedInto)
        if (groups.remove(group))
          groups.insert(into);
      grouping.members[group].clear();
      break;
    }
  }
}

/// The kernels of a module, by the printed form of their function (with a
/// neutral name), so that identical groups share one kernel.
class KernelTable {
public:
  explicit KernelTable(ModuleOp module) : symbols(module) {}

  /// Adds `kernel` (not yet in the module) and returns it, or erases it and
  /// returns the identical kernel already there.
  func::FuncOp addOrShare(func::FuncOp kernel);

private:
  SymbolTable symbols;
  llvm::StringMap<func::FuncOp> kernelsByText;
};

/// Outlines the groups of one function.
class Outliner {
public:
  Outliner(KernelTable &kernels, const Grouping &grouping)
      : kernels(kernels), grouping(grouping) {}

  /// Replaces group `group` by a `titan.launch` of its kernel.
  void outline(unsigned group);

private:
  /// The kernel value of `value` (defined in the group, copied, or a new
  /// kernel argument).
  Value lookupOrAdd(Value value, unsigned group);

  KernelTable &kernels;
  const Grouping &grouping;

  // State of the group being outlined.
  OpBuilder *body = nullptr;
  Block *entry = nullptr;
  IRMapping mapping;
  SmallVector<Value> inputs;
};

} // namespace

func::FuncOp KernelTable::addOrShare(func::FuncOp kernel) {
  StringAttr name = kernel.getSymNameAttr();
  std::string text;
  {
    kernel.setSymName("kernel");
    llvm::raw_string_ostream os(text);
    kernel->print(os, OpPrintingFlags().printGenericOpForm());
    kernel.setSymNameAttr(name);
  }
  auto [it, inserted] = kernelsByText.try_emplace(text, kernel);
  if (inserted) {
    symbols.insert(kernel); // Made unique: kernel_add, kernel_add_0, ...
    return kernel;
  }
  kernel.erase();
  return it->second;
}

Value Outliner::lookupOrAdd(Value value, unsigned group) {
  if (Value mapped = mapping.lookupOrNull(value))
    return mapped;
  Operation *def = value.getDefiningOp();
  if (def && grouping.copiedInto.count(def) &&
      grouping.copiedInto.lookup(def).contains(group)) {
    for (Value operand : def->getOperands())
      lookupOrAdd(operand, group);
    body->clone(*def, mapping);
    return mapping.lookup(value);
  }
  BlockArgument argument = entry->addArgument(value.getType(), value.getLoc());
  mapping.map(value, argument);
  inputs.push_back(value);
  return argument;
}

void Outliner::outline(unsigned group) {
  ArrayRef<Operation *> members = grouping.members[group];
  if (members.empty())
    return; // Merged into a sibling.
  Operation *root = members.front();
  MLIRContext *context = root->getContext();

  // Build the kernel body in program order.
  OpBuilder detached(context);
  auto kernel =
      func::FuncOp::create(detached, root->getLoc(),
                           ("kernel_" + root->getName().stripDialect()).str(),
                           FunctionType::get(context, {}, {}));
  entry = kernel.addEntryBlock();
  OpBuilder builder = OpBuilder::atBlockBegin(entry);
  body = &builder;
  mapping.clear();
  inputs.clear();
  // Each merged sibling's members follow the group's, each in reverse
  // program order; an epilogue's (read from the root) follow the root, in
  // program order with the others.
  SmallVector<Operation *> order(llvm::reverse(members));
  if (grouping.withEpilogue.contains(group))
    llvm::stable_sort(order, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
  for (Operation *member : order) {
    for (Value operand : member->getOperands())
      lookupOrAdd(operand, group);
    builder.clone(*member, mapping);
  }
  // The root's results read outside the kernel (under an epilogue, one
  // may be read in it only), its siblings', then those of the members the
  // function returns.
  SmallVector<Value> values;
  for (Value result : root->getResults())
    if (!grouping.withEpilogue.contains(group) ||
        llvm::any_of(result.getUsers(), [&](Operation *user) {
          auto it = grouping.groupOf.find(user);
          return it == grouping.groupOf.end() || it->second != group;
        }))
      values.push_back(result);
  size_t rootValues = values.size();
  for (Operation *member : members)
    if (grouping.siblingRoots.contains(member))
      llvm::append_range(values, member->getResults());
  for (Operation *member : llvm::reverse(members))
    if (grouping.returned.contains(member))
      llvm::append_range(values, member->getResults());
  SmallVector<Value> results;
  for (Value value : values)
    results.push_back(mapping.lookup(value));
  func::ReturnOp::create(builder, root->getLoc(), results);
  kernel.setFunctionType(FunctionType::get(context, entry->getArgumentTypes(),
                                           ValueRange(values).getTypes()));
  kernel.setPrivate();
  kernel->setAttr(TitanDialect::kKernelAttrName, UnitAttr::get(context));

  func::FuncOp shared = kernels.addOrShare(kernel);

  OpBuilder launchBuilder(root);
  auto launch = LaunchOp::create(
      launchBuilder, root->getLoc(), ValueRange(values).getTypes(),
      FlatSymbolRefAttr::get(shared.getSymNameAttr()), inputs);
  // Placements (if any) stay with the values: the root's, when every
  // result of the launch has them.
  Attribute placements = rootValues == root->getNumResults()
                             ? root->getAttr(TitanDialect::kPlacementsAttrName)
                             : Attribute();
  for (Value value : ValueRange(values).drop_front(rootValues))
    if (value.getDefiningOp()->getAttr(TitanDialect::kPlacementsAttrName) !=
        placements)
      placements = nullptr;
  if (placements)
    launch->setAttr(TitanDialect::kPlacementsAttrName, placements);
  // The function's return reads the returned members from the launch; the
  // group's other members read them in the kernel. A root that groups also
  // copy stays what their members read: they compute it themselves, and
  // may be launched before this kernel (a merged sibling).
  auto copies = grouping.copiedInto.find(root);
  auto computesItself = [&](Operation *user) {
    auto userGroup = grouping.groupOf.find(user);
    return copies != grouping.copiedInto.end() &&
           userGroup != grouping.groupOf.end() &&
           copies->second.contains(userGroup->second);
  };
  for (auto [value, result] : llvm::zip(values, launch->getResults()))
    value.replaceUsesWithIf(result, [&](OpOperand &use) {
      return (value.getDefiningOp() == root &&
              !computesItself(use.getOwner())) ||
             grouping.siblingRoots.contains(value.getDefiningOp()) ||
             isa<func::ReturnOp>(use.getOwner());
    });
}

/// The tensor whose squares `value` sums, when `value` is a
/// `titan.reduce_sum` over every dim of `titan.mul(x, x)`, read by nothing
/// else, of an f32 x: x, or the bf16 tensor x widens (which the runtime
/// reads instead, widening it itself).
static Value getSquaredTensor(Value value) {
  auto sum = value.getDefiningOp<ReduceSumOp>();
  auto mul = sum ? sum.getInput().getDefiningOp<MulOp>() : MulOp();
  if (!mul || !sum->hasOneUse() || !mul->hasOneUse() ||
      sum.getType().getRank() != 0 || mul.getLhs() != mul.getRhs() ||
      !getElementTypeOrSelf(mul.getType()).isF32())
    return Value();
  Value x = mul.getLhs();
  if (auto widen = x.getDefiningOp<CastOp>();
      widen && getElementTypeOrSelf(widen.getInput()).isBF16())
    return widen.getInput();
  return x;
}

/// The f32 scalar add that reads `value`, when it is its only reader.
static AddOp getSumReading(Value value) {
  if (!value.hasOneUse())
    return AddOp();
  auto add = dyn_cast<AddOp>(*value.getUsers().begin());
  if (!add || add.getType().getRank() != 0 ||
      !add.getType().getElementType().isF32())
    return AddOp();
  return add;
}

/// Replaces the squared sums that one tree of scalar adds adds up (the
/// terms of the gradients' squared global norm, per rank before any
/// all-reduce of them) with one titan.squared_norm of their tensors, added
/// where the tree's root stood.
static void fuseSquaredNorms(Block &block) {
  llvm::MapVector<Operation *, SmallVector<Value>> termsByRoot;
  for (auto sum : block.getOps<ReduceSumOp>()) {
    AddOp add = getSquaredTensor(sum.getResult())
                    ? getSumReading(sum.getResult())
                    : AddOp();
    if (!add)
      continue;
    while (AddOp outer = getSumReading(add.getResult()))
      add = outer;
    termsByRoot[add.getOperation()].push_back(sum.getResult());
  }
  for (auto &[root, terms] : termsByRoot) {
    if (terms.size() < 2)
      continue;
    SmallVector<Value> tensors;
    SmallVector<Location> locations;
    for (Value term : terms) {
      tensors.push_back(getSquaredTensor(term));
      locations.push_back(term.getLoc());
    }
    // After the last term's sum (every tensor is defined before it), so
    // before the root.
    OpBuilder builder(block.getParentOp()->getContext());
    builder.setInsertionPointAfter(terms.back().getDefiningOp());
    auto norm = SquaredNormOp::create(
        builder, FusedLoc::get(builder.getContext(), locations), tensors);
    copyPhase(root, norm);
    // The tree without the fused terms: the other terms' sum, if any.
    DenseSet<Value> fused(terms.begin(), terms.end());
    std::function<Value(Value)> rest = [&](Value value) -> Value {
      if (fused.contains(value))
        return Value();
      auto add = value.getDefiningOp<AddOp>();
      if (!add || (add.getOperation() != root && !getSumReading(value)))
        return value;
      Value lhs = rest(add.getLhs()), rhs = rest(add.getRhs());
      if (!lhs || !rhs)
        return lhs ? lhs : rhs;
      if (lhs == add.getLhs() && rhs == add.getRhs())
        return value;
      builder.setInsertionPoint(add);
      return AddOp::create(builder, add.getLoc(), lhs.getType(), lhs, rhs)
          .getResult();
    };
    Value others = rest(root->getResult(0));
    builder.setInsertionPoint(root);
    Value total = others
                      ? AddOp::create(builder, root->getLoc(), others.getType(),
                                      others, norm.getResult())
                            .getResult()
                      : norm.getResult();
    root->getResult(0).replaceAllUsesWith(total);
  }
}

namespace {

struct FuseKernelsPass
    : public mlir::titan::impl::FuseKernelsPassBase<FuseKernelsPass> {
  using FuseKernelsPassBase::FuseKernelsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    RuntimeOps runtimeOps;
    for (const std::string &name : this->runtimeOps) {
      if (name == "rms_norm") {
        runtimeOps.rmsNorm = true;
      } else if (name == "cross_entropy") {
        runtimeOps.crossEntropy = true;
      } else if (name == "adamw") {
        runtimeOps.adamW = true;
      } else if (name == "squared_norm") {
        runtimeOps.squaredNorm = true;
      } else {
        module.emitError("titan-fuse-kernels: unknown runtime op '")
            << name << "' (runtime-ops takes "
            << llvm::join(ArrayRef(kRuntimeOpNames), ", ") << ")";
        return signalPassFailure();
      }
    }
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function->hasAttr(TitanDialect::kKernelAttrName) &&
          !function.isExternal())
        functions.push_back(function);
    KernelTable kernels(module);
    for (func::FuncOp function : functions) {
      Block &block = function.getBody().front();
      // The optimizer steps the runtime does not execute, as the
      // elementwise ops they stand for.
      AdamWExpander expander;
      for (auto adamw : llvm::make_early_inc_range(block.getOps<AdamWOp>())) {
        if (!runtimeOps.contains(adamw)) {
          expander.expand(adamw);
          continue;
        }
        // The runtime's AdamW widens a bf16 gradient itself: it reads one
        // that was widened for it before the cast (half the bytes; the cast
        // fuses into its other users, the gradient norm's, or goes).
        auto widened = adamw.getGrad().getDefiningOp<CastOp>();
        if (widened && widened.getInput().getType().getElementType().isBF16())
          adamw.getGradMutable().assign(widened.getInput());
      }
      if (runtimeOps.squaredNorm)
        fuseSquaredNorms(block);
      castGatheredRows(block);
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (isFusible(&op, runtimeOps) && isOpTriviallyDead(&op))
          op.erase();
      Grouping grouping = formGroups(block, runtimeOps);
      if (mergeSiblings)
        mergeSiblingGroups(grouping);
      mergeEpilogues(grouping);
      Outliner outliner(kernels, grouping);
      for (unsigned group = 0; group < grouping.members.size(); ++group)
        outliner.outline(group);
      // Members, then the copied ops, have no users left but each other.
      SmallVector<Operation *> dead;
      for (Operation &op : block)
        if (grouping.groupOf.count(&op) || grouping.copiedInto.count(&op))
          dead.push_back(&op);
      for (Operation *op : llvm::reverse(dead)) {
        op->dropAllUses();
        op->erase();
      }
    }
  }
};

} // namespace

std::vector<std::string> mlir::titan::getDefaultRuntimeOps(StringRef backend) {
  if (backend != "cuda")
    return {};
  return std::vector<std::string>(std::begin(kRuntimeOpNames),
                                  std::end(kRuntimeOpNames));
}
