//===- KernelNumericsTest.cpp - compiled kernels against the interpreter --===//
//
// Every op that titan-convert-to-linalg converts, on random static shapes
// and in each of its cases (attributes, element types, NaN and infinity
// inputs), built as a kernel (`func.func @kernel` marked `titan.kernel`),
// compiled with bufferizeKernels and lowerKernelsToLLVM, JIT-run with MLIR's
// ExecutionEngine at -O3 (as kernels are compiled) and compared with
// titan's reference interpreter running the same function on the same
// inputs. Each kernel also runs as the CUDA lowering maps it onto blocks
// and threads (mapKernelsToGpuLoops: collapsed nests, bounds guards,
// several iterations per thread), its mapped loops run on the CPU one
// iteration after another: the mapping's index arithmetic is checked
// without a GPU.
//
// A native element passes when |native - reference| <= atol + rtol |ref|;
// a NaN must be NaN and an infinity the same infinity. Tolerances:
//   - data movement, selection, comparison, conversion, max, negation,
//     scale and single correctly rounded operations (add, sub, mul, div,
//     sqrt; also in bf16/f16, computed in f32, whose rounding to them is
//     innocuous for these): exact;
//   - f32 elsewhere: rtol 1e-5, atol 1e-6 (data of magnitude ~1). The
//     interpreter computes in double and rounds once; the kernel computes
//     in f32 with reassociated (vectorized) sums and contracted FMAs, and
//     exp, log, tanh, erf, sin and cos are polynomial approximations of a
//     few ulp. Wider only for GELU's erf form and derivatives (absolute
//     1e-5, see the test: cancellation near |x| = 5) and sin/cos of
//     arguments up to 8192 (absolute 3e-7);
//   - f64: rtol 1e-12, atol 1e-13;
//   - bf16: rtol 8e-3 (one ulp), f16: rtol 1e-3: the kernel rounds an f32
//     value, the interpreter a double, and the two may straddle a rounding
//     boundary.
//
// Sums and means reduce positive data, so that a wrong init or indexing
// map shows as a relative error; softmax and cross-entropy also run on
// logits large enough to overflow exp unless the row max is subtracted.
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/GpuKernelLowering.h"
#include "titan/Codegen/KernelLowering.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/InitAll.h"
#include "titan/Interpreter/Interpreter.h"

#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir;
using namespace mlir::titan;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Threads per block of the GPU mapping the kernels also run under: small,
/// so that the random shapes leave partial blocks (bounds guards).
constexpr int64_t kThreadsPerBlock = 32;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

//===----------------------------------------------------------------------===//
// Tolerances
//===----------------------------------------------------------------------===//

/// |native - reference| <= atol + rtol * |reference|.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

constexpr Tolerance kExact{0, 0};
constexpr Tolerance kF32{1e-5, 1e-6};
constexpr Tolerance kF64{1e-12, 1e-13};
/// One bf16 ulp relative to the value (2^-7 at worst) and a small floor.
constexpr Tolerance kBF16{8e-3, 1e-5};
/// One f16 ulp (2^-10).
constexpr Tolerance kF16{1e-3, 1e-5};

/// The tolerance of approximated float arithmetic in `kind`.
Tolerance forKind(ElementType kind) {
  switch (kind) {
  case ElementType::F64:
    return kF64;
  case ElementType::BF16:
    return kBF16;
  case ElementType::F16:
    return kF16;
  default:
    return kF32;
  }
}

//===----------------------------------------------------------------------===//
// Random inputs
//===----------------------------------------------------------------------===//

/// Deterministic random shapes and tensors.
class Random {
public:
  explicit Random(uint64_t seed) : engine(seed) {}

  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine);
  }
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(engine);
  }

  /// A shape of `rank` dims, each in [lo, hi].
  SmallVector<int64_t> shape(unsigned rank, int64_t lo = 2, int64_t hi = 7) {
    SmallVector<int64_t> dims;
    for (unsigned d = 0; d < rank; ++d)
      dims.push_back(integer(lo, hi));
    return dims;
  }

  /// A float tensor with elements uniform in [lo, hi), rounded to `kind`.
  TensorValue floats(ElementType kind, ArrayRef<int64_t> shape,
                     double lo = -2.0, double hi = 2.0) {
    TensorValue tensor(kind, shape);
    if (kind == ElementType::F64) {
      for (double &value : tensor.getMutable<double>())
        value = uniform(lo, hi);
      return tensor;
    }
    for (float &value : tensor.getMutable<float>())
      value = uniform(lo, hi);
    tensor.roundToKind();
    return tensor;
  }

  /// An integer tensor with elements in [lo, hi].
  TensorValue integers(ElementType kind, ArrayRef<int64_t> shape, int64_t lo,
                       int64_t hi) {
    TensorValue tensor(kind, shape);
    if (kind == ElementType::I1) {
      for (uint8_t &value : tensor.getMutable<uint8_t>())
        value = integer(0, 1);
      return tensor;
    }
    for (int64_t &value : tensor.getMutable<int64_t>())
      value = integer(lo, hi);
    return tensor;
  }

private:
  std::mt19937_64 engine;
};

/// Sets element `index` (row-major) of the float tensor `tensor`.
void setFloat(TensorValue &tensor, int64_t index, double value) {
  if (tensor.getKind() == ElementType::F64)
    tensor.getMutable<double>()[index] = value;
  else
    tensor.getMutable<float>()[index] = value;
  tensor.roundToKind();
}

/// The elements of a tensor as doubles.
std::vector<double> toDoubles(const TensorValue &tensor) {
  return std::visit(
      [](const auto &values) {
        return std::vector<double>(values.begin(), values.end());
      },
      tensor.getStorage());
}

//===----------------------------------------------------------------------===//
// Kernel sources
//===----------------------------------------------------------------------===//

/// `tensor<...>` of `kind` and `shape`.
std::string type(ElementType kind, ArrayRef<int64_t> shape) {
  return formatTensorType(kind, shape);
}

/// The type of `tensor`.
std::string type(const TensorValue &tensor) { return tensor.getTypeString(); }

/// `[a, b, c]`.
std::string list(ArrayRef<int64_t> values) {
  std::string text = "[";
  for (auto [i, value] : llvm::enumerate(values))
    text += (i ? ", " : "") + std::to_string(value);
  return text + "]";
}

/// A module with `func.func @kernel` marked `titan.kernel`: its arguments
/// `%a0, %a1, ...` have the types of `inputs`, `body` computes the values
/// `returned` of `resultTypes`, by default `%r` (or `%r:N` when there are
/// N > 1 results), and the kernel returns them.
std::string makeKernel(ArrayRef<TensorValue> inputs, StringRef body,
                       ArrayRef<std::string> resultTypes,
                       StringRef returnedValues = "") {
  std::string arguments, results, returned = returnedValues.str();
  for (auto [i, input] : llvm::enumerate(inputs))
    arguments +=
        (i ? ", " : "") + llvm::formatv("%a{0}: {1}", i, type(input)).str();
  for (auto [i, result] : llvm::enumerate(resultTypes)) {
    results += (i ? ", " : "") + result;
    if (returnedValues.empty())
      returned += (i ? ", " : "") + (resultTypes.size() == 1
                                         ? std::string("%r")
                                         : "%r#" + std::to_string(i));
  }
  return llvm::formatv("func.func @kernel({0}) -> ({1}) attributes "
                       "{{titan.kernel} {{\n  {2}\n  return {3} : {1}\n}\n",
                       arguments, results, body, returned)
      .str();
}

