//===- GpuKernelLowering.cpp - kernels as CUDA launches -------------------===//
//
// Kernels go through upstream MLIR's GPU path: linalg -> scf.parallel loop
// nests (reductions as scf.for inside) -> one mapped nest per loop nest
// (blocks x threads over the collapsed parallel dimensions) -> gpu.launch
// -> outlined gpu.func in one gpu.module -> NVVM -> a fatbin (ptxas,
// fatbinary, libdevice of the CUDA toolkit) -> host functions of
// gpu.launch_func on the rank's stream. What upstream does not do is here:
// the mapping, running the code outside loop nests on the device, keeping
// every value a kernel needs inside it, one binary for all kernels, the
// stream, and checking that no host function touches memory.
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/GpuKernelLowering.h"

#include "titan/Codegen/CudaToolkit.h"
#include "titan/Codegen/KernelLowering.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::titan;

/// The one gpu.module (then gpu.binary) holding every device function.
static constexpr StringLiteral kBinaryName = "titan_kernels";
/// The runtime function returning the rank's compute stream (void *).
static constexpr StringLiteral kStreamFunction = "titanrt_cuda_stream";

void mlir::titan::registerGpuKernelLoweringDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect,
                  cf::ControlFlowDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect,
                  ub::UBDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  // convert-gpu-to-nvvm lowers what the device code holds besides GPU ops
  // and math through these interfaces of the loaded dialects.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  registerGpuKernelTranslations(registry);
}

void mlir::titan::registerGpuKernelTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

std::string mlir::titan::getCudaToolkitPath(const GpuKernelOptions &options) {
  if (!options.toolkitPath.empty())
    return options.toolkitPath;
  StringRef configured = kTitanCudaToolkitDir;
  return configured.empty() ? "/usr/local/cuda" : configured.str();
}

