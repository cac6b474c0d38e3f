//===- KernelLowering.cpp - compiling kernel functions --------------------===//
//
// Kernels go through upstream MLIR: titan ops -> linalg on tensors
// (titan-convert-to-linalg) -> elementwise fusion -> one-shot bufferization
// with identity layouts at function boundaries -> results as out-parameters
// -> loops -> LLVM dialect. What upstream does not do is here: the in-place
// analysis, turning a kernel's internal allocations into parameters (so
// that titan-plan-memory places them), fast-math flags that let reductions
// vectorize, and the bare-pointer ABI attributes.
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/KernelLowering.h"

#include "titan/Codegen/TitanToLinalg.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::titan;

//===----------------------------------------------------------------------===//
// In-place analysis (on the bufferized kernel)
//===----------------------------------------------------------------------===//

/// The ops that use `buffer`, directly or through views of it.
static SmallVector<OpOperand *> getTransitiveUses(Value buffer) {
  SmallVector<OpOperand *> uses;
  SmallVector<Value> worklist = {buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      if (isa<ViewLikeOpInterface>(use.getOwner()))
        llvm::append_range(worklist, use.getOwner()->getResults());
      else
        uses.push_back(&use);
    }
  }
  return uses;
}

/// The input parameters whose buffer output parameter `output` of `kernel`
/// (bufferized, `numInputs` inputs first) may share. Legal for an input
/// when one loop nest, without reductions, is the only op that touches the
/// output, and it reads the input at the element it writes; every other op
/// that reads the input runs before it (a norm's reduction). Any one of
/// them may be the output's buffer (AdamW's moment `beta * m + (1 - beta) *
/// g` over m's, as the state update needs, or over g's). Bufferization may
/// use an output as scratch for a temporary: then the output has other
/// writers and nothing may share it.
static SmallVector<int64_t>
findInPlaceInputs(func::FuncOp kernel, unsigned numInputs, unsigned output) {
  SmallVector<int64_t> inputs;
  Value out = kernel.getArgument(output);
  SmallVector<OpOperand *> outUses = getTransitiveUses(out);
  if (outUses.size() != 1 || outUses.front()->get() != out)
    return inputs;
  auto generic = dyn_cast<linalg::GenericOp>(outUses.front()->getOwner());
  if (!generic || !generic.isDpsInit(outUses.front()) ||
      generic.getNumReductionLoops() != 0)
    return inputs;
  AffineMap outputMap = generic.getMatchingIndexingMap(outUses.front());
  for (unsigned input = 0; input < numInputs; ++input) {
    BlockArgument arg = kernel.getArgument(input);
    if (arg.getType() != out.getType())
      continue;
    bool readHere = false;
    bool legal = llvm::all_of(getTransitiveUses(arg), [&](OpOperand *use) {
      Operation *user = use->getOwner();
      if (user != generic.getOperation())
        return user->getBlock() == generic->getBlock() &&
               user->isBeforeInBlock(generic);
      readHere = true;
      return use->get() == arg && generic.isDpsInput(use) &&
             generic.getMatchingIndexingMap(use) == outputMap;
    });
    if (legal && readHere)
      inputs.push_back(input);
  }
  return inputs;
}

/// Records titan.in_place on a bufferized kernel with `numInputs` inputs
/// and `numResults` output parameters after them: pairs of (input
/// parameter, output parameter) that may share a buffer, an output's
/// candidates in input order.
static void recordInPlaceOperands(func::FuncOp kernel, unsigned numInputs,
                                  unsigned numResults) {
  SmallVector<int64_t> pairs;
  for (unsigned output = numInputs; output < numInputs + numResults; ++output)
    for (int64_t input : findInPlaceInputs(kernel, numInputs, output))
      pairs.append({input, output});
  kernel->setAttr(TitanDialect::kInPlaceAttrName,
                  DenseI64ArrayAttr::get(kernel.getContext(), pairs));
}

//===----------------------------------------------------------------------===//
// Scratch parameters
//===----------------------------------------------------------------------===//

