//===- ShardingRulesTest.cpp - the sharding rule of every op family -------===//
//
// Each case is one op in a function; its ShardingRuleOpInterface rule is
// printed with OpShardingRule::str() (factors named a, b, c, ... in index
// order) and compared with the expected einsum-like form.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

/// One op to check: `signature` are the function's arguments, `op` is the
/// op (its operands are %0, %1, ... and its results are not used).
struct RuleCase {
  const char *signature;
  const char *op;
  const char *expected;
};

/// The rule of the op `ruleCase` describes, printed.
std::string printRule(const RuleCase &ruleCase) {
  MLIRContext context;
  context.loadDialect<TitanDialect, func::FuncDialect>();
  std::string source = std::string("func.func @f(") + ruleCase.signature +
                       ") {\n" + ruleCase.op + "\nreturn\n}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  if (!module)
    return "<parse error>";
  auto func = cast<func::FuncOp>(module->getBody()->front());
  auto rule = dyn_cast<ShardingRuleOpInterface>(func.getBody().front().front());
  if (!rule)
    return "<no sharding rule>";
  return rule.getShardingRule().str();
}

/// Prints a case as its op, not as bytes.
void PrintTo(const RuleCase &ruleCase, std::ostream *os) { *os << ruleCase.op; }

/// A test name for a case: the op's name and the case's index (one op
/// appears in several cases), e.g. "reduce_sum_3".
std::string caseName(const testing::TestParamInfo<RuleCase> &info) {
  StringRef op = StringRef(info.param.op).split("titan.").second;
  std::string name =
      op.take_while([](char c) { return llvm::isAlnum(c) || c == '_'; }).str();
  return name + "_" + std::to_string(info.index);
}

class ShardingRuleTest : public testing::TestWithParam<RuleCase> {};

TEST_P(ShardingRuleTest, PrintsExpectedRule) {
  EXPECT_EQ(printRule(GetParam()), GetParam().expected)
      << "op: " << GetParam().op;
}

const RuleCase kElementwise[] = {
    {"%0: tensor<4x8xf32>, %1: tensor<4x8xf32>",
     "%r = titan.add %0, %1 : tensor<4x8xf32>",
     "([a, b], [a, b]) -> ([a, b]) {a=4, b=8} linear={0, 1}"},
    {"%0: tensor<4x8xf32>, %1: tensor<4x8xf32>",
     "%r = titan.mul %0, %1 : tensor<4x8xf32>",
     "([a, b], [a, b]) -> ([a, b]) {a=4, b=8} linear={0}, {1}"},
    {"%0: tensor<4x8xf32>, %1: tensor<4x8xf32>",
     "%r = titan.div %0, %1 : tensor<4x8xf32>",
     "([a, b], [a, b]) -> ([a, b]) {a=4, b=8} linear={0}"},
    {"%0: tensor<4x8xf32>", "%r = titan.exp %0 : tensor<4x8xf32>",
     "([a, b]) -> ([a, b]) {a=4, b=8}"},
    {"%0: tensor<4xi1>, %1: tensor<4xf32>, %2: tensor<4xf32>",
     "%r = titan.select %0, %1, %2 : tensor<4xi1>, tensor<4xf32>",
     "([a], [a], [a]) -> ([a]) {a=4} linear={1, 2}"},
    {"%0: tensor<4xf32>, %1: tensor<4xf32>",
     "%r = titan.gelu_grad %0, %1 approximate tanh : tensor<4xf32>",
     "([a], [a]) -> ([a]) {a=4} linear={1}"},
    {"", "%r = titan.constant dense<1.0> : tensor<2x3xf32>",
     "() -> ([a, b]) {a=2, b=3}"},
    {"", "%r = titan.constant dense<[1.0, 2.0]> : tensor<2xf32>",
     "() -> ([a]) {a=2 custom}"},
    {"", "%r = titan.iota dim 1 : tensor<2x3xi64>",
     "() -> ([a, b]) {a=2, b=3 custom}"},
};
INSTANTIATE_TEST_SUITE_P(Elementwise, ShardingRuleTest,
                         testing::ValuesIn(kElementwise), caseName);