/// Fails with an error naming the fix when the toolkit lacks a program the
/// device compilation runs.
static LogicalResult checkToolkit(ModuleOp kernels, StringRef toolkit) {
  for (StringRef program : {"ptxas", "fatbinary"}) {
    SmallString<128> path(toolkit);
    llvm::sys::path::append(path, "bin", program);
    if (!llvm::sys::fs::can_execute(path))
      return kernels.emitError()
             << "compiling kernels for CUDA needs " << program
             << " of the CUDA toolkit, but '" << path
             << "' is not an executable (install the CUDA toolkit, or name "
                "its folder with the cuda-toolkit option)";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Loop nests
//===----------------------------------------------------------------------===//

/// Reorders the loops of every linalg op with reductions so that its
/// parallel dimensions come first: each loop nest is then one scf.parallel
/// with its reductions as scf.for inside (a column sum would otherwise be a
/// sequential loop around parallel ones).
static LogicalResult moveReductionsInward(ModuleOp kernels) {
  SmallVector<linalg::LinalgOp> ops;
  kernels.walk([&](linalg::LinalgOp op) {
    if (op.getNumReductionLoops() != 0)
      ops.push_back(op);
  });
  IRRewriter rewriter(kernels.getContext());
  for (linalg::LinalgOp op : ops) {
    rewriter.setInsertionPoint(op);
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> generalized =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(generalized))
        return op.emitOpError("cannot be generalized for the GPU lowering");
      generic = *generalized;
    }
    SmallVector<unsigned> order;
    SmallVector<utils::IteratorType> iterators =
        generic.getIteratorTypesArray();
    for (auto [dim, iterator] : llvm::enumerate(iterators))
      if (iterator == utils::IteratorType::parallel)
        order.push_back(dim);
    for (auto [dim, iterator] : llvm::enumerate(iterators))
      if (iterator != utils::IteratorType::parallel)
        order.push_back(dim);
    if (failed(linalg::interchangeGenericOp(rewriter, generic, order)))
      return generic.emitOpError("cannot move its reductions inward");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Row reductions: one block per output element
//===----------------------------------------------------------------------===//

/// Bytes a thread reads of each operand at once: one 16-byte access, the
/// widest global load and store.
static constexpr int64_t kVectorBytes = 16;
/// The most consecutive values one thread handles at once (8 bf16 values).
static constexpr int64_t kMaxValuesPerThread = 8;

/// How many consecutive values a thread handles at once when the narrowest
/// memory operand has `narrowestBytes` bytes: those of kVectorBytes (8 of
/// bf16, 4 of f32), halved until they divide `extent`, the innermost
/// loop's.
static int64_t getValuesPerThread(int64_t narrowestBytes, int64_t extent) {
  int64_t values = std::min(
      kMaxValuesPerThread, kVectorBytes / std::max<int64_t>(narrowestBytes, 1));
  while (values > 1 && extent % values != 0)
    values /= 2;
  return values;
}

/// The bytes of an element of `type`'s (a memref's) element type (8 for
/// `index`, which the device code keeps in 64 bits).
static int64_t getElementBytes(Type type) {
  Type element = cast<MemRefType>(type).getElementType();
  return element.isIntOrFloat()
             ? llvm::divideCeil(element.getIntOrFloatBitWidth(), 8)
             : 8;
}

/// The indices V step, V step + 1, ..., V step + V - 1 of the V = `values`
/// consecutive values a thread handles at `step` (index-typed): their
/// addresses differ by constants, which is what lets NVPTX's load-store
/// vectorizer merge their accesses.
static SmallVector<Value> buildConsecutiveIndices(OpBuilder &builder,
                                                  Location loc, Value step,
                                                  int64_t values) {
  Value first = arith::MulIOp::create(
      builder, loc, step, arith::ConstantIndexOp::create(builder, loc, values));
  SmallVector<Value> indices = {first};
  for (int64_t j = 1; j < values; ++j)
    indices.push_back(arith::AddIOp::create(
        builder, loc, first, arith::ConstantIndexOp::create(builder, loc, j)));
  return indices;
}

namespace {

/// A reduction of the trailing loops of a linalg.generic into an output
/// indexed by the leading (parallel) loops, whose region folds each value
/// into the
/// accumulator with one commutative operation: sums, maxima and minima of
/// rows (norms, softmax, cross-entropy, a gradient's squared norm).
struct RowReduction {
  linalg::GenericOp op;
  /// The region's op that folds a value into the accumulator.
  Operation *combiner;
  gpu::AllReduceOperation kind;
  /// The combiner's neutral element.
  TypedAttr identity;
  /// The sizes of the leading (parallel) loops and of the trailing
  /// (reduction) ones, and how many values a row has.
  SmallVector<int64_t> parallelSizes, reductionSizes;
  int64_t reductionSize = 0;
  /// How many consecutive values of a row each thread reads per step: 16
  /// bytes of its narrowest input (getValuesPerThread's rule), dividing
  /// the innermost reduction loop.
  int64_t valuesPerThread = 1;
};

} // namespace

/// The block-wide all-reduce and neutral element of `combiner`, if it is
/// a floating-point fold titan maps block-wide.
static std::optional<std::pair<gpu::AllReduceOperation, TypedAttr>>
getReductionKind(Operation *combiner) {
  auto type = dyn_cast<FloatType>(combiner->getResult(0).getType());
  if (!type)
    return std::nullopt;
  Builder builder(combiner->getContext());
  auto of = [&](gpu::AllReduceOperation kind, double identity) {
    return std::make_pair(kind,
                          TypedAttr(builder.getFloatAttr(type, identity)));
  };
  double inf = std::numeric_limits<double>::infinity();
  if (isa<arith::AddFOp>(combiner))
    return of(gpu::AllReduceOperation::ADD, 0.0);
  if (isa<arith::MulFOp>(combiner))
    return of(gpu::AllReduceOperation::MUL, 1.0);
  if (isa<arith::MaximumFOp>(combiner))
    return of(gpu::AllReduceOperation::MAXIMUMF, -inf);
  if (isa<arith::MinimumFOp>(combiner))
    return of(gpu::AllReduceOperation::MINIMUMF, inf);
  if (isa<arith::MaxNumFOp>(combiner))
    return of(gpu::AllReduceOperation::MAXNUMF, -inf);
  if (isa<arith::MinNumFOp>(combiner))
    return of(gpu::AllReduceOperation::MINNUMF, inf);
  return std::nullopt;
}

/// `op` as a RowReduction, if it is one with static sizes and at least
/// `minSize` values per output element (shorter rows stay one thread's).
static std::optional<RowReduction> matchRowReduction(linalg::GenericOp op,
                                                     int64_t minSize) {
  unsigned loops = op.getNumLoops();
  unsigned reductions = op.getNumReductionLoops();
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      reductions == 0)
    return std::nullopt;
  unsigned parallelLoops = loops - reductions;
  for (auto [dim, iterator] : llvm::enumerate(op.getIteratorTypesArray()))
    if ((iterator == utils::IteratorType::reduction) != (dim >= parallelLoops))
      return std::nullopt;
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  if (llvm::any_of(sizes, ShapedType::isDynamic))
    return std::nullopt;
  int64_t rowSize = 1;
  for (int64_t size : ArrayRef(sizes).drop_front(parallelLoops))
    rowSize *= size;
  if (rowSize < minSize)
    return std::nullopt;
  // The output is indexed by the parallel loops, in order.
  SmallVector<AffineExpr> parallel;
  for (unsigned dim = 0; dim < parallelLoops; ++dim)
    parallel.push_back(getAffineDimExpr(dim, op.getContext()));
  if (op.getMatchingIndexingMap(op.getDpsInitOperand(0)) !=
      AffineMap::get(loops, 0, parallel, op.getContext()))
    return std::nullopt;
  for (OpOperand *input : op.getDpsInputOperands())
    if (!op.getMatchingIndexingMap(input).isProjectedPermutation())
      return std::nullopt;
  Block &body = op.getRegion().front();
  BlockArgument accumulator = body.getArgument(op.getNumDpsInputs());
  Value folded = body.getTerminator()->getOperand(0);
  Operation *combiner = folded.getDefiningOp();
  if (!combiner || combiner->getBlock() != &body ||
      combiner->getNumOperands() != 2 || !accumulator.hasOneUse() ||
      accumulator.getUses().begin()->getOwner() != combiner)
    return std::nullopt;
  std::optional<std::pair<gpu::AllReduceOperation, TypedAttr>> kind =
      getReductionKind(combiner);
  if (!kind)
    return std::nullopt;
  int64_t narrowest = kVectorBytes;
  for (OpOperand *input : op.getDpsInputOperands())
    if (isa<MemRefType>(input->get().getType()))
      narrowest = std::min(narrowest, getElementBytes(input->get().getType()));
  return RowReduction{
      op,
      combiner,
      kind->first,
      kind->second,
      SmallVector<int64_t>(sizes.begin(), sizes.begin() + parallelLoops),
      SmallVector<int64_t>(sizes.begin() + parallelLoops, sizes.end()),
      rowSize,
      getValuesPerThread(narrowest, sizes.back())};
}

namespace {

/// Builds the launches of one RowReduction before its op.
class RowReductionLowering {
public:
  RowReductionLowering(const RowReduction &reduction)
      : reduction(reduction), op(reduction.op), builder(op), loc(op.getLoc()),
        indices(op.getNumLoops()) {}

  /// One block of `threads` threads per output element (its index the
  /// block's): thread t folds the row's steps t, t + threads, ... (V =
  /// valuesPerThread consecutive values each, foldRow), and thread 0 folds
  /// the block's total into the output.
  void lowerPerRow(int64_t rows, int64_t threads) {
    launch(rows, threads, [&](Value block, Value thread) {
      delinearize(block, reduction.parallelSizes, 0);
      Value total = foldRow(thread, index(threads));
      SmallVector<Value> outputAt(indices.begin(),
                                  indices.begin() + getNumParallelLoops());
      foldInto(total, op.getDpsInitOperand(0)->get(), outputAt, thread);
    });
  }

  /// A reduction to one element in two launches: `blocks` blocks of
  /// `threads` threads fold the steps j, j + blocks x threads, ... from
  /// their first (block x threads + thread; V = valuesPerThread
  /// consecutive values each, foldRow), each block's total into
  /// `partials` (a device global of at least `blocks` elements); then one
  /// block of `blocks` threads combines the partials in a fixed order, so
  /// the result does not depend on the blocks' timing, and folds the total
  /// into the output.
  void lowerPerGrid(int64_t blocks, int64_t threads,
                    memref::GlobalOp partials) {
    launch(blocks, threads, [&](Value block, Value thread) {
      Value first = arith::AddIOp::create(
          builder, loc,
          arith::MulIOp::create(builder, loc, block, index(threads)), thread);
      Value total = foldRow(first, index(blocks * threads));
      onFirstThread(thread, [&] {
        memref::StoreOp::create(builder, loc, total, getPartials(partials),
                                ValueRange{block});
      });
    });
    launch(1, blocks, [&](Value, Value thread) {
      Value partial =
          memref::LoadOp::create(builder, loc, getPartials(partials), thread);
      foldInto(allReduce(partial), op.getDpsInitOperand(0)->get(), {}, thread);
    });
  }

private:
  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(builder, loc, value);
  }
  unsigned getNumParallelLoops() const {
    return reduction.parallelSizes.size();
  }

  /// A gpu.launch of `blocks` x `threads` before the op, its body built by
  /// `body(block id, thread id)`.
  void launch(int64_t blocks, int64_t threads,
              function_ref<void(Value, Value)> body) {
    builder.setInsertionPoint(op);
    Value one = index(1);
    auto launch = gpu::LaunchOp::create(builder, loc, index(blocks), one, one,
                                        index(threads), one, one);
    Block &launchBody = launch.getBody().front();
    builder.setInsertionPointToStart(&launchBody);
    body(launch.getBlockIds().x, launch.getThreadIds().x);
    builder.setInsertionPointToEnd(&launchBody);
    gpu::TerminatorOp::create(builder, loc);
  }

  /// Sets `indices` of the loops of `sizes` from `first` on to the
  /// coordinates of the row-major linear index `linear`.
  void delinearize(Value linear, ArrayRef<int64_t> sizes, unsigned first) {
    for (int64_t dim = int64_t(sizes.size()) - 1; dim >= 0; --dim) {
      Value size = index(sizes[dim]);
      indices[first + dim] = arith::RemUIOp::create(builder, loc, linear, size);
      linear = arith::DivUIOp::create(builder, loc, linear, size);
    }
  }

  /// The block's total of the region folded over the row's steps `first`,
  /// `first` + `stride`, ...: step s is the V = valuesPerThread consecutive
  /// values from V s (linear indices of the reduction loops; V divides the
  /// innermost), folded from the combiner's neutral element; combined over
  /// the block's threads.
  Value foldRow(Value first, Value stride) {
    const int64_t values = reduction.valuesPerThread;
    Value identity =
        arith::ConstantOp::create(builder, loc, reduction.identity);
    auto loop = scf::ForOp::create(builder, loc, first,
                                   index(reduction.reductionSize / values),
                                   stride, ValueRange{identity});
    builder.setInsertionPointToStart(loop.getBody());
    // The step's coordinates, its innermost one in units of V; value j is
    // at V times that plus j.
    SmallVector<int64_t> stepSizes = reduction.reductionSizes;
    stepSizes.back() /= values;
    delinearize(loop.getInductionVar(), stepSizes, getNumParallelLoops());
    SmallVector<SmallVector<Value>> valueIndices(values, indices);
    for (auto [at, innermost] : llvm::zip(
             valueIndices,
             buildConsecutiveIndices(builder, loc, indices.back(), values)))
      at.back() = innermost;
    Block &body = op.getRegion().front();
    // Every value's loads first, next to each other (one vector load where
    // the addresses allow), then the folds in order.
    SmallVector<IRMapping> mappings(values);
    for (auto [at, mapping] : llvm::zip(valueIndices, mappings))
      for (auto [position, input] : llvm::enumerate(op.getDpsInputOperands())) {
        Value value = input->get();
        if (isa<MemRefType>(value.getType())) {
          AffineMap map = op.getMatchingIndexingMap(input);
          value = memref::LoadOp::create(
              builder, loc, value,
              llvm::map_to_vector(map.getResults(), [&](AffineExpr expr) {
                return at[cast<AffineDimExpr>(expr).getPosition()];
              }));
        }
        mapping.map(body.getArgument(position), value);
      }
    Value accumulated = loop.getRegionIterArg(0);
    for (auto [at, mapping] : llvm::zip(valueIndices, mappings)) {
      mapping.map(body.getArgument(op.getNumDpsInputs()), accumulated);
      for (Operation &inner : body.without_terminator()) {
        if (auto dim = dyn_cast<linalg::IndexOp>(inner))
          mapping.map(dim.getResult(), at[dim.getDim()]);
        else
          builder.clone(inner, mapping);
      }
      accumulated = mapping.lookup(body.getTerminator()->getOperand(0));
    }
    scf::YieldOp::create(builder, loc, accumulated);
    builder.setInsertionPointAfter(loop);
    return allReduce(loop.getResult(0));
  }

  /// `value` combined over the block's threads (gpu.all_reduce).
  Value allReduce(Value value) {
    return gpu::AllReduceOp::create(
        builder, loc, value,
        gpu::AllReduceOperationAttr::get(op.getContext(), reduction.kind),
        builder.getUnitAttr());
  }

  /// Runs `body` on thread 0 (of `thread`) only.
  void onFirstThread(Value thread, function_ref<void()> body) {
    Value first = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                        thread, index(0));
    auto onlyFirst = scf::IfOp::create(builder, loc, first,
                                       /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(onlyFirst.thenBlock());
    body();
  }

  /// Thread 0 folds `total` into `target` at `at` with the combiner.
  void foldInto(Value total, Value target, ValueRange at, Value thread) {
    onFirstThread(thread, [&] {
      Value old = memref::LoadOp::create(builder, loc, target, at);
      BlockArgument accumulator =
          op.getRegion().front().getArgument(op.getNumDpsInputs());
      IRMapping fold;
      for (Value operand : reduction.combiner->getOperands())
        fold.map(operand, operand == accumulator ? old : total);
      Value updated = builder.clone(*reduction.combiner, fold)->getResult(0);
      memref::StoreOp::create(builder, loc, updated, target, at);
    });
  }

  Value getPartials(memref::GlobalOp partials) {
    return memref::GetGlobalOp::create(builder, loc, partials.getType(),
                                       partials.getSymName());
  }

  const RowReduction &reduction;
  linalg::GenericOp op;
  OpBuilder builder;
  Location loc;
  /// The loops' indices at the point being built.
  SmallVector<Value> indices;
};

} // namespace

