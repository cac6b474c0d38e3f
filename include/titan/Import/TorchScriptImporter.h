//===- TorchScriptImporter.h - TorchScript -> titan dialect -----*- C++ -*-===//
//
// Imports the `forward` method of a TorchScript module (traced or scripted)
// into `func.func @forward` of the titan dialect. Parameters and buffers
// become function arguments named by their fully qualified names; model
// inputs keep their TorchScript names.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_IMPORT_TORCHSCRIPTIMPORTER_H
#define TITAN_IMPORT_TORCHSCRIPTIMPORTER_H

#include "titan/Dialect/ArgRole.h"
#include "titan/Support/ElementType.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir::titan {

/// Shape and element type of one model input, for modules whose graph does
/// not record them (scripted modules).
struct InputSpec {
  std::vector<int64_t> shape;
  /// "i64", "i32", "f32", "bf16", "f16" or "f64".
  std::string elementType = "i64";
};

/// Parses "2x64" or "2x64xi64" (mlir-style shape, optional element type).
llvm::Expected<InputSpec> parseInputSpec(llvm::StringRef text);

/// The contents of one imported parameter or buffer, for --export-weights.
struct ImportedTensor {
  /// The function argument name (fully qualified name; complex buffers are
  /// split into "<fqn>.real" and "<fqn>.imag").
  std::string name;
  std::vector<int64_t> shape;
  ElementType elementType = ElementType::F32;
  /// Row-major raw little-endian bytes; empty when the module holds no data
  /// for it (shape-only export).
  std::vector<char> data;
  /// Param or Buffer (the argument's titan.role).
  ArgRole role = ArgRole::Param;
};

/// A kind of TorchScript node that the importer evaluated at import time
/// instead of emitting an op: size arithmetic, numbers, resolved `if`s and
/// unrolled loops. The compiled program assumes their results static.
struct FoldedOp {
  /// The node kind, e.g. "aten::floor_divide"; a 0-d tensor constant that
  /// tracing recorded for a Python number is "prim::Constant (0-d tensor)".
  std::string kind;
  /// How often it was evaluated (a node inside an unrolled loop counts once
  /// per iteration).
  int64_t count = 0;
  /// The Python source of its first occurrence ("model.py:12"), or "".
  std::string firstSource;
};

/// Options of the importer.
struct TorchScriptImportOptions {
  /// Shapes of inputs by TorchScript name (e.g. "tokens"); they override
  /// shapes recorded by tracing.
  llvm::StringMap<InputSpec> inputs;
  /// Shape of any input not named in `inputs` (e.g. the tokens of a language
  /// model, from a training config's batch size and sequence length).
  std::optional<InputSpec> defaultInput;
  /// Called once per parameter/buffer argument with its data when set.
  std::function<llvm::Error(const ImportedTensor &)> onWeight;
  /// When set, receives the node kinds evaluated at import time, in the
  /// order first seen.
  std::vector<FoldedOp> *foldedOps = nullptr;
  /// Mixed precision (FSDP2's param_dtype, torchtitan's
  /// training.mixed_precision_param): the type the forward reads floating
  /// parameters in. Each such parameter becomes a float32 argument, the
  /// master weight (widened if stored narrower), cast to this type at the
  /// top of @forward; the rest of the program follows PyTorch's type rules
  /// from there, as the module runs under FSDP2. Unset: parameters are read
  /// as stored.
  std::optional<ElementType> parameterComputeType;
  /// Pure low-precision training (torchtitan's training.dtype =
  /// "bfloat16"): the type floating parameters are held in. Each becomes
  /// an argument of this type, its data rounded to it (nearest even), with
  /// no master weight; the forward reads it as it is. Excludes
  /// parameterComputeType.
  std::optional<ElementType> parameterStorageType;
  /// Import the model as it runs under model.eval(), for a validation
  /// program: dropout is the identity even where the graph was traced in
  /// training mode.
  bool evaluation = false;
};

/// Loads `path` with LibTorch and imports its forward method. Errors name
/// the file or the unsupported node (kind, schema, Python source line).
llvm::Expected<OwningOpRef<ModuleOp>>
importTorchScriptFile(MLIRContext &context, llvm::StringRef path,
                      const TorchScriptImportOptions &options);

/// Imports a graph given in TorchScript's textual IR (torch::jit::parseIR);
/// its first input is treated like a model input (there is no module, so no
/// parameters). Used by the importer's tests.
llvm::Expected<OwningOpRef<ModuleOp>>
importTorchScriptIR(MLIRContext &context, llvm::StringRef irText,
                    const TorchScriptImportOptions &options);

} // namespace mlir::titan

#endif // TITAN_IMPORT_TORCHSCRIPTIMPORTER_H