/// Turns every allocation inside `kernel` into a trailing parameter, so that
/// the caller provides the memory (a planned scratch buffer of the arena).
static LogicalResult hoistAllocations(func::FuncOp kernel) {
  SmallVector<memref::AllocOp> allocations;
  kernel.walk([&](memref::AllocOp alloc) { allocations.push_back(alloc); });
  for (memref::AllocOp alloc : allocations) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return alloc.emitOpError()
             << "a kernel's temporary must have a static shape and identity "
                "layout to become a scratch buffer, got "
             << type;
    if (alloc->getParentRegion() != &kernel.getBody())
      return alloc.emitOpError()
             << "a kernel's temporary must be allocated at the top level";
    BlockArgument argument = kernel.getBody().addArgument(type, alloc.getLoc());
    alloc.replaceAllUsesWith(argument);
    alloc.erase();
  }
  kernel.setType(FunctionType::get(kernel.getContext(),
                                   kernel.getBody().getArgumentTypes(), {}));
  for (auto dealloc :
       llvm::make_early_inc_range(kernel.getBody().getOps<memref::DeallocOp>()))
    dealloc.erase();
  return success();
}

/// Gives every reduction its own filled init: CSE merges identical
/// `linalg.fill`s, and bufferization then copies the shared fill into each
/// accumulator.
static void unshareFills(ModuleOp kernels) {
  SmallVector<linalg::FillOp> fills;
  kernels.walk([&](linalg::FillOp fill) { fills.push_back(fill); });
  for (linalg::FillOp fill : fills) {
    Value result = fill.getResult(0);
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : result.getUses())
      uses.push_back(&use);
    for (OpOperand *use : llvm::drop_begin(uses)) {
      OpBuilder builder(use->getOwner());
      IRMapping mapping;
      if (Operation *init = fill.getOutputs()[0].getDefiningOp();
          init && isa<tensor::EmptyOp>(init))
        mapping.map(init->getResult(0), builder.clone(*init)->getResult(0));
      use->set(builder.clone(*fill, mapping)->getResult(0));
    }
  }
}

//===----------------------------------------------------------------------===//
// bufferizeKernels
//===----------------------------------------------------------------------===//

/// Fuses an elementwise producer into its one consumer also where the
/// kernel returns the producer's result too, or the consumer reads it
/// through several operands (linalg's elementwise fusion pass takes
/// single-use producers only): the fused op yields the producer's result
/// for the return, so nothing is computed twice and the kernel is one loop
/// nest (AdamW's update of a parameter and both its moments, reading the
/// gradient, parameter and moments once).
static void fuseProducersIntoTheirConsumer(func::FuncOp kernel) {
  IRRewriter rewriter(kernel.getContext());
  for (bool fused = true; fused;) {
    fused = false;
    kernel.walk([&](linalg::GenericOp producer) {
      OpOperand *operand = nullptr;
      for (OpResult result : producer->getResults())
        for (OpOperand &use : result.getUses()) {
          if (isa<func::ReturnOp>(use.getOwner()))
            continue;
          if (operand && operand->getOwner() != use.getOwner())
            return WalkResult::advance(); // A second consumer.
          operand = &use;
        }
      if (!operand || !linalg::areElementwiseOpsFusable(operand))
        return WalkResult::advance();
      Operation *consumer = operand->getOwner();
      rewriter.setInsertionPoint(consumer);
      FailureOr<linalg::ElementwiseOpFusionResult> result =
          linalg::fuseElementwiseOps(rewriter, operand);
      if (failed(result))
        return WalkResult::advance();
      for (auto [value, replacement] : result->replacements)
        rewriter.replaceUsesWithIf(value, replacement, [&](OpOperand &use) {
          return use.getOwner() != result->fusedOp;
        });
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      fused = true;
      return WalkResult::interrupt();
    });
  }
}