/// The most blocks of the first launch of a two-launch reduction.
static constexpr int64_t kMaxGridBlocks = 1024;

/// The device global holding the blocks' partial results of the two-launch
/// reductions of `type` in `kernels` (kMaxGridBlocks elements), shared by
/// all of them: the launches of a stream run one at a time.
static memref::GlobalOp getPartialsGlobal(ModuleOp kernels, Type type) {
  std::string name;
  llvm::raw_string_ostream(name) << "titan_partials_" << type;
  if (auto global = kernels.lookupSymbol<memref::GlobalOp>(name))
    return global;
  OpBuilder builder(kernels.getBodyRegion());
  return memref::GlobalOp::create(
      builder, kernels.getLoc(), name, builder.getStringAttr("private"),
      MemRefType::get({kMaxGridBlocks}, type), builder.getUnitAttr(),
      /*constant=*/false, /*alignment=*/nullptr);
}

/// Lowers every row reduction of `kernels` with rows of at least
/// `threadsPerBlock` / 4 values: one block per output element, or, for one
/// output of at least 64 x `threadsPerBlock` values (a sum over a whole
/// tensor: a gradient's squared norm), two launches over a grid of blocks;
/// the other reductions stay loops, one thread per output element.
static void lowerRowReductions(ModuleOp kernels, int64_t threadsPerBlock) {
  SmallVector<RowReduction> reductions;
  kernels.walk([&](linalg::GenericOp op) {
    if (std::optional<RowReduction> reduction =
            matchRowReduction(op, threadsPerBlock / 4))
      reductions.push_back(*reduction);
  });
  for (const RowReduction &reduction : reductions) {
    int64_t rows = 1;
    for (int64_t size : reduction.parallelSizes)
      rows *= size;
    int64_t values = reduction.reductionSize;
    RowReductionLowering lowering(reduction);
    if (rows == 1 && values >= 64 * threadsPerBlock) {
      // About 4 values per thread, in whole warps of blocks.
      int64_t blocks = std::clamp<int64_t>(
          llvm::alignTo(llvm::divideCeil(values, 4 * threadsPerBlock), 32), 32,
          kMaxGridBlocks);
      lowering.lowerPerGrid(
          blocks, threadsPerBlock,
          getPartialsGlobal(kernels, reduction.identity.getType()));
    } else {
      lowering.lowerPerRow(
          rows,
          std::min<int64_t>(
              threadsPerBlock,
              llvm::alignTo(llvm::divideCeil(values, reduction.valuesPerThread),
                            32)));
    }
    linalg::GenericOp(reduction.op).erase();
  }
}

