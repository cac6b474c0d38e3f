//===- ParallelPlan.cpp - tensor-parallel plans as data -------------------===//

#include "titan/Config/ParallelPlan.h"

#include "llvm/ADT/STLExtras.h"

#include "Toml.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir::titan;

static llvm::Error planError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The default plan, in the plan file format.
static constexpr llvm::StringLiteral kLlamaPlan = R"plan(
[[rule]]
params = "tok_embeddings.weight"
placement = "S(0)"
[[rule]]
params = "layers.*.attention.w[qkv].weight"
placement = "S(0)"
[[rule]]
params = "layers.*.attention.wo.weight"
placement = "S(1)"
[[rule]]
params = "layers.*.feed_forward.w[13].weight"
placement = "S(0)"
[[rule]]
params = "layers.*.feed_forward.w2.weight"
placement = "S(1)"
[[rule]]
params = "output.weight"
placement = "S(0)"
)plan";

llvm::Expected<ParallelPlan> ParallelPlan::parse(llvm::StringRef text,
                                                 llvm::StringRef fileName) {
  llvm::Expected<toml::table> parsed = parseToml(text, fileName);
  if (!parsed)
    return parsed.takeError();
  ParallelPlan plan;
  for (const auto &[key, node] : *parsed) {
    if (key.str() != "rule" || !node.is_array_of_tables())
      return planError(fileName + ": unknown entry '" + std::string(key.str()) +
                       "'; a plan is a list of [[rule]] tables");
  }
  const toml::array *rules = (*parsed)["rule"].as_array();
  if (!rules)
    return plan;
  auto where = [&](const toml::node &node) {
    return llvm::formatv("{0}:{1}: ", fileName, node.source().begin.line).str();
  };
  for (const toml::node &node : *rules) {
    const toml::table &table = *node.as_table();
    const toml::node *patternNode = nullptr, *placementNode = nullptr;
    for (const auto &[key, value] : table) {
      if (key.str() == "params" && value.is_string())
        patternNode = &value;
      else if (key.str() == "placement" && value.is_string())
        placementNode = &value;
      else
        return planError(where(value) + "unknown or mistyped key '" +
                         std::string(key.str()) +
                         "' in a rule; a rule has params = \"<glob>\" and "
                         "placement = \"S(<dim>)\" or \"R\"");
    }
    if (!patternNode || !placementNode)
      return planError(where(node) + "a rule needs params and placement");
    std::string pattern = *patternNode->value<std::string>();
    std::string placement = *placementNode->value<std::string>();
    std::optional<Placement> parsedPlacement = Placement::parse(placement);
    if (!parsedPlacement || parsedPlacement->isPartial())
      return planError(where(*placementNode) + "placement '" + placement +
                       "' must be S(<dim>) or R");
    llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(pattern);
    if (!glob)
      return planError(where(*patternNode) + "bad params pattern '" + pattern +
                       "': " + llvm::toString(glob.takeError()));
    plan.rules.push_back({pattern, *parsedPlacement});
  }
  return plan;
}

llvm::Expected<ParallelPlan> ParallelPlan::load(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return planError("cannot read plan '" + path +
                     "': " + buffer.getError().message());
  return parse((*buffer)->getBuffer(), path);
}

ParallelPlan ParallelPlan::llamaDefault() {
  llvm::Expected<ParallelPlan> plan = parse(kLlamaPlan, "<default llama plan>");
  assert(plan && "the built-in plan must parse");
  return std::move(*plan);
}

std::optional<size_t> ParallelPlan::ruleOf(llvm::StringRef fqn) const {
  // GlobPattern refers to its pattern's storage, so it is made per query
  // from the rule's own string (plans have a handful of rules).
  for (auto [index, rule] : llvm::enumerate(rules)) {
    llvm::Expected<llvm::GlobPattern> glob =
        llvm::GlobPattern::create(rule.pattern);
    if (glob && glob->match(fqn))
      return index;
    llvm::consumeError(glob.takeError());
  }
  return std::nullopt;
}

Placement ParallelPlan::placementOf(llvm::StringRef fqn) const {
  std::optional<size_t> rule = ruleOf(fqn);
  return rule ? rules[*rule].placement : Placement::replicate();
}
