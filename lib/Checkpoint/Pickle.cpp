//===- Pickle.cpp - Restricted Python pickle reader and writer ------------===//

#include "titan/Checkpoint/Pickle.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cstring>

using namespace mlir::titan;
using llvm::StringRef;
namespace endian = llvm::support::endian;

//===----------------------------------------------------------------------===//
// PickleValue
//===----------------------------------------------------------------------===//

PickleRef PickleValue::none() { return PickleRef(new PickleValue(Kind::None)); }

PickleRef PickleValue::boolean(bool value) {
  PickleRef node(new PickleValue(Kind::Bool));
  node->intValue = value;
  return node;
}

PickleRef PickleValue::integer(int64_t value) {
  PickleRef node(new PickleValue(Kind::Int));
  node->intValue = value;
  return node;
}

PickleRef PickleValue::floating(double value) {
  PickleRef node(new PickleValue(Kind::Float));
  node->floatValue = value;
  return node;
}

PickleRef PickleValue::string(StringRef value) {
  PickleRef node(new PickleValue(Kind::String));
  node->text = value.str();
  return node;
}

PickleRef PickleValue::bytes(StringRef value) {
  PickleRef node(new PickleValue(Kind::Bytes));
  node->text = value.str();
  return node;
}

PickleRef PickleValue::tuple(std::vector<PickleRef> items) {
  PickleRef node(new PickleValue(Kind::Tuple));
  node->items = std::move(items);
  return node;
}

PickleRef PickleValue::list(std::vector<PickleRef> items) {
  PickleRef node(new PickleValue(Kind::List));
  node->items = std::move(items);
  return node;
}

PickleRef
PickleValue::dict(std::vector<std::pair<PickleRef, PickleRef>> entries) {
  PickleRef node(new PickleValue(Kind::Dict));
  node->entries = std::move(entries);
  return node;
}

PickleRef PickleValue::global(StringRef module, StringRef name) {
  PickleRef node(new PickleValue(Kind::Global));
  node->text = module.str();
  node->name = name.str();
  return node;
}

PickleRef PickleValue::object(PickleRef callable, PickleRef args, bool newObj) {
  PickleRef node(new PickleValue(Kind::Object));
  node->items = {std::move(callable), std::move(args), nullptr};
  node->newObj = newObj;
  return node;
}

PickleRef PickleValue::persistentId(PickleRef id) {
  PickleRef node(new PickleValue(Kind::PersistentId));
  node->items = {std::move(id)};
  return node;
}

bool PickleValue::getBool() const {
  assert(kind == Kind::Bool && "not a bool");
  return intValue != 0;
}

int64_t PickleValue::getInt() const {
  assert(kind == Kind::Int && "not an int");
  return intValue;
}

double PickleValue::getFloat() const {
  assert(kind == Kind::Float && "not a float");
  return floatValue;
}

StringRef PickleValue::getString() const {
  assert((kind == Kind::String || kind == Kind::Bytes) && "not a string");
  return text;
}

StringRef PickleValue::getModule() const {
  if (kind == Kind::Global)
    return text;
  if (kind == Kind::Object && items[0]->kind == Kind::Global)
    return items[0]->text;
  return {};
}

StringRef PickleValue::getName() const {
  if (kind == Kind::Global)
    return name;
  if (kind == Kind::Object && items[0]->kind == Kind::Global)
    return items[0]->name;
  return {};
}

std::string PickleValue::getQualifiedName() const {
  return (getModule() + "." + getName()).str();
}

std::vector<PickleRef> &PickleValue::getItems() {
  assert((kind == Kind::Tuple || kind == Kind::List) && "not a sequence");
  return items;
}

const std::vector<PickleRef> &PickleValue::getItems() const {
  assert((kind == Kind::Tuple || kind == Kind::List) && "not a sequence");
  return items;
}

std::vector<std::pair<PickleRef, PickleRef>> &PickleValue::getEntries() {
  assert((kind == Kind::Dict || kind == Kind::Object) && "not a mapping");
  return entries;
}

const std::vector<std::pair<PickleRef, PickleRef>> &
PickleValue::getEntries() const {
  assert((kind == Kind::Dict || kind == Kind::Object) && "not a mapping");
  return entries;
}

const PickleRef &PickleValue::getCallable() const {
  assert(kind == Kind::Object && "not an object");
  return items[0];
}

const PickleRef &PickleValue::getArgs() const {
  assert(kind == Kind::Object && "not an object");
  return items[1];
}

const PickleRef &PickleValue::getState() const {
  assert(kind == Kind::Object && "not an object");
  return items[2];
}

void PickleValue::setState(PickleRef state) {
  assert(kind == Kind::Object && "not an object");
  items[2] = std::move(state);
}

const PickleRef &PickleValue::getPersistentId() const {
  assert(kind == Kind::PersistentId && "not a persistent id");
  return items[0];
}

std::vector<const PickleValue *> PickleValue::getChildren() const {
  std::vector<const PickleValue *> children;
  for (const PickleRef &item : items)
    if (item)
      children.push_back(item.get());
  for (const auto &[key, value] : entries) {
    children.push_back(key.get());
    children.push_back(value.get());
  }
  return children;
}

void PickleValue::clearChildren() {
  items.clear();
  entries.clear();
}

PickleRef PickleValue::lookup(StringRef key) const {
  if (kind != Kind::Dict)
    return nullptr;
  for (const auto &[entryKey, value] : entries)
    if (entryKey->kind == Kind::String && entryKey->text == key)
      return value;
  return nullptr;
}