/// Whether `op`, at the top level of a kernel, must run on the device: it
/// touches memory, holds code, or uses a value of such an op.
static bool runsOnDevice(Operation *op,
                         const llvm::SmallPtrSetImpl<Operation *> &device) {
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
    return true;
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    Operation *producer = operand.getDefiningOp();
    return producer && device.contains(producer);
  });
}

/// Puts `ops` (consecutive device code of `kernel` outside loop nests: a
/// reduction to a 0-d buffer, a scalar copy) into a one-iteration
/// scf.parallel after the last of them.
static LogicalResult wrapInLoop(func::FuncOp kernel,
                                ArrayRef<Operation *> ops) {
  OpBuilder builder(ops.back()->getNextNode());
  Location loc = ops.front()->getLoc();
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  auto loop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                      ValueRange{one}, ValueRange{one});
  Operation *terminator = loop.getBody()->getTerminator();
  for (Operation *op : ops)
    op->moveBefore(terminator);
  for (Operation *op : ops)
    for (Operation *user : op->getUsers())
      if (!loop->isAncestor(user))
        return user->emitOpError("in kernel '")
               << kernel.getSymName()
               << "' uses a value computed outside its loop nests, which "
                  "the GPU lowering cannot pass between launches";
  return success();
}

/// Puts the device code of `kernel` outside loop nests into loops of its
/// own, so that every top-level op touching memory is an scf.parallel.
static LogicalResult wrapCodeOutsideLoops(func::FuncOp kernel) {
  SmallVector<SmallVector<Operation *>> groups(1);
  llvm::SmallPtrSet<Operation *, 16> device;
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (isa<scf::ParallelOp, gpu::LaunchOp>(op)) {
      groups.emplace_back();
      continue;
    }
    if (!runsOnDevice(&op, device))
      continue;
    device.insert(&op);
    groups.back().push_back(&op);
  }
  for (ArrayRef<Operation *> group : groups)
    if (!group.empty() && failed(wrapInLoop(kernel, group)))
      return failure();
  return success();
}

