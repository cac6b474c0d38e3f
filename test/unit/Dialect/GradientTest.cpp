//===- GradientTest.cpp - finite-difference checks of the VJP rules -------===//
//
// For every VJP rule of the compute ops: a one-op function @f in f64, random
// inputs and a random result cotangent dy; the rule is built into a function
// @vjp(inputs..., dy) -> operand cotangents, the module is verified, and
// both functions run in the reference interpreter. Every element i of every
// differentiable operand x must satisfy
//   vjp(x, dy)[i] ~= <dy, f(x + eps e_i) - f(x - eps e_i)> / (2 eps)
// (central differences). Rules at non-differentiable points (ties of max and
// reduce_max) are checked against PyTorch's values exactly.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TitanDialect.h"
#include "titan/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// One VJP rule to check: `source` defines @f whose body is one op applied to
/// the function's arguments in order, then a return of its result.
struct GradientCase {
  std::string source;
  /// Values of the integer and i1 arguments, by argument index.
  std::map<unsigned, std::vector<int64_t>> integers = {};
  /// Float arguments drawn from [0.5, 2] instead of N(0, 1).
  std::set<unsigned> positive = {};
  /// Float operands whose cotangent must be null (e.g. RoPE tables).
  std::set<unsigned> constant = {};
  /// Step and tolerance of the central differences (relative to
  /// max(1, |cotangent|)).
  double eps = 1e-6;
  double tolerance = 1e-6;
};

/// Parses `source` with the titan and func dialects.
OwningOpRef<ModuleOp> parse(MLIRContext &context, StringRef source) {
  DialectRegistry registry;
  registry.insert<TitanDialect, func::FuncDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  return parseSourceString<ModuleOp>(source, &context);
}

/// Appends @vjp(args of @f..., dy) returning the non-null operand
/// cotangents of @f's op given the cotangent dy of its first result (the
/// one @f returns; its other results get none); returns the operand index
/// of each result, or failure when the rule fails.
FailureOr<SmallVector<unsigned>> buildVJPFunction(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("f");
  Operation *op = &forward.getBody().front().front();
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  SmallVector<Type> inputs(forward.getArgumentTypes());
  inputs.push_back(op->getResult(0).getType());
  auto vjp = func::FuncOp::create(builder, op->getLoc(), "vjp",
                                  builder.getFunctionType(inputs, {}));
  Block *body = vjp.addEntryBlock();
  builder.setInsertionPointToStart(body);
  IRMapping mapping;
  mapping.map(forward.getArguments(),
              body->getArguments().take_front(forward.getNumArguments()));
  Operation *clone = builder.clone(*op, mapping);
  auto differentiable = dyn_cast<DifferentiableOpInterface>(clone);
  if (!differentiable)
    return failure();
  SmallVector<Value> resultGrads(op->getNumResults());
  resultGrads.front() = body->getArguments().back();
  FailureOr<SmallVector<Value>> grads =
      differentiable.buildVJP(builder, resultGrads);
  if (failed(grads) || grads->size() != op->getNumOperands())
    return failure();
  SmallVector<Value> results;
  SmallVector<unsigned> indices;
  for (auto [index, grad] : llvm::enumerate(*grads)) {
    if (!grad)
      continue;
    results.push_back(grad);
    indices.push_back(index);
  }
  func::ReturnOp::create(builder, op->getLoc(), results);
  vjp.setType(builder.getFunctionType(inputs, ValueRange(results).getTypes()));
  return indices;
}

/// A tensor of `type` (static, f64, f32 or integer) filled from `rng`, or with
/// `values` for integer and i1 types.
TensorValue makeTensor(RankedTensorType type, std::mt19937_64 &rng,
                       bool positive, ArrayRef<int64_t> values) {
  ElementType kind = *getInterpretedElementType(type.getElementType());
  TensorValue tensor(kind, type.getShape());
  if (isFloatElementType(kind)) {
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(0.5, 2.0);
    std::visit(
        [&](auto &elements) {
          using T = typename std::decay_t<decltype(elements)>::value_type;
          if constexpr (std::is_floating_point_v<T>)
            for (T &value : elements)
              value = T(positive ? uniform(rng) : normal(rng));
        },
        tensor.getStorage());
    return tensor;
  }
  EXPECT_EQ(int64_t(values.size()), tensor.getNumElements())
      << "integer argument values";
  if (kind == ElementType::I1)
    llvm::copy(values, tensor.getMutable<uint8_t>().begin());
  else
    llvm::copy(values, tensor.getMutable<int64_t>().begin());
  return tensor;
}