/// Whether loop nests `first` and `second` (later in the same block) can
/// be one: both elementwise over the same iteration space (parallel loops,
/// identity output maps), reading a common input, and `second` reads
/// nothing `first` or the ops between them compute (tensor.empty inits
/// aside, which move up).
static bool areFusibleSiblings(linalg::GenericOp first,
                               linalg::GenericOp second) {
  auto isElementwise = [](linalg::GenericOp op) {
    return op.getNumLoops() == op.getNumParallelLoops() &&
           llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
             return op.getMatchingIndexingMap(&init).isIdentity();
           });
  };
  if (first->getBlock() != second->getBlock() || !isElementwise(first) ||
      !isElementwise(second) ||
      first.getStaticLoopRanges() != second.getStaticLoopRanges())
    return false;
  for (Value operand : second->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (def && !def->isBeforeInBlock(first) &&
        !(isa<tensor::EmptyOp>(def) && def->getNumOperands() == 0))
      return false;
  }
  return llvm::any_of(second.getDpsInputOperands(), [&](OpOperand *input) {
    return llvm::any_of(first.getDpsInputOperands(), [&](OpOperand *other) {
      return other->get() == input->get() &&
             first.getMatchingIndexingMap(other) ==
                 second.getMatchingIndexingMap(input);
    });
  });
}

/// Merges `first` and `second` (areFusibleSiblings) into one loop nest at
/// `first`'s place that reads their inputs once and yields both results.
static void fuseSiblings(IRRewriter &rewriter, linalg::GenericOp first,
                         linalg::GenericOp second) {
  for (Value init : second.getDpsInits())
    if (Operation *def = init.getDefiningOp(); !def->isBeforeInBlock(first))
      def->moveBefore(first);
  // The inputs, each (value, map) once, then both nests' inits.
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> maps, initMaps;
  SmallVector<Type> argTypes, initTypes;
  auto addInput = [&](OpOperand *operand, linalg::GenericOp op) {
    AffineMap map = op.getMatchingIndexingMap(operand);
    for (auto [index, value] : llvm::enumerate(inputs))
      if (value == operand->get() && maps[index] == map)
        return index;
    inputs.push_back(operand->get());
    maps.push_back(map);
    argTypes.push_back(getElementTypeOrSelf(operand->get().getType()));
    return inputs.size() - 1;
  };
  SmallVector<size_t> firstInputs, secondInputs;
  for (OpOperand *input : first.getDpsInputOperands())
    firstInputs.push_back(addInput(input, first));
  for (OpOperand *input : second.getDpsInputOperands())
    secondInputs.push_back(addInput(input, second));
  for (linalg::GenericOp op : {first, second})
    for (OpOperand &init : op.getDpsInitsMutable()) {
      inits.push_back(init.get());
      initMaps.push_back(op.getMatchingIndexingMap(&init));
      initTypes.push_back(getElementTypeOrSelf(init.get().getType()));
    }
  llvm::append_range(maps, initMaps);
  llvm::append_range(argTypes, initTypes);
  SmallVector<Type> resultTypes(first->getResultTypes());
  llvm::append_range(resultTypes, second->getResultTypes());

  rewriter.setInsertionPoint(first);
  auto fused =
      linalg::GenericOp::create(rewriter, first.getLoc(), resultTypes, inputs,
                                inits, maps, first.getIteratorTypesArray());
  SmallVector<Location> argLocs(argTypes.size(), first.getLoc());
  Block *body = rewriter.createBlock(&fused.getRegion(), {}, argTypes, argLocs);
  SmallVector<Value> yielded;
  unsigned initBase = inputs.size();
  for (auto [op, inputIndices] : {std::pair{first, ArrayRef(firstInputs)},
                                  {second, ArrayRef(secondInputs)}}) {
    IRMapping mapping;
    Block &old = op.getRegion().front();
    for (auto [arg, index] : llvm::zip(
             old.getArguments().take_front(inputIndices.size()), inputIndices))
      mapping.map(arg, body->getArgument(index));
    for (BlockArgument arg : old.getArguments().drop_front(inputIndices.size()))
      mapping.map(arg, body->getArgument(initBase++));
    for (Operation &inner : old.without_terminator())
      rewriter.clone(inner, mapping);
    for (Value value : old.getTerminator()->getOperands())
      yielded.push_back(mapping.lookupOrDefault(value));
  }
  linalg::YieldOp::create(rewriter, first.getLoc(), yielded);
  unsigned numFirst = first->getNumResults();
  rewriter.replaceOp(first, fused->getResults().take_front(numFirst));
  rewriter.replaceOp(second, fused->getResults().drop_front(numFirst));
}