/// The GPU processor mapping of a one-dimensional scf.parallel.
static void mapTo(scf::ParallelOp loop, gpu::Processor processor) {
  MLIRContext *context = loop.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  (void)gpu::setMappingAttr(loop, {gpu::ParallelLoopDimMappingAttr::get(
                                      context, processor, identity, identity)});
}

/// The number of iterations of `loop` (all of its dimensions), if static.
static std::optional<int64_t> getIterationCount(scf::ParallelOp loop) {
  int64_t count = 1;
  for (auto [lower, upper, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> from = getConstantIntValue(lower);
    std::optional<int64_t> to = getConstantIntValue(upper);
    std::optional<int64_t> by = getConstantIntValue(step);
    if (!from || !to || !by || *by <= 0)
      return std::nullopt;
    count *= std::max<int64_t>(0, llvm::divideCeil(*to - *from, *by));
  }
  return count;
}

/// How many consecutive iterations of the innermost dimension of `loop` one
/// thread should run: those of kVectorBytes of its narrowest memory
/// operand (8 of bf16, 4 of f32), halved until they divide the dimension.
/// 1 when the body is not straight-line (a nested loop: a reduction) or
/// the innermost dimension is not a static range from 0 by 1.
static int64_t getValuesPerThread(scf::ParallelOp loop) {
  unsigned last = loop.getNumLoops() - 1;
  std::optional<int64_t> lower =
      getConstantIntValue(loop.getLowerBound()[last]);
  std::optional<int64_t> upper =
      getConstantIntValue(loop.getUpperBound()[last]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[last]);
  if (lower != 0 || step != 1 || !upper || *upper <= 0)
    return 1;
  int64_t narrowest = kVectorBytes;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return 1;
    if (auto load = dyn_cast<memref::LoadOp>(op))
      narrowest = std::min(narrowest, getElementBytes(load.getMemRefType()));
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      narrowest = std::min(narrowest, getElementBytes(store.getMemRefType()));
  }
  return getValuesPerThread(narrowest, *upper);
}