/// Runs `interpreter` on `arguments`; the result list, empty on failure.
std::vector<TensorValue> run(const Interpreter &interpreter,
                             ArrayRef<TensorValue> arguments) {
  FailureOr<std::vector<TensorValue>> results = interpreter.run(arguments);
  EXPECT_TRUE(succeeded(results));
  return succeeded(results) ? std::move(*results) : std::vector<TensorValue>();
}

/// The elements of a float tensor as doubles.
std::vector<double> toDoubles(const TensorValue &tensor) {
  return std::visit(
      [](const auto &elements) {
        return std::vector<double>(elements.begin(), elements.end());
      },
      tensor.getStorage());
}

/// <dy, y> of two float tensors of one type.
double dot(const TensorValue &dy, const TensorValue &y) {
  double sum = 0;
  for (auto [a, b] : llvm::zip_equal(toDoubles(dy), toDoubles(y)))
    sum += a * b;
  return sum;
}

/// Checks the VJP rule of the op of `c` against central differences.
void checkGradient(const GradientCase &c) {
  SCOPED_TRACE(c.source);
  MLIRContext context;
  OwningOpRef<ModuleOp> module = parse(context, c.source);
  ASSERT_TRUE(module);
  auto forward = module->lookupSymbol<func::FuncOp>("f");
  Operation *op = &forward.getBody().front().front();
  ASSERT_EQ(op->getNumOperands(), forward.getNumArguments());
  for (auto [operand, arg] :
       llvm::zip_equal(op->getOperands(), forward.getArguments()))
    ASSERT_EQ(operand, arg) << "the op must use the arguments in order";

  FailureOr<SmallVector<unsigned>> differentiated = buildVJPFunction(*module);
  ASSERT_TRUE(succeeded(differentiated));
  ASSERT_TRUE(succeeded(verify(*module)));
  // Exactly the float operands not marked constant have cotangents.
  SmallVector<unsigned> expected;
  for (auto [index, type] : llvm::enumerate(forward.getArgumentTypes()))
    if (getElementTypeOrSelf(type).isF64() && !c.constant.count(index))
      expected.push_back(index);
  ASSERT_EQ(*differentiated, expected);

  std::mt19937_64 rng(42);
  std::vector<TensorValue> inputs;
  for (auto [index, type] : llvm::enumerate(forward.getArgumentTypes())) {
    auto it = c.integers.find(index);
    inputs.push_back(
        makeTensor(cast<RankedTensorType>(type), rng, c.positive.count(index),
                   it == c.integers.end() ? ArrayRef<int64_t>()
                                          : ArrayRef<int64_t>(it->second)));
  }
  auto resultType = cast<RankedTensorType>(forward.getResultTypes()[0]);
  TensorValue dy = makeTensor(resultType, rng, false, {});

  FailureOr<Interpreter> f = Interpreter::create(*module, "f", 1);
  FailureOr<Interpreter> vjp = Interpreter::create(*module, "vjp", 1);
  ASSERT_TRUE(succeeded(f) && succeeded(vjp));
  std::vector<TensorValue> vjpInputs = inputs;
  vjpInputs.push_back(dy);
  std::vector<TensorValue> grads = run(*vjp, vjpInputs);
  ASSERT_EQ(grads.size(), differentiated->size());

  for (auto [operand, grad] : llvm::zip_equal(*differentiated, grads)) {
    ASSERT_EQ(grad.getShape(), inputs[operand].getShape());
    for (int64_t i = 0; i < grad.getNumElements(); ++i) {
      std::vector<TensorValue> perturbed = inputs;
      double &x = perturbed[operand].getMutable<double>()[i];
      double original = x;
      x = original + c.eps;
      double plus = dot(dy, run(*f, perturbed).at(0));
      x = original - c.eps;
      double minus = dot(dy, run(*f, perturbed).at(0));
      double numeric = (plus - minus) / (2 * c.eps);
      double analytic = grad.get<double>()[i];
      EXPECT_NEAR(analytic, numeric,
                  c.tolerance * std::max(1.0, std::abs(analytic)))
          << "operand " << operand << ", element " << i;
    }
  }
}

