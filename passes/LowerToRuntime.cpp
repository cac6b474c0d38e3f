//===- LowerToRuntime.cpp - the step as calls into libtitanrt -------------===//
//
// Implements titan-lower-to-runtime (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/GpuKernelLowering.h"
#include "titan/Codegen/KernelLowering.h"
#include "titan/Codegen/MemoryPlanner.h"
#include "titan/Codegen/ProgramDescription.h"
#include "titan/Passes.h"
#include "titan/Runtime/titanrt.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::titan {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

/// The signatures of titanrt.def, by function name.
static const llvm::StringMap<StringRef> &getRuntimeSignatures() {
  static const llvm::StringMap<StringRef> signatures = {
#define TITANRT_FUNCTION(name, signature) {#name, signature},
#include "titan/Runtime/titanrt.def"
  };
  return signatures;
}

/// The LLVM type of one character of a titanrt.def signature.
static Type signatureType(MLIRContext *context, char code) {
  switch (code) {
  case 'i':
    return IntegerType::get(context, 32);
  case 'l':
    return IntegerType::get(context, 64);
  case 'f':
    return Float32Type::get(context);
  case 'd':
    return Float64Type::get(context);
  default:
    return LLVM::LLVMPointerType::get(context);
  }
}

/// The titanrt_reduce of a reduction kind.
static int32_t runtimeReduce(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return TITANRT_SUM;
  case ReduceKind::Avg:
    return TITANRT_AVG;
  case ReduceKind::Max:
    return TITANRT_MAX;
  case ReduceKind::Min:
    return TITANRT_MIN;
  }
  llvm_unreachable("unknown reduction");
}

/// Bytes of a static tensor.
static int64_t bytesOf(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.getNumElements() * getElementByteWidth(tensor.getElementType());
}

/// Whether `op` stores into the step's own frame (the host table of a
/// runtime call, buildTable), not into the step's memory.
static bool storesIntoFrame(Operation *op) {
  auto store = dyn_cast<LLVM::StoreOp>(op);
  if (!store)
    return false;
  Value address = store.getAddr();
  while (auto gep = address.getDefiningOp<LLVM::GEPOp>())
    address = gep.getBase();
  return address.getDefiningOp<LLVM::AllocaOp>() != nullptr;
}

