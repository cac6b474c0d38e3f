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

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::titan;

//===----------------------------------------------------------------------===//
// In-place analysis (on linalg over tensors, after fusion)
//===----------------------------------------------------------------------===//

/// The input of `kernel` whose buffer result `index` may share: a kernel
/// argument of the result's type that the loop nest producing the result
/// reads with the indexing map of the result's own output (so each element
/// is read before it is overwritten) and that nothing after it reads (loop
/// nests before it, such as a norm's reduction, have finished); -1 if none.
static int64_t findInPlaceOperand(func::FuncOp kernel, unsigned index) {
  auto ret = cast<func::ReturnOp>(kernel.getBody().front().getTerminator());
  Value result = ret.getOperand(index);
  auto generic = result.getDefiningOp<linalg::GenericOp>();
  if (!generic || llvm::count(ret.getOperands(), result) != 1)
    return -1;
  unsigned resultNumber = cast<OpResult>(result).getResultNumber();
  OpOperand *output = generic.getDpsInitOperand(resultNumber);
  AffineMap outputMap = generic.getMatchingIndexingMap(output);
  if (!outputMap.isIdentity() || generic.getNumReductionLoops() != 0)
    return -1;
  for (BlockArgument arg : kernel.getArguments()) {
    if (arg.getType() != result.getType())
      continue;
    bool readHere = false;
    bool legal = llvm::all_of(arg.getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (user != generic.getOperation())
        return user->getBlock() == generic->getBlock() &&
               user->isBeforeInBlock(generic);
      readHere = true;
      return generic.isDpsInput(&use) &&
             generic.getMatchingIndexingMap(&use) == outputMap;
    });
    if (legal && readHere)
      return arg.getArgNumber();
  }
  return -1;
}

/// Records titan.in_place on every kernel of `kernels`: pairs of (input
/// parameter, output parameter) that may share a buffer, where the output
/// parameter of result i is the one after the inputs.
static void recordInPlaceOperands(ModuleOp kernels) {
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    SmallVector<int64_t> pairs;
    for (unsigned i = 0; i < kernel.getNumResults(); ++i)
      if (int64_t input = findInPlaceOperand(kernel, i); input >= 0)
        pairs.append({input, kernel.getNumArguments() + i});
    kernel->setAttr(TitanDialect::kInPlaceAttrName,
                    DenseI64ArrayAttr::get(kernels.getContext(), pairs));
  }
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

LogicalResult mlir::titan::bufferizeKernels(ModuleOp kernels) {
  MLIRContext *context = kernels.getContext();
  for (auto kernel : kernels.getOps<func::FuncOp>())
    if (failed(convertTitanToLinalg(kernel)))
      return failure();
  {
    PassManager pm(context);
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createLinalgElementwiseOpFusionPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  recordInPlaceOperands(kernels);
  unshareFills(kernels);
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
    bufferization::BufferResultsToOutParamsPassOptions outParams;
    outParams.hoistStaticAllocs = true;
    outParams.modifyPublicFunctions = true;
    pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  for (auto kernel : kernels.getOps<func::FuncOp>())
    if (failed(hoistAllocations(kernel)))
      return failure();
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

/// Lets the floating-point arithmetic of kernels be reassociated and
/// contracted (reductions vectorize, a * b + c becomes an FMA); NaN and
/// infinity keep their meaning (masks are -inf).
static void allowReassociation(ModuleOp kernels) {
  auto flags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
  kernels.walk([&](arith::ArithFastMathInterface op) {
    op->setAttr(op.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(kernels.getContext(), flags));
  });
}

/// Marks every buffer parameter of the kernels `llvm.noalias`, but the pairs
/// that titan.in_place lets share memory.
static void markNoAlias(ModuleOp kernels) {
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
  {
    RewritePatternSet patterns(context);
    patterns.add<CopyToLinalg>(context);
    if (failed(applyPatternsGreedily(kernels, std::move(patterns))))
      return failure();
  }
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