static void printSequence(llvm::raw_ostream &os,
                          const std::vector<PickleRef> &items) {
  llvm::interleaveComma(items, os,
                        [&](const PickleRef &item) { item->print(os); });
}

static void
printEntries(llvm::raw_ostream &os,
             const std::vector<std::pair<PickleRef, PickleRef>> &entries) {
  os << '{';
  llvm::interleaveComma(entries, os, [&](const auto &entry) {
    entry.first->print(os);
    os << ": ";
    entry.second->print(os);
  });
  os << '}';
}

void PickleValue::print(llvm::raw_ostream &os) const {
  switch (kind) {
  case Kind::None:
    os << "None";
    return;
  case Kind::Bool:
    os << (intValue ? "True" : "False");
    return;
  case Kind::Int:
    os << intValue;
    return;
  case Kind::Float:
    os << llvm::format("%.17g", floatValue);
    return;
  case Kind::String:
    os << '\'';
    os.write_escaped(text);
    os << '\'';
    return;
  case Kind::Bytes:
    os << "b'";
    os.write_escaped(text, /*UseHexEscapes=*/true);
    os << '\'';
    return;
  case Kind::Tuple:
    os << '(';
    printSequence(os, items);
    os << (items.size() == 1 ? ",)" : ")");
    return;
  case Kind::List:
    os << '[';
    printSequence(os, items);
    os << ']';
    return;
  case Kind::Dict:
    printEntries(os, entries);
    return;
  case Kind::Global:
    os << text << '.' << name;
    return;
  case Kind::Object:
    items[0]->print(os);
    os << (newObj ? ".__new__" : "");
    items[1]->print(os);
    if (items[2]) {
      os << ".__setstate__(";
      items[2]->print(os);
      os << ')';
    }
    if (!entries.empty()) {
      os << ".update(";
      printEntries(os, entries);
      os << ')';
    }
    return;
  case Kind::PersistentId:
    os << "persistent_id(";
    items[0]->print(os);
    os << ')';
    return;
  }
}

//===----------------------------------------------------------------------===//
// Allow-list
//===----------------------------------------------------------------------===//