/// Fails naming the op when the step function of a GPU program accesses
/// memory itself: its regions are the device's, which the host cannot read.
static LogicalResult verifyNoHostAccess(LLVM::LLVMFuncOp function) {
  WalkResult result = function.walk([&](Operation *op) {
    if (!isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::MemcpyOp, LLVM::MemmoveOp,
             LLVM::MemsetOp, LLVM::AtomicRMWOp, LLVM::AtomicCmpXchgOp>(op) ||
        storesIntoFrame(op))
      return WalkResult::advance();
    op->emitError("titan-lower-to-runtime: the step function accesses the "
                  "step's memory on the host ('")
        << op->getName()
        << "'), but a GPU program's memory is the device's: the access must "
           "be a runtime call or a kernel";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

namespace {

/// Builds `llvm.func @titan_program_step` from the planned step function.
class StepLowering {
public:
  /// `communicators`: the communicators numbered first (the pass's option).
  /// `hostMemory`: whether the step's regions are host memory the step
  /// function may access (the CPU target), or the GPU's (then every access
  /// is a runtime call or a kernel launch).
  StepLowering(ModuleOp module, func::FuncOp step,
               ArrayRef<std::vector<std::string>> communicators,
               bool hostMemory)
      : module(module), step(step), context(module.getContext()),
        builder(context), hostMemory(hostMemory), symbols(module) {
    for (ArrayRef<std::string> axes : communicators)
      this->communicators.getIndex(axes);
  }

  /// Builds the step function; fails with an error on an op it cannot
  /// lower.
  LogicalResult run();

  const CommunicatorTable &getCommunicators() const { return communicators; }
  /// The step function, once built.
  LLVM::LLVMFuncOp getFunction() const { return function; }

private:
  LogicalResult lower(Operation *op);
  LogicalResult lowerMatmul(MatmulOp op);
  LogicalResult lowerCopies(func::ReturnOp op);
  LogicalResult lowerFusedAdamW(FusedAdamWOp op);
  LogicalResult lowerSquaredNorm(SquaredNormOp op);
  /// A table of `count` rows of `fields` (a C struct) in the step's frame,
  /// row i filled at the insertion point with `getRow(i)`.
  Value buildTable(Location loc, ArrayRef<Type> fields, int64_t count,
                   function_ref<SmallVector<Value>(int64_t)> getRow);

  /// A pointer to `place`, computed at the insertion point.
  Value pointer(BufferAttr place);
  /// Where `value` lives.
  BufferAttr placeOf(Value value);
  /// A pointer to where `value` lives.
  Value pointer(Value value);
  /// pointer(value), or a null pointer for an absent optional operand or
  /// result.
  Value pointerOrNull(Value value);
  /// A pointer to scratch buffer `index` of `op`.
  Value scratchPointer(Operation *op, unsigned index);
  Value i32(int64_t value);
  Value i64(int64_t value);
  Value f64(double value);
  /// Calls runtime function `name` and returns from the step with its
  /// status when that is not TITANRT_OK.
  void callRuntime(StringRef name, ArrayRef<Value> arguments);
  /// The declaration of runtime function `name` (titanrt.def).
  LLVM::LLVMFuncOp getRuntimeFunction(StringRef name);
  /// The communicator index of a collective's axes.
  Value communicator(ArrayAttr axes) {
    return i32(communicators.getIndex(axes));
  }

  ModuleOp module;
  func::FuncOp step;
  MLIRContext *context;
  OpBuilder builder;
  bool hostMemory;
  CommunicatorTable communicators;
  LLVM::LLVMFuncOp function;
  /// The handle of each asynchronous collective (titanrt_start).
  DenseMap<Operation *, int64_t> asyncHandles;
  /// The id checks lowered so far: names their tables' strings.
  int64_t numIdChecks = 0;
  /// Returns its status argument: where a failed runtime call goes.
  Block *failBlock = nullptr;
  Value contextArg;
  Value bases[3];
  /// The module's functions by name (kernels, runtime declarations).
  SymbolTable symbols;
};

} // namespace

Value StepLowering::i32(int64_t value) {
  return LLVM::ConstantOp::create(builder, step.getLoc(),
                                  builder.getI32IntegerAttr(value));
}

Value StepLowering::i64(int64_t value) {
  return LLVM::ConstantOp::create(builder, step.getLoc(),
                                  builder.getI64IntegerAttr(value));
}

Value StepLowering::f64(double value) {
  return LLVM::ConstantOp::create(builder, step.getLoc(),
                                  builder.getF64FloatAttr(value));
}

Value StepLowering::pointer(BufferAttr place) {
  // Computed where it is used: a pointer live across the whole step would
  // make register allocation of the (huge) step function quadratic.
  Value offset = LLVM::ConstantOp::create(
      builder, step.getLoc(), builder.getI64IntegerAttr(place.getOffset()));
  return LLVM::GEPOp::create(
      builder, step.getLoc(), LLVM::LLVMPointerType::get(context),
      builder.getI8Type(), bases[static_cast<unsigned>(place.getRegion())],
      ValueRange{offset});
}

/// Where titan-plan-memory put `value`, an argument or op result of the
/// planned `step`.
static BufferAttr getPlace(func::FuncOp step, Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return step.getArgAttrOfType<BufferAttr>(arg.getArgNumber(),
                                             TitanDialect::kBufferAttrName);
  auto result = cast<OpResult>(value);
  auto places = result.getOwner()->getAttrOfType<ArrayAttr>(
      TitanDialect::kBuffersAttrName);
  return cast<BufferAttr>(places[result.getResultNumber()]);
}

BufferAttr StepLowering::placeOf(Value value) { return getPlace(step, value); }

/// Keeps in each kernel's titan.in_place only the pairs whose input and
/// result the memory plan put in one place in some launch of `step`, so
/// that the kernels' lowering (markNoAlias) keeps `noalias` on every other
/// parameter: a candidate pair that no launch uses shares no memory.
static void keepPlannedInPlacePairs(func::FuncOp step, ModuleOp kernels) {
  SymbolTable symbols(kernels);
  llvm::StringMap<llvm::SmallSetVector<std::pair<int64_t, int64_t>, 4>> used;
  step.walk([&](LaunchOp launch) {
    auto kernel = symbols.lookup<func::FuncOp>(launch.getKernel());
    auto pairs = kernel ? kernel->getAttrOfType<DenseI64ArrayAttr>(
                              TitanDialect::kInPlaceAttrName)
                        : DenseI64ArrayAttr();
    if (!pairs)
      return;
    auto &kept = used[kernel.getSymName()];
    int64_t numInputs = launch.getInputs().size();
    for (int64_t i = 0; i + 1 < pairs.size(); i += 2) {
      BufferAttr input = getPlace(step, launch.getInputs()[pairs[i]]);
      BufferAttr output =
          getPlace(step, launch.getResult(pairs[i + 1] - numInputs));
      if (input.getRegion() == output.getRegion() &&
          input.getOffset() == output.getOffset())
        kept.insert({pairs[i], pairs[i + 1]});
    }
  });
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    if (!kernel->hasAttr(TitanDialect::kInPlaceAttrName))
      continue;
    SmallVector<int64_t> kept;
    for (auto [input, output] : used.lookup(kernel.getSymName()))
      kept.append({input, output});
    kernel->setAttr(TitanDialect::kInPlaceAttrName,
                    DenseI64ArrayAttr::get(kernel.getContext(), kept));
  }
}

/// The alignment the runtime gives the base of every memory region: the
/// CPU runtime's regions are page-aligned, cudaMalloc's 256-byte aligned.
static constexpr uint64_t kRegionBaseAlignment = 256;

/// Where the arguments of `launch` (in `step`) are, in the order of its
/// kernel's parameters: its inputs, one buffer per result, its scratch.
static SmallVector<BufferAttr> getArgumentPlaces(func::FuncOp step,
                                                 LaunchOp launch) {
  SmallVector<BufferAttr> places;
  for (Value input : launch.getInputs())
    places.push_back(getPlace(step, input));
  for (Value result : launch.getResults())
    places.push_back(getPlace(step, result));
  if (auto scratch =
          launch->getAttrOfType<ArrayAttr>(TitanDialect::kScratchAttrName))
    for (Attribute place : scratch)
      places.push_back(cast<BufferAttr>(place));
  return places;
}

/// Marks each parameter of each kernel `llvm.align` with what every launch
/// of `step` guarantees its pointer: the largest power of two, at most
/// kRegionBaseAlignment, dividing the parameter's offset in its region in
/// all of them (a view inside a buffer may start anywhere). The GPU
/// lowering reads several values with one vector load only from pointers
/// known to be aligned for it.
static void markPlannedAlignment(func::FuncOp step, ModuleOp kernels) {
  SymbolTable symbols(kernels);
  llvm::StringMap<SmallVector<uint64_t>> alignments;
  step.walk([&](LaunchOp launch) {
    auto kernel = symbols.lookup<func::FuncOp>(launch.getKernel());
    if (!kernel)
      return;
    SmallVector<BufferAttr> places = getArgumentPlaces(step, launch);
    auto [entry, first] = alignments.try_emplace(
        kernel.getSymName(), places.size(), kRegionBaseAlignment);
    for (auto [alignment, place] : llvm::zip(entry->second, places))
      alignment = llvm::MinAlign(alignment, place.getOffset());
  });
  Builder builder(kernels.getContext());
  for (auto kernel : kernels.getOps<func::FuncOp>()) {
    auto known = alignments.find(kernel.getSymName());
    if (known == alignments.end() ||
        known->second.size() != kernel.getNumArguments())
      continue;
    for (auto [index, alignment] : llvm::enumerate(known->second))
      kernel.setArgAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                        builder.getI64IntegerAttr(alignment));
  }
}

Value StepLowering::pointer(Value value) { return pointer(placeOf(value)); }

Value StepLowering::pointerOrNull(Value value) {
  if (value)
    return pointer(value);
  return LLVM::ZeroOp::create(builder, step.getLoc(),
                              LLVM::LLVMPointerType::get(context));
}

Value StepLowering::scratchPointer(Operation *op, unsigned index) {
  auto places = op->getAttrOfType<ArrayAttr>(TitanDialect::kScratchAttrName);
  return pointer(cast<BufferAttr>(places[index]));
}

LLVM::LLVMFuncOp StepLowering::getRuntimeFunction(StringRef name) {
  if (auto known = symbols.lookup<LLVM::LLVMFuncOp>(name))
    return known;
  StringRef signature = getRuntimeSignatures().lookup(name);
  // "r(args)": the return type, then the arguments.
  SmallVector<Type> arguments;
  for (char code : signature.drop_front(2).drop_back())
    arguments.push_back(signatureType(context, code));
  auto type = LLVM::LLVMFunctionType::get(
      signatureType(context, signature.front()), arguments);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto function =
      LLVM::LLVMFuncOp::create(builder, module.getLoc(), name, type);
  symbols.insert(function);
  return function;
}

void StepLowering::callRuntime(StringRef name, ArrayRef<Value> arguments) {
  Location loc = step.getLoc();
  auto call =
      LLVM::CallOp::create(builder, loc, getRuntimeFunction(name), arguments);
  Value status = call.getResult();
  Value failed = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::ne,
                                      status, i32(TITANRT_OK));
  Block *next =
      builder.getInsertionBlock()->splitBlock(builder.getInsertionPoint());
  LLVM::CondBrOp::create(builder, loc, failed, failBlock, ValueRange{status},
                         next, ValueRange{});
  builder.setInsertionPointToStart(next);
}