/// The source of @f(`args`) -> `result` whose body is `%0 = titan.<op>`
/// (`op` is the op's text after "titan.", through its types); of an op of
/// `numResults` > 1 results, the function returns the first.
std::string function(StringRef args, StringRef op, StringRef result,
                     unsigned numResults = 1) {
  std::string results =
      numResults == 1 ? "%0" : "%0:" + std::to_string(numResults);
  StringRef first = numResults == 1 ? "%0" : "%0#0";
  return ("func.func @f(" + args + ") -> " + result + " {\n  " + results +
          " = titan." + op + "\n  return " + first + " : " + result + "\n}")
      .str();
}

TEST(GradientTest, ElementwiseBinary) {
  const char *args = "%a: tensor<3x4xf64>, %b: tensor<3x4xf64>";
  for (const char *name : {"add", "sub", "mul", "max"})
    checkGradient(
        {function(args, std::string(name) + " %a, %b : tensor<3x4xf64>",
                  "tensor<3x4xf64>")});
  // Division by values away from 0.
  checkGradient(
      {function(args, "div %a, %b : tensor<3x4xf64>", "tensor<3x4xf64>"),
       {},
       {1}});
}

TEST(GradientTest, ElementwiseUnary) {
  for (StringRef name : {"neg", "exp", "tanh", "sigmoid", "silu", "cos", "sin",
                         "erf", "log", "sqrt", "rsqrt"}) {
    std::set<unsigned> positive;
    if (name == "log" || name == "sqrt" || name == "rsqrt")
      positive.insert(0);
    checkGradient(
        {function("%a: tensor<2x5xf64>", name.str() + " %a : tensor<2x5xf64>",
                  "tensor<2x5xf64>"),
         {},
         positive});
  }
}

TEST(GradientTest, GeluAndScale) {
  for (StringRef op : {"gelu %a approximate none", "gelu %a approximate tanh",
                       "scale %a by -1.250000e-01"})
    checkGradient(
        {function("%a: tensor<2x5xf64>", op.str() + " : tensor<2x5xf64>",
                  "tensor<2x5xf64>")});
}

TEST(GradientTest, Cast) {
  // Through f32 the function is rounded, so the step is large; the map is
  // linear, so only rounding limits the accuracy.
  checkGradient({function("%a: tensor<2x3xf64>",
                          "cast %a : tensor<2x3xf64> to tensor<2x3xf32>",
                          "tensor<2x3xf32>"),
                 {},
                 {},
                 {},
                 /*eps=*/1e-2,
                 /*tolerance=*/1e-4});
}

TEST(GradientTest, Select) {
  checkGradient({function("%c: tensor<2x3xi1>, %a: tensor<2x3xf64>, "
                          "%b: tensor<2x3xf64>",
                          "select %c, %a, %b : tensor<2x3xi1>, tensor<2x3xf64>",
                          "tensor<2x3xf64>"),
                 {{0, {1, 0, 0, 1, 1, 0}}}});
}

TEST(GradientTest, Reductions) {
  for (StringRef name : {"reduce_sum", "reduce_mean", "reduce_max"}) {
    checkGradient({function("%a: tensor<2x3x4xf64>",
                            name.str() + " %a dims [0, 2] : tensor<2x3x4xf64> "
                                         "-> tensor<3xf64>",
                            "tensor<3xf64>")});
    checkGradient(
        {function("%a: tensor<2x3x4xf64>",
                  name.str() + " %a dims [1] keepdim : "
                               "tensor<2x3x4xf64> -> tensor<2x1x4xf64>",
                  "tensor<2x1x4xf64>")});
  }
}