llvm::ArrayRef<PickleGlobal> mlir::titan::checkpointPickleGlobals() {
  static constexpr PickleGlobal kGlobals[] = {
      // DCP metadata, PyTorch 2.x and 1.13 module paths.
      {"torch.distributed.checkpoint.metadata", "Metadata"},
      {"torch.distributed.checkpoint.metadata", "TensorStorageMetadata"},
      {"torch.distributed.checkpoint.metadata", "ChunkStorageMetadata"},
      {"torch.distributed.checkpoint.metadata", "BytesStorageMetadata"},
      {"torch.distributed.checkpoint.metadata", "MetadataIndex"},
      {"torch.distributed.checkpoint.metadata", "TensorProperties"},
      {"torch.distributed.checkpoint.metadata", "_MEM_FORMAT_ENCODING"},
      {"torch.distributed.checkpoint.metadata", "StorageMeta"},
      {"torch.distributed.checkpoint.filesystem", "_StorageInfo"},
      {"torch.distributed._shard.checkpoint.metadata", "Metadata"},
      {"torch.distributed._shard.checkpoint.metadata", "TensorStorageMetadata"},
      {"torch.distributed._shard.checkpoint.metadata", "ChunkStorageMetadata"},
      {"torch.distributed._shard.checkpoint.metadata", "BytesStorageMetadata"},
      {"torch.distributed._shard.checkpoint.metadata", "MetadataIndex"},
      {"torch.distributed._shard.checkpoint.filesystem", "_StorageInfo"},
      {"torch.distributed._shard.sharded_tensor.metadata", "TensorProperties"},
      {"torch.distributed._shard.sharded_tensor.metadata",
       "MEM_FORMAT_ENCODING"},
      // StorageMeta.checkpoint_id (PyTorch >= 2.4) may be a path object.
      {"pathlib", "PosixPath"},
      {"pathlib._local", "PosixPath"},
      // Enum members are pickled as getattr(enum_class, member_name).
      {"builtins", "getattr"},
      {"collections", "OrderedDict"},
      {"torch", "Size"},
      {"torch.serialization", "_get_layout"},
      {"torch._utils", "_rebuild_tensor_v2"},
      // dtypes.
      {"torch", "float32"},
      {"torch", "float64"},
      {"torch", "float16"},
      {"torch", "bfloat16"},
      {"torch", "int64"},
      {"torch", "int32"},
      {"torch", "int16"},
      {"torch", "int8"},
      {"torch", "uint8"},
      {"torch", "bool"},
      // Complex dtypes and storages are recorded so that readers can refuse
      // them by name rather than as unknown globals.
      {"torch", "complex32"},
      {"torch", "complex64"},
      {"torch", "complex128"},
      // Storage types named in torch.save persistent ids.
      {"torch", "FloatStorage"},
      {"torch", "DoubleStorage"},
      {"torch", "HalfStorage"},
      {"torch", "BFloat16Storage"},
      {"torch", "LongStorage"},
      {"torch", "IntStorage"},
      {"torch", "ShortStorage"},
      {"torch", "CharStorage"},
      {"torch", "ByteStorage"},
      {"torch", "BoolStorage"},
      {"torch", "ComplexHalfStorage"},
      {"torch", "ComplexFloatStorage"},
      {"torch", "ComplexDoubleStorage"},
  };
  return kGlobals;
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

namespace {
/// Pickle opcodes (see CPython's Lib/pickletools.py for their definitions).
enum Opcode : uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  BININT = 'J',
  BININT1 = 'K',
  BININT2 = 'M',
  NONE = 'N',
  BINPERSID = 'Q',
  REDUCE = 'R',
  BINUNICODE = 'X',
  EMPTY_LIST = ']',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  BINGET = 'h',
  LONG_BINGET = 'j',
  LIST = 'l',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  PROTO = 0x80,
  NEWOBJ = 0x81,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  // Protocols 0 and 1 (text numbers and strings, text memo indices), which
  // later protocols replaced but Python still reads.
  INT = 'I',
  LONG = 'L',
  FLOAT = 'F',
  STRING = 'S',
  UNICODE = 'V',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  PUT = 'p',
  GET = 'g',
  PERSID = 'P',
  INST = 'i',
  OBJ = 'o',
  DUP = '2',
  // Protocol 2.
  LONG4 = 0x8b,
  EXT1 = 0x82,
  EXT2 = 0x83,
  EXT4 = 0x84,
};

/// The restricted pickle VM.
class Reader {
public:
  Reader(StringRef bytes, StringRef name, llvm::ArrayRef<PickleGlobal> allowed)
      : bytes(bytes), name(name), allowed(allowed) {}

  llvm::Expected<PickleRef> run();

private:
  llvm::Error error(const llvm::Twine &message) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'" + name + "': pickle offset " +
                                       llvm::Twine(opcodeOffset) + ": " +
                                       message);
  }
  llvm::Expected<StringRef> take(uint64_t count);
  llvm::Expected<uint64_t> takeUInt(unsigned width);
  llvm::Expected<StringRef> takeLine();
  /// A decimal number on a line of its own (protocol 0's memo indices).
  llvm::Expected<int64_t> takeDecimalLine();
  /// Pushes the little-endian two's-complement integer of `width` bytes
  /// (LONG1, LONG4).
  llvm::Error pushLong(uint64_t width);
  /// Stores the top of the stack as memo entry `index` (PUT, BINPUT, ...).
  llvm::Error memoize(uint64_t index) {
    if (stack.empty())
      return error("memoizing with an empty stack");
    memo[index] = stack.back();
    return llvm::Error::success();
  }
  /// Pushes memo entry `index` (GET, BINGET, ...).
  llvm::Error pushMemoized(uint64_t index) {
    auto it = memo.find(index);
    if (it == memo.end())
      return error("memo entry " + llvm::Twine(index) + " is not defined");
    stack.push_back(it->second);
    return llvm::Error::success();
  }
  /// Runs an opcode of protocols 0 and 1 that later protocols replaced.
  llvm::Error stepLegacy(uint8_t opcode);
  llvm::Expected<PickleRef> pop();
  llvm::Expected<std::vector<PickleRef>> popToMark();
  llvm::Error pushGlobal(StringRef module, StringRef globalName);
  llvm::Error setItems(const PickleRef &target,
                       std::vector<PickleRef> keysAndValues);
  llvm::Error step(uint8_t opcode, bool &done);
  llvm::Expected<PickleRef> runSteps();
  llvm::Error checkShape(const PickleValue *root) const;
  /// Records a node that can hold references, to take the graph apart if the
  /// pickle is refused.
  PickleRef track(PickleRef node) {
    created.push_back(node);
    return node;
  }

  StringRef bytes;
  StringRef name;
  llvm::ArrayRef<PickleGlobal> allowed;
  size_t pos = 0;
  size_t opcodeOffset = 0;
  /// The protocol of PROTO, 0 before it (protocols 0 and 1 have none).
  uint64_t protocol = 0;
  std::vector<PickleRef> stack;
  std::vector<size_t> marks;
  llvm::DenseMap<uint64_t, PickleRef> memo;
  std::vector<PickleRef> created;
};
} // namespace

/// Object graphs nested deeper than this are refused: they are printed,
/// written and destroyed recursively.
static constexpr size_t kMaxDepth = 1000;

llvm::Expected<StringRef> Reader::take(uint64_t count) {
  if (count > bytes.size() - pos)
    return error("unexpected end of data (truncated pickle)");
  StringRef result = bytes.substr(pos, count);
  pos += count;
  return result;
}

llvm::Expected<uint64_t> Reader::takeUInt(unsigned width) {
  llvm::Expected<StringRef> raw = take(width);
  if (!raw)
    return raw.takeError();
  uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i)
    value |= uint64_t(uint8_t((*raw)[i])) << (8 * i);
  return value;
}

llvm::Expected<StringRef> Reader::takeLine() {
  size_t end = bytes.find('\n', pos);
  if (end == StringRef::npos)
    return error("unterminated line (truncated pickle)");
  StringRef line = bytes.slice(pos, end);
  pos = end + 1;
  return line;
}

llvm::Expected<PickleRef> Reader::pop() {
  if (stack.empty() || (!marks.empty() && marks.back() == stack.size()))
    return error("stack underflow");
  PickleRef top = std::move(stack.back());
  stack.pop_back();
  return top;
}

llvm::Expected<std::vector<PickleRef>> Reader::popToMark() {
  if (marks.empty())
    return error("no MARK on the stack");
  size_t mark = marks.back();
  marks.pop_back();
  std::vector<PickleRef> items(std::make_move_iterator(stack.begin() + mark),
                               std::make_move_iterator(stack.end()));
  stack.resize(mark);
  return items;
}

