//===- HfMapping.cpp - Hugging Face names and titan's FQNs ----------------===//

#include "titan/Checkpoint/HfMapping.h"
#include "titan/Support/FormatInts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir::titan;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

int64_t HfRowPermutation::toHf(int64_t row) const {
  if (isIdentity())
    return row;
  int64_t head = row / headDim, within = row % headDim;
  return head * headDim + (within % 2) * (headDim / 2) + within / 2;
}

int64_t HfRowPermutation::toTitan(int64_t row) const {
  if (isIdentity())
    return row;
  int64_t head = row / headDim, within = row % headDim;
  int64_t half = headDim / 2;
  return head * headDim + 2 * (within % half) + within / half;
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Parses `text` (named `name`, expected to be `what`) as a JSON object,
/// refusing first what is larger than 16 MiB or nests objects and arrays
/// deeper than `maxDepth` (llvm::json's parser recurses per level).
static llvm::Expected<llvm::json::Value>
parseSmallJsonObject(StringRef text, StringRef name, StringRef what,
                     unsigned maxDepth) {
  if (text.size() > (16u << 20))
    return fail("'" + name + "' is larger than 16 MiB: not " + what);
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if ((c == '{' || c == '[') && ++depth > maxDepth) {
      return fail("'" + name + "' nests deeper than " + llvm::Twine(maxDepth) +
                  " levels");
    } else if ((c == '}' || c == ']') && depth) {
      --depth;
    }
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return fail("'" + name +
                "': invalid JSON: " + llvm::toString(json.takeError()));
  if (!json->getAsObject())
    return fail("'" + name + "' is not a JSON object");
  return json;
}

/// The literal pieces of a pattern around its `{}`s (one more than them).
static llvm::SmallVector<StringRef> patternPieces(StringRef pattern) {
  llvm::SmallVector<StringRef> pieces;
  while (true) {
    size_t at = pattern.find("{}");
    if (at == StringRef::npos) {
      pieces.push_back(pattern);
      return pieces;
    }
    pieces.push_back(pattern.take_front(at));
    pattern = pattern.drop_front(at + 2);
  }
}

/// Matches `name` against `pattern`: the decimal numbers standing for its
/// `{}`s (without leading zeros), or nullopt.
static std::optional<llvm::SmallVector<std::string>>
matchPattern(StringRef pattern, StringRef name) {
  llvm::SmallVector<StringRef> pieces = patternPieces(pattern);
  llvm::SmallVector<std::string> captures;
  if (!name.consume_front(pieces.front()))
    return std::nullopt;
  for (StringRef piece : llvm::drop_begin(pieces)) {
    size_t digits = 0;
    while (digits < name.size() && llvm::isDigit(name[digits]))
      ++digits;
    if (digits == 0 || (digits > 1 && name.front() == '0') || digits > 9)
      return std::nullopt;
    captures.push_back(name.take_front(digits).str());
    name = name.drop_front(digits);
    if (!name.consume_front(piece))
      return std::nullopt;
  }
  if (!name.empty())
    return std::nullopt;
  return captures;
}

/// `pattern` with its `{}`s replaced by `captures`, in order.
static std::string substitute(StringRef pattern,
                              llvm::ArrayRef<std::string> captures) {
  llvm::SmallVector<StringRef> pieces = patternPieces(pattern);
  std::string result = pieces.front().str();
  for (auto [capture, piece] : llvm::zip(captures, llvm::drop_begin(pieces)))
    result += capture + piece.str();
  return result;
}

static bool matchesAny(llvm::ArrayRef<std::string> globs, StringRef name) {
  for (const std::string &glob : globs) {
    llvm::Expected<llvm::GlobPattern> pattern = llvm::GlobPattern::create(glob);
    if (pattern && pattern->match(name))
      return true;
    if (!pattern)
      llvm::consumeError(pattern.takeError());
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// Checks that `object` has only the keys `allowed`.
static llvm::Error checkKeys(const llvm::json::Object &object,
                             llvm::ArrayRef<StringRef> allowed,
                             const llvm::Twine &where) {
  for (const auto &entry : object)
    if (!llvm::is_contained(allowed, StringRef(entry.first)))
      return fail(where + ": unknown key '" + entry.first.str() +
                  "' (expected " + llvm::join(allowed, ", ") + ")");
  return llvm::Error::success();
}

static llvm::Expected<std::vector<std::string>>
stringList(const llvm::json::Object &root, StringRef key, StringRef name) {
  std::vector<std::string> result;
  const llvm::json::Value *value = root.get(key);
  if (!value)
    return result;
  const llvm::json::Array *array = value->getAsArray();
  if (!array)
    return fail("'" + name + "': " + key + " is not an array of strings");
  for (const llvm::json::Value &element : *array) {
    std::optional<StringRef> text = element.getAsString();
    if (!text)
      return fail("'" + name + "': " + key + " is not an array of strings");
    llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(*text);
    if (!glob)
      return fail("'" + name + "': " + key + ": bad pattern '" + *text +
                  "': " + llvm::toString(glob.takeError()));
    result.push_back(text->str());
  }
  return result;
}

llvm::Expected<HfMapping> HfMapping::parse(StringRef text, StringRef name) {
  // A mapping is written by hand or shipped with a model: small. Refuse
  // anything large or deep before the recursive JSON parser sees it.
  llvm::Expected<llvm::json::Value> json = parseSmallJsonObject(
      text, name, "a mapping file", kMaxSafetensorsJsonDepth);
  if (!json)
    return json.takeError();
  const llvm::json::Object *root = json->getAsObject();
  if (llvm::Error err =
          checkKeys(*root,
                    {"titan_hf_mapping", "description", "parameters", "tensors",
                     "ignore_titan", "ignore_hf"},
                    "'" + name + "'"))
    return std::move(err);
  HfMapping mapping;
  std::optional<int64_t> version = root->getInteger("titan_hf_mapping");
  if (!version || *version != 1)
    return fail("'" + name +
                "' is not a titan mapping file of version 1 (expected "
                "\"titan_hf_mapping\": 1)");

  if (const llvm::json::Value *parameters = root->get("parameters")) {
    const llvm::json::Object *object = parameters->getAsObject();
    if (!object)
      return fail("'" + name + "': parameters is not an object");
    for (const auto &[key, value] : *object) {
      std::string where = "'" + name.str() + "': parameter '" + key.str() + "'";
      HfParameter parameter;
      if (std::optional<int64_t> fixed = value.getAsInteger()) {
        if (*fixed < 1)
          return fail(where + " must be at least 1");
        parameter.value = *fixed;
      } else if (const llvm::json::Object *fields = value.getAsObject()) {
        if (llvm::Error err =
                checkKeys(*fields, {"hf_config", "fallback"}, where))
          return std::move(err);
        if (std::optional<StringRef> config = fields->getString("hf_config"))
          parameter.hfConfigKey = config->str();
        if (std::optional<StringRef> fallback = fields->getString("fallback"))
          parameter.fallback = fallback->str();
      } else {
        return fail(where + " is neither a number nor an object");
      }
      mapping.parameters[key.str()] = std::move(parameter);
    }
    for (const auto &[key, parameter] : mapping.parameters)
      if (!parameter.fallback.empty() &&
          (!mapping.parameters.count(parameter.fallback) ||
           !mapping.parameters.at(parameter.fallback).fallback.empty()))
        return fail("'" + name + "': parameter '" + key + "' falls back to '" +
                    parameter.fallback +
                    "', which is not a parameter without a fallback");
  }

  const llvm::json::Array *tensors = root->getArray("tensors");
  if (!tensors || tensors->empty())
    return fail("'" + name + "' has no \"tensors\" array of rules");
  llvm::StringSet<> titanNames, hfNames;
  for (const llvm::json::Value &value : *tensors) {
    size_t index = mapping.rules.size();
    std::string where =
        "'" + name.str() + "': tensor rule " + std::to_string(index);
    const llvm::json::Object *fields = value.getAsObject();
    if (!fields)
      return fail(where + " is not an object");
    if (llvm::Error err =
            checkKeys(*fields, {"titan", "hf", "transform", "heads"}, where))
      return std::move(err);
    HfTensorRule rule;
    std::optional<StringRef> titan = fields->getString("titan");
    std::optional<StringRef> hf = fields->getString("hf");
    if (!titan || !hf || titan->empty() || hf->empty())
      return fail(where + " needs \"titan\" and \"hf\" names");
    rule.titan = titan->str();
    rule.hf = hf->str();
    where += " (" + rule.titan + ")";
    if (patternPieces(rule.titan).size() != patternPieces(rule.hf).size())
      return fail(where + ": the titan and hf names have different numbers "
                          "of '{}'");
    if (StringRef(rule.titan).contains("{}{}") ||
        StringRef(rule.hf).contains("{}{}"))
      return fail(where + ": two '{}' next to each other are ambiguous");
    if (!titanNames.insert(rule.titan).second)
      return fail(where + ": a second rule for the same titan name");
    if (!hfNames.insert(rule.hf).second)
      return fail(where + ": a second rule for the hf name '" + rule.hf + "'");
    if (std::optional<StringRef> transform = fields->getString("transform")) {
      if (*transform != "rope_permute")
        return fail(where + ": unknown transform '" + *transform +
                    "' (titan knows rope_permute)");
      rule.ropePermute = true;
      std::optional<StringRef> heads = fields->getString("heads");
      if (!heads || !mapping.parameters.count(heads->str()))
        return fail(where +
                    ": rope_permute needs \"heads\", the name of a parameter");
      rule.headsParameter = heads->str();
    } else if (fields->get("transform") || fields->get("heads")) {
      return fail(where + ": transform must be a string, and heads goes with "
                          "a transform");
    }
    mapping.rules.push_back(std::move(rule));
  }

  llvm::Expected<std::vector<std::string>> ignoreTitan =
      stringList(*root, "ignore_titan", name);
  if (!ignoreTitan)
    return ignoreTitan.takeError();
  mapping.ignoreTitan = std::move(*ignoreTitan);
  llvm::Expected<std::vector<std::string>> ignoreHf =
      stringList(*root, "ignore_hf", name);
  if (!ignoreHf)
    return ignoreHf.takeError();
  mapping.ignoreHf = std::move(*ignoreHf);
  return mapping;
}

llvm::Expected<HfMapping> HfMapping::read(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail("cannot read mapping file '" + path +
                "': " + buffer.getError().message());
  return parse((*buffer)->getBuffer(), path);
}

llvm::Error HfMapping::setParameter(StringRef name, int64_t value) {
  auto it = parameters.find(name.str());
  if (it == parameters.end()) {
    std::string known;
    for (const auto &entry : parameters)
      known += (known.empty() ? "" : ", ") + entry.first;
    return fail("the mapping has no parameter '" + name + "'" +
                (known.empty() ? std::string(" (it has none)")
                               : " (it has " + known + ")"));
  }
  if (value < 1)
    return fail("parameter '" + name + "' must be at least 1, not " +
                llvm::Twine(value));
  it->second.value = value;
  return llvm::Error::success();
}

llvm::Error HfMapping::setParametersFromHfConfig(StringRef configJson,
                                                 StringRef name) {
  llvm::Expected<llvm::json::Value> json =
      parseSmallJsonObject(configJson, name, "a config.json", 64);
  if (!json)
    return json.takeError();
  const llvm::json::Object *root = json->getAsObject();
  for (const auto &[key, parameter] : parameters) {
    if (parameter.hfConfigKey.empty())
      continue;
    const llvm::json::Value *value = root->get(parameter.hfConfigKey);
    if (!value || value->kind() == llvm::json::Value::Null)
      continue;
    std::optional<int64_t> number = value->getAsInteger();
    if (!number || *number < 1)
      return fail("'" + name + "': " + parameter.hfConfigKey +
                  " is not a positive integer");
    configValues[key] = *number;
  }
  return llvm::Error::success();
}

llvm::Expected<int64_t> HfMapping::getParameter(StringRef name) const {
  auto it = parameters.find(name.str());
  if (it == parameters.end())
    return fail("the mapping has no parameter '" + name + "'");
  const HfParameter &parameter = it->second;
  if (parameter.value)
    return *parameter.value;
  auto config = configValues.find(name.str());
  if (config != configValues.end())
    return config->second;
  if (!parameter.fallback.empty())
    return getParameter(parameter.fallback);
  return fail("parameter '" + name + "' has no value: give it (--param " +
              name + "=N)" +
              (parameter.hfConfigKey.empty()
                   ? std::string()
                   : " or a config.json with " + parameter.hfConfigKey));
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

/// Binds `name` through the rules, from side `from` to the other.
static llvm::Expected<std::optional<HfTensorBinding>>
bindName(llvm::ArrayRef<HfTensorRule> rules, llvm::ArrayRef<std::string> ignore,
         StringRef name, bool fromTitan) {
  std::optional<HfTensorBinding> result;
  for (const HfTensorRule &rule : rules) {
    StringRef from = fromTitan ? rule.titan : rule.hf;
    StringRef to = fromTitan ? rule.hf : rule.titan;
    std::optional<llvm::SmallVector<std::string>> captures =
        matchPattern(from, name);
    if (!captures)
      continue;
    if (result)
      return fail(llvm::Twine(fromTitan ? "titan" : "Hugging Face") +
                  " tensor '" + name + "' matches two rules of the mapping: '" +
                  (fromTitan ? result->rule->titan : result->rule->hf) +
                  "' and '" + from + "'");
    std::string other = substitute(to, *captures);
    result = HfTensorBinding{fromTitan ? name.str() : other,
                             fromTitan ? other : name.str(), &rule};
  }
  if (result)
    return result;
  if (matchesAny(ignore, name))
    return std::nullopt;
  return fail(llvm::Twine(fromTitan ? "titan" : "Hugging Face") + " tensor '" +
              name +
              "' matches no rule of the mapping (add a rule, or a pattern to " +
              (fromTitan ? "ignore_titan" : "ignore_hf") + ")");
}

llvm::Expected<std::optional<HfTensorBinding>>
HfMapping::bindTitan(StringRef fqn) const {
  return bindName(rules, ignoreTitan, fqn, /*fromTitan=*/true);
}

llvm::Expected<std::optional<HfTensorBinding>>
HfMapping::bindHf(StringRef hf) const {
  return bindName(rules, ignoreHf, hf, /*fromTitan=*/false);
}

llvm::Expected<HfRowPermutation>
HfMapping::rowPermutation(const HfTensorBinding &binding,
                          llvm::ArrayRef<int64_t> shape) const {
  HfRowPermutation permutation;
  if (!binding.rule || !binding.rule->ropePermute)
    return permutation;
  llvm::Expected<int64_t> heads = getParameter(binding.rule->headsParameter);
  if (!heads)
    return fail("tensor '" + binding.titan +
                "' (rope_permute): " + llvm::toString(heads.takeError()));
  if (shape.size() != 2 || shape[0] % *heads != 0 ||
      (shape[0] / *heads) % 2 != 0)
    return fail("tensor '" + binding.titan + "' of shape " + formatInts(shape) +
                ": rope_permute needs a matrix whose rows split into " +
                llvm::Twine(*heads) + " heads (" +
                binding.rule->headsParameter + ") of an even head_dim");
  permutation.heads = *heads;
  permutation.headDim = shape[0] / *heads;
  return permutation;
}

//===----------------------------------------------------------------------===//
// Saving and loading through a mapping
//===----------------------------------------------------------------------===//

llvm::Expected<SafetensorsLayout>
mlir::titan::computeHfLayout(const HfMapping &mapping,
                             llvm::ArrayRef<SafetensorsTensorSpec> tensors,
                             uint64_t maxShardBytes) {
  std::vector<SafetensorsTensorSpec> specs;
  std::map<std::string, std::string> titanOf;
  for (const SafetensorsTensorSpec &tensor : tensors) {
    llvm::Expected<std::optional<HfTensorBinding>> binding =
        mapping.bindTitan(tensor.name);
    if (!binding)
      return binding.takeError();
    if (!*binding)
      continue;
    // Check the transform applies (parameters set, shapes divisible) now,
    // before any file exists.
    llvm::Expected<HfRowPermutation> rows =
        mapping.rowPermutation(**binding, tensor.shape);
    if (!rows)
      return rows.takeError();
    auto [it, inserted] = titanOf.try_emplace((*binding)->hf, tensor.name);
    if (!inserted)
      return fail("titan tensors '" + it->second + "' and '" + tensor.name +
                  "' both map to Hugging Face tensor '" + (*binding)->hf + "'");
    specs.push_back({(*binding)->hf, tensor.dtype, tensor.shape});
  }
  if (specs.empty())
    return fail("no tensor to save: the mapping ignores all of them");
  return computeSafetensorsLayout(specs, maxShardBytes);
}

llvm::Error mlir::titan::writeHfBox(SafetensorsWriter &writer,
                                    const SafetensorsLayout &layout,
                                    const HfMapping &mapping, StringRef fqn,
                                    const IndexBox &box, DenseTensorRef source,
                                    const IndexBox &sourceBox) {
  llvm::Expected<std::optional<HfTensorBinding>> binding =
      mapping.bindTitan(fqn);
  if (!binding)
    return binding.takeError();
  if (!*binding)
    return llvm::Error::success();
  auto it = layout.tensors.find((*binding)->hf);
  if (it == layout.tensors.end())
    return fail("titan tensor '" + fqn + "' (Hugging Face '" + (*binding)->hf +
                "') is not in the save's layout");
  llvm::Expected<HfRowPermutation> rows =
      mapping.rowPermutation(**binding, it->second.second.shape);
  if (!rows)
    return rows.takeError();
  HfRowPermutation permutation = *rows;
  auto rowMap = [permutation](int64_t row) { return permutation.toHf(row); };
  return writer.writeBox((*binding)->hf, box, source, sourceBox,
                         permutation.isIdentity() ? SafetensorsRowMap()
                                                  : SafetensorsRowMap(rowMap));
}

llvm::Error mlir::titan::readHfBox(const SafetensorsReader &reader,
                                   const HfMapping &mapping, StringRef fqn,
                                   llvm::ArrayRef<int64_t> shape,
                                   const IndexBox &box,
                                   MutableDenseTensorRef target,
                                   const IndexBox &targetBox) {
  llvm::Expected<std::optional<HfTensorBinding>> binding =
      mapping.bindTitan(fqn);
  if (!binding)
    return binding.takeError();
  if (!*binding)
    return fail("titan tensor '" + fqn +
                "' is ignored by the mapping: it has no Hugging Face tensor "
                "to load from");
  const SafetensorsReader::Entry *entry = reader.lookup((*binding)->hf);
  if (!entry)
    return fail("the Hugging Face files have no tensor '" + (*binding)->hf +
                "' (for titan's '" + fqn + "')");
  if (llvm::ArrayRef<int64_t>(entry->info.shape) != shape)
    return fail("Hugging Face tensor '" + (*binding)->hf + "' has shape " +
                formatInts(entry->info.shape) + " but titan's '" + fqn +
                "' has shape " + formatInts(shape) +
                " (another model or flavor?)");
  llvm::Expected<HfRowPermutation> rows =
      mapping.rowPermutation(**binding, shape);
  if (!rows)
    return rows.takeError();
  HfRowPermutation permutation = *rows;
  auto rowMap = [permutation](int64_t row) { return permutation.toHf(row); };
  return reader.readBoxInto((*binding)->hf, box, target, targetBox,
                            permutation.isIdentity()
                                ? SafetensorsRowMap()
                                : SafetensorsRowMap(rowMap));
}
