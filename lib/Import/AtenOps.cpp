//===- AtenOps.cpp - conversions of aten ops to titan ops -----------------===//
//
// One conversion per aten op kind. Each computes its result shapes itself
// (titan programs have static shapes), makes PyTorch's implicit broadcasting
// and type promotion explicit, and evaluates scalar arithmetic at import
// time. Complex tensors (torchtitan's RoPE) are carried as (real, imag)
// pairs of real tensors. docs/importer.md lists the supported ops.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "titan/Dialect/IndexFunction.h"
#include "titan/Dialect/TensorBuilder.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

Value mlir::titan::import::rowMajorOffsets(
    TensorBuilder &tb, RankedTensorType type, ArrayRef<int64_t> sizes,
    function_ref<Value(int64_t)> position) {
  Value offsets;
  int64_t stride = 1;
  for (int64_t dim = static_cast<int64_t>(sizes.size()) - 1; dim >= 0; --dim) {
    Value term = position(dim);
    if (stride != 1)
      term =
          tb.binary<MulOp>(term, tb.splat(type, static_cast<double>(stride)));
    offsets = offsets ? tb.binary<AddOp>(offsets, term) : term;
    stride *= sizes[dim];
  }
  return offsets ? offsets : tb.splat(type, 0.0);
}

namespace {

/// Applies `fn` to a real tensor or to both parts of a complex one.
Outputs mapParts(const ImportedValue &value,
                 const std::function<llvm::Expected<Value>(Value)> &fn) {
  if (value.isTensor()) {
    llvm::Expected<Value> result = fn(value.tensor);
    if (!result)
      return result.takeError();
    return single(*result);
  }
  if (value.isComplex()) {
    llvm::Expected<Value> real = fn(value.tensor);
    if (!real)
      return real.takeError();
    llvm::Expected<Value> imag = fn(value.imag);
    if (!imag)
      return imag.takeError();
    return single(ImportedValue::ofComplex(*real, *imag));
  }
  return makeError("expected a tensor");
}

/// Resolves a view/reshape size list with one optional -1.
llvm::Expected<SmallVector<int64_t>> resolveShape(ArrayRef<int64_t> from,
                                                  std::vector<int64_t> to) {
  int64_t known = 1, total = 1;
  int inferred = -1;
  for (int64_t d : from)
    total *= d;
  for (auto [i, d] : llvm::enumerate(to)) {
    if (d == -1) {
      if (inferred >= 0)
        return makeError("only one dimension can be inferred (-1)");
      inferred = i;
    } else {
      known *= d;
    }
  }
  auto mismatch = [&] {
    return makeError(
        llvm::formatv("cannot view a tensor of {0} elements as shape [{1}] "
                      "(a traced model records the sizes it computed as "
                      "constants: trace it at the shape it is compiled for, "
                      "a microbatch's under pipeline parallelism, or size "
                      "the view with -1 and broadcasts with expand)",
                      total, llvm::make_range(to.begin(), to.end())));
  };
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return mismatch();
    to[inferred] = total / known;
    known *= to[inferred];
  }
  if (known != total)
    return mismatch();
  return SmallVector<int64_t>(to.begin(), to.end());
}

/// The element type named by a torch dtype code, or an error.
llvm::Expected<Type> dtypeOf(GraphImporter &importer,
                             const ImportedValue &value) {
  if (value.kind != ImportedValue::Kind::Int)
    return makeError("expected a dtype");
  int64_t code = value.intValue;
  bool isScalarType =
      code >= 0 && code < static_cast<int64_t>(c10::ScalarType::NumOptions);
  Type type = isScalarType ? toElementType(importer.getContext(),
                                           static_cast<c10::ScalarType>(code))
                           : Type();
  if (!type)
    return makeError(llvm::formatv(
        "unsupported dtype {0} (code {1}); titan computes in float32, "
        "float64, float16, bfloat16, int64, int32 and bool",
        isScalarType ? c10::toString(static_cast<c10::ScalarType>(code))
                     : "<not a torch dtype>",
        code));
  return type;
}

/// x * y wrapped at 64 bits, as torch's int64 arithmetic (no overflow
/// trap).
int64_t wrappingMultiply(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) *
                              static_cast<uint64_t>(y));
}

/// `value` converted to element type `element` as torch.tensor(value,
/// dtype) stores it: rounded to a float type, truncated to an integer.
ImportedValue numberOfType(const ImportedValue &value, Type element) {
  ImportedValue number;
  if (auto floatType = dyn_cast<FloatType>(element)) {
    APFloat rounded(value.asDouble());
    bool lost;
    rounded.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lost);
    number = ImportedValue::ofFloat(rounded.convertToDouble());
  } else if (element.isInteger(1)) {
    number = ImportedValue::ofBool(value.asDouble() != 0);
  } else {
    number = ImportedValue::ofInt(
        value.kind == ImportedValue::Kind::Float
            ? static_cast<int64_t>(std::trunc(value.floatValue))
            : value.intValue);
  }
  number.wrappedType = element;
  return number;
}

/// A tensor of `type` whose elements all equal `number` as torch stores it
/// in that dtype (numberOfType): an integer with all its 64 bits, where a
/// double keeps 53 (a hash's multiplier 6364136223846793005).
Value splatNumber(Emitter &emit, RankedTensorType type,
                  const ImportedValue &number) {
  Type element = type.getElementType();
  if (isa<FloatType>(element) || element.isInteger(1))
    return emit.splat(type, number.asDouble());
  ImportedValue stored = numberOfType(number, element);
  APInt bits(element.getIntOrFloatBitWidth(), stored.intValue,
             /*isSigned=*/true, /*implicitTrunc=*/true);
  return ConstantOp::create(emit.builder, emit.loc,
                            DenseElementsAttr::get(type, bits));
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

enum class BinaryKind {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  TruncDiv,
  Remainder,
  Fmod,
  Rsub,
  Max,
  Min,
  Pow
};

/// Python's floor division of integers.
int64_t floorDivide(int64_t x, int64_t y) {
  int64_t quotient = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? quotient - 1 : quotient;
}

/// The element type of the 0-d tensor that arithmetic on `a` and `b` makes
/// when either is a number held as a 0-d tensor (else null).
Type wrappedResultType(const ImportedValue &a, const ImportedValue &b,
                       const ImportedValue &result, MLIRContext &context) {
  Type wrapped = a.wrappedType ? a.wrappedType : b.wrappedType;
  if (!wrapped)
    return {};
  if (result.kind != ImportedValue::Kind::Float)
    return IntegerType::get(&context, 64);
  for (const ImportedValue *operand : {&a, &b})
    if (operand->wrappedType && isa<FloatType>(operand->wrappedType))
      return operand->wrappedType;
  return Float32Type::get(&context);
}

/// Scalar arithmetic evaluated at import time, with Python's semantics
/// (exact on integers; floor division and remainder round toward -inf).
Outputs scalarBinary(BinaryKind kind, const ImportedValue &a,
                     const ImportedValue &b, MLIRContext &context) {
  bool ints = a.kind != ImportedValue::Kind::Float &&
              b.kind != ImportedValue::Kind::Float;
  ImportedValue result;
  if (ints) {
    int64_t x = a.intValue, y = b.intValue;
    if (kind == BinaryKind::Rsub)
      std::swap(x, y);
    bool divides = kind == BinaryKind::FloorDiv ||
                   kind == BinaryKind::TruncDiv ||
                   kind == BinaryKind::Remainder || kind == BinaryKind::Fmod;
    if (divides && y == 0)
      return makeError("integer division by zero");
    // Wrapping at 64 bits, as TorchScript's ints and torch's int64.
    auto wrap = [](uint64_t bits) { return static_cast<int64_t>(bits); };
    switch (kind) {
    case BinaryKind::Add:
      result = ImportedValue::ofInt(
          wrap(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)));
      break;
    case BinaryKind::Sub:
    case BinaryKind::Rsub:
      result = ImportedValue::ofInt(
          wrap(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)));
      break;
    case BinaryKind::Mul:
      result = ImportedValue::ofInt(wrappingMultiply(x, y));
      break;
    case BinaryKind::Div:
      result = ImportedValue::ofFloat(static_cast<double>(x) / y);
      break;
    case BinaryKind::FloorDiv:
      result = ImportedValue::ofInt(floorDivide(x, y));
      break;
    case BinaryKind::TruncDiv:
      result = ImportedValue::ofInt(x / y);
      break;
    case BinaryKind::Remainder:
      result = ImportedValue::ofInt(x - floorDivide(x, y) * y);
      break;
    case BinaryKind::Fmod:
      result = ImportedValue::ofInt(x % y);
      break;
    case BinaryKind::Max:
      result = ImportedValue::ofInt(std::max(x, y));
      break;
    case BinaryKind::Min:
      result = ImportedValue::ofInt(std::min(x, y));
      break;
    case BinaryKind::Pow:
      if (y < 0) {
        result = ImportedValue::ofFloat(std::pow(x, y));
        break;
      }
      result = ImportedValue::ofInt(1);
      for (int64_t i = 0; i < y; ++i)
        result.intValue = wrappingMultiply(result.intValue, x);
      break;
    }
  } else {
    double x = a.asDouble(), y = b.asDouble(), r = 0;
    if (kind == BinaryKind::Rsub)
      std::swap(x, y);
    switch (kind) {
    case BinaryKind::Add:
      r = x + y;
      break;
    case BinaryKind::Sub:
    case BinaryKind::Rsub:
      r = x - y;
      break;
    case BinaryKind::Mul:
      r = x * y;
      break;
    case BinaryKind::Div:
      r = x / y;
      break;
    case BinaryKind::FloorDiv:
      r = std::floor(x / y);
      break;
    case BinaryKind::TruncDiv:
      r = std::trunc(x / y);
      break;
    case BinaryKind::Remainder:
      r = x - std::floor(x / y) * y;
      break;
    case BinaryKind::Fmod:
      r = std::fmod(x, y);
      break;
    case BinaryKind::Max:
      r = std::max(x, y);
      break;
    case BinaryKind::Min:
      r = std::min(x, y);
      break;
    case BinaryKind::Pow:
      r = std::pow(x, y);
      break;
    }
    result = ImportedValue::ofFloat(r);
  }
  result.wrappedType = wrappedResultType(a, b, result, context);
  return single(result);
}

/// `x ** p` for a compile-time exponent, as titan ops: sqrt and rsqrt for
/// 1/2 and -1/2; an integer exponent up to 64 in size by repeated squaring
/// (exact, of either sign of x; 1 / x^|p| for a negative one); any other
/// as PyTorch's powf: exp(p log |x|), 0 (p > 0) or inf (p < 0) where x is
/// 0, and for x < 0 NaN, or the sign of x for an odd integer p. The log
/// reads 1 where x is 0, so the branch not taken has a finite gradient.
llvm::Expected<Value> powByConstant(Emitter &emit, Value x, double p) {
  bool integer = p == std::floor(p);
  // Integer tensors: whole powers stay integers, others are float32 (as
  // PyTorch promotes them); negative whole powers PyTorch refuses.
  if (!isa<FloatType>(tensorType(x).getElementType())) {
    if (integer && p < 0)
      return makeError(llvm::formatv("pow of an integer tensor by {0}: "
                                     "integers to negative integer powers "
                                     "are not allowed (as in PyTorch)",
                                     static_cast<int64_t>(p)));
    if (!integer)
      x = emit.cast(x, emit.builder.getF32Type());
  }
  if (p == 0.5)
    return emit.unary<SqrtOp>(x);
  if (p == -0.5)
    return emit.unary<RsqrtOp>(x);
  if (integer && std::abs(p) <= 64) {
    auto n = static_cast<int64_t>(std::abs(p));
    Value result = emit.splatLike(x, 1.0), square = x;
    bool first = true;
    for (; n > 0; n >>= 1) {
      if (n & 1) {
        result = first ? square : emit.binary<MulOp>(result, square);
        first = false;
      }
      if (n > 1)
        square = emit.binary<MulOp>(square, square);
    }
    return p < 0 ? emit.binary<DivOp>(emit.splatLike(x, 1.0), result) : result;
  }
  Value zero = emit.splatLike(x, 0.0);
  Value isZero = emit.compare("eq", x, zero);
  Value magnitude = absolute(emit, x);
  Value safe = emit.select(isZero, emit.splatLike(x, 1.0), magnitude);
  Value power = emit.unary<ExpOp>(emit.scale(emit.unary<LogOp>(safe), p));
  Value atZero =
      emit.splatLike(x, p > 0 ? 0.0 : std::numeric_limits<double>::infinity());
  Value result = emit.select(isZero, atZero, power);
  Value negative = emit.compare("lt", x, zero);
  if (!integer)
    return emit.select(
        negative, emit.splatLike(x, std::numeric_limits<double>::quiet_NaN()),
        result);
  if (std::fmod(std::abs(p), 2.0) == 1.0)
    return emit.select(negative, emit.unary<NegOp>(result), result);
  return result;
}

/// Advances `index` to the next element of `shape` in row-major order.
void nextIndex(MutableArrayRef<int64_t> index, ArrayRef<int64_t> shape) {
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    if (++index[d] < shape[d])
      return;
    index[d] = 0;
  }
}

/// The elements of `value` in row-major order when the program computes it
/// at compile time (constants, iotas, buffers recorded by diagonals, and the
/// elementwise and shape ops on them that IndexFunctionEvaluator follows;
/// with `importer`, its one-element buffers too); nullopt otherwise, or
/// past 2^24 elements.
std::optional<std::vector<double>>
compileTimeElements(Value value, const GraphImporter *importer = nullptr) {
  RankedTensorType type = tensorType(value);
  if (!type.hasStaticShape() || type.getNumElements() > (int64_t(1) << 24))
    return std::nullopt;
  IndexFunctionEvaluator evaluator;
  if (importer)
    importer->assumeOneElementBuffers(evaluator);
  std::optional<IndexFunction> f = evaluator.evaluate(value);
  if (!f)
    return std::nullopt;
  std::vector<double> values;
  values.reserve(type.getNumElements());
  SmallVector<int64_t> index(type.getRank(), 0);
  for (int64_t n = 0; n < type.getNumElements(); ++n) {
    values.push_back(f->at(index));
    nextIndex(index, type.getShape());
  }
  return values;
}

/// A constant of `type` holding `values` (row-major) rounded into its
/// element type as titan.cast rounds.
Value denseConstant(Emitter &emit, RankedTensorType type,
                    ArrayRef<double> values) {
  Type element = type.getElementType();
  SmallVector<Attribute> attrs;
  for (double value : values) {
    double stored = roundToElementType(element, value).value_or(value);
    attrs.push_back(isa<FloatType>(element)
                        ? Attribute(FloatAttr::get(element, stored))
                        : Attribute(IntegerAttr::get(
                              element, static_cast<int64_t>(stored))));
  }
  return ConstantOp::create(emit.builder, emit.loc,
                            DenseElementsAttr::get(type, attrs));
}

/// `values` (row-major, of `type`) as titan ops: `offset + sum_d coef_d *
/// iota_d` when they are an affine function of the indices with integral
/// coefficients (positions, which passes then see as positions), else a
/// dense constant.
Value compileTimeTensor(Emitter &emit, RankedTensorType type,
                        ArrayRef<double> values) {
  int64_t rank = type.getRank();
  SmallVector<double> coef(rank, 0);
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * type.getDimSize(d + 1);
  bool affine = !values.empty();
  for (int64_t d = 0; affine && d < rank; ++d) {
    if (type.getDimSize(d) > 1)
      coef[d] = values[strides[d]] - values[0];
    affine =
        std::trunc(coef[d]) == coef[d] && std::trunc(values[0]) == values[0];
  }
  SmallVector<int64_t> index(rank, 0);
  for (size_t n = 0; affine && n < values.size(); ++n) {
    double expected = values[0];
    for (int64_t d = 0; d < rank; ++d)
      expected += coef[d] * static_cast<double>(index[d]);
    affine = expected == values[n];
    nextIndex(index, type.getShape());
  }
  if (!affine)
    return denseConstant(emit, type, values);
  Value result = emit.splat(type, values[0]);
  for (int64_t d = 0; d < rank; ++d) {
    if (coef[d] == 0)
      continue;
    Value term = emit.iota(type, d);
    if (coef[d] != 1)
      term = emit.binary<MulOp>(term, emit.splat(type, coef[d]));
    result = emit.binary<AddOp>(result, term);
  }
  return result;
}

/// `x ** y` of two float tensors of one shape: by powByConstant when the
/// exponent is a compile-time scalar, computed at compile time when both
/// are compile-time tensors (BLOOM's ALiBi slopes, `torch.pow(base,
/// torch.arange(...))`), `exp(y * ln s)` when the base is a positive
/// compile-time scalar s.
llvm::Expected<Value> powOfTensors(Emitter &emit, Value x, Value y) {
  IndexFunctionEvaluator evaluator;
  if (std::optional<double> p = evaluator.evaluateScalar(y))
    return powByConstant(emit, x, *p);
  std::optional<std::vector<double>> bases = compileTimeElements(x);
  std::optional<std::vector<double>> exponents = compileTimeElements(y);
  if (bases && exponents) {
    for (auto [base, exponent] : llvm::zip(*bases, *exponents))
      base = std::pow(base, exponent);
    return denseConstant(emit, tensorType(x), *bases);
  }
  if (std::optional<double> s = evaluator.evaluateScalar(x); s && *s > 0)
    return emit.unary<ExpOp>(emit.scale(y, std::log(*s)));
  return makeError("pow of two tensors is supported where the exponent is a "
                   "compile-time scalar, the base a positive compile-time "
                   "scalar, or both are computed at compile time (from "
                   "constants, aranges and buffers)");
}

/// Complex arithmetic on (real, imag) pairs; `b` may be real.
Outputs complexBinary(Emitter &emit, BinaryKind kind, ImportedValue a,
                      ImportedValue b) {
  // A Python number (`freqs_cis * self.attention_scaling`) as a 0-d tensor.
  for (ImportedValue *v : {&a, &b})
    if (v->isNumber())
      *v = ImportedValue::ofTensor(emit.importer.materialize(*v));
  auto parts = [&](const ImportedValue &v) -> std::pair<Value, Value> {
    if (v.isComplex())
      return {v.tensor, v.imag};
    return {v.tensor, Value()};
  };
  auto [ar, ai] = parts(a);
  auto [br, bi] = parts(b);
  auto align = [&](Value &x, Value &y) { return unify(emit, x, y); };
  if (kind == BinaryKind::Mul) {
    if (!ai)
      std::swap(ar, br), std::swap(ai, bi);
    if (!bi) { // complex * real
      Value r1 = ar, r2 = br, i1 = ai, i2 = br;
      if (llvm::Error e = align(r1, r2))
        return std::move(e);
      if (llvm::Error e = align(i1, i2))
        return std::move(e);
      return single(ImportedValue::ofComplex(emit.binary<MulOp>(r1, r2),
                                             emit.binary<MulOp>(i1, i2)));
    }
    for (Value *x : {&ar, &ai})
      for (Value *y : {&br, &bi})
        if (llvm::Error e = align(*x, *y))
          return std::move(e);
    // Re-align after shapes grew.
    for (Value *x : {&ar, &ai})
      for (Value *y : {&br, &bi})
        if (llvm::Error e = align(*x, *y))
          return std::move(e);
    Value real = emit.binary<SubOp>(emit.binary<MulOp>(ar, br),
                                    emit.binary<MulOp>(ai, bi));
    Value imag = emit.binary<AddOp>(emit.binary<MulOp>(ar, bi),
                                    emit.binary<MulOp>(ai, br));
    return single(ImportedValue::ofComplex(real, imag));
  }
  if (kind == BinaryKind::Add || kind == BinaryKind::Sub) {
    // A real operand has a zero imaginary part.
    if (!ai)
      ai = emit.splatLike(ar, 0.0);
    if (!bi)
      bi = emit.splatLike(br, 0.0);
    if (llvm::Error e = align(ar, br))
      return std::move(e);
    if (llvm::Error e = align(ai, bi))
      return std::move(e);
    if (kind == BinaryKind::Add)
      return single(ImportedValue::ofComplex(emit.binary<AddOp>(ar, br),
                                             emit.binary<AddOp>(ai, bi)));
    return single(ImportedValue::ofComplex(emit.binary<SubOp>(ar, br),
                                           emit.binary<SubOp>(ai, bi)));
  }
  if (kind == BinaryKind::Div) {
    if (!bi) { // complex / real (Hyena's `rfft(k, n) / n`)
      Value r1 = ar, r2 = br, i1 = ai, i2 = br;
      if (llvm::Error e = align(r1, r2))
        return std::move(e);
      if (llvm::Error e = align(i1, i2))
        return std::move(e);
      return single(ImportedValue::ofComplex(emit.binary<DivOp>(r1, r2),
                                             emit.binary<DivOp>(i1, i2)));
    }
    // (a / b) = a conj(b) / |b|^2, a real `a` with a zero imaginary part.
    if (!ai)
      ai = emit.splatLike(ar, 0.0);
    for (size_t round = 0; round < 2; ++round)
      for (Value *x : {&ar, &ai})
        for (Value *y : {&br, &bi})
          if (llvm::Error e = align(*x, *y))
            return std::move(e);
    Value denominator = emit.binary<AddOp>(emit.binary<MulOp>(br, br),
                                           emit.binary<MulOp>(bi, bi));
    Value real = emit.binary<AddOp>(emit.binary<MulOp>(ar, br),
                                    emit.binary<MulOp>(ai, bi));
    Value imag = emit.binary<SubOp>(emit.binary<MulOp>(ai, br),
                                    emit.binary<MulOp>(ar, bi));
    return single(
        ImportedValue::ofComplex(emit.binary<DivOp>(real, denominator),
                                 emit.binary<DivOp>(imag, denominator)));
  }
  return makeError("this operation on complex tensors is not supported");
}

/// aten::add / sub / mul / div / rsub / maximum / minimum / pow on any mix
/// of tensors, complex tensors and scalars.
Outputs convertBinary(GraphImporter &importer, Node *node, BinaryKind kind) {
  ImportedValue a = importer.input(node, 0);
  ImportedValue b = importer.input(node, 1);
  // add/sub(x, y, alpha): y is scaled by alpha.
  double alpha = 1.0;
  if ((kind == BinaryKind::Add || kind == BinaryKind::Sub ||
       kind == BinaryKind::Rsub) &&
      node->inputs().size() > 2) {
    llvm::Expected<double> value = importer.numberInput(node, 2);
    if (!value)
      return value.takeError();
    alpha = *value;
  }
  // div(x, y, rounding_mode='trunc'|'floor').
  if (kind == BinaryKind::Div && node->inputs().size() > 2) {
    const ImportedValue &mode = importer.input(node, 2);
    if (mode.kind == ImportedValue::Kind::String)
      kind = mode.text == "floor" ? BinaryKind::FloorDiv : BinaryKind::TruncDiv;
  }
  if (a.kind == ImportedValue::Kind::List &&
      b.kind == ImportedValue::Kind::List && kind == BinaryKind::Add) {
    std::vector<ImportedValue> items(a.items);
    items.insert(items.end(), b.items.begin(), b.items.end());
    return single(ImportedValue::ofList(std::move(items)));
  }
  // A list repeated (`[1] * (x.dim() - 1)`; `n * [1]`): empty for n <= 0,
  // as Python's.
  if (kind == BinaryKind::Mul && (a.kind == ImportedValue::Kind::List) !=
                                     (b.kind == ImportedValue::Kind::List)) {
    const ImportedValue &list = a.kind == ImportedValue::Kind::List ? a : b;
    const ImportedValue &count = a.kind == ImportedValue::Kind::List ? b : a;
    if (count.kind != ImportedValue::Kind::Int)
      return makeError("a list can be repeated only an int number of times");
    std::vector<ImportedValue> items;
    for (int64_t i = 0; i < count.intValue; ++i)
      items.insert(items.end(), list.items.begin(), list.items.end());
    return single(ImportedValue::ofList(std::move(items)));
  }
  if (a.isNumber() && b.isNumber()) {
    if (alpha != 1.0)
      b = b.kind == ImportedValue::Kind::Float
              ? ImportedValue::ofFloat(b.asDouble() * alpha)
              : ImportedValue::ofInt(
                    wrappingMultiply(b.intValue, static_cast<int64_t>(alpha)));
    return scalarBinary(kind, a, b, importer.getContext());
  }
  Emitter emit(importer);
  if (a.isComplex() || b.isComplex()) {
    if (alpha != 1.0 || kind == BinaryKind::Rsub)
      return makeError("this form on complex tensors is not supported");
    return complexBinary(emit, kind, a, b);
  }
  if (kind == BinaryKind::Rsub) {
    std::swap(a, b);
    kind = BinaryKind::Sub;
    // rsub(x, y, alpha) = y - alpha * x: alpha scales the swapped operand.
    if (alpha != 1.0) {
      if (a.isNumber())
        a = ImportedValue::ofFloat(a.asDouble() * alpha);
      else if (isa<FloatType>(tensorType(a.tensor).getElementType()))
        a = ImportedValue::ofTensor(emit.scale(a.tensor, alpha));
      else
        return makeError(integerTensorArithmetic);
      alpha = 1.0;
    }
  }
  // As in torch, an integer or boolean tensor with a float scalar, or
  // divided, computes in the default float type (float32).
  if (a.kind == ImportedValue::Kind::Float ||
      b.kind == ImportedValue::Kind::Float || kind == BinaryKind::Div)
    for (ImportedValue *v : {&a, &b})
      if (v->isTensor() &&
          !isa<FloatType>(tensorType(v->tensor).getElementType()))
        *v = ImportedValue::ofTensor(
            emit.cast(v->tensor, Float32Type::get(&importer.getContext())));
  // A power by a number, of a float or (whole) integer tensor.
  if (kind == BinaryKind::Pow && b.isNumber() && a.isTensor()) {
    llvm::Expected<Value> result = powByConstant(emit, a.tensor, b.asDouble());
    if (!result)
      return result.takeError();
    return single(*result);
  }
  // A tensor combined with a scalar keeps the tensor's element type (a
  // boolean tensor with an integer becomes int64).
  if (b.isNumber() && a.isTensor() &&
      !isa<FloatType>(tensorType(a.tensor).getElementType())) {
    if (tensorType(a.tensor).getElementType().isInteger(1))
      a = ImportedValue::ofTensor(
          emit.cast(a.tensor, IntegerType::get(&importer.getContext(), 64)));
    if (alpha != 1.0)
      b = ImportedValue::ofInt(
          wrappingMultiply(b.intValue, static_cast<int64_t>(alpha)));
    b = ImportedValue::ofTensor(splatNumber(emit, tensorType(a.tensor), b));
    alpha = 1.0;
  }
  if (b.isNumber() && a.isTensor()) {
    double y = b.asDouble() * alpha;
    Value x = a.tensor;
    switch (kind) {
    case BinaryKind::Mul:
      return single(emit.scale(x, y));
    case BinaryKind::Div:
      return single(emit.scale(x, 1.0 / y));
    default:
      b = ImportedValue::ofTensor(emit.splat(tensorType(x), y));
      alpha = 1.0;
    }
  }
  if (a.isNumber() && b.isTensor()) {
    if (tensorType(b.tensor).getElementType().isInteger(1))
      b = ImportedValue::ofTensor(
          emit.cast(b.tensor, IntegerType::get(&importer.getContext(), 64)));
    a = ImportedValue::ofTensor(splatNumber(emit, tensorType(b.tensor), a));
  }
  if (!a.isTensor() || !b.isTensor())
    return makeError("unsupported operand kinds");
  Value x = a.tensor, y = b.tensor;
  if (llvm::Error error = unify(emit, x, y))
    return std::move(error);
  Type element = tensorType(x).getElementType();
  if (!isa<FloatType>(element)) {
    if (element.isInteger(1)) {
      // As torch: a product or minimum of masks is their `and`, a sum or
      // maximum their `or`.
      RankedTensorType type = tensorType(x);
      if (alpha == 1.0 && (kind == BinaryKind::Mul || kind == BinaryKind::Min))
        return single(emit.select(x, y, emit.splat(type, 0.0)));
      if (alpha == 1.0 && (kind == BinaryKind::Add || kind == BinaryKind::Max))
        return single(emit.select(x, emit.splat(type, 1.0), y));
      return makeError("this arithmetic on two boolean tensors is not "
                       "supported; use logical_and / logical_or, or cast to "
                       "a number type first");
    }
    bool integral = kind != BinaryKind::Div && kind != BinaryKind::Pow;
    if (!integral || alpha != std::trunc(alpha))
      return makeError(integerTensorArithmetic);
    if (alpha != 1.0)
      y = emit.binary<MulOp>(y, emit.splat(tensorType(y), alpha));
  } else if (alpha != 1.0) {
    y = emit.scale(y, alpha);
  }
  switch (kind) {
  case BinaryKind::Add:
    return single(emit.binary<AddOp>(x, y));
  case BinaryKind::Sub:
  case BinaryKind::Rsub:
    return single(emit.binary<SubOp>(x, y));
  case BinaryKind::Mul:
    return single(emit.binary<MulOp>(x, y));
  case BinaryKind::Div:
    return single(emit.binary<DivOp>(x, y));
  case BinaryKind::Max:
    return single(emit.binary<MaxOp>(x, y));
  case BinaryKind::Min:
    // Integers by comparison (negating the most negative one wraps).
    if (!isa<FloatType>(element))
      return single(emit.select(emit.compare("le", x, y), x, y));
    return single(emit.unary<NegOp>(
        emit.binary<MaxOp>(emit.unary<NegOp>(x), emit.unary<NegOp>(y))));
  case BinaryKind::Pow: {
    llvm::Expected<Value> result = powOfTensors(emit, x, y);
    if (!result)
      return result.takeError();
    return single(*result);
  }
  case BinaryKind::FloorDiv:
  case BinaryKind::TruncDiv:
    return single(RoundedDivOp::create(emit.builder, emit.loc, x.getType(), x,
                                       y, kind == BinaryKind::TruncDiv));
  case BinaryKind::Remainder:
  case BinaryKind::Fmod:
    return single(RemainderOp::create(emit.builder, emit.loc, x.getType(), x, y,
                                      kind == BinaryKind::Fmod));
  }
  return makeError("this operation on two tensors is not supported");
}

/// Elementwise unary ops; scalars are evaluated.
template <typename OpTy>
Outputs convertUnary(GraphImporter &importer, Node *node,
                     double (*scalarFn)(double)) {
  const ImportedValue &x = importer.input(node, 0);
  // -n of a Python int (scripted `x[:, -self.k:]`) stays an int.
  if constexpr (std::is_same_v<OpTy, NegOp>)
    if (x.kind == ImportedValue::Kind::Int ||
        x.kind == ImportedValue::Kind::Bool)
      return single(ImportedValue::ofInt(-x.intValue));
  if (x.isNumber() && scalarFn)
    return single(ImportedValue::ofFloat(scalarFn(x.asDouble())));
  llvm::Expected<Value> input = importer.tensorInput(node, 0);
  if (!input)
    return input.takeError();
  Type element = tensorType(*input).getElementType();
  Emitter emit(importer);
  if (isa<IntegerType>(element)) {
    // neg keeps an integer tensor integer; exp, log, sqrt, rsqrt, tanh,
    // sigmoid, cos and sin compute an integer or boolean one in float32, as
    // torch does (Mistral's `torch.log(mask)` of an int64 0/1 mask).
    if constexpr (std::is_same_v<OpTy, NegOp>) {
      if (element.isInteger(1))
        return makeError("negation of a boolean tensor; use ~ or "
                         "torch.logical_not");
      return single(emit.unary<OpTy>(*input));
    }
    if constexpr (std::is_same_v<OpTy, SiluOp>)
      return makeError("expected a floating-point tensor");
    return single(emit.unary<OpTy>(
        emit.cast(*input, Float32Type::get(&importer.getContext()))));
  }
  if (!isa<FloatType>(element))
    return makeError("expected a floating-point tensor");
  return single(emit.unary<OpTy>(*input));
}

/// aten::reciprocal (`1.0 / x` traces as reciprocal times 1.0): 1 / x, of an
/// integer or boolean tensor in float32, as torch's.
Outputs convertReciprocal(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  if (x.isNumber())
    return single(ImportedValue::ofFloat(1.0 / x.asDouble()));
  llvm::Expected<Value> input = importer.tensorInput(node, 0);
  if (!input)
    return input.takeError();
  Emitter emit(importer);
  Value value = *input;
  if (!isa<FloatType>(tensorType(value).getElementType()))
    value = emit.cast(value, Float32Type::get(&importer.getContext()));
  return single(emit.binary<DivOp>(emit.splat(tensorType(value), 1.0), value));
}

/// Whether two values known at import time (numbers, strings, None) are
/// equal, as Python's `==`.
static bool sameConstant(const ImportedValue &a, const ImportedValue &b) {
  if (a.isNumber() && b.isNumber())
    return a.asDouble() == b.asDouble();
  return a.kind == b.kind && a.intValue == b.intValue &&
         a.floatValue == b.floatValue && a.text == b.text;
}

/// aten::__not__ of a bool known at import time (a scripted `if not
/// self.training:`).
Outputs convertNot(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  // `not` of a condition known only at run time (aten::Bool of a tensor).
  if (x.isTensor() && tensorType(x.tensor).getRank() == 0 &&
      tensorType(x.tensor).getElementType().isInteger(1)) {
    Emitter emit(importer);
    return single(emit.compare("eq", x.tensor, emit.splatLike(x.tensor, 0.0)));
  }
  if (!x.isNumber())
    return makeError("`not` of a value known only at run time makes control "
                     "flow depend on data; use torch.logical_not on tensors");
  return single(ImportedValue::ofBool(x.asDouble() == 0));
}

/// aten::__contains__(list, item) of values known at import time (a
/// scripted `if w.dtype in [torch.float16, torch.bfloat16]:`).
Outputs convertContains(GraphImporter &importer, Node *node) {
  const ImportedValue &list = importer.input(node, 0);
  const ImportedValue &item = importer.input(node, 1);
  if (list.kind == ImportedValue::Kind::String &&
      item.kind == ImportedValue::Kind::String)
    return single(
        ImportedValue::ofBool(StringRef(list.text).contains(item.text)));
  if (list.kind != ImportedValue::Kind::List || item.isTensor())
    return makeError("`in` is evaluated at import time, on a list of numbers "
                     "or strings");
  return single(ImportedValue::ofBool(
      llvm::any_of(list.items, [&](const ImportedValue &entry) {
        return sameConstant(entry, item);
      })));
}

/// prim::requires_grad: whether the tensor depends on a parameter through
/// ops a gradient flows back through (the training step differentiates
/// the program; a detached value, an input or a buffer does not).
Outputs convertRequiresGrad(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  if (!x.isTensor() && !x.isComplex())
    return makeError("requires_grad of something other than a tensor");
  SmallVector<Value> pending{x.tensor};
  llvm::DenseSet<Value> seen;
  while (!pending.empty()) {
    Value v = pending.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto argument = dyn_cast<BlockArgument>(v)) {
      if (importer.getArgumentNames()[argument.getArgNumber()].second ==
          ArgRole::Param)
        return single(ImportedValue::ofBool(true));
      continue;
    }
    Operation *op = v.getDefiningOp();
    if (!op || isa<StopGradientOp>(op))
      continue;
    llvm::append_range(pending, op->getOperands());
  }
  return single(ImportedValue::ofBool(false));
}

/// aten::item of a 0-d tensor whose value is known at import time (a
/// constant, a module's scalar attribute, a one-element buffer, arithmetic
/// on them): the number.
Outputs convertItem(GraphImporter &importer, Node *node) {
  ImportedValue x = importer.input(node, 0);
  // A tensor the program computes at compile time, from constants and
  // buffers of one element (`(torch.tensor(1.0) / self.norm_factor).item()`
  // in scripted GPT-NeoX).
  if (x.isTensor() && tensorType(x.tensor).getNumElements() == 1)
    if (std::optional<std::vector<double>> values =
            compileTimeElements(x.tensor, &importer)) {
      Type element = tensorType(x.tensor).getElementType();
      if (isa<FloatType>(element))
        return single(ImportedValue::ofFloat(values->front()));
      if (element.isInteger(1))
        return single(ImportedValue::ofBool(values->front() != 0));
      return single(
          ImportedValue::ofInt(static_cast<int64_t>(values->front())));
    }
  if (!x.isNumber())
    return makeError(
        "item() of a tensor computed at run time: its value cannot become a "
        "Python number when titan compiles the program (its shapes and "
        "control flow are static); keep it a tensor (multiply by it instead "
        "of passing .item() as a scalar argument)");
  x.wrappedType = Type();
  return single(x);
}

/// aten::str of a device, a string or a number known at import time.
Outputs convertStr(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  switch (x.kind) {
  case ImportedValue::Kind::String:
  case ImportedValue::Kind::Device:
    return single(ImportedValue::ofString(x.text));
  case ImportedValue::Kind::Int:
    return single(ImportedValue::ofString(std::to_string(x.intValue)));
  case ImportedValue::Kind::Bool:
    return single(ImportedValue::ofString(x.intValue ? "True" : "False"));
  default:
    return makeError("str() is evaluated at import time, of a device, a "
                     "string, an int or a bool");
  }
}

/// aten::find(s, substr, start, end) of strings known at import time: the
/// first index of substr in s[start:end], or -1. As TorchScript's find, a
/// negative end counts from one past the last character (end = -1, the
/// default, is the whole string).
Outputs convertFind(GraphImporter &importer, Node *node) {
  const ImportedValue &text = importer.input(node, 0);
  const ImportedValue &part = importer.input(node, 1);
  if (text.kind != ImportedValue::Kind::String ||
      part.kind != ImportedValue::Kind::String)
    return makeError("find() is evaluated at import time, of strings");
  int64_t size = text.text.size();
  auto bound = [&](size_t index, int64_t fallback, int64_t fromEnd) {
    const ImportedValue *value =
        index < node->inputs().size() ? &importer.input(node, index) : nullptr;
    int64_t b = value && value->kind == ImportedValue::Kind::Int
                    ? value->intValue
                    : fallback;
    return std::clamp<int64_t>(b < 0 ? b + fromEnd : b, 0, size);
  };
  int64_t start = bound(2, 0, size), end = bound(3, -1, size + 1);
  size_t found = end > start
                     ? StringRef(text.text).slice(start, end).find(part.text)
                     : StringRef::npos;
  return single(ImportedValue::ofInt(
      found == StringRef::npos ? -1 : start + static_cast<int64_t>(found)));
}

/// aten::eq / ne / lt / le / gt / ge.
Outputs convertCompare(GraphImporter &importer, Node *node,
                       StringRef predicate) {
  ImportedValue a = importer.input(node, 0), b = importer.input(node, 1);
  // `x is None` of an Optional that holds a tensor here (a scripted
  // model's `attention_mask`, T5's position_bias after its first block).
  if ((a.isNone() || b.isNone()) && (a.isTensor() || b.isTensor()))
    return single(ImportedValue::ofBool(predicate == "ne"));
  if (!a.isTensor() && !b.isTensor()) {
    // Comparisons of scalars, strings or None at import time.
    bool equal = sameConstant(a, b);
    double x = a.asDouble(), y = b.asDouble();
    bool result = llvm::StringSwitch<bool>(predicate)
                      .Case("eq", equal)
                      .Case("ne", !equal)
                      .Case("lt", x < y)
                      .Case("le", x <= y)
                      .Case("gt", x > y)
                      .Default(x >= y);
    return single(ImportedValue::ofBool(result));
  }
  for (const ImportedValue *v : {&a, &b})
    if (!v->isTensor() && !v->isNumber())
      return makeError("a tensor is compared with a number or a tensor only");
  Emitter emit(importer);
  // A float number against an integer tensor compares in float32, as torch
  // promotes (`ids < 2.5`).
  auto numberLike = [&](const ImportedValue &number, Value tensor) {
    RankedTensorType type = tensorType(tensor);
    if (number.kind == ImportedValue::Kind::Float &&
        !isa<FloatType>(type.getElementType()))
      type = type.clone(Float32Type::get(&importer.getContext()));
    return ImportedValue::ofTensor(splatNumber(emit, type, number));
  };
  if (b.isNumber())
    b = numberLike(b, a.tensor);
  if (a.isNumber())
    a = numberLike(a, b.tensor);
  Value x = a.tensor, y = b.tensor;
  if (llvm::Error error = unify(emit, x, y))
    return std::move(error);
  return single(emit.compare(predicate, x, y));
}

/// aten::__is__ / __isnot__: whether two values are the same object, known
/// at import time: a tensor is the same as itself (one value of the
/// program; `query is key` in nn.MultiheadAttention), never None; other
/// values (None, numbers, strings) are compared.
Outputs convertIdentity(GraphImporter &importer, Node *node, bool negated) {
  const ImportedValue &a = importer.input(node, 0),
                      &b = importer.input(node, 1);
  bool same;
  if (a.isTensor() || a.isComplex() || b.isTensor() || b.isComplex())
    same = a.kind == b.kind && a.tensor == b.tensor && a.imag == b.imag;
  else
    same = sameConstant(a, b);
  return single(ImportedValue::ofBool(same != negated));
}

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

Outputs convertView(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<std::vector<int64_t>> sizes = importer.intListInput(node, 1);
  if (!sizes)
    return sizes.takeError();
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    llvm::Expected<SmallVector<int64_t>> shape =
        resolveShape(tensorType(v).getShape(), *sizes);
    if (!shape)
      return shape.takeError();
    return emit.reshape(v, *shape);
  });
}

/// aten::unflatten(x, dim, sizes) (`x.unflatten(-1, (3, dim))`, Baichuan's
/// W_pack split): dim viewed as `sizes` (one of them may be -1).
Outputs convertUnflatten(GraphImporter &importer, Node *node) {
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<std::vector<int64_t>> sizes = importer.intListInput(node, 2);
  if (!sizes)
    return sizes.takeError();
  llvm::Expected<SmallVector<int64_t>> split =
      resolveShape({td->shape[td->dim]}, *sizes);
  if (!split)
    return split.takeError();
  SmallVector<int64_t> shape(td->shape.begin(), td->shape.begin() + td->dim);
  shape.append(split->begin(), split->end());
  shape.append(td->shape.begin() + td->dim + 1, td->shape.end());
  Emitter emit(importer);
  return mapParts(
      importer.input(node, 0),
      [&](Value v) -> llvm::Expected<Value> { return emit.reshape(v, shape); });
}

Outputs convertFlatten(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  llvm::Expected<int64_t> start = importer.intInput(node, 1);
  llvm::Expected<int64_t> end = importer.intInput(node, 2);
  if (!shape || !start || !end)
    return makeError("flatten needs a tensor and constant dims");
  int64_t rank = shape->size();
  if (rank == 0)
    return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
      return Emitter(importer).reshape(v, {1});
    });
  llvm::Expected<int64_t> s = normalizeDim(*start, rank);
  llvm::Expected<int64_t> e = normalizeDim(*end, rank);
  if (!s || !e)
    return makeError("flatten dims out of range");
  SmallVector<int64_t> result(shape->begin(), shape->begin() + *s);
  int64_t merged = 1;
  for (int64_t d = *s; d <= *e; ++d)
    merged *= (*shape)[d];
  result.push_back(merged);
  result.append(shape->begin() + *e + 1, shape->end());
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    return emit.reshape(v, result);
  });
}

Outputs convertUnsqueeze(GraphImporter &importer, Node *node) {
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1, 1);
  if (!td)
    return td.takeError();
  SmallVector<int64_t> result(td->shape);
  result.insert(result.begin() + td->dim, 1);
  Emitter emit(importer);
  return mapParts(importer.input(node, 0),
                  [&](Value v) -> llvm::Expected<Value> {
                    return emit.reshape(v, result);
                  });
}

Outputs convertSqueeze(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  if (!shape)
    return shape.takeError();
  SmallVector<int64_t> result;
  std::optional<int64_t> only;
  if (node->inputs().size() > 1) {
    llvm::Expected<int64_t> dim = importer.intInput(node, 1);
    if (!dim)
      return dim.takeError();
    llvm::Expected<int64_t> d = normalizeDim(*dim, shape->size());
    if (!d)
      return d.takeError();
    only = *d;
  }
  for (auto [d, size] : llvm::enumerate(*shape))
    if (size != 1 || (only && *only != (int64_t)d))
      result.push_back(size);
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    return emit.reshape(v, result);
  });
}

/// The complex conjugate of `x` (a real tensor: itself).
Outputs conjugate(Emitter &emit, const ImportedValue &x) {
  if (!x.isComplex())
    return single(x);
  return single(ImportedValue::ofComplex(x.tensor, emit.unary<NegOp>(x.imag)));
}

/// The forms of a transpose: aten::transpose(x, a, b) and aten::t (two
/// dims swapped), aten::permute(x, dims), aten::numpy_T (`x.T`: every dim
/// reversed), aten::mT (the last two dims swapped) and aten::mH /
/// aten::adjoint / aten::matrix_H (those, conjugated).
enum class TransposeForm { SwapTwo, Permute, Reverse, Matrix, Adjoint };

/// `x` with its dims permuted as `form` says (complex parts alike).
Outputs convertPermute(GraphImporter &importer, Node *node,
                       TransposeForm form) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  if (!shape)
    return shape.takeError();
  int64_t rank = shape->size();
  SmallVector<int64_t> permutation =
      llvm::to_vector(llvm::seq<int64_t>(0, rank));
  switch (form) {
  case TransposeForm::SwapTwo: {
    SmallVector<int64_t> dims;
    if (node->inputs().size() == 1) { // aten::t
      dims = {0, rank > 1 ? 1 : 0};
    } else {
      for (size_t i : {1, 2}) {
        llvm::Expected<int64_t> dim = importer.intInput(node, i);
        if (!dim)
          return dim.takeError();
        llvm::Expected<int64_t> d = normalizeDim(*dim, rank);
        if (!d)
          return d.takeError();
        dims.push_back(*d);
      }
    }
    if (rank > 1)
      std::swap(permutation[dims[0]], permutation[dims[1]]);
    break;
  }
  case TransposeForm::Permute: {
    llvm::Expected<std::vector<int64_t>> dims = importer.intListInput(node, 1);
    if (!dims)
      return dims.takeError();
    permutation.clear();
    for (int64_t dim : *dims) {
      llvm::Expected<int64_t> d = normalizeDim(dim, rank);
      if (!d)
        return d.takeError();
      permutation.push_back(*d);
    }
    break;
  }
  case TransposeForm::Reverse:
    std::reverse(permutation.begin(), permutation.end());
    break;
  case TransposeForm::Matrix:
  case TransposeForm::Adjoint:
    if (rank < 2)
      return makeError(llvm::formatv(
          "the matrix transpose of a {0}-d tensor: it needs at least 2 dims",
          rank));
    std::swap(permutation[rank - 2], permutation[rank - 1]);
    break;
  }
  Emitter emit(importer);
  if (llvm::equal(permutation, llvm::seq<int64_t>(0, rank)))
    return form == TransposeForm::Adjoint ? conjugate(emit, x) : single(x);
  Outputs transposed = mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    return emit.transpose(v, permutation);
  });
  if (!transposed || form != TransposeForm::Adjoint)
    return transposed;
  return conjugate(emit, transposed->front());
}

/// aten::conj / _conj / conj_physical: the complex conjugate (a real
/// tensor itself); aten::resolve_conj / resolve_neg: the value itself
/// (titan's complex tensors are two real ones, never a lazily conjugated
/// or negated view to materialize).
Outputs convertConj(GraphImporter &importer, Node *node, bool resolve) {
  const ImportedValue &x = importer.input(node, 0);
  if (!x.isTensor() && !x.isComplex())
    return makeError("expected a tensor");
  if (resolve)
    return single(x);
  Emitter emit(importer);
  return conjugate(emit, x);
}

/// Normalizes a Python slice bound: None, negative, or past the end. A
/// bound that is not an integer known at import time is an error.
llvm::Expected<int64_t> sliceBound(const ImportedValue &bound, int64_t size,
                                   int64_t fallback) {
  if (bound.isNone())
    return fallback;
  if (bound.kind != ImportedValue::Kind::Int &&
      bound.kind != ImportedValue::Kind::Bool)
    return makeError(
        "a slice bound must be an integer known at import time (titan "
        "programs have static shapes), not a float or a tensor");
  int64_t value = bound.intValue;
  if (value < 0)
    value += size;
  return std::clamp<int64_t>(value, 0, size);
}

/// aten::slice.t(list, start, end, step): a slice of a list (of sizes).
Outputs sliceList(GraphImporter &importer, Node *node) {
  const ImportedValue &list = importer.input(node, 0);
  llvm::Expected<int64_t> step = importer.intInput(node, 3);
  if (!step)
    return step.takeError();
  if (*step < 1)
    return makeError("slice step must be positive");
  int64_t size = list.items.size();
  llvm::Expected<int64_t> start = sliceBound(importer.input(node, 1), size, 0);
  if (!start)
    return start.takeError();
  llvm::Expected<int64_t> end = sliceBound(importer.input(node, 2), size, size);
  if (!end)
    return end.takeError();
  std::vector<ImportedValue> items;
  for (int64_t i = *start; i < *end; i += *step)
    items.push_back(list.items[i]);
  return single(ImportedValue::ofList(std::move(items)));
}

Outputs convertSlice(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  if (x.kind == ImportedValue::Kind::List)
    return sliceList(importer, node);
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<int64_t> step = importer.intInput(node, 4);
  if (!step)
    return step.takeError();
  if (*step < 1)
    return makeError("slice step must be positive");
  int64_t size = td->shape[td->dim];
  llvm::Expected<int64_t> startBound =
      sliceBound(importer.input(node, 2), size, 0);
  if (!startBound)
    return startBound.takeError();
  const ImportedValue &endBound = importer.input(node, 3);
  llvm::Expected<int64_t> endValue = sliceBound(endBound, size, size);
  if (!endValue)
    return endValue.takeError();
  int64_t start = *startBound, end = std::max(start, *endValue);
  // PyTorch clamps a slice past the end, and so does titan. But a module's
  // table (RoPE frequencies, positions, a causal mask) sliced past its end
  // means the input is longer than the model was built for, which the shape
  // error that follows would not say.
  auto table = dyn_cast<BlockArgument>(x.tensor);
  // (`x[a:]` is traced with the end INT64_MAX: to the end, not past it.)
  if (table && !endBound.isNone() && endBound.intValue > size &&
      endBound.intValue != std::numeric_limits<int64_t>::max()) {
    StringRef name = importer.getArgumentNames()[table.getArgNumber()].first;
    if (x.isComplex())
      name.consume_back(".real");
    importer.addErrorHint(llvm::formatv(
        "'{0}' has {1} entries along dim {2}, but the model sliced it up "
        "to {3}: the input is longer than this table of the model; use at "
        "most {1} positions (e.g. a smaller training.seq_len), or a model "
        "built with a longer table",
        name, size, td->dim, endBound.intValue));
  }
  if (start == 0 && end == size && *step == 1)
    return single(x);
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    return emit.slice(v, td->dim, start, end, *step);
  });
}

Outputs convertSelect(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<int64_t> index = importer.intInput(node, 2);
  if (!index)
    return index.takeError();
  int64_t size = td->shape[td->dim];
  int64_t i = *index < 0 ? *index + size : *index;
  if (i < 0 || i >= size)
    return makeError(
        llvm::formatv("index {0} is out of range for size {1}", *index, size));
  // Entry i of the positions a vector's nonzero entries are at: a scripted
  // `for e in found:` (FoundEntryLoops.cpp).
  if (const ValidPrefix *prefix =
          x.isTensor() ? importer.validPrefix(x.tensor) : nullptr;
      prefix && prefix->condition && prefix->dim == 0 && td->dim == 0)
    return single(importer.foundEntryItem(x.tensor, *prefix, i));
  SmallVector<int64_t> result(td->shape);
  result.erase(result.begin() + td->dim);
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    return emit.reshape(emit.slice(v, td->dim, i, i + 1, 1), result);
  });
}

/// aten::chunk / split / split_with_sizes / unbind: a list of slices.
Outputs convertSplit(GraphImporter &importer, Node *node, StringRef how) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<TensorDim> td =
      tensorAndDim(importer, node, how == "unbind" ? 1 : 2);
  if (!td)
    return td.takeError();
  int64_t dim = td->dim;
  int64_t size = td->shape[dim];
  // `for i in condition.nonzero():` traced (FoundEntryLoops.cpp).
  if (const ValidPrefix *prefix =
          x.isTensor() ? importer.validPrefix(x.tensor) : nullptr) {
    if (how != "unbind" || dim != 0 || prefix->dim != 0 || !prefix->condition)
      return unsupportedValidPrefixReader(how + " of", *prefix);
    return single(
        ImportedValue::ofList(importer.foundEntryItems(x.tensor, *prefix)));
  }
  std::vector<int64_t> sizes;
  if (how == "unbind") {
    sizes.assign(size, 1);
  } else if (how == "chunk") {
    llvm::Expected<int64_t> chunks = importer.intInput(node, 1);
    if (!chunks || *chunks < 1)
      return makeError("chunk needs a positive constant count");
    int64_t chunk = (size + *chunks - 1) / *chunks;
    for (int64_t start = 0; start < size; start += chunk)
      sizes.push_back(std::min(chunk, size - start));
  } else if (how == "tensor_split") {
    // A number of sections (the first size % n one longer) or the indices
    // where sections start (clamped to the dim, as torch does).
    const ImportedValue &spec = importer.input(node, 1);
    if (spec.kind == ImportedValue::Kind::Int) {
      if (spec.intValue < 1)
        return makeError("tensor_split needs a positive number of sections");
      for (int64_t i = 0; i < spec.intValue; ++i)
        sizes.push_back(size / spec.intValue +
                        (i < size % spec.intValue ? 1 : 0));
    } else {
      llvm::Expected<std::vector<int64_t>> starts =
          importer.intListInput(node, 1);
      if (!starts)
        return makeError("tensor_split needs a number of sections or a "
                         "list of indices known at compile time");
      int64_t previous = 0;
      for (int64_t start : *starts) {
        int64_t bounded =
            std::clamp(start < 0 ? start + size : start, int64_t(0), size);
        sizes.push_back(std::max<int64_t>(bounded - previous, 0));
        previous = std::max(previous, bounded);
      }
      sizes.push_back(size - previous);
    }
  } else {
    const ImportedValue &spec = importer.input(node, 1);
    if (spec.kind == ImportedValue::Kind::Int) {
      if (spec.intValue < 1)
        return makeError("split size must be positive");
      for (int64_t start = 0; start < size; start += spec.intValue)
        sizes.push_back(std::min(spec.intValue, size - start));
    } else {
      llvm::Expected<std::vector<int64_t>> list =
          importer.intListInput(node, 1);
      if (!list)
        return list.takeError();
      sizes = *list;
    }
  }
  Emitter emit(importer);
  std::vector<ImportedValue> pieces;
  int64_t start = 0;
  for (int64_t piece : sizes) {
    Outputs part = mapParts(x, [&](Value v) -> llvm::Expected<Value> {
      Value s = emit.slice(v, dim, start, start + piece, 1);
      if (how != "unbind")
        return s;
      SmallVector<int64_t> squeezed(tensorType(s).getShape());
      squeezed.erase(squeezed.begin() + dim);
      return emit.reshape(s, squeezed);
    });
    if (!part)
      return part.takeError();
    pieces.push_back((*part)[0]);
    start += piece;
  }
  if (start != size)
    return makeError(
        llvm::formatv("split sizes add up to {0}, not {1}", start, size));
  return single(ImportedValue::ofList(std::move(pieces)));
}

/// aten::cat / stack.
Outputs convertCat(GraphImporter &importer, Node *node, bool stack) {
  const ImportedValue &list = importer.input(node, 0);
  llvm::Expected<int64_t> dim = importer.intInput(node, 1);
  if (list.kind != ImportedValue::Kind::List || list.items.empty() || !dim)
    return makeError("cat needs a non-empty list of tensors and a constant "
                     "dim");
  Emitter emit(importer);
  SmallVector<Value> reals, imags;
  bool complex = list.items[0].isComplex();
  Type element;
  for (const ImportedValue &item : list.items) {
    if (item.isComplex() != complex || (!item.isTensor() && !item.isComplex()))
      return makeError("cat of mixed or non-tensor values");
    Type t = tensorType(item.tensor).getElementType();
    element = element ? promote(element, t, emit.context) : t;
  }
  int64_t rank = tensorType(list.items[0].tensor).getRank() + (stack ? 1 : 0);
  llvm::Expected<int64_t> d = normalizeDim(*dim, rank);
  if (!d)
    return d.takeError();
  ArrayRef<int64_t> firstShape = tensorType(list.items[0].tensor).getShape();
  for (const ImportedValue &item : list.items) {
    ArrayRef<int64_t> shape = tensorType(item.tensor).getShape();
    bool compatible = shape.size() == firstShape.size();
    for (size_t i = 0; compatible && i < shape.size(); ++i)
      compatible = shape[i] == firstShape[i] || (!stack && (int64_t)i == *d);
    if (!compatible)
      return makeError(llvm::formatv(
          "{0} needs tensors of equal shapes{1}: [{2}] vs [{3}]",
          stack ? "stack" : "cat", stack ? "" : " except in the cat dim",
          llvm::make_range(firstShape.begin(), firstShape.end()),
          llvm::make_range(shape.begin(), shape.end())));
  }
  for (const ImportedValue &item : list.items) {
    auto prepare = [&](Value v) {
      v = emit.cast(v, element);
      if (!stack)
        return v;
      SmallVector<int64_t> shape(tensorType(v).getShape());
      shape.insert(shape.begin() + *d, 1);
      return emit.reshape(v, shape);
    };
    reals.push_back(prepare(item.tensor));
    if (complex)
      imags.push_back(prepare(item.imag));
  }
  if (complex)
    return single(ImportedValue::ofComplex(emit.concat(reals, *d),
                                           emit.concat(imags, *d)));
  return single(emit.concat(reals, *d));
}

Outputs convertExpand(GraphImporter &importer, Node *node, bool asOther) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  if (!shape)
    return shape.takeError();
  std::vector<int64_t> sizes;
  if (asOther) {
    llvm::Expected<ArrayRef<int64_t>> other = shapeOf(importer.input(node, 1));
    if (!other)
      return other.takeError();
    sizes.assign(other->begin(), other->end());
  } else {
    llvm::Expected<std::vector<int64_t>> list = importer.intListInput(node, 1);
    if (!list)
      return list.takeError();
    sizes = *list;
  }
  if (sizes.size() < shape->size())
    return makeError("expand to fewer dimensions");
  size_t offset = sizes.size() - shape->size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i >= offset && sizes[i] == -1)
      sizes[i] = (*shape)[i - offset];
    if (i >= offset && (*shape)[i - offset] != 1 &&
        (*shape)[i - offset] != sizes[i])
      return makeError(llvm::formatv("cannot expand dim {0} of size {1} to {2}",
                                     i - offset, (*shape)[i - offset],
                                     sizes[i]));
  }
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    return emit.broadcastTo(v, sizes);
  });
}

/// aten::repeat(x, repeats): x tiled repeats[i] times along dim i (x gets
/// leading dims of size 1 when repeats is longer than its rank).
Outputs convertRepeat(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  if (!shape)
    return shape.takeError();
  llvm::Expected<std::vector<int64_t>> repeats = importer.intListInput(node, 1);
  if (!repeats)
    return repeats.takeError();
  if (repeats->size() < shape->size())
    return makeError("repeat needs at least one count per dimension");
  SmallVector<int64_t> padded(repeats->size() - shape->size(), 1);
  padded.append(shape->begin(), shape->end());
  // [1, s0, 1, s1, ...] -> [r0, s0, r1, s1, ...] -> [r0 * s0, r1 * s1, ...].
  SmallVector<int64_t> interleaved, tiled, result;
  for (auto [count, size] : llvm::zip(*repeats, padded)) {
    if (count < 0)
      return makeError("repeat counts must not be negative");
    interleaved.append({1, size});
    tiled.append({count, size});
    result.push_back(count * size);
  }
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    return emit.reshape(emit.broadcastTo(emit.reshape(v, interleaved), tiled),
                        result);
  });
}

/// aten::repeat_interleave(x, repeats, dim): each element repeated `repeats`
/// times in place along dim (x flattened first when dim is None).
Outputs convertRepeatInterleave(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  if (!shape)
    return shape.takeError();
  const ImportedValue &repeats = importer.input(node, 1);
  if (repeats.kind != ImportedValue::Kind::Int || repeats.intValue < 0)
    return makeError("repeat_interleave needs a non-negative count known at "
                     "import time (a tensor of counts would make the shape "
                     "depend on the data)");
  SmallVector<int64_t> base(*shape);
  int64_t dim = 0;
  const ImportedValue &dimArg = importer.input(node, 2);
  if (dimArg.isNone()) {
    base = {ShapedType::getNumElements(*shape)};
  } else {
    llvm::Expected<int64_t> d = importer.intInput(node, 2);
    if (!d)
      return d.takeError();
    llvm::Expected<int64_t> normalized = normalizeDim(*d, shape->size());
    if (!normalized)
      return normalized.takeError();
    dim = *normalized;
  }
  // [..., s, ...] -> [..., s, 1, ...] -> [..., s, r, ...] -> [..., s * r, ...].
  SmallVector<int64_t> unit(base), spread(base), result(base);
  unit.insert(unit.begin() + dim + 1, 1);
  spread.insert(spread.begin() + dim + 1, repeats.intValue);
  result[dim] *= repeats.intValue;
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    return emit.reshape(emit.broadcastTo(emit.reshape(v, unit), spread),
                        result);
  });
}

/// aten::narrow(x, dim, start, length): x[start:start + length] along dim.
Outputs convertNarrow(GraphImporter &importer, Node *node) {
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<int64_t> start = importer.intInput(node, 2);
  llvm::Expected<int64_t> length = importer.intInput(node, 3);
  if (!start || !length)
    return makeError("narrow needs a start and length known at import time");
  int64_t size = td->shape[td->dim];
  int64_t first = *start < 0 ? *start + size : *start;
  if (first < 0 || *length < 0 || first + *length > size)
    return makeError(
        llvm::formatv("narrow({0}, {1}) is out of range for size {2}", *start,
                      *length, size));
  Emitter emit(importer);
  return mapParts(importer.input(node, 0),
                  [&](Value v) -> llvm::Expected<Value> {
                    return emit.slice(v, td->dim, first, first + *length, 1);
                  });
}

/// `x` reversed along `dim` (a gather of the reversed positions).
llvm::Expected<Value> reversedAlong(Emitter &emit, Value x, int64_t dim);

/// aten::pad and aten::constant_pad_nd: `pad` holds (before, after) pairs
/// from the last dim backwards. Mode "constant": a positive count adds that
/// many elements of `value` (0 when None), a negative one removes
/// elements, as F.pad does; "reflect" (aten::reflection_pad*) mirrors the
/// input about its edge element, "replicate" (aten::replication_pad*)
/// repeats the edge element, "circular" wraps the other end around
/// (slices, reversed slices, broadcasts and concats).
Outputs convertConstantPad(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<std::vector<int64_t>> pad = importer.intListInput(node, 1);
  if (!x || !pad)
    return makeError("pad needs a real tensor and pads known at import time");
  double value = 0;
  size_t valueIndex = 2;
  // The mode of aten::pad, or of reflection_pad* / replication_pad*.
  StringRef kind = node->kind().toUnqualString();
  std::string mode = kind.starts_with("reflection")    ? "reflect"
                     : kind.starts_with("replication") ? "replicate"
                                                       : "constant";
  if (kind == "pad") {
    const ImportedValue &given = importer.input(node, 2);
    if (given.kind == ImportedValue::Kind::String)
      mode = given.text;
    valueIndex = 3;
  }
  if (mode != "constant" && mode != "reflect" && mode != "replicate" &&
      mode != "circular")
    return makeError("pad mode '" + mode +
                     "' is unknown; use 'constant', 'reflect', 'replicate' "
                     "or 'circular'");
  if (mode == "constant" && valueIndex < node->inputs().size()) {
    const ImportedValue &fill = importer.input(node, valueIndex);
    if (fill.isNumber())
      value = fill.asDouble();
    else if (!fill.isNone())
      return makeError("the pad value must be a number known at import time");
  }
  RankedTensorType type = tensorType(*x);
  int64_t rank = type.getRank();
  if (pad->size() % 2 != 0 || static_cast<int64_t>(pad->size()) > 2 * rank)
    return makeError(llvm::formatv(
        "pad needs (before, after) pairs for at most {0} dims, not {1} "
        "values",
        rank, pad->size()));
  Emitter emit(importer);
  Value result = *x;
  for (size_t pair = 0; 2 * pair < pad->size(); ++pair) {
    int64_t dim = rank - 1 - pair;
    int64_t before = (*pad)[2 * pair], after = (*pad)[2 * pair + 1];
    int64_t size = tensorType(result).getDimSize(dim);
    if (mode != "constant") {
      // Copies of the input's own elements: mirrored about the edge
      // (reflect, which needs pads shorter than the dim), the edge
      // repeated (replicate), or the other end (circular).
      int64_t limit = mode == "reflect" ? size - 1 : size;
      if (before < 0 || after < 0 || before > limit || after > limit ||
          (mode == "replicate" && size == 0))
        return makeError(llvm::formatv(
            "'{0}' padding of ({1}, {2}) along dim {3} of {4} elements: it "
            "takes non-negative pads of at most {5}",
            mode, before, after, dim, size, limit));
      auto piece = [&](bool front, int64_t count) -> llvm::Expected<Value> {
        if (mode == "reflect")
          return reversedAlong(
              emit,
              front ? emit.slice(result, dim, 1, count + 1, 1)
                    : emit.slice(result, dim, size - 1 - count, size - 1, 1),
              dim);
        if (mode == "circular")
          return front ? emit.slice(result, dim, size - count, size, 1)
                       : emit.slice(result, dim, 0, count, 1);
        SmallVector<int64_t> shape(tensorType(result).getShape());
        shape[dim] = count;
        return emit.broadcastTo(
            front ? emit.slice(result, dim, 0, 1, 1)
                  : emit.slice(result, dim, size - 1, size, 1),
            shape);
      };
      SmallVector<Value> parts;
      for (auto [front, count] :
           {std::pair{true, before}, std::pair{false, after}}) {
        if (count == 0)
          continue;
        llvm::Expected<Value> copied = piece(front, count);
        if (!copied)
          return copied.takeError();
        parts.insert(front ? parts.begin() : parts.end(), *copied);
      }
      parts.insert(parts.begin() + (before > 0 ? 1 : 0), result);
      result = emit.concat(parts, dim);
      continue;
    }
    if (size + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0) < 0)
      return makeError(llvm::formatv(
          "pad ({0}, {1}) removes more than the {2} elements of dim {3}",
          before, after, size, dim));
    // Removals first, then additions.
    result = emit.slice(result, dim, std::max<int64_t>(-before, 0),
                        size - std::max<int64_t>(-after, 0), 1);
    auto filler = [&](int64_t count) {
      SmallVector<int64_t> shape(tensorType(result).getShape());
      shape[dim] = count;
      return emit.splat(RankedTensorType::get(shape, type.getElementType()),
                        value);
    };
    SmallVector<Value> parts;
    if (before > 0)
      parts.push_back(filler(before));
    parts.push_back(result);
    if (after > 0)
      parts.push_back(filler(after));
    result = emit.concat(parts, dim);
  }
  return single(result);
}

/// aten::view_as / reshape_as: x viewed with other's shape.
Outputs convertViewAs(GraphImporter &importer, Node *node) {
  llvm::Expected<ArrayRef<int64_t>> other = shapeOf(importer.input(node, 1));
  if (!other)
    return other.takeError();
  Emitter emit(importer);
  std::vector<int64_t> sizes(other->begin(), other->end());
  return mapParts(importer.input(node, 0),
                  [&](Value v) -> llvm::Expected<Value> {
                    llvm::Expected<SmallVector<int64_t>> shape =
                        resolveShape(tensorType(v).getShape(), sizes);
                    if (!shape)
                      return shape.takeError();
                    return emit.reshape(v, *shape);
                  });
}

/// aten::to / type_as: element type conversions.
Outputs convertTo(GraphImporter &importer, Node *node, bool typeAs) {
  const ImportedValue &x = importer.input(node, 0);
  Type target;
  if (typeAs) {
    const ImportedValue &other = importer.input(node, 1);
    if (!other.isTensor())
      return makeError("type_as needs a real tensor");
    target = tensorType(other.tensor).getElementType();
  } else {
    for (size_t i = 1; i < node->inputs().size() && !target; ++i) {
      const ImportedValue &arg = importer.input(node, i);
      if (arg.isTensor()) {
        target = tensorType(arg.tensor).getElementType();
      }
    }
    if (!target) {
      const ImportedValue *dtype = importer.namedInput(node, "dtype");
      if (dtype && !dtype->isNone()) {
        llvm::Expected<Type> type = dtypeOf(importer, *dtype);
        if (!type)
          return type.takeError();
        target = *type;
      }
    }
  }
  if (!target || x.isComplex())
    return single(x); // A device move, or a complex tensor kept as is.
  if (x.isNumber())   // A traced number held as a 0-d tensor.
    return single(numberOfType(x, target));
  if (!x.isTensor())
    return makeError("expected a tensor");
  return single(Emitter(importer).cast(x.tensor, target));
}

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

/// aten::full / ones / zeros / empty, their *_like forms (a tensor's shape
/// and dtype) and their new_* forms (a tensor's dtype, a given shape): splat
/// constants. torch.empty's values are unspecified; titan's are zeros, so a
/// model that reads them before writing them (`torch.empty(...).zero_()`,
/// a baddbmm with beta=0) computes what torch does.
Outputs convertFull(GraphImporter &importer, Node *node, StringRef form) {
  bool like = form.ends_with("_like");
  bool method = form.starts_with("new_");
  StringRef kind = method ? form.drop_front(4) : form;
  MLIRContext &context = importer.getContext();
  std::vector<int64_t> shape;
  Type fallback = Float32Type::get(&context);
  if (like || method) {
    llvm::Expected<Value> self = importer.tensorInput(node, 0);
    if (!self)
      return self.takeError();
    fallback = tensorType(*self).getElementType();
    if (like)
      shape.assign(tensorType(*self).getShape().begin(),
                   tensorType(*self).getShape().end());
  }
  if (!like) {
    llvm::Expected<std::vector<int64_t>> sizes =
        importer.intListInput(node, method ? 1 : 0);
    if (!sizes)
      return sizes.takeError();
    shape = *sizes;
  }
  ImportedValue value = ImportedValue::ofInt(kind.starts_with("ones") ? 1 : 0);
  if (kind.starts_with("full")) {
    size_t index = method ? 2 : 1;
    if (llvm::Expected<double> fill = importer.numberInput(node, index); !fill)
      return fill.takeError();
    value = importer.input(node, index);
    // torch.full infers the dtype from the fill value.
    const ImportedValue &fillValue = value;
    if (!like && !method && fillValue.kind != ImportedValue::Kind::Float)
      fallback = IntegerType::get(
          &context, fillValue.kind == ImportedValue::Kind::Bool ? 1 : 64);
  }
  llvm::Expected<Type> element = optionalDtype(importer, node, fallback);
  if (!element)
    return element.takeError();
  Emitter emit(importer);
  return single(
      splatNumber(emit, RankedTensorType::get(shape, *element), value));
}

/// aten::copy(self, src) (`x.copy_(src)`, and `x[a:b] = src`, which is a
/// copy_ into a slice of x): src broadcast to self's shape, in self's dtype.
Outputs convertCopy(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> self = importer.tensorInput(node, 0);
  if (!self)
    return self.takeError();
  RankedTensorType type = tensorType(*self);
  Emitter emit(importer);
  const ImportedValue &src = importer.input(node, 1);
  if (src.isNumber())
    return single(splatNumber(emit, type, src));
  llvm::Expected<Value> source = importer.tensorInput(node, 1);
  if (!source)
    return source.takeError();
  // Broadcast one way: src and self broadcast to self's shape.
  RankedTensorType sourceType = tensorType(*source);
  llvm::Expected<SmallVector<int64_t>> shape =
      broadcastShape(sourceType.getShape(), type.getShape());
  if (!shape || ArrayRef<int64_t>(*shape) != type.getShape()) {
    if (!shape)
      llvm::consumeError(shape.takeError());
    return makeError(
        llvm::formatv("cannot copy a '{0}' into a '{1}'", sourceType, type));
  }
  return single(emit.broadcastTo(emit.cast(*source, type.getElementType()),
                                 type.getShape()));
}

/// aten::arange(end | start, end | start, end, step, dtype, ...).
Outputs convertArange(GraphImporter &importer, Node *node) {
  std::vector<double> bounds;
  bool allInts = true;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    const ImportedValue &arg = importer.input(node, i);
    const c10::FunctionSchema *schema = node->maybeSchema();
    if (!schema || i >= schema->arguments().size())
      break;
    StringRef name = schema->arguments()[i].name();
    if (name != "start" && name != "end" && name != "step")
      continue;
    if (!arg.isNumber())
      return makeError("arange bounds must be known at compile time");
    allInts &= arg.kind != ImportedValue::Kind::Float;
    bounds.push_back(arg.asDouble());
  }
  double start = 0, end = 0, step = 1;
  if (bounds.size() == 1)
    end = bounds[0];
  else if (bounds.size() >= 2)
    start = bounds[0], end = bounds[1];
  if (bounds.size() == 3)
    step = bounds[2];
  if (step == 0)
    return makeError("arange step must not be zero");
  int64_t count = std::max<int64_t>(0, std::ceil((end - start) / step));
  MLIRContext &context = importer.getContext();
  llvm::Expected<Type> element =
      optionalDtype(importer, node,
                    allInts ? Type(IntegerType::get(&context, 64))
                            : Type(Float32Type::get(&context)));
  if (!element)
    return element.takeError();
  Emitter emit(importer);
  if (start == 0 && step == 1)
    return single(emit.iota(RankedTensorType::get({count}, *element), 0));
  Value positions =
      emit.iota(RankedTensorType::get({count}, Float64Type::get(&context)), 0);
  Value scaled = emit.scale(positions, step);
  Value shifted =
      emit.binary<AddOp>(scaled, emit.splat(tensorType(scaled), start));
  return single(emit.cast(shifted, *element));
}

/// aten::linspace(start, end, steps) and aten::logspace(start, end, steps,
/// base): `steps` points from start to end (both included), as PyTorch's
/// kernel places them: start + i step for the first half, end - (steps - 1
/// - i) step for the rest; logspace raises base to them. Computed in f64
/// and rounded to the dtype (float32 unless given), within an ulp of
/// PyTorch's float arithmetic.
Outputs convertLinspace(GraphImporter &importer, Node *node, bool logarithmic) {
  llvm::Expected<double> start = importer.numberInput(node, 0);
  llvm::Expected<double> end = importer.numberInput(node, 1);
  llvm::Expected<int64_t> steps = importer.intInput(node, 2);
  StringRef name = logarithmic ? "logspace" : "linspace";
  if (llvm::Error error =
          requireAll(name + " needs start, end and steps known at import "
                            "time (numbers, not tensors)",
                     start, end, steps))
    return std::move(error);
  if (*steps < 0)
    return makeError(
        llvm::formatv("{0} needs steps >= 0, not {1}", name, *steps));
  llvm::Expected<Type> element =
      optionalDtype(importer, node, Float32Type::get(&importer.getContext()));
  if (!element)
    return element.takeError();
  Emitter emit(importer);
  auto positionsType = RankedTensorType::get({*steps}, emit.f64());
  Value points = emit.splat(positionsType, *start);
  if (*steps > 1) {
    double step = (*end - *start) / static_cast<double>(*steps - 1);
    Value index = emit.iota(positionsType, 0);
    Value fromStart = emit.binary<AddOp>(emit.scale(index, step), points);
    Value toEnd = emit.binary<SubOp>(
        emit.splat(positionsType, *end),
        emit.scale(
            emit.binary<SubOp>(
                emit.splat(positionsType, static_cast<double>(*steps - 1)),
                index),
            step));
    Value firstHalf = emit.compare(
        "lt", index,
        emit.splat(positionsType, static_cast<double>(*steps / 2)));
    points = emit.select(firstHalf, fromStart, toEnd);
  }
  if (logarithmic) {
    double base = numberOr(importer, node, "base", 10.0);
    if (base <= 0)
      return makeError(llvm::formatv("logspace needs a positive base, not {0}",
                                     numberText(base)));
    points = emit.unary<ExpOp>(emit.scale(points, std::log(base)));
  }
  return single(emit.cast(points, *element));
}

/// The window functions of torch.signal's spectral front ends.
enum class Window { Hann, Hamming, Blackman, Bartlett, Kaiser };

/// aten::hann_window(length, periodic=True), hamming_window (alpha 0.54,
/// beta 0.46), blackman_window, bartlett_window and kaiser_window (beta
/// 12): the window's `length` values at n / N for n < length, N = length
/// (periodic) or length - 1 (symmetric), as PyTorch defines them. Computed
/// in f64 at import time and rounded to the dtype (float32 unless given).
Outputs convertWindow(GraphImporter &importer, Node *node, Window window) {
  llvm::Expected<int64_t> length = importer.intInput(node, 0);
  if (!length)
    return length.takeError();
  StringRef name = node->kind().toUnqualString();
  if (*length < 0)
    return makeError(
        llvm::formatv("{0} needs a length >= 0, not {1}", name, *length));
  bool periodic = flagOr(importer, node, "periodic", true);
  double alpha = numberOr(importer, node, "alpha", 0.54);
  double beta =
      numberOr(importer, node, "beta", window == Window::Kaiser ? 12.0 : 0.46);
  llvm::Expected<Type> element =
      optionalDtype(importer, node, Float32Type::get(&importer.getContext()));
  if (!element)
    return element.takeError();
  if (!isa<FloatType>(*element))
    return makeError(name + " needs a floating-point dtype");
  double span = static_cast<double>(periodic ? *length : *length - 1);
  std::vector<double> values;
  for (int64_t n = 0; n < *length; ++n) {
    if (*length == 1) {
      values.push_back(1.0);
      continue;
    }
    double x = static_cast<double>(n) / span;
    double turn = 2 * 3.14159265358979323846 * x;
    switch (window) {
    case Window::Hann:
      values.push_back(0.5 - 0.5 * std::cos(turn));
      break;
    case Window::Hamming:
      values.push_back(alpha - beta * std::cos(turn));
      break;
    case Window::Blackman:
      values.push_back(0.42 - 0.5 * std::cos(turn) + 0.08 * std::cos(2 * turn));
      break;
    case Window::Bartlett:
      values.push_back(1.0 - std::abs(2 * x - 1.0));
      break;
    case Window::Kaiser: {
      double r = 2 * x - 1.0;
      values.push_back(
          std::cyl_bessel_i(0.0, beta * std::sqrt(std::max(0.0, 1 - r * r))) /
          std::cyl_bessel_i(0.0, beta));
      break;
    }
    }
  }
  Emitter emit(importer);
  return single(compileTimeTensor(
      emit, RankedTensorType::get({*length}, *element), values));
}

/// aten::triu / tril: keep the elements on one side of a diagonal.
Outputs convertTriangle(GraphImporter &importer, Node *node, bool upper) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<int64_t> diagonal = importer.intInput(node, 1);
  if (!x || !diagonal)
    return makeError("triu/tril need a tensor and a constant diagonal");
  RankedTensorType type = tensorType(*x);
  if (type.getRank() < 2)
    return makeError("triu/tril need a tensor of rank >= 2");
  Emitter emit(importer);
  auto positions = type.clone(emit.f64());
  Value rows = emit.iota(positions, type.getRank() - 2);
  Value cols = emit.iota(positions, type.getRank() - 1);
  Value offset = emit.binary<SubOp>(cols, rows);
  Value keep = emit.compare(upper ? "ge" : "le", offset,
                            emit.splat(positions, *diagonal));
  return single(emit.select(keep, *x, emit.splat(type, 0.0)));
}

Outputs convertNonzeroTuple(GraphImporter &importer, Node *node);

/// aten::masked_fill(x, mask, value) and aten::where(cond, a, b) (with the
/// condition alone, convertNonzeroTuple).
Outputs convertMaskedFill(GraphImporter &importer, Node *node, bool where) {
  if (where && node->inputs().size() == 1)
    return convertNonzeroTuple(importer, node);
  Emitter emit(importer);
  ImportedValue condition = importer.input(node, where ? 0 : 1);
  ImportedValue a = importer.input(node, where ? 1 : 2);
  ImportedValue b = importer.input(node, where ? 2 : 0);
  if (!condition.isTensor())
    return makeError("the mask must be a tensor");
  Value mask = condition.tensor;
  if (!tensorType(mask).getElementType().isInteger(1))
    mask = emit.compare("ne", mask, emit.splat(tensorType(mask), 0));
  // Two numbers (`torch.where(mask, torch.tensor(0.0), min_dtype)`, as Hugging
  // Face's eager masks write it): 0-d tensors of the type they promote to;
  // the shape is the mask's.
  if (a.isNumber() && b.isNumber()) {
    a = ImportedValue::ofTensor(importer.materialize(a));
    b = ImportedValue::ofTensor(importer.materialize(b));
  }
  if (a.isNumber() && b.isTensor())
    a = ImportedValue::ofTensor(splatNumber(emit, tensorType(b.tensor), a));
  if (b.isNumber() && a.isTensor())
    b = ImportedValue::ofTensor(splatNumber(emit, tensorType(a.tensor), b));
  if (!a.isTensor() || !b.isTensor())
    return makeError("expected tensors or numbers");
  Value x = a.tensor, y = b.tensor;
  if (llvm::Error error = unify(emit, x, y))
    return std::move(error);
  llvm::Expected<SmallVector<int64_t>> shape =
      broadcastShape(tensorType(x).getShape(), tensorType(mask).getShape());
  if (!shape)
    return shape.takeError();
  x = emit.broadcastTo(x, *shape);
  y = emit.broadcastTo(y, *shape);
  mask = emit.broadcastTo(mask, *shape);
  return single(emit.select(mask, x, y));
}

//===----------------------------------------------------------------------===//
// Reductions, normalization, contractions
//===----------------------------------------------------------------------===//

/// The dims a reduction reduces (sorted, each once) and whether it keeps
/// them as size 1.
struct ReductionDims {
  SmallVector<int64_t> dims;
  bool keepdim = false;

  /// The shape of the reduction of a tensor of `shape`.
  SmallVector<int64_t> resultShape(ArrayRef<int64_t> shape) const {
    SmallVector<int64_t> result;
    for (auto [d, size] : llvm::enumerate(shape)) {
      if (!llvm::is_contained(dims, int64_t(d)))
        result.push_back(size);
      else if (keepdim)
        result.push_back(1);
    }
    return result;
  }
};

/// The `dim` (an int, a list, or None or an empty list: every dim, as
/// `x.amax()` traces to `amax(x, [])`) and `keepdim` inputs of a reduction
/// of a rank-`rank` tensor.
llvm::Expected<ReductionDims> reductionDims(GraphImporter &importer, Node *node,
                                            int64_t rank) {
  ReductionDims reduced;
  const ImportedValue *dimArg = importer.namedInput(node, "dim");
  if (dimArg && !dimArg->isNone() &&
      !(dimArg->kind == ImportedValue::Kind::List && dimArg->items.empty())) {
    std::vector<int64_t> raw;
    if (dimArg->kind == ImportedValue::Kind::Int)
      raw.push_back(dimArg->intValue);
    for (const ImportedValue &item : dimArg->items)
      raw.push_back(item.intValue);
    for (int64_t dim : raw) {
      llvm::Expected<int64_t> d = normalizeDim(dim, rank);
      if (!d)
        return d.takeError();
      reduced.dims.push_back(*d);
    }
  } else {
    reduced.dims = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  if (dimArg && !dimArg->isNone())
    if (const ImportedValue *keep = importer.namedInput(node, "keepdim"))
      reduced.keepdim = keep->intValue != 0;
  llvm::sort(reduced.dims);
  reduced.dims.erase(std::unique(reduced.dims.begin(), reduced.dims.end()),
                     reduced.dims.end());
  return reduced;
}

/// The reduced operand of `node` (input 0), in its `dtype` input if it has
/// one; an error unless it is a floating-point tensor, or with
/// `integersInF64` an integer or boolean one, returned in f64 (exact to
/// 2^53).
llvm::Expected<Value> floatReductionInput(GraphImporter &importer, Node *node,
                                          Emitter &emit,
                                          bool integersInF64 = false) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  llvm::Expected<Type> element =
      optionalDtype(importer, node, tensorType(*x).getElementType());
  if (!element)
    return element.takeError();
  Value input = emit.cast(*x, *element);
  if (isa<FloatType>(tensorType(input).getElementType()))
    return input;
  if (integersInF64)
    return emit.cast(input, emit.f64());
  return makeError("reductions of integer tensors are not supported but for "
                   "sums");
}

/// The floating-point operand of a reduction, the dims it reduces, and the
/// element type of the result (that of the input but for the sum of
/// integers, computed in f64: int64, as in torch).
struct ReductionOperand {
  Value input;
  ReductionDims reduced;
  Type resultElement;
};

/// The operand of reduction `node` (floatReductionInput) and its dims
/// (reductionDims).
llvm::Expected<ReductionOperand> reductionOperand(GraphImporter &importer,
                                                  Node *node, Emitter &emit,
                                                  bool integersInF64 = false) {
  llvm::Expected<Value> input =
      floatReductionInput(importer, node, emit, integersInF64);
  if (!input)
    return input.takeError();
  llvm::Expected<ReductionDims> reduced =
      reductionDims(importer, node, tensorType(*input).getRank());
  if (!reduced)
    return reduced.takeError();
  llvm::Expected<Value> original = importer.tensorInput(node, 0);
  if (!original)
    return original.takeError();
  const ImportedValue *dtype = importer.namedInput(node, "dtype");
  Type resultElement = tensorType(*input).getElementType();
  if (!isa<FloatType>(tensorType(*original).getElementType()) &&
      (!dtype || dtype->isNone()))
    resultElement = emit.builder.getI64Type();
  return ReductionOperand{*input, std::move(*reduced), resultElement};
}

/// The maximum of `x` over `dims`, kept as size 1.
Value reduceMaxKept(Emitter &emit, Value x, ArrayRef<int64_t> dims) {
  RankedTensorType type = tensorType(x);
  SmallVector<int64_t> kept(type.getShape());
  for (int64_t d : dims)
    kept[d] = 1;
  return ReduceMaxOp::create(emit.builder, emit.loc, type.clone(kept), x,
                             emit.builder.getDenseI64ArrayAttr(dims),
                             /*keepdim=*/true);
}

/// A reduction (sum, amax, mean) of a floating-point tensor; a sum of an
/// integer or boolean one (Switch's expert counts) is computed in f64 and
/// is int64.
template <typename OpTy>
Outputs convertReduce(GraphImporter &importer, Node *node) {
  Emitter emit(importer);
  llvm::Expected<ReductionOperand> operand =
      reductionOperand(importer, node, emit,
                       /*integersInF64=*/std::is_same_v<OpTy, ReduceSumOp>);
  if (!operand)
    return operand.takeError();
  auto [input, reduced, resultElement] = *operand;
  RankedTensorType type = tensorType(input);
  RankedTensorType resultType =
      type.clone(reduced.resultShape(type.getShape()));
  const ValidPrefix *prefix = nullptr;
  if (llvm::Expected<Value> original = importer.tensorInput(node, 0))
    prefix = importer.validPrefix(*original);
  else
    llvm::consumeError(original.takeError());
  if (!prefix) {
    Value result = OpTy::create(emit.builder, emit.loc, resultType, input,
                                emit.builder.getDenseI64ArrayAttr(reduced.dims),
                                reduced.keepdim);
    return single(emit.cast(result, resultElement));
  }
  // Rows whose number depends on the data (`x[mask].sum()`, `.mean()`):
  // the entries past the count are 0 in the sum, and a mean over the
  // data-dependent dim divides by the count.
  input = emit.select(validMask(emit, *prefix, type.getShape()), input,
                      emit.splat(type, 0.0));
  Value result = ReduceSumOp::create(
      emit.builder, emit.loc, resultType, input,
      emit.builder.getDenseI64ArrayAttr(reduced.dims), reduced.keepdim);
  bool acrossRows = llvm::is_contained(reduced.dims, prefix->dim);
  if (std::is_same_v<OpTy, ReduceMeanOp>) {
    double others = 1;
    for (int64_t d : reduced.dims)
      if (d != prefix->dim)
        others *= static_cast<double>(type.getDimSize(d));
    Value count =
        acrossRows
            ? emit.scale(emit.cast(prefix->count, resultType.getElementType()),
                         others)
            : emit.splat(RankedTensorType::get({}, resultType.getElementType()),
                         others);
    result = emit.binary<DivOp>(
        result,
        emit.broadcastTo(
            emit.reshape(count, SmallVector<int64_t>(resultType.getRank(), 1)),
            resultType.getShape()));
  }
  result = emit.cast(result, resultElement);
  if (!acrossRows) {
    int64_t dim = prefix->dim;
    if (!reduced.keepdim)
      dim -= llvm::count_if(reduced.dims,
                            [&](int64_t d) { return d < prefix->dim; });
    importer.setValidPrefix(result, prefix->at(dim));
  }
  return single(result);
}

/// The largest (or, not `largest`, smallest) element of floating-point `x`
/// along `dim` and the first index reaching it, both with `dim` kept as
/// size 1 (the index as i64), as torch.max(x, dim, keepdim=True) returns
/// them. The index is n - 1 minus the largest of n - 1 - i over the
/// positions i that reach the extremum; the value is differentiable (the
/// maximum's gradient goes to the elements that reach it).
std::pair<Value, Value> extremumAlong(Emitter &emit, Value x, int64_t dim,
                                      bool largest) {
  RankedTensorType type = tensorType(x);
  Value v = largest ? x : emit.unary<NegOp>(x);
  Value best = reduceMaxKept(emit, v, {dim});
  Value reached =
      emit.compare("eq", v, emit.broadcastTo(best, type.getShape()));
  int64_t n = type.getDimSize(dim);
  // Positions are exact in f32 up to 2^24.
  Type position = n <= (int64_t(1) << 24) ? Type(emit.builder.getF32Type())
                                          : Type(emit.f64());
  auto i64 = emit.builder.getI64Type();
  Value fromEnd =
      emit.binary<SubOp>(emit.splat(type.clone(position), double(n - 1)),
                         emit.cast(emit.iota(type.clone(i64), dim), position));
  Value candidates =
      emit.select(reached, fromEnd, emit.splat(type.clone(position), -1.0));
  Value last = reduceMaxKept(emit, candidates, {dim});
  Value index = emit.cast(
      emit.binary<SubOp>(emit.splatLike(last, double(n - 1)), last), i64);
  return {largest ? best : emit.unary<NegOp>(best), index};
}

/// extremumAlong of every element of `x`: the extremum and the first flat
/// index reaching it, 0-d.
std::pair<Value, Value> extremumOfAll(Emitter &emit, Value x, bool largest) {
  auto [value, index] = extremumAlong(
      emit, emit.reshape(x, {tensorType(x).getNumElements()}), 0, largest);
  return {emit.reshape(value, ArrayRef<int64_t>{}),
          emit.reshape(index, ArrayRef<int64_t>{})};
}

/// `value` without its dim `dim` of size 1, unless `keepdim`.
Value dropDim(Emitter &emit, Value value, int64_t dim, bool keepdim) {
  if (keepdim)
    return value;
  SmallVector<int64_t> shape(tensorType(value).getShape());
  shape.erase(shape.begin() + dim);
  return emit.reshape(value, shape);
}

/// aten::logsumexp(x, dim, keepdim=False) (z-losses, hand-written
/// log-softmaxes): m + log(sum(exp(x - m))) with m the maximum over the
/// dims, 0 where it is -inf (a row of -inf gives -inf, not nan), taken
/// without gradient: the gradient is softmax(x), as PyTorch's.
Outputs convertLogsumexp(GraphImporter &importer, Node *node) {
  Emitter emit(importer);
  llvm::Expected<ReductionOperand> operand =
      reductionOperand(importer, node, emit);
  if (!operand)
    return operand.takeError();
  Value x = operand->input;
  const ReductionDims &reduced = operand->reduced;
  RankedTensorType type = tensorType(x);
  Value peak = emit.unary<StopGradientOp>(reduceMaxKept(emit, x, reduced.dims));
  peak = emit.select(emit.compare("eq", peak, emit.splatLike(peak, -INFINITY)),
                     emit.splatLike(peak, 0.0), peak);
  Value shifted = emit.unary<ExpOp>(
      emit.binary<SubOp>(x, emit.broadcastTo(peak, type.getShape())));
  Value sum = emit.reduceSum(shifted, reduced.dims, /*keepdim=*/true);
  Value result = emit.binary<AddOp>(peak, emit.unary<LogOp>(sum));
  return single(emit.reshape(result, reduced.resultShape(type.getShape())));
}

/// `x` rolled by `shift` along `dim`: element i moves to (i + shift) mod n.
Value rollAlong(Emitter &emit, Value x, int64_t dim, int64_t shift) {
  int64_t n = tensorType(x).getDimSize(dim);
  int64_t s = n == 0 ? 0 : ((shift % n) + n) % n;
  if (s == 0)
    return x;
  return emit.concat(
      {emit.slice(x, dim, n - s, n, 1), emit.slice(x, dim, 0, n - s, 1)}, dim);
}

/// aten::roll(x, shifts, dims=[]): along each dim, the last `shift` (mod
/// its size) elements first, a concatenation of two slices; without dims,
/// the flattened tensor rolled and reshaped back.
Outputs convertRoll(GraphImporter &importer, Node *node) {
  llvm::Expected<std::vector<int64_t>> shifts = importer.intListInput(node, 1);
  if (!shifts)
    return shifts.takeError();
  std::vector<int64_t> dims;
  if (node->inputs().size() > 2) {
    llvm::Expected<std::vector<int64_t>> given = importer.intListInput(node, 2);
    if (!given)
      return given.takeError();
    dims = *given;
  }
  Emitter emit(importer);
  return mapParts(
      importer.input(node, 0), [&](Value x) -> llvm::Expected<Value> {
        RankedTensorType type = tensorType(x);
        Value rolled = x;
        std::vector<int64_t> along = dims;
        if (along.empty()) {
          if (shifts->size() != 1)
            return makeError("roll without dims takes one shift");
          rolled = emit.reshape(x, {type.getNumElements()});
          along = {0};
        }
        if (along.size() != shifts->size())
          return makeError(llvm::formatv(
              "roll needs one shift per dim, got {0} shifts for {1} dims",
              shifts->size(), along.size()));
        for (auto [shift, rawDim] : llvm::zip_equal(*shifts, along)) {
          int64_t rank = tensorType(rolled).getRank();
          llvm::Expected<int64_t> dim = normalizeDim(rawDim, rank);
          if (!dim)
            return dim.takeError();
          rolled = rollAlong(emit, rolled, *dim, shift);
        }
        return emit.reshape(rolled, type.getShape());
      });
}

/// aten::fft_fftshift(x, dim=None) and fft_ifftshift: x rolled by n / 2
/// (ifftshift: back by it) along each of `dim` (every dim when None), so
/// that the zero frequency moves to the middle; complex parts alike.
Outputs convertFftShift(GraphImporter &importer, Node *node, bool inverse) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  if (!shape)
    return shape.takeError();
  llvm::Expected<ReductionDims> along =
      reductionDims(importer, node, shape->size());
  if (!along)
    return along.takeError();
  SmallVector<std::pair<int64_t, int64_t>> rolls;
  for (int64_t dim : along->dims) {
    int64_t half = (*shape)[dim] / 2;
    rolls.push_back({dim, inverse ? -half : half});
  }
  Emitter emit(importer);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    for (auto [dim, shift] : rolls)
      v = rollAlong(emit, v, dim, shift);
    return v;
  });
}

/// aten::eye(n, m=n, dtype=None): the identity, 1 where the row equals the
/// column (a constant the import folds).
Outputs convertEye(GraphImporter &importer, Node *node) {
  llvm::Expected<int64_t> rows = importer.intInput(node, 0);
  if (!rows)
    return rows.takeError();
  int64_t columns = *rows;
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (schema && schema->arguments().size() > 1 &&
      schema->arguments()[1].name() == "m") {
    llvm::Expected<int64_t> m = importer.intInput(node, 1);
    if (!m)
      return m.takeError();
    columns = *m;
  }
  llvm::Expected<Type> element =
      optionalDtype(importer, node, Float32Type::get(&importer.getContext()));
  if (!element)
    return element.takeError();
  Emitter emit(importer);
  auto i64 = RankedTensorType::get({*rows, columns}, emit.builder.getI64Type());
  return single(emit.cast(
      emit.compare("eq", emit.iota(i64, 0), emit.iota(i64, 1)), *element));
}

/// aten::argmax / argmin(x, dim=None, keepdim=False): the first index of
/// the extremum along `dim` (extremumAlong), of the flattened tensor
/// without one.
Outputs convertArgExtremum(GraphImporter &importer, Node *node, bool largest) {
  llvm::Expected<Value> input = importer.tensorInput(node, 0);
  if (!input)
    return input.takeError();
  Emitter emit(importer);
  // Integers are compared in f64 (CLIP's pooling at the largest token id).
  Value x = emit.cast(
      *input, exactFloatType(emit, tensorType(*input).getElementType()));
  RankedTensorType type = tensorType(x);
  const ImportedValue *dimArg = importer.namedInput(node, "dim");
  if (!dimArg || dimArg->isNone())
    return single(extremumOfAll(emit, x, largest).second);
  llvm::Expected<int64_t> dim = normalizeDim(dimArg->intValue, type.getRank());
  if (!dim)
    return dim.takeError();
  const ImportedValue *keep = importer.namedInput(node, "keepdim");
  return single(dropDim(emit, extremumAlong(emit, x, *dim, largest).second,
                        *dim, keep && keep->intValue != 0));
}

/// aten::topk(x, k, dim=-1, largest=True, sorted=True): the k extrema along
/// `dim` in order and their indices, one extremumAlong at a time, each
/// found one masked (-inf for the largest, +inf for the smallest) for the
/// next: k passes over the dim, for the small k of routers and samplers.
/// A larger k along a dim of at most kMaxOneHotDim takes the first k of the
/// stable sort (Mixture-of-Depths' capacity of a sequence), which also
/// picks the lowest indices among ties.
Outputs convertTopk(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> input = importer.tensorInput(node, 0);
  if (!input)
    return input.takeError();
  Type element = tensorType(*input).getElementType();
  if (element.isInteger(1))
    return makeError("topk of a boolean tensor (PyTorch has none either); "
                     "convert it to an integer or float type first");
  llvm::Expected<int64_t> k = importer.intInput(node, 1);
  if (!k)
    return k.takeError();
  Emitter emit(importer);
  // Integers are compared in f64, the values given back in their type.
  Value x = emit.cast(*input, exactFloatType(emit, element));
  RankedTensorType type = tensorType(x);
  int64_t rawDim = -1;
  if (const ImportedValue *dimArg = importer.namedInput(node, "dim"))
    rawDim = dimArg->intValue;
  llvm::Expected<int64_t> dim = normalizeDim(rawDim, type.getRank());
  if (!dim)
    return dim.takeError();
  bool largest = true;
  if (const ImportedValue *arg = importer.namedInput(node, "largest"))
    largest = arg->intValue != 0;
  constexpr int64_t kMaxK = 16;
  int64_t n = type.getDimSize(*dim);
  if (*k < 1 || *k > n || (*k > kMaxK && n > kMaxOneHotDim))
    return makeError(llvm::formatv(
        "topk with k = {0} along a dim of {1}: titan takes 1 <= k <= {1}, "
        "and k <= {2} along a dim longer than {3} (one pass over the dim "
        "per k; a sort compares every pair of a row's elements)",
        *k, n, kMaxK, kMaxOneHotDim));
  if (*k > kMaxK) {
    auto [sorted, order] =
        sortAlong(emit, x, *dim, largest, /*withValues=*/true);
    return std::vector<ImportedValue>{
        ImportedValue::ofTensor(
            emit.cast(emit.slice(sorted, *dim, 0, *k, 1), element)),
        ImportedValue::ofTensor(emit.slice(order, *dim, 0, *k, 1))};
  }
  Value remaining = x;
  SmallVector<Value> values, indices;
  Value positions = emit.iota(type.clone(emit.builder.getI64Type()), *dim);
  Value masked = emit.splat(type, largest ? -INFINITY : INFINITY);
  for (int64_t i = 0; i < *k; ++i) {
    auto [value, index] = extremumAlong(emit, remaining, *dim, largest);
    values.push_back(value);
    indices.push_back(index);
    if (i + 1 < *k)
      remaining =
          emit.select(emit.compare("eq", positions,
                                   emit.broadcastTo(index, type.getShape())),
                      masked, remaining);
  }
  return std::vector<ImportedValue>{
      ImportedValue::ofTensor(emit.cast(emit.concat(values, *dim), element)),
      ImportedValue::ofTensor(emit.concat(indices, *dim))};
}

/// sqrt(sum(x * x)) over `dims`. The norm of a zero vector is 0 with
/// gradient 0, as torch's norm backward gives (sqrt's would be 0 * inf):
/// its sqrt reads 1 instead and the select that puts the 0 back passes no
/// cotangent to it.
Value euclideanNorm(Emitter &emit, Value x, ArrayRef<int64_t> dims,
                    bool keepdim) {
  Value sum = emit.reduceSum(emit.binary<MulOp>(x, x), dims, keepdim);
  Value zero = emit.splatLike(sum, 0.0);
  Value isZero = emit.compare("eq", sum, zero);
  Value root =
      emit.unary<SqrtOp>(emit.select(isZero, emit.splatLike(sum, 1.0), sum));
  return emit.select(isZero, zero, root);
}

/// aten::_weight_norm(v, g, dim) (nn.utils.weight_norm's forward pre-hook:
/// wav2vec2's positional convolution, HiFi-GAN's and EnCodec's): v * g /
/// the Euclidean norm of v over every dim but `dim` (over all of it for
/// dim -1).
Outputs convertWeightNorm(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> v = floatTensorInput(importer, node);
  llvm::Expected<Value> g = importer.tensorInput(node, 1);
  llvm::Expected<int64_t> dim = importer.intInput(node, 2);
  if (!v || !g || !dim)
    return makeError("_weight_norm needs float tensors v and g and a dim");
  int64_t rank = tensorType(*v).getRank();
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (*dim == -1 || d != *dim)
      dims.push_back(d);
  if (*dim < -1 || *dim >= rank)
    return makeError(llvm::formatv(
        "_weight_norm over dim {0} of a tensor of rank {1}", *dim, rank));
  Emitter emit(importer);
  Value norm = euclideanNorm(emit, *v, dims, /*keepdim=*/true);
  Value scale = *g;
  if (llvm::Error error = unify(emit, scale, norm))
    return std::move(error);
  Value factor = emit.binary<DivOp>(scale, norm);
  Value weight = *v;
  if (llvm::Error error = unify(emit, weight, factor))
    return std::move(error);
  return single(emit.binary<MulOp>(weight, factor));
}

} // namespace

llvm::Expected<Type> mlir::titan::import::optionalDtype(GraphImporter &importer,
                                                        Node *node,
                                                        Type fallback) {
  const ImportedValue *dtype = importer.namedInput(node, "dtype");
  if (!dtype || dtype->isNone())
    return fallback;
  return dtypeOf(importer, *dtype);
}

llvm::Expected<Value> mlir::titan::import::vectorNorm(Emitter &emit, Value x,
                                                      double order,
                                                      ArrayRef<int64_t> dims,
                                                      bool keepdim) {
  if (order == 2)
    return euclideanNorm(emit, x, dims, keepdim);
  Value magnitude = absolute(emit, x);
  if (std::isinf(order)) {
    RankedTensorType type = tensorType(magnitude);
    SmallVector<int64_t> shape;
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
        shape.push_back(size);
      else if (keepdim)
        shape.push_back(1);
    Value operandOfMax = order > 0 ? magnitude : emit.unary<NegOp>(magnitude);
    Value largest = ReduceMaxOp::create(
        emit.builder, emit.loc, type.clone(shape), operandOfMax,
        emit.builder.getDenseI64ArrayAttr(dims), keepdim);
    return order > 0 ? largest : emit.unary<NegOp>(largest);
  }
  if (order == 0)
    return emit.reduceSum(
        emit.cast(emit.compare("ne", x, emit.splatLike(x, 0.0)),
                  tensorType(x).getElementType()),
        dims, keepdim);
  if (order == 1)
    return emit.reduceSum(magnitude, dims, keepdim);
  llvm::Expected<Value> powers = powByConstant(emit, magnitude, order);
  if (!powers)
    return powers.takeError();
  Value sum = emit.reduceSum(*powers, dims, keepdim);
  Value zero = emit.splatLike(sum, 0.0);
  Value isZero = emit.compare("eq", sum, zero);
  llvm::Expected<Value> root = powByConstant(
      emit, emit.select(isZero, emit.splatLike(sum, 1.0), sum), 1.0 / order);
  if (!root)
    return root.takeError();
  return emit.select(isZero, zero, *root);
}

namespace {

/// aten::frobenius_norm, norm and linalg_vector_norm (`x.norm(p, dim)`,
/// `torch.linalg.vector_norm`, F.normalize's p): vectorNorm of the order
/// given (2 when None).
Outputs convertVectorNorm(GraphImporter &importer, Node *node) {
  double order = 2;
  for (StringRef name : {"p", "ord"}) {
    const ImportedValue *given = importer.namedInput(node, name);
    if (!given || given->isNone())
      continue;
    if (!given->isNumber())
      return makeError("the norm's order must be a number");
    order = given->asDouble();
  }
  Emitter emit(importer);
  llvm::Expected<ReductionOperand> operand =
      reductionOperand(importer, node, emit);
  if (!operand)
    return operand.takeError();
  llvm::Expected<Value> norm =
      vectorNorm(emit, operand->input, order, operand->reduced.dims,
                 operand->reduced.keepdim);
  if (!norm)
    return norm.takeError();
  return single(*norm);
}

/// aten::linalg_matrix_norm(x, ord, dim, keepdim) (`torch.linalg.matrix_norm`,
/// `torch.linalg.norm` of matrices): 'fro' the Euclidean norm of the
/// matrix; 1 / -1 the largest / smallest column sum of |x|; inf / -inf the
/// largest / smallest row sum. 'nuc', 2 and -2 need singular values:
/// refused.
Outputs convertMatrixNorm(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  int64_t rank = tensorType(*x).getRank();
  if (rank < 2)
    return makeError("matrix_norm needs a tensor of rank 2 or more");
  SmallVector<int64_t> dims{rank - 2, rank - 1};
  if (const ImportedValue *given = importer.namedInput(node, "dim");
      given && given->kind == ImportedValue::Kind::List) {
    if (given->items.size() != 2)
      return makeError("matrix_norm takes two dims");
    for (auto [i, item] : llvm::enumerate(given->items)) {
      llvm::Expected<int64_t> dim = normalizeDim(item.intValue, rank);
      if (!dim)
        return dim.takeError();
      dims[i] = *dim;
    }
  }
  if (dims[0] == dims[1])
    return makeError("matrix_norm needs two different dims");
  const ImportedValue *ord = importer.namedInput(node, "ord");
  bool keepdim = flagOr(importer, node, "keepdim", false);
  Emitter emit(importer);
  if (!ord || ord->isNone() ||
      (ord->kind == ImportedValue::Kind::String && ord->text == "fro")) {
    SmallVector<int64_t> sorted{std::min(dims[0], dims[1]),
                                std::max(dims[0], dims[1])};
    return single(euclideanNorm(emit, *x, sorted, keepdim));
  }
  double order = ord->isNumber() ? ord->asDouble() : 0;
  if (!ord->isNumber() || !(std::abs(order) == 1 || std::isinf(order)))
    return makeError(llvm::formatv(
        "matrix_norm of order {0}: titan computes 'fro', 1, -1, inf and -inf "
        "(the others need singular values)",
        ord->kind == ImportedValue::Kind::String
            ? "'" + ord->text + "'"
            : llvm::formatv("{0}", llvm::format("%g", order)).str()));
  // Sum |x| along the rows (order +-1: per column) or the columns.
  int64_t summed = std::abs(order) == 1 ? dims[0] : dims[1];
  int64_t extremum = std::abs(order) == 1 ? dims[1] : dims[0];
  Value sums = emit.reduceSum(absolute(emit, *x), {summed}, /*keepdim=*/true);
  llvm::Expected<Value> result = vectorNorm(
      emit, sums,
      order > 0 ? std::numeric_limits<double>::infinity()
                : -std::numeric_limits<double>::infinity(),
      {std::min(extremum, summed), std::max(extremum, summed)}, keepdim);
  if (!result)
    return result.takeError();
  return single(*result);
}

/// aten::linalg_norm(x, ord, dim, keepdim) (`torch.linalg.norm`): a
/// matrix norm for a string order, or a number order over two dims (of a
/// matrix when no dim is given); else a vector norm (the 2-norm of
/// everything for no order).
Outputs convertLinalgNorm(GraphImporter &importer, Node *node) {
  const ImportedValue *ord = importer.namedInput(node, "ord");
  const ImportedValue *dim = importer.namedInput(node, "dim");
  bool matrix = false;
  if (ord && ord->kind == ImportedValue::Kind::String) {
    matrix = true;
  } else if (ord && ord->isNumber()) {
    if (dim && dim->kind == ImportedValue::Kind::List)
      matrix = dim->items.size() == 2;
    else if (!dim || dim->isNone())
      matrix = importer.input(node, 0).isTensor() &&
               tensorType(importer.input(node, 0).tensor).getRank() == 2;
  }
  return matrix ? convertMatrixNorm(importer, node)
                : convertVectorNorm(importer, node);
}

/// aten::triu_indices / tril_indices(row, col, offset): the [2, N]
/// coordinates (int64, row-major) of the elements on or above (below) the
/// offset diagonal of a row x col matrix, a constant.
Outputs convertTriangleIndices(GraphImporter &importer, Node *node,
                               bool upper) {
  llvm::Expected<int64_t> rows = importer.intInput(node, 0);
  llvm::Expected<int64_t> cols = importer.intInput(node, 1);
  if (llvm::Error error = requireAll(
          "triangle indices need a row and a column count", rows, cols))
    return std::move(error);
  int64_t offset = static_cast<int64_t>(numberOr(importer, node, "offset", 0));
  SmallVector<int64_t> is, js;
  for (int64_t i = 0; i < *rows; ++i)
    for (int64_t j = 0; j < *cols; ++j)
      if (upper ? j - i >= offset : j - i <= offset) {
        is.push_back(i);
        js.push_back(j);
      }
  Emitter emit(importer);
  auto type = RankedTensorType::get({2, static_cast<int64_t>(is.size())},
                                    emit.builder.getI64Type());
  SmallVector<int64_t> both(is);
  both.append(js);
  return single(ConstantOp::create(
      emit.builder, emit.loc,
      DenseElementsAttr::get(type, ArrayRef<int64_t>(both))));
}

/// Running sums `out[r, i] = sum_{j <= i} rows[r, j]` of `rows` ([count,
/// n], of a float type), as products with triangular ones: [n, n] of them
/// up to kWholeRunningSums positions; a longer row in blocks of about
/// sqrt(n) positions, each offset by the sums of the blocks before it, so
/// that the ones take O(n) memory, not O(n^2).
static Value rowRunningSums(Emitter &emit, Value rows) {
  constexpr int64_t kWholeRunningSums = 1024;
  RankedTensorType type = tensorType(rows);
  int64_t count = type.getDimSize(0), n = type.getDimSize(1);
  Type element = type.getElementType();
  // ones[j, i] = 1 where j <= i (j < i when `strict`).
  auto upperOnes = [&](int64_t size, bool strict) {
    auto indices =
        RankedTensorType::get({size, size}, emit.builder.getI64Type());
    auto square = RankedTensorType::get({size, size}, element);
    return emit.select(emit.compare(strict ? "lt" : "le", emit.iota(indices, 0),
                                    emit.iota(indices, 1)),
                       emit.splat(square, 1.0), emit.splat(square, 0.0));
  };
  auto product = [&](Value lhs, Value rhs) -> Value {
    return MatmulOp::create(
        emit.builder, emit.loc,
        RankedTensorType::get(
            {tensorType(lhs).getDimSize(0), tensorType(rhs).getDimSize(1)},
            element),
        lhs, rhs, /*addend=*/Value(), /*transpose_lhs=*/false,
        /*transpose_rhs=*/false);
  };
  if (n <= kWholeRunningSums)
    return product(rows, upperOnes(n, /*strict=*/false));
  auto block = static_cast<int64_t>(std::ceil(std::sqrt(double(n))));
  int64_t blocks = (n + block - 1) / block;
  Value padded = emit.padTo(rows, 1, blocks * block);
  Value within = product(emit.reshape(padded, {count * blocks, block}),
                         upperOnes(block, /*strict=*/false));
  Value totals =
      emit.reshape(emit.slice(within, 1, block - 1, block, 1), {count, blocks});
  Value before = product(totals, upperOnes(blocks, /*strict=*/true));
  Value sums = emit.binary<AddOp>(
      emit.reshape(within, {count, blocks, block}),
      emit.broadcastTo(emit.reshape(before, {count, blocks, 1}),
                       {count, blocks, block}));
  return emit.slice(emit.reshape(sums, {count, blocks * block}), 1, 0, n, 1);
}

} // namespace

Outputs mlir::titan::import::cumsumAtRunTime(Emitter &emit, Value x,
                                             int64_t axis, Type element) {
  RankedTensorType type = tensorType(x);
  int64_t rank = type.getRank();
  Type inputElement = type.getElementType();
  Type compute = isa<FloatType>(inputElement)
                     ? inputElement
                     : Type(Float32Type::get(&emit.context));
  Value input = emit.cast(x, compute);
  SmallVector<int64_t> toLast = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (rank > 0)
    std::swap(toLast[axis], toLast[rank - 1]);
  bool moved = rank > 0 && axis != rank - 1;
  if (moved)
    input = emit.transpose(input, toLast);
  SmallVector<int64_t> shape(tensorType(input).getShape());
  int64_t n = shape.empty() ? 1 : shape.back();
  int64_t rows = ShapedType::getNumElements(shape) / n;
  Value result =
      emit.reshape(rowRunningSums(emit, emit.reshape(input, {rows, n})), shape);
  if (moved)
    result = emit.transpose(result, toLast);
  return single(emit.cast(result, element));
}

namespace {

/// aten::cumsum(x, dim, dtype), into int64 for an integer or boolean x:
/// computed at compile time where x is (the positions of an all-ones
/// attention mask, `mask.cumsum(-1) - 1`, as OPT and BLOOM write them), as
/// torch's CPU kernel sums (accumulated in double, each sum rounded into the
/// result type); else at run time (cumsumAtRunTime).
Outputs convertCumsum(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  llvm::Expected<int64_t> dim = importer.intInput(node, 1);
  if (!dim)
    return dim.takeError();
  llvm::Expected<int64_t> axis = normalizeDim(*dim, type.getRank());
  if (!axis)
    return axis.takeError();
  Type input = type.getElementType();
  llvm::Expected<Type> element = optionalDtype(
      importer, node,
      isa<FloatType>(input) ? input
                            : IntegerType::get(&importer.getContext(), 64));
  if (!element)
    return element.takeError();
  Emitter emit(importer);
  std::optional<std::vector<double>> values = compileTimeElements(*x);
  if (!values)
    return cumsumAtRunTime(emit, *x, *axis, *element);
  ArrayRef<int64_t> shape = type.getShape();
  int64_t size = shape.empty() ? 1 : shape[*axis];
  int64_t inner = 1;
  for (int64_t d = *axis + 1; d < type.getRank(); ++d)
    inner *= shape[d];
  RankedTensorType resultType = type.clone(*element);
  int64_t outers =
      size * inner > 0 ? type.getNumElements() / (size * inner) : 0;
  for (int64_t outer = 0; outer < outers; ++outer)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < size; ++k) {
        double &value = (*values)[(outer * size + k) * inner + i];
        sum += value;
        value = sum;
      }
    }
  return single(compileTimeTensor(emit, resultType, *values));
}

template <typename OpTy>
Outputs convertSoftmax(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<int64_t> dim = importer.intInput(node, 1);
  if (!x || !dim)
    return makeError("softmax needs a tensor and a constant dim");
  Emitter emit(importer);
  Value input = *x;
  // aten::softmax(x, dim, dtype?) converts first; aten::_softmax(x, dim,
  // half_to_float) computes in the input type.
  if (const ImportedValue *dtype = importer.namedInput(node, "dtype")) {
    if (!dtype->isNone()) {
      llvm::Expected<Type> type = dtypeOf(importer, *dtype);
      if (!type)
        return type.takeError();
      input = emit.cast(input, *type);
    }
  }
  llvm::Expected<int64_t> d = normalizeDim(*dim, tensorType(input).getRank());
  if (!d)
    return d.takeError();
  return single(
      OpTy::create(emit.builder, emit.loc, input.getType(), input, *d));
}

/// Input 0 of norm `node` (layer_norm, rms_norm) viewed with its normalized
/// dims, input 1 (the input's last ones), flattened into one, and their
/// product: a norm over several last dims (nn.LayerNorm([T, d])) is one
/// over their product, its parameters flattened alike.
struct FlattenedNormInput {
  Value input;
  int64_t width;
};
llvm::Expected<FlattenedNormInput>
flattenedNormInput(GraphImporter &importer, Node *node, Emitter &emit) {
  StringRef op = node->kind().toUnqualString();
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<std::vector<int64_t>> normalized =
      importer.intListInput(node, 1);
  if (!x || !normalized || !isa<FloatType>(tensorType(*x).getElementType())) {
    if (!x)
      llvm::consumeError(x.takeError());
    if (!normalized)
      llvm::consumeError(normalized.takeError());
    return makeError(llvm::formatv(
        "{0} needs a floating-point tensor and a constant shape", op));
  }
  RankedTensorType type = tensorType(*x);
  ArrayRef<int64_t> shape = type.getShape();
  size_t count = normalized->size();
  if (count == 0 || count > shape.size() ||
      ArrayRef<int64_t>(*normalized) != shape.take_back(count))
    return makeError(llvm::formatv(
        "{0}'s normalized_shape [{1}] must be the input's last dimensions "
        "({2})",
        op, llvm::make_range(normalized->begin(), normalized->end()), type));
  int64_t width = ShapedType::getNumElements(*normalized);
  SmallVector<int64_t> flat(shape.drop_back(count));
  flat.push_back(width);
  return FlattenedNormInput{emit.reshape(*x, flat), width};
}

/// The parameter of a flattened norm (flattenedNormInput) in input `value`:
/// the tensor flattened into `width` elements of `element`, or `fallback`
/// everywhere when it is None.
Value normParameter(Emitter &emit, const ImportedValue &value, int64_t width,
                    Type element, double fallback) {
  if (value.isTensor())
    return emit.reshape(emit.cast(value.tensor, element), {width});
  return emit.splat(RankedTensorType::get({width}, element), fallback);
}

Outputs convertLayerNorm(GraphImporter &importer, Node *node) {
  llvm::Expected<double> eps = importer.numberInput(node, 4);
  if (!eps)
    return makeError("layer_norm needs a constant eps");
  Emitter emit(importer);
  llvm::Expected<FlattenedNormInput> flat =
      flattenedNormInput(importer, node, emit);
  if (!flat)
    return flat.takeError();
  Type element = tensorType(flat->input).getElementType();
  Value normed = LayerNormOp::create(
      emit.builder, emit.loc, flat->input.getType(), flat->input,
      normParameter(emit, importer.input(node, 2), flat->width, element, 1.0),
      normParameter(emit, importer.input(node, 3), flat->width, element, 0.0),
      emit.builder.getF64FloatAttr(*eps));
  return single(emit.reshape(
      normed, tensorType(importer.input(node, 0).tensor).getShape()));
}

/// Input `index` of `node`, a per-channel tensor [C] (a norm's weight,
/// bias or running statistic), broadcast along dim 1 of `type` [N, C, ..]
/// in its element type; null when the input is None.
Value perChannelInput(Emitter &emit, Node *node, size_t index,
                      RankedTensorType type) {
  const ImportedValue &v = emit.importer.input(node, index);
  if (!v.isTensor())
    return {};
  SmallVector<int64_t> channelShape(type.getRank(), 1);
  channelShape[1] = type.getDimSize(1);
  return emit.broadcastTo(
      emit.reshape(emit.cast(v.tensor, type.getElementType()), channelShape),
      type.getShape());
}

/// `x` normalized over `dims` by its own statistics: (x - mean) /
/// sqrt(var + eps), the variance biased, as batch and instance norm use.
Value normalizeOver(Emitter &emit, Value x, ArrayRef<int64_t> dims,
                    double eps) {
  RankedTensorType type = tensorType(x);
  int64_t count = 1;
  for (int64_t d : dims)
    count *= type.getDimSize(d);
  double inverse = 1.0 / static_cast<double>(count);
  Value mean = emit.broadcastTo(
      emit.scale(emit.reduceSum(x, dims, /*keepdim=*/true), inverse),
      type.getShape());
  Value centered = emit.binary<SubOp>(x, mean);
  Value variance = emit.scale(
      emit.reduceSum(emit.binary<MulOp>(centered, centered), dims, true),
      inverse);
  Value scale = emit.unary<RsqrtOp>(
      emit.binary<AddOp>(variance, emit.splatLike(variance, eps)));
  return emit.binary<MulOp>(centered, emit.broadcastTo(scale, type.getShape()));
}

/// aten::batch_norm(x [N, C, *], weight, bias, running_mean, running_var,
/// training, momentum, eps) and aten::instance_norm(.., use_input_stats,
/// ..) (`instance`): x normalized per channel by its statistics over the
/// batch and positions (batch norm in training) or over each sample's
/// positions (instance norm), or by the running statistics (batch norm in
/// eval, instance norm without input stats); then the per-channel weight
/// and bias. The running statistics are read, never updated: training
/// with them tracked is warned about.
Outputs convertBatchOrInstanceNorm(GraphImporter &importer, Node *node,
                                   bool instance) {
  StringRef what = instance ? "instance_norm" : "batch_norm";
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  llvm::Expected<int64_t> inputStats = importer.intInput(node, 5);
  llvm::Expected<double> eps = importer.numberInput(node, 7);
  if (llvm::Error error =
          requireAll(what + " needs a float tensor, a constant training "
                            "flag and eps",
                     x, inputStats, eps))
    return std::move(error);
  RankedTensorType type = tensorType(*x);
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < 2 || (instance && shape.size() < 3))
    return makeError(llvm::formatv("{0} of {1}: the input must be [N, C{2}]",
                                   what, type, instance ? ", *" : ", ..."));
  Emitter emit(importer);
  auto perChannel = [&](size_t index) {
    return perChannelInput(emit, node, index, type);
  };
  Value runningMean = perChannel(3), runningVar = perChannel(4);
  Value result;
  if (*inputStats) {
    if (runningMean)
      importer.warnOnce(
          "running statistics",
          "the model's " + what +
              " was exported in training mode with running statistics: "
              "titan normalizes by the input's statistics as PyTorch does, "
              "but does not update running_mean and running_var (the "
              "checkpoint keeps their initial values; export in eval mode to "
              "use them, or set track_running_stats=False)");
    SmallVector<int64_t> dims;
    for (int64_t d = instance ? 2 : 0; d < static_cast<int64_t>(shape.size());
         ++d)
      if (d != 1)
        dims.push_back(d);
    result = normalizeOver(emit, *x, dims, *eps);
  } else {
    if (!runningMean || !runningVar)
      return makeError(what + " without input statistics needs running_mean "
                              "and running_var");
    Value scale = emit.unary<RsqrtOp>(
        emit.binary<AddOp>(runningVar, emit.splatLike(runningVar, *eps)));
    result = emit.binary<MulOp>(emit.binary<SubOp>(*x, runningMean), scale);
  }
  if (Value weight = perChannel(1))
    result = emit.binary<MulOp>(result, weight);
  if (Value bias = perChannel(2))
    result = emit.binary<AddOp>(result, bias);
  return single(result);
}

/// aten::group_norm(x [N, C, *], groups, weight, bias, eps)
/// (nn.GroupNorm; RWKV-5's ln_x): titan.layer_norm over each group's
/// channels and positions (x viewed [N, groups, rest]), then the
/// per-channel weight and bias.
Outputs convertGroupNorm(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<int64_t> groups = importer.intInput(node, 1);
  llvm::Expected<double> eps = importer.numberInput(node, 4);
  if (!x || !groups || !eps)
    return makeError("group_norm needs a tensor, a constant number of groups "
                     "and eps");
  RankedTensorType type = tensorType(*x);
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < 2 || *groups < 1 || shape[1] % *groups != 0)
    return makeError(llvm::formatv(
        "group_norm of {0} in {1} groups: the input must be [N, C, ...] "
        "with C divisible by the groups",
        type, *groups));
  Emitter emit(importer);
  int64_t rest = type.getNumElements() / (shape[0] * *groups);
  auto flatType =
      RankedTensorType::get({shape[0], *groups, rest}, type.getElementType());
  auto paramType = RankedTensorType::get({rest}, type.getElementType());
  Value normed = LayerNormOp::create(
      emit.builder, emit.loc, flatType, emit.reshape(*x, flatType.getShape()),
      emit.splat(paramType, 1.0), emit.splat(paramType, 0.0),
      emit.builder.getF64FloatAttr(*eps));
  Value result = emit.reshape(normed, shape);
  auto perChannel = [&](size_t index) {
    return perChannelInput(emit, node, index, type);
  };
  if (Value weight = perChannel(2))
    result = emit.binary<MulOp>(result, weight);
  if (Value bias = perChannel(3))
    result = emit.binary<AddOp>(result, bias);
  return single(result);
}

/// torch.matmul's rules on ranks, with batch broadcasting made explicit.
/// Like PyTorch, refuses floats of two different types.
llvm::Expected<Value> matmul(Emitter &emit, Value a, Value b, bool transposeB) {
  Type aElement = tensorType(a).getElementType();
  Type bElement = tensorType(b).getElementType();
  if (aElement != bElement && isa<FloatType>(aElement) &&
      isa<FloatType>(bElement))
    return makeError(llvm::formatv(
        "a matrix product of {0} and {1} operands (PyTorch refuses it too); "
        "under mixed precision (and pure bf16 training) the model must be "
        "traced with its parameters "
        "in the compute dtype, since a trace recorded in float32 takes "
        "`x.float()` for x itself (models/export.py --trace-dtype bfloat16, "
        "or torch.jit.script)",
        c10::toString(static_cast<c10::ScalarType>(dtypeCode(aElement))),
        c10::toString(static_cast<c10::ScalarType>(dtypeCode(bElement)))));
  Type element = promote(aElement, bElement, emit.context);
  a = emit.cast(a, element);
  b = emit.cast(b, element);
  SmallVector<int64_t> aShape(tensorType(a).getShape()),
      bShape(tensorType(b).getShape());
  if (transposeB && bShape.size() != 2)
    return makeError("a transposed weight must have rank 2");
  bool vectorA = aShape.size() == 1, vectorB = bShape.size() == 1;
  if (vectorA)
    a = emit.reshape(a, {1, aShape[0]}), aShape = {1, aShape[0]};
  if (vectorB)
    b = emit.reshape(b, {bShape[0], 1}), bShape = {bShape[0], 1};
  int64_t k = aShape.back();
  int64_t kb = transposeB ? bShape[1] : bShape[bShape.size() - 2];
  if (k != kb)
    return makeError(
        llvm::formatv("matmul contraction sizes differ: {0} vs {1}", k, kb));
  int64_t n = transposeB ? bShape[0] : bShape.back();
  ArrayRef<int64_t> aBatch = ArrayRef<int64_t>(aShape).drop_back(2);
  ArrayRef<int64_t> bBatch = ArrayRef<int64_t>(bShape).drop_back(2);
  SmallVector<int64_t> batch(aBatch);
  if (bShape.size() > 2) {
    llvm::Expected<SmallVector<int64_t>> shape = broadcastShape(aBatch, bBatch);
    if (!shape)
      return shape.takeError();
    batch = *shape;
    SmallVector<int64_t> fullA(batch), fullB(batch);
    fullA.append({aShape[aShape.size() - 2], k});
    fullB.append({bShape[bShape.size() - 2], bShape.back()});
    a = emit.broadcastTo(a, fullA);
    b = emit.broadcastTo(b, fullB);
  }
  if (tensorType(a).getRank() == 2 && tensorType(b).getRank() == 2)
    batch.clear();
  SmallVector<int64_t> resultShape(batch);
  resultShape.append({tensorType(a).getShape().drop_back().back(), n});
  Value result = MatmulOp::create(emit.builder, emit.loc,
                                  RankedTensorType::get(resultShape, element),
                                  a, b, /*addend=*/Value(),
                                  /*transpose_lhs=*/false, transposeB);
  SmallVector<int64_t> finalShape(batch);
  if (!vectorA)
    finalShape.push_back(resultShape[resultShape.size() - 2]);
  if (!vectorB)
    finalShape.push_back(n);
  return emit.reshape(result, finalShape);
}

Outputs convertMatmul(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> a = importer.tensorInput(node, 0);
  llvm::Expected<Value> b = importer.tensorInput(node, 1);
  if (!a || !b)
    return makeError("matmul needs two real tensors");
  Emitter emit(importer);
  llvm::Expected<Value> result = matmul(emit, *a, *b, false);
  if (!result)
    return result.takeError();
  return single(*result);
}

/// aten::addmm(bias, a, b, beta, alpha): beta * bias + alpha * (a @ b) of
/// matrices (Hugging Face's Conv1D).
/// aten::addmm (`rank` 2) and aten::baddbmm (`rank` 3, nn.MultiheadAttention's
/// scores plus mask): beta * self + alpha * (a @ b).
Outputs convertAddProduct(GraphImporter &importer, Node *node, int64_t rank) {
  StringRef name = node->kind().toUnqualString();
  llvm::Expected<Value> bias = importer.tensorInput(node, 0);
  llvm::Expected<Value> a = importer.tensorInput(node, 1);
  llvm::Expected<Value> b = importer.tensorInput(node, 2);
  if (!bias || !a || !b)
    return makeError(name + " needs three real tensors");
  if (tensorType(*a).getRank() != rank || tensorType(*b).getRank() != rank)
    return makeError(
        llvm::formatv("{0} multiplies tensors of rank {1}", name, rank));
  llvm::Expected<double> beta = importer.numberInput(node, 3);
  llvm::Expected<double> alpha = importer.numberInput(node, 4);
  if (!beta || !alpha)
    return makeError(name + " needs beta and alpha known at import time");
  Emitter emit(importer);
  llvm::Expected<Value> product = matmul(emit, *a, *b, /*transposeB=*/false);
  if (!product)
    return product.takeError();
  Value out = *alpha == 1.0 ? *product : emit.scale(*product, *alpha);
  if (*beta == 0.0)
    return single(out);
  Value addend = *beta == 1.0 ? *bias : emit.scale(*bias, *beta);
  if (llvm::Error error = unify(emit, out, addend))
    return std::move(error);
  return single(emit.binary<AddOp>(out, addend));
}

/// The subscripts of one einsum operand or of its result: a label per dim,
/// letters as themselves and the dims of "..." as -1, -2, ... counted from
/// the right of the ellipsis.
using EinsumLabels = SmallVector<int64_t>;

/// Parses `term` for a tensor of `rank` dims (the result has rank -1: its
/// ellipsis is `ellipsisRank` wide; only an operand may repeat a subscript,
/// its diagonal).
llvm::Expected<EinsumLabels> parseEinsumTerm(StringRef term, int64_t rank,
                                             int64_t ellipsisRank) {
  EinsumLabels labels;
  size_t dots = term.find("...");
  StringRef before = term.substr(0, dots);
  StringRef after = dots == StringRef::npos ? "" : term.substr(dots + 3);
  auto letters = [&](StringRef text) -> llvm::Error {
    for (char c : text)
      if (!llvm::isAlpha(c))
        return makeError(llvm::formatv(
            "einsum subscript '{0}' is not a letter (in '{1}')", c, term));
      else
        labels.push_back(c);
    return llvm::Error::success();
  };
  if (llvm::Error error = letters(before))
    return std::move(error);
  if (dots != StringRef::npos) {
    int64_t width =
        rank < 0 ? ellipsisRank
                 : rank - static_cast<int64_t>(before.size() + after.size());
    if (width < 0)
      return makeError(
          llvm::formatv("einsum term '{0}' has more subscripts than its "
                        "operand has dims ({1})",
                        term, rank));
    for (int64_t i = width; i > 0; --i)
      labels.push_back(-i);
  }
  if (llvm::Error error = letters(after))
    return std::move(error);
  if (rank >= 0 && static_cast<int64_t>(labels.size()) != rank)
    return makeError(llvm::formatv(
        "einsum term '{0}' has {1} subscripts for an operand of {2} dims", term,
        labels.size(), rank));
  if (rank < 0)
    for (size_t i = 0; i < labels.size(); ++i)
      if (llvm::is_contained(ArrayRef<int64_t>(labels).take_front(i),
                             labels[i]))
        return makeError(
            llvm::formatv("einsum result '{0}' repeats a subscript", term));
  return labels;
}

static llvm::Expected<Value> diagonalOf(Emitter &emit, Value x,
                                        int64_t diagonal);

/// `operand` (of `labels`) with each subscript it repeats taken once: the
/// diagonal of every two dims of one subscript ('ii->i', 'bii->bi'), as a
/// last dim (diagonalOf) labelled with it.
static llvm::Expected<Value> takeEinsumDiagonals(Emitter &emit, Value operand,
                                                 EinsumLabels &labels) {
  for (size_t second = 0; second < labels.size();) {
    auto first = llvm::find(ArrayRef<int64_t>(labels).take_front(second),
                            labels[second]);
    if (first == labels.begin() + second) {
      ++second;
      continue;
    }
    int64_t label = labels[second];
    SmallVector<int64_t> order;
    EinsumLabels rest;
    for (size_t dim = 0; dim < labels.size(); ++dim)
      if (labels.begin() + dim != first && dim != second) {
        order.push_back(dim);
        rest.push_back(labels[dim]);
      }
    order.append({first - labels.begin(), static_cast<int64_t>(second)});
    llvm::Expected<Value> diagonal =
        diagonalOf(emit, emit.transpose(operand, order), 0);
    if (!diagonal)
      return diagonal.takeError();
    operand = *diagonal;
    rest.push_back(label);
    labels = std::move(rest);
    second = 0;
  }
  return operand;
}

/// The einsum of one or two operands with `labels` into `result` (labels
/// of `sizes`): a sum over the labels neither the other operand nor the
/// result has, then a transpose, or a batched matmul of the operands
/// brought to [batch, own, contracted] order.
Outputs contractEinsum(Emitter &emit, SmallVector<Value> operands,
                       SmallVector<EinsumLabels> labels,
                       const EinsumLabels &result,
                       const DenseMap<int64_t, int64_t> &sizes) {
  auto shapeOf = [&](ArrayRef<int64_t> ls) {
    SmallVector<int64_t> shape;
    for (int64_t label : ls)
      shape.push_back(sizes.lookup(label));
    return shape;
  };
  auto product = [&](ArrayRef<int64_t> ls) {
    int64_t n = 1;
    for (int64_t label : ls)
      n *= sizes.lookup(label);
    return n;
  };
  auto permutationTo = [](ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
    SmallVector<int64_t> permutation;
    for (int64_t label : to)
      permutation.push_back(llvm::find(from, label) - from.begin());
    return permutation;
  };
  // Sum over the labels neither the other operand nor the result has.
  for (size_t i = 0; i < operands.size(); ++i) {
    SmallVector<int64_t> summed;
    EinsumLabels kept;
    for (auto [dim, label] : llvm::enumerate(labels[i])) {
      bool elsewhere =
          llvm::is_contained(result, label) ||
          (operands.size() == 2 && llvm::is_contained(labels[1 - i], label));
      if (elsewhere)
        kept.push_back(label);
      else
        summed.push_back(dim);
    }
    if (!summed.empty()) {
      if (!isa<FloatType>(tensorType(operands[i]).getElementType()))
        return makeError(integerTensorArithmetic);
      operands[i] = emit.reduceSum(operands[i], summed, /*keepdim=*/false);
    }
    labels[i] = std::move(kept);
  }
  if (operands.size() == 1)
    return single(
        emit.transpose(operands[0], permutationTo(labels[0], result)));

  // Batch labels in the result's order, then each side's own labels in the
  // result's order, and the contracted labels in the first operand's.
  EinsumLabels batch, left, right, contracted;
  for (int64_t label : result) {
    bool inA = llvm::is_contained(labels[0], label);
    bool inB = llvm::is_contained(labels[1], label);
    (inA && inB ? batch : inA ? left : right).push_back(label);
  }
  for (int64_t label : labels[0])
    if (!llvm::is_contained(result, label))
      contracted.push_back(label);
  if (!isa<FloatType>(tensorType(operands[0]).getElementType()) ||
      !isa<FloatType>(tensorType(operands[1]).getElementType()))
    return makeError(integerTensorArithmetic);
  EinsumLabels aOrder(batch), bOrder(batch);
  aOrder.append(left);
  aOrder.append(contracted);
  bOrder.append(contracted);
  bOrder.append(right);
  SmallVector<int64_t> aShape = shapeOf(batch), bShape = shapeOf(batch);
  aShape.append({product(left), product(contracted)});
  bShape.append({product(contracted), product(right)});
  Value a = emit.reshape(
      emit.transpose(operands[0], permutationTo(labels[0], aOrder)), aShape);
  Value b = emit.reshape(
      emit.transpose(operands[1], permutationTo(labels[1], bOrder)), bShape);
  llvm::Expected<Value> matrix = matmul(emit, a, b, /*transposeB=*/false);
  if (!matrix)
    return matrix.takeError();
  EinsumLabels order(batch);
  order.append(left);
  order.append(right);
  return single(emit.transpose(emit.reshape(*matrix, shapeOf(order)),
                               permutationTo(order, result)));
}

/// aten::einsum: of one or two operands (each with its diagonals taken
/// where a term repeats a subscript), sums over the labels only one
/// operand has, then one matmul whose batch dims are the labels both
/// operands and the result have, contracting the labels both operands have
/// and the result lacks, and a transpose into the result's order
/// (contractEinsum); of more (Mamba's 'bld,bln,bld->bldn'), pairs from the
/// left.
Outputs convertEinsum(GraphImporter &importer, Node *node) {
  const ImportedValue &equation = importer.input(node, 0);
  const ImportedValue &list = importer.input(node, 1);
  if (equation.kind != ImportedValue::Kind::String ||
      list.kind != ImportedValue::Kind::List || list.items.empty() ||
      !llvm::all_of(list.items,
                    [](const ImportedValue &v) { return v.isTensor(); }))
    return makeError("einsum is supported on real tensors with a constant "
                     "equation");
  std::string text = equation.text;
  llvm::erase_if(text, [](char c) { return c == ' '; });
  auto [inputsText, outputText] = StringRef(text).split("->");
  bool explicitOutput = StringRef(text).contains("->");
  SmallVector<StringRef> terms;
  inputsText.split(terms, ',');
  if (terms.size() != list.items.size())
    return makeError(llvm::formatv("einsum '{0}' names {1} operands, {2} given",
                                   equation.text, terms.size(),
                                   list.items.size()));
  Emitter emit(importer);
  SmallVector<Value> operands;
  // Each operand's subscripts as written, and once its diagonals are taken.
  SmallVector<EinsumLabels> written, labels;
  DenseMap<int64_t, int64_t> sizes;
  int64_t ellipsisRank = 0;
  for (auto [term, item] : llvm::zip(terms, list.items)) {
    RankedTensorType type = tensorType(item.tensor);
    llvm::Expected<EinsumLabels> parsed =
        parseEinsumTerm(term, type.getRank(), 0);
    if (!parsed)
      return parsed.takeError();
    for (auto [label, size] : llvm::zip(*parsed, type.getShape())) {
      auto [it, inserted] = sizes.try_emplace(label, size);
      if (!inserted && it->second != size)
        return makeError(llvm::formatv(
            "einsum '{0}': a subscript has sizes {1} and {2} (broadcasting "
            "is not supported)",
            equation.text, it->second, size));
      ellipsisRank = std::max(ellipsisRank, label < 0 ? -label : 0);
    }
    written.push_back(*parsed);
    llvm::Expected<Value> operand =
        takeEinsumDiagonals(emit, item.tensor, *parsed);
    if (!operand)
      return operand.takeError();
    operands.push_back(*operand);
    labels.push_back(std::move(*parsed));
  }
  // The result: as written, or (implicit) the ellipsis and then the letters
  // that appear once, in alphabetical order.
  EinsumLabels result;
  if (explicitOutput) {
    llvm::Expected<EinsumLabels> parsed =
        parseEinsumTerm(outputText, -1, ellipsisRank);
    if (!parsed)
      return parsed.takeError();
    result = std::move(*parsed);
    for (int64_t label : result)
      if (!sizes.count(label))
        return makeError(llvm::formatv(
            "einsum '{0}': the result has a subscript no operand has",
            equation.text));
  } else {
    for (int64_t i = ellipsisRank; i > 0; --i)
      result.push_back(-i);
    SmallVector<int64_t> once;
    for (auto [label, size] : sizes) {
      int64_t count = 0;
      for (const EinsumLabels &operand : written)
        count += llvm::count(operand, label);
      if (label >= 0 && count == 1)
        once.push_back(label);
    }
    llvm::sort(once);
    result.append(once);
  }
  if (operands.size() <= 2)
    return contractEinsum(emit, operands, labels, result, sizes);
  // More operands: contracted two at a time from the left, as torch.einsum
  // does, each intermediate keeping the labels a later operand or the
  // result has.
  Value accumulated = operands[0];
  EinsumLabels accumulatedLabels = labels[0];
  for (size_t i = 1; i < operands.size(); ++i) {
    EinsumLabels kept;
    if (i + 1 == operands.size()) {
      kept = result;
    } else {
      EinsumLabels both(accumulatedLabels);
      both.append(labels[i]);
      for (int64_t label : both) {
        bool later = llvm::is_contained(result, label) ||
                     llvm::any_of(llvm::ArrayRef(labels).drop_front(i + 1),
                                  [&](const EinsumLabels &other) {
                                    return llvm::is_contained(other, label);
                                  });
        if (later && !llvm::is_contained(kept, label))
          kept.push_back(label);
      }
    }
    Outputs pair = contractEinsum(emit, {accumulated, operands[i]},
                                  {accumulatedLabels, labels[i]}, kept, sizes);
    if (!pair)
      return pair.takeError();
    accumulated = pair->front().tensor;
    accumulatedLabels = std::move(kept);
  }
  return single(accumulated);
}

/// A convolution's hyperparameters, one entry per spatial dim.
struct ConvOptions {
  SmallVector<int64_t> stride, padLow, padHigh, dilation;
  int64_t groups = 1;
};

/// The convolution (PyTorch's cross-correlation) of x [N, C_in, S_1..S_d]
/// by weight [C_out, C_in / groups, K_1..K_d] plus bias [C_out]: x between
/// zeros along each spatial dim, then for each tap (k_1..k_d) its strided
/// slice of the output positions. Groups of one channel each (Mamba's
/// depthwise causal convolution, ConvNeXt's 7 x 7) are a sum of taps times
/// their weights; other groups one matmul each: the taps side by side
/// ([N, positions, taps * C_in] times the weight as [C_out, taps * C_in]).
/// Kernels that tile the input (stride = kernel, no dilation or padding:
/// ViT's patch embedding) take their patches by a reshape instead.
static llvm::Expected<Value> convolve(Emitter &emit, Value x, Value weight,
                                      Value bias, const ConvOptions &options) {
  RankedTensorType xType = tensorType(x), wType = tensorType(weight);
  int64_t spatial = wType.getRank() - 2;
  int64_t batch = xType.getDimSize(0), channels = xType.getDimSize(1);
  int64_t outChannels = wType.getDimSize(0), perGroup = wType.getDimSize(1);
  int64_t groups = options.groups;
  if (groups < 1 || channels % groups || outChannels % groups ||
      perGroup * groups != channels)
    return makeError(llvm::formatv(
        "a convolution of {0} input and {1} output channels in {2} groups "
        "needs a weight of {3} input channels per group, not {4}",
        channels, outChannels, groups, groups ? channels / groups : 0,
        perGroup));
  if (!isa<FloatType>(xType.getElementType()))
    return makeError(integerTensorArithmetic);
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  SmallVector<int64_t> outSizes;
  bool tiles = true;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t padded =
        xType.getDimSize(2 + i) + options.padLow[i] + options.padHigh[i];
    int64_t span = options.dilation[i] * (kernel[i] - 1) + 1;
    if (options.stride[i] < 1 || options.dilation[i] < 1 || padded < span)
      return makeError(llvm::formatv(
          "a convolution with kernel {0}, dilation {1} and stride {2} does "
          "not fit the {3} padded positions of spatial dim {4}",
          kernel[i], options.dilation[i], options.stride[i], padded, i));
    outSizes.push_back((padded - span) / options.stride[i] + 1);
    tiles &= options.stride[i] == kernel[i] &&
             (kernel[i] == 1 || options.dilation[i] == 1) &&
             !options.padLow[i] && !options.padHigh[i];
  }
  int64_t positions = 1, taps = 1;
  for (int64_t i = 0; i < spatial; ++i) {
    positions *= outSizes[i];
    taps *= kernel[i];
  }
  // Zeros on both sides of each spatial dim (F.pad's constant padding).
  x = padSpatial(emit, x, options.padLow, options.padHigh, 0.0);
  auto tap = [&](Value input, int64_t t) {
    return windowTap(emit, input, t, kernel, options.dilation, options.stride,
                     outSizes);
  };
  SmallVector<int64_t> channelsLast{0}, channelsFirst{0, spatial + 1};
  for (int64_t i = 0; i < spatial; ++i) {
    channelsLast.push_back(2 + i);
    channelsFirst.push_back(1 + i);
  }
  channelsLast.push_back(1);
  auto outShape = [&](int64_t c) {
    SmallVector<int64_t> shape{batch, c};
    shape.append(outSizes);
    return shape;
  };
  Value result;
  if (groups == channels && outChannels == channels) {
    // Depthwise: y[n, c, o] = sum_k w[c, 0, k] * x[n, c, o * stride + k d].
    SmallVector<int64_t> perChannel(spatial + 2, 1);
    perChannel[1] = channels;
    Value flatWeight = emit.reshape(weight, {channels, taps});
    for (int64_t t = 0; t < taps; ++t) {
      Value w = emit.broadcastTo(
          emit.reshape(emit.slice(flatWeight, 1, t, t + 1, 1), perChannel),
          outShape(channels));
      Value term = emit.binary<MulOp>(tap(x, t), w);
      result = result ? emit.binary<AddOp>(result, term) : term;
    }
  } else {
    int64_t outPerGroup = outChannels / groups;
    SmallVector<Value> outputs;
    for (int64_t g = 0; g < groups; ++g) {
      Value xs = groups == 1
                     ? x
                     : emit.slice(x, 1, g * perGroup, (g + 1) * perGroup, 1);
      Value ws = groups == 1 ? weight
                             : emit.slice(weight, 0, g * outPerGroup,
                                          (g + 1) * outPerGroup, 1);
      // The patches as [N, positions, taps * C] and the weight as
      // [C_out, taps * C], their columns in the same order.
      Value patches, matrix;
      if (tiles) {
        // [N, C, O_1 K_1, ..] -> [N, C, O_1, K_1, ..] -> [N, O.., C, K..]:
        // columns (c, k_1..k_d), the weight's own order.
        SmallVector<int64_t> split{batch, perGroup}, order{0};
        for (int64_t i = 0; i < spatial; ++i) {
          xs = emit.slice(xs, 2 + i, 0, outSizes[i] * kernel[i], 1);
          split.append({outSizes[i], kernel[i]});
          order.push_back(2 + 2 * i);
        }
        order.push_back(1);
        for (int64_t i = 0; i < spatial; ++i)
          order.push_back(3 + 2 * i);
        patches = emit.reshape(emit.transpose(emit.reshape(xs, split), order),
                               {batch, positions, perGroup * taps});
        matrix = emit.reshape(ws, {outPerGroup, perGroup * taps});
      } else {
        // Columns (k_1..k_d, c): each tap's channels side by side.
        SmallVector<Value> columns;
        for (int64_t t = 0; t < taps; ++t)
          columns.push_back(
              emit.reshape(emit.transpose(tap(xs, t), channelsLast),
                           {batch, positions, perGroup}));
        patches = emit.concat(columns, 2);
        SmallVector<int64_t> kernelFirst{0};
        for (int64_t i = 0; i < spatial; ++i)
          kernelFirst.push_back(2 + i);
        kernelFirst.push_back(1);
        matrix = emit.reshape(emit.transpose(ws, kernelFirst),
                              {outPerGroup, taps * perGroup});
      }
      Value product = MatmulOp::create(
          emit.builder, emit.loc, xType.clone({batch, positions, outPerGroup}),
          patches, matrix,
          /*addend=*/Value(), /*transpose_lhs=*/false, /*transpose_rhs=*/true);
      SmallVector<int64_t> positionsShape{batch};
      positionsShape.append(outSizes);
      positionsShape.push_back(outPerGroup);
      outputs.push_back(
          emit.transpose(emit.reshape(product, positionsShape), channelsFirst));
    }
    result = outputs.size() == 1 ? outputs.front() : emit.concat(outputs, 1);
  }
  if (bias) {
    SmallVector<int64_t> perChannel(spatial + 2, 1);
    perChannel[1] = outChannels;
    result = emit.binary<AddOp>(
        result,
        emit.broadcastTo(
            emit.reshape(emit.cast(bias, xType.getElementType()), perChannel),
            outShape(outChannels)));
  }
  return result;
}

/// The transposed convolution (the gradient of a convolution with respect
/// to its input) of x [N, C_in, S..] by weight [C_in, C_out / groups, K..]
/// with `options`' stride, padding (padLow), dilation and groups and
/// `outputPadding`: along each spatial dim x with stride - 1 zeros between
/// its elements, between dilation * (K - 1) - padding zeros (and
/// output_padding more at the end; cropped where negative), convolved at
/// stride 1 by the weight with its channels swapped within each group and
/// its taps reversed.
static llvm::Expected<Value>
convolveTransposed(Emitter &emit, Value x, Value weight, Value bias,
                   ConvOptions options, ArrayRef<int64_t> outputPadding) {
  RankedTensorType wType = tensorType(weight);
  int64_t spatial = wType.getRank() - 2, groups = options.groups;
  int64_t inChannels = wType.getDimSize(0);
  if (groups < 1 || inChannels % groups ||
      tensorType(x).getDimSize(1) != inChannels)
    return makeError(llvm::formatv(
        "a transposed convolution of a weight [C_in = {0}, C_out / groups, "
        "K..] in {1} groups takes {0} input channels, not {2}",
        inChannels, groups, tensorType(x).getDimSize(1)));
  for (int64_t j = 0; j < spatial; ++j) {
    int64_t dim = 2 + j, stride = options.stride[j];
    if (outputPadding[j] >= std::max(stride, options.dilation[j]))
      return makeError(llvm::formatv(
          "output padding {0} must be smaller than the stride {1} or the "
          "dilation {2}",
          outputPadding[j], stride, options.dilation[j]));
    x = spreadAlong(emit, x, dim, stride);
    int64_t low =
        options.dilation[j] * (wType.getDimSize(dim) - 1) - options.padLow[j];
    int64_t high = low + outputPadding[j];
    int64_t size = tensorType(x).getDimSize(dim);
    if (low < 0 || high < 0) {
      int64_t start = std::max<int64_t>(0, -low);
      int64_t limit = size + std::min<int64_t>(0, high);
      if (limit <= start)
        return makeError("a transposed convolution's padding leaves no "
                         "output positions");
      x = emit.slice(x, dim, start, limit, 1);
    }
    options.padLow[j] = std::max<int64_t>(0, low);
    options.padHigh[j] = std::max<int64_t>(0, high);
    options.stride[j] = 1;
  }
  // [C_in, C_out / g, K..] -> [g, C_in / g, C_out / g, K..] -> [C_out,
  // C_in / g, K..], taps reversed.
  SmallVector<int64_t> grouped{groups, inChannels / groups,
                               wType.getDimSize(1)};
  llvm::append_range(grouped, wType.getShape().drop_front(2));
  SmallVector<int64_t> swap{0, 2, 1};
  for (int64_t j = 0; j < spatial; ++j)
    swap.push_back(3 + j);
  SmallVector<int64_t> swapped{groups * wType.getDimSize(1),
                               inChannels / groups};
  llvm::append_range(swapped, wType.getShape().drop_front(2));
  Value kernel = emit.reshape(
      emit.transpose(emit.reshape(weight, grouped), swap), swapped);
  for (int64_t j = 0; j < spatial; ++j) {
    llvm::Expected<Value> reversed = reversedAlong(emit, kernel, 2 + j);
    if (!reversed)
      return reversed.takeError();
    kernel = *reversed;
  }
  return convolve(emit, x, kernel, bias, options);
}

/// aten::conv1d/conv2d/conv3d(x, weight, bias, stride, padding (numbers,
/// 'valid' or 'same'), dilation, groups), aten::conv_transpose1d/2d/3d(x,
/// weight, bias, stride, padding, output_padding, groups, dilation) and
/// aten::_convolution (what nn.ConvNd, nn.ConvTransposeNd and F.convNd
/// trace to): convolve or convolveTransposed, the input batched or not
/// ([C, S..] as PyTorch allows).
Outputs convertConvolution(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<Value> weight = importer.tensorInput(node, 1);
  if (!x || !weight)
    return makeError("a convolution needs an input and a weight tensor");
  const ImportedValue &biasInput = importer.input(node, 2);
  Value bias = biasInput.isTensor() ? biasInput.tensor : Value();
  const ImportedValue *transposedInput =
      importer.namedInput(node, "transposed");
  bool transposed = StringRef(node->kind().toQualString())
                        .starts_with("aten::conv_transpose") ||
                    (transposedInput && transposedInput->intValue);
  RankedTensorType xType = tensorType(*x), wType = tensorType(*weight);
  int64_t spatial = wType.getRank() - 2;
  bool unbatched = xType.getRank() == spatial + 1;
  if (spatial < 1 || (xType.getRank() != spatial + 2 && !unbatched))
    return makeError(llvm::formatv(
        "a convolution's weight [C_out, C_in / groups, K..] of rank {0} "
        "needs an input [N, C_in, S..] of rank {1} (or {2} unbatched), not "
        "rank {3}",
        wType.getRank(), wType.getRank(), wType.getRank() - 1,
        xType.getRank()));
  auto perDim = [&](StringRef name, int64_t fallback) {
    return perSpatialDim(importer, node, name, spatial,
                         SmallVector<int64_t>(spatial, fallback),
                         "a convolution's");
  };
  ConvOptions options;
  llvm::Expected<SmallVector<int64_t>> stride = perDim("stride", 1);
  if (!stride)
    return stride.takeError();
  llvm::Expected<SmallVector<int64_t>> dilation = perDim("dilation", 1);
  if (!dilation)
    return dilation.takeError();
  options.stride = std::move(*stride);
  options.dilation = std::move(*dilation);
  const ImportedValue *groups = importer.namedInput(node, "groups");
  if (groups && !groups->isNone() && !groups->isNumber())
    return makeError("a convolution's 'groups' must be a number");
  options.groups = groups && groups->isNumber() ? groups->intValue : 1;
  const ImportedValue *padding = importer.namedInput(node, "padding");
  if (padding && padding->kind == ImportedValue::Kind::String) {
    options.padLow.assign(spatial, 0);
    options.padHigh.assign(spatial, 0);
    // 'same' pads dilation * (K - 1) positions per dim, the odd one at the
    // end.
    if (padding->text == "same") {
      for (int64_t i = 0; i < spatial; ++i) {
        int64_t total = options.dilation[i] * (wType.getDimSize(2 + i) - 1);
        options.padLow[i] = total / 2;
        options.padHigh[i] = total - options.padLow[i];
      }
    } else if (padding->text != "valid") {
      return makeError("padding '" + padding->text + "' is not supported");
    }
  } else {
    llvm::Expected<SmallVector<int64_t>> both = perDim("padding", 0);
    if (!both)
      return both.takeError();
    options.padLow = *both;
    options.padHigh = std::move(*both);
  }
  Emitter emit(importer);
  Value input = unbatched ? addBatchOfOne(emit, *x) : *x;
  llvm::Expected<Value> result = Value();
  if (transposed) {
    if (padding && padding->kind == ImportedValue::Kind::String)
      return makeError("a transposed convolution takes numbers as padding");
    llvm::Expected<SmallVector<int64_t>> outputPadding =
        perDim("output_padding", 0);
    if (!outputPadding)
      return outputPadding.takeError();
    result =
        convolveTransposed(emit, input, *weight, bias, options, *outputPadding);
  } else {
    result = convolve(emit, input, *weight, bias, options);
  }
  if (!result)
    return result.takeError();
  return single(unbatched ? dropBatchOfOne(emit, *result) : *result);
}

/// aten::outer(a, b): the outer product of two vectors.
Outputs convertOuter(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> a = importer.tensorInput(node, 0);
  llvm::Expected<Value> b = importer.tensorInput(node, 1);
  if (!a || !b)
    return makeError("outer needs two real tensors");
  if (tensorType(*a).getRank() != 1 || tensorType(*b).getRank() != 1)
    return makeError("outer needs two vectors");
  Emitter emit(importer);
  Value column = emit.reshape(*a, {tensorType(*a).getDimSize(0), 1});
  Value row = emit.reshape(*b, {1, tensorType(*b).getDimSize(0)});
  if (llvm::Error error = unify(emit, column, row))
    return std::move(error);
  if (!isa<FloatType>(tensorType(column).getElementType()))
    return makeError(integerTensorArithmetic);
  return single(emit.binary<MulOp>(column, row));
}

Outputs convertLinear(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<Value> w = importer.tensorInput(node, 1);
  if (!x || !w)
    return makeError("linear needs a real input and weight");
  Emitter emit(importer);
  llvm::Expected<Value> y = matmul(emit, *x, *w, /*transposeB=*/true);
  if (!y)
    return y.takeError();
  const ImportedValue &bias = importer.input(node, 2);
  if (bias.isNone())
    return single(*y);
  if (!bias.isTensor())
    return makeError("the bias must be a tensor");
  Value out = *y, b = bias.tensor;
  if (llvm::Error error = unify(emit, out, b))
    return std::move(error);
  return single(emit.binary<AddOp>(out, b));
}

/// The smallest and largest of the elements `slice` takes of `values`.
static IdRange sliceRange(DenseIntElementsAttr values, SliceOp slice) {
  ArrayRef<int64_t> shape = values.getType().getShape();
  ArrayRef<int64_t> resultShape = slice.getType().getShape();
  SmallVector<int64_t> strides = computeStrides(shape);
  SmallVector<APInt> elements(values.getValues<APInt>());
  IdRange range{std::numeric_limits<int64_t>::max(),
                std::numeric_limits<int64_t>::min()};
  SmallVector<int64_t> index(resultShape.size(), 0);
  for (int64_t n = slice.getType().getNumElements(); n > 0; --n) {
    int64_t flat = 0;
    for (size_t dim = 0; dim < index.size(); ++dim)
      flat += (slice.getStart()[dim] + index[dim] * slice.getStep()[dim]) *
              strides[dim];
    int64_t value = elements[flat].getSExtValue();
    range.smallest = std::min(range.smallest, value);
    range.largest = std::max(range.largest, value);
    for (int64_t dim = index.size() - 1; dim >= 0; --dim) {
      if (++index[dim] < resultShape[dim])
        break;
      index[dim] = 0;
    }
  }
  return range;
}

} // namespace

std::optional<IdRange> mlir::titan::import::provenRange(Value v, int depth) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  Operation *op = v.getDefiningOp();
  if (!op || depth > 16 || !type || !type.hasStaticShape() ||
      type.getNumElements() == 0 || !isa<IntegerType>(type.getElementType()))
    return std::nullopt;
  if (auto iota = dyn_cast<IotaOp>(op))
    return IdRange{0, type.getDimSize(iota.getDim()) - 1};
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto values = dyn_cast<DenseIntElementsAttr>(constant.getValue());
    if (!values)
      return std::nullopt;
    IdRange range{std::numeric_limits<int64_t>::max(),
                  std::numeric_limits<int64_t>::min()};
    for (const APInt &value : values.getValues<APInt>()) {
      range.smallest = std::min(range.smallest, value.getSExtValue());
      range.largest = std::max(range.largest, value.getSExtValue());
    }
    return range;
  }
  // A slice of a constant: the elements it takes (a row of
  // torch.triu_indices' [2, N] constant, unbound into index tensors).
  if (auto slice = dyn_cast<SliceOp>(op))
    if (auto constant = slice.getInput().getDefiningOp<ConstantOp>())
      if (auto values = dyn_cast<DenseIntElementsAttr>(constant.getValue());
          values && !values.isSplat())
        return sliceRange(values, slice);
  if (isa<ReshapeOp, BroadcastInDimOp, TransposeOp, SliceOp, StopGradientOp>(
          op))
    return provenRange(op->getOperand(0), depth + 1);
  if (auto cast = dyn_cast<CastOp>(op)) {
    auto from =
        dyn_cast<IntegerType>(cast.getInput().getType().getElementType());
    if (from &&
        from.getWidth() <= type.getElementType().getIntOrFloatBitWidth())
      return provenRange(cast.getInput(), depth + 1);
    return std::nullopt;
  }
  // x % c (Python's, torch.remainder) for a constant c > 0 lies in
  // [0, c) whatever x is; x // c in x's range divided by c.
  auto remainder = dyn_cast<RemainderOp>(op);
  auto quotient = dyn_cast<RoundedDivOp>(op);
  if ((remainder && !remainder.getTruncate()) ||
      (quotient && !quotient.getTruncate())) {
    auto constant = op->getOperand(1).getDefiningOp<ConstantOp>();
    auto splat =
        constant ? dyn_cast<SplatElementsAttr>(constant.getValue()) : nullptr;
    int64_t divisor = splat && isa<IntegerType>(splat.getElementType())
                          ? splat.getSplatValue<APInt>().getSExtValue()
                          : 0;
    if (divisor > 0 && remainder)
      return IdRange{0, divisor - 1};
    if (divisor > 0)
      if (std::optional<IdRange> range =
              provenRange(op->getOperand(0), depth + 1))
        return IdRange{floorDivide(range->smallest, divisor),
                       floorDivide(range->largest, divisor)};
    return std::nullopt;
  }
  // x + c, c + x and x - c for a constant c.
  SmallVector<std::pair<Value, Value>, 2> shifted;
  if (auto add = dyn_cast<AddOp>(op))
    shifted = {{add.getLhs(), add.getRhs()}, {add.getRhs(), add.getLhs()}};
  if (auto sub = dyn_cast<SubOp>(op))
    shifted = {{sub.getLhs(), sub.getRhs()}};
  for (auto [x, c] : shifted) {
    auto constant = c.getDefiningOp<ConstantOp>();
    auto splat =
        constant ? dyn_cast<SplatElementsAttr>(constant.getValue()) : nullptr;
    std::optional<IdRange> range = provenRange(x, depth + 1);
    if (splat && range && isa<IntegerType>(splat.getElementType())) {
      int64_t shift = splat.getSplatValue<APInt>().getSExtValue();
      if (isa<SubOp>(op))
        shift = -shift;
      return IdRange{range->smallest + shift, range->largest + shift};
    }
  }
  return std::nullopt;
}

namespace {

/// The name of the argument (a parameter or buffer) the tensor a lookup
/// reads is a view or slice of, or "" when it is computed.
static std::string tableArgumentName(GraphImporter &importer, Value table) {
  while (Operation *op = table.getDefiningOp()) {
    if (!isa<ReshapeOp, TransposeOp, SliceOp, CastOp>(op))
      return "";
    table = op->getOperand(0);
  }
  return importer.getArgumentNames()[cast<BlockArgument>(table).getArgNumber()]
      .first;
}

/// The name of the tensor a lookup reads, for errors: 'the argument' it is
/// a view or slice of, or "the table".
static std::string tableName(GraphImporter &importer, Value table) {
  std::string name = tableArgumentName(importer, table);
  return name.empty() ? "the table" : "'" + name + "'";
}

/// Whether `ids` are inputs of the model (tokens) or views, slices or
/// concatenations of inputs: titan-mark-id-ranges gives those the rows of
/// the tables they index, and the runtime checks every batch it reads.
static bool isCheckedInput(GraphImporter &importer, Value ids, int depth = 0) {
  if (auto arg = dyn_cast<BlockArgument>(ids))
    return importer.getArgumentNames()[arg.getArgNumber()].second ==
           ArgRole::Input;
  Operation *op = ids.getDefiningOp();
  if (depth > 16 ||
      !isa<ReshapeOp, TransposeOp, SliceOp, BroadcastInDimOp, ConcatOp>(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value operand) {
    return isCheckedInput(importer, operand, depth + 1);
  });
}

/// Fails when the import proves that `ids` reach outside the `rowCount`
/// rows of `table` (ids the model computes, e.g. positions from
/// torch.arange over a sequence longer than a position table): PyTorch
/// finds it at run time (an index error), titan here, as the compiled
/// lookups do not check their ids.
static llvm::Error checkProvenIds(GraphImporter &importer, Value table,
                                  Value ids, int64_t rowCount) {
  std::optional<IdRange> range = provenRange(ids);
  if (!range)
    return llvm::Error::success();
  if (range->largest >= rowCount)
    return makeError(llvm::formatv(
        "{0} has {1} rows, but the model looks up row {2} (positions it "
        "computes, e.g. torch.arange over the sequence): the input is "
        "longer than this table of the model; use at most {1} positions "
        "(e.g. a smaller training.seq_len), or a model built with a longer "
        "table",
        tableName(importer, table), rowCount, range->largest));
  if (range->smallest < 0)
    return makeError(llvm::formatv(
        "the model looks up row {0} of {1}, which has {2} rows: titan "
        "counts a negative index from the end only where it is a constant "
        "of tensor[...] indexing (x[[-1]]); embeddings, torch.gather and "
        "index_select need indices in [0, {2}), and so does tensor[...] "
        "at indices the model computes: make them non-negative in the "
        "model (e.g. ids % {2})",
        range->smallest, tableName(importer, table), rowCount));
  return llvm::Error::success();
}

/// `ids` for a lookup of the `rowCount` rows of `table`: an error where the
/// import proves them outside (checkProvenIds); behind a titan.check_ids
/// where it can neither prove them inside nor leave them to the check of
/// the inputs, as the compiled lookups read any row they are given (OPT's
/// positions from cumsum of a mask). The input check covers `ids` that are
/// inputs (isCheckedInput) only when `lookedUpAsIs`: when the lookup reads
/// them, not positions computed from them (titan-mark-id-ranges follows
/// the inputs to the lookups).
static llvm::Expected<Value> checkedIds(Emitter &emit, Value table, Value ids,
                                        int64_t rowCount, bool lookedUpAsIs) {
  if (llvm::Error error = checkProvenIds(emit.importer, table, ids, rowCount))
    return std::move(error);
  if (provenRange(ids) || (lookedUpAsIs && isCheckedInput(emit.importer, ids)))
    return ids;
  return CheckIdsOp::create(emit.builder, emit.loc, ids,
                            emit.builder.getI64IntegerAttr(rowCount),
                            emit.builder.getStringAttr(
                                tableArgumentName(emit.importer, table)))
      .getResult();
}

/// aten::one_hot(ids, num_classes=-1): int64 [..., C], 1 where the class is
/// the id. num_classes -1 takes the largest id + 1, which the import must
/// prove (positions, constants).
Outputs convertOneHot(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> ids = importer.tensorInput(node, 0);
  if (!ids)
    return ids.takeError();
  RankedTensorType type = tensorType(*ids);
  if (!isa<IntegerType>(type.getElementType()) ||
      type.getElementType().isInteger(1))
    return makeError("one_hot needs integer class ids");
  llvm::Expected<int64_t> classes = importer.intInput(node, 1);
  if (!classes)
    return classes.takeError();
  if (*classes == -1) {
    std::optional<IdRange> range = provenRange(*ids);
    if (!range)
      return makeError("one_hot without num_classes takes the largest id + "
                       "1, which depends on the data here: pass num_classes");
    *classes = range->largest + 1;
  }
  if (*classes < 1)
    return makeError(
        llvm::formatv("one_hot needs num_classes >= 1, not {0}", *classes));
  Emitter emit(importer);
  SmallVector<int64_t> shape(type.getShape());
  shape.push_back(*classes);
  auto i64 = RankedTensorType::get(shape, emit.builder.getI64Type());
  SmallVector<int64_t> withClass(type.getShape());
  withClass.push_back(1);
  Value id = emit.cast(emit.reshape(*ids, withClass), i64.getElementType());
  Value hot = emit.compare("eq", emit.broadcastTo(id, shape),
                           emit.iota(i64, type.getRank()));
  return single(emit.cast(hot, i64.getElementType()));
}

Outputs convertEmbedding(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> table = importer.tensorInput(node, 0);
  llvm::Expected<Value> ids = importer.tensorInput(node, 1);
  if (!table || !ids)
    return makeError("embedding needs a table and index tensor");
  RankedTensorType tableType = tensorType(*table);
  int64_t rowCount = tableType.getDimSize(0);
  SmallVector<int64_t> shape(tensorType(*ids).getShape());
  shape.push_back(tableType.getDimSize(1));
  Emitter emit(importer);
  llvm::Expected<Value> checked =
      checkedIds(emit, *table, *ids, rowCount, /*lookedUpAsIs=*/true);
  if (!checked)
    return checked.takeError();
  Value rows = EmbeddingOp::create(emit.builder, emit.loc,
                                   tableType.clone(shape), *table, *checked);
  // nn.Embedding(padding_idx=p): the padding row reads the same but gets no
  // gradient; aten::embedding's -1 is "none". Positions whose id is p read
  // the row through a stop_gradient.
  llvm::Expected<int64_t> padding =
      node->inputs().size() > 2 ? importer.intInput(node, 2) : int64_t(-1);
  if (!padding)
    return padding.takeError();
  if (node->inputs().size() > 3) {
    llvm::Expected<int64_t> byFrequency = importer.intInput(node, 3);
    if (!byFrequency || *byFrequency)
      return makeError("embedding with scale_grad_by_freq is not supported");
  }
  if (*padding == -1)
    return single(rows);
  if (*padding < 0 || *padding >= rowCount)
    return makeError(llvm::formatv(
        "padding_idx {0} is outside the table's {1} rows", *padding, rowCount));
  Value row = emit.reshape(emit.slice(emit.unary<StopGradientOp>(*table), 0,
                                      *padding, *padding + 1, 1),
                           {tableType.getDimSize(1)});
  Value isPadding = emit.compare(
      "eq", *ids, emit.splat(tensorType(*ids), static_cast<double>(*padding)));
  SmallVector<int64_t> perId(tensorType(*ids).getShape());
  perId.push_back(1);
  Value mask = emit.broadcastTo(emit.reshape(isPadding, perId), shape);
  return single(emit.select(mask, emit.broadcastTo(row, shape), rows));
}

/// aten::embedding_bag(weight, indices [N], offsets, scale_grad_by_freq,
/// mode, sparse, per_sample_weights, include_last_offset, padding_idx)
/// (nn.EmbeddingBag, F.embedding_bag, which makes the offsets of a 2-d
/// input itself): bag b holds the entries from offsets[b] to the next
/// offset (or N); its rows (titan.embedding), less those of padding_idx,
/// are summed (times the per-sample weights) or averaged as a [B, N]
/// membership matrix times them, or their largest taken; an empty bag is
/// 0, as PyTorch's. Also offset2bag and bag_size; max_indices is not
/// computed.
Outputs convertEmbeddingBag(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> table = importer.tensorInput(node, 0);
  llvm::Expected<Value> ids = importer.tensorInput(node, 1);
  llvm::Expected<Value> offsets = importer.tensorInput(node, 2);
  if (llvm::Error error =
          requireAll("embedding_bag needs a table, indices and offsets", table,
                     ids, offsets))
    return std::move(error);
  RankedTensorType tableType = tensorType(*table);
  RankedTensorType idsType = tensorType(*ids);
  if (idsType.getRank() != 1 || tensorType(*offsets).getRank() != 1)
    return makeError(llvm::formatv(
        "embedding_bag takes 1-d indices and offsets, not {0} and {1}", idsType,
        tensorType(*offsets)));
  if (flagOr(importer, node, "scale_grad_by_freq", false))
    return makeError("embedding_bag with scale_grad_by_freq is not supported");
  const ImportedValue *modeArg = importer.namedInput(node, "mode");
  int64_t mode = modeArg && !modeArg->isNone() ? modeArg->intValue : 0;
  if (mode < 0 || mode > 2)
    return makeError(llvm::formatv(
        "embedding_bag mode {0}: PyTorch's are 0 (sum), 1 (mean), 2 (max)",
        mode));
  Value weights;
  if (const ImportedValue *given =
          importer.namedInput(node, "per_sample_weights");
      given && !given->isNone()) {
    if (!given->isTensor() ||
        tensorType(given->tensor).getShape() != idsType.getShape())
      return makeError("embedding_bag's per_sample_weights must be a tensor "
                       "of the indices' shape");
    if (mode != 0)
      return makeError("embedding_bag takes per_sample_weights only in mode "
                       "'sum', as PyTorch's");
    weights = given->tensor;
  }
  int64_t padding = -1;
  if (const ImportedValue *given = importer.namedInput(node, "padding_idx");
      given && !given->isNone())
    padding = given->intValue;
  bool includeLast = flagOr(importer, node, "include_last_offset", false);
  int64_t n = idsType.getDimSize(0), width = tableType.getDimSize(1);
  int64_t bags = tensorType(*offsets).getDimSize(0) - (includeLast ? 1 : 0);
  if (bags < 1)
    return makeError("embedding_bag needs at least one bag");
  Emitter emit(importer);
  llvm::Expected<Value> checked =
      checkedIds(emit, *table, *ids, tableType.getDimSize(0),
                 /*lookedUpAsIs=*/true);
  if (!checked)
    return checked.takeError();
  Value rows = EmbeddingOp::create(
      emit.builder, emit.loc, tableType.clone({n, width}), *table, *checked);
  // membership[b, i]: starts[b] <= i < ends[b], and i not padding.
  Type i64 = emit.builder.getI64Type();
  Value bounds = emit.cast(*offsets, i64);
  Value starts = emit.slice(bounds, 0, 0, bags, 1);
  Value ends = includeLast
                   ? emit.slice(bounds, 0, 1, bags + 1, 1)
                   : emit.concat({emit.slice(bounds, 0, 1, bags, 1),
                                  emit.splat(RankedTensorType::get({1}, i64),
                                             static_cast<double>(n))},
                                 0);
  auto pairs = RankedTensorType::get({bags, n}, i64);
  Value position = emit.iota(pairs, 1);
  auto perBag = [&](Value v) {
    return emit.broadcastTo(emit.reshape(v, {bags, 1}), {bags, n});
  };
  Value started = emit.compare("ge", position, perBag(starts));
  Value member =
      emit.select(started, emit.compare("lt", position, perBag(ends)), started);
  if (padding >= 0) {
    Value kept = emit.broadcastTo(
        emit.reshape(emit.compare("ne", *checked,
                                  emit.splatLike(*checked,
                                                 static_cast<double>(padding))),
                     {1, n}),
        {bags, n});
    member = emit.select(member, kept, member);
  }
  Type element = tableType.getElementType();
  Value share = emit.cast(member, element);
  Value counts = emit.reduceSum(share, {1}, /*keepdim=*/true);
  Value output;
  if (mode == 2) {
    SmallVector<int64_t> cube{bags, n, width};
    Value candidates =
        emit.select(emit.broadcastTo(emit.reshape(member, {bags, n, 1}), cube),
                    emit.broadcastTo(emit.reshape(rows, {1, n, width}), cube),
                    emit.splat(tableType.clone(cube),
                               -std::numeric_limits<double>::infinity()));
    Value largest = ReduceMaxOp::create(
        emit.builder, emit.loc, tableType.clone({bags, width}), candidates,
        emit.builder.getDenseI64ArrayAttr({1}), /*keepdim=*/false);
    Value empty = emit.broadcastTo(
        emit.compare("eq", counts, emit.splatLike(counts, 0.0)), {bags, width});
    output = emit.select(empty, emit.splatLike(largest, 0.0), largest);
  } else {
    if (weights)
      share = emit.binary<MulOp>(
          share,
          emit.broadcastTo(emit.reshape(emit.cast(weights, element), {1, n}),
                           {bags, n}));
    output =
        MatmulOp::create(emit.builder, emit.loc, tableType.clone({bags, width}),
                         share, rows, Value(), /*transpose_lhs=*/false,
                         /*transpose_rhs=*/false);
    if (mode == 1)
      output = emit.binary<DivOp>(
          output, emit.broadcastTo(
                      emit.binary<MaxOp>(counts, emit.splatLike(counts, 1.0)),
                      {bags, width}));
  }
  // offset2bag: the last bag started at or before each entry.
  Value startedBy = emit.cast(started, emit.builder.getF32Type());
  Value offsetToBag = emit.cast(
      emit.binary<SubOp>(
          emit.reduceSum(startedBy, {0}, false),
          emit.splat(RankedTensorType::get({n}, emit.builder.getF32Type()),
                     1.0)),
      i64);
  Value bagSize = emit.cast(emit.reshape(counts, {bags}), i64);
  return std::vector<ImportedValue>{
      ImportedValue::ofTensor(output), ImportedValue::ofTensor(offsetToBag),
      ImportedValue::ofTensor(bagSize), ImportedValue::none()};
}

/// Fails unless `ids` hold integers and `table` floats, as lookups need.
static llvm::Error checkLookupTypes(Value table, Value ids) {
  Type idType = tensorType(ids).getElementType();
  if (idType.isInteger(1))
    return makeError("indexing with a boolean mask is not supported (the "
                     "result's shape would depend on the data)");
  if (!isa<IntegerType>(idType))
    return makeError("index tensors must hold integers");
  if (!isa<FloatType>(tensorType(table).getElementType()))
    return makeError("gathering from a tensor of integers is not supported "
                     "(titan gathers from floating-point tensors)");
  return llvm::Error::success();
}

/// titan.embedding of `table` viewed as [rows, rest] at `ids`, whose range
/// the caller checked: ids' shape followed by the table's other dims.
static Value lookupRows(Emitter &emit, Value table, Value ids) {
  RankedTensorType type = tensorType(table);
  ArrayRef<int64_t> rest = type.getShape().drop_front();
  int64_t width = ShapedType::getNumElements(rest);
  SmallVector<int64_t> gathered(tensorType(ids).getShape());
  gathered.push_back(width);
  Value rows = EmbeddingOp::create(
      emit.builder, emit.loc, type.clone(gathered),
      emit.reshape(table, {type.getDimSize(0), width}), ids);
  gathered.pop_back();
  gathered.append(rest.begin(), rest.end());
  return emit.reshape(rows, gathered);
}

/// The rows `ids` of `table` along its first dim, for a floating-point
/// table of any rank: titan.embedding of the table viewed as [rows, rest].
/// The result has ids' shape followed by the table's other dims. As with
/// nn.Embedding, ids must lie in [0, rows) (negative ids are not wrapped):
/// checkedIds proves or checks it, unless the caller did (`idsChecked`).
llvm::Expected<Value> gatherRows(Emitter &emit, Value table, Value ids,
                                 bool idsChecked = false) {
  if (llvm::Error error = checkLookupTypes(table, ids))
    return std::move(error);
  llvm::Expected<Value> checked =
      idsChecked ? ids
                 : checkedIds(emit, table, ids, tensorType(table).getDimSize(0),
                              /*lookedUpAsIs=*/true);
  if (!checked)
    return checked.takeError();
  return lookupRows(emit, table, *checked);
}

/// aten::masked_scatter(self, mask, source) (multimodal models' merge of
/// image features into the text embeddings, `inputs_embeds.masked_scatter(
/// image_mask, image_features)`): self where mask is false; where it is
/// true, source's elements in order (row-major over both). The k-th true
/// position reads source's element k: the running count of the mask
/// (rowRunningSums in f64, exact) minus one, looked up in source viewed as
/// a column, behind a check_ids that stops the step where the mask holds
/// more positions than source has elements (PyTorch's error too). Source's
/// gradient is the scatter of the selected cotangents.
Outputs convertMaskedScatter(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> self = importer.tensorInput(node, 0);
  llvm::Expected<Value> mask = importer.tensorInput(node, 1);
  llvm::Expected<Value> source = importer.tensorInput(node, 2);
  if (llvm::Error error =
          requireAll("masked_scatter needs a tensor, a boolean mask and a "
                     "source tensor",
                     self, mask, source))
    return std::move(error);
  RankedTensorType type = tensorType(*self);
  if (!tensorType(*mask).getElementType().isInteger(1))
    return makeError("masked_scatter needs a boolean mask");
  if (tensorType(*source).getElementType() != type.getElementType())
    return makeError("masked_scatter needs a source of self's dtype");
  llvm::Expected<SmallVector<int64_t>> shape =
      broadcastShape(tensorType(*mask).getShape(), type.getShape());
  bool broadcasts = shape && ArrayRef<int64_t>(*shape) == type.getShape();
  if (!shape)
    llvm::consumeError(shape.takeError());
  if (!broadcasts)
    return makeError(llvm::formatv(
        "masked_scatter's mask {0} does not broadcast to self {1}",
        tensorType(*mask), type));
  Emitter emit(importer);
  int64_t n = type.getNumElements();
  int64_t available = tensorType(*source).getNumElements();
  Value selected = emit.reshape(emit.broadcastTo(*mask, type.getShape()), {n});
  Value counts = emit.reshape(
      rowRunningSums(emit,
                     emit.reshape(emit.cast(selected, emit.f64()), {1, n})),
      {n});
  Value index = emit.select(
      selected, emit.binary<SubOp>(counts, emit.splatLike(counts, 1.0)),
      emit.splatLike(counts, 0.0));
  Value ids = CheckIdsOp::create(
      emit.builder, emit.loc, emit.cast(index, emit.builder.getI64Type()),
      emit.builder.getI64IntegerAttr(available),
      emit.builder.getStringAttr(
          llvm::formatv("the {0} elements of masked_scatter's source",
                        available)
              .str()));
  Type element = type.getElementType();
  Type gathered = exactFloatType(emit, element);
  Value column = emit.reshape(emit.cast(*source, gathered), {available, 1});
  Value values = emit.cast(
      emit.reshape(lookupRows(emit, column, ids), type.getShape()), element);
  return single(
      emit.select(emit.reshape(selected, type.getShape()), values, *self));
}

/// `x` gathered along `dim` by integer `ids`, as `x[:, ..., ids]` (`dim`
/// full slices first): the result's shape is x's dims before `dim`, ids'
/// shape, then x's dims after `dim`.
llvm::Expected<Value> gatherAlong(Emitter &emit, Value x, int64_t dim,
                                  Value ids, bool idsChecked = false) {
  int64_t rank = tensorType(x).getRank();
  int64_t idsRank = tensorType(ids).getRank();
  SmallVector<int64_t> toFront{dim};
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim)
      toFront.push_back(d);
  Value table = dim == 0 ? x : emit.transpose(x, toFront);
  llvm::Expected<Value> gathered = gatherRows(emit, table, ids, idsChecked);
  if (!gathered || dim == 0)
    return gathered;
  // [ids..., before..., after...] -> [before..., ids..., after...].
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < dim; ++d)
    order.push_back(idsRank + d);
  for (int64_t d = 0; d < idsRank; ++d)
    order.push_back(d);
  for (int64_t d = idsRank + dim; d < idsRank + rank - 1; ++d)
    order.push_back(d);
  return emit.transpose(*gathered, order);
}

/// Whether broadcast `op` repeats its input along result dim `dim` (the
/// dim has no input dim, or one of size 1).
bool isBroadcastAlong(BroadcastInDimOp op, int64_t dim) {
  ArrayRef<int64_t> dims = op.getDims();
  const auto *it = llvm::find(dims, dim);
  return it == dims.end() ||
         op.getInput().getType().getDimSize(it - dims.begin()) == 1;
}

/// Whether `index`, of a gather or scatter along `dim` of a tensor of
/// `shape`, is the same along every dim after `dim` and spans them
/// (`ids[..., None].expand(..., d)`): it picks whole rows.
static bool picksWholeRows(Value index, int64_t dim, ArrayRef<int64_t> shape) {
  auto broadcast = index.getDefiningOp<BroadcastInDimOp>();
  int64_t rank = shape.size();
  return broadcast && dim + 1 < rank &&
         llvm::all_of(llvm::seq<int64_t>(dim + 1, rank), [&](int64_t d) {
           return isBroadcastAlong(broadcast, d) &&
                  tensorType(index).getDimSize(d) == shape[d];
         });
}

/// `index` at position 0 of its dims from `keptRank` on, as i64 of its first
/// `keptRank` dims: one id per row of those dims.
static Value leadingIds(Emitter &emit, Value index, int64_t keptRank) {
  RankedTensorType type = tensorType(index);
  for (int64_t d = keptRank; d < type.getRank(); ++d)
    index = emit.slice(index, d, 0, 1, 1);
  return emit.cast(emit.reshape(index, type.getShape().take_front(keptRank)),
                   emit.builder.getI64Type());
}

/// torch.gather of `table` along `dim` by an `index` that is the same along
/// every dim after `dim` (`ids[..., None].expand(..., d)`: a gather of whole
/// rows, as GPT-J's sincos by position ids): titan.embedding of the table
/// viewed as [rows, row width] (rows of every entry of the dims before
/// `dim`, or of one when the table is a broadcast along them,
/// `p[None].expand(b, ...)`); nullopt for another index.
std::optional<llvm::Expected<Value>> gatherRowsAlong(Emitter &emit, Value table,
                                                     int64_t dim, Value index) {
  RankedTensorType type = tensorType(table);
  RankedTensorType indexType = tensorType(index);
  int64_t rank = type.getRank();
  if (!picksWholeRows(index, dim, type.getShape()))
    return std::nullopt;
  Value ids = leadingIds(emit, index, dim + 1);
  int64_t width =
      ShapedType::getNumElements(type.getShape().drop_front(dim + 1));
  int64_t size = type.getDimSize(dim);
  // The ids index `dim`: checked against its size, before the offsets of
  // the leading dims would hide an id past it in another entry's rows.
  if (llvm::Error error = checkLookupTypes(table, ids))
    return llvm::Expected<Value>(std::move(error));
  llvm::Expected<Value> checked =
      checkedIds(emit, table, ids, size, /*lookedUpAsIs=*/false);
  if (!checked)
    return llvm::Expected<Value>(checked.takeError());
  ids = *checked;
  // A table repeated along the dims before `dim`: its one copy; else the
  // rows of every entry of the leading dims, ids offset by the entry.
  auto repeated = table.getDefiningOp<BroadcastInDimOp>();
  Value rowsTable;
  if (repeated &&
      llvm::all_of(llvm::seq<int64_t>(0, dim),
                   [&](int64_t d) { return isBroadcastAlong(repeated, d); }) &&
      llvm::none_of(llvm::seq<int64_t>(dim, rank),
                    [&](int64_t d) { return isBroadcastAlong(repeated, d); }) &&
      llvm::is_sorted(repeated.getDims())) {
    rowsTable = emit.reshape(repeated.getInput(), {size, width});
  } else {
    auto i64 = RankedTensorType::get(indexType.getShape().take_front(dim + 1),
                                     IntegerType::get(&emit.context, 64));
    ArrayRef<int64_t> leading = type.getShape().take_front(dim + 1);
    ids = rowMajorOffsets(emit, i64, leading, [&](int64_t d) {
      return d == dim ? ids : emit.iota(i64, d);
    });
    rowsTable =
        emit.reshape(table, {ShapedType::getNumElements(leading), width});
  }
  return llvm::Expected<Value>(
      emit.reshape(lookupRows(emit, rowsTable, ids), indexType.getShape()));
}

} // namespace

/// Whether `index` (positions along `dim`, of any shape) equals each
/// position of a dim of `size`, inserted after `dim`: i1 [index's dims to
/// `dim`, size, the rest].
static Value oneHotAlong(Emitter &emit, Value index, int64_t dim,
                         int64_t size) {
  ArrayRef<int64_t> indexShape = tensorType(index).getShape();
  SmallVector<int64_t> shape(indexShape);
  shape.insert(shape.begin() + dim + 1, size);
  SmallVector<int64_t> withAxis(indexShape);
  withAxis.insert(withAxis.begin() + dim + 1, 1);
  auto i64 = RankedTensorType::get(shape, emit.builder.getI64Type());
  Value ids = emit.cast(emit.reshape(index, withAxis), i64.getElementType());
  return emit.compare("eq", emit.broadcastTo(ids, shape),
                      emit.iota(i64, dim + 1));
}

Value mlir::titan::import::gatherOneHot(Emitter &emit, Value table, int64_t dim,
                                        Value index) {
  RankedTensorType tableType = tensorType(table);
  Value hot = oneHotAlong(emit, index, dim, tableType.getDimSize(dim));
  SmallVector<int64_t> withAxis(tableType.getShape());
  withAxis.insert(withAxis.begin() + dim, 1);
  Value rows = emit.broadcastTo(emit.reshape(table, withAxis),
                                tensorType(hot).getShape());
  return emit.reduceSum(emit.select(hot, rows, emit.splatLike(rows, 0.0)),
                        {dim + 1}, /*keepdim=*/false);
}

std::pair<Value, Value> mlir::titan::import::sortAlong(Emitter &emit, Value x,
                                                       int64_t dim,
                                                       bool descending,
                                                       bool withValues) {
  RankedTensorType type = tensorType(x);
  int64_t n = type.getDimSize(dim);
  Type element = type.getElementType();
  Value keys = x;
  if (element.isInteger(1))
    keys = emit.cast(keys, emit.builder.getI64Type());
  // x_i along `dim`, x_j along a new dim after it.
  SmallVector<int64_t> pairs(type.getShape());
  pairs.insert(pairs.begin() + dim + 1, n);
  SmallVector<int64_t> asI(type.getShape()), asJ(type.getShape());
  asI.insert(asI.begin() + dim + 1, 1);
  asJ.insert(asJ.begin() + dim, 1);
  Value xi = emit.broadcastTo(emit.reshape(keys, asI), pairs);
  Value xj = emit.broadcastTo(emit.reshape(keys, asJ), pairs);
  auto positionType = RankedTensorType::get(pairs, emit.builder.getI64Type());
  Value earlier = emit.compare("lt", emit.iota(positionType, dim + 1),
                               emit.iota(positionType, dim));
  auto countType = RankedTensorType::get(pairs, emit.builder.getF32Type());
  Value one = emit.splat(countType, 1.0), zero = emit.splat(countType, 0.0);
  Value precedes = emit.compare(descending ? "gt" : "lt", xj, xi);
  Value equal = emit.compare("eq", xj, xi);
  if (isa<FloatType>(element)) {
    // NaN is larger than every number and equal to NaN, as torch sorts.
    Value nanI = emit.compare("ne", xi, xi), nanJ = emit.compare("ne", xj, xj);
    Value isTrue = emit.compare("eq", one, one);
    Value isFalse = emit.compare("ne", one, one);
    precedes =
        descending
            ? emit.select(nanJ, emit.select(nanI, isFalse, isTrue),
                          emit.select(nanI, isFalse, precedes))
            : emit.select(nanJ, isFalse, emit.select(nanI, isTrue, precedes));
    equal = emit.select(nanI, nanJ, equal);
  }
  Value before = emit.select(
      precedes, one, emit.select(equal, emit.select(earlier, one, zero), zero));
  Value place = emit.cast(emit.reduceSum(before, {dim + 1}, false),
                          emit.builder.getI64Type());
  // The position whose place is r, for each r.
  Value hot = oneHotAlong(emit, place, dim, n);
  Value positions =
      emit.cast(emit.iota(positionType, dim), emit.builder.getF32Type());
  Value indices =
      emit.cast(emit.reduceSum(emit.select(hot, positions, zero), {dim}, false),
                emit.builder.getI64Type());
  if (!withValues)
    return {Value(), indices};
  if (isa<FloatType>(element))
    return {gatherOneHot(emit, x, dim, indices), indices};
  Type f64 = emit.builder.getF64Type();
  return {
      emit.cast(gatherOneHot(emit, emit.cast(x, f64), dim, indices), element),
      indices};
}

namespace {

/// aten::sort(x, dim=-1, descending=False) and its stable form, argsort,
/// msort: along a dim of n <= kMaxOneHotDim, each element's place is the
/// number of elements before it in the order (smaller, or larger when
/// descending; equal ones earlier along the dim: a stable sort, as
/// `stable=True`), counted over an n x n comparison; the indices are the
/// positions whose place is each r, and the values the one-hot gather of x
/// at them (differentiable, the gradient going back to each element's
/// position). NaN sorts as larger than every number, as in torch. Integer
/// tensors are sorted exactly (gathered in f64).
Outputs convertSort(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  StringRef kind = node->kind().toUnqualString();
  int64_t rawDim = kind == "msort" ? 0 : -1;
  if (const ImportedValue *dimArg = importer.namedInput(node, "dim"))
    rawDim = dimArg->intValue;
  if (type.getRank() == 0)
    return makeError(kind.str() + " of a 0-d tensor");
  llvm::Expected<int64_t> dim = normalizeDim(rawDim, type.getRank());
  if (!dim)
    return dim.takeError();
  bool descending = false;
  if (const ImportedValue *arg = importer.namedInput(node, "descending"))
    descending = arg->intValue != 0;
  int64_t n = type.getDimSize(*dim);
  if (n > kMaxOneHotDim)
    return makeError(llvm::formatv(
        "{0} along a dim of {1}: titan sorts along dims of at most {2} (it "
        "compares every pair of elements of a row)",
        kind, n, kMaxOneHotDim));
  Emitter emit(importer);
  auto [values, indices] = sortAlong(emit, *x, *dim, descending,
                                     /*withValues=*/kind != "argsort");
  if (kind == "argsort")
    return single(indices);
  if (kind == "msort")
    return single(values);
  return std::vector<ImportedValue>{ImportedValue::ofTensor(values),
                                    ImportedValue::ofTensor(indices)};
}

static Outputs gatherFrom(GraphImporter &importer, Value x, int64_t dim,
                          Value index);

} // namespace

Outputs mlir::titan::import::gatherAlong(GraphImporter &importer, Value x,
                                         int64_t dim, Value index) {
  Type element = tensorType(x).getElementType();
  if (isa<FloatType>(element) || element.isInteger(1))
    return gatherFrom(importer, x, dim, index);
  Emitter emit(importer);
  Outputs gathered =
      gatherFrom(importer, emit.cast(x, emit.builder.getF64Type()), dim, index);
  if (!gathered)
    return gathered.takeError();
  return single(emit.cast(gathered->front().tensor, element));
}

namespace {

/// aten::gather(x, dim, index) (`torch.gather`, `take_along_dim`):
/// `out[..., i_dim, ...] = x[..., index[..., i_dim, ...], ...]`, of index's
/// shape. An index that is the position along `dim` at compile time
/// (GPT-NeoX gathers its RoPE tables by position ids) reads a slice of x;
/// one that picks whole rows is a row lookup (gatherRowsAlong); any other
/// reads single elements: through a one-hot comparison along a dim of at
/// most kMaxOneHotDim (`probs.gather(-1, topk_ids)`), else by a lookup of
/// one element per index in x viewed as a column (titan.embedding, so the
/// gradient is a scatter-add), at the linear position that index gives the
/// element.
Outputs convertGather(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<Value> index = importer.tensorInput(node, 2);
  if (!index)
    return index.takeError();
  return gatherAlong(importer, *x, td->dim, *index);
}

static llvm::Expected<Value> wrapNegativeConstantIds(Emitter &emit, Value ids,
                                                     int64_t size, int64_t dim);

/// aten::take(x, index): x flattened, gathered at index (of any shape;
/// negative constants count from the end).
Outputs convertTake(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<Value> index = importer.tensorInput(node, 1);
  if (llvm::Error error =
          requireAll("take needs a tensor and a tensor of indices", x, index))
    return std::move(error);
  Emitter emit(importer);
  RankedTensorType indexType = tensorType(*index);
  int64_t size = tensorType(*x).getNumElements();
  // Negative constant indices count from the end, as PyTorch's.
  llvm::Expected<Value> wrapped = wrapNegativeConstantIds(
      emit, emit.reshape(*index, {indexType.getNumElements()}), size, 0);
  if (!wrapped)
    return wrapped.takeError();
  Outputs flat = gatherAlong(importer, emit.reshape(*x, {size}), 0, *wrapped);
  if (!flat)
    return flat.takeError();
  return single(emit.reshape(flat->front().tensor, indexType.getShape()));
}

/// aten::take_along_dim(x, indices, dim): with a dim, x and indices
/// broadcast against each other along every other dim and gathered along
/// it; without one, both flattened.
Outputs convertTakeAlongDim(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<Value> index = importer.tensorInput(node, 1);
  if (!x || !index)
    return makeError("take_along_dim needs a tensor and a tensor of indices");
  Emitter emit(importer);
  const ImportedValue *dimArg = importer.namedInput(node, "dim");
  if (!dimArg || dimArg->isNone())
    return gatherAlong(
        importer, emit.reshape(*x, {tensorType(*x).getNumElements()}), 0,
        emit.reshape(*index, {tensorType(*index).getNumElements()}));
  ArrayRef<int64_t> xShape = tensorType(*x).getShape();
  ArrayRef<int64_t> indexShape = tensorType(*index).getShape();
  if (xShape.size() != indexShape.size())
    return makeError(llvm::formatv(
        "take_along_dim of a rank-{0} tensor with rank-{1} indices; they "
        "must have the same rank",
        xShape.size(), indexShape.size()));
  llvm::Expected<int64_t> dim = normalizeDim(dimArg->intValue, xShape.size());
  if (!dim)
    return dim.takeError();
  // Broadcast along every dim but `dim`.
  SmallVector<int64_t> xOthers(xShape), indexOthers(indexShape);
  xOthers[*dim] = indexOthers[*dim] = 1;
  llvm::Expected<SmallVector<int64_t>> shape =
      broadcastShape(xOthers, indexOthers);
  if (!shape)
    return shape.takeError();
  SmallVector<int64_t> xTarget(*shape), indexTarget(*shape);
  xTarget[*dim] = xShape[*dim];
  indexTarget[*dim] = indexShape[*dim];
  return gatherAlong(importer, emit.broadcastTo(*x, xTarget), *dim,
                     emit.broadcastTo(*index, indexTarget));
}

/// aten::gather of `x` (float or boolean) along normalized `dim` at `index`.
static Outputs gatherFrom(GraphImporter &importer, Value x, int64_t dim,
                          Value index) {
  ArrayRef<int64_t> shape = tensorType(x).getShape();
  RankedTensorType indexType = tensorType(index);
  int64_t rank = shape.size();
  if (indexType.getRank() != rank)
    return makeError(llvm::formatv(
        "the index of gather has rank {0}, the tensor rank {1}; they must be "
        "equal",
        indexType.getRank(), rank));
  Emitter emit(importer);
  // x restricted to the index's extent along every other dim.
  Value table = x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = indexType.getDimSize(d);
    if (d == dim || size == shape[d])
      continue;
    if (size > shape[d])
      return makeError(llvm::formatv(
          "the index of gather has size {0} along dim {1}, the tensor {2}",
          size, d, shape[d]));
    table = emit.slice(table, d, 0, size, 1);
  }
  RankedTensorType tableType = tensorType(table);
  if (std::optional<IndexFunction> f = IndexFunctionEvaluator().evaluate(index);
      f && !f->isTable() && f->offset == 0 &&
      llvm::all_of(llvm::seq<int64_t>(0, rank), [&](int64_t d) {
        return f->coef[d] == (d == dim ? 1.0 : 0.0);
      }))
    return single(emit.slice(table, dim, 0, indexType.getDimSize(dim), 1));
  if (std::optional<llvm::Expected<Value>> rows =
          gatherRowsAlong(emit, table, dim, index)) {
    if (!*rows)
      return rows->takeError();
    return single(**rows);
  }
  // Linear positions in the table: index * stride(dim) + the other dims'
  // positions * their strides. The index is checked against the size of
  // `dim` first: past it, a linear position would read another row.
  auto i64 = RankedTensorType::get(
      indexType.getShape(), IntegerType::get(&importer.getContext(), 64));
  if (llvm::Error error = checkLookupTypes(table, index))
    return std::move(error);
  llvm::Expected<Value> checked =
      checkedIds(emit, table, emit.cast(index, i64.getElementType()),
                 tableType.getDimSize(dim), /*lookedUpAsIs=*/false);
  if (!checked)
    return checked.takeError();
  // Single elements of a short dim, with other dims beside: one-hot.
  int64_t size = tableType.getDimSize(dim);
  if (rank > 1 && size <= kMaxOneHotDim)
    return single(gatherOneHot(emit, table, dim, *checked));
  Value ids = rowMajorOffsets(emit, i64, tableType.getShape(), [&](int64_t d) {
    return d == dim ? *checked : emit.iota(i64, d);
  });
  return single(emit.reshape(
      lookupRows(emit, emit.reshape(table, {tableType.getNumElements(), 1}),
                 ids),
      indexType.getShape()));
}

/// `ids` indexing a dim of `size` (dim `dim`) with tensor[...]: constant
/// ids count from the end where negative (Falcon's `fused_qkv[..., [-2],
/// :]`), as tensor[...] indexing does; an error below -size.
static llvm::Expected<Value>
wrapNegativeConstantIds(Emitter &emit, Value ids, int64_t size, int64_t dim) {
  // A traced torch.tensor([...]) is a constant behind a detach.
  Value source = ids;
  while (auto detached = source.getDefiningOp<StopGradientOp>())
    source = detached.getInput();
  auto constant = source.getDefiningOp<ConstantOp>();
  auto values =
      constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue()) : nullptr;
  if (!values || llvm::none_of(values.getValues<APInt>(),
                               [](const APInt &v) { return v.isNegative(); }))
    return ids;
  SmallVector<APInt> wrapped;
  for (const APInt &value : values.getValues<APInt>()) {
    if (value.getSExtValue() < -size)
      return makeError(llvm::formatv(
          "index {0} is out of bounds for dimension {1} with size {2}",
          value.getSExtValue(), dim, size));
    wrapped.push_back(value.isNegative() ? value + size : value);
  }
  return ConstantOp::create(
             emit.builder, emit.loc,
             DenseIntElementsAttr::get(values.getType(), wrapped))
      .getResult();
}

/// The index tensors of tensor[...] indexing (`x[:, ids]`, `x[rows, cols]`):
/// the first dim they index, how many consecutive dims, and the ids: one
/// tensor's as given (a boolean mask, or integers with negative constants
/// counted from the end), several integer ones broadcast together, each
/// checked against its dim (`checked`), and combined into row-major
/// positions in those dims merged into one.
struct IndexTensors {
  int64_t position = -1, count = 0;
  Value ids;
  bool checked = false;
  /// Of ids whose number depends on the data (torch.where(condition)'s):
  /// their valid prefix; past it they read row 0.
  std::optional<ValidPrefix> prefix;
};

/// The valid prefix that index tensors `tensors` share, if any has one
/// (they must be 1-d, of its length), with their entries past it made 0.
static llvm::Expected<std::optional<ValidPrefix>>
sharedIndexPrefix(Emitter &emit, MutableArrayRef<Value> tensors) {
  std::optional<ValidPrefix> shared;
  for (Value ids : tensors)
    if (const ValidPrefix *prefix = emit.importer.validPrefix(ids)) {
      if (shared && shared->count != prefix->count)
        return makeError(llvm::formatv(
            "indices whose number depends on the data, from {0} and from "
            "{1}: titan cannot tell that they are as many; index with "
            "indices from the same torch.where(condition)",
            shared->origin, prefix->origin));
      shared = *prefix;
    }
  if (!shared)
    return shared;
  for (Value &ids : tensors) {
    RankedTensorType type = tensorType(ids);
    if (type.getRank() > 1 || type.getElementType().isInteger(1) ||
        (type.getRank() == 1 && type.getDimSize(0) != shared->length))
      return makeError(llvm::formatv(
          "indexing with the indices that {0} finds takes 1-d integer index "
          "tensors (of its length) beside them, not one of shape [{1}]",
          shared->origin,
          llvm::make_range(type.getShape().begin(), type.getShape().end())));
    if (type.getRank() == 1)
      ids = emit.select(validMask(emit, *shared, type.getShape()), ids,
                        emit.splat(type, 0.0));
  }
  shared->dim = 0;
  return shared;
}

static llvm::Expected<IndexTensors> indexTensors(Emitter &emit, Value x,
                                                 ArrayRef<int64_t> shape,
                                                 const ImportedValue &indices) {
  if (indices.kind != ImportedValue::Kind::List)
    return makeError("expected a list of indices");
  IndexTensors result;
  SmallVector<Value> tensors;
  for (auto [position, item] : llvm::enumerate(indices.items)) {
    if (item.isNone())
      continue;
    if (!item.isTensor())
      return makeError("indices must be tensors or None");
    if (result.position >= 0 &&
        result.position + result.count != (int64_t)position)
      return makeError("index tensors separated by a slice (`x[ids, :, "
                       "ids2]`) are not supported; index adjacent dims");
    if (result.position < 0)
      result.position = position;
    ++result.count;
    tensors.push_back(item.tensor);
  }
  if (tensors.empty())
    return makeError("indexing needs an index tensor");
  llvm::Expected<std::optional<ValidPrefix>> prefix =
      sharedIndexPrefix(emit, tensors);
  if (!prefix)
    return prefix.takeError();
  result.prefix = *prefix;
  if (result.position + result.count > (int64_t)shape.size())
    return makeError(llvm::formatv("too many indices for a tensor of rank {0}",
                                   shape.size()));
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t dim = result.position + i;
    if (tensorType(tensors[i]).getElementType().isInteger(1)) {
      if (tensors.size() > 1)
        return makeError("a boolean mask among several index tensors is not "
                         "supported");
      result.ids = tensors[i];
      return result;
    }
    llvm::Expected<Value> wrapped =
        wrapNegativeConstantIds(emit, tensors[i], shape[dim], dim);
    if (!wrapped)
      return wrapped.takeError();
    tensors[i] = *wrapped;
  }
  if (tensors.size() == 1) {
    result.ids = tensors.front();
    return result;
  }
  SmallVector<int64_t> common;
  for (Value ids : tensors) {
    llvm::Expected<SmallVector<int64_t>> together =
        broadcastShape(common, tensorType(ids).getShape());
    if (!together)
      return together.takeError();
    common = *together;
  }
  auto i64 = RankedTensorType::get(common, emit.builder.getI64Type());
  SmallVector<Value> checked;
  for (auto [i, ids] : llvm::enumerate(tensors)) {
    int64_t dim = result.position + i;
    llvm::Expected<Value> inRange = checkedIds(
        emit, x, emit.broadcastTo(emit.cast(ids, i64.getElementType()), common),
        shape[dim], /*lookedUpAsIs=*/false);
    if (!inRange)
      return inRange.takeError();
    checked.push_back(*inRange);
  }
  result.ids =
      rowMajorOffsets(emit, i64, shape.slice(result.position, result.count),
                      [&](int64_t d) { return checked[d]; });
  result.checked = true;
  return result;
}

/// `shape` with dims [position, position + count) merged into one.
static SmallVector<int64_t> mergeDims(ArrayRef<int64_t> shape, int64_t position,
                                      int64_t count) {
  SmallVector<int64_t> merged(shape.take_front(position));
  merged.push_back(ShapedType::getNumElements(shape.slice(position, count)));
  llvm::append_range(merged, shape.drop_front(position + count));
  return merged;
}

/// tensor[...] with one index tensor whose value is known (`k`, of
/// `indexShape`) at dim `dim` of `v`: position k, a static slice
/// broadcast to the index's shape.
static Value indexByKnownPosition(Emitter &emit, Value v, int64_t dim,
                                  int64_t k, ArrayRef<int64_t> indexShape) {
  ArrayRef<int64_t> shape = tensorType(v).getShape();
  SmallVector<int64_t> kept(shape.take_front(dim));
  SmallVector<int64_t> result(kept);
  llvm::append_range(result, indexShape);
  for (int64_t size : shape.drop_front(dim + 1)) {
    kept.push_back(size);
    result.push_back(size);
  }
  SmallVector<int64_t> withOnes(shape.take_front(dim));
  withOnes.append(indexShape.size(), 1);
  llvm::append_range(withOnes, shape.drop_front(dim + 1));
  Value row = emit.reshape(emit.slice(v, dim, k, k + 1, 1), withOnes);
  return emit.broadcastTo(row, result);
}

/// aten::index(x, indices): advanced indexing by integer tensors of adjacent
/// dims, after any number of full slices (`cos[position_ids]`, `x[:, ids]`,
/// `x[torch.arange(b), last]`): a gather along the dims merged
/// (indexTensors); one index tensor whose value is known at import time
/// takes a static slice.
static llvm::Expected<SmallVector<Value>>
nonzeroCoordinates(GraphImporter &importer, Value mask,
                   const std::string &origin);

/// The indices of tensor[...] (`node`'s input 1) with each boolean mask
/// replaced by the coordinates of its true elements, one index per dim it
/// covers (`x[mask]` is `x[torch.where(mask)]`): rows whose number depends
/// on the data, a valid prefix.
static llvm::Expected<ImportedValue>
maskIndicesAsCoordinates(GraphImporter &importer, Node *node) {
  ImportedValue indices = importer.input(node, 1);
  if (indices.kind != ImportedValue::Kind::List)
    return indices;
  std::vector<ImportedValue> items;
  for (const ImportedValue &item : indices.items) {
    if (!item.isTensor() ||
        !tensorType(item.tensor).getElementType().isInteger(1)) {
      items.push_back(item);
      continue;
    }
    llvm::Expected<SmallVector<Value>> coordinates = nonzeroCoordinates(
        importer, item.tensor, "the boolean mask of " + importer.opAt(node));
    if (!coordinates)
      return coordinates.takeError();
    for (Value coordinate : *coordinates)
      items.push_back(ImportedValue::ofTensor(coordinate));
  }
  return ImportedValue::ofList(std::move(items));
}

/// aten::masked_select(x, mask): the elements of x (broadcast with the
/// boolean mask) where the mask holds, in row-major order: a vector whose
/// length depends on the data, the mask's element count long with a valid
/// prefix (`x[mask]` of the flattened pair).
Outputs convertMaskedSelect(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<Value> mask = importer.tensorInput(node, 1);
  if (llvm::Error error =
          requireAll("masked_select needs a tensor and a mask", x, mask))
    return std::move(error);
  if (!tensorType(*mask).getElementType().isInteger(1))
    return makeError("masked_select expects a boolean mask");
  llvm::Expected<SmallVector<int64_t>> shape =
      broadcastShape(tensorType(*x).getShape(), tensorType(*mask).getShape());
  if (!shape)
    return shape.takeError();
  Emitter emit(importer);
  int64_t n = ShapedType::getNumElements(*shape);
  llvm::Expected<SmallVector<Value>> coordinates = nonzeroCoordinates(
      importer, emit.reshape(emit.broadcastTo(*mask, *shape), {n}),
      importer.opAt(node));
  if (!coordinates)
    return coordinates.takeError();
  Value positions = coordinates->front();
  ValidPrefix prefix = *importer.validPrefix(positions);
  Outputs elements = gatherAlong(
      importer, emit.reshape(emit.broadcastTo(*x, *shape), {n}), 0, positions);
  if (!elements)
    return elements.takeError();
  importer.setValidPrefix((*elements)[0].tensor, prefix);
  return elements;
}

Outputs convertIndex(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  if (!shape)
    return shape.takeError();
  Emitter emit(importer);
  llvm::Expected<ImportedValue> indexList =
      maskIndicesAsCoordinates(importer, node);
  if (!indexList)
    return indexList.takeError();
  const ImportedValue &indices = *indexList;
  if (indices.kind == ImportedValue::Kind::List) {
    SmallVector<size_t> given;
    for (auto [position, item] : llvm::enumerate(indices.items))
      if (!item.isNone())
        given.push_back(position);
    if (given.size() == 1 && given.front() < shape->size() &&
        indices.items[given.front()].isTensor()) {
      Value ids = indices.items[given.front()].tensor;
      int64_t dim = given.front(), size = (*shape)[dim];
      std::optional<int64_t> k = knownSplatInteger(ids);
      if (k && *k >= -size && *k < size)
        return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
          if (const ValidPrefix *prefix = importer.validPrefix(v))
            return unsupportedValidPrefixReader("tensor[...] of", *prefix);
          return indexByKnownPosition(emit, v, dim, *k < 0 ? *k + size : *k,
                                      tensorType(ids).getShape());
        });
    }
  }
  llvm::Expected<IndexTensors> index =
      indexTensors(emit, x.tensor, *shape, indices);
  if (!index)
    return index.takeError();
  SmallVector<int64_t> merged =
      mergeDims(*shape, index->position, index->count);
  return mapParts(x, [&](Value v) -> llvm::Expected<Value> {
    if (const ValidPrefix *prefix = importer.validPrefix(v))
      return unsupportedValidPrefixReader("tensor[...] of", *prefix);
    // Integers (labels[mask], token ids) are gathered in f64: exact below
    // 2^53.
    Type element = tensorType(v).getElementType();
    Value table = emit.reshape(v, merged);
    if (!isa<FloatType>(element))
      table = emit.cast(table, emit.f64());
    llvm::Expected<Value> rows =
        gatherAlong(emit, table, index->position, index->ids, index->checked);
    if (!rows)
      return rows;
    Value result = emit.cast(*rows, element);
    if (index->prefix)
      importer.setValidPrefix(result, index->prefix->at(index->position));
    return result;
  });
}

/// aten::index_select(x, dim, index): x gathered along dim by a 1-d index.
Outputs convertIndexSelect(GraphImporter &importer, Node *node) {
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<Value> ids = importer.tensorInput(node, 2);
  if (!ids)
    return ids.takeError();
  if (tensorType(*ids).getRank() > 1)
    return makeError("index_select needs a 1-d index");
  Emitter emit(importer);
  Value flat = emit.reshape(*ids, {tensorType(*ids).getNumElements()});
  const ValidPrefix *prefix = importer.validPrefix(*ids);
  if (prefix)
    flat = emit.select(validMask(emit, *prefix, tensorType(flat).getShape()),
                       flat, emit.splat(tensorType(flat), 0.0));
  return mapParts(
      importer.input(node, 0), [&](Value v) -> llvm::Expected<Value> {
        if (const ValidPrefix *read = importer.validPrefix(v))
          return unsupportedValidPrefixReader("index_select of", *read);
        llvm::Expected<Value> rows = gatherAlong(emit, v, td->dim, flat);
        if (rows && prefix)
          importer.setValidPrefix(*rows, prefix->at(td->dim));
        return rows;
      });
}

/// How a scatter combines the values it writes to one element: PyTorch's
/// `reduce` of scatter_reduce (sum, mean, amax, amin), `include_self`
/// whether the element's old value takes part. scatter is {Mean, false}
/// (see scatterRows), scatter_add and index_add {Sum, true}.
struct ScatterCombine {
  enum Reduce { Sum, Mean, Max, Min } reduce;
  bool includeSelf;
};

/// The rows a scatter writes: `values` ([ids..., width]), or `uniform`
/// (0-d) in every element (index_fill, scatter of a number).
struct ScatterValues {
  Value values;
  Value uniform;
};

/// `base` (of any shape, in the scatter's compute type) combined with what a
/// scatter writes to it, as `combine` says: `sums()` (base's shape: the sum
/// of the values written to each element) and `counts()` (f32, broadcast
/// to base's shape: how many values each element gets). An element several
/// values write without a reduction (torch.scatter, `x[ids] = v`) gets
/// their mean: PyTorch leaves which one wins unspecified; a uniform value
/// (0-d `uniform`) is written as it is.
static Value combineScatter(Emitter &emit, Value base, Value uniform,
                            function_ref<Value()> sums,
                            function_ref<Value()> counts,
                            ScatterCombine combine) {
  RankedTensorType type = tensorType(base);
  Type computed = type.getElementType();
  if (combine.reduce == ScatterCombine::Sum && combine.includeSelf)
    return emit.binary<AddOp>(base, sums());
  Value count = counts();
  RankedTensorType countType = tensorType(count);
  Value isWritten = emit.compare("gt", count, emit.splat(countType, 0.0));
  Value combined;
  if (combine.reduce == ScatterCombine::Mean && !combine.includeSelf &&
      uniform) {
    combined = emit.broadcastTo(emit.cast(uniform, computed), type.getShape());
  } else if (combine.reduce == ScatterCombine::Sum) {
    combined = sums();
  } else {
    combined = sums();
    if (combine.includeSelf) {
      combined = emit.binary<AddOp>(base, combined);
      count = emit.binary<AddOp>(count, emit.splat(countType, 1.0));
    } else {
      // Elements nobody writes divide by 1, not 0: their quotient is
      // unused, but a 0/0 would send NaN through the select's zero
      // cotangent.
      count = emit.select(isWritten, count, emit.splat(countType, 1.0));
    }
    combined = emit.binary<DivOp>(
        combined,
        emit.broadcastTo(emit.cast(count, computed), type.getShape()));
  }
  return emit.select(emit.broadcastTo(isWritten, type.getShape()), combined,
                     base);
}

/// `table` ([rows, width]) with `written` scattered to rows `ids`, which
/// must lie in [0, rows) (checkedIds): the sum of a row's values is
/// titan.embedding_grad (a lookup's transpose, so the cotangent of the
/// values is the result's cotangent looked up at `ids`), combined with the
/// row by combineScatter. Integer tensors are scattered in f64.
static Value scatterRows(Emitter &emit, Value table, Value ids,
                         ScatterValues written, ScatterCombine combine) {
  RankedTensorType type = tensorType(table);
  Type element = type.getElementType();
  Type computed = exactFloatType(emit, element);
  auto sums = [&]() -> Value {
    SmallVector<int64_t> rows(tensorType(ids).getShape());
    rows.push_back(type.getDimSize(1));
    Value values =
        written.values
            ? emit.cast(written.values, computed)
            : emit.broadcastTo(emit.cast(written.uniform, computed), rows);
    return EmbeddingGradOp::create(emit.builder, emit.loc, type.clone(computed),
                                   ids, values);
  };
  // How many ids write each row (in f32: exact, unlike bf16, to 2^24).
  auto counts = [&]() -> Value {
    SmallVector<int64_t> perId(tensorType(ids).getShape());
    perId.push_back(1);
    Type f32 = emit.builder.getF32Type();
    return EmbeddingGradOp::create(
        emit.builder, emit.loc,
        RankedTensorType::get({type.getDimSize(0), 1}, f32), ids,
        emit.splat(RankedTensorType::get(perId, f32), 1.0));
  };
  return emit.cast(combineScatter(emit, emit.cast(table, computed),
                                  written.uniform, sums, counts, combine),
                   element);
}

/// `self` with `written` (of index's shape) scattered along `dim` at
/// `index` (each in [0, self.size(dim))) one element at a time, through
/// oneHotAlong: the sums and counts of the values are reductions over the
/// index's `dim` of selects, padded with zeros where the index is shorter
/// than self, combined by combineScatter.
static Value scatterOneHot(Emitter &emit, Value self, int64_t dim, Value index,
                           ScatterValues written, ScatterCombine combine) {
  RankedTensorType type = tensorType(self);
  Type element = type.getElementType();
  Type computed = exactFloatType(emit, element);
  int64_t size = type.getDimSize(dim);
  Value hot = oneHotAlong(emit, index, dim, size);
  ArrayRef<int64_t> hotShape = tensorType(hot).getShape();
  // Reduced over the index's `dim`, then padded to self's other dims.
  auto sumOf = [&](Value perPosition) -> Value {
    Value reduced = emit.reduceSum(perPosition, {dim}, /*keepdim=*/false);
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != dim)
        reduced = emit.padTo(reduced, d, type.getDimSize(d));
    return reduced;
  };
  auto sums = [&]() -> Value {
    SmallVector<int64_t> withAxis(tensorType(index).getShape());
    withAxis.insert(withAxis.begin() + dim + 1, 1);
    Value values =
        written.values
            ? emit.broadcastTo(
                  emit.reshape(emit.cast(written.values, computed), withAxis),
                  hotShape)
            : emit.broadcastTo(emit.cast(written.uniform, computed), hotShape);
    return sumOf(emit.select(hot, values, emit.splat(tensorType(values), 0.0)));
  };
  auto counts = [&]() -> Value {
    auto f32 = RankedTensorType::get(hotShape, emit.builder.getF32Type());
    return sumOf(emit.select(hot, emit.splat(f32, 1.0), emit.splat(f32, 0.0)));
  };
  if (combine.reduce == ScatterCombine::Max ||
      combine.reduce == ScatterCombine::Min) {
    // The largest (smallest: of the negations) value written to each
    // position, with self's where include_self; self where none is.
    bool largest = combine.reduce == ScatterCombine::Max;
    auto oriented = [&](Value v) { return largest ? v : emit.unary<NegOp>(v); };
    SmallVector<int64_t> withAxis(tensorType(index).getShape());
    withAxis.insert(withAxis.begin() + dim + 1, 1);
    Value values = emit.broadcastTo(
        written.values
            ? emit.reshape(emit.cast(written.values, computed), withAxis)
            : emit.cast(written.uniform, computed),
        hotShape);
    RankedTensorType valuesType = tensorType(values);
    SmallVector<int64_t> reducedShape(hotShape);
    reducedShape.erase(reducedShape.begin() + dim);
    Value extreme = ReduceMaxOp::create(
        emit.builder, emit.loc, valuesType.clone(reducedShape),
        emit.select(
            hot, oriented(values),
            emit.splat(valuesType, -std::numeric_limits<double>::infinity())),
        emit.builder.getDenseI64ArrayAttr({dim}), /*keepdim=*/false);
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != dim)
        extreme = emit.padTo(extreme, d, type.getDimSize(d));
    Value base = oriented(emit.cast(self, computed));
    if (combine.includeSelf)
      extreme = emit.binary<MaxOp>(extreme, base);
    Value count = counts();
    Value isWritten = emit.compare("gt", count, emit.splatLike(count, 0.0));
    return emit.cast(oriented(emit.select(isWritten, extreme, base)), element);
  }
  return emit.cast(combineScatter(emit, emit.cast(self, computed),
                                  written.uniform, sums, counts, combine),
                   element);
}

/// `x` with `dim` moved to the front and the other dims flattened:
/// [x.size(dim), the product of the others], and the permutation used.
static std::pair<Value, SmallVector<int64_t>> rowsAlong(Emitter &emit, Value x,
                                                        int64_t dim) {
  RankedTensorType type = tensorType(x);
  SmallVector<int64_t> order{dim};
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != dim)
      order.push_back(d);
  Value front = emit.transpose(x, order);
  int64_t size = type.getDimSize(dim);
  return {emit.reshape(front, {size, type.getNumElements() /
                                         std::max<int64_t>(size, 1)}),
          order};
}

/// The inverse of rowsAlong: `rows` ([x.size(dim), rest]) back in the
/// shape and dim order of `like`.
static Value unrowsAlong(Emitter &emit, Value rows, Value like,
                         ArrayRef<int64_t> order) {
  RankedTensorType type = tensorType(like);
  SmallVector<int64_t> front;
  for (int64_t d : order)
    front.push_back(type.getDimSize(d));
  SmallVector<int64_t> inverse(order.size());
  for (auto [position, d] : llvm::enumerate(order))
    inverse[d] = position;
  return emit.transpose(emit.reshape(rows, front), inverse);
}

/// Scatters `written` (its values of ids' shape followed by x's dims other
/// than `dim`, in their order: a row of x per id) into x along `dim` at
/// `ids` (each in [0, x.size(dim))): index_add, index_fill and `x[:, ids] =
/// v`, the transpose of gatherAlong.
/// Ids (1-d) with a valid prefix (the indices torch.where(condition) found)
/// write only their meaningful entries: the others write into one more row,
/// dropped after.
static llvm::Expected<Value> scatterAlong(Emitter &emit, Value x, int64_t dim,
                                          Value ids, ScatterValues written,
                                          ScatterCombine combine,
                                          bool idsChecked = false,
                                          const ValidPrefix *prefix = nullptr) {
  int64_t size = tensorType(x).getDimSize(dim);
  if (prefix) {
    RankedTensorType idsType = tensorType(ids);
    Value valid = validMask(emit, *prefix, idsType.getShape());
    Value inRange = emit.select(valid, ids, emit.splat(idsType, 0.0));
    llvm::Expected<Value> checked =
        idsChecked ? inRange
                   : checkedIds(emit, x, inRange, size, /*lookedUpAsIs=*/false);
    if (!checked)
      return checked.takeError();
    Value dropped = emit.select(valid, *checked,
                                emit.splat(idsType, static_cast<double>(size)));
    llvm::Expected<Value> scattered =
        scatterAlong(emit, emit.padTo(x, dim, size + 1), dim, dropped, written,
                     combine, /*idsChecked=*/true);
    if (!scattered)
      return scattered.takeError();
    return emit.slice(*scattered, dim, 0, size, 1);
  }
  llvm::Expected<Value> checked =
      idsChecked ? ids : checkedIds(emit, x, ids, size, /*lookedUpAsIs=*/true);
  if (!checked)
    return checked.takeError();
  auto [table, order] = rowsAlong(emit, x, dim);
  if (written.values) {
    SmallVector<int64_t> rows(tensorType(ids).getShape());
    rows.push_back(tensorType(table).getDimSize(1));
    written.values = emit.reshape(written.values, rows);
  }
  Value scattered = scatterRows(emit, table, *checked, written, combine);
  return unrowsAlong(emit, scattered, x, order);
}

/// The positions of the nonzero elements of input 0 of `node` in row-major
/// order, as torch.nonzero finds them: per dim an i64 tensor of their
/// coordinates along it. Their number depends on the data: each tensor has
/// the largest length (every element nonzero) and a valid prefix of the
/// number found (ValidPrefix), 0 past it. Each nonzero element's rank among
/// them (a running count) is the slot its flat position is scattered to;
/// the others' slot is one past the end, dropped.
static llvm::Expected<SmallVector<Value>>
nonzeroCoordinates(GraphImporter &importer, Value mask,
                   const std::string &origin) {
  if (const ValidPrefix *prefix = importer.validPrefix(mask))
    return unsupportedValidPrefixReader(origin + " of", *prefix);
  auto known = importer.getMaskCoordinates().find(mask);
  if (known != importer.getMaskCoordinates().end())
    return known->second;
  RankedTensorType type = tensorType(mask);
  int64_t n = type.getNumElements();
  if (type.getRank() == 0 || n == 0)
    return makeError("the nonzero positions of a tensor without elements or "
                     "dims are not supported");
  constexpr int64_t kExactCounts = int64_t(1) << 24;
  if (n > kExactCounts)
    return makeError(llvm::formatv(
        "the nonzero positions of {0} elements: titan counts them in "
        "float32, exact up to {1}; look for them in parts",
        n, kExactCounts));
  Emitter emit(importer);
  Value nonzero = type.getElementType().isInteger(1)
                      ? mask
                      : emit.compare("ne", mask, emit.splat(type, 0.0));
  Value flat = emit.reshape(nonzero, {n});
  Value ones = emit.cast(flat, emit.builder.getF32Type());
  auto positions = RankedTensorType::get({n}, emit.builder.getI64Type());
  Value ranks = emit.cast(
      emit.reshape(rowRunningSums(emit, emit.reshape(ones, {1, n})), {n}),
      positions.getElementType());
  Value slots =
      emit.select(flat, emit.binary<SubOp>(ranks, emit.splat(positions, 1.0)),
                  emit.splat(positions, static_cast<double>(n)));
  auto tableType =
      RankedTensorType::get({n + 1, 1}, positions.getElementType());
  Value table =
      scatterRows(emit, emit.splat(tableType, 0.0), slots,
                  {emit.reshape(emit.iota(positions, 0), {n, 1}), Value()},
                  ScatterCombine{ScatterCombine::Sum, true});
  Value found = emit.reshape(emit.slice(table, 0, 0, n, 1), {n});
  ValidPrefix prefix{
      0, emit.cast(emit.sumAll(ones), positions.getElementType()), n, origin};
  if (type.getRank() == 1)
    prefix.condition = flat;
  SmallVector<Value> coordinates;
  int64_t stride = n;
  for (auto [d, size] : llvm::enumerate(type.getShape())) {
    stride /= size;
    Value coordinate = found;
    if (stride != 1)
      coordinate = RoundedDivOp::create(
          emit.builder, emit.loc, positions, coordinate,
          emit.splat(positions, static_cast<double>(stride)),
          /*truncate=*/false);
    if (d != 0)
      coordinate =
          RemainderOp::create(emit.builder, emit.loc, positions, coordinate,
                              emit.splat(positions, static_cast<double>(size)),
                              /*truncate=*/false);
    importer.setValidPrefix(coordinate, prefix);
    coordinates.push_back(coordinate);
  }
  importer.getMaskCoordinates()[mask] = coordinates;
  return coordinates;
}

/// nonzeroCoordinates of `node`'s input 0.
static llvm::Expected<SmallVector<Value>>
nonzeroCoordinates(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> mask = importer.tensorInput(node, 0);
  if (!mask)
    return mask.takeError();
  return nonzeroCoordinates(importer, *mask, importer.opAt(node));
}

/// aten::nonzero_numpy(x) and aten::where(x) (torch.nonzero(x,
/// as_tuple=True), torch.where(x)): the coordinates of the nonzero elements
/// along each dim (nonzeroCoordinates).
Outputs convertNonzeroTuple(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> coordinates =
      nonzeroCoordinates(importer, node);
  if (!coordinates)
    return coordinates.takeError();
  std::vector<ImportedValue> items;
  for (Value coordinate : *coordinates)
    items.push_back(ImportedValue::ofTensor(coordinate));
  return single(ImportedValue::ofList(std::move(items)));
}

/// aten::nonzero(x), aten::argwhere(x): [count, rank] coordinates of the
/// nonzero elements (nonzeroCoordinates), one row each.
Outputs convertNonzero(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> coordinates =
      nonzeroCoordinates(importer, node);
  if (!coordinates)
    return coordinates.takeError();
  Emitter emit(importer);
  const ValidPrefix prefix = *importer.validPrefix(coordinates->front());
  SmallVector<Value> columns;
  for (Value coordinate : *coordinates)
    columns.push_back(emit.reshape(coordinate, {prefix.length, 1}));
  Value rows = emit.concat(columns, 1);
  importer.setValidPrefix(rows, prefix);
  return single(rows);
}

/// aten::nonzero_static(x, *, size, fill_value=-1) (PyTorch 2.1): the
/// first `size` rows of nonzero(x), then rows of fill_value up to `size`: a
/// static shape [size, rank] whatever the data.
Outputs convertNonzeroStatic(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> coordinates =
      nonzeroCoordinates(importer, node);
  if (!coordinates)
    return coordinates.takeError();
  llvm::Expected<int64_t> sizeInput = importer.intInput(node, 1);
  if (!sizeInput)
    return sizeInput.takeError();
  int64_t size = *sizeInput;
  if (size < 1)
    return makeError(llvm::formatv(
        "nonzero_static of size {0}: titan returns at least one row", size));
  double fill = static_cast<double>(intOr(importer, node, "fill_value", -1));
  Emitter emit(importer);
  const ValidPrefix prefix = *importer.validPrefix(coordinates->front());
  int64_t rank = coordinates->size();
  SmallVector<Value> columns;
  for (Value coordinate : *coordinates)
    columns.push_back(emit.reshape(coordinate, {prefix.length, 1}));
  Value rows = emit.concat(columns, 1);
  RankedTensorType rowsType = tensorType(rows);
  rows = emit.select(validMask(emit, prefix, rowsType.getShape()), rows,
                     emit.splat(rowsType, fill));
  if (size <= prefix.length)
    return single(emit.slice(rows, 0, 0, size, 1));
  auto padding = RankedTensorType::get({size - prefix.length, rank},
                                       rowsType.getElementType());
  return single(emit.concat({rows, emit.splat(padding, fill)}, 0));
}

/// `self` with `source` scattered along `dim` at `index` (of self's rank),
/// combined as `combine` says (the body of convertScatter; `op` names it in
/// errors).
static Outputs scatterAlong(Emitter &emit, StringRef op, Value self,
                            int64_t dim, Value index, ScatterValues source,
                            ScatterCombine combine) {
  RankedTensorType selfType = tensorType(self);
  RankedTensorType indexType = tensorType(index);
  ArrayRef<int64_t> shape = selfType.getShape();
  int64_t rank = selfType.getRank();
  // The values, restricted to the index's extent along every dim.
  for (int64_t d = 0; d < rank && source.values; ++d) {
    int64_t size = indexType.getDimSize(d);
    int64_t available = tensorType(source.values).getDimSize(d);
    if ((d != dim && size > shape[d]) || size > available)
      return makeError(llvm::formatv(
          "the index of {0} has size {1} along dim {2}, more than the "
          "tensor's {3} or the source's {4}",
          op, size, d, shape[d], available));
    if (size < available)
      source.values = emit.slice(source.values, d, 0, size, 1);
  }
  auto i64 = emit.builder.getI64Type();
  int64_t size = shape[dim];
  // amax / amin: every element of the index against every position of the
  // dim (one-hot).
  if (combine.reduce == ScatterCombine::Max ||
      combine.reduce == ScatterCombine::Min) {
    if (size > kMaxOneHotDim)
      return makeError(llvm::formatv(
          "{0} with reduce 'amax' or 'amin' along a dim of {1}: titan takes "
          "these extrema along dims of at most {2} (it compares every index "
          "with every position)",
          op, size, kMaxOneHotDim));
    llvm::Expected<Value> checkedIndex =
        checkedIds(emit, self, index, size, /*lookedUpAsIs=*/false);
    if (!checkedIndex)
      return checkedIndex.takeError();
    return single(
        scatterOneHot(emit, self, dim, *checkedIndex, source, combine));
  }
  // Whole rows: one id per row of the dims after `dim`.
  bool wholeRows = picksWholeRows(index, dim, shape);
  int64_t keptRank = wholeRows ? dim + 1 : rank;
  Value ids = leadingIds(emit, index, keptRank);
  ArrayRef<int64_t> idsShape = indexType.getShape().take_front(keptRank);
  // Ids straight into the table's rows are checked as lookups are; ids
  // offset by the leading dims' positions are checked against `dim` first.
  bool direct = keptRank == 1;
  llvm::Expected<Value> checked =
      checkedIds(emit, self, ids, size, /*lookedUpAsIs=*/direct);
  if (!checked)
    return checked.takeError();
  // Single elements along a short dim, with other dims beside: one-hot.
  if (!wholeRows && !direct && size <= kMaxOneHotDim)
    return single(scatterOneHot(emit, self, dim, *checked, source, combine));
  auto idsType = RankedTensorType::get(idsShape, i64);
  ArrayRef<int64_t> tableRows = shape.take_front(keptRank);
  Value rowIds = rowMajorOffsets(emit, idsType, tableRows, [&](int64_t d) {
    return d == dim ? *checked : emit.iota(idsType, d);
  });
  int64_t rowCount = ShapedType::getNumElements(tableRows);
  int64_t width = selfType.getNumElements() / std::max<int64_t>(rowCount, 1);
  if (source.values) {
    SmallVector<int64_t> valueRows(idsShape);
    valueRows.push_back(width);
    source.values = emit.reshape(source.values, valueRows);
  }
  Value scattered = scatterRows(emit, emit.reshape(self, {rowCount, width}),
                                rowIds, source, combine);
  return single(emit.reshape(scattered, selfType.getShape()));
}

/// aten::scatter / scatter_add / scatter_reduce(self, dim, index, src or a
/// number): `out[..., index[i..., j, ...], ...] = src[i..., j, ...]` (added
/// or reduced), for every position of the index, whose dims other than
/// `dim` may be shorter than self's and src's. An index that is the same
/// along every dim after `dim` scatters whole rows (MoE's
/// `out.scatter_add(0, ids[:, None].expand(-1, d), y)`), any other one
/// element at a time: through a one-hot comparison along a dim of at most
/// kMaxOneHotDim (`gates.scatter(-1, topk_ids, topk_weights)`), else into
/// the tensor viewed as a column.
Outputs convertScatter(GraphImporter &importer, Node *node,
                       ScatterCombine combine) {
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<Value> self = importer.tensorInput(node, 0);
  if (!self)
    return self.takeError();
  llvm::Expected<Value> index = importer.tensorInput(node, 2);
  if (!index)
    return index.takeError();
  StringRef op = node->kind().toUnqualString();
  if (const ImportedValue *reduce = importer.namedInput(node, "reduce")) {
    StringRef name = reduce->text;
    if (name == "add" || name == "sum")
      combine.reduce = ScatterCombine::Sum;
    else if (name == "mean")
      combine.reduce = ScatterCombine::Mean;
    else if (name == "amax")
      combine.reduce = ScatterCombine::Max;
    else if (name == "amin")
      combine.reduce = ScatterCombine::Min;
    else
      return makeError(llvm::formatv(
          "{0} with reduce '{1}' is not supported (titan scatters with "
          "'sum', 'add', 'mean', 'amax' and 'amin')",
          op, name));
    combine.includeSelf = true;
    if (const ImportedValue *include =
            importer.namedInput(node, "include_self"))
      combine.includeSelf = include->intValue != 0;
  }
  RankedTensorType selfType = tensorType(*self);
  RankedTensorType indexType = tensorType(*index);
  int64_t rank = selfType.getRank();
  Type indexElement = indexType.getElementType();
  if (!isa<IntegerType>(indexElement) || indexElement.isInteger(1))
    return makeError(op + " needs an integer index tensor");
  if (indexType.getRank() != rank)
    return makeError(llvm::formatv(
        "the index of {0} has rank {1}, the tensor rank {2}; they must be "
        "equal",
        op, indexType.getRank(), rank));
  Emitter emit(importer);
  const ImportedValue &source = importer.input(node, 3);
  Value values, uniform;
  if (source.isNumber()) {
    uniform = importer.materialize(source);
  } else {
    llvm::Expected<Value> src = importer.tensorInput(node, 3);
    if (!src)
      return src.takeError();
    if (tensorType(*src).getRank() != rank)
      return makeError(llvm::formatv(
          "the source of {0} has rank {1}, the tensor rank {2}; they must "
          "be equal",
          op, tensorType(*src).getRank(), rank));
    values = *src;
  }
  return scatterAlong(emit, op, *self, td->dim, *index, {values, uniform},
                      combine);
}

/// aten::max_unpool2d(x, indices, output_size) and max_unpool3d(x,
/// indices, output_size, stride, padding) (nn.MaxUnpool1d/2d/3d): each
/// value of x put at the position its index gives in its plane of
/// output_size, zeros elsewhere; a scatter along the flattened planes. Two
/// windows that chose the same element (overlapping pools) write its one
/// value.
Outputs convertMaxUnpool(GraphImporter &importer, Node *node,
                         int64_t spatialDims) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<Value> indices = importer.tensorInput(node, 1);
  llvm::Expected<std::vector<int64_t>> outputSize =
      importer.intListInput(node, 2);
  StringRef op = node->kind().toUnqualString();
  if (llvm::Error error =
          requireAll(op + " needs a tensor, its indices and an output size "
                          "(a list of ints)",
                     x, indices, outputSize))
    return std::move(error);
  RankedTensorType type = tensorType(*x);
  int64_t rank = type.getRank();
  if (rank != spatialDims + 1 && rank != spatialDims + 2)
    return makeError(
        llvm::formatv("{0} needs a {1}-d or {2}-d input, not {3}-d", op,
                      spatialDims + 1, spatialDims + 2, rank));
  if (tensorType(*indices).getShape() != type.getShape() ||
      !isa<IntegerType>(tensorType(*indices).getElementType()))
    return makeError(llvm::formatv(
        "{0} needs integer indices of the input's shape (max_pool's "
        "return_indices)",
        op));
  if (static_cast<int64_t>(outputSize->size()) != spatialDims ||
      llvm::any_of(*outputSize, [](int64_t size) { return size <= 0; }))
    return makeError(llvm::formatv(
        "{0} needs an output size of {1} positive dims", op, spatialDims));
  ArrayRef<int64_t> leading = type.getShape().drop_back(spatialDims);
  int64_t planes = ShapedType::getNumElements(leading);
  int64_t inPlane =
      ShapedType::getNumElements(type.getShape().take_back(spatialDims));
  int64_t outPlane = ShapedType::getNumElements(*outputSize);
  Emitter emit(importer);
  auto planesType =
      RankedTensorType::get({planes, outPlane}, type.getElementType());
  Outputs scattered =
      scatterAlong(emit, op, emit.splat(planesType, 0.0), 1,
                   emit.reshape(*indices, {planes, inPlane}),
                   {emit.reshape(*x, {planes, inPlane}), Value()},
                   {ScatterCombine::Mean, false});
  if (!scattered)
    return scattered.takeError();
  SmallVector<int64_t> shape(leading);
  shape.append(outputSize->begin(), outputSize->end());
  return single(emit.reshape(scattered->front().tensor, shape));
}

/// The dim, tensor and 1-d integer index (as i64) of `op` (index_add,
/// index_fill: self, dim, index, ...); an error unless self has dims.
struct DimIndex {
  TensorDim td;
  Value self, ids;
  /// The valid prefix of the index (torch.where(condition)'s indices).
  const ValidPrefix *prefix = nullptr;
};
static llvm::Expected<DimIndex> dimIndexOf(GraphImporter &importer, Node *node,
                                           Emitter &emit, StringRef op) {
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  if (!td)
    return td.takeError();
  llvm::Expected<Value> self = importer.tensorInput(node, 0);
  llvm::Expected<Value> index = importer.tensorInput(node, 2);
  if (!self || !index)
    return makeError(op + " needs tensors self and index");
  RankedTensorType indexType = tensorType(*index);
  if (td->shape.empty() || indexType.getRank() > 1 ||
      !isa<IntegerType>(indexType.getElementType()))
    return makeError(op + " needs a 1-d integer index into a tensor of at "
                          "least one dim");
  if (const ValidPrefix *prefix = importer.validPrefix(*self))
    return unsupportedValidPrefixReader(op + " into", *prefix);
  Value ids = emit.cast(emit.reshape(*index, {indexType.getNumElements()}),
                        emit.builder.getI64Type());
  return DimIndex{*td, *self, ids, importer.validPrefix(*index)};
}

/// aten::index_add(self, dim, index, source, alpha=1): `out[..., index[i],
/// ...] += alpha * source[..., i, ...]` along `dim` (scatterAlong).
Outputs convertIndexAdd(GraphImporter &importer, Node *node) {
  Emitter emit(importer);
  llvm::Expected<DimIndex> indexed =
      dimIndexOf(importer, node, emit, "index_add");
  if (!indexed)
    return indexed.takeError();
  llvm::Expected<Value> source = importer.tensorInput(node, 3);
  if (!source)
    return source.takeError();
  const TensorDim *td = &indexed->td;
  int64_t count = tensorType(indexed->ids).getDimSize(0);
  SmallVector<int64_t> expected(td->shape);
  expected[td->dim] = count;
  ArrayRef<int64_t> sourceShape = tensorType(*source).getShape();
  if (sourceShape != ArrayRef<int64_t>(expected))
    return makeError(llvm::formatv(
        "index_add of {0} ids along dim {1} of a [{2}] tensor needs a "
        "source of shape [{3}], not [{4}]",
        count, td->dim, llvm::make_range(td->shape.begin(), td->shape.end()),
        llvm::make_range(expected.begin(), expected.end()),
        llvm::make_range(sourceShape.begin(), sourceShape.end())));
  if (const ValidPrefix *rows = importer.validPrefix(*source);
      rows && (!indexed->prefix || rows->count != indexed->prefix->count ||
               rows->dim != td->dim))
    return makeError(llvm::formatv(
        "index_add of rows whose number depends on the data (from {0}) "
        "takes the indices found with them as its index",
        rows->origin));
  Value values = *source;
  if (const ImportedValue *alpha = importer.namedInput(node, "alpha");
      alpha && alpha->isNumber() && alpha->asDouble() != 1.0)
    values = emit.scale(values, alpha->asDouble());
  // The source's rows along `dim`, in the order scatterAlong takes them.
  auto [rows, order] = rowsAlong(emit, values, td->dim);
  llvm::Expected<Value> result =
      scatterAlong(emit, indexed->self, td->dim, indexed->ids, {rows, Value()},
                   ScatterCombine{ScatterCombine::Sum, true},
                   /*idsChecked=*/false, indexed->prefix);
  if (!result)
    return result.takeError();
  return single(*result);
}

/// aten::index_fill(self, dim, index, value): `out[..., index[i], ...] =
/// value` along `dim` (scatterAlong).
Outputs convertIndexFill(GraphImporter &importer, Node *node) {
  Emitter emit(importer);
  llvm::Expected<DimIndex> indexed =
      dimIndexOf(importer, node, emit, "index_fill");
  if (!indexed)
    return indexed.takeError();
  llvm::Expected<Value> value = importer.tensorInput(node, 3);
  if (!value)
    return value.takeError();
  if (tensorType(*value).getNumElements() != 1)
    return makeError("index_fill needs a single value");
  llvm::Expected<Value> result =
      scatterAlong(emit, indexed->self, indexed->td.dim, indexed->ids,
                   {Value(), emit.reshape(*value, {})},
                   ScatterCombine{ScatterCombine::Mean, false},
                   /*idsChecked=*/false, indexed->prefix);
  if (!result)
    return result.takeError();
  return single(*result);
}

/// aten::index_put(self, indices, values, accumulate=False): `x[mask] = v`
/// with a boolean mask (a select, as masked_fill) and `x[:, ids] = v` (or
/// `+=` with accumulate) with one integer index tensor after any number of
/// full slices (scatterAlong).
Outputs convertIndexPut(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> self = importer.tensorInput(node, 0);
  if (!self)
    return self.takeError();
  llvm::Expected<Value> values = importer.tensorInput(node, 2);
  if (!values)
    return values.takeError();
  llvm::Expected<int64_t> accumulate = importer.intInput(node, 3);
  if (!accumulate)
    return accumulate.takeError();
  if (const ValidPrefix *prefix = importer.validPrefix(*self))
    return unsupportedValidPrefixReader("index_put into", *prefix);
  Emitter emit(importer);
  RankedTensorType selfType = tensorType(*self);
  llvm::Expected<IndexTensors> index =
      indexTensors(emit, *self, selfType.getShape(), importer.input(node, 1));
  if (!index)
    return index.takeError();
  int64_t position = index->position;
  // Values whose rows depend on the data go with the indices found with
  // them, at the dim they index.
  if (const ValidPrefix *rows = importer.validPrefix(*values);
      rows && (!index->prefix || rows->count != index->prefix->count ||
               rows->dim + selfType.getRank() - index->count + 1 -
                       tensorType(*values).getRank() !=
                   position))
    return makeError(llvm::formatv(
        "tensor[...] = values whose number of rows depends on the data "
        "(from {0}) takes the indices found with them, at the dim they "
        "index",
        rows->origin));
  Value ids = index->ids;
  // Several index tensors write into their dims merged.
  SmallVector<int64_t> mergedShape =
      mergeDims(selfType.getShape(), position, index->count);
  ArrayRef<int64_t> shape = mergedShape;
  Value target = emit.reshape(*self, shape);
  RankedTensorType idsType = tensorType(ids);
  int64_t idsRank = idsType.getRank();
  Value v = emit.cast(*values, selfType.getElementType());
  if (idsType.getElementType().isInteger(1)) {
    // x[mask] = v: v is broadcast over the elements the mask selects,
    // which must not depend on their number.
    if (position + idsRank > selfType.getRank() ||
        idsType.getShape() != shape.slice(position, idsRank))
      return makeError(llvm::formatv(
          "the mask of shape [{0}] does not match dims {1}.. of the [{2}] "
          "tensor it indexes",
          llvm::make_range(idsType.getShape().begin(),
                           idsType.getShape().end()),
          position, llvm::make_range(shape.begin(), shape.end())));
    ArrayRef<int64_t> rest = shape.drop_front(position + idsRank);
    ArrayRef<int64_t> vShape = tensorType(v).getShape();
    while (!vShape.empty() && vShape.front() == 1)
      vShape = vShape.drop_front();
    llvm::Expected<SmallVector<int64_t>> together =
        broadcastShape(vShape, rest);
    if (vShape.size() > rest.size() || !together ||
        ArrayRef<int64_t>(*together) != rest)
      return makeError(llvm::formatv(
          "x[mask] = v with v of shape [{0}]: titan takes a v that is the "
          "same for every selected element (a number, or of the shape "
          "[{1}] after the mask's dims); for elementwise values write "
          "torch.where(mask, v, x)",
          llvm::make_range(vShape.begin(), vShape.end()),
          llvm::make_range(rest.begin(), rest.end())));
    SmallVector<int64_t> maskShape(position, 1);
    llvm::append_range(maskShape, idsType.getShape());
    maskShape.append(rest.size(), 1);
    Value cond = emit.broadcastTo(emit.reshape(ids, maskShape), shape);
    Value fill = emit.broadcastTo(emit.reshape(v, vShape), shape);
    if (*accumulate)
      return single(emit.binary<AddOp>(
          *self, emit.select(cond, fill, emit.splatLike(fill, 0.0))));
    return single(emit.select(cond, fill, *self));
  }
  if (!isa<IntegerType>(idsType.getElementType()))
    return makeError("index tensors must hold integers or booleans");
  // v as the indexed view's shape: [before..., ids..., after...], then with
  // the ids' dims first, as scatterAlong takes rows.
  SmallVector<int64_t> viewShape(shape.take_front(position));
  llvm::append_range(viewShape, idsType.getShape());
  llvm::append_range(viewShape, shape.drop_front(position + 1));
  llvm::Expected<SmallVector<int64_t>> together =
      broadcastShape(tensorType(v).getShape(), viewShape);
  if (!together || ArrayRef<int64_t>(*together) != ArrayRef(viewShape))
    return makeError(llvm::formatv(
        "values of shape [{0}] cannot be written to the indexed [{1}]",
        llvm::make_range(tensorType(v).getShape().begin(),
                         tensorType(v).getShape().end()),
        llvm::make_range(viewShape.begin(), viewShape.end())));
  SmallVector<int64_t> idsFirst;
  for (int64_t d = 0; d < idsRank; ++d)
    idsFirst.push_back(position + d);
  for (int64_t d = 0; d < (int64_t)viewShape.size(); ++d)
    if (d < position || d >= position + idsRank)
      idsFirst.push_back(d);
  Value rows = emit.transpose(emit.broadcastTo(v, viewShape), idsFirst);
  llvm::Expected<Value> result =
      scatterAlong(emit, target, position,
                   emit.cast(ids, IntegerType::get(&importer.getContext(), 64)),
                   {rows, Value()},
                   *accumulate ? ScatterCombine{ScatterCombine::Sum, true}
                               : ScatterCombine{ScatterCombine::Mean, false},
                   index->checked, index->prefix ? &*index->prefix : nullptr);
  if (!result)
    return result.takeError();
  return single(emit.reshape(*result, selfType.getShape()));
}

Outputs convertGelu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  std::string approximate = "none";
  if (node->inputs().size() > 1)
    approximate = importer.input(node, 1).text;
  Emitter emit(importer);
  return single(GeluOp::create(emit.builder, emit.loc, x->getType(), *x,
                               emit.builder.getStringAttr(approximate)));
}

Outputs convertLogicalNot(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  return single(emit.compare("eq", *x, emit.splat(tensorType(*x), 0.0)));
}

/// How convertLogical combines two masks.
enum class MaskCombine { And, Or, Xor };

/// aten::__and__ / __or__ / __xor__ / bitwise_and / bitwise_or /
/// bitwise_xor / logical_and / logical_or / logical_xor: of Python bools
/// or ints, evaluated; of tensors, boolean masks combined with `select` (a
/// causal mask and a window, a padding mask). The logical forms first
/// compare other tensors with zero; bitwise operations on integer tensors
/// are refused.
Outputs convertLogical(GraphImporter &importer, Node *node,
                       MaskCombine combine) {
  const ImportedValue &a = importer.input(node, 0);
  const ImportedValue &b = importer.input(node, 1);
  auto evaluate = [&](int64_t x, int64_t y) {
    switch (combine) {
    case MaskCombine::And:
      return x & y;
    case MaskCombine::Or:
      return x | y;
    case MaskCombine::Xor:
      return x ^ y;
    }
    llvm_unreachable("unknown mask combination");
  };
  if (a.kind == ImportedValue::Kind::Bool &&
      b.kind == ImportedValue::Kind::Bool)
    return single(
        ImportedValue::ofBool(evaluate(a.intValue != 0, b.intValue != 0) != 0));
  if (a.kind == ImportedValue::Kind::Int && b.kind == ImportedValue::Kind::Int)
    return single(ImportedValue::ofInt(evaluate(a.intValue, b.intValue)));
  bool logical =
      StringRef(node->kind().toUnqualString()).starts_with("logical_");
  Emitter emit(importer);
  SmallVector<Value, 2> masks;
  for (size_t index : {0, 1}) {
    llvm::Expected<Value> v = importer.tensorInput(node, index);
    if (!v)
      return v.takeError();
    RankedTensorType type = tensorType(*v);
    if (type.getElementType().isInteger(1))
      masks.push_back(*v);
    else if (logical)
      masks.push_back(emit.compare("ne", *v, emit.splat(type, 0.0)));
    else
      return makeError("bitwise operations on integer tensors are not "
                       "supported (titan combines boolean masks)");
  }
  Value lhs = masks[0], rhs = masks[1];
  llvm::Expected<SmallVector<int64_t>> shape =
      broadcastShape(tensorType(lhs).getShape(), tensorType(rhs).getShape());
  if (!shape)
    return shape.takeError();
  Value p = emit.broadcastTo(lhs, *shape);
  Value q = emit.broadcastTo(rhs, *shape);
  Value no = emit.splat(tensorType(p), 0.0),
        yes = emit.splat(tensorType(p), 1.0);
  switch (combine) {
  case MaskCombine::And:
    return single(emit.select(p, q, no));
  case MaskCombine::Or:
    return single(emit.select(p, yes, q));
  case MaskCombine::Xor:
    return single(emit.select(p, emit.select(q, no, yes), q));
  }
  llvm_unreachable("unknown mask combination");
}

/// aten::float_power(x, exponent): x ** exponent in float64 (either may be
/// a number), by powOfTensors.
Outputs convertFloatPower(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> base = importer.tensorInput(node, 0);
  llvm::Expected<Value> exponent = importer.tensorInput(node, 1);
  if (llvm::Error error = requireAll(
          "float_power needs a base and an exponent (tensors or numbers)", base,
          exponent))
    return std::move(error);
  Emitter emit(importer);
  Value x = emit.cast(*base, emit.f64()), y = emit.cast(*exponent, emit.f64());
  if (llvm::Error error = unify(emit, x, y))
    return std::move(error);
  llvm::Expected<Value> power = powOfTensors(emit, x, y);
  if (!power)
    return power.takeError();
  return single(*power);
}

/// The most test elements isin compares each element with.
constexpr int64_t kMaxIsinTests = 4096;

/// aten::isin(elements, test_elements, assume_unique, invert): whether each
/// element equals one of the test elements (a tensor, flattened, or a
/// number; either side may be a number), compared in their promoted type
/// along a new dim and any'd over it; `invert` negates.
Outputs convertIsin(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> elements = importer.tensorInput(node, 0);
  llvm::Expected<Value> tests = importer.tensorInput(node, 1);
  if (llvm::Error error = requireAll(
          "isin needs elements and test elements (tensors or numbers)",
          elements, tests))
    return std::move(error);
  Emitter emit(importer);
  int64_t count = tensorType(*tests).getNumElements();
  if (count > kMaxIsinTests)
    return makeError(llvm::formatv(
        "isin of {0} test elements: titan compares each element with at "
        "most {1}; test a range (x >= a and x < b) or look the elements up "
        "in a table",
        count, kMaxIsinTests));
  Type element =
      promote(tensorType(*elements).getElementType(),
              tensorType(*tests).getElementType(), importer.getContext());
  Value x = emit.cast(*elements, element);
  Value t = emit.cast(emit.reshape(*tests, {count}), element);
  SmallVector<int64_t> shape(tensorType(x).getShape());
  SmallVector<int64_t> column(shape);
  column.push_back(1);
  SmallVector<int64_t> grid(shape);
  grid.push_back(count);
  SmallVector<int64_t> row(shape.size(), 1);
  row.push_back(count);
  Value equal =
      emit.compare("eq", emit.broadcastTo(emit.reshape(x, column), grid),
                   emit.broadcastTo(emit.reshape(t, row), grid));
  Value hits = emit.reduceSum(emit.cast(equal, emit.builder.getF32Type()),
                              {static_cast<int64_t>(shape.size())}, false);
  bool invert = flagOr(importer, node, "invert", false);
  return single(
      emit.compare(invert ? "eq" : "gt", hits, emit.splatLike(hits, 0.0)));
}

/// aten::__lshift__ / __rshift__ / bitwise_left_shift / bitwise_right_shift
/// of an integer tensor by a constant (hashed n-gram ids): times 2^s
/// (wrapping as torch's int64), or the floor of the quotient by 2^s
/// (arithmetic, as torch's shift of a negative number); of Python ints,
/// evaluated.
Outputs convertShift(GraphImporter &importer, Node *node, bool left) {
  const ImportedValue &a = importer.input(node, 0);
  const ImportedValue &b = importer.input(node, 1);
  if (a.kind == ImportedValue::Kind::Int &&
      b.kind == ImportedValue::Kind::Int) {
    if (b.intValue < 0 || b.intValue > 63)
      return makeError(llvm::formatv(
          "a shift by {0}: an int shifts by 0 to 63 bits", b.intValue));
    return single(ImportedValue::ofInt(
        left ? static_cast<int64_t>(static_cast<uint64_t>(a.intValue)
                                    << b.intValue)
             : a.intValue >> b.intValue));
  }
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  if (!isa<IntegerType>(type.getElementType()) ||
      type.getElementType().isInteger(1))
    return makeError("shifts need an integer tensor");
  if (b.kind != ImportedValue::Kind::Int)
    return makeError("titan shifts by a number known at import time, not "
                     "by a tensor");
  if (b.intValue < 0 || b.intValue > 62)
    return makeError(llvm::formatv(
        "a shift by {0}: titan shifts by 0 to 62 bits", b.intValue));
  Emitter emit(importer);
  Value power =
      splatNumber(emit, type, ImportedValue::ofInt(int64_t(1) << b.intValue));
  if (left)
    return single(emit.binary<MulOp>(*x, power));
  return single(RoundedDivOp::create(emit.builder, emit.loc, type, *x, power,
                                     /*truncate=*/false));
}

/// aten::bitwise_not (`~mask`) of a boolean mask, or of a Python int.
Outputs convertBitwiseNot(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  if (x.kind == ImportedValue::Kind::Int)
    return single(ImportedValue::ofInt(~x.intValue));
  if (!x.isTensor() || !tensorType(x.tensor).getElementType().isInteger(1))
    return makeError("bitwise operations on integer tensors are not "
                     "supported (titan combines boolean masks)");
  return convertLogicalNot(importer, node);
}

/// aten::clamp(x, min, max), clamp_min, clamp_max: bounds that are numbers
/// or tensors (None leaves a side open), as `max` and `min`.
Outputs convertClamp(GraphImporter &importer, Node *node, StringRef form) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  if (tensorType(*x).getElementType().isInteger(1))
    return makeError("clamp of a boolean tensor is not supported; cast it to "
                     "a number type first");
  const ImportedValue none = ImportedValue::none();
  const ImportedValue &lower =
      form == "clamp_max" ? none : importer.input(node, 1);
  const ImportedValue &upper = form == "clamp"       ? importer.input(node, 2)
                               : form == "clamp_max" ? importer.input(node, 1)
                                                     : none;
  Emitter emit(importer);
  Value result = *x;
  std::pair<const ImportedValue *, bool> bounds[] = {{&lower, true},
                                                     {&upper, false}};
  for (auto [bound, isLower] : bounds) {
    if (bound->isNone())
      continue;
    Value limit;
    if (bound->isNumber())
      limit = importer.materialize(*bound);
    else if (bound->isTensor())
      limit = bound->tensor;
    else
      return makeError("clamp bounds must be numbers or tensors");
    if (llvm::Error error = unify(emit, result, limit))
      return std::move(error);
    // Integers by comparison (negating the most negative one wraps).
    if (isLower)
      result = emit.binary<MaxOp>(result, limit);
    else if (isa<FloatType>(tensorType(result).getElementType()))
      result = emit.min(result, limit);
    else
      result = emit.select(emit.compare("le", result, limit), result, limit);
  }
  return single(result);
}

/// aten::abs: max(x, -x).
Outputs convertAbs(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  if (x.isNumber())
    return single(x.kind == ImportedValue::Kind::Float
                      ? ImportedValue::ofFloat(std::fabs(x.floatValue))
                      : ImportedValue::ofInt(std::llabs(x.intValue)));
  Emitter emit(importer);
  // A complex tensor's magnitude (a spectrum's, torch.fft.rfft(x).abs()).
  if (x.isComplex())
    return single(hypotOf(emit, x.tensor, x.imag));
  llvm::Expected<Value> v = importer.tensorInput(node, 0);
  if (!v)
    return v.takeError();
  if (tensorType(*v).getElementType().isInteger(1))
    return makeError("abs of a boolean tensor is not supported");
  // Of integers too (T5's relative positions): neg wraps as torch's does.
  return single(absolute(emit, *v));
}

/// aten::angle: a complex tensor's argument, atan2(imag, real); of a real
/// float tensor pi where it is negative, 0 elsewhere (NaN stays NaN).
Outputs convertAngle(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  Emitter emit(importer);
  if (x.isComplex())
    return single(atan2Of(emit, x.imag, x.tensor));
  llvm::Expected<Value> v = importer.tensorInput(node, 0);
  if (!v)
    return v.takeError();
  if (!isa<FloatType>(tensorType(*v).getElementType()))
    return makeError("angle of an integer or boolean tensor is not "
                     "supported; cast it to a float type first");
  Value zero = emit.splatLike(*v, 0.0);
  Value angle = emit.select(emit.compare("lt", *v, zero),
                            emit.splatLike(*v, 3.14159265358979323846), zero);
  return single(emit.select(emit.compare("ne", *v, *v), *v, angle));
}

/// aten::sign (sgn) of real tensors: 1, -1 or 0 (also for NaN, as torch),
/// of the tensor's type; numbers at import time. The gradient is zero.
Outputs convertSign(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  if (x.isNumber()) {
    double v = x.asDouble();
    double sign = v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0;
    return single(x.kind == ImportedValue::Kind::Float
                      ? ImportedValue::ofFloat(sign)
                      : ImportedValue::ofInt(int64_t(sign)));
  }
  llvm::Expected<Value> v = importer.tensorInput(node, 0);
  if (!v)
    return v.takeError();
  RankedTensorType type = tensorType(*v);
  if (type.getElementType().isInteger(1))
    return single(*v);
  Emitter emit(importer);
  Value zero = emit.splat(type, 0.0);
  return single(emit.select(
      emit.compare("gt", *v, zero), emit.splat(type, 1.0),
      emit.select(emit.compare("lt", *v, zero), emit.splat(type, -1.0), zero)));
}

/// How aten::floor, ceil, trunc (fix) and round round.
enum class Rounding { Floor, Ceil, Trunc, Round };

/// aten::floor, ceil, trunc and fix, and round (of `decimals` digits:
/// round(x * 10^d) / 10^d, as torch): floor and trunc are titan.rounded_div
/// by 1, ceil is -floor(-x), round is floor(x) plus 1 where the rest is
/// above 1/2, or exactly 1/2 and the floor odd (half to even, as torch);
/// infinities stay (the division would make them NaN). Integer tensors are
/// already whole; numbers are rounded at import time (floor and ceil of a
/// float give an int, as TorchScript's math.floor). The gradient is zero,
/// as torch's.
Outputs convertRounding(GraphImporter &importer, Node *node,
                        Rounding rounding) {
  const ImportedValue &x = importer.input(node, 0);
  if (x.isNumber()) {
    if (x.kind != ImportedValue::Kind::Float)
      return single(x);
    switch (rounding) {
    case Rounding::Floor:
      return single(ImportedValue::ofInt(int64_t(std::floor(x.floatValue))));
    case Rounding::Ceil:
      return single(ImportedValue::ofInt(int64_t(std::ceil(x.floatValue))));
    case Rounding::Trunc:
      return single(ImportedValue::ofFloat(std::trunc(x.floatValue)));
    case Rounding::Round:
      return single(ImportedValue::ofFloat(std::nearbyint(x.floatValue)));
    }
  }
  llvm::Expected<Value> v = importer.tensorInput(node, 0);
  if (!v)
    return v.takeError();
  RankedTensorType type = tensorType(*v);
  if (type.getElementType().isInteger(1))
    return makeError("rounding a boolean tensor is not supported");
  if (!isa<FloatType>(type.getElementType()))
    return single(*v);
  int64_t decimals = 0;
  if (const ImportedValue *arg = importer.namedInput(node, "decimals"))
    decimals = arg->intValue;
  Emitter emit(importer);
  Value one = emit.splat(type, 1.0);
  // As torch's kernel: x * 10^d, rounded, / 10^d for d > 0; x / 10^-d,
  // rounded, * 10^-d for d < 0.
  Value power = emit.splat(type, std::pow(10.0, std::abs(decimals)));
  Value input = *v;
  if (decimals > 0)
    input = emit.binary<MulOp>(input, power);
  else if (decimals < 0)
    input = emit.binary<DivOp>(input, power);
  Value rounded;
  switch (rounding) {
  case Rounding::Floor:
    rounded = floorOf(emit, input);
    break;
  case Rounding::Ceil:
    rounded = emit.unary<NegOp>(floorOf(emit, emit.unary<NegOp>(input)));
    break;
  case Rounding::Trunc:
    rounded = RoundedDivOp::create(emit.builder, emit.loc, type, input, one,
                                   /*truncate=*/true);
    break;
  case Rounding::Round:
    rounded = roundHalfEven(emit, input);
    break;
  }
  Value magnitude = emit.binary<MaxOp>(input, emit.unary<NegOp>(input));
  rounded =
      emit.select(emit.compare("eq", magnitude, emit.splat(type, INFINITY)),
                  input, rounded);
  if (decimals > 0)
    rounded = emit.binary<DivOp>(rounded, power);
  else if (decimals < 0)
    rounded = emit.binary<MulOp>(rounded, power);
  return single(rounded);
}

/// aten::isnan (x != x) and aten::isinf (|x| == inf): boolean masks, all
/// false for integer tensors.
Outputs convertFloatClass(GraphImporter &importer, Node *node, bool nan) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  RankedTensorType type = tensorType(*x);
  if (!isa<FloatType>(type.getElementType()))
    return single(emit.splat(type.clone(emit.builder.getI1Type()), 0.0));
  if (nan)
    return single(emit.compare("ne", *x, *x));
  Value magnitude = absolute(emit, *x);
  return single(emit.compare("eq", magnitude, emit.splat(type, INFINITY)));
}

/// aten::nan_to_num(x, nan=0, posinf=None, neginf=None): NaN and the
/// infinities replaced (by default the largest and lowest finite values
/// of x's type), by selects that pass x's gradient through elsewhere.
Outputs convertNanToNum(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  auto floatType = dyn_cast<FloatType>(type.getElementType());
  if (!floatType)
    return single(*x);
  double largest =
      APFloat::getLargest(floatType.getFloatSemantics()).convertToDouble();
  Emitter emit(importer);
  auto replacement = [&](StringRef name, double fallback) {
    const ImportedValue *value = importer.namedInput(node, name);
    return emit.splat(type, value && value->isNumber() ? value->asDouble()
                                                       : fallback);
  };
  Value result =
      emit.select(emit.compare("ne", *x, *x), replacement("nan", 0.0), *x);
  result = emit.select(emit.compare("eq", *x, emit.splat(type, INFINITY)),
                       replacement("posinf", largest), result);
  return single(emit.select(emit.compare("eq", *x, emit.splat(type, -INFINITY)),
                            replacement("neginf", -largest), result));
}

/// aten::flip(x, dims): x read backwards along each of dims (a lookup of
/// the reversed positions, gatherAlong).
llvm::Expected<Value> reversedAlong(Emitter &emit, Value x, int64_t dim) {
  int64_t n = tensorType(x).getDimSize(dim);
  SmallVector<int64_t> reversed;
  for (int64_t i = n - 1; i >= 0; --i)
    reversed.push_back(i);
  Value ids = ConstantOp::create(
      emit.builder, emit.loc,
      DenseIntElementsAttr::get(
          RankedTensorType::get({n}, emit.builder.getI64Type()),
          ArrayRef<int64_t>(reversed)));
  return gatherAlong(emit, x, dim, ids);
}

Outputs convertFlip(GraphImporter &importer, Node *node) {
  llvm::Expected<std::vector<int64_t>> dims = importer.intListInput(node, 1);
  if (!dims)
    return dims.takeError();
  Emitter emit(importer);
  return mapParts(
      importer.input(node, 0), [&](Value x) -> llvm::Expected<Value> {
        Value flipped = x;
        for (int64_t rawDim : *dims) {
          llvm::Expected<int64_t> dim =
              normalizeDim(rawDim, tensorType(x).getRank());
          if (!dim)
            return dim.takeError();
          llvm::Expected<Value> read = reversedAlong(emit, flipped, *dim);
          if (!read)
            return read.takeError();
          flipped = *read;
        }
        return flipped;
      });
}

/// Where element (i, j) of a [rows, columns] matrix is on `diagonal` (j - i
/// = diagonal, above the main one where positive): i1 [rows, columns].
static Value onDiagonal(Emitter &emit, int64_t rows, int64_t columns,
                        int64_t diagonal) {
  auto i64 = RankedTensorType::get({rows, columns}, emit.builder.getI64Type());
  return emit.compare("eq",
                      emit.binary<SubOp>(emit.iota(i64, 1), emit.iota(i64, 0)),
                      emit.splat(i64, static_cast<double>(diagonal)));
}

/// The elements on `diagonal` of the matrices in the last two dims of `x`
/// ([..., rows, columns] -> [..., length]): each row's element on it (the
/// others selected away, a sum), then the rows that have one; an error
/// where it is empty.
static llvm::Expected<Value> diagonalOf(Emitter &emit, Value x,
                                        int64_t diagonal) {
  RankedTensorType type = tensorType(x);
  int64_t rank = type.getRank();
  int64_t rows = type.getDimSize(rank - 2), columns = type.getDimSize(rank - 1);
  int64_t length =
      std::max<int64_t>(0, diagonal >= 0 ? std::min(rows, columns - diagonal)
                                         : std::min(rows + diagonal, columns));
  if (length == 0)
    return makeError(llvm::formatv("diagonal {0} of a {1}x{2} matrix is empty",
                                   diagonal, rows, columns));
  SmallVector<int64_t> maskShape(rank - 2, 1);
  maskShape.append({rows, columns});
  Value mask = emit.broadcastTo(
      emit.reshape(onDiagonal(emit, rows, columns, diagonal), maskShape),
      type.getShape());
  Value picked = emit.reduceSum(emit.select(mask, x, emit.splatLike(x, 0.0)),
                                {rank - 1}, /*keepdim=*/false);
  int64_t first = diagonal >= 0 ? 0 : -diagonal;
  return emit.slice(picked, rank - 2, first, first + length, 1);
}

/// aten::diag(x, diagonal=0): the matrix with vector x on the diagonal, or
/// the diagonal of matrix x (diagonalOf).
Outputs convertDiag(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  int64_t diagonal = 0;
  if (node->inputs().size() > 1) {
    llvm::Expected<int64_t> given = importer.intInput(node, 1);
    if (!given)
      return given.takeError();
    diagonal = *given;
  }
  RankedTensorType type = tensorType(*x);
  Emitter emit(importer);
  if (type.getRank() == 1) {
    int64_t n = type.getDimSize(0) + std::abs(diagonal);
    // Element (i, i + diagonal) is x[i] on or above the main diagonal,
    // (j - diagonal, j) is x[j] below it: x down the rows, or along the
    // columns.
    Value spread =
        diagonal >= 0
            ? emit.padTo(emit.reshape(*x, {type.getDimSize(0), 1}), 0, n)
            : emit.padTo(emit.reshape(*x, {1, type.getDimSize(0)}), 1, n);
    Value full = emit.broadcastTo(spread, {n, n});
    return single(emit.select(onDiagonal(emit, n, n, diagonal), full,
                              emit.splat(tensorType(full), 0.0)));
  }
  if (type.getRank() != 2)
    return makeError("diag takes a vector or a matrix");
  llvm::Expected<Value> picked = diagonalOf(emit, *x, diagonal);
  if (!picked)
    return picked.takeError();
  return single(*picked);
}

/// aten::diagonal(x, offset=0, dim1=0, dim2=1): the elements on diagonal
/// `offset` of the matrices in dims dim1 and dim2, in a last dim after the
/// other dims (diagonalOf of x with those two dims moved last).
Outputs convertDiagonal(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  int64_t rank = tensorType(*x).getRank();
  llvm::Expected<int64_t> offset = importer.intInput(node, 1);
  llvm::Expected<int64_t> first = importer.intInput(node, 2);
  llvm::Expected<int64_t> second = importer.intInput(node, 3);
  if (!offset || !first || !second)
    return llvm::joinErrors(
        offset.takeError(),
        llvm::joinErrors(first.takeError(), second.takeError()));
  llvm::Expected<int64_t> dim1 = normalizeDim(*first, rank);
  llvm::Expected<int64_t> dim2 = normalizeDim(*second, rank);
  if (!dim1 || !dim2)
    return llvm::joinErrors(dim1.takeError(), dim2.takeError());
  if (*dim1 == *dim2)
    return makeError(llvm::formatv(
        "diagonal dimensions cannot be identical {0}, {1}", *first, *second));
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < rank; ++d)
    if (d != *dim1 && d != *dim2)
      order.push_back(d);
  order.append({*dim1, *dim2});
  Emitter emit(importer);
  llvm::Expected<Value> picked =
      diagonalOf(emit, emit.transpose(*x, order), *offset);
  if (!picked)
    return picked.takeError();
  return single(*picked);
}

/// aten::meshgrid(tensors, indexing='ij'): the grid of the tensors'
/// lengths (each 0-d or 1-d), tensor i varying along dim i of it and
/// broadcast over the others; with 'xy' the first two dims swap (tensor 0
/// varies along dim 1).
Outputs convertMeshgrid(GraphImporter &importer, Node *node) {
  const ImportedValue &list = importer.input(node, 0);
  if (list.kind != ImportedValue::Kind::List || list.items.empty())
    return makeError("meshgrid takes a list of tensors");
  std::string indexing = "ij";
  if (const ImportedValue *given = importer.namedInput(node, "indexing");
      given && given->kind == ImportedValue::Kind::String)
    indexing = given->text;
  if (indexing != "ij" && indexing != "xy")
    return makeError("meshgrid's indexing must be 'ij' or 'xy', not '" +
                     indexing + "'");
  SmallVector<Value> tensors;
  SmallVector<int64_t> grid;
  for (const ImportedValue &item : list.items) {
    if (!item.isTensor() || tensorType(item.tensor).getRank() > 1)
      return makeError("meshgrid takes 0-d or 1-d tensors");
    tensors.push_back(item.tensor);
    grid.push_back(tensorType(item.tensor).getNumElements());
  }
  SmallVector<int64_t> dimOf =
      llvm::to_vector(llvm::seq<int64_t>(0, grid.size()));
  if (indexing == "xy" && grid.size() >= 2) {
    std::swap(dimOf[0], dimOf[1]);
    std::swap(grid[0], grid[1]);
  }
  Emitter emit(importer);
  std::vector<ImportedValue> outputs;
  for (auto [i, tensor] : llvm::enumerate(tensors)) {
    SmallVector<int64_t> along(grid.size(), 1);
    along[dimOf[i]] = grid[dimOf[i]];
    outputs.push_back(ImportedValue::ofTensor(
        emit.broadcastTo(emit.reshape(tensor, along), grid)));
  }
  return single(ImportedValue::ofList(std::move(outputs)));
}

/// aten::broadcast_tensors(tensors) (F.mse_loss's and the other
/// elementwise losses' first step): each tensor broadcast to their common
/// shape.
Outputs convertBroadcastTensors(GraphImporter &importer, Node *node) {
  const ImportedValue &list = importer.input(node, 0);
  if (list.kind != ImportedValue::Kind::List)
    return makeError("broadcast_tensors takes a list of tensors");
  SmallVector<int64_t> common;
  for (const ImportedValue &item : list.items) {
    if (!item.isTensor())
      return makeError("broadcast_tensors takes a list of tensors");
    llvm::Expected<SmallVector<int64_t>> shape =
        broadcastShape(common, tensorType(item.tensor).getShape());
    if (!shape)
      return shape.takeError();
    common = std::move(*shape);
  }
  Emitter emit(importer);
  std::vector<ImportedValue> outputs;
  for (const ImportedValue &item : list.items)
    outputs.push_back(
        ImportedValue::ofTensor(emit.broadcastTo(item.tensor, common)));
  return single(ImportedValue::ofList(std::move(outputs)));
}

/// aten::pixel_shuffle(x [*, C r^2, H, W], r) -> [*, C, H r, W r] and
/// pixel_unshuffle, its inverse (`unshuffle`): x viewed [*, C, r, r, H, W]
/// with the factors moved next to the positions they scale (or back).
Outputs convertPixelShuffle(GraphImporter &importer, Node *node,
                            bool unshuffle) {
  StringRef what = unshuffle ? "pixel_unshuffle" : "pixel_shuffle";
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<int64_t> factor = importer.intInput(node, 1);
  if (llvm::Error error =
          requireAll(what + " needs a tensor and a constant factor", x, factor))
    return std::move(error);
  RankedTensorType type = tensorType(*x);
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank(), r = *factor;
  if (rank < 3 || r < 1)
    return makeError(llvm::formatv("{0} of {1} by {2}: the input must be [*, "
                                   "C, H, W] and the factor positive",
                                   what, type, r));
  SmallVector<int64_t> batch(shape.begin(), shape.end() - 3);
  int64_t c = shape[rank - 3], h = shape[rank - 2], w = shape[rank - 1];
  if (unshuffle ? (h % r != 0 || w % r != 0) : c % (r * r) != 0)
    return makeError(llvm::formatv(
        "{0} of {1} by {2}: {3} must be divisible by {4}", what, type, r,
        unshuffle ? "the height and width" : "the channels",
        unshuffle ? r : r * r));
  int64_t b = batch.size();
  // The six dims after the batch: shuffle views [C, r, r, H, W] and
  // orders them [C, H, r, W, r]; unshuffle the reverse.
  SmallVector<int64_t> permutation = llvm::to_vector(llvm::seq<int64_t>(0, b));
  SmallVector<int64_t> order = unshuffle ? SmallVector<int64_t>{0, 2, 4, 1, 3}
                                         : SmallVector<int64_t>{0, 3, 1, 4, 2};
  for (int64_t d : order)
    permutation.push_back(b + d);
  auto with = [&](ArrayRef<int64_t> rest) {
    SmallVector<int64_t> dims(batch);
    llvm::append_range(dims, rest);
    return dims;
  };
  Emitter emit(importer);
  Value viewed = unshuffle ? emit.reshape(*x, with({c, h / r, r, w / r, r}))
                           : emit.reshape(*x, with({c / (r * r), r, r, h, w}));
  Value moved = emit.transpose(viewed, permutation);
  return single(emit.reshape(moved, unshuffle
                                        ? with({c * r * r, h / r, w / r})
                                        : with({c / (r * r), h * r, w * r})));
}

/// aten::channel_shuffle(x [N, C, *], groups): the channels viewed
/// [groups, C / groups] and transposed.
Outputs convertChannelShuffle(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<int64_t> groups = importer.intInput(node, 1);
  if (llvm::Error error =
          requireAll("channel_shuffle needs a tensor and a constant number "
                     "of groups",
                     x, groups))
    return std::move(error);
  RankedTensorType type = tensorType(*x);
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < 3 || *groups < 1 || shape[1] % *groups != 0)
    return makeError(llvm::formatv(
        "channel_shuffle of {0} in {1} groups: the input must be [N, C, *] "
        "with C divisible by the groups",
        type, *groups));
  SmallVector<int64_t> viewed{shape[0], *groups, shape[1] / *groups};
  viewed.append(shape.begin() + 2, shape.end());
  SmallVector<int64_t> permutation =
      llvm::to_vector(llvm::seq<int64_t>(0, viewed.size()));
  std::swap(permutation[1], permutation[2]);
  Emitter emit(importer);
  return single(emit.reshape(
      emit.transpose(emit.reshape(*x, viewed), permutation), shape));
}

/// aten::frac: x - trunc(x) (gradient 1, as torch's).
Outputs convertFrac(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  RankedTensorType type = tensorType(*x);
  Value whole = RoundedDivOp::create(emit.builder, emit.loc, type, *x,
                                     emit.splat(type, 1.0), /*truncate=*/true);
  return single(emit.binary<SubOp>(*x, whole));
}

/// aten::signbit: x < 0, and true for -0.0 (whose reciprocal is -inf).
Outputs convertSignbit(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value value = *x;
  if (!isa<FloatType>(tensorType(value).getElementType()))
    return single(emit.compare("lt", value, emit.splatLike(value, 0.0)));
  Value zero = emit.splatLike(value, 0.0);
  Value reciprocal = emit.binary<DivOp>(emit.splatLike(value, 1.0), value);
  return single(emit.select(emit.compare("eq", value, zero),
                            emit.compare("lt", reciprocal, zero),
                            emit.compare("lt", value, zero)));
}

/// aten::isclose(a, b, rtol, atol, equal_nan): a == b, or both finite and
/// |a - b| <= atol + rtol |b|; NaNs close to each other with equal_nan.
Outputs convertIsclose(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 2);
  if (!operands)
    return operands.takeError();
  double rtol = numberOr(importer, node, "rtol", 1e-5);
  double atol = numberOr(importer, node, "atol", 1e-8);
  if (rtol < 0 || atol < 0)
    return makeError(llvm::formatv("isclose needs rtol and atol >= 0, not "
                                   "{0} and {1}",
                                   rtol, atol));
  Emitter emit(importer);
  Value a = (*operands)[0], b = (*operands)[1];
  Value difference = absolute(emit, emit.binary<SubOp>(a, b));
  Value tolerance = emit.binary<AddOp>(emit.splatLike(b, atol),
                                       emit.scale(absolute(emit, b), rtol));
  Value infinity = emit.splatLike(a, std::numeric_limits<double>::infinity());
  Value finiteA = emit.compare("lt", absolute(emit, a), infinity);
  Value finite = emit.select(
      finiteA, emit.compare("lt", absolute(emit, b), infinity), finiteA);
  // Equal finite values are within any tolerance; infinities are close
  // only to themselves.
  Value close = emit.select(finite, emit.compare("le", difference, tolerance),
                            emit.compare("eq", a, b));
  if (flagOr(importer, node, "equal_nan", false))
    close =
        emit.select(emit.compare("ne", a, a), emit.compare("ne", b, b), close);
  return single(close);
}

/// aten::rot90(x, k, dims): k (mod 4) quarter turns from dims[0] towards
/// dims[1]: one turn flips dims[1] then swaps the two, two flip both,
/// three flip dims[0] then swap.
Outputs convertRot90(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  int64_t k = 1;
  if (const ImportedValue *given = importer.namedInput(node, "k"))
    k = given->intValue;
  int64_t rank = tensorType(*x).getRank();
  const ImportedValue *dimsGiven = importer.namedInput(node, "dims");
  SmallVector<int64_t> dims{0, 1};
  if (dimsGiven && dimsGiven->kind == ImportedValue::Kind::List) {
    dims.clear();
    for (const ImportedValue &item : dimsGiven->items)
      dims.push_back(item.intValue);
  }
  if (dims.size() != 2 || rank < 2)
    return makeError("rot90 turns a tensor of rank 2 or more in two dims");
  for (int64_t &d : dims) {
    llvm::Expected<int64_t> dim = normalizeDim(d, rank);
    if (!dim)
      return dim.takeError();
    d = *dim;
  }
  if (dims[0] == dims[1])
    return makeError("rot90 needs two different dims");
  Emitter emit(importer);
  SmallVector<int64_t> swap = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(swap[dims[0]], swap[dims[1]]);
  Value result = *x;
  switch (((k % 4) + 4) % 4) {
  case 0:
    return single(result);
  case 1: {
    llvm::Expected<Value> flipped = reversedAlong(emit, result, dims[1]);
    if (!flipped)
      return flipped.takeError();
    return single(emit.transpose(*flipped, swap));
  }
  case 2: {
    llvm::Expected<Value> once = reversedAlong(emit, result, dims[0]);
    if (!once)
      return once.takeError();
    llvm::Expected<Value> twice = reversedAlong(emit, *once, dims[1]);
    if (!twice)
      return twice.takeError();
    return single(*twice);
  }
  default: {
    llvm::Expected<Value> flipped = reversedAlong(emit, result, dims[0]);
    if (!flipped)
      return flipped.takeError();
    return single(emit.transpose(*flipped, swap));
  }
  }
}

/// aten::square: x * x.
Outputs convertSquare(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  return single(emit.binary<MulOp>(*x, *x));
}

/// aten::Bool: a Python bool of a number; of a one-element tensor known
/// only at run time, the i1 0-d tensor `x != 0`, which an `if` takes as a
/// condition by computing both branches (GraphImporter::importBothBranches).
Outputs convertBool(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  if (x.isNumber())
    return single(ImportedValue::ofBool(x.asDouble() != 0));
  llvm::Expected<Value> tensor = importer.tensorInput(node, 0);
  if (!tensor)
    return tensor.takeError();
  RankedTensorType type = tensorType(*tensor);
  if (type.getNumElements() != 1)
    return makeError(llvm::formatv(
        "the truth value of a tensor of {0} elements is ambiguous (as in "
        "PyTorch); use .any() or .all()",
        type.getNumElements()));
  Emitter emit(importer);
  Value flag = emit.reshape(*tensor, {});
  if (!type.getElementType().isInteger(1))
    flag = emit.compare("ne", flag, emit.splatLike(flag, 0.0));
  return single(flag);
}

Outputs convertRelu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  return single(emit.binary<MaxOp>(*x, emit.splat(tensorType(*x), 0.0)));
}

/// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold
/// (torch's softplus); the exponential reads min(beta x, threshold), so
/// the branch not taken overflows neither forward nor backward.
static Value softplus(Emitter &emit, Value x, double beta, double threshold) {
  Value scaled = emit.scale(x, beta);
  Value limit = emit.splatLike(scaled, threshold);
  Value exponential = emit.unary<ExpOp>(emit.min(scaled, limit));
  Value smooth = emit.scale(emit.unary<LogOp>(emit.binary<AddOp>(
                                emit.splatLike(x, 1.0), exponential)),
                            1.0 / beta);
  return emit.select(emit.compare("gt", scaled, limit), x, smooth);
}

/// aten::softplus(x, beta, threshold).
Outputs convertSoftplus(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  double beta = numberOr(importer, node, "beta", 1.0);
  if (beta <= 0)
    return makeError("softplus needs beta > 0");
  Emitter emit(importer);
  return single(
      softplus(emit, *x, beta, numberOr(importer, node, "threshold", 20.0)));
}

/// aten::mish: x tanh(softplus(x)).
Outputs convertMish(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  return single(emit.binary<MulOp>(
      *x, emit.unary<TanhOp>(softplus(emit, *x, 1.0, 20.0))));
}

/// aten::leaky_relu(x, negative_slope): x where x > 0, else slope x.
Outputs convertLeakyRelu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value positive = emit.compare("gt", *x, emit.splatLike(*x, 0.0));
  return single(emit.select(
      positive, *x,
      emit.scale(*x, numberOr(importer, node, "negative_slope", 0.01))));
}

/// aten::rrelu(x, lower, upper, training): x where positive, else x times
/// a slope: in training mode one per element, uniform in [lower, upper)
/// (a random stream, as dropout's); in eval mode (lower + upper) / 2.
Outputs convertRrelu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  double lower = numberOr(importer, node, "lower", 1.0 / 8);
  double upper = numberOr(importer, node, "upper", 1.0 / 3);
  if (lower > upper)
    return makeError(llvm::formatv(
        "rrelu's lower bound ({0}) is above its upper bound ({1})",
        numberText(lower), numberText(upper)));
  Emitter emit(importer);
  Value negative;
  if (flagOr(importer, node, "training", false)) {
    Value uniform = importer.emitUniform(tensorType(*x).getShape());
    Value slope = emit.binary<AddOp>(emit.scale(uniform, upper - lower),
                                     emit.splatLike(uniform, lower));
    negative = emit.binary<MulOp>(
        *x, emit.cast(slope, tensorType(*x).getElementType()));
  } else {
    negative = emit.scale(*x, (lower + upper) / 2);
  }
  Value positive = emit.compare("gt", *x, emit.splatLike(*x, 0.0));
  return single(emit.select(positive, *x, negative));
}

/// scale x where x > 0, else scale alpha (exp(input_scale x) - 1), the
/// exponential read at min(x, 0) (torch's elu).
static Value elu(Emitter &emit, Value x, double alpha, double scale,
                 double inputScale) {
  Value zero = emit.splatLike(x, 0.0);
  Value negative = emit.scale(
      emit.binary<SubOp>(
          emit.unary<ExpOp>(emit.scale(emit.min(x, zero), inputScale)),
          emit.splatLike(x, 1.0)),
      scale * alpha);
  return emit.select(emit.compare("gt", x, zero), emit.scale(x, scale),
                     negative);
}

/// aten::elu(x, alpha, scale, input_scale).
Outputs convertElu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  return single(elu(emit, *x, numberOr(importer, node, "alpha", 1.0),
                    numberOr(importer, node, "scale", 1.0),
                    numberOr(importer, node, "input_scale", 1.0)));
}

/// aten::selu: elu with SELU's alpha and scale.
Outputs convertSelu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  return single(elu(emit, *x, 1.6732632423543772848170429916717,
                    1.0507009873554804934193349852946, 1.0));
}

/// aten::hardswish: x min(max(x + 3, 0), 6) / 6.
Outputs convertHardswish(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value gate = emit.min(
      emit.binary<MaxOp>(emit.binary<AddOp>(*x, emit.splatLike(*x, 3.0)),
                         emit.splatLike(*x, 0.0)),
      emit.splatLike(*x, 6.0));
  return single(emit.scale(emit.binary<MulOp>(*x, gate), 1.0 / 6.0));
}

/// aten::glu(x, dim): the first half of x along dim times the sigmoid of
/// the second.
Outputs convertGlu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  llvm::Expected<int64_t> dim = normalizeDim(
      int64_t(numberOr(importer, node, "dim", -1)), type.getRank());
  if (!dim)
    return dim.takeError();
  int64_t size = type.getDimSize(*dim);
  if (size % 2 != 0)
    return makeError(llvm::formatv(
        "glu halves dimension {0}, whose size {1} is odd", *dim, size));
  Emitter emit(importer);
  Value first = emit.slice(*x, *dim, 0, size / 2, 1);
  Value second = emit.slice(*x, *dim, size / 2, size, 1);
  return single(emit.binary<MulOp>(first, emit.unary<SigmoidOp>(second)));
}

/// aten::var and aten::std (all dims, var.dim, var.correction): the mean of
/// (x - mean(x))^2 over the dims times n / (n - correction) (unbiased, the
/// default, is correction 1), and its square root for std; var_mean and
/// std_mean (`withMean`) return the mean after it.
Outputs convertVariance(GraphImporter &importer, Node *node, bool root,
                        bool withMean = false) {
  Emitter emit(importer);
  llvm::Expected<Value> input = floatReductionInput(importer, node, emit);
  if (!input)
    return input.takeError();
  RankedTensorType type = tensorType(*input);
  llvm::Expected<ReductionDims> reduced =
      reductionDims(importer, node, type.getRank());
  if (!reduced)
    return reduced.takeError();
  int64_t count = 1;
  for (int64_t dim : reduced->dims)
    count *= type.getDimSize(dim);
  int64_t correction = 1;
  if (const ImportedValue *unbiased = importer.namedInput(node, "unbiased"))
    if (!unbiased->isNone())
      correction = unbiased->intValue ? 1 : 0;
  if (const ImportedValue *given = importer.namedInput(node, "correction"))
    if (given->isNumber())
      correction = int64_t(given->asDouble());
  if (count - correction <= 0)
    return makeError(llvm::formatv(
        "{0} over {1} elements with correction {2} divides by zero or less "
        "(PyTorch gives nan or inf)",
        root ? "std" : "var", count, correction));
  Value mean = emit.scale(emit.reduceSum(*input, reduced->dims, true),
                          1.0 / double(count));
  Value centered =
      emit.binary<SubOp>(*input, emit.broadcastTo(mean, type.getShape()));
  Value variance =
      emit.scale(emit.reduceSum(emit.binary<MulOp>(centered, centered),
                                reduced->dims, reduced->keepdim),
                 1.0 / (double(count) - correction));
  Value result = root ? emit.unary<SqrtOp>(variance) : variance;
  if (!withMean)
    return single(result);
  return std::vector<ImportedValue>{
      ImportedValue::ofTensor(result),
      ImportedValue::ofTensor(
          emit.reshape(mean, tensorType(variance).getShape()))};
}

//===----------------------------------------------------------------------===//
// More elementwise functions, reductions and windows
//===----------------------------------------------------------------------===//

/// The functions of one floating-point tensor that are written with titan's
/// exp, log, sin and cos.
enum class ElementaryFunction { Log2, Log10, Exp2, Expm1, Sinh, Cosh, Tan };

/// aten::log2, log10, exp2, expm1, sinh, cosh and tan.
Outputs convertElementary(GraphImporter &importer, Node *node,
                          ElementaryFunction function) {
  llvm::Expected<Value> x = promotedFloatInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  switch (function) {
  case ElementaryFunction::Log2:
    return single(emit.scale(emit.unary<LogOp>(*x), 1.0 / std::log(2.0)));
  case ElementaryFunction::Log10:
    return single(emit.scale(emit.unary<LogOp>(*x), 1.0 / std::log(10.0)));
  case ElementaryFunction::Exp2:
    return single(emit.unary<ExpOp>(emit.scale(*x, std::log(2.0))));
  case ElementaryFunction::Expm1:
    return single(expm1(emit, *x));
  case ElementaryFunction::Sinh: {
    // (u + u / (u + 1)) / 2 with u = expm1(x): accurate near 0 too.
    Value u = expm1(emit, *x);
    Value inverse =
        emit.binary<DivOp>(u, emit.binary<AddOp>(u, emit.splatLike(u, 1.0)));
    return single(emit.scale(emit.binary<AddOp>(u, inverse), 0.5));
  }
  case ElementaryFunction::Cosh:
    return single(
        emit.scale(emit.binary<AddOp>(emit.unary<ExpOp>(*x),
                                      emit.unary<ExpOp>(emit.unary<NegOp>(*x))),
                   0.5));
  case ElementaryFunction::Tan:
    return single(
        emit.binary<DivOp>(emit.unary<SinOp>(*x), emit.unary<CosOp>(*x)));
  }
  llvm_unreachable("unknown elementary function");
}

/// aten::logit(x, eps): log(z / (1 - z)), z = x clamped to [eps, 1 - eps]
/// when eps is given (its gradient 0 outside, as torch's).
Outputs convertLogit(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = promotedFloatInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value z = *x;
  if (const ImportedValue *eps = importer.namedInput(node, "eps");
      eps && eps->isNumber())
    z = emit.min(emit.binary<MaxOp>(z, emit.splatLike(z, eps->asDouble())),
                 emit.splatLike(z, 1.0 - eps->asDouble()));
  return single(emit.unary<LogOp>(
      emit.binary<DivOp>(z, emit.binary<SubOp>(emit.splatLike(z, 1.0), z))));
}

/// aten::hardtanh(x, min_val, max_val) and relu6 (hardtanh to [0, 6]):
/// x clamped.
Outputs convertHardtanh(GraphImporter &importer, Node *node, double lower,
                        double upper) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  lower = numberOr(importer, node, "min_val", lower);
  upper = numberOr(importer, node, "max_val", upper);
  Emitter emit(importer);
  return single(emit.min(emit.binary<MaxOp>(*x, emit.splatLike(*x, lower)),
                         emit.splatLike(*x, upper)));
}

/// aten::hardsigmoid: x / 6 + 1/2 clamped to [0, 1].
Outputs convertHardsigmoid(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value line =
      emit.binary<AddOp>(emit.scale(*x, 1.0 / 6.0), emit.splatLike(*x, 0.5));
  return single(emit.min(emit.binary<MaxOp>(line, emit.splatLike(*x, 0.0)),
                         emit.splatLike(*x, 1.0)));
}

/// aten::log_sigmoid (logSigmoid).
Outputs convertLogSigmoid(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  return single(logSigmoid(emit, *x));
}

/// aten::celu(x, alpha): elu with exp(x / alpha).
Outputs convertCelu(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  double alpha = numberOr(importer, node, "alpha", 1.0);
  if (alpha == 0)
    return makeError("celu needs alpha != 0");
  Emitter emit(importer);
  return single(elu(emit, *x, alpha, 1.0, 1.0 / alpha));
}

/// aten::threshold(x, threshold, value): x where x > threshold, else value.
Outputs convertThreshold(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  llvm::Expected<double> threshold = importer.numberInput(node, 1);
  llvm::Expected<double> value = importer.numberInput(node, 2);
  if (!x || !threshold || !value)
    return makeError("threshold needs a float tensor and two numbers");
  Emitter emit(importer);
  return single(
      emit.select(emit.compare("gt", *x, emit.splatLike(*x, *threshold)), *x,
                  emit.splatLike(*x, *value)));
}

/// aten::lerp(start, end, weight): start + weight (end - start), of a
/// number or tensor weight.
Outputs convertLerp(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 3);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  Value start = (*operands)[0], end = (*operands)[1], weight = (*operands)[2];
  return single(emit.binary<AddOp>(
      start, emit.binary<MulOp>(weight, emit.binary<SubOp>(end, start))));
}

/// aten::addcmul(x, a, b, value) and addcdiv: x + value * a * b and
/// x + value * a / b.
Outputs convertAddcombine(GraphImporter &importer, Node *node, bool divide) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 3);
  if (!operands)
    return operands.takeError();
  Emitter emit(importer);
  Value a = (*operands)[1], b = (*operands)[2];
  Value combined = divide ? emit.binary<DivOp>(a, b) : emit.binary<MulOp>(a, b);
  return single(emit.binary<AddOp>(
      (*operands)[0],
      emit.scale(combined, numberOr(importer, node, "value", 1.0))));
}

/// aten::movedim(x, source, destination) (moveaxis): the source dims put at
/// the destinations, the others in their order in the remaining places.
Outputs convertMovedim(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  int64_t rank = tensorType(*x).getRank();
  auto dims = [&](size_t index) -> llvm::Expected<std::vector<int64_t>> {
    const ImportedValue &value = importer.input(node, index);
    std::vector<int64_t> raw;
    if (value.kind == ImportedValue::Kind::Int) {
      raw.push_back(value.intValue);
    } else {
      llvm::Expected<std::vector<int64_t>> list =
          importer.intListInput(node, index);
      if (!list)
        return list.takeError();
      raw = *list;
    }
    for (int64_t &dim : raw) {
      llvm::Expected<int64_t> normalized = normalizeDim(dim, rank);
      if (!normalized)
        return normalized.takeError();
      dim = *normalized;
    }
    return raw;
  };
  llvm::Expected<std::vector<int64_t>> sources = dims(1);
  if (!sources)
    return sources.takeError();
  llvm::Expected<std::vector<int64_t>> destinations = dims(2);
  if (!destinations)
    return destinations.takeError();
  if (sources->size() != destinations->size())
    return makeError("movedim needs as many destinations as sources");
  SmallVector<int64_t> permutation(rank, -1);
  SmallVector<bool> moved(rank, false);
  for (auto [source, destination] : llvm::zip(*sources, *destinations)) {
    if (permutation[destination] != -1 || moved[source])
      return makeError("movedim's sources and destinations must not repeat");
    permutation[destination] = source;
    moved[source] = true;
  }
  int64_t next = 0;
  for (int64_t &dim : permutation) {
    if (dim != -1)
      continue;
    while (moved[next])
      ++next;
    dim = next++;
  }
  Emitter emit(importer);
  return single(emit.transpose(*x, permutation));
}

/// aten::amin: -amax(-x).
Outputs convertAmin(GraphImporter &importer, Node *node) {
  Emitter emit(importer);
  llvm::Expected<ReductionOperand> operand =
      reductionOperand(importer, node, emit);
  if (!operand)
    return operand.takeError();
  RankedTensorType type = tensorType(operand->input);
  Value largest = ReduceMaxOp::create(
      emit.builder, emit.loc,
      type.clone(operand->reduced.resultShape(type.getShape())),
      emit.unary<NegOp>(operand->input),
      emit.builder.getDenseI64ArrayAttr(operand->reduced.dims),
      operand->reduced.keepdim);
  return single(emit.unary<NegOp>(largest));
}

/// `x != 0` over the dims of reduction `node`, as 0 and 1 in f32 (so in
/// f64 past 2^24 elements), with the dims.
llvm::Expected<std::pair<Value, ReductionDims>>
nonzeroIndicator(GraphImporter &importer, Node *node, Emitter &emit) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  llvm::Expected<ReductionDims> reduced =
      reductionDims(importer, node, type.getRank());
  if (!reduced)
    return reduced.takeError();
  Value mask = type.getElementType().isInteger(1)
                   ? *x
                   : emit.compare("ne", *x, emit.splat(type, 0.0));
  Type count = type.getNumElements() <= (int64_t(1) << 24)
                   ? Type(emit.builder.getF32Type())
                   : emit.f64();
  return std::make_pair(emit.cast(mask, count), std::move(*reduced));
}

/// aten::all and aten::any (of everything or along a dim): whether every
/// (some) element is nonzero, as a boolean tensor.
Outputs convertAllAny(GraphImporter &importer, Node *node, bool all) {
  // all() / any() of a list of Python bools or numbers, at import time.
  if (const ImportedValue &list = importer.input(node, 0);
      list.kind == ImportedValue::Kind::List) {
    if (!llvm::all_of(list.items,
                      [](const ImportedValue &v) { return v.isNumber(); }))
      return makeError("all() / any() of a list is evaluated at import time, "
                       "of bools and numbers");
    auto truthy = [](const ImportedValue &v) { return v.asDouble() != 0; };
    return single(
        ImportedValue::ofBool(all ? llvm::all_of(list.items, truthy)
                                  : llvm::any_of(list.items, truthy)));
  }
  Emitter emit(importer);
  auto indicator = nonzeroIndicator(importer, node, emit);
  if (!indicator)
    return indicator.takeError();
  auto [ones, reduced] = *indicator;
  // any: max(x != 0) > 0; all: max(x == 0) == 0.
  Value operand =
      all ? emit.binary<SubOp>(emit.splatLike(ones, 1.0), ones) : ones;
  RankedTensorType type = tensorType(operand);
  Value largest = ReduceMaxOp::create(
      emit.builder, emit.loc, type.clone(reduced.resultShape(type.getShape())),
      operand, emit.builder.getDenseI64ArrayAttr(reduced.dims),
      reduced.keepdim);
  return single(
      emit.compare(all ? "eq" : "gt", largest, emit.splatLike(largest, 0.0)));
}

/// aten::count_nonzero(x, dim): the number of nonzero elements, int64.
Outputs convertCountNonzero(GraphImporter &importer, Node *node) {
  Emitter emit(importer);
  auto indicator = nonzeroIndicator(importer, node, emit);
  if (!indicator)
    return indicator.takeError();
  auto [ones, reduced] = *indicator;
  return single(emit.cast(emit.reduceSum(ones, reduced.dims, /*keepdim=*/false),
                          emit.builder.getI64Type()));
}

/// aten::nansum and aten::nanmean: the sum (mean) over the elements that
/// are not NaN.
Outputs convertNanReduction(GraphImporter &importer, Node *node, bool mean) {
  Emitter emit(importer);
  llvm::Expected<ReductionOperand> operand =
      reductionOperand(importer, node, emit, /*integersInF64=*/!mean);
  if (!operand)
    return operand.takeError();
  Value x = operand->input;
  Value number = emit.compare("eq", x, x);
  Value sum = emit.reduceSum(emit.select(number, x, emit.splatLike(x, 0.0)),
                             operand->reduced.dims, operand->reduced.keepdim);
  if (mean)
    sum = emit.binary<DivOp>(
        sum, emit.reduceSum(emit.cast(number, tensorType(x).getElementType()),
                            operand->reduced.dims, operand->reduced.keepdim));
  return single(emit.cast(sum, operand->resultElement));
}

/// aten::diff(x, n, dim, prepend, append): n times the differences of
/// neighbours along dim (of booleans: whether they differ), after
/// prepend and append are concatenated.
Outputs convertDiff(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  int64_t n = int64_t(numberOr(importer, node, "n", 1));
  llvm::Expected<int64_t> dim = normalizeDim(
      int64_t(numberOr(importer, node, "dim", -1)), tensorType(*x).getRank());
  if (!dim)
    return dim.takeError();
  if (n < 0)
    return makeError(llvm::formatv("diff needs n >= 0, not {0}", n));
  Emitter emit(importer);
  SmallVector<Value, 3> parts;
  for (StringRef name : {"prepend", "", "append"}) {
    if (name.empty()) {
      parts.push_back(*x);
      continue;
    }
    const ImportedValue *extra = importer.namedInput(node, name);
    if (!extra || extra->isNone())
      continue;
    if (!extra->isTensor())
      return makeError(llvm::formatv("diff's {0} must be a tensor", name));
    parts.push_back(emit.cast(extra->tensor, tensorType(*x).getElementType()));
  }
  Value result = emit.concat(parts, *dim);
  bool boolean = tensorType(result).getElementType().isInteger(1);
  for (int64_t i = 0; i < n; ++i) {
    int64_t size = tensorType(result).getDimSize(*dim);
    if (size == 0)
      break;
    Value later = emit.slice(result, *dim, 1, size, 1);
    Value earlier = emit.slice(result, *dim, 0, size - 1, 1);
    result = boolean ? emit.compare("ne", later, earlier)
                     : emit.binary<SubOp>(later, earlier);
  }
  return single(result);
}

/// The product of `x` along `dim` (kept as size 1) as a tree of
/// multiplications of halves: log2(n) steps, each element's gradient the
/// product of the others (zeros included).
Value productAlong(Emitter &emit, Value x, int64_t dim) {
  for (int64_t n = tensorType(x).getDimSize(dim); n > 1;) {
    int64_t half = n / 2;
    Value product = emit.binary<MulOp>(emit.slice(x, dim, 0, half, 1),
                                       emit.slice(x, dim, half, 2 * half, 1));
    x = n % 2 ? emit.concat({product, emit.slice(x, dim, n - 1, n, 1)}, dim)
              : product;
    n = half + n % 2;
  }
  return x;
}

/// aten::prod (of everything, or along a dim): productAlong; integers and
/// booleans in f64 (exact below 2^53), the result int64.
Outputs convertProd(GraphImporter &importer, Node *node) {
  Emitter emit(importer);
  llvm::Expected<ReductionOperand> operand =
      reductionOperand(importer, node, emit, /*integersInF64=*/true);
  if (!operand)
    return operand.takeError();
  Value x = operand->input;
  RankedTensorType type = tensorType(x);
  ArrayRef<int64_t> dims = operand->reduced.dims;
  Value product;
  if (dims.size() == 1) {
    product = dropDim(emit, productAlong(emit, x, dims[0]), dims[0],
                      operand->reduced.keepdim);
  } else {
    product = emit.reshape(
        productAlong(emit, emit.reshape(x, {type.getNumElements()}), 0),
        ArrayRef<int64_t>{});
  }
  return single(emit.cast(product, operand->resultElement));
}

/// aten::cumprod(x, dim, dtype): the running product along dim as
/// log2(n) steps that each multiply by the product ending 2^k places
/// earlier (Hillis and Steele's scan); integers and booleans in f64,
/// the result int64.
Outputs convertCumprod(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<int64_t> rawDim = importer.intInput(node, 1);
  if (!x || !rawDim)
    return makeError("cumprod needs a tensor and a dim");
  RankedTensorType type = tensorType(*x);
  llvm::Expected<int64_t> dim = normalizeDim(*rawDim, type.getRank());
  if (!dim)
    return dim.takeError();
  Type input = type.getElementType();
  llvm::Expected<Type> element = optionalDtype(
      importer, node,
      isa<FloatType>(input) ? input : Type(importer.getBuilder().getI64Type()));
  if (!element)
    return element.takeError();
  Emitter emit(importer);
  Value running = emit.cast(*x, exactFloatType(emit, *element));
  if (type.getRank() == 0)
    return single(emit.cast(running, *element));
  int64_t n = type.getDimSize(*dim);
  for (int64_t shift = 1; shift < n; shift *= 2) {
    Value ones = emit.slice(emit.splatLike(running, 1.0), *dim, 0, shift, 1);
    Value earlier =
        emit.concat({ones, emit.slice(running, *dim, 0, n - shift, 1)}, *dim);
    running = emit.binary<MulOp>(running, earlier);
  }
  return single(emit.cast(running, *element));
}

/// aten::unfold(x, dim, size, step): the windows of `size` elements every
/// `step` along dim, as a dim of their count in its place and one of
/// `size` at the end. Windows that tile the dim are a reshape; others are
/// one strided slice per position in the window (`size` at most 256).
Outputs convertUnfold(GraphImporter &importer, Node *node) {
  llvm::Expected<TensorDim> td = tensorAndDim(importer, node, 1);
  llvm::Expected<int64_t> size = importer.intInput(node, 2);
  llvm::Expected<int64_t> step = importer.intInput(node, 3);
  if (!td || !size || !step)
    return makeError("unfold needs a tensor, a dim, a size and a step");
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  int64_t dim = td->dim;
  int64_t length = td->shape[dim];
  if (*size < 1 || *size > length || *step < 1)
    return makeError(llvm::formatv(
        "unfold of a dim of {0} in windows of {1} every {2}: the window "
        "must have 1 to {0} elements and the step be positive",
        length, *size, *step));
  constexpr int64_t kMaxWindow = 256;
  int64_t count = (length - *size) / *step + 1;
  Emitter emit(importer);
  SmallVector<int64_t> shape(td->shape);
  int64_t rank = shape.size();
  if (*step == *size) {
    Value tiled = emit.slice(*x, dim, 0, count * *size, 1);
    SmallVector<int64_t> split(shape);
    split[dim] = *size;
    split.insert(split.begin() + dim, count);
    SmallVector<int64_t> permutation =
        llvm::to_vector(llvm::seq<int64_t>(0, rank + 1));
    permutation.erase(permutation.begin() + dim + 1);
    permutation.push_back(dim + 1);
    return single(emit.transpose(emit.reshape(tiled, split), permutation));
  }
  if (*size > kMaxWindow)
    return makeError(llvm::formatv(
        "unfold in overlapping windows of {0} elements: titan takes windows "
        "of at most {1} (one slice per position), or windows that tile "
        "the dim (step == size)",
        *size, kMaxWindow));
  SmallVector<Value> positions;
  SmallVector<int64_t> windowShape(shape);
  windowShape[dim] = count;
  windowShape.push_back(1);
  for (int64_t offset = 0; offset < *size; ++offset)
    positions.push_back(emit.reshape(
        emit.slice(*x, dim, offset, offset + (count - 1) * *step + 1, *step),
        windowShape));
  return single(emit.concat(positions, rank));
}

/// aten::cosine_similarity(a, b, dim, eps): sum(a b) / (max(|a|, eps)
/// max(|b|, eps)) along dim, after broadcasting a and b (torch's formula).
Outputs convertCosineSimilarity(GraphImporter &importer, Node *node) {
  llvm::Expected<SmallVector<Value>> operands =
      unifiedFloatOperands(importer, node, 0, 2);
  if (!operands)
    return operands.takeError();
  Value a = (*operands)[0], b = (*operands)[1];
  llvm::Expected<int64_t> dim = normalizeDim(
      int64_t(numberOr(importer, node, "dim", 1)), tensorType(a).getRank());
  if (!dim)
    return dim.takeError();
  double eps = numberOr(importer, node, "eps", 1e-8);
  Emitter emit(importer);
  auto boundedNorm = [&](Value v) {
    Value norm = euclideanNorm(emit, v, {*dim}, /*keepdim=*/false);
    return emit.binary<MaxOp>(norm, emit.splatLike(norm, eps));
  };
  Value dot = emit.reduceSum(emit.binary<MulOp>(a, b), {*dim}, false);
  return single(emit.binary<DivOp>(
      dot, emit.binary<MulOp>(boundedNorm(a), boundedNorm(b))));
}

//===----------------------------------------------------------------------===//
// Ops of newer PyTorch releases (NewerTorchOperators.cpp)
//===----------------------------------------------------------------------===//

/// `x` viewed as titan.attention's [batch, heads, seq, head_dim]: a rank-3
/// tensor as one head, the dims before the heads of a longer one as one
/// batch dim.
Value asAttentionOperand(Emitter &emit, Value x) {
  ArrayRef<int64_t> shape = tensorType(x).getShape();
  int64_t rank = shape.size();
  int64_t batch = 1;
  for (int64_t size : shape.drop_back(rank == 3 ? 2 : 3))
    batch *= size;
  int64_t heads = rank == 3 ? 1 : shape[rank - 3];
  return emit.reshape(x, {batch, heads, shape[rank - 2], shape[rank - 1]});
}

/// aten::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p,
/// is_causal, scale, enable_gqa) (PyTorch 2's F.scaled_dot_product_attention,
/// torchtitan's and Hugging Face's `sdpa` attention): titan.attention where
/// it computes the same (queries and keys of one length, causal or no mask,
/// no dropout, one head_dim, as many KV heads as query heads or, with
/// enable_gqa, a divisor of them: query head h reads KV head h / (q_heads /
/// kv_heads), as repeat_interleave does); otherwise written out as PyTorch
/// documents it: softmax(q k^T scale + bias) v, the bias -inf where a
/// boolean mask is false or past the diagonal of a causal one (top-left
/// aligned), a float mask added, dropout of the probabilities.
Outputs convertScaledDotProductAttention(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> q = importer.tensorInput(node, 0);
  llvm::Expected<Value> k = importer.tensorInput(node, 1);
  llvm::Expected<Value> v = importer.tensorInput(node, 2);
  if (!q || !k || !v)
    return makeError("scaled_dot_product_attention needs query, key and "
                     "value tensors");
  RankedTensorType qType = tensorType(*q), kType = tensorType(*k),
                   vType = tensorType(*v);
  int64_t rank = qType.getRank();
  if (rank < 2 || kType.getRank() != rank || vType.getRank() != rank)
    return makeError(llvm::formatv(
        "scaled_dot_product_attention of query, key and value of ranks {0}, "
        "{1} and {2}: titan takes three tensors of one rank, at least 2",
        rank, kType.getRank(), vType.getRank()));
  if (!isa<FloatType>(qType.getElementType()) ||
      qType.getElementType() != kType.getElementType() ||
      qType.getElementType() != vType.getElementType())
    return makeError("scaled_dot_product_attention needs query, key and "
                     "value of one floating-point type (PyTorch's too)");
  ArrayRef<int64_t> qShape = qType.getShape(), kShape = kType.getShape(),
                    vShape = vType.getShape();
  int64_t queries = qShape[rank - 2], keys = kShape[rank - 2];
  int64_t headDim = qShape[rank - 1];
  if (kShape[rank - 1] != headDim || vShape[rank - 2] != keys)
    return makeError(llvm::formatv(
        "scaled_dot_product_attention of query {0}, key {1} and value {2}: "
        "the key's last dim must be the query's and the value's length the "
        "key's",
        qType, kType, vType));
  const ImportedValue *mask = importer.namedInput(node, "attn_mask");
  bool hasMask = mask && !mask->isNone();
  if (hasMask && !mask->isTensor())
    return makeError("scaled_dot_product_attention's attn_mask must be a "
                     "tensor");
  double dropout = numberOr(importer, node, "dropout_p", 0.0);
  bool causal = numberOr(importer, node, "is_causal", 0.0) != 0.0;
  bool gqa = numberOr(importer, node, "enable_gqa", 0.0) != 0.0;
  if (causal && hasMask)
    return makeError("scaled_dot_product_attention with both attn_mask and "
                     "is_causal (PyTorch refuses it too)");
  if (dropout < 0.0 || dropout > 1.0)
    return makeError(llvm::formatv(
        "scaled_dot_product_attention's dropout_p must be in [0, 1], not {0}",
        dropout));
  double scale = numberOr(importer, node, "scale",
                          1.0 / std::sqrt(static_cast<double>(headDim)));
  // Heads are dim -3 of a rank-4 or longer tensor; a rank-3 one is one
  // head of each of its batch entries.
  int64_t qHeads = rank >= 4 ? qShape[rank - 3] : 1;
  int64_t kvHeads = rank >= 4 ? kShape[rank - 3] : 1;
  if (kShape.drop_back(2) != vShape.drop_back(2))
    return makeError(llvm::formatv(
        "scaled_dot_product_attention's key {0} and value {1} must have the "
        "same batch and head dims",
        kType, vType));
  if (qHeads != kvHeads && (!gqa || kvHeads == 0 || qHeads % kvHeads != 0))
    return makeError(llvm::formatv(
        "scaled_dot_product_attention of {0} query heads and {1} key/value "
        "heads: they must be equal, or the key/value heads divide the query "
        "heads with enable_gqa=True",
        qHeads, kvHeads));
  Emitter emit(importer);
  int64_t batchDims = rank >= 4 ? rank - 3 : rank - 2;
  bool sameLeading =
      qShape.take_front(batchDims) == kShape.take_front(batchDims);
  if (rank >= 3 && queries == keys && !hasMask && dropout == 0.0 &&
      vShape[rank - 1] == headDim && sameLeading && scale > 0) {
    Value query = asAttentionOperand(emit, *q);
    auto attention = AttentionOp::create(
        emit.builder, emit.loc, query.getType(),
        getAttentionLseType(query.getType()), query,
        asAttentionOperand(emit, *k), asAttentionOperand(emit, *v),
        causal ? emit.builder.getUnitAttr() : UnitAttr(),
        emit.builder.getF64FloatAttr(scale));
    return single(emit.reshape(attention.getResult(), qShape));
  }
  // Written out; KV heads repeated for their query heads.
  auto repeatHeads = [&](Value x) {
    if (qHeads == kvHeads)
      return x;
    int64_t repeat = qHeads / kvHeads;
    SmallVector<int64_t> shape(tensorType(x).getShape());
    SmallVector<int64_t> expanded(shape);
    expanded.insert(expanded.begin() + rank - 2, repeat);
    SmallVector<int64_t> unsqueezed(shape);
    unsqueezed.insert(unsqueezed.begin() + rank - 2, 1);
    shape[rank - 3] = qHeads;
    return emit.reshape(emit.broadcastTo(emit.reshape(x, unsqueezed), expanded),
                        shape);
  };
  SmallVector<int64_t> toKeysLast =
      llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(toKeysLast[rank - 2], toKeysLast[rank - 1]);
  llvm::Expected<Value> scores =
      matmul(emit, *q, emit.transpose(repeatHeads(*k), toKeysLast), false);
  if (!scores)
    return scores.takeError();
  Value scaled = emit.scale(*scores, scale);
  RankedTensorType scoresType = tensorType(scaled);
  Value hidden = emit.splat(scoresType, -INFINITY);
  if (causal) {
    auto positions = scoresType.clone(emit.builder.getI64Type());
    scaled = emit.select(emit.compare("le", emit.iota(positions, rank - 1),
                                      emit.iota(positions, rank - 2)),
                         scaled, hidden);
  } else if (hasMask) {
    Value bias = mask->tensor;
    llvm::Expected<SmallVector<int64_t>> shape =
        broadcastShape(tensorType(bias).getShape(), scoresType.getShape());
    bool broadcasts =
        shape && ArrayRef<int64_t>(*shape) == scoresType.getShape();
    if (!shape)
      llvm::consumeError(shape.takeError());
    if (!broadcasts)
      return makeError(llvm::formatv(
          "scaled_dot_product_attention's attn_mask {0} does not broadcast "
          "to the scores {1}",
          tensorType(bias), scoresType));
    bias = emit.broadcastTo(bias, scoresType.getShape());
    if (tensorType(bias).getElementType().isInteger(1))
      scaled = emit.select(bias, scaled, hidden);
    else
      scaled = emit.binary<AddOp>(scaled,
                                  emit.cast(bias, scoresType.getElementType()));
  }
  Value probabilities =
      SoftmaxOp::create(emit.builder, emit.loc, scoresType, scaled,
                        emit.builder.getI64IntegerAttr(rank - 1));
  if (dropout > 0.0)
    probabilities = importer.emitTrainingDropout(probabilities, dropout);
  llvm::Expected<Value> output =
      matmul(emit, probabilities, repeatHeads(*v), false);
  if (!output)
    return output.takeError();
  return single(*output);
}

/// aten::rms_norm(x, normalized_shape, weight, eps) (PyTorch 2.4's
/// nn.RMSNorm): titan.rms_norm over the normalized dims (several are
/// flattened into one, the weight alike; no weight is a weight of ones);
/// eps None is the machine epsilon of float32 (of float64 for float64
/// inputs), as PyTorch takes its compute type's.
Outputs convertRmsNorm(GraphImporter &importer, Node *node) {
  Emitter emit(importer);
  llvm::Expected<FlattenedNormInput> flat =
      flattenedNormInput(importer, node, emit);
  if (!flat)
    return flat.takeError();
  Type element = tensorType(flat->input).getElementType();
  double eps =
      numberOr(importer, node, "eps",
               element.isF64() ? std::numeric_limits<double>::epsilon()
                               : double(std::numeric_limits<float>::epsilon()));
  if (eps <= 0)
    return makeError(llvm::formatv("rms_norm needs eps > 0, not {0}", eps));
  Value normed = RmsNormOp::create(
      emit.builder, emit.loc, flat->input.getType(), flat->input,
      normParameter(emit, importer.input(node, 2), flat->width, element, 1.0),
      emit.builder.getF64FloatAttr(eps));
  return single(emit.reshape(
      normed, tensorType(importer.input(node, 0).tensor).getShape()));
}

//===----------------------------------------------------------------------===//
// Complex views
//===----------------------------------------------------------------------===//

Outputs convertViewAsComplex(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  if (type.getRank() == 0 || type.getShape().back() != 2)
    return makeError("view_as_complex needs a last dimension of size 2");
  Emitter emit(importer);
  SmallVector<int64_t> shape(type.getShape().drop_back());
  int64_t last = type.getRank() - 1;
  return single(ImportedValue::ofComplex(
      emit.reshape(emit.slice(*x, last, 0, 1, 1), shape),
      emit.reshape(emit.slice(*x, last, 1, 2, 1), shape)));
}

Outputs convertViewAsReal(GraphImporter &importer, Node *node) {
  const ImportedValue &c = importer.input(node, 0);
  if (!c.isComplex())
    return makeError("view_as_real needs a complex tensor");
  Emitter emit(importer);
  SmallVector<int64_t> shape(tensorType(c.tensor).getShape());
  shape.push_back(1);
  return single(
      emit.concat({emit.reshape(c.tensor, shape), emit.reshape(c.imag, shape)},
                  shape.size() - 1));
}

Outputs convertComplexPart(GraphImporter &importer, Node *node, bool real) {
  const ImportedValue &c = importer.input(node, 0);
  if (!c.isComplex())
    return makeError("expected a complex tensor");
  return single(real ? c.tensor : c.imag);
}

//===----------------------------------------------------------------------===//
// Scalars, shapes and types queried at import time
//===----------------------------------------------------------------------===//

Outputs convertSize(GraphImporter &importer, Node *node) {
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(importer.input(node, 0));
  if (!shape)
    return shape.takeError();
  if (node->inputs().size() == 1) {
    std::vector<ImportedValue> dims;
    for (int64_t d : *shape)
      dims.push_back(ImportedValue::ofInt(d));
    return single(ImportedValue::ofList(std::move(dims)));
  }
  llvm::Expected<int64_t> dim = importer.intInput(node, 1);
  if (!dim)
    return dim.takeError();
  llvm::Expected<int64_t> d = normalizeDim(*dim, shape->size());
  if (!d)
    return d.takeError();
  return single(ImportedValue::ofInt((*shape)[*d]));
}

/// aten::len (of a list, or of a tensor's first dim), aten::dim and
/// aten::numel.
Outputs convertLength(GraphImporter &importer, Node *node, StringRef what) {
  const ImportedValue &x = importer.input(node, 0);
  if (what == "len" && x.kind == ImportedValue::Kind::List)
    return single(ImportedValue::ofInt(x.items.size()));
  // A string's length (nn.MultiheadAttention's `why_not_fast_path`).
  if (what == "len" && x.kind == ImportedValue::Kind::String)
    return single(ImportedValue::ofInt(x.text.size()));
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(x);
  if (!shape)
    return shape.takeError();
  if (what == "dim")
    return single(ImportedValue::ofInt(shape->size()));
  if (what == "len") {
    if (shape->empty())
      return makeError("len() of a 0-d tensor");
    return single(ImportedValue::ofInt(shape->front()));
  }
  return single(ImportedValue::ofInt(ShapedType::getNumElements(*shape)));
}

Outputs convertGetItem(GraphImporter &importer, Node *node) {
  const ImportedValue &list = importer.input(node, 0);
  // dict[key] of a string key (a traced submodule's dict output).
  if (list.kind == ImportedValue::Kind::Dict) {
    const ImportedValue &key = importer.input(node, 1);
    auto found = key.kind == ImportedValue::Kind::String
                     ? llvm::find(list.keys, key.text)
                     : list.keys.end();
    if (found == list.keys.end())
      return makeError("the dict has no key " +
                       (key.kind == ImportedValue::Kind::String
                            ? "'" + key.text + "'"
                            : std::string("of that kind")) +
                       " (keys: " + llvm::join(list.keys, ", ") + ")");
    return single(list.items[found - list.keys.begin()]);
  }
  llvm::Expected<int64_t> index = importer.intInput(node, 1);
  if (list.kind != ImportedValue::Kind::List || !index)
    return makeError("indexing needs a list and a constant index");
  int64_t i = *index < 0 ? *index + list.items.size() : *index;
  if (i < 0 || i >= (int64_t)list.items.size())
    return makeError("list index out of range");
  return single(list.items[i]);
}

Outputs convertDtype(GraphImporter &importer, Node *node) {
  const ImportedValue &x = importer.input(node, 0);
  if (x.isComplex())
    return single(ImportedValue::ofInt(
        static_cast<int64_t>(c10::ScalarType::ComplexFloat)));
  llvm::Expected<Value> t = importer.tensorInput(node, 0);
  if (!t)
    return t.takeError();
  return single(
      ImportedValue::ofInt(dtypeCode(tensorType(*t).getElementType())));
}

Outputs convertTensorConstant(GraphImporter &importer, Node *node) {
  at::Tensor tensor = node->t(torch::jit::attr::value).contiguous();
  // uint8, int8 and int16 constants (a traced uint8 mask) are held as
  // int32, which holds each of their values.
  c10::ScalarType dtype = tensor.scalar_type();
  if (dtype == c10::ScalarType::Byte || dtype == c10::ScalarType::Char ||
      dtype == c10::ScalarType::Short)
    tensor = tensor.to(at::kInt);
  Type element = toElementType(importer.getContext(), tensor.scalar_type());
  // A 0-d constant is a Python number that tracing recorded as a tensor
  // (`x + 1`, `C // n_head`): a number known at import time, which
  // promotes like one.
  if (element && tensor.dim() == 0) {
    ImportedValue number = element.isInteger(1)
                               ? ImportedValue::ofBool(tensor.item<bool>())
                           : isa<FloatType>(element)
                               ? ImportedValue::ofFloat(tensor.item<double>())
                               : ImportedValue::ofInt(tensor.item<int64_t>());
    number.wrappedType = element;
    return single(number);
  }
  if (!element)
    return makeError("tensor constants of dtype " +
                     std::string(c10::toString(tensor.scalar_type())) +
                     " are not supported");
  std::vector<int64_t> shape(tensor.sizes().begin(), tensor.sizes().end());
  auto type = RankedTensorType::get(shape, element);
  Emitter emit(importer);
  return single(ConstantOp::create(emit.builder, emit.loc,
                                   denseElementsOf(tensor, type)));
}

/// Flattens nested lists of numbers (row-major) and records their shape;
/// an error when they are ragged or hold something else.
llvm::Error flattenData(const ImportedValue &data, size_t depth,
                        SmallVector<int64_t> &shape,
                        std::vector<ImportedValue> &numbers) {
  if (data.isNumber()) {
    if (depth != shape.size())
      return makeError("torch.tensor data must be a rectangular list");
    numbers.push_back(data);
    return llvm::Error::success();
  }
  if (data.kind != ImportedValue::Kind::List)
    return makeError("torch.tensor is supported on numbers and lists of "
                     "numbers known at import time, not on tensors (use "
                     "x.clone().detach())");
  if (depth == shape.size())
    shape.push_back(data.items.size());
  else if (depth > shape.size() || shape[depth] != (int64_t)data.items.size())
    return makeError("torch.tensor data must be a rectangular list");
  for (const ImportedValue &item : data.items)
    if (llvm::Error error = flattenData(item, depth + 1, shape, numbers))
      return error;
  return llvm::Error::success();
}

/// aten::tensor(data, dtype): a tensor of numbers known at import time. A
/// single number stays a number that promotes like a 0-d tensor of its
/// dtype (Gemma's `h * torch.tensor(dim ** 0.5, dtype=h.dtype)`); lists
/// become constants.
Outputs convertTensorOfData(GraphImporter &importer, Node *node) {
  SmallVector<int64_t> shape;
  std::vector<ImportedValue> numbers;
  if (llvm::Error error =
          flattenData(importer.input(node, 0), 0, shape, numbers))
    return std::move(error);
  MLIRContext &context = importer.getContext();
  // torch.tensor infers float32 (the default dtype) from any float, int64
  // from integers and bool from bools.
  Type inferred = numbers.empty() ? Type(Float32Type::get(&context))
                                  : Type(IntegerType::get(&context, 1));
  for (const ImportedValue &number : numbers) {
    if (number.kind == ImportedValue::Kind::Float)
      inferred = Float32Type::get(&context);
    else if (number.kind == ImportedValue::Kind::Int &&
             !isa<FloatType>(inferred))
      inferred = IntegerType::get(&context, 64);
  }
  llvm::Expected<Type> element = optionalDtype(importer, node, inferred);
  if (!element)
    return element.takeError();
  if (shape.empty())
    return single(numberOfType(numbers.front(), *element));
  SmallVector<Attribute> values;
  for (const ImportedValue &number : numbers) {
    ImportedValue stored = numberOfType(number, *element);
    values.push_back(
        isa<FloatType>(*element)
            ? Attribute(FloatAttr::get(*element, stored.floatValue))
            : Attribute(IntegerAttr::get(*element, stored.intValue)));
  }
  Emitter emit(importer);
  auto type = RankedTensorType::get(shape, *element);
  return single(ConstantOp::create(emit.builder, emit.loc,
                                   DenseElementsAttr::get(type, values)));
}

/// A conversion that ignores the node and returns a fixed value.
Conversion constant(ImportedValue value) {
  return [value](GraphImporter &, Node *) -> Outputs { return single(value); };
}

Conversion binary(BinaryKind kind) {
  return [kind](GraphImporter &importer, Node *node) {
    return convertBinary(importer, node, kind);
  };
}

/// torch.max / torch.min of two tensors (`aten::max.other`), which is
/// torch.maximum / torch.minimum; along a dim (`aten::max.dim`) the values
/// and the indices of the extremum (extremumAlong); of a whole tensor its
/// extremum.
Conversion extremum(BinaryKind kind) {
  return [kind](GraphImporter &importer, Node *node) -> Outputs {
    const c10::FunctionSchema *schema = node->maybeSchema();
    StringRef overload = schema ? StringRef(schema->overload_name()) : "";
    if (overload == "other")
      return convertBinary(importer, node, kind);
    bool largest = kind == BinaryKind::Max;
    llvm::Expected<Value> input = importer.tensorInput(node, 0);
    if (!input)
      return input.takeError();
    Emitter emit(importer);
    // Integers and booleans are compared in f64 (a one-hot's maximum in
    // Switch's load-balancing loss), the values given back in their type.
    Type element = tensorType(*input).getElementType();
    Value x = emit.cast(*input, exactFloatType(emit, element));
    RankedTensorType type = tensorType(x);
    if (overload != "dim")
      return single(emit.cast(extremumOfAll(emit, x, largest).first, element));
    llvm::Expected<int64_t> rawDim = importer.intInput(node, 1);
    if (!rawDim)
      return rawDim.takeError();
    llvm::Expected<int64_t> dim = normalizeDim(*rawDim, type.getRank());
    if (!dim)
      return dim.takeError();
    const ImportedValue *keep = importer.namedInput(node, "keepdim");
    bool keepdim = keep && keep->intValue != 0;
    auto [value, index] = extremumAlong(emit, x, *dim, largest);
    return std::vector<ImportedValue>{
        ImportedValue::ofTensor(
            dropDim(emit, emit.cast(value, element), *dim, keepdim)),
        ImportedValue::ofTensor(dropDim(emit, index, *dim, keepdim))};
  };
}

template <typename OpTy>
Conversion unary(double (*scalarFn)(double) = nullptr) {
  return [scalarFn](GraphImporter &importer, Node *node) {
    return convertUnary<OpTy>(importer, node, scalarFn);
  };
}

Conversion compare(StringRef predicate) {
  return [predicate](GraphImporter &importer, Node *node) {
    return convertCompare(importer, node, predicate);
  };
}

double negate(double x) { return -x; }
double sqrtOf(double x) { return std::sqrt(x); }
double rsqrtOf(double x) { return 1.0 / std::sqrt(x); }
double expOf(double x) { return std::exp(x); }
double logOf(double x) { return std::log(x); }
double cosOf(double x) { return std::cos(x); }
double sinOf(double x) { return std::sin(x); }
double tanhOf(double x) { return std::tanh(x); }
double erfOf(double x) { return std::erf(x); }

llvm::StringMap<Conversion> buildConversions() {
  llvm::StringMap<Conversion> table;
  auto add = [&](std::initializer_list<StringRef> kinds, Conversion fn) {
    for (StringRef kind : kinds)
      table[kind] = fn;
  };
  add({"aten::add"}, binary(BinaryKind::Add));
  add({"aten::sub"}, binary(BinaryKind::Sub));
  add({"aten::mul"}, binary(BinaryKind::Mul));
  add({"aten::div", "aten::true_divide"}, binary(BinaryKind::Div));
  add({"aten::floordiv", "aten::floor_divide"}, binary(BinaryKind::FloorDiv));
  add({"aten::remainder"}, binary(BinaryKind::Remainder));
  add({"aten::fmod"}, binary(BinaryKind::Fmod));
  add({"aten::rsub"}, binary(BinaryKind::Rsub));
  add({"aten::maximum"}, binary(BinaryKind::Max));
  add({"aten::minimum"}, binary(BinaryKind::Min));
  // Python's max(a, b) / min(a, b), and max(list) / min(list) of numbers
  // (scripted F.affine_grid's `min(size) <= 0`).
  for (bool largest : {true, false})
    table[largest ? "prim::max" : "prim::min"] =
        [largest](GraphImporter &importer, Node *node) -> Outputs {
      if (node->inputs().size() != 1)
        return convertBinary(importer, node,
                             largest ? BinaryKind::Max : BinaryKind::Min);
      const ImportedValue &list = importer.input(node, 0);
      if (list.kind != ImportedValue::Kind::List || list.items.empty() ||
          !llvm::all_of(list.items, [](const ImportedValue &item) {
            return item.isNumber();
          }))
        return makeError(
            llvm::formatv("{0}() of a list needs a non-empty list of numbers",
                          largest ? "max" : "min"));
      const ImportedValue *best = &list.items.front();
      for (const ImportedValue &item : list.items)
        if (largest ? item.asDouble() > best->asDouble()
                    : item.asDouble() < best->asDouble())
          best = &item;
      return single(*best);
    };
  add({"aten::max"}, extremum(BinaryKind::Max));
  add({"aten::argmax"}, [](GraphImporter &i, Node *n) {
    return convertArgExtremum(i, n, /*largest=*/true);
  });
  add({"aten::argmin"}, [](GraphImporter &i, Node *n) {
    return convertArgExtremum(i, n, /*largest=*/false);
  });
  add({"aten::topk"}, convertTopk);
  add({"aten::sort", "aten::argsort", "aten::msort"}, convertSort);
  add({"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout",
       "aten::feature_alpha_dropout"},
      [](GraphImporter &i, Node *n) { return i.importDropout(n); });
  add({"aten::logsumexp"}, convertLogsumexp);
  add({"aten::roll"}, convertRoll);
  for (auto [name, window] :
       {std::pair{"aten::hann_window", Window::Hann},
        std::pair{"aten::hamming_window", Window::Hamming},
        std::pair{"aten::blackman_window", Window::Blackman},
        std::pair{"aten::bartlett_window", Window::Bartlett},
        std::pair{"aten::kaiser_window", Window::Kaiser}})
    table[name] = [window](GraphImporter &i, Node *n) {
      return convertWindow(i, n, window);
    };
  add({"aten::fft_fftshift"}, [](GraphImporter &i, Node *n) {
    return convertFftShift(i, n, /*inverse=*/false);
  });
  add({"aten::fft_ifftshift"}, [](GraphImporter &i, Node *n) {
    return convertFftShift(i, n, /*inverse=*/true);
  });
  add({"aten::eye"}, convertEye);
  add({"aten::one_hot"}, convertOneHot);
  add({"aten::min"}, extremum(BinaryKind::Min));
  add({"aten::pow"}, binary(BinaryKind::Pow));
  add({"aten::neg"}, unary<NegOp>(negate));
  add({"aten::exp"}, unary<ExpOp>(expOf));
  add({"aten::log"}, unary<LogOp>(logOf));
  add({"aten::sqrt"}, unary<SqrtOp>(sqrtOf));
  add({"aten::rsqrt"}, unary<RsqrtOp>(rsqrtOf));
  add({"aten::tanh"}, unary<TanhOp>(tanhOf));
  add({"aten::sigmoid"}, unary<SigmoidOp>());
  add({"aten::silu"}, unary<SiluOp>());
  add({"aten::cos"}, unary<CosOp>(cosOf));
  add({"aten::sin"}, unary<SinOp>(sinOf));
  add({"aten::erf"}, unary<ErfOp>(erfOf));
  add({"aten::gelu"}, convertGelu);
  add({"aten::relu"}, convertRelu);
  add({"aten::leaky_relu"}, convertLeakyRelu);
  add({"aten::elu"}, convertElu);
  add({"aten::selu"}, convertSelu);
  add({"aten::softplus"}, convertSoftplus);
  add({"aten::mish"}, convertMish);
  add({"aten::hardswish"}, convertHardswish);
  add({"aten::glu"}, convertGlu);
  using Elementary = ElementaryFunction;
  const std::pair<StringRef, Elementary> elementaryFunctions[] = {
      {"log2", Elementary::Log2}, {"log10", Elementary::Log10},
      {"exp2", Elementary::Exp2}, {"expm1", Elementary::Expm1},
      {"sinh", Elementary::Sinh}, {"cosh", Elementary::Cosh},
      {"tan", Elementary::Tan}};
  for (auto [name, function] : elementaryFunctions)
    table[("aten::" + name).str()] = [function](GraphImporter &i, Node *n) {
      return convertElementary(i, n, function);
    };
  add({"aten::logit"}, convertLogit);
  add({"aten::hardtanh"}, [](GraphImporter &i, Node *n) {
    return convertHardtanh(i, n, -1.0, 1.0);
  });
  add({"aten::relu6"}, [](GraphImporter &i, Node *n) {
    return convertHardtanh(i, n, 0.0, 6.0);
  });
  add({"aten::hardsigmoid"}, convertHardsigmoid);
  add({"aten::log_sigmoid"}, convertLogSigmoid);
  add({"aten::celu"}, convertCelu);
  add({"aten::threshold"}, convertThreshold);
  add({"aten::lerp"}, convertLerp);
  add({"aten::addcmul"}, [](GraphImporter &i, Node *n) {
    return convertAddcombine(i, n, /*divide=*/false);
  });
  add({"aten::addcdiv"}, [](GraphImporter &i, Node *n) {
    return convertAddcombine(i, n, /*divide=*/true);
  });
  add({"aten::movedim", "aten::moveaxis"}, convertMovedim);
  add({"aten::amin"}, convertAmin);
  add({"aten::all"},
      [](GraphImporter &i, Node *n) { return convertAllAny(i, n, true); });
  add({"aten::any"},
      [](GraphImporter &i, Node *n) { return convertAllAny(i, n, false); });
  add({"aten::count_nonzero"}, convertCountNonzero);
  add({"aten::nansum"}, [](GraphImporter &i, Node *n) {
    return convertNanReduction(i, n, /*mean=*/false);
  });
  add({"aten::nanmean"}, [](GraphImporter &i, Node *n) {
    return convertNanReduction(i, n, /*mean=*/true);
  });
  add({"aten::diff"}, convertDiff);
  add({"aten::prod"}, convertProd);
  add({"aten::cumprod"}, convertCumprod);
  add({"aten::unfold"}, convertUnfold);
  add({"aten::cosine_similarity"}, convertCosineSimilarity);
  add({"aten::scaled_dot_product_attention"}, convertScaledDotProductAttention);
  add({"aten::rms_norm"}, convertRmsNorm);
  add({"aten::var"},
      [](GraphImporter &i, Node *n) { return convertVariance(i, n, false); });
  add({"aten::std"},
      [](GraphImporter &i, Node *n) { return convertVariance(i, n, true); });
  add({"aten::var_mean"}, [](GraphImporter &i, Node *n) {
    return convertVariance(i, n, false, /*withMean=*/true);
  });
  add({"aten::std_mean"}, [](GraphImporter &i, Node *n) {
    return convertVariance(i, n, true, /*withMean=*/true);
  });
  add({"aten::logical_not"}, convertLogicalNot);
  add({"aten::bitwise_not"}, convertBitwiseNot);
  add({"aten::__and__", "aten::bitwise_and", "aten::logical_and"},
      [](GraphImporter &i, Node *n) {
        return convertLogical(i, n, MaskCombine::And);
      });
  add({"aten::__or__", "aten::bitwise_or", "aten::logical_or"},
      [](GraphImporter &i, Node *n) {
        return convertLogical(i, n, MaskCombine::Or);
      });
  add({"aten::__xor__", "aten::bitwise_xor", "aten::logical_xor"},
      [](GraphImporter &i, Node *n) {
        return convertLogical(i, n, MaskCombine::Xor);
      });
  add({"aten::isin"}, convertIsin);
  add({"aten::masked_select"}, convertMaskedSelect);
  add({"aten::float_power"}, convertFloatPower);
  add({"aten::__lshift__", "aten::bitwise_left_shift"},
      [](GraphImporter &i, Node *n) { return convertShift(i, n, true); });
  add({"aten::__rshift__", "aten::bitwise_right_shift"},
      [](GraphImporter &i, Node *n) { return convertShift(i, n, false); });
  for (StringRef form : {"clamp", "clamp_min", "clamp_max"})
    table[("aten::" + form).str()] = [form](GraphImporter &i, Node *n) {
      return convertClamp(i, n, form);
    };
  add({"aten::abs"}, convertAbs);
  add({"aten::angle"}, convertAngle);
  add({"aten::sign", "aten::sgn"}, convertSign);
  add({"aten::floor"}, [](GraphImporter &importer, Node *node) {
    return convertRounding(importer, node, Rounding::Floor);
  });
  add({"aten::ceil"}, [](GraphImporter &importer, Node *node) {
    return convertRounding(importer, node, Rounding::Ceil);
  });
  add({"aten::trunc", "aten::fix"}, [](GraphImporter &importer, Node *node) {
    return convertRounding(importer, node, Rounding::Trunc);
  });
  add({"aten::round"}, [](GraphImporter &importer, Node *node) {
    return convertRounding(importer, node, Rounding::Round);
  });
  add({"aten::isnan"},
      [](GraphImporter &i, Node *n) { return convertFloatClass(i, n, true); });
  add({"aten::isinf"},
      [](GraphImporter &i, Node *n) { return convertFloatClass(i, n, false); });
  add({"aten::nan_to_num"}, convertNanToNum);
  add({"aten::flip"}, convertFlip);
  add({"aten::frac"}, convertFrac);
  add({"aten::signbit"}, convertSignbit);
  add({"aten::isclose"}, convertIsclose);
  add({"aten::rot90"}, convertRot90);
  add({"aten::diag"}, convertDiag);
  add({"aten::diagonal"}, convertDiagonal);
  add({"aten::meshgrid"}, convertMeshgrid);
  add({"aten::broadcast_tensors"}, convertBroadcastTensors);
  add({"aten::pixel_shuffle"}, [](GraphImporter &i, Node *n) {
    return convertPixelShuffle(i, n, /*unshuffle=*/false);
  });
  add({"aten::pixel_unshuffle"}, [](GraphImporter &i, Node *n) {
    return convertPixelShuffle(i, n, /*unshuffle=*/true);
  });
  add({"aten::channel_shuffle", "aten::native_channel_shuffle"},
      convertChannelShuffle);
  add({"aten::_weight_norm"}, convertWeightNorm);
  // warnings.warn in scripted code (F.tanh's deprecation): nothing to run.
  add({"aten::warn"}, [](GraphImporter &, Node *) -> Outputs {
    return std::vector<ImportedValue>{};
  });
  add({"aten::square"}, convertSquare);
  add({"aten::reciprocal"}, convertReciprocal);
  add({"aten::Bool"}, convertBool);
  add({"aten::eq"}, compare("eq"));
  add({"aten::ne"}, compare("ne"));
  add({"aten::lt"}, compare("lt"));
  add({"aten::le"}, compare("le"));
  add({"aten::gt"}, compare("gt"));
  add({"aten::ge"}, compare("ge"));
  add({"aten::__is__"}, [](GraphImporter &i, Node *n) {
    return convertIdentity(i, n, /*negated=*/false);
  });
  add({"aten::__not__"}, convertNot);
  // A scripted `for i in range(lo, hi, step)`: its trip count, and the
  // value of its i-th iteration.
  add({"aten::__range_length"}, [](GraphImporter &i, Node *n) -> Outputs {
    llvm::Expected<int64_t> lo = i.intInput(n, 0), hi = i.intInput(n, 1),
                            step = i.intInput(n, 2);
    if (!lo || !hi || !step || *step == 0) {
      llvm::consumeError(lo.takeError());
      llvm::consumeError(hi.takeError());
      llvm::consumeError(step.takeError());
      return makeError("range() needs constant bounds and a nonzero step");
    }
    int64_t span = *step > 0 ? *hi - *lo : *lo - *hi;
    int64_t stride = *step > 0 ? *step : -*step;
    return single(
        ImportedValue::ofInt(span <= 0 ? 0 : (span + stride - 1) / stride));
  });
  add({"aten::__derive_index"}, [](GraphImporter &i, Node *n) -> Outputs {
    llvm::Expected<int64_t> index = i.intInput(n, 0), start = i.intInput(n, 1),
                            step = i.intInput(n, 2);
    if (llvm::Error error = requireAll("range() needs constant bounds and step",
                                       index, start, step))
      return std::move(error);
    return single(ImportedValue::ofInt(*start + *index * *step));
  });
  add({"aten::__contains__"}, convertContains);
  add({"aten::str"}, convertStr);
  add({"aten::item"}, convertItem);
  add({"prim::requires_grad"}, convertRequiresGrad);
  add({"aten::find"}, convertFind);
  add({"aten::__isnot__"}, [](GraphImporter &i, Node *n) {
    return convertIdentity(i, n, /*negated=*/true);
  });
  add({"aten::view", "aten::reshape"}, convertView);
  add({"aten::flatten"}, convertFlatten);
  add({"aten::unflatten"}, convertUnflatten);
  add({"aten::unsqueeze"}, convertUnsqueeze);
  add({"aten::squeeze"}, convertSqueeze);
  auto transposeAs = [](TransposeForm form) {
    return [form](GraphImporter &i, Node *n) {
      return convertPermute(i, n, form);
    };
  };
  add({"aten::transpose", "aten::t"}, transposeAs(TransposeForm::SwapTwo));
  add({"aten::permute"}, transposeAs(TransposeForm::Permute));
  add({"aten::numpy_T"}, transposeAs(TransposeForm::Reverse));
  add({"aten::mT"}, transposeAs(TransposeForm::Matrix));
  add({"aten::mH", "aten::adjoint", "aten::matrix_H"},
      transposeAs(TransposeForm::Adjoint));
  add({"aten::conj", "aten::_conj", "aten::conj_physical"},
      [](GraphImporter &i, Node *n) { return convertConj(i, n, false); });
  add({"aten::resolve_conj", "aten::resolve_neg"},
      [](GraphImporter &i, Node *n) { return convertConj(i, n, true); });
  add({"aten::slice"}, convertSlice);
  add({"aten::select"}, convertSelect);
  add({"aten::chunk"},
      [](GraphImporter &i, Node *n) { return convertSplit(i, n, "chunk"); });
  add({"aten::split", "aten::split_with_sizes"},
      [](GraphImporter &i, Node *n) { return convertSplit(i, n, "split"); });
  add({"aten::unbind"},
      [](GraphImporter &i, Node *n) { return convertSplit(i, n, "unbind"); });
  add({"aten::tensor_split"}, [](GraphImporter &i, Node *n) {
    return convertSplit(i, n, "tensor_split");
  });
  add({"aten::cat", "aten::concat"},
      [](GraphImporter &i, Node *n) { return convertCat(i, n, false); });
  add({"aten::stack"},
      [](GraphImporter &i, Node *n) { return convertCat(i, n, true); });
  add({"aten::expand"},
      [](GraphImporter &i, Node *n) { return convertExpand(i, n, false); });
  add({"aten::expand_as"},
      [](GraphImporter &i, Node *n) { return convertExpand(i, n, true); });
  add({"aten::repeat"}, convertRepeat);
  add({"aten::repeat_interleave"}, convertRepeatInterleave);
  add({"aten::narrow", "aten::narrow_copy"}, convertNarrow);
  add({"aten::pad", "aten::constant_pad_nd", "aten::reflection_pad1d",
       "aten::reflection_pad2d", "aten::reflection_pad3d",
       "aten::replication_pad1d", "aten::replication_pad2d",
       "aten::replication_pad3d"},
      convertConstantPad);
  add({"aten::view_as", "aten::reshape_as"}, convertViewAs);
  add({"aten::index"}, convertIndex);
  add({"aten::index_select"}, convertIndexSelect);
  add({"aten::scatter"}, [](GraphImporter &i, Node *n) {
    return convertScatter(i, n, {ScatterCombine::Mean, false});
  });
  add({"aten::max_unpool2d"},
      [](GraphImporter &i, Node *n) { return convertMaxUnpool(i, n, 2); });
  add({"aten::max_unpool3d"},
      [](GraphImporter &i, Node *n) { return convertMaxUnpool(i, n, 3); });
  add({"aten::scatter_add"}, [](GraphImporter &i, Node *n) {
    return convertScatter(i, n, {ScatterCombine::Sum, true});
  });
  add({"aten::scatter_reduce"}, [](GraphImporter &i, Node *n) {
    return convertScatter(i, n, {ScatterCombine::Sum, true});
  });
  add({"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::_convolution",
       "aten::_convolution_mode", "aten::conv_transpose1d",
       "aten::conv_transpose2d", "aten::conv_transpose3d"},
      convertConvolution);
  add({"aten::index_add"}, convertIndexAdd);
  add({"aten::index_fill"}, convertIndexFill);
  add({"aten::index_put"}, convertIndexPut);
  add({"aten::gather"}, convertGather);
  add({"aten::take_along_dim"}, convertTakeAlongDim);
  add({"aten::to"},
      [](GraphImporter &i, Node *n) { return convertTo(i, n, false); });
  add({"aten::type_as"},
      [](GraphImporter &i, Node *n) { return convertTo(i, n, true); });
  for (StringRef form : {"full", "ones", "zeros", "empty", "full_like",
                         "ones_like", "zeros_like", "empty_like", "new_full",
                         "new_ones", "new_zeros", "new_empty"})
    table[("aten::" + form).str()] = [form](GraphImporter &i, Node *n) {
      return convertFull(i, n, form);
    };
  // `x.zero_()` and `x.fill_(v)` (imported as aten::zero / aten::fill,
  // written into x): x's shape and dtype, one value.
  add({"aten::zero"}, [](GraphImporter &i, Node *n) {
    return convertFull(i, n, "zeros_like");
  });
  add({"aten::fill"},
      [](GraphImporter &i, Node *n) { return convertFull(i, n, "full_like"); });
  add({"aten::copy"}, convertCopy);
  add({"aten::arange"}, convertArange);
  add({"aten::linspace"}, [](GraphImporter &i, Node *n) {
    return convertLinspace(i, n, /*logarithmic=*/false);
  });
  add({"aten::logspace"}, [](GraphImporter &i, Node *n) {
    return convertLinspace(i, n, /*logarithmic=*/true);
  });
  add({"aten::tensor"}, convertTensorOfData);
  add({"aten::triu"},
      [](GraphImporter &i, Node *n) { return convertTriangle(i, n, true); });
  add({"aten::triu_indices"}, [](GraphImporter &i, Node *n) {
    return convertTriangleIndices(i, n, true);
  });
  add({"aten::tril_indices"}, [](GraphImporter &i, Node *n) {
    return convertTriangleIndices(i, n, false);
  });
  add({"aten::take"}, convertTake);
  add({"aten::embedding_bag", "aten::_embedding_bag"}, convertEmbeddingBag);
  add({"aten::rrelu"}, convertRrelu);
  add({"aten::linalg_matrix_norm"}, convertMatrixNorm);
  add({"aten::linalg_norm"}, convertLinalgNorm);
  add({"aten::tril"},
      [](GraphImporter &i, Node *n) { return convertTriangle(i, n, false); });
  add({"aten::masked_scatter"}, convertMaskedScatter);
  add({"aten::masked_fill"},
      [](GraphImporter &i, Node *n) { return convertMaskedFill(i, n, false); });
  add({"aten::where"},
      [](GraphImporter &i, Node *n) { return convertMaskedFill(i, n, true); });
  add({"aten::nonzero_numpy"}, convertNonzeroTuple);
  add({"aten::nonzero", "aten::argwhere"}, convertNonzero);
  add({"aten::nonzero_static"}, convertNonzeroStatic);
  add({"aten::sum"}, convertReduce<ReduceSumOp>);
  add({"aten::cumsum"}, convertCumsum);
  add({"aten::mean"}, convertReduce<ReduceMeanOp>);
  add({"aten::amax"}, convertReduce<ReduceMaxOp>);
  add({"aten::frobenius_norm", "aten::norm", "aten::linalg_vector_norm"},
      convertVectorNorm);
  add({"aten::softmax", "aten::_softmax"}, convertSoftmax<SoftmaxOp>);
  add({"aten::log_softmax", "aten::_log_softmax"},
      convertSoftmax<LogSoftmaxOp>);
  add({"aten::layer_norm"}, convertLayerNorm);
  add({"aten::group_norm"}, convertGroupNorm);
  add({"aten::batch_norm"}, [](GraphImporter &i, Node *n) {
    return convertBatchOrInstanceNorm(i, n, /*instance=*/false);
  });
  add({"aten::instance_norm"}, [](GraphImporter &i, Node *n) {
    return convertBatchOrInstanceNorm(i, n, /*instance=*/true);
  });
  add({"aten::matmul", "aten::mm", "aten::bmm", "aten::mv", "aten::dot"},
      convertMatmul);
  add({"aten::linear"}, convertLinear);
  add({"aten::addmm"}, [](GraphImporter &importer, Node *node) {
    return convertAddProduct(importer, node, 2);
  });
  add({"aten::einsum"}, convertEinsum);
  add({"aten::baddbmm"}, [](GraphImporter &importer, Node *node) {
    return convertAddProduct(importer, node, 3);
  });
  add({"aten::outer", "aten::ger"}, convertOuter);
  add({"aten::embedding"}, convertEmbedding);
  add({"aten::view_as_complex"}, convertViewAsComplex);
  add({"aten::view_as_real"}, convertViewAsReal);
  add({"aten::real"},
      [](GraphImporter &i, Node *n) { return convertComplexPart(i, n, true); });
  add({"aten::imag"}, [](GraphImporter &i, Node *n) {
    return convertComplexPart(i, n, false);
  });
  add({"aten::size"}, convertSize);
  for (StringRef what : {"len", "dim", "numel"})
    table[("aten::" + what).str()] = [what](GraphImporter &i, Node *n) {
      return convertLength(i, n, what);
    };
  add({"aten::__getitem__"}, convertGetItem);
  // `list(xs)`: a copy of a list, which the import's values never change.
  add({"aten::list"}, [](GraphImporter &i, Node *n) -> Outputs {
    const ImportedValue &list = i.input(n, 0);
    if (list.kind != ImportedValue::Kind::List)
      return makeError("list() of something other than a list");
    return single(list);
  });
  add({"prim::dtype"}, convertDtype);
  // titan's tensors are never nested (nn.MultiheadAttention asks).
  add({"prim::is_nested"}, constant(ImportedValue::ofBool(false)));
  // Autocast is not in effect in a compiled program (titan's mixed
  // precision is the config's [training] dtypes).
  add({"aten::is_autocast_enabled"}, constant(ImportedValue::ofBool(false)));
  // A compiled program computes on titan's devices, not CUDA tensors of
  // PyTorch's, and is differentiated (nn.MultiheadAttention then takes the
  // path it trains with, not its inference fast path).
  add({"prim::is_cuda"}, constant(ImportedValue::ofBool(false)));
  // Whether a tensor holds floating-point (or complex) numbers, as scripted
  // input checks ask (F.affine_grid's `theta.is_floating_point()`).
  add({"aten::is_floating_point", "aten::is_complex"},
      [](GraphImporter &importer, Node *node) -> Outputs {
        const ImportedValue &x = importer.input(node, 0);
        bool complex = x.isComplex();
        if (!complex && !x.isTensor())
          return makeError("a dtype question of something other than a "
                           "tensor");
        if (StringRef(node->kind().toUnqualString()) == "is_complex")
          return single(ImportedValue::ofBool(complex));
        return single(ImportedValue::ofBool(
            !complex && isa<FloatType>(tensorType(x.tensor).getElementType())));
      });
  add({"aten::is_grad_enabled"}, constant(ImportedValue::ofBool(true)));
  add({"prim::device"},
      constant(ImportedValue::ofString("cpu", ImportedValue::Kind::Device)));
  add({"prim::Constant"}, convertTensorConstant);
  addMathConversions(table);
  addPoolingConversions(table);
  addFftConversions(table);
  addInterpolateConversions(table);
  addLossConversions(table);
  addRecurrentConversions(table);
  addProductConversions(table);
  addSpecialConversions(table);
  addDistanceConversions(table);
  addGridSampleConversions(table);
  addCountConversions(table);
  addRandomConversions(table);
  addStatisticsConversions(table);
  addOrderConversions(table);
  return table;
}

} // namespace

const llvm::StringMap<Conversion> &mlir::titan::import::getAtenConversions() {
  static const llvm::StringMap<Conversion> table = buildConversions();
  return table;
}