llvm::Error Reader::pushGlobal(StringRef module, StringRef globalName) {
  // Protocols 0-2 name Python 2's modules; Python 3 reads them as its own.
  if (protocol < 3)
    module = llvm::StringSwitch<StringRef>(module)
                 .Case("__builtin__", "builtins")
                 .Case("copy_reg", "copyreg")
                 .Default(module);
  // Protocols 0 and 1 create an object of class C as
  // copyreg._reconstructor(C, object, None) (REDUCE checks the arguments).
  if ((module == "copyreg" && globalName == "_reconstructor") ||
      (module == "builtins" && globalName == "object")) {
    stack.push_back(PickleValue::global(module, globalName));
    return llvm::Error::success();
  }
  for (const PickleGlobal &entry : allowed) {
    if (entry.module == module && entry.name == globalName) {
      stack.push_back(PickleValue::global(module, globalName));
      return llvm::Error::success();
    }
  }
  return error("refusing pickle global '" + module + "." + globalName +
               "': it is not on the allow-list of checkpoint classes; the "
               "file is not a checkpoint titan can read, and it is never "
               "executed");
}

llvm::Error Reader::setItems(const PickleRef &target,
                             std::vector<PickleRef> keysAndValues) {
  if (!target->is(PickleValue::Kind::Dict) &&
      !target->is(PickleValue::Kind::Object))
    return error("SETITEM(S) on a value that is not a dict or object");
  if (keysAndValues.size() % 2)
    return error("SETITEMS with an odd number of values");
  auto &entries = target->getEntries();
  for (size_t i = 0; i < keysAndValues.size(); i += 2) {
    const PickleRef &key = keysAndValues[i];
    auto existing = llvm::find_if(entries, [&](const auto &entry) {
      return entry.first->getKind() == key->getKind() &&
             (key->is(PickleValue::Kind::String)
                  ? entry.first->getString() == key->getString()
                  : entry.first == key);
    });
    if (existing != entries.end())
      existing->second = keysAndValues[i + 1];
    else
      entries.emplace_back(key, keysAndValues[i + 1]);
  }
  return llvm::Error::success();
}

