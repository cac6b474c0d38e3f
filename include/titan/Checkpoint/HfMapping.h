//===- HfMapping.h - Hugging Face names and titan's FQNs --------*- C++ -*-===//
//
// A mapping file says, as data, how the tensors of a Hugging Face model
// (`model.layers.3.self_attn.q_proj.weight`) correspond to titan's FQNs
// (torchtitan's `layers.3.attention.wq.weight`), and which tensors are
// stored transformed. It is JSON (docs/hf-weights.md):
//
//   {
//     "titan_hf_mapping": 1,
//     "parameters": {
//       "n_heads": {"hf_config": "num_attention_heads"},
//       "n_kv_heads": {"hf_config": "num_key_value_heads",
//                      "fallback": "n_heads"}
//     },
//     "tensors": [
//       {"titan": "tok_embeddings.weight", "hf": "model.embed_tokens.weight"},
//       {"titan": "layers.{}.attention.wq.weight",
//        "hf": "model.layers.{}.self_attn.q_proj.weight",
//        "transform": "rope_permute", "heads": "n_heads"},
//       ...
//     ],
//     "ignore_titan": ["optimizer.*", "train_state.*"],
//     "ignore_hf": ["model.layers.*.self_attn.rotary_emb.inv_freq"]
//   }
//
// `{}` in a name stands for a decimal index (a layer number); the titan and
// the Hugging Face names of a rule hold the same number of them, matched in
// order. `rope_permute` is the row permutation with which Hugging Face's
// conversion (transformers' convert_llama_weights_to_hf) stores wq and wk
// of a model whose RoPE rotates interleaved pairs (Meta's and torchtitan's
// complex form) for its rotate-half RoPE: within each of `heads` heads of
// head_dim rows, titan row 2i + p is Hugging Face row p * head_dim / 2 + i.
// Parameters take their values from the command line or the runtime
// (setParameter), else from the model's Hugging Face config.json, else from
// their fallback parameter.
//
// Only LLVMSupport, TitanSupport and TitanCheckpoint: the runtime links it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CHECKPOINT_HFMAPPING_H
#define TITAN_CHECKPOINT_HFMAPPING_H

#include "titan/Checkpoint/Safetensors.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::titan {

/// One rule of a mapping: a titan name pattern, a Hugging Face one, and the
/// transform of the stored tensor.
struct HfTensorRule {
  std::string titan;
  std::string hf;
  /// Whether rows are stored in Hugging Face's rotate-half RoPE order.
  bool ropePermute = false;
  /// With ropePermute: the parameter holding the number of heads.
  std::string headsParameter;
};

/// A parameter of a mapping (a number of heads).
struct HfParameter {
  /// The key of Hugging Face's config.json holding it, or empty.
  std::string hfConfigKey;
  /// The parameter whose value it takes when neither set nor in the config.
  std::string fallback;
  std::optional<int64_t> value;
};

/// A titan tensor bound to its Hugging Face tensor through a rule (which
/// lives as long as its mapping).
struct HfTensorBinding {
  std::string titan;
  std::string hf;
  const HfTensorRule *rule = nullptr;
};

/// The row permutation of a tensor stored transformed: row r of the titan
/// tensor is row toHf(r) of the Hugging Face one. The identity when heads is
/// 0.
struct HfRowPermutation {
  int64_t heads = 0;
  int64_t headDim = 0;

  bool isIdentity() const { return heads == 0; }
  /// The Hugging Face row of titan row `row`.
  int64_t toHf(int64_t row) const;
  /// The titan row of Hugging Face row `row` (the inverse of toHf).
  int64_t toTitan(int64_t row) const;
};

/// A parsed mapping file.
class HfMapping {
public:
  /// Parses and checks a mapping (`name` names it in errors): the version,
  /// rules with the same number of `{}` on both sides and never two `{}`
  /// adjacent, transforms naming known parameters, no unknown keys.
  static llvm::Expected<HfMapping> parse(llvm::StringRef text,
                                         llvm::StringRef name);
  /// Reads and parses the mapping file at `path`.
  static llvm::Expected<HfMapping> read(llvm::StringRef path);