/// Makes sibling loop nests of `kernel` one (areFusibleSiblings): titan-
/// fuse-kernels puts independent elementwise groups that read a common
/// input in one kernel (the two gradients of SwiGLU's product), and one
/// nest reads that input once. Returns whether it fused any.
static bool fuseSiblingLoopNests(func::FuncOp kernel) {
  IRRewriter rewriter(kernel.getContext());
  // The first fusible pair of nests in program order, if any.
  auto findSiblings =
      [&]() -> std::optional<std::pair<linalg::GenericOp, linalg::GenericOp>> {
    SmallVector<linalg::GenericOp> nests;
    kernel.walk([&](linalg::GenericOp op) { nests.push_back(op); });
    for (auto [index, first] : llvm::enumerate(nests))
      for (linalg::GenericOp second : ArrayRef(nests).drop_front(index + 1))
        if (areFusibleSiblings(first, second))
          return std::pair(first, second);
    return std::nullopt;
  };
  bool any = false;
  while (auto siblings = findSiblings()) {
    fuseSiblings(rewriter, siblings->first, siblings->second);
    any = true;
  }
  return any;
}

/// Whether `op` only widens the type of its one input, element by element
/// (bf16 -> f32, i32 -> i64, ...): its body is one cast whose result has
/// at least as many bits as its operand.
static bool isWideningCast(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0)
    return false;
  Block &body = op.getRegion().front();
  if (!llvm::hasSingleElement(body.without_terminator()))
    return false;
  auto cast = dyn_cast<CastOpInterface>(body.front());
  if (!cast || cast->getNumOperands() != 1 ||
      cast->getOperand(0) != body.getArgument(0) ||
      body.getTerminator()->getOperand(0) != cast->getResult(0))
    return false;
  Type from = cast->getOperand(0).getType(), to = cast->getResult(0).getType();
  return from.isIntOrFloat() && to.isIntOrFloat() &&
         from.getIntOrFloatBitWidth() <= to.getIntOrFloatBitWidth();
}

