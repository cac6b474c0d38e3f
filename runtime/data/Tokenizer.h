//===- Tokenizer.h - text to token ids for the data loader ------*- C++ -*-===//
//
// The tokenizers of the runtime's data loader (docs/data.md, "Tokenizers"):
// bytes when `[model] tokenizer_path` is empty, else the byte-level BPE of a
// Hugging Face tokenizer.json (the GPT-2, Llama 3 and Qwen2 families),
// producing the ids Hugging Face's `tokenizers` library produces.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_DATA_TOKENIZER_H
#define TITAN_RUNTIME_DATA_TOKENIZER_H

#include "core/Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace titan::rt {

/// Turns text into token ids. `encode` adds no BOS or EOS: the data loader
/// adds `bosId()` and `eosId()` around each document itself.
///
/// `encode` may update a cache, so one object must not encode on two
/// threads at once: load one tokenizer per thread.
class Tokenizer {
public:
  virtual ~Tokenizer();

  /// Appends the ids of `text` (UTF-8; invalid bytes are tokenized as the
  /// bytes they are) to `ids`.
  virtual void encode(std::string_view text, std::vector<int64_t> &ids) = 0;

  /// The ids of `text`.
  std::vector<int64_t> encode(std::string_view text) {
    std::vector<int64_t> ids;
    encode(text, ids);
    return ids;
  }

  /// The text of `ids` (special tokens as their text); unknown ids are
  /// skipped.
  virtual std::string decode(const std::vector<int64_t> &ids) const = 0;

  /// One more than the largest id: the rows the embedding needs.
  virtual int64_t vocabSize() const = 0;

  /// The id that starts a document, or none.
  virtual std::optional<int64_t> bosId() const = 0;

  /// The id that ends a document, or none.
  virtual std::optional<int64_t> eosId() const = 0;
};

/// UTF-8 bytes as ids: id = byte value 0..255, BOS = 256, EOS = 257.
class ByteTokenizer final : public Tokenizer {
public:
  static constexpr int64_t kBos = 256;
  static constexpr int64_t kEos = 257;
  static constexpr int64_t kVocabSize = 258;

  using Tokenizer::encode;
  void encode(std::string_view text, std::vector<int64_t> &ids) override;
  std::string decode(const std::vector<int64_t> &ids) const override;
  int64_t vocabSize() const override { return kVocabSize; }
  std::optional<int64_t> bosId() const override { return kBos; }
  std::optional<int64_t> eosId() const override { return kEos; }
};

/// The byte-level BPE of a Hugging Face tokenizer.json: `model.type` "BPE",
/// no normalizer or NFC, a ByteLevel pre-tokenizer or a Sequence of Splits
/// on the GPT-2, Llama 3 or Qwen2 regex and a ByteLevel without regex, and
/// added tokens (matched in the text before BPE). The post-processor and
/// decoder are not read: BOS and EOS are the loader's.
class BpeTokenizer final : public Tokenizer {
public:
  /// Loads `path`: a tokenizer.json, or a folder that holds one (as
  /// torchtitan's `hf_assets_path` folders do). BOS and EOS come from the
  /// `bos_token` and `eos_token` of a tokenizer_config.json next to it (as
  /// torchtitan's HuggingFaceTokenizer finds them), else from the first
  /// added token named like one (<|begin_of_text|>, <s>, ...). Errors name
  /// the file and what is missing, malformed or unsupported.
  static Status load(const std::string &path,
                     std::unique_ptr<BpeTokenizer> &tokenizer);

  /// Parses the text of a tokenizer.json and, when not empty, of its
  /// tokenizer_config.json; `name` is the file's name in errors.
  static Status parse(std::string_view json, std::string_view configJson,
                      const std::string &name,
                      std::unique_ptr<BpeTokenizer> &tokenizer);

  ~BpeTokenizer() override;

  using Tokenizer::encode;
  void encode(std::string_view text, std::vector<int64_t> &ids) override;
  std::string decode(const std::vector<int64_t> &ids) const override;
  int64_t vocabSize() const override { return vocabSize_; }
  std::optional<int64_t> bosId() const override { return bos; }
  std::optional<int64_t> eosId() const override { return eos; }

  /// The id of a token (model vocabulary or added token; BPE vocabulary
  /// entries are in their byte-level spelling, "Ġthe"), or none.
  std::optional<int64_t> tokenToId(std::string_view token) const;

  /// The pre-tokenizer regex by name: "gpt2", "llama3" or "qwen2" (each
  /// Split or ByteLevel in order).
  const std::vector<std::string> &preTokenizerPatterns() const {
    return patternNames;
  }

  struct Impl;

private:
  BpeTokenizer();

  std::unique_ptr<Impl> impl;
  std::vector<std::string> patternNames;
  int64_t vocabSize_ = 0;
  std::optional<int64_t> bos, eos;
};

/// The tokenizer `[model] tokenizer_path` names: a ByteTokenizer when `path`
/// is empty, else BpeTokenizer::load(path).
Status loadTokenizer(const std::string &path,
                     std::unique_ptr<Tokenizer> &tokenizer);

/// Splits `text` into the pre-tokens of the named regex ("gpt2", "llama3",
/// "qwen2"), as Hugging Face's Split(pattern, Isolated) does: exposed for
/// tests. Invalid UTF-8 bytes count as characters of no class.
std::vector<std::string_view> splitPreTokens(std::string_view pattern,
                                             std::string_view text);

/// `text` in Unicode Normalization Form C (invalid UTF-8 is kept as is).
std::string normalizeNfc(std::string_view text);

} // namespace titan::rt

#endif // TITAN_RUNTIME_DATA_TOKENIZER_H
