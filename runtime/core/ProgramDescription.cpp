//===- ProgramDescription.cpp - reading a compiled program's description --===//

#include "core/ProgramDescription.h"

#include <algorithm>
#include <sstream>

using namespace titan::rt;

int64_t TensorPlace::numElements() const {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  return count;
}

int64_t ProgramDescription::getWorldSize() const {
  int64_t size = 1;
  for (int64_t axis : mesh.axisSizes)
    size *= axis;
  return size;
}

int64_t ProgramDescription::getPipelineCoordinate(int64_t rank) const {
  if (!pipelineRank)
    return 0;
  return rank / (getWorldSize() / mesh.axisSizes.front());
}

const TensorPlace *
ProgramDescription::findArgument(const std::string &name) const {
  for (const TensorPlace &place : arguments)
    if (place.name == name)
      return &place;
  return nullptr;
}

const TensorPlace *ProgramDescription::findTokenInput() const {
  const TensorPlace *found = nullptr;
  for (const TensorPlace &place : arguments) {
    if (place.role != "input" || place.name == "labels" || place.name == "lr" ||
        place.name == "step")
      continue;
    if (found)
      return nullptr;
    found = &place;
  }
  return found;
}

const TensorPlace *
ProgramDescription::findCopiedArgument(const TensorPlace &copy) const {
  const std::string prefix = "copy.";
  if (copy.name.compare(0, prefix.size(), prefix) != 0)
    return nullptr;
  return findArgument(copy.name.substr(prefix.size()));
}

const TensorPlace *
ProgramDescription::findResult(const std::string &name) const {
  for (const TensorPlace &place : results)
    if (place.name == name)
      return &place;
  return nullptr;
}

namespace {

/// Reads the description line by line.
class Parser {
public:
  Parser(const std::string &text, ProgramDescription &description)
      : input(text), description(description) {}

  Status run();

private:
  Status error(const std::string &message) const {
    return Status::invalidArgument("program description, line " +
                                   std::to_string(lineNumber) + ": " + message);
  }
  /// Parses "[a,b,c]" (or "[]").
  bool parseList(const std::string &text, std::vector<int64_t> &values) const;
  static bool parseInt(const std::string &text, int64_t &value);
  static bool parseDouble(const std::string &text, double &value);
  /// Splits "key=value" (the value is "" without '=').
  static std::pair<std::string, std::string>
  splitEntry(const std::string &entry);
  Status parsePlace(std::istringstream &line, TensorPlace &place) const;
  Status parseLine(const std::string &keyword, std::istringstream &line);

  std::istringstream input;
  ProgramDescription &description;
  int64_t lineNumber = 0;
  bool ended = false;
};

} // namespace

std::pair<std::string, std::string>
Parser::splitEntry(const std::string &entry) {
  size_t equals = entry.find('=');
  if (equals == std::string::npos)
    return {entry, ""};
  return {entry.substr(0, equals), entry.substr(equals + 1)};
}

/// Parses all of `text` with `convert` (a std::sto* function).
template <typename T, typename Convert>
static bool parseWhole(const std::string &text, T &value, Convert convert) {
  if (text.empty())
    return false;
  size_t used = 0;
  try {
    value = convert(text, &used);
  } catch (...) {
    return false;
  }
  return used == text.size();
}

bool Parser::parseInt(const std::string &text, int64_t &value) {
  return parseWhole(text, value, [](const std::string &s, size_t *used) {
    return std::stoll(s, used);
  });
}

bool Parser::parseDouble(const std::string &text, double &value) {
  return parseWhole(text, value, [](const std::string &s, size_t *used) {
    return std::stod(s, used);
  });
}

bool Parser::parseList(const std::string &text,
                       std::vector<int64_t> &values) const {
  values.clear();
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    return false;
  std::string body = text.substr(1, text.size() - 2);
  if (body.empty())
    return true;
  std::istringstream items(body);
  std::string item;
  while (std::getline(items, item, ',')) {
    int64_t value;
    if (!parseInt(item, value))
      return false;
    values.push_back(value);
  }
  return true;
}

