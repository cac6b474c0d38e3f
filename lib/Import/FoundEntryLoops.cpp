//===- FoundEntryLoops.cpp - Traced loops over the entries nonzero finds --===//
//
// Hugging Face's mixture-of-experts blocks (Mixtral, Qwen-MoE, OLMoE,
// GPT-OSS since transformers 4.54) loop only over the experts that some
// token chose:
//
//   expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
//   for expert_idx in expert_hit:
//       idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
//       ...
//       final_hidden_states.index_add_(0, top_x, ...)
//
// Tracing unrolls the loop once per entry found on the traced input
// (aten::unbind of the nonzero result); how many entries the data give is
// known only at run time. When the trace unrolled it for every position
// the condition has (every expert was chosen), titan imports iteration i
// for position i itself, gated by whether the condition holds there: the
// positions found, in order, are the positions where it holds. The lengths
// that a torch.where inside iteration i finds are 0 where its gate is
// false, so its index_add_ and index_put_ at those rows add nothing; no
// other value of the iteration may reach the model's results. That is the
// loop PyTorch runs, for every input. A scripted loop over the entries
// (prim::Loop of len(found), aten::select of each) runs the same
// iterations.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::titan::import {

void collectGates(const ImportedValue &value, llvm::SetVector<Value> &gates) {
  if (value.gate)
    gates.insert(value.gate);
  for (const ImportedValue &item : value.items)
    collectGates(item, gates);
}

void setGate(ImportedValue &value, Value gate) {
  value.gate = gate;
  for (ImportedValue &item : value.items)
    setGate(item, gate);
}

ImportedValue GraphImporter::foundEntryItem(Value rows,
                                            const ValidPrefix &prefix,
                                            int64_t i) {
  TensorBuilder tb(builder, loc);
  auto rowType = RankedTensorType::get(tensorType(rows).getShape().drop_front(),
                                       builder.getI64Type());
  ImportedValue item =
      ImportedValue::ofTensor(tb.splat(rowType, static_cast<double>(i)));
  item.gate = tb.reshape(tb.slice(prefix.condition, 0, i, i + 1, 1), {});
  gateOrigins[item.gate] = "the entries " + prefix.origin + " finds";
  return item;
}

std::vector<ImportedValue>
GraphImporter::foundEntryItems(Value rows, const ValidPrefix &prefix) {
  std::vector<ImportedValue> items;
  for (int64_t i = 0; i < prefix.length; ++i)
    items.push_back(foundEntryItem(rows, prefix, i));
  return items;
}

/// Whether `node` writes rows of its first input at indices (index_add_,
/// index_put_, in place or not); `indices` gets the index tensors.
static bool isRowWrite(torch::jit::Node *node,
                       SmallVectorImpl<torch::jit::Value *> &indices) {
  StringRef kind = node->kind().toQualString();
  if (kind == "aten::index_add" || kind == "aten::index_add_") {
    indices.push_back(node->input(2));
    return true;
  }
  if (kind == "aten::index_put" || kind == "aten::index_put_") {
    torch::jit::Node *list = node->input(1)->node();
    if (list->kind() == torch::jit::prim::ListConstruct)
      indices.append(list->inputs().begin(), list->inputs().end());
    return true;
  }
  return false;
}

llvm::Expected<Value> GraphImporter::gateOfInputs(torch::jit::Node *node,
                                                  bool &exempt) {
  exempt = false;
  llvm::SetVector<Value> gates;
  for (torch::jit::Value *input : node->inputs()) {
    auto it = values.find(input);
    if (it != values.end())
      collectGates(it->second, gates);
  }
  if (gates.empty())
    return Value();
  if (gates.size() > 1)
    return makeError(llvm::formatv(
        "it combines values of two iterations of a loop over {0}: "
        "titan runs every iteration, gated by whether its entry is found, "
        "and passes on only what index_add_ and index_put_ write at the rows "
        "a torch.where inside the iteration selects",
        gateOrigins.lookup(gates[0])));
  Value gate = gates.front();
  SmallVector<torch::jit::Value *> indices;
  if (isRowWrite(node, indices)) {
    ImportedValue self = lookup(node->input(0));
    llvm::SetVector<Value> selfGates;
    collectGates(self, selfGates);
    exempt = selfGates.empty() &&
             llvm::any_of(indices, [&](torch::jit::Value *index) {
               auto it = values.find(index);
               if (it == values.end() || !it->second.isTensor())
                 return false;
               const ValidPrefix *prefix = validPrefix(it->second.tensor);
               return prefix && gateOfCount.lookup(prefix->count) == gate;
             });
  }
  return gate;
}

void GraphImporter::gateOutputs(torch::jit::Node *node, Value gate,
                                std::vector<ImportedValue> &outputs) {
  TensorBuilder tb(builder, loc);
  // The counts found inside the iteration: 0 where its entry is not.
  DenseMap<Value, Value> gatedCounts;
  std::function<void(ImportedValue &)> gateCounts = [&](ImportedValue &value) {
    if (value.isTensor())
      if (const ValidPrefix *prefix = validPrefix(value.tensor);
          prefix && !gateOfCount.count(prefix->count)) {
        Value &gated = gatedCounts[prefix->count];
        if (!gated) {
          gated =
              tb.select(gate, prefix->count, tb.splatLike(prefix->count, 0.0));
          gateOfCount[gated] = gate;
        }
        ValidPrefix updated = *prefix;
        updated.count = gated;
        setValidPrefix(value.tensor, updated);
      }
    for (ImportedValue &item : value.items)
      gateCounts(item);
  };
  StringRef kind = node->kind().toQualString();
  if (kind == "aten::nonzero" || kind == "aten::argwhere" ||
      kind == "aten::nonzero_numpy" ||
      (kind == "aten::where" && node->inputs().size() == 1))
    for (ImportedValue &output : outputs)
      gateCounts(output);
  for (ImportedValue &output : outputs)
    setGate(output, gate);
}

llvm::Error GraphImporter::checkUngated(const ImportedValue &value,
                                        StringRef what) const {
  llvm::SetVector<Value> gates;
  collectGates(value, gates);
  if (gates.empty())
    return llvm::Error::success();
  return makeError(llvm::formatv(
      "{0} a value computed in an iteration of a loop over {1}: titan runs "
      "every iteration, gated by whether its entry is found, and passes on "
      "only what index_add_ and index_put_ write at the rows a torch.where "
      "inside the iteration selects (as Mixtral's "
      "final_hidden_states.index_add_(0, top_x, ...)); accumulate the "
      "iteration's results that way",
      what, gateOrigins.lookup(gates.front())));
}

} // namespace mlir::titan::import