const RuleCase kReductions[] = {
    {"%0: tensor<4x8x16xf32>",
     "%r = titan.reduce_sum %0 dims [1] keepdim : tensor<4x8x16xf32> -> "
     "tensor<4x1x16xf32>",
     "([a, b, c]) -> ([a, 1, c]) {a=4, b=8 reduction, c=16} linear={0}"},
    {"%0: tensor<4x8xf32>",
     "%r = titan.reduce_max %0 dims [0] : tensor<4x8xf32> -> tensor<8xf32>",
     "([a, b]) -> ([b]) {a=4 reduction, b=8} partial=max"},
    {"%0: tensor<4x8xf32>",
     "%r = titan.reduce_mean %0 dims [0, 1] : tensor<4x8xf32> -> tensor<f32>",
     "([a, b]) -> ([]) {a=4 reduction custom, b=8 reduction custom} "
     "linear={0}"},
    {"%0: tensor<4x8xf32>", "%r = titan.softmax %0 dim 1 : tensor<4x8xf32>",
     "([a, b]) -> ([a, b]) {a=4, b=8 need_replication}"},
    {"%0: tensor<2x4x8xf32>, %1: tensor<8xf32>",
     "%r = titan.rms_norm %0, %1 eps 1.0e-05 : tensor<2x4x8xf32>, "
     "tensor<8xf32>",
     "([a, b, c], [c]) -> ([a, b, c]) {a=2, b=4, c=8 need_replication}"},
    {"%0: tensor<2x4x8xf32>, %1: tensor<8xf32>, %2: tensor<2x4x8xf32>",
     "%r:2 = titan.rms_norm_grad %0, %1, %2 eps 1.0e-05 : "
     "tensor<2x4x8xf32>, tensor<8xf32>",
     "([a, b, c], [c], [a, b, c]) -> ([a, b, c], [c]) {a=2 reduction, "
     "b=4 reduction, c=8 need_replication} linear={2}"},
    // The addend is laid out like the input cotangent, and linear with the
    // result's cotangent.
    {"%0: tensor<2x4x8xf32>, %1: tensor<8xf32>, %2: tensor<2x4x8xf32>",
     "%r:2 = titan.rms_norm_grad %0, %1, %2 plus %0 eps 1.0e-05 : "
     "tensor<2x4x8xf32>, tensor<8xf32>",
     "([a, b, c], [c], [a, b, c], [a, b, c]) -> ([a, b, c], [c]) {a=2 "
     "reduction, b=4 reduction, c=8 need_replication} linear={2, 3}"},
    // AdamW: elementwise over the tensors, the scalars without dims.
    {"%0: tensor<4x8xf32>, %1: tensor<4x8xbf16>, %2: tensor<f32>",
     "%r:3 = titan.adamw %0, %1, %0, %0 lr %2 step %2 grad_scale %2 betas "
     "0.9, 0.95 eps 1.0e-8 weight_decay 0.1 : tensor<4x8xf32>, "
     "tensor<4x8xbf16>",
     "([a, b], [a, b], [a, b], [a, b], [], [], []) -> ([a, b], [a, b], "
     "[a, b]) {a=4, b=8}"},
    {"%0: tensor<4x8xf32>, %1: tensor<8xf32>, %2: tensor<4x8xf32>",
     "%r:3 = titan.layer_norm_grad %0, %1, %2 eps 1.0e-05 : "
     "tensor<4x8xf32>, tensor<8xf32>",
     "([a, b], [b], [a, b]) -> ([a, b], [b], [b]) {a=4 reduction, "
     "b=8 need_replication} linear={2}"},
};
INSTANTIATE_TEST_SUITE_P(Reductions, ShardingRuleTest,
                         testing::ValuesIn(kReductions), caseName);

