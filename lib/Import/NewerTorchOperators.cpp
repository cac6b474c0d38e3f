//===- NewerTorchOperators.cpp - schemas of ops newer than LibTorch -------===//
//
// TorchScript files keep their code as Python source that the loader
// compiles against the operators LibTorch registers, so a model saved by a
// newer PyTorch that calls an op this LibTorch lacks does not load ("Unknown
// builtin op"). The importer never runs the model, it only reads its graph:
// registering the op's schema (with a kernel that refuses to run) is enough
// for the file to load and for the importer to convert the op.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <torch/version.h>

#include "llvm/Support/FormatVariadic.h"

#include <mutex>
#include <stdexcept>

using namespace mlir::titan::import;

/// The schemas, as PyTorch 2.x declares them (SymInt lists as int lists,
/// which TorchScript's serialized calls pass).
static constexpr const char *kNewerSchemas[] = {
    // PyTorch 2.0; `scale` since 2.1, `enable_gqa` since 2.5.
    "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor "
    "value, Tensor? attn_mask=None, float dropout_p=0.0, bool "
    "is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
    // PyTorch 2.1 (static-shape MoE dispatch).
    "aten::nonzero_static(Tensor self, *, int size, int fill_value=-1) -> "
    "Tensor",
    // PyTorch 2.4 (nn.RMSNorm, F.rms_norm).
    "aten::rms_norm(Tensor input, int[] normalized_shape, Tensor? "
    "weight=None, float? eps=None) -> Tensor",
};

void mlir::titan::import::registerNewerTorchOperators() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char *schema : kNewerSchemas) {
      c10::FunctionSchema parsed = torch::jit::parseSchema(schema);
      auto name = c10::Symbol::fromQualString(parsed.name());
      if (!torch::jit::getAllOperatorsFor(name).empty())
        continue;
      std::string qualified = parsed.name();
      torch::jit::registerOperator(torch::jit::Operator(
          schema,
          [qualified](torch::jit::Stack &) {
            throw std::runtime_error(
                qualified + " is registered by titan's importer to read "
                            "models that call it; it does not run here");
          },
          c10::AliasAnalysisKind::FROM_SCHEMA));
    }
  });
}

std::optional<std::string>
mlir::titan::import::explainUnknownOperator(llvm::StringRef loaderError) {
  static constexpr llvm::StringLiteral kUnknown = "Unknown builtin op: ";
  size_t at = loaderError.find(kUnknown);
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  llvm::StringRef op = loaderError.drop_front(at + kUnknown.size());
  op = op.take_until([](char c) { return c == '\n' || c == ' '; });
  op.consume_back(".");
  std::string known;
  for (const char *schema : kNewerSchemas) {
    llvm::StringRef name =
        llvm::StringRef(schema).take_until([](char c) { return c == '('; });
    known += (known.empty() ? "" : ", ") + name.str();
  }
  std::string explanation = llvm::formatv(
      "its code calls {0}, which LibTorch {1}.{2} (the one titan links) does "
      "not have: the model was probably saved by a newer PyTorch. Of the "
      "newer operators titan reads {3}; write this call with older "
      "operators before saving the model",
      op, TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, known);
  // TorchScript's pointer to the call in the model's code.
  size_t source = loaderError.find("  File ");
  if (source != llvm::StringRef::npos)
    explanation += "\n" + loaderError.drop_front(source).rtrim().str();
  return explanation;
}