//===----------------------------------------------------------------------===//
// Native execution
//===----------------------------------------------------------------------===//

/// A 64-byte aligned buffer.
class Buffer {
public:
  explicit Buffer(size_t bytes)
      : bytes(bytes), data(static_cast<char *>(std::aligned_alloc(
                          64, (bytes + 63) / 64 * 64 + 64))) {
    std::memset(data, 0, bytes);
  }
  Buffer(Buffer &&other) : bytes(other.bytes), data(other.data) {
    other.data = nullptr;
  }
  Buffer(const Buffer &) = delete;
  ~Buffer() { std::free(data); }
  char *get() const { return data; }
  size_t size() const { return bytes; }

private:
  size_t bytes;
  char *data;
};

/// The bits of element `i` of `tensor` as a kernel's buffer holds them (the
/// low getElementTypeSize(kind) bytes, little-endian).
uint64_t encode(const TensorValue &tensor, int64_t i) {
  switch (tensor.getKind()) {
  case ElementType::F32:
    return llvm::bit_cast<uint32_t>(tensor.get<float>()[i]);
  case ElementType::F64:
    return llvm::bit_cast<uint64_t>(tensor.get<double>()[i]);
  case ElementType::BF16:
    // The value is already rounded to bf16: its low 16 bits are zero.
    return llvm::bit_cast<uint32_t>(tensor.get<float>()[i]) >> 16;
  case ElementType::F16: {
    bool losesInfo;
    llvm::APFloat value(tensor.get<float>()[i]);
    value.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
                  &losesInfo);
    return value.bitcastToAPInt().getZExtValue();
  }
  case ElementType::I64:
  case ElementType::I32:
    return static_cast<uint64_t>(tensor.get<int64_t>()[i]);
  case ElementType::I1:
    return tensor.get<uint8_t>()[i];
  case ElementType::U16:
  case ElementType::U8:
    break;
  }
  llvm_unreachable("the interpreter has no unsigned tensors");
}

/// Sets element `i` of `tensor` from its bits in a kernel's buffer.
void decode(TensorValue &tensor, int64_t i, uint64_t bits) {
  switch (tensor.getKind()) {
  case ElementType::F32:
    tensor.getMutable<float>()[i] = llvm::bit_cast<float>(uint32_t(bits));
    return;
  case ElementType::F64:
    tensor.getMutable<double>()[i] = llvm::bit_cast<double>(bits);
    return;
  case ElementType::BF16:
    tensor.getMutable<float>()[i] = llvm::bit_cast<float>(uint32_t(bits) << 16);
    return;
  case ElementType::F16:
    tensor.getMutable<float>()[i] =
        llvm::APFloat(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits))
            .convertToFloat();
    return;
  case ElementType::I64:
    tensor.getMutable<int64_t>()[i] = static_cast<int64_t>(bits);
    return;
  case ElementType::I32:
    tensor.getMutable<int64_t>()[i] = static_cast<int32_t>(uint32_t(bits));
    return;
  case ElementType::I1:
    tensor.getMutable<uint8_t>()[i] = bits != 0;
    return;
  case ElementType::U16:
  case ElementType::U8:
    llvm_unreachable("the interpreter has no unsigned tensors");
  }
}

/// `tensor` in the memory layout of its element type.
Buffer toBuffer(const TensorValue &tensor) {
  size_t width = getElementTypeSize(tensor.getKind());
  Buffer buffer(tensor.getNumElements() * width);
  for (int64_t i = 0, n = tensor.getNumElements(); i < n; ++i) {
    uint64_t bits = encode(tensor, i);
    std::memcpy(buffer.get() + i * width, &bits, width);
  }
  return buffer;
}

/// The tensor of `kind` and `shape` held by `buffer`.
TensorValue fromBuffer(const Buffer &buffer, ElementType kind,
                       ArrayRef<int64_t> shape) {
  TensorValue tensor(kind, shape);
  size_t width = getElementTypeSize(kind);
  for (int64_t i = 0, n = tensor.getNumElements(); i < n; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, buffer.get() + i * width, width);
    decode(tensor, i, bits);
  }
  return tensor;
}

/// Collects the diagnostics of a context as text while alive.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diagnostic) {
          text += diagnostic.str() + "\n";
          return success();
        }) {}
  std::string text;

private:
  ScopedDiagnosticHandler handler;
};

class KernelNumericsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  }

  KernelNumericsTest() {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerGpuKernelLoweringDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `source`; on failure, `error` says why.
  OwningOpRef<ModuleOp> parse(StringRef source, std::string &error) {
    DiagnosticCollector diagnostics(context);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    if (!module)
      error = "parse: " + diagnostics.text;
    return module;
  }

  /// Runs `@kernel` of `module` in the interpreter.
  FailureOr<std::vector<TensorValue>> runReference(ModuleOp module,
                                                   ArrayRef<TensorValue> inputs,
                                                   std::string &error) {
    DiagnosticCollector diagnostics(context);
    FailureOr<Interpreter> interpreter =
        Interpreter::create(module, "kernel", 1);
    FailureOr<std::vector<TensorValue>> results = failure();
    if (succeeded(interpreter))
      results = interpreter->run(inputs);
    if (failed(results))
      error = "interpreter: " + diagnostics.text;
    return results;
  }

  /// How runNative compiles a kernel.
  enum class Mapping {
    /// lowerKernelsToLLVM's loop nests.
    Cpu,
    /// mapKernelsToGpuLoops' blocks and threads, then lowerKernelsToLLVM.
    GpuLoops
  };

  /// Compiles `module`, whose `@kernel` it changes, and runs `@kernel`
  /// natively.
  FailureOr<std::vector<TensorValue>>
  runNative(ModuleOp module, ArrayRef<TensorValue> inputs, std::string &error,
            Mapping mapping = Mapping::Cpu) {
    DiagnosticCollector diagnostics(context);
    auto kernel = module.lookupSymbol<func::FuncOp>("kernel");
    SmallVector<RankedTensorType> resultTypes;
    for (Type type : kernel.getResultTypes())
      resultTypes.push_back(cast<RankedTensorType>(type));
    if (failed(bufferizeKernels(module))) {
      error = "bufferizeKernels: " + diagnostics.text;
      return failure();
    }
    // Parameters: inputs, one buffer per result, then the scratch buffers.
    kernel = module.lookupSymbol<func::FuncOp>("kernel");
    std::vector<Buffer> buffers;
    for (const TensorValue &input : inputs)
      buffers.push_back(toBuffer(input));
    for (Type type : kernel.getArgumentTypes().drop_front(inputs.size())) {
      auto memref = cast<MemRefType>(type);
      buffers.emplace_back(memref.getNumElements() *
                           getElementByteWidth(memref.getElementType()));
    }
    if (mapping == Mapping::GpuLoops &&
        failed(mapKernelsToGpuLoops(module, kThreadsPerBlock,
                                    /*blockReductions=*/false))) {
      error = "mapKernelsToGpuLoops: " + diagnostics.text;
      return failure();
    }
    if (failed(lowerKernelsToLLVM(module))) {
      error = "lowerKernelsToLLVM: " + diagnostics.text;
      return failure();
    }
    ExecutionEngineOptions options;
    auto optimize = makeOptimizingTransformer(3, 0, nullptr);
    options.transformer = optimize;
    auto engine = ExecutionEngine::create(module, options);
    if (!engine) {
      error = "ExecutionEngine: " + llvm::toString(engine.takeError());
      return failure();
    }
    std::vector<void *> pointers, arguments;
    for (Buffer &buffer : buffers)
      pointers.push_back(buffer.get());
    for (void *&pointer : pointers)
      arguments.push_back(&pointer);
    if (llvm::Error run = (*engine)->invokePacked("kernel", arguments)) {
      error = "invoke: " + llvm::toString(std::move(run));
      return failure();
    }
    std::vector<TensorValue> results;
    for (auto [i, type] : llvm::enumerate(resultTypes))
      results.push_back(fromBuffer(
          buffers[inputs.size() + i],
          *getInterpretedElementType(type.getElementType()), type.getShape()));
    return results;
  }

  /// Runs `source` natively and in the interpreter on `inputs` and expects
  /// every result to agree within `tolerance`.
  void check(StringRef source, ArrayRef<TensorValue> inputs,
             Tolerance tolerance) {
    SCOPED_TRACE(source.str());
    std::string error;
    OwningOpRef<ModuleOp> program = parse(source, error);
    ASSERT_TRUE(program) << error;
    FailureOr<std::vector<TensorValue>> reference =
        runReference(*program, inputs, error);
    ASSERT_TRUE(succeeded(reference)) << error;
    for (Mapping mapping : {Mapping::Cpu, Mapping::GpuLoops}) {
      SCOPED_TRACE(mapping == Mapping::Cpu ? "CPU loop nests"
                                           : "mapped as for the GPU");
      OwningOpRef<ModuleOp> kernels = parse(source, error);
      ASSERT_TRUE(kernels) << error;
      FailureOr<std::vector<TensorValue>> native =
          runNative(*kernels, inputs, error, mapping);
      ASSERT_TRUE(succeeded(native)) << error;
      ASSERT_EQ(native->size(), reference->size());
      for (auto [i, got, want] : llvm::enumerate(*native, *reference))
        expectClose(got, want, tolerance, i);
    }
  }

  /// Expects `got` to equal `want` within `tolerance`.
  static void expectClose(const TensorValue &got, const TensorValue &want,
                          Tolerance tolerance, size_t result) {
    ASSERT_EQ(got.getKind(), want.getKind());
    ASSERT_EQ(got.getShape(), want.getShape());
    std::vector<double> a = toDoubles(got), b = toDoubles(want);
    int failures = 0;
    for (size_t i = 0; i < a.size() && failures < 8; ++i) {
      bool ok;
      if (std::isnan(b[i]))
        ok = std::isnan(a[i]);
      else if (std::isinf(b[i]))
        ok = a[i] == b[i];
      else
        ok = std::abs(a[i] - b[i]) <=
             tolerance.atol + tolerance.rtol * std::abs(b[i]);
      if (!ok) {
        ++failures;
        ADD_FAILURE() << "result " << result << " element " << i << ": native "
                      << llvm::formatv("{0:e9}", a[i]).str() << ", reference "
                      << llvm::formatv("{0:e9}", b[i]).str();
      }
    }
  }

  /// Checks the one-op kernel `%r = <op>` on `inputs` with one result.
  void checkOp(StringRef op, ArrayRef<TensorValue> inputs,
               const std::string &resultType, Tolerance tolerance) {
    check(makeKernel(inputs, ("%r = " + op).str(), {resultType}), inputs,
          tolerance);
  }

  MLIRContext context;
};

//===----------------------------------------------------------------------===//
// Harness
//===----------------------------------------------------------------------===//