LogicalResult StepLowering::lowerMatmul(MatmulOp op) {
  auto lhs = cast<RankedTensorType>(op.getLhs().getType());
  auto rhs = cast<RankedTensorType>(op.getRhs().getType());
  ArrayRef<int64_t> result = op.getType().getShape();
  int64_t rank = result.size();
  int64_t batch = 1;
  for (int64_t d : result.drop_back(2))
    batch *= d;
  int64_t m = result[rank - 2], n = result[rank - 1];
  int64_t k = op.getTransposeLhs() ? lhs.getShape()[rank - 2]
                                   : lhs.getShape()[rank - 1];
  bool shared = rhs.getRank() == 2 && rank > 2;
  callRuntime("titanrt_matmul",
              {contextArg, i32(getRuntimeDType(lhs.getElementType())),
               pointer(op.getLhs()), pointer(op.getRhs()),
               pointerOrNull(op.getAddend()), pointer(op.getResult()),
               i64(batch), i64(m), i64(n), i64(k), i32(op.getTransposeLhs()),
               i32(op.getTransposeRhs()), i32(shared)});
  return success();
}

LogicalResult StepLowering::lowerCopies(func::ReturnOp op) {
  // A result whose final place differs from where it was computed (an
  // update of a state argument that could not be computed in place).
  for (auto [index, value] : llvm::enumerate(op.getOperands())) {
    auto target = step.getResultAttrOfType<BufferAttr>(
        index, TitanDialect::kBufferAttrName);
    BufferAttr source = placeOf(value);
    if (source.getRegion() == target.getRegion() &&
        source.getOffset() == target.getOffset())
      continue;
    int64_t bytes = bytesOf(value.getType());
    if (hostMemory)
      LLVM::MemcpyOp::create(builder, op.getLoc(), pointer(target),
                             pointer(source), i64(bytes), false);
    else
      callRuntime("titanrt_copy",
                  {contextArg, pointer(source), pointer(target), i64(bytes)});
  }
  LLVM::ReturnOp::create(builder, op.getLoc(), ValueRange{i32(TITANRT_OK)});
  return success();
}