const RuleCase kModelOps[] = {
    {"%0: tensor<2x4x16xf32>, %1: tensor<32x16xf32>",
     "%r = titan.matmul %0, %1 transpose_rhs : tensor<2x4x16xf32>, "
     "tensor<32x16xf32> -> tensor<2x4x32xf32>",
     "([a, b, d], [c, d]) -> ([a, b, c]) {a=2, b=4, c=32, d=16 reduction} "
     "linear={0}, {1}"},
    {"%0: tensor<2x16x4xf32>, %1: tensor<2x16x8xf32>",
     "%r = titan.matmul %0, %1 transpose_lhs : tensor<2x16x4xf32>, "
     "tensor<2x16x8xf32> -> tensor<2x4x8xf32>",
     "([a, d, b], [a, d, c]) -> ([a, b, c]) {a=2, b=4, c=8, d=16 reduction} "
     "linear={0}, {1}"},
    // With an addend: the contraction stays whole (each shard would add
    // it), and the sum is linear in either factor together with it.
    {"%0: tensor<2x4x16xf32>, %1: tensor<32x16xf32>, %2: tensor<2x4x32xf32>",
     "%r = titan.matmul %0, %1 transpose_rhs plus %2 : tensor<2x4x16xf32>, "
     "tensor<32x16xf32> -> tensor<2x4x32xf32>",
     "([a, b, d], [c, d], [a, b, c]) -> ([a, b, c]) {a=2, b=4, c=32, "
     "d=16 need_replication} linear={0, 2}, {1, 2}"},
    {"%0: tensor<32x16xf32>, %1: tensor<2x4xi64>",
     "%r = titan.embedding %0, %1 : tensor<32x16xf32>, tensor<2x4xi64> -> "
     "tensor<2x4x16xf32>",
     "([a, b], [c, d]) -> ([c, d, b]) {a=32 reduction custom, b=16, c=2, "
     "d=4} linear={0}"},
    {"%0: tensor<2x4xi64>, %1: tensor<2x4x16xf32>",
     "%r = titan.embedding_grad %0, %1 : tensor<2x4xi64>, "
     "tensor<2x4x16xf32> -> tensor<32x16xf32>",
     "([a, b], [a, b, d]) -> ([c, d]) {a=2 reduction, b=4 reduction, "
     "c=32 custom, d=16} linear={1}"},
    {"%0: tensor<2x8x4x16xf32>, %1: tensor<8x8xf32>, %2: tensor<8x8xf32>",
     "%r = titan.rope %0, %1, %2 interleaved : tensor<2x8x4x16xf32>, "
     "tensor<8x8xf32>",
     "([a, b, c, d], [b, e], [b, e]) -> ([a, b, c, d]) {a=2, b=8, c=4, "
     "d=16 need_replication, e=8 need_replication} linear={0}"},
    {"%0: tensor<2x8x16x4xf32>, %1: tensor<2x2x16x4xf32>, "
     "%2: tensor<2x2x16x4xf32>",
     "%r:2 = titan.attention %0, %1, %2 causal : tensor<2x8x16x4xf32>, "
     "tensor<2x2x16x4xf32>",
     "([a, b*c, d, e], [a, b, d, e], [a, b, d, e]) -> ([a, b*c, d, e], "
     "[a, b*c, d]) {a=2, b=2, c=4, d=16 need_replication, e=4 "
     "need_replication}"},
    {"%0: tensor<2x8x16x4xf32>, %1: tensor<2x2x16x4xf32>, "
     "%2: tensor<2x2x16x4xf32>, %3: tensor<2x8x16x4xf32>, "
     "%4: tensor<2x8x16xf32>",
     "%r:3 = titan.attention_grad %0, %1, %2, %3, %4, %3 causal : "
     "tensor<2x8x16x4xf32>, tensor<2x2x16x4xf32>",
     "([a, b*c, d, e], [a, b, d, e], [a, b, d, e], [a, b*c, d, e], "
     "[a, b*c, d], [a, b*c, d, e]) -> ([a, b*c, d, e], [a, b, d, e], "
     "[a, b, d, e]) {a=2, b=2, c=4 reduction, d=16 need_replication, e=4 "
     "need_replication} linear={5}"},
    {"%0: tensor<8x32xf32>, %1: tensor<8xi64>",
     "%r = titan.cross_entropy %0, %1 : tensor<8x32xf32>, tensor<8xi64> -> "
     "tensor<f32>",
     "([a, b], [a]) -> ([]) {a=8 reduction custom, b=32 reduction custom}"},
    {"%0: tensor<8x32xf32>, %1: tensor<8xi64>, %2: tensor<f32>",
     "%r = titan.cross_entropy_grad %0, %1, %2 : tensor<8x32xf32>, "
     "tensor<8xi64>, tensor<f32>",
     "([a, b], [a], []) -> ([a, b]) {a=8 custom, b=32 custom} linear={2}"},
};
INSTANTIATE_TEST_SUITE_P(ModelOps, ShardingRuleTest,
                         testing::ValuesIn(kModelOps), caseName);

