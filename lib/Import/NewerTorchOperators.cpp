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