Value StepLowering::buildTable(
    Location loc, ArrayRef<Type> fields, int64_t count,
    function_ref<SmallVector<Value>(int64_t)> getRow) {
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto rowType = LLVM::LLVMStructType::getLiteral(context, fields);
  // The table lives in the step's frame, allocated once in its entry block
  // and filled where the call is.
  Value table;
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&function.getBody().front());
    table = LLVM::AllocaOp::create(builder, loc, ptrType, rowType,
                                   i64(std::max<int64_t>(count, 1)),
                                   /*alignment=*/8);
  }
  for (int64_t i = 0; i < count; ++i) {
    for (auto [field, value] : llvm::enumerate(getRow(i))) {
      Value address = LLVM::GEPOp::create(
          builder, loc, ptrType, rowType, table,
          ArrayRef<LLVM::GEPArg>{int32_t(i), int32_t(field)});
      LLVM::StoreOp::create(builder, loc, value, address);
    }
  }
  return table;
}

LogicalResult StepLowering::lowerFusedAdamW(FusedAdamWOp op) {
  // titanrt_adamw_tensor: eight pointers, numel, grad_dtype, param_dtype.
  SmallVector<Type> fields(8, LLVM::LLVMPointerType::get(context));
  fields.append(
      {builder.getI64Type(), builder.getI32Type(), builder.getI32Type()});
  ArrayRef<int64_t> copied =
      op.getCopied() ? *op.getCopied() : ArrayRef<int64_t>();
  unsigned copies = 0;
  int64_t count = op.getParams().size();
  Value table = buildTable(op.getLoc(), fields, count, [&](int64_t i) {
    Value copy;
    if (copies < copied.size() && copied[copies] == i)
      copy = op.getNewParamCopies()[copies++];
    Value grad = op.getGrads()[i];
    return SmallVector<Value>{
        pointer(op.getParams()[i]),
        pointer(grad),
        pointer(op.getExpAvgs()[i]),
        pointer(op.getExpAvgSqs()[i]),
        pointer(op.getNewParams()[i]),
        pointer(op.getNewExpAvgs()[i]),
        pointer(op.getNewExpAvgSqs()[i]),
        pointerOrNull(copy),
        i64(getStaticNumElements(op.getParams()[i].getType())),
        i32(getRuntimeDType(getElementTypeOrSelf(grad.getType()))),
        i32(getRuntimeDType(
            getElementTypeOrSelf(op.getParams()[i].getType())))};
  });
  callRuntime("titanrt_fused_adamw",
              {contextArg, table, i64(count), pointer(op.getLr()),
               pointer(op.getStep()), pointerOrNull(op.getGradScale()),
               f64(op.getBeta1().convertToDouble()),
               f64(op.getBeta2().convertToDouble()),
               f64(op.getEps().convertToDouble()),
               f64(op.getWeightDecay().convertToDouble())});
  return success();
}

LogicalResult StepLowering::lowerSquaredNorm(SquaredNormOp op) {
  // titanrt_norm_tensor: data, numel, dtype.
  Type fields[] = {LLVM::LLVMPointerType::get(context), builder.getI64Type(),
                   builder.getI32Type()};
  int64_t count = op.getInputs().size();
  Value table = buildTable(op.getLoc(), fields, count, [&](int64_t i) {
    Value input = op.getInputs()[i];
    return SmallVector<Value>{
        pointer(input), i64(getStaticNumElements(input.getType())),
        i32(getRuntimeDType(getElementTypeOrSelf(input.getType())))};
  });
  callRuntime("titanrt_squared_norm",
              {contextArg, table, i64(count), pointer(op.getResult())});
  return success();
}