Status Parser::parsePlace(std::istringstream &line, TensorPlace &place) const {
  std::string dtype, shape, region, offset, bytes;
  line >> dtype >> shape >> region >> offset >> bytes;
  static const std::pair<const char *, int32_t> dtypes[] = {
      {"f32", TITANRT_F32}, {"f64", TITANRT_F64}, {"bf16", TITANRT_BF16},
      {"f16", TITANRT_F16}, {"i64", TITANRT_I64}, {"i32", TITANRT_I32},
      {"i1", TITANRT_BOOL}};
  auto known =
      std::find_if(std::begin(dtypes), std::end(dtypes),
                   [&](const auto &entry) { return dtype == entry.first; });
  if (known == std::end(dtypes))
    return error("unknown element type '" + dtype + "'");
  place.dtype = known->second;
  if (!parseList(shape, place.shape))
    return error("malformed shape '" + shape + "'");
  if (region == "arena")
    place.region = Region::Arena;
  else if (region == "state")
    place.region = Region::State;
  else if (region == "inputs")
    place.region = Region::Inputs;
  else
    return error("unknown region '" + region + "'");
  if (!parseInt(offset, place.offset) || !parseInt(bytes, place.bytes) ||
      place.offset < 0 ||
      place.bytes != place.numElements() * int64_t(dtypeSize(place.dtype)))
    return error("malformed offset or size of '" + place.name + "'");
  return Status::success();
}

Status Parser::parseLine(const std::string &keyword, std::istringstream &line) {
  if (keyword == "mesh") {
    std::string axis;
    while (line >> axis) {
      size_t equals = axis.find('=');
      int64_t size;
      if (equals == std::string::npos ||
          !parseInt(axis.substr(equals + 1), size) || size < 1)
        return error("malformed mesh axis '" + axis + "'");
      description.mesh.axisNames.push_back(axis.substr(0, equals));
      description.mesh.axisSizes.push_back(size);
    }
    return Status::success();
  }
  if (keyword == "backend") {
    std::string name;
    line >> name;
    if (name != "cpu" && name != "cuda")
      return error("unknown backend '" + name + "' (cpu or cuda)");
    description.backend = name;
    return Status::success();
  }
  if (keyword == "pipeline") {
    std::string entry;
    line >> entry;
    auto [key, value] = splitEntry(entry);
    int64_t rank;
    const MeshShape &mesh = description.mesh;
    if (key != "rank" || !parseInt(value, rank) || rank < 0 ||
        mesh.axisNames.empty() || mesh.axisNames.front() != "pp" ||
        rank >= mesh.axisSizes.front())
      return error("malformed pipeline record '" + entry +
                   "' (after a mesh whose first axis is pp)");
    description.pipelineRank = rank;
    return Status::success();
  }
  if (keyword == "regions") {
    std::string entry;
    while (line >> entry) {
      size_t equals = entry.find('=');
      int64_t bytes;
      if (equals == std::string::npos ||
          !parseInt(entry.substr(equals + 1), bytes) || bytes < 0)
        return error("malformed region '" + entry + "'");
      std::string name = entry.substr(0, equals);
      if (name == "arena")
        description.arenaBytes = bytes;
      else if (name == "state")
        description.stateBytes = bytes;
      else if (name == "inputs")
        description.inputBytes = bytes;
      else
        return error("unknown region '" + name + "'");
    }
    return Status::success();
  }
  if (keyword == "defaults") {
    std::string entry;
    while (line >> entry) {
      auto [key, value] = splitEntry(entry);
      int64_t number;
      if (key == "lr") {
        if (!parseDouble(value, description.defaultLearningRate))
          return error("malformed learning rate '" + value + "'");
      } else if ((key == "steps" || key == "seed") && parseInt(value, number)) {
        (key == "steps" ? description.defaultSteps : description.defaultSeed) =
            number;
      } else {
        return error("malformed default '" + entry + "'");
      }
    }
    return Status::success();
  }
  if (keyword == "lr_schedule") {
    mlir::titan::LrSchedule &schedule = description.lrSchedule;
    std::string entry;
    while (line >> entry) {
      auto [key, value] = splitEntry(entry);
      int64_t number;
      std::optional<mlir::titan::LrDecayType> type;
      if ((key == "warmup" || key == "stable" || key == "decay") &&
          parseInt(value, number) && number >= 0) {
        (key == "warmup"   ? schedule.warmupSteps
         : key == "stable" ? schedule.stableSteps
                           : schedule.decaySteps) = number;
      } else if (key == "type" &&
                 (type = mlir::titan::symbolizeLrDecayType(value))) {
        schedule.decayType = *type;
      } else if (key == "min") {
        if (!parseDouble(value, schedule.minLrFactor))
          return error("malformed minimum learning-rate factor '" + value +
                       "'");
      } else {
        return error("malformed learning-rate schedule entry '" + entry + "'");
      }
    }
    return Status::success();
  }
  if (keyword == "comm") {
    int64_t index;
    std::string text, axis;
    line >> text;
    if (!parseInt(text, index) ||
        index != int64_t(description.communicators.size()))
      return error("communicators must be numbered 0, 1, ... in order");
    std::vector<int> axes;
    while (line >> axis) {
      auto it = std::find(description.mesh.axisNames.begin(),
                          description.mesh.axisNames.end(), axis);
      if (it == description.mesh.axisNames.end())
        return error("communicator over unknown mesh axis '" + axis + "'");
      axes.push_back(it - description.mesh.axisNames.begin());
    }
    description.communicators.push_back(std::move(axes));
    return Status::success();
  }
  if (keyword == "arg" || keyword == "result") {
    std::string index;
    TensorPlace place;
    line >> index >> place.name;
    if (keyword == "arg")
      line >> place.role;
    TITANRT_RETURN_IF_ERROR(parsePlace(line, place));
    (keyword == "arg" ? description.arguments : description.results)
        .push_back(std::move(place));
    return Status::success();
  }
  if (keyword == "global" || keyword == "box" || keyword == "order" ||
      keyword == "range") {
    std::string name;
    line >> name;
    InputLayout &layout = description.inputs[name];
    if (keyword == "global") {
      std::string shape;
      line >> shape;
      if (!parseList(shape, layout.globalShape))
        return error("malformed global shape '" + shape + "'");
      return Status::success();
    }
    if (keyword == "box") {
      std::string rank, offsets, sizes;
      line >> rank >> offsets >> sizes;
      Box box;
      int64_t index;
      if (!parseInt(rank, index) || index != int64_t(layout.boxes.size()) ||
          !parseList(offsets, box.offsets) || !parseList(sizes, box.sizes))
        return error("malformed box of '" + name + "'");
      layout.boxes.push_back(std::move(box));
      return Status::success();
    }
    std::string list;
    line >> list;
    std::vector<int64_t> values;
    if (keyword == "range") {
      if (!parseList(list, values) || values.size() < 2 || values.size() > 3 ||
          values[0] >= values[1])
        return error("malformed id range of '" + name + "'");
      layout.idRange = std::move(values);
      return Status::success();
    }
    if (!parseList(list, values) || values.size() < 3)
      return error("malformed order of '" + name + "'");
    layout.orderDim = values.front();
    layout.order.assign(values.begin() + 1, values.end());
    return Status::success();
  }
  if (keyword == "end") {
    ended = true;
    return Status::success();
  }
  return error("unknown record '" + keyword + "'");
}