/// Replaces each `tensor.extract` of one element of `cast` (a widening
/// cast over identical index spaces) with the cast of its input's element
/// (the loss's target logit): no consumer needs the wide tensor for it.
static void castExtractedElements(linalg::GenericOp cast) {
  if (!llvm::all_of(cast.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return;
  OpBuilder builder(cast.getContext());
  Operation &scalarCast = cast.getRegion().front().front();
  for (OpOperand &use :
       llvm::make_early_inc_range(cast->getResult(0).getUses())) {
    auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
    if (!extract)
      continue;
    builder.setInsertionPoint(extract);
    IRMapping mapping;
    mapping.map(scalarCast.getOperand(0),
                tensor::ExtractOp::create(builder, extract.getLoc(),
                                          cast.getDpsInputs()[0],
                                          extract.getIndices()));
    extract.replaceAllUsesWith(
        builder.clone(scalarCast, mapping)->getResult(0));
    extract.erase();
  }
}

/// Gives each consumer that elementwise fusion can fuse a widening cast
/// into its own copy of the cast, so that the fusion (which fuses only
/// single-use producers) computes the cast inside every consumer instead
/// of filling a buffer of the wider type that several consumers read: a
/// bf16 loss's max, sum and gradient each read the bf16 logits, and the
/// kernel needs no f32 copy of them (4.2 GB for Llama 3's 8192 x 128256).
/// Reading the narrower input again moves fewer bytes than writing and
/// reading the wider buffer. Single elements are cast where they are
/// extracted (castExtractedElements). One cast stays for the consumers
/// that can do neither, if any.
static void copyWideningCastsPerConsumer(func::FuncOp kernel) {
  SmallVector<linalg::GenericOp> casts;
  kernel.walk([&](linalg::GenericOp op) {
    if (isWideningCast(op))
      casts.push_back(op);
  });
  for (linalg::GenericOp cast : casts) {
    castExtractedElements(cast);
    if (cast->use_empty()) {
      cast.erase();
      continue;
    }
    SmallVector<OpOperand *> fusable;
    for (OpOperand &use : cast->getResult(0).getUses())
      if (linalg::areElementwiseOpsFusable(&use))
        fusable.push_back(&use);
    bool othersRemain = !cast->getResult(0).hasNUses(fusable.size());
    OpBuilder builder(cast);
    for (OpOperand *use : llvm::drop_begin(fusable, othersRemain ? 0 : 1))
      use->set(builder.clone(*cast)->getResult(0));
  }
}

/// Computes only the part of a loop nest that a slice of its one use reads:
/// the slice moves to the nest's operands (linalg's bubble-up patterns), so
/// a kernel that returns one third of a biased projection (GPT-2's q, k or v
/// of c_attn + bias) adds the bias over that third instead of over the whole
/// projection into a scratch buffer it then copies from.
static void computeOnlySlicesRead(ModuleOp kernels) {
  RewritePatternSet patterns(kernels.getContext());
  linalg::populateBubbleUpExtractSliceOpPatterns(patterns);
  (void)applyPatternsGreedily(kernels, std::move(patterns));
}

/// Lets a loop nest whose result is collapsed (a reshape in the kernel)
/// write the collapsed buffer through an expanded view of it: where a pad
/// or concat places the collapsed result (GPT-2's q, k and v cotangents,
/// transposed to [b, t, h, d], collapsed to [b, t, h * d] and concatenated
/// into c_attn's [b, t, 3 * h * d] cotangent), the nest writes into its
/// slot of the destination, as empty-tensor elimination does for results
/// placed directly; where the kernel returns it, into the result. Neither
/// needs a scratch buffer and a copy. For a slot the nest and the collapse
/// move down to the insert, after the destination's earlier slots.
static void writeCollapsedResultsInPlace(ModuleOp kernels) {
  SmallVector<tensor::CollapseShapeOp> collapses;
  kernels.walk(
      [&](tensor::CollapseShapeOp collapse) { collapses.push_back(collapse); });
  for (tensor::CollapseShapeOp collapse : collapses) {
    auto producer = collapse.getSrc().getDefiningOp<linalg::GenericOp>();
    if (!collapse->hasOneUse() || !producer || !producer->hasOneUse() ||
        producer.getNumDpsInits() != 1 ||
        !collapse.getSrcType().hasStaticShape())
      continue;
    OpOperand *init = producer.getDpsInitOperand(0);
    if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
        producer.payloadUsesValueFromOperand(init))
      continue;
    Operation *user = *collapse->getUsers().begin();
    auto insert = dyn_cast<tensor::InsertSliceOp>(user);
    bool intoSlot = insert && insert.getSource() == collapse.getResult() &&
                    insert->getBlock() == producer->getBlock();
    if (!intoSlot && !isa<func::ReturnOp>(user))
      continue;
    if (intoSlot) {
      producer->moveBefore(insert);
      collapse->moveBefore(insert);
    }
    OpBuilder builder(producer);
    Location loc = collapse.getLoc();
    RankedTensorType collapsed = collapse.getResultType();
    Value target =
        intoSlot
            ? Value(tensor::ExtractSliceOp::create(
                  builder, loc, collapsed, insert.getDest(),
                  insert.getMixedOffsets(), insert.getMixedSizes(),
                  insert.getMixedStrides()))
            : Value(tensor::EmptyOp::create(builder, loc, collapsed.getShape(),
                                            collapsed.getElementType()));
    init->set(tensor::ExpandShapeOp::create(
        builder, loc, collapse.getSrcType(), target,
        collapse.getReassociationIndices()));
  }
}

LogicalResult mlir::titan::bufferizeKernels(ModuleOp kernels) {
  MLIRContext *context = kernels.getContext();
  for (auto kernel : kernels.getOps<func::FuncOp>())
    if (failed(convertTitanToLinalg(kernel)))
      return failure();
  {
    PassManager pm(context);
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  for (auto kernel : kernels.getOps<func::FuncOp>())
    copyWideningCastsPerConsumer(kernel);
  computeOnlySlicesRead(kernels);
  {
    PassManager pm(context);
    pm.addPass(createLinalgElementwiseOpFusionPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  // A producer both siblings read (SwiGLU's gate) has one consumer once
  // they are one: fused in turn.
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    fuseProducersIntoTheirConsumer(kernel);
    bool siblings = false;
    while (fuseSiblingLoopNests(kernel)) {
      fuseProducersIntoTheirConsumer(kernel);
      siblings = true;
    }
    // The merged nest reads an input the fused producer read too once.
    if (siblings) {
      RewritePatternSet patterns(context);
      linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
      (void)applyPatternsGreedily(kernel, std::move(patterns));
    }
  }
  {
    PassManager pm(context);
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  // The number of inputs and results of each kernel, for after
  // bufferization has made the results parameters.
  llvm::StringMap<std::pair<unsigned, unsigned>> arity;
  for (auto kernel : kernels.getOps<func::FuncOp>())
    arity[kernel.getSymName()] = {kernel.getNumArguments(),
                                  kernel.getNumResults()};
  unshareFills(kernels);
  writeCollapsedResultsInPlace(kernels);
  {
    PassManager pm(context);
    // Producers of pad/concat slices write into the slice directly.
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
    pm.addPass(createCanonicalizerPass());
    bufferization::OneShotBufferizePassOptions bufferize;
    bufferize.bufferizeFunctionBoundaries = true;
    bufferize.functionBoundaryTypeConversion =
        bufferization::LayoutMapOption::IdentityLayoutMap;
    pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
    // A returned view of an allocation (collapse_shape of expand_shape) is
    // the allocation, which then becomes the result parameter.
    pm.addPass(createCanonicalizerPass());
    bufferization::BufferResultsToOutParamsPassOptions outParams;
    outParams.hoistStaticAllocs = true;
    outParams.modifyPublicFunctions = true;
    pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
    pm.addPass(createCanonicalizerPass());
    // A slot written in place (writeCollapsedResultsInPlace) is copied onto
    // itself: the two subviews become one, and the copy goes.
    pm.addPass(createCSEPass());
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    if (failed(hoistAllocations(kernel)))
      return failure();
    auto [numInputs, numResults] = arity.lookup(kernel.getSymName());
    recordInPlaceOperands(kernel, numInputs, numResults);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// lowerKernelsToLLVM
//===----------------------------------------------------------------------===//

namespace {

/// memref.copy -> linalg.copy, which becomes a loop nest (the LLVM lowering
/// of a strided memref.copy calls a library function titan does not link).
struct CopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp copy,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
    return success();
  }
};

} // namespace

LogicalResult mlir::titan::convertCopiesToLinalg(ModuleOp kernels) {
  MLIRContext *context = kernels.getContext();
  RewritePatternSet patterns(context);
  patterns.add<CopyToLinalg>(context);
  return applyPatternsGreedily(kernels, std::move(patterns));
}

void mlir::titan::allowReassociation(ModuleOp kernels) {
  auto flags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
  kernels.walk([&](Operation *op) {
    if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
            arith::NegFOp>(op))
      op->setAttr(cast<arith::ArithFastMathInterface>(op).getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(kernels.getContext(), flags));
  });
}

void mlir::titan::markNoAlias(ModuleOp kernels) {
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    llvm::SmallDenseSet<int64_t> shared;
    if (auto inPlace = kernel->getAttrOfType<DenseI64ArrayAttr>(
            TitanDialect::kInPlaceAttrName))
      shared.insert(inPlace.asArrayRef().begin(), inPlace.asArrayRef().end());
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
      if (!shared.contains(i))
        kernel.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                          UnitAttr::get(kernels.getContext()));
  }
}

LogicalResult mlir::titan::lowerKernelsToLLVM(ModuleOp kernels) {
  MLIRContext *context = kernels.getContext();
  if (failed(convertCopiesToLinalg(kernels)))
    return failure();
  {
    PassManager pm(context);
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createSCFToControlFlowPass());
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  {
    RewritePatternSet patterns(context);
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(kernels, std::move(patterns))))
      return failure();
  }
  {
    // bf16 rounding as integer arithmetic: LLVM's lowering of truncf to
    // bf16 calls a library function that libgcc does not have.
    RewritePatternSet patterns(context);
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(kernels, std::move(patterns))))
      return failure();
  }
  allowReassociation(kernels);
  markNoAlias(kernels);
  {
    PassManager pm(context);
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createArithToLLVMConversionPass());
    ConvertFuncToLLVMPassOptions func;
    func.useBarePtrCallConv = true;
    pm.addPass(createConvertFuncToLLVMPass(func));
    pm.addPass(createConvertControlFlowToLLVMPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  for (auto kernel : kernels.getOps<LLVM::LLVMFuncOp>())
    kernel.setNoInline(true);
  return success();
}