  llvm::ArrayRef<HfTensorRule> getRules() const { return rules; }

  /// Sets parameter `name` (fails for a parameter the mapping lacks or a
  /// value below 1).
  llvm::Error setParameter(llvm::StringRef name, int64_t value);

  /// Sets every parameter not yet set that has a key in `configJson` (the
  /// text of a Hugging Face config.json; `name` names it in errors).
  llvm::Error setParametersFromHfConfig(llvm::StringRef configJson,
                                        llvm::StringRef name);

  /// The value of parameter `name`: set, from the config, or its fallback's.
  llvm::Expected<int64_t> getParameter(llvm::StringRef name) const;

  /// The Hugging Face tensor of titan tensor `fqn`; nullopt when `fqn` is
  /// ignored (ignore_titan); fails when no rule or two rules match.
  llvm::Expected<std::optional<HfTensorBinding>>
  bindTitan(llvm::StringRef fqn) const;

  /// The titan tensor of Hugging Face tensor `hf`; nullopt when ignored
  /// (ignore_hf); fails when no rule or two rules match.
  llvm::Expected<std::optional<HfTensorBinding>>
  bindHf(llvm::StringRef hf) const;

  /// The row permutation of `binding`'s tensor of `shape`: the identity
  /// without a transform; with rope_permute, fails unless the tensor is 2-d
  /// with rows divisible into the heads and an even head_dim.
  llvm::Expected<HfRowPermutation>
  rowPermutation(const HfTensorBinding &binding,
                 llvm::ArrayRef<int64_t> shape) const;

private:
  int version = 1;
  std::vector<HfTensorRule> rules;
  std::map<std::string, HfParameter> parameters;
  std::vector<std::string> ignoreTitan;
  std::vector<std::string> ignoreHf;
  /// Values from a config.json, by parameter.
  std::map<std::string, int64_t> configValues;
};

/// The layout of a save of titan tensors in Hugging Face names: each of
/// `tensors` (titan FQNs, the dtype to save, global shapes) not ignored is
/// bound (HfMapping::bindTitan) and laid out under its Hugging Face name
/// (computeSafetensorsLayout). Fails on an unmapped tensor or two tensors
/// bound to one name.
llvm::Expected<SafetensorsLayout>
computeHfLayout(const HfMapping &mapping,
                llvm::ArrayRef<SafetensorsTensorSpec> tensors,
                uint64_t maxShardBytes = kDefaultSafetensorsShardBytes);

/// Writes the box `box` of titan tensor `fqn` from `source` (holding
/// `sourceBox`) into its Hugging Face tensor, transformed as the mapping
/// says: one call per tensor and rank of a distributed save
/// (SafetensorsWriter::writeBox under the hood). Ignored tensors are
/// skipped.
llvm::Error writeHfBox(SafetensorsWriter &writer,
                       const SafetensorsLayout &layout,
                       const HfMapping &mapping, llvm::StringRef fqn,
                       const IndexBox &box, DenseTensorRef source,
                       const IndexBox &sourceBox);

/// Reads the box `box` of titan tensor `fqn`, whose global shape is `shape`,
/// from its Hugging Face tensor into `target` (holding `targetBox`, of any
/// float dtype), undoing the mapping's transform: one call per tensor and
/// rank of a distributed load. Fails when the files lack the tensor or hold
/// it with another shape.
llvm::Error readHfBox(const SafetensorsReader &reader, const HfMapping &mapping,
                      llvm::StringRef fqn, llvm::ArrayRef<int64_t> shape,
                      const IndexBox &box, MutableDenseTensorRef target,
                      const IndexBox &targetBox);

} // namespace mlir::titan

#endif // TITAN_CHECKPOINT_HFMAPPING_H