Status Parser::run() {
  std::string text;
  if (!std::getline(input, text) || text != "titan-program 1")
    return Status::invalidArgument(
        "program description: expected 'titan-program 1' (was the program "
        "compiled by another version of titan?)");
  lineNumber = 1;
  while (!ended && std::getline(input, text)) {
    ++lineNumber;
    std::istringstream line(text);
    std::string keyword;
    if (!(line >> keyword))
      continue;
    TITANRT_RETURN_IF_ERROR(parseLine(keyword, line));
  }
  if (!ended)
    return error("the description is cut short (no 'end')");
  std::vector<TensorPlace> places(description.arguments);
  places.insert(places.end(), description.results.begin(),
                description.results.end());
  for (const TensorPlace &place : places) {
    int64_t limit = place.region == Region::State    ? description.stateBytes
                    : place.region == Region::Inputs ? description.inputBytes
                                                     : description.arenaBytes;
    if (place.offset + place.bytes > limit)
      return Status::invalidArgument("program description: '" + place.name +
                                     "' lies outside its region");
  }
  // A parameter's copy is the bf16 or f16 rounding of a float32 parameter
  // of its shape, which the runtime fills after every load.
  for (const TensorPlace &copy : description.arguments) {
    if (copy.role != "param_copy")
      continue;
    const TensorPlace *param = description.findCopiedArgument(copy);
    if (!param || param->role != "param" || param->dtype != TITANRT_F32 ||
        param->shape != copy.shape ||
        (copy.dtype != TITANRT_BF16 && copy.dtype != TITANRT_F16))
      return Status::invalidArgument(
          "program description: the parameter copy '" + copy.name + "' (" +
          dtypeName(copy.dtype) +
          ") is not the bf16 or f16 copy of a float32 argument 'copy.<name>' "
          "names with the role param and its shape: recompile the program");
  }
  return Status::success();
}

Status titan::rt::parseProgramDescription(const std::string &text,
                                          ProgramDescription &description) {
  description = ProgramDescription();
  return Parser(text, description).run();
}