llvm::Error Reader::step(uint8_t opcode, bool &done) {
  using Kind = PickleValue::Kind;
  switch (opcode) {
  case PROTO: {
    llvm::Expected<uint64_t> version = takeUInt(1);
    if (!version)
      return version.takeError();
    if (*version > 5)
      return error("unsupported pickle protocol " + llvm::Twine(*version));
    protocol = *version;
    return llvm::Error::success();
  }
  case FRAME:
    return takeUInt(8).takeError();
  case STOP:
    done = true;
    return llvm::Error::success();
  case MARK:
    marks.push_back(stack.size());
    return llvm::Error::success();
  case POP:
    return pop().takeError();
  case POP_MARK:
    return popToMark().takeError();
  case NONE:
    stack.push_back(PickleValue::none());
    return llvm::Error::success();
  case NEWTRUE:
  case NEWFALSE:
    stack.push_back(PickleValue::boolean(opcode == NEWTRUE));
    return llvm::Error::success();
  case BININT:
  case BININT1:
  case BININT2: {
    unsigned width = opcode == BININT ? 4 : opcode == BININT1 ? 1 : 2;
    llvm::Expected<uint64_t> value = takeUInt(width);
    if (!value)
      return value.takeError();
    int64_t result =
        opcode == BININT ? int64_t(int32_t(uint32_t(*value))) : int64_t(*value);
    stack.push_back(PickleValue::integer(result));
    return llvm::Error::success();
  }
  case LONG1:
  case LONG4: {
    llvm::Expected<uint64_t> width = takeUInt(opcode == LONG1 ? 1 : 4);
    if (!width)
      return width.takeError();
    return pushLong(*width);
  }
  case BINFLOAT: {
    llvm::Expected<StringRef> raw = take(8);
    if (!raw)
      return raw.takeError();
    uint64_t bits = endian::read64be(raw->data());
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    stack.push_back(PickleValue::floating(value));
    return llvm::Error::success();
  }
  case SHORT_BINUNICODE:
  case BINUNICODE:
  case BINUNICODE8:
  case SHORT_BINBYTES:
  case BINBYTES:
  case BINBYTES8: {
    unsigned width = (opcode == SHORT_BINUNICODE || opcode == SHORT_BINBYTES)
                         ? 1
                     : (opcode == BINUNICODE8 || opcode == BINBYTES8) ? 8
                                                                      : 4;
    llvm::Expected<uint64_t> length = takeUInt(width);
    if (!length)
      return length.takeError();
    llvm::Expected<StringRef> text = take(*length);
    if (!text)
      return text.takeError();
    bool isText = opcode == SHORT_BINUNICODE || opcode == BINUNICODE ||
                  opcode == BINUNICODE8;
    stack.push_back(isText ? PickleValue::string(*text)
                           : PickleValue::bytes(*text));
    return llvm::Error::success();
  }
  case EMPTY_TUPLE:
    stack.push_back(PickleValue::tuple({}));
    return llvm::Error::success();
  case TUPLE1:
  case TUPLE2:
  case TUPLE3: {
    size_t count = opcode - TUPLE1 + 1;
    std::vector<PickleRef> items(count);
    for (size_t i = count; i-- > 0;) {
      llvm::Expected<PickleRef> item = pop();
      if (!item)
        return item.takeError();
      items[i] = std::move(*item);
    }
    stack.push_back(track(PickleValue::tuple(std::move(items))));
    return llvm::Error::success();
  }
  case TUPLE:
  case LIST: {
    llvm::Expected<std::vector<PickleRef>> items = popToMark();
    if (!items)
      return items.takeError();
    stack.push_back(track(opcode == TUPLE
                              ? PickleValue::tuple(std::move(*items))
                              : PickleValue::list(std::move(*items))));
    return llvm::Error::success();
  }
  case EMPTY_LIST:
    stack.push_back(track(PickleValue::list({})));
    return llvm::Error::success();
  case APPEND:
  case APPENDS: {
    std::vector<PickleRef> items;
    if (opcode == APPEND) {
      llvm::Expected<PickleRef> item = pop();
      if (!item)
        return item.takeError();
      items.push_back(std::move(*item));
    } else {
      llvm::Expected<std::vector<PickleRef>> popped = popToMark();
      if (!popped)
        return popped.takeError();
      items = std::move(*popped);
    }
    if (stack.empty() || !stack.back()->is(Kind::List))
      return error("APPEND(S) on a value that is not a list");
    auto &list = stack.back()->getItems();
    list.insert(list.end(), items.begin(), items.end());
    return llvm::Error::success();
  }
  case EMPTY_DICT:
    stack.push_back(track(PickleValue::dict({})));
    return llvm::Error::success();
  case DICT: {
    llvm::Expected<std::vector<PickleRef>> items = popToMark();
    if (!items)
      return items.takeError();
    PickleRef dict = track(PickleValue::dict({}));
    if (llvm::Error err = setItems(dict, std::move(*items)))
      return err;
    stack.push_back(std::move(dict));
    return llvm::Error::success();
  }
  case SETITEM:
  case SETITEMS: {
    std::vector<PickleRef> items;
    if (opcode == SETITEM) {
      llvm::Expected<PickleRef> value = pop();
      if (!value)
        return value.takeError();
      llvm::Expected<PickleRef> key = pop();
      if (!key)
        return key.takeError();
      items = {std::move(*key), std::move(*value)};
    } else {
      llvm::Expected<std::vector<PickleRef>> popped = popToMark();
      if (!popped)
        return popped.takeError();
      items = std::move(*popped);
    }
    if (stack.empty())
      return error("stack underflow");
    return setItems(stack.back(), std::move(items));
  }
  case GLOBAL: {
    llvm::Expected<StringRef> module = takeLine();
    if (!module)
      return module.takeError();
    llvm::Expected<StringRef> globalName = takeLine();
    if (!globalName)
      return globalName.takeError();
    return pushGlobal(*module, *globalName);
  }
  case STACK_GLOBAL: {
    llvm::Expected<PickleRef> globalName = pop();
    if (!globalName)
      return globalName.takeError();
    llvm::Expected<PickleRef> module = pop();
    if (!module)
      return module.takeError();
    if (!(*module)->is(Kind::String) || !(*globalName)->is(Kind::String))
      return error("STACK_GLOBAL operands are not strings");
    return pushGlobal((*module)->getString(), (*globalName)->getString());
  }
  case REDUCE:
  case NEWOBJ: {
    llvm::Expected<PickleRef> args = pop();
    if (!args)
      return args.takeError();
    llvm::Expected<PickleRef> callable = pop();
    if (!callable)
      return callable.takeError();
    if (!(*callable)->is(Kind::Global))
      return error("call of a value that is not a global");
    if (!(*args)->is(Kind::Tuple))
      return error("call arguments are not a tuple");
    std::string called = (*callable)->getQualifiedName();
    if (called == "copyreg._reconstructor") {
      // object.__new__(C): as NEWOBJ with no arguments.
      const std::vector<PickleRef> &items = (*args)->getItems();
      if (items.size() != 3 || !items[0]->is(Kind::Global) ||
          items[0]->getQualifiedName() == "builtins.object" ||
          !items[1]->is(Kind::Global) ||
          items[1]->getQualifiedName() != "builtins.object" ||
          !items[2]->is(Kind::None))
        return error("copyreg._reconstructor is only read as "
                     "_reconstructor(<allowed class>, object, None)");
      stack.push_back(track(PickleValue::object(
          items[0], PickleValue::tuple({}), /*newObj=*/true)));
      return llvm::Error::success();
    }
    if (called == "builtins.object")
      return error("refusing a call of builtins.object");
    stack.push_back(track(PickleValue::object(
        std::move(*callable), std::move(*args), opcode == NEWOBJ)));
    return llvm::Error::success();
  }
  case BUILD: {
    llvm::Expected<PickleRef> state = pop();
    if (!state)
      return state.takeError();
    if (stack.empty() || !stack.back()->is(Kind::Object))
      return error("BUILD on a value that is not an object");
    stack.back()->setState(std::move(*state));
    return llvm::Error::success();
  }
  case BINPERSID: {
    llvm::Expected<PickleRef> id = pop();
    if (!id)
      return id.takeError();
    stack.push_back(track(PickleValue::persistentId(std::move(*id))));
    return llvm::Error::success();
  }
  case BINPUT:
  case LONG_BINPUT:
  case MEMOIZE: {
    uint64_t index = memo.size();
    if (opcode != MEMOIZE) {
      llvm::Expected<uint64_t> value = takeUInt(opcode == BINPUT ? 1 : 4);
      if (!value)
        return value.takeError();
      index = *value;
    }
    return memoize(index);
  }
  case BINGET:
  case LONG_BINGET: {
    llvm::Expected<uint64_t> index = takeUInt(opcode == BINGET ? 1 : 4);
    if (!index)
      return index.takeError();
    return pushMemoized(*index);
  }
  default:
    return stepLegacy(opcode);
  }
}

llvm::Expected<int64_t> Reader::takeDecimalLine() {
  llvm::Expected<StringRef> line = takeLine();
  if (!line)
    return line.takeError();
  int64_t value;
  if (line->getAsInteger(10, value))
    return error("'" + *line + "' is not a decimal integer");
  return value;
}