/// Makes each iteration of `loop` run `values` consecutive iterations of
/// its innermost dimension (which `values` divides): the dimension's range
/// shrinks by that factor, and each operation of the straight-line body is
/// repeated for the iterations in turn, so that loads (and stores) of
/// neighbouring elements are adjacent and NVPTX's load-store vectorizer
/// can merge them into one vector access. Iterations are independent (a
/// parallel loop), so interleaving theirs keeps each one's own order.
static void unrollInnermost(IRRewriter &rewriter, scf::ParallelOp loop,
                            int64_t values) {
  unsigned last = loop.getNumLoops() - 1;
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> upper(loop.getUpperBound());
  upper[last] = arith::ConstantIndexOp::create(
      rewriter, loc, *getConstantIntValue(upper[last]) / values);
  loop.getUpperBoundMutable().assign(upper);

  Block *body = loop.getBody();
  SmallVector<Operation *> original =
      llvm::to_vector(llvm::make_pointer_range(body->without_terminator()));
  rewriter.setInsertionPointToStart(body);
  Value iv = loop.getInductionVars()[last];
  SmallVector<IRMapping> copies(values);
  for (auto [copy, index] :
       llvm::zip(copies, buildConsecutiveIndices(rewriter, loc, iv, values)))
    copy.map(iv, index);
  for (Operation *op : original) {
    rewriter.setInsertionPoint(op);
    for (IRMapping &copy : copies)
      rewriter.clone(*op, copy);
  }
  for (Operation *op : llvm::reverse(original))
    rewriter.eraseOp(op);
}

/// Maps the loop nest `loop` (a top-level scf.parallel of a kernel) onto
/// the GPU: a straight-line body runs V consecutive iterations of the
/// innermost dimension per thread (getValuesPerThread, unrollInnermost);
/// then the dimensions are collapsed into one of N iterations, which
/// becomes ceil(N / T) blocks of T = min(threadsPerBlock, N) threads, one
/// iteration per thread, with a bounds guard when T does not divide N.
static LogicalResult mapLoopNest(IRRewriter &rewriter, scf::ParallelOp loop,
                                 int64_t threadsPerBlock) {
  if (loop.getNumReductions() != 0)
    return loop.emitOpError("with reductions has no GPU mapping");
  if (int64_t values = getValuesPerThread(loop); values > 1)
    unrollInnermost(rewriter, loop, values);
  std::optional<int64_t> iterations = getIterationCount(loop);
  if (!iterations)
    return loop.emitOpError("needs static bounds on the GPU");
  // Collapsing normalizes the loop: from 0 to `iterations` by 1.
  Operation *next = loop->getNextNode();
  std::vector<unsigned> all(loop.getNumLoops());
  std::iota(all.begin(), all.end(), 0);
  collapseParallelLoops(rewriter, loop, {all});
  loop = cast<scf::ParallelOp>(next->getPrevNode());
  if (*iterations == 0) {
    rewriter.eraseOp(loop);
    return success();
  }
  int64_t threads = std::min(threadsPerBlock, *iterations);
  int64_t blocks = llvm::divideCeil(*iterations, threads);

  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, value);
  };
  Value zero = index(0), one = index(1);
  auto grid =
      scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                              ValueRange{index(blocks)}, ValueRange{one});
  rewriter.setInsertionPointToStart(grid.getBody());
  Value threadCount = index(threads);
  auto block =
      scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                              ValueRange{threadCount}, ValueRange{one});
  rewriter.setInsertionPointToStart(block.getBody());
  Value blockStart = arith::MulIOp::create(
      rewriter, loc, grid.getInductionVars()[0], threadCount);
  Value iteration = arith::AddIOp::create(rewriter, loc, blockStart,
                                          block.getInductionVars()[0]);
  Operation *end = block.getBody()->getTerminator();
  if (*iterations % threads != 0) {
    Value inside =
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                              iteration, index(*iterations));
    auto guard = scf::IfOp::create(rewriter, loc, inside,
                                   /*withElseRegion=*/false);
    end = guard.thenBlock()->getTerminator();
  }
  Operation *oldTerminator = loop.getBody()->getTerminator();
  rewriter.inlineBlockBefore(loop.getBody(), end, ValueRange{iteration});
  rewriter.eraseOp(oldTerminator);
  rewriter.eraseOp(loop);
  mapTo(grid, gpu::Processor::BlockX);
  mapTo(block, gpu::Processor::ThreadX);
  return success();
}