LogicalResult StepLowering::lower(Operation *op) {
  auto dtypeOf = [&](Value value) {
    return i32(getRuntimeDType(
        cast<RankedTensorType>(value.getType()).getElementType()));
  };
  if (isa<ReshapeOp>(op))
    return success(); // A view of its operand's buffer.
  if (auto wait = dyn_cast<WaitOp>(op)) {
    // A view of the collective's result, complete once titanrt_wait
    // returns.
    auto handle = asyncHandles.find(wait.getInput().getDefiningOp());
    if (handle != asyncHandles.end())
      callRuntime("titanrt_wait", {contextArg, i64(handle->second)});
    return success();
  }
  if (op->hasAttr(TitanDialect::kAsyncAttrName)) {
    // Handles are numbered in program order; the runtime reuses a handle
    // once it was waited for.
    int64_t handle = asyncHandles.size();
    asyncHandles[op] = handle;
    callRuntime("titanrt_start", {contextArg, i64(handle)});
  }
  if (auto launch = dyn_cast<LaunchOp>(op)) {
    SmallVector<Value> arguments;
    for (BufferAttr place : getArgumentPlaces(step, launch))
      arguments.push_back(pointer(place));
    auto kernel = symbols.lookup<LLVM::LLVMFuncOp>(launch.getKernel());
    if (!kernel)
      return op->emitError("kernel ")
             << launch.getKernelAttr() << " was not lowered";
    LLVM::CallOp::create(builder, op->getLoc(), kernel, arguments);
    return success();
  }
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return lowerMatmul(matmul);
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    ArrayRef<int64_t> q = attention.getQ().getType().getShape();
    ArrayRef<int64_t> k = attention.getK().getType().getShape();
    callRuntime("titanrt_attention",
                {contextArg, dtypeOf(attention.getQ()),
                 pointer(attention.getQ()), pointer(attention.getK()),
                 pointer(attention.getV()), pointer(attention.getResult()),
                 pointer(attention.getLse()), i64(q[0]), i64(q[1]), i64(k[1]),
                 i64(q[2]), i64(q[3]), i32(attention.getCausal()),
                 f64(attention.getScaleOrDefault())});
    return success();
  }
  if (auto grad = dyn_cast<AttentionGradOp>(op)) {
    ArrayRef<int64_t> q = grad.getQ().getType().getShape();
    ArrayRef<int64_t> k = grad.getK().getType().getShape();
    callRuntime("titanrt_attention_grad",
                {contextArg, dtypeOf(grad.getQ()), pointer(grad.getQ()),
                 pointer(grad.getK()), pointer(grad.getV()),
                 pointer(grad.getOut()), pointer(grad.getLse()),
                 pointer(grad.getGrad()), pointer(grad.getQGrad()),
                 pointer(grad.getKGrad()), pointer(grad.getVGrad()),
                 scratchPointer(op, 0), i64(q[0]), i64(q[1]), i64(k[1]),
                 i64(q[2]), i64(q[3]), i32(grad.getCausal()),
                 f64(grad.getScaleOrDefault())});
    return success();
  }
  if (auto grad = dyn_cast<EmbeddingGradOp>(op)) {
    ArrayRef<int64_t> table = grad.getType().getShape();
    callRuntime("titanrt_embedding_grad",
                {contextArg, dtypeOf(grad.getGrad()), dtypeOf(grad.getIds()),
                 pointer(grad.getIds()), pointer(grad.getGrad()),
                 pointer(grad.getResult()),
                 i64(grad.getIds().getType().getNumElements()), i64(table[0]),
                 i64(table[1])});
    return success();
  }
  if (auto check = dyn_cast<CheckIdsOp>(op)) {
    // Its result is a view of the ids (titan-plan-memory). The table's
    // name is external: the step and the globals it reads are compiled to
    // different objects (emitObjectFiles).
    std::string table = check.getTable().str();
    table.push_back('\0');
    Value name = LLVM::createGlobalString(
        op->getLoc(), builder,
        ("titan_check_ids_table_" + Twine(numIdChecks++)).str(), table,
        LLVM::Linkage::External);
    callRuntime("titanrt_check_ids",
                {contextArg, dtypeOf(check.getIds()), pointer(check.getIds()),
                 i64(check.getIds().getType().getNumElements()),
                 i64(check.getBound()), name});
    return success();
  }
  if (auto norm = dyn_cast<RmsNormOp>(op)) {
    auto [rows, cols] = getRowsAndColumns(norm.getInput());
    callRuntime("titanrt_rms_norm",
                {contextArg, dtypeOf(norm.getInput()),
                 dtypeOf(norm.getWeight()), pointer(norm.getInput()),
                 pointer(norm.getWeight()), pointer(norm.getResult()),
                 i64(rows), i64(cols), f64(norm.getEps().convertToDouble())});
    return success();
  }
  if (auto grad = dyn_cast<RmsNormGradOp>(op)) {
    auto [rows, cols] = getRowsAndColumns(grad.getInput());
    callRuntime("titanrt_rms_norm_grad",
                {contextArg, dtypeOf(grad.getInput()),
                 dtypeOf(grad.getWeight()), pointer(grad.getInput()),
                 pointer(grad.getWeight()), pointer(grad.getGrad()),
                 pointerOrNull(grad.getAddend()), pointer(grad.getInputGrad()),
                 pointer(grad.getWeightGrad()), scratchPointer(op, 0),
                 i64(rows), i64(cols), f64(grad.getEps().convertToDouble())});
    return success();
  }
  if (auto adamw = dyn_cast<FusedAdamWOp>(op))
    return lowerFusedAdamW(adamw);
  if (auto norm = dyn_cast<SquaredNormOp>(op))
    return lowerSquaredNorm(norm);
  if (auto loss = dyn_cast<CrossEntropyOp>(op)) {
    auto [rows, vocab] = getRowsAndColumns(loss.getLogits());
    callRuntime("titanrt_cross_entropy",
                {contextArg, dtypeOf(loss.getLogits()),
                 dtypeOf(loss.getLabels()), pointer(loss.getLogits()),
                 pointer(loss.getLabels()), pointer(loss.getResult()),
                 scratchPointer(op, 0), i64(rows), i64(vocab),
                 i64(loss.getIgnoreIndex())});
    return success();
  }
  if (auto grad = dyn_cast<CrossEntropyGradOp>(op)) {
    auto [rows, vocab] = getRowsAndColumns(grad.getLogits());
    callRuntime("titanrt_cross_entropy_grad",
                {contextArg, dtypeOf(grad.getLogits()),
                 dtypeOf(grad.getLabels()), pointer(grad.getLogits()),
                 pointer(grad.getLabels()), pointer(grad.getGrad()),
                 pointer(grad.getResult()), scratchPointer(op, 0), i64(rows),
                 i64(vocab), i64(grad.getIgnoreIndex())});
    return success();
  }
  if (auto gather = dyn_cast<AllGatherOp>(op)) {
    callRuntime("titanrt_all_gather",
                {contextArg, communicator(gather.getAxes()),
                 pointer(gather.getInput()), pointer(gather.getResult()),
                 i64(bytesOf(gather.getInput().getType()))});
    return success();
  }
  if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    callRuntime("titanrt_reduce_scatter",
                {contextArg, communicator(scatter.getAxes()),
                 dtypeOf(scatter.getInput()),
                 i32(runtimeReduce(scatter.getReduce().getValue())),
                 pointer(scatter.getInput()), pointer(scatter.getResult()),
                 i64(scatter.getType().getNumElements())});
    return success();
  }
  if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    callRuntime("titanrt_all_reduce",
                {contextArg, communicator(reduce.getAxes()),
                 dtypeOf(reduce.getInput()),
                 i32(runtimeReduce(reduce.getReduce().getValue())),
                 pointer(reduce.getInput()), pointer(reduce.getResult()),
                 i64(reduce.getType().getNumElements())});
    return success();
  }
  if (auto exchange = dyn_cast<AllToAllOp>(op)) {
    callRuntime("titanrt_all_to_all",
                {contextArg, communicator(exchange.getAxes()),
                 pointer(exchange.getInput()), pointer(exchange.getResult()),
                 i64(bytesOf(exchange.getInput().getType()) /
                     exchange.getGroupSize())});
    return success();
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    callRuntime("titanrt_broadcast",
                {contextArg, communicator(broadcast.getAxes()),
                 i64(broadcast.getRoot()), pointer(broadcast.getInput()),
                 pointer(broadcast.getResult()),
                 i64(bytesOf(broadcast.getType()))});
    return success();
  }
  if (auto send = dyn_cast<SendOp>(op)) {
    callRuntime("titanrt_send",
                {contextArg, communicator(send.getAxes()), i64(send.getPeer()),
                 i64(send.getTag()), pointer(send.getInput()),
                 i64(bytesOf(send.getInput().getType()))});
    return success();
  }
  if (auto recv = dyn_cast<RecvOp>(op)) {
    callRuntime("titanrt_recv",
                {contextArg, communicator(recv.getAxes()), i64(recv.getPeer()),
                 i64(recv.getTag()), pointer(recv.getResult()),
                 i64(bytesOf(recv.getType()))});
    return success();
  }
  if (auto index = dyn_cast<AxisIndexOp>(op)) {
    callRuntime("titanrt_axis_index",
                {contextArg, communicator(index.getAxes()),
                 dtypeOf(index.getResult()), pointer(index.getResult())});
    return success();
  }
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return lowerCopies(ret);
  return op->emitError("titan-lower-to-runtime: '")
         << op->getName()
         << "' has no runtime lowering (fusible ops must be in kernels: "
            "run titan-fuse-kernels first)";
}