llvm::Error Reader::pushLong(uint64_t width) {
  if (width > 8)
    return error("integer wider than 64 bits");
  llvm::Expected<uint64_t> value = takeUInt(width);
  if (!value)
    return value.takeError();
  uint64_t raw = *value;
  // Sign-extend from the top byte.
  if (width && width < 8 && (raw >> (8 * width - 1)) & 1)
    raw |= ~uint64_t(0) << (8 * width);
  stack.push_back(PickleValue::integer(int64_t(raw)));
  return llvm::Error::success();
}

/// Decodes the body of a protocol-0 STRING: Python's repr of a str, in
/// quotes, with backslash escapes. Returns false when it is not one.
static bool decodeQuotedString(StringRef quoted, std::string &text) {
  if (quoted.size() < 2 || (quoted.front() != '\'' && quoted.front() != '"') ||
      quoted.back() != quoted.front())
    return false;
  StringRef body = quoted.drop_front().drop_back();
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      text += body[i];
      continue;
    }
    if (++i == body.size())
      return false;
    switch (body[i]) {
    case '\\':
    case '\'':
    case '"':
      text += body[i];
      break;
    case 'n':
      text += '\n';
      break;
    case 'r':
      text += '\r';
      break;
    case 't':
      text += '\t';
      break;
    case 'x': {
      unsigned byte;
      StringRef hex = body.substr(i + 1, 2);
      if (hex.size() != 2 || hex.getAsInteger(16, byte))
        return false;
      text += char(byte);
      i += 2;
      break;
    }
    default:
      return false;
    }
  }
  return true;
}

/// Decodes protocol 0's UNICODE (Python's raw-unicode-escape): \uXXXX and
/// \UXXXXXXXX are code points, everything else is itself (Latin-1).
static bool decodeRawUnicodeEscape(StringRef raw, std::string &utf8) {
  auto append = [&](uint32_t codePoint) {
    char buffer[4];
    char *end = buffer;
    if (!llvm::ConvertCodePointToUTF8(codePoint, end))
      return false;
    utf8.append(buffer, end);
    return true;
  };
  for (size_t i = 0; i < raw.size(); ++i) {
    unsigned digits = 0;
    if (raw[i] == '\\' && i + 1 < raw.size())
      digits = raw[i + 1] == 'u' ? 4 : raw[i + 1] == 'U' ? 8 : 0;
    if (!digits) {
      if (!append(uint8_t(raw[i])))
        return false;
      continue;
    }
    uint32_t codePoint;
    StringRef hex = raw.substr(i + 2, digits);
    if (hex.size() != digits || hex.getAsInteger(16, codePoint) ||
        !append(codePoint))
      return false;
    i += 1 + digits;
  }
  return true;
}

llvm::Error Reader::stepLegacy(uint8_t opcode) {
  using Kind = PickleValue::Kind;
  switch (opcode) {
  case INT:
  case LONG: {
    llvm::Expected<StringRef> line = takeLine();
    if (!line)
      return line.takeError();
    // Protocol 0 spells True and False as INT 01 and 00.
    if (opcode == INT && (*line == "01" || *line == "00")) {
      stack.push_back(PickleValue::boolean(*line == "01"));
      return llvm::Error::success();
    }
    StringRef digits =
        opcode == LONG ? line->drop_back(line->ends_with("L")) : *line;
    int64_t value;
    if (digits.getAsInteger(10, value))
      return error("'" + *line + "' is not an integer of 64 bits");
    stack.push_back(PickleValue::integer(value));
    return llvm::Error::success();
  }
  case FLOAT: {
    llvm::Expected<StringRef> line = takeLine();
    if (!line)
      return line.takeError();
    double value;
    if (line->getAsDouble(value))
      return error("'" + *line + "' is not a float");
    stack.push_back(PickleValue::floating(value));
    return llvm::Error::success();
  }
  case STRING:
  case UNICODE: {
    llvm::Expected<StringRef> line = takeLine();
    if (!line)
      return line.takeError();
    std::string text;
    if (opcode == STRING ? !decodeQuotedString(*line, text)
                         : !decodeRawUnicodeEscape(*line, text))
      return error("malformed " +
                   llvm::Twine(opcode == STRING ? "STRING" : "UNICODE") + " '" +
                   *line + "'");
    stack.push_back(PickleValue::string(text));
    return llvm::Error::success();
  }
  case BINSTRING:
  case SHORT_BINSTRING: {
    llvm::Expected<uint64_t> length = takeUInt(opcode == BINSTRING ? 4 : 1);
    if (!length)
      return length.takeError();
    llvm::Expected<StringRef> text = take(*length);
    if (!text)
      return text.takeError();
    stack.push_back(PickleValue::string(*text));
    return llvm::Error::success();
  }
  case PUT:
  case GET: {
    llvm::Expected<int64_t> index = takeDecimalLine();
    if (!index)
      return index.takeError();
    // The range of LONG_BINPUT's indices (and no DenseMap's reserved keys).
    if (*index < 0 || *index > int64_t(UINT32_MAX))
      return error("memo index " + llvm::Twine(*index) + " is out of range");
    return opcode == PUT ? memoize(*index) : pushMemoized(*index);
  }
  case PERSID: {
    llvm::Expected<StringRef> id = takeLine();
    if (!id)
      return id.takeError();
    stack.push_back(track(PickleValue::persistentId(PickleValue::string(*id))));
    return llvm::Error::success();
  }
  case DUP:
    if (stack.empty())
      return error("stack underflow");
    stack.push_back(stack.back());
    return llvm::Error::success();
  case INST:
  case OBJ: {
    // INST module\nname\n after a MARK and the arguments; OBJ a MARK, the
    // class and the arguments.
    if (opcode == INST) {
      llvm::Expected<StringRef> module = takeLine();
      if (!module)
        return module.takeError();
      llvm::Expected<StringRef> globalName = takeLine();
      if (!globalName)
        return globalName.takeError();
      if (llvm::Error err = pushGlobal(*module, *globalName))
        return err;
    }
    PickleRef callable;
    if (opcode == INST) {
      callable = stack.back();
      stack.pop_back();
    }
    llvm::Expected<std::vector<PickleRef>> items = popToMark();
    if (!items)
      return items.takeError();
    if (opcode == OBJ) {
      if (items->empty())
        return error("OBJ without a class");
      callable = items->front();
      items->erase(items->begin());
    }
    if (!callable->is(Kind::Global))
      return error("call of a value that is not a global");
    stack.push_back(track(PickleValue::object(
        std::move(callable), PickleValue::tuple(std::move(*items)),
        /*newObj=*/false)));
    return llvm::Error::success();
  }
  case EXT1:
  case EXT2:
  case EXT4:
    return error("refusing a pickle global named by an extension code "
                 "(copyreg): only globals named in the file are checked "
                 "against the allow-list");
  default:
    return error("unsupported pickle opcode 0x" + llvm::utohexstr(opcode));
  }
}