TEST(GradientTest, Softmax) {
  for (StringRef op : {"softmax %a dim 1", "softmax %a dim 2",
                       "log_softmax %a dim 2", "log_softmax %a dim 0"})
    checkGradient(
        {function("%a: tensor<2x3x4xf64>", op.str() + " : tensor<2x3x4xf64>",
                  "tensor<2x3x4xf64>")});
}

TEST(GradientTest, Norms) {
  checkGradient({function("%x: tensor<2x3x5xf64>, %w: tensor<5xf64>",
                          "rms_norm %x, %w eps 1.000000e-05 : "
                          "tensor<2x3x5xf64>, tensor<5xf64>",
                          "tensor<2x3x5xf64>")});
  checkGradient(
      {function("%x: tensor<2x3x5xf64>, %w: tensor<5xf64>, %b: tensor<5xf64>",
                "layer_norm %x, %w, %b eps 1.000000e-05 : tensor<2x3x5xf64>, "
                "tensor<5xf64>",
                "tensor<2x3x5xf64>")});
}

TEST(GradientTest, Matmul) {
  // lhs and rhs shapes, flags and result shape of plain, transposed, batched
  // and shared-rhs (a rank-2 rhs broadcast over the batch) products of M=3,
  // K=4, N=2.
  struct Product {
    const char *lhs, *rhs, *flags, *result;
  };
  for (const Product &p : std::vector<Product>{
           {"3x4", "4x2", "", "3x2"},
           {"4x3", "4x2", " transpose_lhs", "3x2"},
           {"3x4", "2x4", " transpose_rhs", "3x2"},
           {"4x3", "2x4", " transpose_lhs transpose_rhs", "3x2"},
           {"2x3x4", "2x4x2", "", "2x3x2"},
           {"2x4x3", "2x2x4", " transpose_lhs transpose_rhs", "2x3x2"},
           {"2x2x3x4", "4x2", "", "2x2x3x2"},
           {"2x3x4", "2x4", " transpose_rhs", "2x3x2"},
           {"2x4x3", "4x2", " transpose_lhs", "2x3x2"},
           {"2x2x4x3", "2x4", " transpose_lhs transpose_rhs", "2x2x3x2"}}) {
    std::string lhs = std::string("tensor<") + p.lhs + "xf64>";
    std::string rhs = std::string("tensor<") + p.rhs + "xf64>";
    std::string result = std::string("tensor<") + p.result + "xf64>";
    checkGradient({function("%a: " + lhs + ", %b: " + rhs,
                            "matmul %a, %b" + std::string(p.flags) + " : " +
                                lhs + ", " + rhs + " -> " + result,
                            result)});
  }
  // With an addend, whose cotangent is the result's.
  checkGradient({function("%a: tensor<2x3x4xf64>, %b: tensor<2x4xf64>, "
                          "%c: tensor<2x3x2xf64>",
                          "matmul %a, %b transpose_rhs plus %c : "
                          "tensor<2x3x4xf64>, tensor<2x4xf64> -> "
                          "tensor<2x3x2xf64>",
                          "tensor<2x3x2xf64>")});
}

TEST(GradientTest, Embedding) {
  // Repeated ids accumulate into one row; row 4 is never read.
  checkGradient({function("%t: tensor<6x3xf64>, %ids: tensor<2x3xi64>",
                          "embedding %t, %ids : tensor<6x3xf64>, "
                          "tensor<2x3xi64> -> tensor<2x3x3xf64>",
                          "tensor<2x3x3xf64>"),
                 {{1, {0, 2, 2, 5, 0, 1}}}});
}

TEST(GradientTest, Rope) {
  for (StringRef style : {"interleaved", "half"})
    checkGradient({function("%x: tensor<2x3x2x4xf64>, %cos: tensor<3x2xf64>, "
                            "%sin: tensor<3x2xf64>",
                            "rope %x, %cos, %sin " + style.str() +
                                " : tensor<2x3x2x4xf64>, tensor<3x2xf64>",
                            "tensor<2x3x2x4xf64>"),
                   {},
                   {},
                   /*constant=*/{1, 2}});
}

