//===- Manifest.cpp - the manifest of a titan-compile output --------------===//

#include "Manifest.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace titan::run {

namespace json = llvm::json;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

namespace {

/// Reads the fields of one manifest; every error names the file and, as
/// "ranks[2]: ...", where in it.
class ManifestReader {
public:
  explicit ManifestReader(std::string path) : path(std::move(path)) {}

  /// "<file>: <where>: <message>" (no "<where>: " when it is empty).
  llvm::Error fail(const Twine &where, const Twine &message) const {
    std::string place = where.str();
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": " + (place.empty() ? "" : place + ": ") + message.str());
  }

  /// The field `key` of `object`, which must be there.
  Expected<const json::Value *> getField(const json::Object &object,
                                         StringRef key,
                                         const Twine &where) const {
    if (const json::Value *value = object.get(key))
      return value;
    return fail(where, "missing field '" + key + "'");
  }

  /// The integer field `key`.
  Expected<int64_t> getInteger(const json::Object &object, StringRef key,
                               const Twine &where) const {
    Expected<const json::Value *> value = getField(object, key, where);
    if (!value)
      return value.takeError();
    if (std::optional<int64_t> integer = (*value)->getAsInteger())
      return *integer;
    return fail(where, "'" + key + "' is not an integer");
  }

  /// The string field `key`.
  Expected<std::string> getString(const json::Object &object, StringRef key,
                                  const Twine &where) const {
    Expected<const json::Value *> value = getField(object, key, where);
    if (!value)
      return value.takeError();
    if (std::optional<StringRef> text = (*value)->getAsString())
      return text->str();
    return fail(where, "'" + key + "' is not a string");
  }

  /// The array field `key`.
  Expected<const json::Array *> getArray(const json::Object &object,
                                         StringRef key,
                                         const Twine &where) const {
    Expected<const json::Value *> value = getField(object, key, where);
    if (!value)
      return value.takeError();
    if (const json::Array *array = (*value)->getAsArray())
      return array;
    return fail(where, "'" + key + "' is not an array");
  }

  /// `value` as an object.
  Expected<const json::Object *> getObject(const json::Value &value,
                                           const Twine &where) const {
    if (const json::Object *object = value.getAsObject())
      return object;
    return fail(where, "expected an object");
  }

  /// The integers of the array field `key`.
  Expected<std::vector<int64_t>> getIntegers(const json::Object &object,
                                             StringRef key,
                                             const Twine &where) const {
    Expected<const json::Array *> array = getArray(object, key, where);
    if (!array)
      return array.takeError();
    std::vector<int64_t> integers;
    for (const json::Value &element : **array) {
      std::optional<int64_t> integer = element.getAsInteger();
      if (!integer)
        return fail(where, "'" + key +
                               "' holds a value that is not an "
                               "integer");
      integers.push_back(*integer);
    }
    return integers;
  }

private:
  std::string path;
};

/// "[0, 1]".
std::string formatList(const std::vector<int64_t> &values) {
  std::string text;
  for (int64_t value : values)
    text += (text.empty() ? "" : ", ") + std::to_string(value);
  return "[" + text + "]";
}

} // namespace

