//===- ParallelPlan.h - tensor-parallel plans as data -----------*- C++ -*-===//
//
// A tensor-parallel plan says, for parameters matched by fully qualified name
// patterns, how the "tp" mesh axis shards them. It is data (a TOML file), so a
// user's own model is parallelized without code:
//
//   [[rule]]
//   params = "layers.*.attention.wq.weight"   # glob over parameter FQNs
//   placement = "S(0)"                        # column-parallel
//
// The first matching rule wins; unmatched parameters are replicated over
// "tp". The default plan (Llama, torchtitan's) is built in.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONFIG_PARALLELPLAN_H
#define TITAN_CONFIG_PARALLELPLAN_H

#include "titan/Placement/Placement.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::titan {

/// One rule of a plan.
struct PlanRule {
  /// The glob over fully qualified names, as written.
  std::string pattern;
  /// Placement of matched parameters over the "tp" axis.
  Placement placement = Placement::replicate();
};

/// A tensor-parallel plan.
class ParallelPlan {
public:
  /// Parses a plan file's text (`fileName` names it in errors).
  static llvm::Expected<ParallelPlan> parse(llvm::StringRef text,
                                            llvm::StringRef fileName);
  /// Reads and parses the plan file at `path`.
  static llvm::Expected<ParallelPlan> load(llvm::StringRef path);
  /// torchtitan's Llama plan: wq/wk/wv, w1/w3 and output column-wise (S(0)),
  /// wo and w2 row-wise (S(1)), tok_embeddings row-wise over the vocabulary
  /// (S(0)), norms replicated.
  static ParallelPlan llamaDefault();

  /// The "tp" placement of parameter `fqn`: the first matching rule's, else
  /// replicated.
  Placement placementOf(llvm::StringRef fqn) const;
  /// The index of the first rule matching `fqn`, if any.
  std::optional<size_t> ruleOf(llvm::StringRef fqn) const;
  llvm::ArrayRef<PlanRule> getRules() const { return rules; }

private:
  std::vector<PlanRule> rules;
};

} // namespace mlir::titan

#endif // TITAN_CONFIG_PARALLELPLAN_H