LogicalResult StepLowering::run() {
  Location loc = step.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto i32Type = builder.getI32Type();
  builder.setInsertionPointToEnd(module.getBody());
  function = LLVM::LLVMFuncOp::create(
      builder, loc, "titan_program_step",
      LLVM::LLVMFunctionType::get(i32Type,
                                  {ptrType, ptrType, ptrType, ptrType}));
  // Straight-line code of thousands of calls: compile it fast, and never
  // inline the kernels into it.
  function.setNoInline(true);
  function.setOptimizeNone(true);
  Block *entry = function.addEntryBlock(builder);
  contextArg = entry->getArgument(0);
  for (unsigned region = 0; region < 3; ++region)
    bases[region] = entry->getArgument(region + 1);
  // Every runtime call's status check splits the current block; the blocks
  // end in the one that returns a failed status.
  failBlock = builder.createBlock(&function.getBody(), function.getBody().end(),
                                  {i32Type}, {loc});
  LLVM::ReturnOp::create(builder, loc, failBlock->getArgument(0));
  builder.setInsertionPointToEnd(entry);
  for (Operation &op : step.getBody().front())
    if (failed(lower(&op)))
      return failure();
  return success();
}

/// The symbols of a validation program's step and description
/// (`validation=program`), which the training program's main hands the
/// runtime (`validation=linked`).
static constexpr llvm::StringLiteral kValidationStep = "titan_validation_step";
static constexpr llvm::StringLiteral kValidationDescription =
    "titan_validation_description";