/// Turns every kernel of `kernels` into mapped loop nests (the input of
/// convert-parallel-loops-to-gpu) that hold all of its memory accesses.
static LogicalResult mapKernels(ModuleOp kernels, int64_t threadsPerBlock) {
  IRRewriter rewriter(kernels.getContext());
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    if (failed(wrapCodeOutsideLoops(kernel)))
      return failure();
    SmallVector<scf::ParallelOp> nests(
        kernel.getBody().front().getOps<scf::ParallelOp>());
    for (scf::ParallelOp nest : nests)
      if (failed(mapLoopNest(rewriter, nest, threadsPerBlock)))
        return failure();
  }
  return success();
}

LogicalResult mlir::titan::mapKernelsToGpuLoops(ModuleOp kernels,
                                                int64_t threadsPerBlock,
                                                bool blockReductions) {
  if (failed(convertCopiesToLinalg(kernels)) ||
      failed(moveReductionsInward(kernels)))
    return failure();
  if (blockReductions)
    lowerRowReductions(kernels, threadsPerBlock);
  PassManager pm(kernels.getContext());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  if (failed(pm.run(kernels)))
    return failure();
  return mapKernels(kernels, threadsPerBlock);
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

/// Clones into `launch` the side-effect-free producers of the values its
/// body uses from the host function (constants, views of buffers,
/// memref.get_global), so that only the kernel's parameters cross to the
/// device: a host view or host global is no device address.
static void sinkProducers(gpu::LaunchOp launch) {
  OpBuilder builder(launch.getContext());
  builder.setInsertionPointToStart(&launch.getBody().front());
  IRMapping mapping;
  llvm::SetVector<Operation *> producers;
  SmallVector<Value> worklist;
  launch.getBody().walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      worklist.push_back(operand);
  });
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *producer = value.getDefiningOp();
    if (!producer || launch->isAncestor(producer) ||
        producer->getNumRegions() != 0 || !isMemoryEffectFree(producer) ||
        !producers.insert(producer))
      continue;
    llvm::append_range(worklist, producer->getOperands());
  }
  // Clones in the host function's order: producers before their users.
  SmallVector<Operation *> ordered(producers.begin(), producers.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *producer : ordered) {
    Operation *clone = builder.clone(*producer, mapping);
    for (auto [from, to] :
         llvm::zip(producer->getResults(), clone->getResults()))
      from.replaceUsesWithIf(to, [&](OpOperand &use) {
        return use.getOwner() != launch && launch->isAncestor(use.getOwner());
      });
  }
}

/// Moves the device functions of every gpu.module of `kernels` into one,
/// @titan_kernels, so that one fatbin holds them all (one ptxas run).
static void mergeGpuModules(ModuleOp kernels) {
  SmallVector<gpu::GPUModuleOp> modules(kernels.getOps<gpu::GPUModuleOp>());
  if (modules.empty())
    return;
  OpBuilder builder(modules.front());
  auto merged =
      gpu::GPUModuleOp::create(builder, kernels.getLoc(), kBinaryName);
  SymbolTable symbols(merged);
  // (module, function) -> the function's name in the merged module.
  DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
  for (gpu::GPUModuleOp module : modules) {
    for (Operation &op :
         llvm::make_early_inc_range(module.getBody()->without_terminator())) {
      op.remove();
      // A constant global that several outlined kernels use is cloned into
      // each of their modules: keep one.
      if (auto global = dyn_cast<memref::GlobalOp>(op);
          global && symbols.lookup(global.getSymName())) {
        op.destroy();
        continue;
      }
      StringAttr name = SymbolTable::getSymbolName(&op);
      renamed[{module.getSymNameAttr(), name}] = symbols.insert(&op);
    }
    module.erase();
  }
  kernels.walk([&](gpu::LaunchFuncOp launch) {
    StringAttr name =
        renamed.lookup({launch.getKernelModuleName(), launch.getKernelName()});
    launch.setKernelAttr(SymbolRefAttr::get(merged.getSymNameAttr(),
                                            {FlatSymbolRefAttr::get(name)}));
  });
}

/// Gives each device function's buffer parameter the `llvm.noalias` and
/// `llvm.align` attributes of the host function's parameter that its
/// launches pass it (markNoAlias, and the alignment the memory plan
/// guarantees): NVPTX may then read it through the non-coherent cache, and
/// load and store neighbouring values with one vector access.
static void propagateParameterAttributes(ModuleOp kernels) {
  const StringRef names[] = {LLVM::LLVMDialect::getNoAliasAttrName(),
                             LLVM::LLVMDialect::getAlignAttrName()};
  kernels.walk([&](gpu::LaunchFuncOp launch) {
    auto host = launch->getParentOfType<func::FuncOp>();
    auto device = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
        kernels, launch.getKernel());
    for (auto [index, operand] : llvm::enumerate(launch.getKernelOperands())) {
      auto argument = dyn_cast<BlockArgument>(operand);
      if (!argument || argument.getOwner()->getParentOp() != host)
        continue;
      for (StringRef name : names)
        if (Attribute value = host.getArgAttr(argument.getArgNumber(), name))
          device.setArgAttr(index, name, value);
    }
  });
}