TEST(GradientTest, Attention) {
  // Causal with two query heads per KV head, and full MHA with a scale.
  checkGradient({function("%q: tensor<2x4x3x4xf64>, %k: tensor<2x2x3x4xf64>, "
                          "%v: tensor<2x2x3x4xf64>",
                          "attention %q, %k, %v causal : tensor<2x4x3x4xf64>, "
                          "tensor<2x2x3x4xf64>",
                          "tensor<2x4x3x4xf64>", /*numResults=*/2)});
  checkGradient({function("%q: tensor<1x2x4x3xf64>, %k: tensor<1x2x4x3xf64>, "
                          "%v: tensor<1x2x4x3xf64>",
                          "attention %q, %k, %v scale 7.000000e-01 : "
                          "tensor<1x2x4x3xf64>, tensor<1x2x4x3xf64>",
                          "tensor<1x2x4x3xf64>", /*numResults=*/2)});
}

TEST(GradientTest, CrossEntropy) {
  // One label ignored by the default ignore_index, two by a custom one.
  checkGradient(
      {function("%logits: tensor<2x3x5xf64>, %labels: tensor<2x3xi64>",
                "cross_entropy %logits, %labels : tensor<2x3x5xf64>, "
                "tensor<2x3xi64> -> tensor<f64>",
                "tensor<f64>"),
       {{1, {4, -100, 0, 2, 2, 1}}}});
  checkGradient({function("%logits: tensor<4x5xf64>, %labels: tensor<4xi32>",
                          "cross_entropy %logits, %labels ignore_index 3 : "
                          "tensor<4x5xf64>, tensor<4xi32> -> tensor<f64>",
                          "tensor<f64>"),
                 {{1, {3, 1, 3, 0}}}});
}

TEST(GradientTest, ShapeOps) {
  checkGradient({function("%a: tensor<2x3x4xf64>",
                          "reshape %a : tensor<2x3x4xf64> -> tensor<6x2x2xf64>",
                          "tensor<6x2x2xf64>")});
  checkGradient({function("%a: tensor<2x3x4xf64>",
                          "transpose %a [2, 0, 1] : tensor<2x3x4xf64> -> "
                          "tensor<4x2x3xf64>",
                          "tensor<4x2x3xf64>")});
  // Strided slice with offsets: the cotangent is padded back with zeros.
  checkGradient({function("%a: tensor<3x7x4xf64>",
                          "slice %a [1, 1, 0] to [3, 7, 4] step [1, 2, 3] : "
                          "tensor<3x7x4xf64> -> tensor<2x3x2xf64>",
                          "tensor<2x3x2xf64>")});
  checkGradient({function("%a: tensor<2x1x3xf64>, %b: tensor<2x2x3xf64>, "
                          "%c: tensor<2x3x3xf64>",
                          "concat %a, %b, %c dim 1 : (tensor<2x1x3xf64>, "
                          "tensor<2x2x3xf64>, tensor<2x3x3xf64>) -> "
                          "tensor<2x6x3xf64>",
                          "tensor<2x6x3xf64>")});
}

TEST(GradientTest, BroadcastInDim) {
  // A bias over new leading dims, a size-1 dim expanded, and dims mapped
  // out of order (a transpose).
  struct Broadcast {
    const char *operand, *dims;
  };
  for (const Broadcast &b :
       std::vector<Broadcast>{{"tensor<4xf64>", "[2]"},
                              {"tensor<3x1xf64>", "[1, 2]"},
                              {"tensor<4x2xf64>", "[2, 0]"}})
    checkGradient({function(std::string("%a: ") + b.operand,
                            std::string("broadcast_in_dim %a dims ") + b.dims +
                                " : " + b.operand + " -> tensor<2x3x4xf64>",
                            "tensor<2x3x4xf64>")});
}

/// Builds @vjp for `source` and runs it on `inputs`; returns its results.
std::vector<TensorValue> runVJP(StringRef source,
                                std::vector<TensorValue> inputs) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module = parse(context, source);
  EXPECT_TRUE(module);
  EXPECT_TRUE(succeeded(buildVJPFunction(*module)));
  EXPECT_TRUE(succeeded(verify(*module)));
  FailureOr<Interpreter> vjp = Interpreter::create(*module, "vjp", 1);
  EXPECT_TRUE(succeeded(vjp));
  return run(*vjp, inputs);
}