Expected<Manifest> readManifest(StringRef directory) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "manifest.json");
  ManifestReader reader(path.str().str());
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read '" + path +
                                       "': " + buffer.getError().message());
  Expected<json::Value> parsed = json::parse((*buffer)->getBuffer());
  if (!parsed)
    return reader.fail("",
                       "not valid JSON: " + llvm::toString(parsed.takeError()));
  Expected<const json::Object *> root = reader.getObject(*parsed, "");
  if (!root)
    return root.takeError();

  Expected<std::string> format = reader.getString(**root, "format", "");
  if (!format)
    return format.takeError();
  if (*format != "titan-manifest")
    return reader.fail("", "'format' is '" + *format +
                               "', expected 'titan-manifest'");
  Expected<int64_t> version = reader.getInteger(**root, "version", "");
  if (!version)
    return version.takeError();
  if (*version != 1)
    return reader.fail("", "version " + Twine(*version) +
                               " is not supported (this titan-run reads "
                               "version 1)");

  Manifest manifest;
  Expected<int64_t> worldSize = reader.getInteger(**root, "world_size", "");
  if (!worldSize)
    return worldSize.takeError();
  if (*worldSize < 1)
    return reader.fail("", "world_size is " + Twine(*worldSize));
  manifest.worldSize = *worldSize;
  if (const json::Value *backend = (*root)->get("backend")) {
    std::optional<StringRef> name = backend->getAsString();
    if (!name || (*name != "cpu" && *name != "cuda"))
      return reader.fail("", "backend must be \"cpu\" or \"cuda\"");
    manifest.backend = name->str();
  }

  // The mesh.
  Expected<const json::Value *> meshValue = reader.getField(**root, "mesh", "");
  if (!meshValue)
    return meshValue.takeError();
  Expected<const json::Object *> mesh = reader.getObject(**meshValue, "mesh");
  if (!mesh)
    return mesh.takeError();
  Expected<const json::Array *> axes = reader.getArray(**mesh, "axes", "mesh");
  std::vector<std::string> axisNames;
  if (!axes)
    return axes.takeError();
  for (const json::Value &axis : **axes) {
    std::optional<StringRef> name = axis.getAsString();
    if (!name)
      return reader.fail("mesh", "'axes' holds a value that is not a string");
    axisNames.push_back(name->str());
  }
  Expected<std::vector<int64_t>> sizes =
      reader.getIntegers(**mesh, "sizes", "mesh");
  if (!sizes)
    return sizes.takeError();
  std::vector<int64_t> axisSizes = *sizes;
  if (axisSizes.size() != axisNames.size())
    return reader.fail("mesh", "'axes' has " + Twine(axisNames.size()) +
                                   " entries but 'sizes' has " +
                                   Twine(axisSizes.size()));
  int64_t meshRanks = 1;
  for (int64_t size : axisSizes) {
    if (size < 1)
      return reader.fail("mesh", "'sizes' holds " + Twine(size));
    meshRanks *= size;
  }
  if (meshRanks != manifest.worldSize)
    return reader.fail("mesh", "the sizes " + formatList(axisSizes) + " make " +
                                   Twine(meshRanks) +
                                   " ranks but world_size is " +
                                   Twine(manifest.worldSize));

  // The programs.
  Expected<const json::Array *> programs =
      reader.getArray(**root, "programs", "");
  if (!programs)
    return programs.takeError();
  llvm::StringMap<std::string> programPaths;
  for (size_t index = 0; index < (*programs)->size(); ++index) {
    std::string where = "programs[" + std::to_string(index) + "]";
    Expected<const json::Object *> program =
        reader.getObject((**programs)[index], where);
    if (!program)
      return program.takeError();
    Expected<std::string> name = reader.getString(**program, "name", where);
    if (!name)
      return name.takeError();
    Expected<std::string> relative = reader.getString(**program, "path", where);
    if (!relative)
      return relative.takeError();
    llvm::SmallString<256> programPath(directory);
    llvm::sys::path::append(programPath, *relative);
    if (!llvm::sys::fs::exists(programPath))
      return reader.fail(where, "program '" + *name + "': '" + programPath +
                                    "' does not exist");
    if (!llvm::sys::fs::is_regular_file(programPath) ||
        !llvm::sys::fs::can_execute(programPath))
      return reader.fail(where, "program '" + *name + "': '" + programPath +
                                    "' is not an executable file");
    if (!programPaths.try_emplace(*name, programPath.str().str()).second)
      return reader.fail(where, "program '" + *name + "' is listed twice");
  }

  // The ranks.
  Expected<const json::Array *> ranks = reader.getArray(**root, "ranks", "");
  if (!ranks)
    return ranks.takeError();
  if (static_cast<int64_t>((*ranks)->size()) != manifest.worldSize)
    return reader.fail("", "'ranks' lists " + Twine((*ranks)->size()) +
                               " ranks but world_size is " +
                               Twine(manifest.worldSize));
  manifest.rankPrograms.resize(manifest.worldSize);
  for (size_t index = 0; index < (*ranks)->size(); ++index) {
    std::string where = "ranks[" + std::to_string(index) + "]";
    Expected<const json::Object *> entry =
        reader.getObject((**ranks)[index], where);
    if (!entry)
      return entry.takeError();
    Expected<int64_t> rank = reader.getInteger(**entry, "rank", where);
    if (!rank)
      return rank.takeError();
    if (*rank < 0 || *rank >= manifest.worldSize)
      return reader.fail(where, "rank " + Twine(*rank) +
                                    " is outside [0, world_size " +
                                    Twine(manifest.worldSize) + ")");
    if (!manifest.rankPrograms[*rank].empty())
      return reader.fail(where, "rank " + Twine(*rank) + " is listed twice");
    Expected<std::string> program = reader.getString(**entry, "program", where);
    if (!program)
      return program.takeError();
    auto found = programPaths.find(*program);
    if (found == programPaths.end())
      return reader.fail(where,
                         "program '" + *program + "' is not one of 'programs'");
    Expected<std::vector<int64_t>> coords =
        reader.getIntegers(**entry, "coords", where);
    if (!coords)
      return coords.takeError();
    // Ranks are row-major over the mesh axes.
    std::vector<int64_t> expected(axisSizes.size());
    int64_t rest = *rank;
    for (size_t axis = expected.size(); axis-- > 0;) {
      expected[axis] = rest % axisSizes[axis];
      rest /= axisSizes[axis];
    }
    if (*coords != expected)
      return reader.fail(
          where,
          "coords " + formatList(*coords) + " are not rank " + Twine(*rank) +
              "'s (row-major over the mesh: " + formatList(expected) + ")");
    manifest.rankPrograms[*rank] = found->second;
  }
  return manifest;
}

} // namespace titan::run