TEST_F(KernelNumericsTest, CatchesAWrongResult) {
  // The comparison itself: a kernel that negates is not the identity.
  TensorValue x = Random(1).floats(ElementType::F32, {3, 4});
  std::string error;
  OwningOpRef<ModuleOp> module =
      parse(makeKernel({x}, "%r = titan.neg %a0 : tensor<3x4xf32>",
                       {"tensor<3x4xf32>"}),
            error);
  ASSERT_TRUE(module) << error;
  auto native = runNative(*module, {x}, error);
  ASSERT_TRUE(succeeded(native)) << error;
  EXPECT_FALSE((*native)[0] == x);
  TensorValue negated = x;
  for (float &value : negated.getMutable<float>())
    value = -value;
  EXPECT_TRUE((*native)[0] == negated);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// The float kinds every float op is tested in.
constexpr ElementType kFloatKinds[] = {ElementType::F32, ElementType::F64,
                                       ElementType::BF16};

TEST_F(KernelNumericsTest, BinaryArithmetic) {
  // One correctly rounded operation: exact in every type (bf16 and f16 are
  // computed in f32, whose rounding to them is innocuous for + - * /).
  Random random(2);
  for (ElementType kind : {ElementType::F32, ElementType::F64,
                           ElementType::BF16, ElementType::F16}) {
    for (StringRef op : {"add", "sub", "mul", "div"}) {
      SmallVector<int64_t> shape = random.shape(3);
      TensorValue lhs = random.floats(kind, shape);
      TensorValue rhs = random.floats(kind, shape);
      // x / 0 and 0 / 0.
      setFloat(rhs, 0, 0.0);
      setFloat(lhs, 1, 0.0);
      setFloat(rhs, 1, 0.0);
      setFloat(lhs, 2, kInf);
      checkOp(("titan." + op + " %a0, %a1 : " + type(lhs)).str(), {lhs, rhs},
              type(lhs), kExact);
    }
  }
}

TEST_F(KernelNumericsTest, IntegerArithmetic) {
  // Two's complement over the whole range: sums, differences and products
  // wrap (i32 to 32 bits), max is signed, neg of the most negative value
  // is itself.
  Random random(21);
  for (auto [kind, lo, hi] :
       {std::tuple{ElementType::I64, INT64_MIN, INT64_MAX},
        std::tuple{ElementType::I32, int64_t(INT32_MIN), int64_t(INT32_MAX)}}) {
    for (StringRef op : {"add", "sub", "mul", "max"}) {
      SmallVector<int64_t> shape = random.shape(2);
      TensorValue lhs = random.integers(kind, shape, lo, hi);
      TensorValue rhs = random.integers(kind, shape, lo, hi);
      lhs.getMutable<int64_t>()[0] = hi;
      rhs.getMutable<int64_t>()[0] = 1;
      checkOp(("titan." + op + " %a0, %a1 : " + type(lhs)).str(), {lhs, rhs},
              type(lhs), kExact);
    }
    SmallVector<int64_t> shape = random.shape(2);
    TensorValue x = random.integers(kind, shape, lo, hi);
    x.getMutable<int64_t>()[0] = lo;
    checkOp("titan.neg %a0 : " + type(x), {x}, type(x), kExact);
  }
}

TEST_F(KernelNumericsTest, IntegerRounding) {
  // Floor and truncating quotients and remainders over the whole range:
  // both signs, a divisor of 0 (the dividend; a remainder of 0) and the
  // most negative value by -1 (wraps), which a bare sdiv would trap on.
  Random random(22);
  for (auto [kind, lo, hi] :
       {std::tuple{ElementType::I64, INT64_MIN, INT64_MAX},
        std::tuple{ElementType::I32, int64_t(INT32_MIN), int64_t(INT32_MAX)}}) {
    for (StringRef op : {"rounded_div", "remainder"}) {
      for (StringRef truncate : {"", " truncate"}) {
        TensorValue lhs = random.integers(kind, {4, 8}, lo, hi);
        TensorValue rhs = random.integers(kind, {4, 8}, -9, 9);
        MutableArrayRef<int64_t> a = lhs.getMutable<int64_t>();
        MutableArrayRef<int64_t> b = rhs.getMutable<int64_t>();
        std::tie(a[0], b[0]) = std::pair(lo, -1);
        std::tie(a[1], b[1]) = std::pair(int64_t(7), int64_t(0));
        std::tie(a[2], b[2]) = std::pair(int64_t(-7), int64_t(2));
        std::tie(a[3], b[3]) = std::pair(int64_t(7), int64_t(-2));
        std::tie(a[4], b[4]) = std::pair(int64_t(-6), int64_t(3));
        std::tie(a[5], b[5]) = std::pair(hi, int64_t(-7));
        checkOp(
            ("titan." + op + " %a0, %a1" + truncate + " : " + type(lhs)).str(),
            {lhs, rhs}, type(lhs), kExact);
      }
    }
  }
}

TEST_F(KernelNumericsTest, FloatRounding) {
  // PyTorch's formulas from fmod, in every float type: signs, a divisor of
  // 0, infinities and NaN, and quotients near an integer.
  Random random(23);
  for (ElementType kind : kFloatKinds) {
    for (StringRef op : {"rounded_div", "remainder"}) {
      for (StringRef truncate : {"", " truncate"}) {
        TensorValue lhs = random.floats(kind, {4, 8}, -20.0, 20.0);
        TensorValue rhs = random.floats(kind, {4, 8}, -3.0, 3.0);
        setFloat(rhs, 0, 0.0);
        setFloat(lhs, 1, -0.0);
        setFloat(lhs, 2, kInf);
        setFloat(rhs, 3, kInf);
        setFloat(lhs, 4, kNaN);
        setFloat(lhs, 5, 7.5);
        setFloat(rhs, 5, -2.5);
        setFloat(lhs, 6, -7.0);
        setFloat(rhs, 6, 0.1);
        setFloat(lhs, 7, 1e-3);
        setFloat(rhs, 7, -5.0);
        checkOp(
            ("titan." + op + " %a0, %a1" + truncate + " : " + type(lhs)).str(),
            {lhs, rhs}, type(lhs), kExact);
      }
    }
  }
}

TEST_F(KernelNumericsTest, MaxPropagatesNaN) {
  Random random(3);
  for (ElementType kind : kFloatKinds) {
    SmallVector<int64_t> shape = random.shape(2);
    TensorValue lhs = random.floats(kind, shape);
    TensorValue rhs = random.floats(kind, shape);
    setFloat(lhs, 0, kNaN);
    setFloat(rhs, 1, kNaN);
    setFloat(lhs, 2, kNaN);
    setFloat(rhs, 2, kNaN);
    setFloat(lhs, 3, -kInf);
    setFloat(rhs, 4, kInf);
    checkOp("titan.max %a0, %a1 : " + type(lhs), {lhs, rhs}, type(lhs), kExact);
  }
}

TEST_F(KernelNumericsTest, UnaryMath) {
  struct Case {
    const char *op;
    double lo, hi;
    bool exact;
  };
  const Case cases[] = {{"neg", -3, 3, true},        {"sqrt", 0, 10, true},
                        {"exp", -20, 20, false},     {"log", 1e-3, 50, false},
                        {"rsqrt", 1e-3, 50, false},  {"tanh", -6, 6, false},
                        {"sigmoid", -20, 20, false}, {"silu", -20, 20, false},
                        {"cos", -4, 4, false},       {"sin", -4, 4, false},
                        {"erf", -5, 5, false}};
  Random random(4);
  for (ElementType kind : kFloatKinds) {
    for (const Case &c : cases) {
      SCOPED_TRACE(c.op);
      SmallVector<int64_t> shape = random.shape(2, 3, 9);
      TensorValue x = random.floats(kind, shape, c.lo, c.hi);
      if (StringRef(c.op) == "log") {
        setFloat(x, 0, 0.0);  // -inf
        setFloat(x, 1, -1.0); // NaN
        setFloat(x, 2, kInf);
      }
      if (StringRef(c.op) == "exp") {
        setFloat(x, 0, -kInf);
        setFloat(x, 1, kInf);
        setFloat(x, 2, -200.0); // underflows to 0
        setFloat(x, 3, 200.0);  // overflows to inf in f32
      }
      checkOp(std::string("titan.") + c.op + " %a0 : " + type(x), {x}, type(x),
              c.exact ? kExact : forKind(kind));
    }
  }
}

TEST_F(KernelNumericsTest, SinAndCosOfLargeArguments) {
  // RoPE tables are cos/sin of position * frequency, up to the sequence
  // length (8192 for Llama 3): f32 arguments are reduced modulo 2 pi in f64
  // before the polynomial, which keeps the error at ~1e-7 absolute.
  Random random(25);
  for (StringRef op : {"cos", "sin"}) {
    TensorValue x = random.floats(ElementType::F32, {64, 64}, -8192, 8192);
    setFloat(x, 0, kInf);
    setFloat(x, 1, kNaN);
    checkOp(("titan." + op + " %a0 : " + type(x)).str(), {x}, type(x),
            {1e-5, 3e-7});
  }
}

TEST_F(KernelNumericsTest, Gelu) {
  // Both forms and their derivatives. In f32 the erf form uses MLIR's
  // polynomial erf (absolute error ~3e-7) and the derivatives cancel
  // (1 + tanh(...) and 1 - tanh^2 for x near -5): measured absolute errors
  // on [-8, 8] with dy = 1 are 5e-7 for gelu and 3.5e-6 for the tanh form's
  // derivative, hence an absolute 1e-5 for |dy| <= 2. f64 uses the
  // conversion's own erf series (relative 1e-14).
  Random random(5);
  for (ElementType kind : kFloatKinds) {
    Tolerance tolerance = forKind(kind);
    if (kind != ElementType::F64)
      tolerance.atol = 1e-5;
    for (StringRef form : {"none", "tanh"}) {
      SmallVector<int64_t> shape = random.shape(2, 3, 9);
      TensorValue x = random.floats(kind, shape, -6, 6);
      TensorValue dy = random.floats(kind, shape);
      checkOp(("titan.gelu %a0 approximate " + form + " : " + type(x)).str(),
              {x}, type(x), tolerance);
      checkOp(("titan.gelu_grad %a0, %a1 approximate " + form + " : " + type(x))
                  .str(),
              {x, dy}, type(x), tolerance);
    }
  }
}

TEST_F(KernelNumericsTest, Scale) {
  // The factor is rounded to the element type first: one rounding, exact.
  Random random(6);
  for (ElementType kind : kFloatKinds) {
    for (double factor : {0.125, 1.0 / 3.0, -2.5e3}) {
      TensorValue x = random.floats(kind, random.shape(3));
      checkOp(llvm::formatv("titan.scale %a0 by {0:e17} : {1}", factor, type(x))
                  .str(),
              {x}, type(x), kExact);
    }
  }
}

TEST_F(KernelNumericsTest, CastBetweenFloats) {
  Random random(7);
  const ElementType kinds[] = {ElementType::F32, ElementType::F64,
                               ElementType::BF16, ElementType::F16};
  for (ElementType from : kinds) {
    for (ElementType to : kinds) {
      if (from == to)
        continue;
      SmallVector<int64_t> shape = random.shape(2);
      TensorValue x = random.floats(from, shape, -300, 300);
      setFloat(x, 0, kNaN);
      setFloat(x, 1, -kInf);
      setFloat(x, 2, 1e-3);
      checkOp("titan.cast %a0 : " + type(x) + " to " + type(to, shape), {x},
              type(to, shape), kExact);
    }
  }
}

TEST_F(KernelNumericsTest, CastFloatToInteger) {
  // Toward zero, saturating at the bounds, NaN to 0; anything to i1 is != 0.
  Random random(8);
  for (ElementType from : kFloatKinds) {
    for (ElementType to :
         {ElementType::I64, ElementType::I32, ElementType::I1}) {
      SmallVector<int64_t> shape = {5, 6};
      TensorValue x = random.floats(from, shape, -1e3, 1e3);
      const double specials[] = {
          kNaN, kInf, -kInf,        3e9,           -3e9, 1e19, -1e19,
          0.0,  -0.0, 2147483648.0, -2147483648.0, -2.5, 2.5,  0.75};
      for (auto [i, value] : llvm::enumerate(specials))
        setFloat(x, 2 * i, value);
      checkOp("titan.cast %a0 : " + type(x) + " to " + type(to, shape), {x},
              type(to, shape), kExact);
    }
  }
}

TEST_F(KernelNumericsTest, CastFromInteger) {
  // Integers to floats round to nearest even; i64 -> i32 wraps; i1 is 0/1.
  Random random(9);
  struct Case {
    ElementType from, to;
    int64_t lo, hi;
  };
  const Case cases[] = {
      {ElementType::I64, ElementType::F32, -(int64_t(1) << 40),
       int64_t(1) << 40},
      {ElementType::I64, ElementType::BF16, -100000, 100000},
      {ElementType::I32, ElementType::F64, INT32_MIN, INT32_MAX},
      {ElementType::I32, ElementType::F16, -60000, 60000},
      {ElementType::I64, ElementType::I32, -(int64_t(1) << 40),
       int64_t(1) << 40},
      {ElementType::I32, ElementType::I64, INT32_MIN, INT32_MAX},
      {ElementType::I64, ElementType::I1, -2, 2},
      {ElementType::I1, ElementType::F32, 0, 1},
      {ElementType::I1, ElementType::BF16, 0, 1},
      {ElementType::I1, ElementType::I64, 0, 1},
      {ElementType::I1, ElementType::I32, 0, 1}};
  for (const Case &c : cases) {
    SmallVector<int64_t> shape = random.shape(2);
    TensorValue x = random.integers(c.from, shape, c.lo, c.hi);
    checkOp("titan.cast %a0 : " + type(x) + " to " + type(c.to, shape), {x},
            type(c.to, shape), kExact);
  }
}

TEST_F(KernelNumericsTest, Compare) {
  // Every predicate on floats with ties and NaN (false but for ne), signed
  // integers and i1 (0 < 1).
  Random random(10);
  for (ElementType kind :
       {ElementType::F32, ElementType::F64, ElementType::BF16, ElementType::I64,
        ElementType::I32, ElementType::I1}) {
    for (StringRef predicate : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      SmallVector<int64_t> shape = random.shape(2);
      bool isFloat = kind == ElementType::F32 || kind == ElementType::F64 ||
                     kind == ElementType::BF16;
      TensorValue lhs(kind, shape), rhs(kind, shape);
      if (isFloat) {
        // Small integers: many ties.
        lhs = random.floats(kind, shape, -2, 2);
        rhs = random.floats(kind, shape, -2, 2);
        for (int64_t i = 0; i < lhs.getNumElements(); ++i) {
          setFloat(lhs, i, std::round(toDoubles(lhs)[i]));
          setFloat(rhs, i, std::round(toDoubles(rhs)[i]));
        }
        setFloat(lhs, 0, kNaN);
        setFloat(rhs, 1, kNaN);
        setFloat(lhs, 2, -kInf);
      } else {
        lhs = random.integers(kind, shape, -2, 2);
        rhs = random.integers(kind, shape, -2, 2);
      }
      checkOp(("titan.compare " + predicate + ", %a0, %a1 : " + type(lhs) +
               " -> " + type(ElementType::I1, shape))
                  .str(),
              {lhs, rhs}, type(ElementType::I1, shape), kExact);
    }
  }
}

TEST_F(KernelNumericsTest, Select) {
  Random random(11);
  for (ElementType kind : {ElementType::F32, ElementType::BF16,
                           ElementType::I64, ElementType::I1}) {
    SmallVector<int64_t> shape = random.shape(3);
    TensorValue cond = random.integers(ElementType::I1, shape, 0, 1);
    bool isFloat = kind == ElementType::F32 || kind == ElementType::BF16;
    TensorValue onTrue = isFloat ? random.floats(kind, shape)
                                 : random.integers(kind, shape, -9, 9);
    TensorValue onFalse = isFloat ? random.floats(kind, shape)
                                  : random.integers(kind, shape, -9, 9);
    checkOp("titan.select %a0, %a1, %a2 : " + type(cond) + ", " + type(onTrue),
            {cond, onTrue, onFalse}, type(onTrue), kExact);
  }
}

TEST_F(KernelNumericsTest, Constants) {
  // Splat constants become fills, dense ones constants; both as a result
  // and folded into a user.
  TensorValue x = Random(12).floats(ElementType::F32, {2, 3});
  check(makeKernel({},
                   "%r = titan.constant dense<0xFF800000> : "
                   "tensor<4x5xf32>",
                   {"tensor<4x5xf32>"}),
        {}, kExact);
  check(makeKernel({},
                   "%r = titan.constant dense<[[1, -2], [3, 4]]> : "
                   "tensor<2x2xi64>",
                   {"tensor<2x2xi64>"}),
        {}, kExact);
  check(makeKernel({}, "%r = titan.constant dense<true> : tensor<3xi1>",
                   {"tensor<3xi1>"}),
        {}, kExact);
  check(makeKernel({},
                   "%r = titan.constant dense<[1.5, -2.25, 3.0]> : "
                   "tensor<3xbf16>",
                   {"tensor<3xbf16>"}),
        {}, kExact);
  check(makeKernel({x},
                   "%c = titan.constant dense<0.5> : tensor<2x3xf32>\n"
                   "  %d = titan.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, "
                   "6.0]]> : tensor<2x3xf32>\n"
                   "  %m = titan.mul %a0, %c : tensor<2x3xf32>\n"
                   "  %r = titan.add %m, %d : tensor<2x3xf32>",
                   {"tensor<2x3xf32>"}),
        {x}, kExact);
}

TEST_F(KernelNumericsTest, Iota) {
  // Every dim; bf16 rounds positions above 256.
  for (ElementType kind :
       {ElementType::F32, ElementType::F64, ElementType::BF16, ElementType::I64,
        ElementType::I32}) {
    SmallVector<int64_t> shape = {3, 5, 4};
    for (int64_t dim = 0; dim < 3; ++dim)
      check(makeKernel({},
                       "%r = titan.iota dim " + std::to_string(dim) + " : " +
                           type(kind, shape),
                       {type(kind, shape)}),
            {}, kExact);
  }
  check(makeKernel({}, "%r = titan.iota dim 0 : tensor<700xbf16>",
                   {"tensor<700xbf16>"}),
        {}, kExact);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST_F(KernelNumericsTest, Reductions) {
  // Every subset of dims of a rank-3 input, with and without keepdim. Sums
  // and means of positive data (so that a wrong init or map shows as a
  // relative error); maxima of signed data, exact.
  Random random(13);
  const SmallVector<int64_t> dimSets[] = {{0},    {1},    {2},      {0, 1},
                                          {0, 2}, {1, 2}, {0, 1, 2}};
  for (ElementType kind : kFloatKinds) {
    for (StringRef op : {"reduce_sum", "reduce_mean", "reduce_max"}) {
      for (ArrayRef<int64_t> dims : dimSets) {
        for (bool keepdim : {false, true}) {
          SmallVector<int64_t> shape = random.shape(3);
          bool isMax = op == "reduce_max";
          TensorValue x = isMax ? random.floats(kind, shape, -3, 3)
                                : random.floats(kind, shape, 0.5, 2);
          SmallVector<int64_t> resultShape;
          for (auto [d, size] : llvm::enumerate(shape)) {
            if (!llvm::is_contained(dims, int64_t(d)))
              resultShape.push_back(size);
            else if (keepdim)
              resultShape.push_back(1);
          }
          std::string result = type(kind, resultShape);
          checkOp(("titan." + op + " %a0 dims " + list(dims) +
                   (keepdim ? " keepdim" : "") + " : " + type(x) + " -> " +
                   result)
                      .str(),
                  {x}, result, isMax ? kExact : forKind(kind));
        }
      }
    }
  }
}

TEST_F(KernelNumericsTest, ReductionsOverUnitDims) {
  // Over dims of extent 1 only, each result is the one element it reduces,
  // NaN and infinities included: exact (the kernel copies, without an
  // accumulator).
  Random random(15);
  for (ElementType kind : kFloatKinds) {
    TensorValue x = random.floats(kind, {1, 6, 1}, -3, 3);
    setFloat(x, 1, kNaN);
    setFloat(x, 2, kInf);
    setFloat(x, 3, -kInf);
    setFloat(x, 4, -0.0);
    for (StringRef op : {"reduce_sum", "reduce_mean", "reduce_max"}) {
      checkOp(("titan." + op + " %a0 dims [0, 2] : " + type(x) + " -> " +
               type(kind, {6}))
                  .str(),
              {x}, type(kind, {6}), kExact);
      checkOp(("titan." + op + " %a0 dims [2] keepdim : " + type(x) + " -> " +
               type(kind, {1, 6, 1}))
                  .str(),
              {x}, type(kind, {1, 6, 1}), kExact);
    }
  }
}

TEST_F(KernelNumericsTest, ReduceMaxOfNaNAndMinusInfinity) {
  // A NaN anywhere in a row gives NaN; a row of -inf gives -inf.
  for (ElementType kind : kFloatKinds) {
    TensorValue x = Random(14).floats(kind, {4, 5, 6});
    setFloat(x, 7, kNaN);
    for (int64_t j = 0; j < 6; ++j)
      setFloat(x, 2 * 6 + j, -kInf);
    std::string source = type(x);
    checkOp("titan.reduce_max %a0 dims [2] : " + source + " -> " +
                type(kind, {4, 5}),
            {x}, type(kind, {4, 5}), kExact);
    checkOp("titan.reduce_max %a0 dims [0, 1] keepdim : " + source + " -> " +
                type(kind, {1, 1, 6}),
            {x}, type(kind, {1, 1, 6}), kExact);
  }
}

TEST_F(KernelNumericsTest, Softmax) {
  // Along every dim of a rank-3 input, on ordinary data, on data so large
  // that exp overflows unless the row max is subtracted first, and on data
  // with -inf masks: masked entries get 0, a fully masked row NaN (as in
  // torch), and a NaN poisons its row.
  Random random(15);
  enum class Data { Plain, Large, Masked };
  for (ElementType kind : kFloatKinds) {
    double large = kind == ElementType::F64 ? 800 : 120;
    for (StringRef op : {"softmax", "log_softmax"}) {
      for (int64_t dim = 0; dim < 3; ++dim) {
        for (Data data : {Data::Plain, Data::Large, Data::Masked}) {
          SmallVector<int64_t> shape = random.shape(3);
          TensorValue x = data == Data::Large
                              ? random.floats(kind, shape, large - 10, large)
                              : random.floats(kind, shape, -8, 8);
          if (data == Data::Masked) {
            for (int64_t i = 0; i < x.getNumElements(); ++i)
              if (random.uniform(0, 1) < 0.3)
                setFloat(x, i, -kInf);
            // The row along `dim` through element 0 is all -inf.
            SmallVector<int64_t> strides = {shape[1] * shape[2], shape[2], 1};
            for (int64_t j = 0; j < shape[dim]; ++j)
              setFloat(x, j * strides[dim], -kInf);
            setFloat(x, x.getNumElements() - 1, kNaN);
          }
          checkOp(("titan." + op + " %a0 dim " + std::to_string(dim) + " : " +
                   type(x))
                      .str(),
                  {x}, type(x), forKind(kind));
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

TEST_F(KernelNumericsTest, Norms) {
  Random random(16);
  for (ElementType kind : kFloatKinds) {
    for (unsigned rank : {1u, 2u, 3u}) {
      for (double eps : {1e-5, 0.1}) {
        SmallVector<int64_t> shape = random.shape(rank, 2, 9);
        SmallVector<int64_t> columns = {shape.back()};
        TensorValue x = random.floats(kind, shape);
        TensorValue w = random.floats(kind, columns, 0.5, 1.5);
        TensorValue b = random.floats(kind, columns);
        TensorValue dy = random.floats(kind, shape);
        std::string attrs =
            llvm::formatv(" eps {0:e17} : {1}, {2}", eps, type(x), type(w));
        Tolerance tolerance = forKind(kind);
        checkOp("titan.rms_norm %a0, %a1" + attrs, {x, w}, type(x), tolerance);
        checkOp("titan.layer_norm %a0, %a1, %a2" + attrs, {x, w, b}, type(x),
                tolerance);
        check(makeKernel({x, w, dy},
                         "%r:2 = titan.rms_norm_grad %a0, %a1, %a2" + attrs,
                         {type(x), type(w)}),
              {x, w, dy}, tolerance);
        // With the residual stream's cotangent as the addend.
        TensorValue residual = random.floats(kind, shape);
        check(makeKernel({x, w, dy, residual},
                         "%r:2 = titan.rms_norm_grad %a0, %a1, %a2 plus %a3" +
                             attrs,
                         {type(x), type(w)}),
              {x, w, dy, residual}, tolerance);
        check(makeKernel({x, w, dy},
                         "%r:3 = titan.layer_norm_grad %a0, %a1, %a2" + attrs,
                         {type(x), type(w), type(w)}),
              {x, w, dy}, tolerance);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// A tensor of `kind` and `shape` with distinct-ish random elements.
TensorValue randomOfKind(Random &random, ElementType kind,
                         ArrayRef<int64_t> shape) {
  switch (kind) {
  case ElementType::I64:
  case ElementType::I32:
    return random.integers(kind, shape, -1000, 1000);
  case ElementType::I1:
    return random.integers(kind, shape, 0, 1);
  default:
    return random.floats(kind, shape);
  }
}

TEST_F(KernelNumericsTest, BroadcastInDim) {
  // Mapped dims, size-1 dims broadcast (index 0) or kept, permuted dims and
  // a 0-d operand.
  struct Case {
    SmallVector<int64_t> operand, dims, result;
  };
  const Case cases[] = {
      {{6}, {2}, {3, 4, 6}},    {{3, 1}, {0, 1}, {3, 5}},
      {{}, {}, {4, 2}},         {{5, 3}, {2, 0}, {3, 4, 5}},
      {{1, 1}, {0, 1}, {1, 7}}, {{4, 1, 6}, {0, 1, 3}, {4, 3, 2, 6}}};
  Random random(17);
  for (ElementType kind : {ElementType::F32, ElementType::BF16,
                           ElementType::I64, ElementType::I1}) {
    for (const Case &c : cases) {
      TensorValue x = randomOfKind(random, kind, c.operand);
      checkOp("titan.broadcast_in_dim %a0 dims " + list(c.dims) + " : " +
                  type(x) + " -> " + type(kind, c.result),
              {x}, type(kind, c.result), kExact);
    }
  }
}

TEST_F(KernelNumericsTest, Transpose) {
  Random random(18);
  SmallVector<int64_t> permutation = {0, 1, 2};
  do {
    SmallVector<int64_t> shape = random.shape(3);
    TensorValue x = random.floats(ElementType::F32, shape);
    SmallVector<int64_t> result;
    for (int64_t d : permutation)
      result.push_back(shape[d]);
    checkOp("titan.transpose %a0 " + list(permutation) + " : " + type(x) +
                " -> " + type(ElementType::F32, result),
            {x}, type(ElementType::F32, result), kExact);
  } while (std::next_permutation(permutation.begin(), permutation.end()));
  TensorValue x = random.integers(ElementType::I64, {2, 3, 4, 5}, -9, 9);
  checkOp("titan.transpose %a0 [0, 2, 1, 3] : " + type(x) +
              " -> tensor<2x4x3x5xi64>",
          {x}, "tensor<2x4x3x5xi64>", kExact);
}

TEST_F(KernelNumericsTest, SliceAndPad) {
  // Strided slices at random offsets, and pad, their inverse (zeros
  // elsewhere), at random positions and steps.
  Random random(19);
  for (ElementType kind : {ElementType::F32, ElementType::BF16,
                           ElementType::I64, ElementType::I1}) {
    for (int trial = 0; trial < 4; ++trial) {
      SmallVector<int64_t> shape = random.shape(3, 3, 9);
      SmallVector<int64_t> start, limit, step, sliced;
      for (int64_t size : shape) {
        start.push_back(random.integer(0, size - 1));
        limit.push_back(random.integer(start.back() + 1, size));
        step.push_back(random.integer(1, 3));
        sliced.push_back((limit.back() - start.back() + step.back() - 1) /
                         step.back());
      }
      TensorValue x = randomOfKind(random, kind, shape);
      checkOp("titan.slice %a0 " + list(start) + " to " + list(limit) +
                  " step " + list(step) + " : " + type(x) + " -> " +
                  type(kind, sliced),
              {x}, type(kind, sliced), kExact);

      SmallVector<int64_t> padded;
      for (auto [size, first, stride] : llvm::zip_equal(shape, start, step))
        padded.push_back(first + (size - 1) * stride + 1 +
                         random.integer(0, 2));
      checkOp("titan.pad %a0 " + list(start) + " step " + list(step) + " : " +
                  type(x) + " -> " + type(kind, padded),
              {x}, type(kind, padded), kExact);
    }
  }
}

TEST_F(KernelNumericsTest, Concat) {
  Random random(20);
  for (ElementType kind : {ElementType::F32, ElementType::I64}) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      for (int operands : {2, 3}) {
        SmallVector<int64_t> shape = random.shape(3);
        std::vector<TensorValue> inputs;
        std::string names, types;
        int64_t total = 0;
        for (int i = 0; i < operands; ++i) {
          SmallVector<int64_t> part(shape);
          part[dim] = random.integer(1, 5);
          total += part[dim];
          inputs.push_back(randomOfKind(random, kind, part));
          names += (i ? ", %a" : "%a") + std::to_string(i);
          types += (i ? ", " : "") + type(inputs.back());
        }
        SmallVector<int64_t> result(shape);
        result[dim] = total;
        checkOp("titan.concat " + names + " dim " + std::to_string(dim) +
                    " : (" + types + ") -> " + type(kind, result),
                inputs, type(kind, result), kExact);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Embedding, RoPE, cross-entropy
//===----------------------------------------------------------------------===//

TEST_F(KernelNumericsTest, Embedding) {
  Random random(21);
  for (ElementType tableKind : kFloatKinds) {
    for (ElementType idKind : {ElementType::I64, ElementType::I32}) {
      for (unsigned rank : {1u, 2u}) {
        int64_t vocab = random.integer(5, 40), dim = random.integer(2, 9);
        TensorValue table = random.floats(tableKind, {vocab, dim});
        SmallVector<int64_t> idShape = random.shape(rank);
        TensorValue ids = random.integers(idKind, idShape, 0, vocab - 1);
        SmallVector<int64_t> result(idShape);
        result.push_back(dim);
        checkOp("titan.embedding %a0, %a1 : " + type(table) + ", " + type(ids) +
                    " -> " + type(tableKind, result),
                {table, ids}, type(tableKind, result), kExact);
      }
    }
  }
}

TEST_F(KernelNumericsTest, Rope) {
  // Both styles; tables of the input's type or another float type (the
  // rotation computes in the wider one).
  Random random(22);
  const std::pair<ElementType, ElementType> types[] = {
      {ElementType::F32, ElementType::F32},
      {ElementType::BF16, ElementType::F32},
      {ElementType::BF16, ElementType::BF16},
      {ElementType::F32, ElementType::F64},
      {ElementType::F64, ElementType::F64}};
  for (auto [inputKind, tableKind] : types) {
    for (StringRef style : {"interleaved", "half"}) {
      SmallVector<int64_t> shape = random.shape(3);
      shape.push_back(2 * random.integer(1, 5));
      TensorValue x = random.floats(inputKind, shape);
      SmallVector<int64_t> tableShape = {shape[1], shape[3] / 2};
      TensorValue cos = random.floats(tableKind, tableShape, -1, 1);
      TensorValue sin = random.floats(tableKind, tableShape, -1, 1);
      checkOp(("titan.rope %a0, %a1, %a2 " + style + " : " + type(x) + ", " +
               type(cos))
                  .str(),
              {x, cos, sin}, type(x), forKind(inputKind));
    }
  }
}

/// Labels of `shape` in [0, vocab) with each row ignored with probability
/// `ignored`.
TensorValue randomLabels(Random &random, ElementType kind,
                         ArrayRef<int64_t> shape, int64_t vocab,
                         int64_t ignoreIndex, double ignored) {
  TensorValue labels = random.integers(kind, shape, 0, vocab - 1);
  for (int64_t &label : labels.getMutable<int64_t>())
    if (random.uniform(0, 1) < ignored)
      label = ignoreIndex;
  return labels;
}

TEST_F(KernelNumericsTest, CrossEntropy) {
  // Logits of rank 2 and 3, labels i64 and i32, the default ignore_index
  // and others, some rows ignored, and every row ignored (the loss is NaN,
  // its gradient zero).
  Random random(23);
  for (ElementType kind : kFloatKinds) {
    for (ElementType labelKind : {ElementType::I64, ElementType::I32}) {
      for (int64_t ignoreIndex : {int64_t(-100), int64_t(3), int64_t(-1)}) {
        for (double ignored : {0.0, 0.3, 1.0}) {
          SmallVector<int64_t> shape = random.shape(random.integer(2, 3), 2, 6);
          shape.back() = random.integer(4, 40);
          // Logits around 100 (800 for f64) overflow exp unless the row
          // max is subtracted first.
          double shift =
              ignored == 0.3 ? (kind == ElementType::F64 ? 800 : 100) : 0;
          TensorValue logits = random.floats(kind, shape, shift - 6, shift + 6);
          SmallVector<int64_t> rows(shape.begin(), shape.end() - 1);
          TensorValue labels = randomLabels(random, labelKind, rows,
                                            shape.back(), ignoreIndex, ignored);
          ElementType lossKind =
              kind == ElementType::F64 ? ElementType::F64 : ElementType::F32;
          TensorValue grad = random.floats(lossKind, {}, 0.5, 2);
          std::string attr =
              ignoreIndex == -100
                  ? std::string()
                  : " ignore_index " + std::to_string(ignoreIndex);
          Tolerance tolerance = forKind(kind);
          if (kind == ElementType::BF16)
            tolerance = kF32; // the loss is f32
          checkOp("titan.cross_entropy %a0, %a1" + attr + " : " + type(logits) +
                      ", " + type(labels) + " -> " + type(lossKind, {}),
                  {logits, labels}, type(lossKind, {}), tolerance);
          checkOp("titan.cross_entropy_grad %a0, %a1, %a2" + attr + " : " +
                      type(logits) + ", " + type(labels) + ", " + type(grad),
                  {logits, labels, grad}, type(logits), forKind(kind));
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Fused kernels
//===----------------------------------------------------------------------===//

TEST_F(KernelNumericsTest, FusedChains) {
  // Several ops in one kernel: elementwise fusion must keep each op's
  // rounding and fold broadcasts and transposes into their consumers.
  Random random(24);
  TensorValue x = random.floats(ElementType::BF16, {3, 5, 8});
  TensorValue y = random.floats(ElementType::BF16, {3, 5, 8});
  check(makeKernel({x, y},
                   "%s = titan.silu %a0 : tensor<3x5x8xbf16>\n"
                   "  %r = titan.mul %s, %a1 : tensor<3x5x8xbf16>",
                   {"tensor<3x5x8xbf16>"}),
        {x, y}, kBF16);

  // Softmax written with reductions and broadcasts (keepdim), two results.
  TensorValue s = random.floats(ElementType::F32, {4, 6, 7}, -5, 5);
  check(makeKernel(
            {s},
            "%m = titan.reduce_max %a0 dims [2] keepdim : tensor<4x6x7xf32> "
            "-> tensor<4x6x1xf32>\n"
            "  %mb = titan.broadcast_in_dim %m dims [0, 1, 2] : "
            "tensor<4x6x1xf32> -> tensor<4x6x7xf32>\n"
            "  %d = titan.sub %a0, %mb : tensor<4x6x7xf32>\n"
            "  %e = titan.exp %d : tensor<4x6x7xf32>\n"
            "  %z = titan.reduce_sum %e dims [2] keepdim : tensor<4x6x7xf32> "
            "-> tensor<4x6x1xf32>\n"
            "  %zb = titan.broadcast_in_dim %z dims [0, 1, 2] : "
            "tensor<4x6x1xf32> -> tensor<4x6x7xf32>\n"
            "  %p = titan.div %e, %zb : tensor<4x6x7xf32>",
            {"tensor<4x6x7xf32>", "tensor<4x6x1xf32>"}, "%p, %z"),
        {s}, kF32);

  // A transpose and a broadcast folded into an elementwise consumer, and a
  // slice read by one.
  TensorValue a = random.floats(ElementType::F32, {5, 3, 4});
  TensorValue b = random.floats(ElementType::F32, {4});
  check(makeKernel({a, b},
                   "%t = titan.transpose %a0 [1, 2, 0] : tensor<5x3x4xf32> -> "
                   "tensor<3x4x5xf32>\n"
                   "  %bb = titan.broadcast_in_dim %a1 dims [1] : "
                   "tensor<4xf32> -> tensor<3x4x5xf32>\n"
                   "  %m = titan.mul %t, %bb : tensor<3x4x5xf32>\n"
                   "  %s = titan.slice %m [0, 1, 0] to [3, 4, 5] step [2, 2, "
                   "1] : tensor<3x4x5xf32> -> tensor<2x2x5xf32>\n"
                   "  %r = titan.tanh %s : tensor<2x2x5xf32>",
                   {"tensor<2x2x5xf32>"}),
        {a, b}, kF32);
}

} // namespace
