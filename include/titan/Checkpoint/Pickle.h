//===- Pickle.h - Restricted Python pickle reader and writer ----*- C++ -*-===//
//
// A generic object tree for Python pickles, a writer (protocol 2) and a
// restricted reader. The reader is a pickle VM for the opcodes that
// torch.save and torch.distributed.checkpoint produce; it never executes
// anything: a call (REDUCE, NEWOBJ) or a persistent id only becomes a node of
// the tree, and a global (class or function reference) outside the caller's
// allow-list is refused with an error that names it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CHECKPOINT_PICKLE_H
#define TITAN_CHECKPOINT_PICKLE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir::titan {

class PickleValue;
/// Nodes are shared: a memo reference in a pickle aliases the same node.
using PickleRef = std::shared_ptr<PickleValue>;

/// One node of an unpickled object graph.
class PickleValue {
public:
  enum class Kind {
    None,
    Bool,
    Int,
    Float,
    String,
    Bytes,
    Tuple,
    List,
    Dict,
    /// A reference to `module.name` (GLOBAL / STACK_GLOBAL).
    Global,
    /// `callable(*args)` (REDUCE) or `callable.__new__(callable, *args)`
    /// (NEWOBJ), with the state given by BUILD and the items set on it.
    Object,
    /// The argument of a persistent id (BINPERSID), e.g. a torch storage.
    PersistentId,
  };

  /// Constructors of the node kinds.
  static PickleRef none();
  static PickleRef boolean(bool value);
  static PickleRef integer(int64_t value);
  static PickleRef floating(double value);
  static PickleRef string(llvm::StringRef value);
  static PickleRef bytes(llvm::StringRef value);
  static PickleRef tuple(std::vector<PickleRef> items);
  static PickleRef list(std::vector<PickleRef> items);
  static PickleRef dict(std::vector<std::pair<PickleRef, PickleRef>> entries);
  static PickleRef global(llvm::StringRef module, llvm::StringRef name);
  /// `callable(*args)` when `newObj` is false, else `callable.__new__`.
  static PickleRef object(PickleRef callable, PickleRef args, bool newObj);
  static PickleRef persistentId(PickleRef id);

  Kind getKind() const { return kind; }
  bool is(Kind k) const { return kind == k; }

  /// Scalar accessors; valid for the matching kind only.
  bool getBool() const;
  int64_t getInt() const;
  double getFloat() const;
  /// The text of a String or the contents of a Bytes node.
  llvm::StringRef getString() const;

  /// Module and name of a Global, or of the callable of an Object whose
  /// callable is a Global (empty otherwise).
  llvm::StringRef getModule() const;
  llvm::StringRef getName() const;
  /// `module.name` of a Global or of an Object's callable.
  std::string getQualifiedName() const;

  /// Items of a Tuple or List.
  std::vector<PickleRef> &getItems();
  const std::vector<PickleRef> &getItems() const;
  /// Entries of a Dict, or the items set on an Object (SETITEM).
  std::vector<std::pair<PickleRef, PickleRef>> &getEntries();
  const std::vector<std::pair<PickleRef, PickleRef>> &getEntries() const;

  /// Parts of an Object.
  const PickleRef &getCallable() const;
  const PickleRef &getArgs() const;
  bool isNewObj() const { return newObj; }
  /// The BUILD state of an Object, or null.
  const PickleRef &getState() const;
  void setState(PickleRef state);

  /// The id of a PersistentId.
  const PickleRef &getPersistentId() const;

  /// The nodes this one refers to directly.
  std::vector<const PickleValue *> getChildren() const;
  /// Drops this node's references to other nodes (the reader takes a
  /// refused graph apart with it, without deep recursion). An Object loses
  /// its callable and args too: only destruction may follow.
  void clearChildren();

  /// In a Dict, the value of the entry whose key is the string `key`, or
  /// null.
  PickleRef lookup(llvm::StringRef key) const;

  /// Prints a Python-like rendering (for tools and tests).
  void print(llvm::raw_ostream &os) const;

private:
  explicit PickleValue(Kind kind) : kind(kind) {}

  Kind kind;
  bool newObj = false;
  int64_t intValue = 0;
  double floatValue = 0;
  /// String/Bytes contents, or a Global's module.
  std::string text;
  /// A Global's name.
  std::string name;
  /// Tuple/List items; Object: callable, args, state; PersistentId: the id.
  std::vector<PickleRef> items;
  std::vector<std::pair<PickleRef, PickleRef>> entries;
};

/// A `module.name` pair a reader accepts.
struct PickleGlobal {
  llvm::StringRef module;
  llvm::StringRef name;
};

/// The globals that torch.save archives of tensors and DCP `.metadata` files
/// (PyTorch 1.13 and 2.x module paths) reference: the DCP metadata classes,
/// TensorProperties and its memory-format enum, torch dtypes, storages,
/// layouts, torch.Size, collections.OrderedDict,
/// torch._utils._rebuild_tensor_v2, pathlib.PosixPath (a possible
/// StorageMeta.checkpoint_id) and builtins.getattr (with which pickle spells
/// an enum member; like every global it is recorded, not called).
llvm::ArrayRef<PickleGlobal> checkpointPickleGlobals();

/// A pickle's graph may share nodes (memo GET), so that a small file can
/// describe a huge tree, which consumers (the .metadata decoder, printing)
/// walk once per reference. The reader bounds the expanded size of the
/// graph, counting every value once per path to it plus the bytes of its
/// strings, to kPickleExpansionPerByte per byte of pickle, and at least
/// kPickleMinExpansion: PyTorch's own files stay far below.
constexpr uint64_t kPickleExpansionPerByte = 64;
constexpr uint64_t kPickleMinExpansion = uint64_t(1) << 20;

/// The largest expanded size the reader accepts for a pickle of
/// `pickleBytes` bytes.
uint64_t maxPickleExpansion(uint64_t pickleBytes);

/// Runs the restricted pickle VM over `bytes` and returns the root object.
/// `name` names the source in error messages. A global not in `allowed` is
/// an error naming it, as are cyclic graphs, graphs nested more than 1000
/// deep and graphs whose expanded size exceeds maxPickleExpansion.
llvm::Expected<PickleRef> readPickle(llvm::StringRef bytes,
                                     llvm::StringRef name,
                                     llvm::ArrayRef<PickleGlobal> allowed);

/// Serializes `root` with pickle protocol 2 (bytes values use protocol 3's
/// BINBYTES opcodes). Nodes that occur more than once are memoized, as are
/// globals with the same module and name.
std::string writePickle(const PickleRef &root);

} // namespace mlir::titan

#endif // TITAN_CHECKPOINT_PICKLE_H