llvm::Expected<PickleRef> Reader::runSteps() {
  bool done = false;
  while (!done) {
    opcodeOffset = pos;
    llvm::Expected<uint64_t> opcode = takeUInt(1);
    if (!opcode)
      return opcode.takeError();
    if (llvm::Error err = step(uint8_t(*opcode), done))
      return std::move(err);
  }
  if (stack.size() != 1 || !marks.empty())
    return error("malformed pickle: " + llvm::Twine(stack.size()) +
                 " values left on the stack at STOP");
  if (llvm::Error err = checkShape(stack.back().get()))
    return std::move(err);
  return stack.back();
}

uint64_t mlir::titan::maxPickleExpansion(uint64_t pickleBytes) {
  return std::max(
      kPickleMinExpansion,
      llvm::SaturatingMultiply(kPickleExpansionPerByte, pickleBytes));
}

/// The weight of `node` alone in the expanded size of a graph: one value,
/// plus the bytes of its text.
static uint64_t expansionWeight(const PickleValue &node) {
  if (node.is(PickleValue::Kind::String) || node.is(PickleValue::Kind::Bytes))
    return 1 + node.getString().size();
  return 1;
}

llvm::Error Reader::checkShape(const PickleValue *root) const {
  // Iterative depth-first search over the graph. A node is done once all
  // its children are, with its expanded size: that of the tree a walk from
  // it meets, a shared node counted once per reference.
  uint64_t limit = maxPickleExpansion(bytes.size());
  struct Visit {
    bool done = false;
    uint64_t expanded = 0;
  };
  llvm::DenseMap<const PickleValue *, Visit> visits;
  struct Frame {
    const PickleValue *node;
    std::vector<const PickleValue *> children;
    size_t next = 0;
    uint64_t expanded;
  };
  std::vector<Frame> path;
  auto enter = [&](const PickleValue *node) {
    path.push_back({node, node->getChildren(), 0, expansionWeight(*node)});
  };
  // Adds a child's expanded size to its parent's; each term is at most
  // `limit`, so the sum cannot overflow before it is checked.
  auto add = [&](uint64_t expanded) -> llvm::Error {
    uint64_t &total = path.back().expanded;
    total += expanded;
    if (total <= limit)
      return llvm::Error::success();
    return error("the object graph expands to more than " + llvm::Twine(limit) +
                 " values and string bytes (the limit for a pickle of " +
                 llvm::Twine(bytes.size()) +
                 " bytes: " + llvm::Twine(kPickleExpansionPerByte) +
                 " per byte, at least " + llvm::Twine(kPickleMinExpansion) +
                 "); it reuses shared objects (memo GET) far more than a "
                 "checkpoint does");
  };
  enter(root);
  visits[root] = Visit();
  while (!path.empty()) {
    Frame &frame = path.back();
    if (frame.next == frame.children.size()) {
      uint64_t expanded = frame.expanded;
      visits[frame.node] = {true, expanded};
      path.pop_back();
      if (!path.empty())
        if (llvm::Error err = add(expanded))
          return err;
      continue;
    }
    const PickleValue *child = frame.children[frame.next++];
    auto [it, inserted] = visits.try_emplace(child);
    if (!inserted) {
      if (!it->second.done)
        return error("the object graph contains itself (a cycle), which "
                     "checkpoint files never do");
      if (llvm::Error err = add(it->second.expanded))
        return err;
      continue;
    }
    if (path.size() >= kMaxDepth)
      return error("objects nested more than " + llvm::Twine(kMaxDepth) +
                   " deep");
    enter(child);
  }
  return llvm::Error::success();
}

llvm::Expected<PickleRef> Reader::run() {
  llvm::Expected<PickleRef> root = runSteps();
  if (!root) {
    // Take a refused graph apart node by node: it may be cyclic or too deep
    // for recursive destruction.
    for (const PickleRef &node : created)
      node->clearChildren();
  }
  return root;
}

