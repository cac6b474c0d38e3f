//===- Placement.h - DTensor placements -------------------------*- C++ -*-===//
//
// The vocabulary of DTensor placements shared by the titan dialect, the
// placement algebra and the checkpoint code: one placement per mesh axis,
// `S(d)` (shard tensor dim d), `R` (replicate) or `P(op)` (partial, pending a
// reduction with op).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PLACEMENT_PLACEMENT_H
#define TITAN_PLACEMENT_PLACEMENT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::titan {

/// The reduction a Partial placement is waiting for, and the reduction a
/// collective performs.
enum class ReduceKind : uint8_t { Sum, Avg, Max, Min };

/// Returns "sum", "avg", "max" or "min".
llvm::StringRef stringifyReduce(ReduceKind kind);
/// Parses "sum", "avg", "max" or "min".
std::optional<ReduceKind> parseReduce(llvm::StringRef text);

/// One DTensor placement: how a tensor is laid out along one mesh axis.
class Placement {
public:
  enum class Kind : uint8_t { Replicate, Shard, Partial };

  /// `R`: every rank along the axis holds the whole tensor.
  static Placement replicate() { return Placement(Kind::Replicate, 0, {}); }
  /// `S(dim)`: the axis splits tensor dimension `dim` (torch.chunk sizes).
  static Placement shard(int64_t dim) {
    return Placement(Kind::Shard, dim, {});
  }
  /// `P(op)`: every rank holds a partial value; the tensor is their reduction.
  static Placement partial(ReduceKind op = ReduceKind::Sum) {
    return Placement(Kind::Partial, 0, op);
  }

  Kind getKind() const { return kind; }
  bool isReplicate() const { return kind == Kind::Replicate; }
  bool isShard() const { return kind == Kind::Shard; }
  bool isPartial() const { return kind == Kind::Partial; }
  bool isShard(int64_t d) const { return isShard() && dim == d; }
  /// The sharded tensor dimension; only meaningful for `S(d)`.
  int64_t getDim() const { return dim; }
  /// The pending reduction; only meaningful for `P(op)`.
  ReduceKind getReduce() const { return reduce; }

  /// Prints as `S(0)`, `R` or `P(sum)`.
  std::string str() const;
  /// Parses the form `str` prints; returns nullopt on anything else.
  static std::optional<Placement> parse(llvm::StringRef text);

  bool operator==(const Placement &other) const {
    return kind == other.kind && dim == other.dim && reduce == other.reduce;
  }
  bool operator!=(const Placement &other) const { return !(*this == other); }

private:
  Placement(Kind kind, int64_t dim, ReduceKind reduce)
      : kind(kind), dim(dim), reduce(reduce) {}

  Kind kind;
  int64_t dim;
  ReduceKind reduce;
};

/// The reduction of the first partial placement of `placements`, if any
/// (a valid placements list holds partials of one kind only).
std::optional<ReduceKind> getPartialKind(llvm::ArrayRef<Placement> placements);

/// Prints a placements list as `[S(0), R]`.
std::string formatPlacements(llvm::ArrayRef<Placement> placements);

/// Hashing for use as an MLIR attribute parameter and in DenseMap keys.
inline llvm::hash_code hash_value(const Placement &p) {
  return llvm::hash_combine(static_cast<uint8_t>(p.getKind()), p.getDim(),
                            static_cast<uint8_t>(p.getReduce()));
}

} // namespace mlir::titan

#endif // TITAN_PLACEMENT_PLACEMENT_H