/// `int main(int argc, char **argv)` of the executable: hands the program
/// to the runtime (titanrt_main), and with `withValidation` the validation
/// program linked beside it (kValidationStep, kValidationDescription).
static void buildMain(ModuleOp module, LLVM::GlobalOp description,
                      LLVM::LLVMFuncOp step, bool withValidation) {
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  builder.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto i32Type = builder.getI32Type();
  auto runtimeMain = LLVM::LLVMFuncOp::create(
      builder, loc, "titanrt_main",
      LLVM::LLVMFunctionType::get(
          i32Type, {i32Type, ptrType, ptrType, ptrType, ptrType, ptrType}));
  LLVM::GlobalOp validationDescription;
  LLVM::LLVMFuncOp validationStep;
  if (withValidation) {
    validationDescription = LLVM::GlobalOp::create(
        builder, loc, builder.getI8Type(), /*isConstant=*/true,
        LLVM::Linkage::External, kValidationDescription, Attribute());
    validationStep = LLVM::LLVMFuncOp::create(builder, loc, kValidationStep,
                                              step.getFunctionType());
  }
  auto main = LLVM::LLVMFuncOp::create(
      builder, loc, "main",
      LLVM::LLVMFunctionType::get(i32Type, {i32Type, ptrType}));
  Block *entry = main.addEntryBlock(builder);
  builder.setInsertionPointToStart(entry);
  Value text = LLVM::AddressOfOp::create(builder, loc, description);
  Value function = LLVM::AddressOfOp::create(builder, loc, step);
  // The validation program's symbols, or null pointers without one.
  auto addressOrNull = [&](auto symbol) -> Value {
    if (!withValidation)
      return LLVM::ZeroOp::create(builder, loc, ptrType);
    return LLVM::AddressOfOp::create(builder, loc, symbol);
  };
  Value validationText = addressOrNull(validationDescription);
  Value validationFunction = addressOrNull(validationStep);
  auto call = LLVM::CallOp::create(
      builder, loc, runtimeMain,
      ValueRange{entry->getArgument(0), entry->getArgument(1), text, function,
                 validationText, validationFunction});
  LLVM::ReturnOp::create(builder, loc, call.getResult());
}

/// Renames what the validation program `module` defines so that it links
/// beside a training program: its step and description become
/// kValidationStep and kValidationDescription, every other definition (its
/// kernels, their CUDA binary, constants) is prefixed "titan_validation.".
/// Declarations (the runtime's functions) keep their names.
static void renameValidationSymbols(ModuleOp module) {
  SymbolTable symbols(module);
  SmallVector<Operation *> defined;
  for (Operation &op : *module.getBody()) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (!symbol)
      continue;
    if (auto function = dyn_cast<LLVM::LLVMFuncOp>(op);
        function && function.isExternal())
      continue;
    defined.push_back(&op);
  }
  for (Operation *op : defined) {
    StringRef name = SymbolTable::getSymbolName(op).getValue();
    std::string renamed = name == "titan_program_step" ? kValidationStep.str()
                          : name == "titan_program_description"
                              ? kValidationDescription.str()
                              : ("titan_validation." + name).str();
    (void)symbols.rename(op, StringAttr::get(module.getContext(), renamed));
  }
}