llvm::Expected<PickleRef>
mlir::titan::readPickle(StringRef bytes, StringRef name,
                        llvm::ArrayRef<PickleGlobal> allowed) {
  return Reader(bytes, name, allowed).run();
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

namespace {
class Writer {
public:
  std::string run(const PickleRef &root) {
    out.push_back(char(PROTO));
    out.push_back(2);
    write(root);
    out.push_back(char(STOP));
    return std::move(out);
  }

private:
  void op(Opcode opcode) { out.push_back(char(opcode)); }
  void le(uint64_t value, unsigned width) {
    for (unsigned i = 0; i < width; ++i)
      out.push_back(char((value >> (8 * i)) & 0xff));
  }
  /// Emits BINGET for a node already written; returns true if it did.
  bool get(const PickleValue *node) {
    auto it = memo.find(node);
    if (it == memo.end())
      return false;
    emitGet(it->second);
    return true;
  }
  void emitGet(uint32_t index) {
    if (index < 256) {
      op(BINGET);
      le(index, 1);
    } else {
      op(LONG_BINGET);
      le(index, 4);
    }
  }
  uint32_t put() {
    uint32_t index = nextMemo++;
    if (index < 256) {
      op(BINPUT);
      le(index, 1);
    } else {
      op(LONG_BINPUT);
      le(index, 4);
    }
    return index;
  }
  void writeInt(int64_t value);
  /// Emits `opcode`, the length of `text` in `width` bytes, then `text`.
  void writeSized(StringRef text, Opcode opcode, unsigned width);
  void writeEntries(const std::vector<std::pair<PickleRef, PickleRef>> &e);
  void write(const PickleRef &node);

  std::string out;
  uint32_t nextMemo = 0;
  llvm::DenseMap<const PickleValue *, uint32_t> memo;
  llvm::StringMap<uint32_t> globals;
};
} // namespace

void Writer::writeInt(int64_t value) {
  if (value >= 0 && value < 256) {
    op(BININT1);
    le(value, 1);
  } else if (value >= 0 && value < 65536) {
    op(BININT2);
    le(value, 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    op(BININT);
    le(uint32_t(int32_t(value)), 4);
  } else {
    // LONG1: minimal little-endian two's complement.
    unsigned width = 8;
    while (width > 1) {
      int64_t truncated = int64_t(uint64_t(value) << (64 - 8 * (width - 1))) >>
                          (64 - 8 * (width - 1));
      if (truncated != value)
        break;
      --width;
    }
    op(LONG1);
    le(width, 1);
    le(uint64_t(value), width);
  }
}

void Writer::writeSized(StringRef text, Opcode opcode, unsigned width) {
  op(opcode);
  le(text.size(), width);
  out.append(text.begin(), text.end());
}

void Writer::writeEntries(
    const std::vector<std::pair<PickleRef, PickleRef>> &entries) {
  if (entries.empty())
    return;
  op(MARK);
  for (const auto &[key, value] : entries) {
    write(key);
    write(value);
  }
  op(SETITEMS);
}

void Writer::write(const PickleRef &node) {
  using Kind = PickleValue::Kind;
  switch (node->getKind()) {
  case Kind::None:
    op(NONE);
    return;
  case Kind::Bool:
    op(node->getBool() ? NEWTRUE : NEWFALSE);
    return;
  case Kind::Int:
    writeInt(node->getInt());
    return;
  case Kind::Float: {
    op(BINFLOAT);
    double value = node->getFloat();
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    for (int i = 7; i >= 0; --i)
      out.push_back(char((bits >> (8 * i)) & 0xff));
    return;
  }
  case Kind::String:
    // Protocol 2 has no SHORT_BINUNICODE.
    writeSized(node->getString(), BINUNICODE, 4);
    return;
  case Kind::Bytes:
    if (node->getString().size() < 256)
      writeSized(node->getString(), SHORT_BINBYTES, 1);
    else
      writeSized(node->getString(), BINBYTES, 4);
    return;
  case Kind::Global: {
    std::string key = (node->getModule() + "\n" + node->getName()).str();
    auto it = globals.find(key);
    if (it != globals.end()) {
      emitGet(it->second);
      return;
    }
    op(GLOBAL);
    out += key;
    out += '\n';
    globals[key] = put();
    return;
  }
  case Kind::Tuple: {
    if (get(node.get()))
      return;
    const auto &items = node->getItems();
    if (items.empty()) {
      op(EMPTY_TUPLE);
      return;
    }
    if (items.size() > 3)
      op(MARK);
    for (const PickleRef &item : items)
      write(item);
    op(items.size() > 3 ? TUPLE : Opcode(TUPLE1 + items.size() - 1));
    memo[node.get()] = put();
    return;
  }
  case Kind::List: {
    if (get(node.get()))
      return;
    op(EMPTY_LIST);
    memo[node.get()] = put();
    const auto &items = node->getItems();
    if (items.empty())
      return;
    op(MARK);
    for (const PickleRef &item : items)
      write(item);
    op(APPENDS);
    return;
  }
  case Kind::Dict:
    if (get(node.get()))
      return;
    op(EMPTY_DICT);
    memo[node.get()] = put();
    writeEntries(node->getEntries());
    return;
  case Kind::Object:
    if (get(node.get()))
      return;
    write(node->getCallable());
    write(node->getArgs());
    op(node->isNewObj() ? NEWOBJ : REDUCE);
    memo[node.get()] = put();
    writeEntries(node->getEntries());
    if (node->getState()) {
      write(node->getState());
      op(BUILD);
    }
    return;
  case Kind::PersistentId:
    write(node->getPersistentId());
    op(BINPERSID);
    return;
  }
}

std::string mlir::titan::writePickle(const PickleRef &root) {
  return Writer().run(root);
}