const RuleCase kShapeOps[] = {
    {"%0: tensor<2x4x6xf32>",
     "%r = titan.reshape %0 : tensor<2x4x6xf32> -> tensor<8x6xf32>",
     "([a, b, c]) -> ([a*b, c]) {a=2, b=4, c=6} linear={0}"},
    {"%0: tensor<12xf32>",
     "%r = titan.reshape %0 : tensor<12xf32> -> tensor<1x3x4xf32>",
     "([a*b]) -> ([1, a, b]) {a=3, b=4} linear={0}"},
    {"%0: tensor<6x4xf32>",
     "%r = titan.reshape %0 : tensor<6x4xf32> -> tensor<4x6xf32>",
     "([a*b, e]) -> ([a*c, d]) {a=2, b=3 need_replication, "
     "c=2 need_replication, d=6 need_replication, e=4 need_replication} "
     "linear={0}"},
    {"%0: tensor<?x4xf32>",
     "%r = titan.reshape %0 : tensor<?x4xf32> -> tensor<?xf32>",
     "([a, b]) -> ([c]) {a=? need_replication, b=4 need_replication, "
     "c=? need_replication} linear={0}"},
    {"%0: tensor<2x3x4xf32>",
     "%r = titan.transpose %0 [2, 0, 1] : tensor<2x3x4xf32> -> "
     "tensor<4x2x3xf32>",
     "([a, b, c]) -> ([c, a, b]) {a=2, b=3, c=4} linear={0}"},
    {"%0: tensor<8x6xf32>",
     "%r = titan.slice %0 [0, 2] to [8, 6] step [1, 1] : tensor<8x6xf32> -> "
     "tensor<8x4xf32>",
     "([a, b]) -> ([a, c]) {a=8, b=6 need_replication, "
     "c=4 need_replication} linear={0}"},
    {"%0: tensor<8x4xf32>",
     "%r = titan.pad %0 [0, 2] step [1, 1] : tensor<8x4xf32> -> "
     "tensor<8x6xf32>",
     "([a, b]) -> ([a, c]) {a=8, b=4 need_replication, "
     "c=6 need_replication} linear={0}"},
    {"%0: tensor<8x2xf32>, %1: tensor<8x3xf32>",
     "%r = titan.concat %0, %1 dim 1 : (tensor<8x2xf32>, tensor<8x3xf32>) -> "
     "tensor<8x5xf32>",
     "([a, c], [a, d]) -> ([a, b]) {a=8, b=5 need_replication, "
     "c=2 need_replication, d=3 need_replication} linear={0, 1}"},
    {"%0: tensor<1x6xf32>",
     "%r = titan.broadcast_in_dim %0 dims [0, 2] : tensor<1x6xf32> -> "
     "tensor<4x5x6xf32>",
     "([1, c]) -> ([a, b, c]) {a=4, b=5, c=6} linear={0}"},
};
INSTANTIATE_TEST_SUITE_P(ShapeOps, ShardingRuleTest,
                         testing::ValuesIn(kShapeOps), caseName);

} // namespace