namespace {

struct LowerToRuntimePass
    : public mlir::titan::impl::LowerToRuntimePassBase<LowerToRuntimePass> {
  using LowerToRuntimePassBase::LowerToRuntimePassBase;
  void getDependentDialects(DialectRegistry &registry) const override {
    LowerToRuntimePassBase::getDependentDialects(registry);
    registerGpuKernelLoweringDialects(registry);
  }
  void runOnOperation() override;
  /// Lowers the kernels of `kernels` for the `target` option.
  LogicalResult lowerKernels(ModuleOp kernels);
};

} // namespace

LogicalResult LowerToRuntimePass::lowerKernels(ModuleOp kernels) {
  if (target == "cpu")
    return lowerKernelsToLLVM(kernels);
  GpuKernelOptions options;
  options.chip = cudaChip;
  options.toolkitPath = cudaToolkit;
  options.ptxOnly = cudaBinary == "ptx";
  return lowerKernelsToNvvm(kernels, options);
}

void LowerToRuntimePass::runOnOperation() {
  ModuleOp module = getOperation();
  if (target != "cpu" && target != "cuda") {
    module.emitError() << "titan-lower-to-runtime: unknown target '" << target
                       << "' (cpu or cuda)";
    return signalPassFailure();
  }
  if (cudaBinary != "fatbin" && cudaBinary != "ptx") {
    module.emitError() << "titan-lower-to-runtime: unknown cuda-binary '"
                       << cudaBinary << "' (fatbin or ptx)";
    return signalPassFailure();
  }
  if (validation != "none" && validation != "linked" &&
      validation != "program") {
    module.emitError() << "titan-lower-to-runtime: unknown validation '"
                       << validation << "' (none, linked or program)";
    return signalPassFailure();
  }
  std::optional<LrDecayType> type = symbolizeLrDecayType(decayType);
  if (!type) {
    module.emitError() << "titan-lower-to-runtime: unknown learning-rate "
                          "decay type '"
                       << decayType << "' (linear, sqrt or cosine)";
    return signalPassFailure();
  }
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step || !step->hasAttr(TitanDialect::kMemoryPlanAttrName)) {
    module.emitError("titan-lower-to-runtime needs a planned @train_step "
                     "(titan-plan-memory)");
    return signalPassFailure();
  }

  // Kernels first: the step calls their LLVM functions.
  OpBuilder builder(module.getContext());
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
  for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
    if (isa<memref::GlobalOp>(op) ||
        (isa<func::FuncOp>(op) && op.hasAttr(TitanDialect::kKernelAttrName))) {
      op.remove();
      kernels->push_back(&op);
    }
  keepPlannedInPlacePairs(step, *kernels);
  markPlannedAlignment(step, *kernels);
  if (failed(lowerKernels(*kernels)))
    return signalPassFailure();
  for (Operation &op : llvm::make_early_inc_range(*kernels->getBody())) {
    op.remove();
    module.push_back(&op);
  }
  // GPU launches must be in a module marked as holding GPU code.
  StringRef container = gpu::GPUDialect::getContainerModuleAttrName();
  if (Attribute marker = (*kernels)->getAttr(container))
    module->setAttr(container, marker);

  std::vector<std::vector<std::string>> sharedCommunicators;
  for (StringRef axes : communicators) {
    SmallVector<StringRef> names;
    axes.split(names, '+');
    sharedCommunicators.emplace_back(names.begin(), names.end());
  }
  StepLowering lowering(module, step, sharedCommunicators,
                        /*hostMemory=*/target == "cpu");
  if (failed(lowering.run()) ||
      (target != "cpu" && failed(verifyNoHostAccess(lowering.getFunction()))))
    return signalPassFailure();
  RunDefaults defaults{
      learningRate, steps, seed,
      LrSchedule::fromConfig(scheduleSteps < 0 ? steps : scheduleSteps,
                             warmupSteps, decayRatio, *type, minLrFactor)};
  FailureOr<std::string> description = describeProgram(
      module, step, lowering.getCommunicators(), defaults, target);
  if (failed(description))
    return signalPassFailure();
  builder.setInsertionPointToEnd(module.getBody());
  std::string text = *description;
  text.push_back('\0');
  auto arrayType = LLVM::LLVMArrayType::get(builder.getI8Type(), text.size());
  auto global = LLVM::GlobalOp::create(
      builder, module.getLoc(), arrayType, /*isConstant=*/true,
      LLVM::Linkage::External, "titan_program_description",
      builder.getStringAttr(text));
  if (validation != "program")
    buildMain(module, global, lowering.getFunction(), validation == "linked");

  // Only LLVM dialect ops remain, and the CUDA kernels' binary (its LLVM IR
  // translation embeds the fatbin).
  for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
    if (!isa<LLVM::LLVMDialect>(op.getDialect()) && !isa<gpu::BinaryOp>(op))
      op.erase();
  if (validation == "program")
    renameValidationSymbols(module);
}