/// Gives every launch of the lowered host functions the stream
/// `titanrt_cuda_stream()` returns (asked once per host function), so that
/// the translation launches on it and neither creates nor synchronizes a
/// stream of its own.
static void launchOnComputeStream(ModuleOp kernels) {
  MLIRContext *context = kernels.getContext();
  auto pointer = LLVM::LLVMPointerType::get(context);
  OpBuilder builder(context);
  builder.setInsertionPointToEnd(kernels.getBody());
  auto streamFunction =
      LLVM::LLVMFuncOp::create(builder, kernels.getLoc(), kStreamFunction,
                               LLVM::LLVMFunctionType::get(pointer, {}));
  for (auto host : kernels.getOps<LLVM::LLVMFuncOp>()) {
    SmallVector<gpu::LaunchFuncOp> launches;
    host.walk([&](gpu::LaunchFuncOp launch) { launches.push_back(launch); });
    if (launches.empty())
      continue;
    builder.setInsertionPointToStart(&host.getBody().front());
    Value stream = LLVM::CallOp::create(builder, host.getLoc(), streamFunction,
                                        ValueRange{})
                       .getResult();
    for (gpu::LaunchFuncOp launch : launches)
      launch.getAsyncObjectMutable().assign(stream);
  }
}

/// Fails with an error naming the kernel when a host function still
/// accesses memory itself: all of a kernel's work must be on the device.
static LogicalResult verifyHostStubs(ModuleOp kernels) {
  for (auto host : kernels.getOps<LLVM::LLVMFuncOp>()) {
    WalkResult result = host.walk([&](Operation *op) {
      if (isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::MemcpyOp, LLVM::MemmoveOp,
              LLVM::MemsetOp, LLVM::AtomicRMWOp, LLVM::AtomicCmpXchgOp>(op) ||
          isa<memref::MemRefDialect, linalg::LinalgDialect, scf::SCFDialect>(
              op->getDialect())) {
        op->emitError("kernel '")
            << host.getSymName()
            << "' accesses memory on the host after its GPU lowering";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// lowerKernelsToNvvm
//===----------------------------------------------------------------------===//

LogicalResult mlir::titan::lowerKernelsToNvvm(ModuleOp kernels,
                                              const GpuKernelOptions &options) {
  MLIRContext *context = kernels.getContext();
  std::string toolkit = getCudaToolkitPath(options);
  if (failed(checkToolkit(kernels, toolkit)))
    return failure();
  if (failed(mapKernelsToGpuLoops(kernels, options.threadsPerBlock,
                                  /*blockReductions=*/true)))
    return failure();
  allowReassociation(kernels);
  markNoAlias(kernels);
  {
    PassManager pm(context);
    pm.addPass(createConvertParallelLoopToGpuPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  kernels.walk([](gpu::LaunchOp launch) { sinkProducers(launch); });
  {
    PassManager pm(context);
    pm.addPass(createGpuKernelOutliningPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  {
    // gpu.all_reduce (block-wide reductions) as warp shuffles and shared
    // memory, in the outlined device functions.
    RewritePatternSet patterns(context);
    populateGpuAllReducePatterns(patterns);
    if (failed(applyPatternsGreedily(kernels, std::move(patterns))))
      return failure();
  }
  mergeGpuModules(kernels);
  propagateParameterAttributes(kernels);
  {
    PassManager pm(context);
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createSCFToControlFlowPass());
    GpuNVVMAttachTargetOptions target;
    target.chip = options.chip;
    target.optLevel = options.optLevel;
    pm.addPass(createGpuNVVMAttachTarget(target));
    ConvertGpuOpsToNVVMOpsOptions nvvm;
    nvvm.useBarePtrCallConv = true;
    pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
    pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
    GpuModuleToBinaryPassOptions binary;
    binary.toolkitPath = toolkit;
    binary.compilationTarget = options.ptxOnly ? "isa" : "fatbin";
    pm.addPass(createGpuModuleToBinaryPass(binary));
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(createArithToLLVMConversionPass());
    ConvertFuncToLLVMPassOptions func;
    func.useBarePtrCallConv = true;
    pm.addPass(createConvertFuncToLLVMPass(func));
    GpuToLLVMConversionPassOptions launches;
    launches.hostBarePtrCallConv = true;
    launches.kernelBarePtrCallConv = true;
    pm.addPass(createGpuToLLVMConversionPass(launches));
    pm.addPass(createReconcileUnrealizedCastsPass());
    if (failed(pm.run(kernels)))
      return failure();
  }
  launchOnComputeStream(kernels);
  if (failed(verifyHostStubs(kernels)))
    return failure();
  for (auto host : kernels.getOps<LLVM::LLVMFuncOp>())
    if (!host.isExternal())
      host.setNoInline(true);
  return success();
}