/// An f64 tensor of `shape` holding `values`.
TensorValue f64(ArrayRef<int64_t> shape, ArrayRef<double> values) {
  TensorValue tensor(ElementType::F64, shape);
  llvm::copy(values, tensor.getMutable<double>().begin());
  return tensor;
}

TEST(GradientTest, MaxSplitsTiesLikeTorchMaximum) {
  std::vector<TensorValue> grads =
      runVJP(R"mlir(
    func.func @f(%a: tensor<3xf64>, %b: tensor<3xf64>) -> tensor<3xf64> {
      %0 = titan.max %a, %b : tensor<3xf64>
      return %0 : tensor<3xf64>
    })mlir",
             {f64({3}, {1, 2, 3}), f64({3}, {1, 5, 0}), f64({3}, {4, 8, 16})});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[0].get<double>(), ArrayRef<double>({2, 0, 16}));
  EXPECT_EQ(grads[1].get<double>(), ArrayRef<double>({2, 8, 0}));
}

TEST(GradientTest, ReduceMaxSharesTiesLikeTorchAmax) {
  std::vector<TensorValue> grads =
      runVJP(R"mlir(
    func.func @f(%a: tensor<2x3xf64>) -> tensor<2xf64> {
      %0 = titan.reduce_max %a dims [1] : tensor<2x3xf64> -> tensor<2xf64>
      return %0 : tensor<2xf64>
    })mlir",
             {f64({2, 3}, {1, 4, 4, 7, 7, 7}), f64({2}, {6, 9})});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].get<double>(), ArrayRef<double>({0, 3, 3, 3, 3, 3}));
}

TEST(GradientTest, NonDifferentiableOperands) {
  // compare, iota and constant have no cotangents; a cast from integers and
  // integer shape ops give none either.
  MLIRContext context;
  OwningOpRef<ModuleOp> module = parse(context, R"mlir(
    func.func @f(%a: tensor<3xf64>, %i: tensor<3xi64>) -> (tensor<3xi1>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xi64>) {
      %0 = titan.compare lt, %a, %a : tensor<3xf64> -> tensor<3xi1>
      %1 = titan.iota dim 0 : tensor<3xf64>
      %2 = titan.constant dense<1.0> : tensor<3xf64>
      %3 = titan.cast %i : tensor<3xi64> to tensor<3xf64>
      %4 = titan.transpose %i [0] : tensor<3xi64> -> tensor<3xi64>
      return %0, %1, %2, %3, %4 : tensor<3xi1>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xi64>
    })mlir");
  ASSERT_TRUE(module);
  auto function = module->lookupSymbol<func::FuncOp>("f");
  Block &body = function.getBody().front();
  OpBuilder builder(&context);
  builder.setInsertionPoint(body.getTerminator());
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    Value grad = body.getArgument(0);
    auto differentiable = dyn_cast<DifferentiableOpInterface>(&op);
    ASSERT_TRUE(differentiable) << op.getName().getStringRef().str();
    FailureOr<SmallVector<Value>> grads = differentiable.buildVJP(
        builder, grad.getType() == op.getResult(0).getType() ? grad : Value());
    ASSERT_TRUE(succeeded(grads)) << op.getName().getStringRef().str();
    EXPECT_EQ(grads->size(), op.getNumOperands());
    EXPECT_TRUE(llvm::all_of(*grads, [](Value v) { return !v; }))
        << op.getName().getStringRef().str();
  }
}

TEST(GradientTest, RulesNeedingZerosRejectDynamicShapes) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module =
      parse(context, function("%c: tensor<?x3xi1>, %a: tensor<?x3xf64>, "
                              "%b: tensor<?x3xf64>",
                              "select %c, %a, %b : tensor<?x3xi1>, "
                              "tensor<?x3xf64>",
                              "tensor<?x3xf64>"));
  ASSERT_TRUE(module);
  std::string message;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diagnostic) {
    message = diagnostic.str();
    return success();
  });
  EXPECT_TRUE(failed(buildVJPFunction(*module)));
  EXPECT_EQ(message, "'titan.select' op needs a static shape for its VJP, got "
                     "'tensor<?x3xf64>'");
}

} // namespace
